"""``rfcircuits mutate``: seed faults into the native engine and count what ``fuzz`` kills.

Mutation operators (AST level): ``&``↔``|``, ``and``↔``or``, ``<``↔``<=``, ``>``↔``>=``,
``==``↔``!=``, an integer constant ± 1, ``min``↔``max``, ``any``↔``all``, removal of a
``not``, and deletion of one statement of a loop body. A mutant is identified by module,
line, column and operator (``rfcircuits/primes.py:42:17 cmp < → <=``; modules are named by their
path in the installed package).

Each sampled mutant is written into a temporary copy of the packages (the working tree is never
touched) and judged in a subprocess with that copy first on ``sys.path``: the worked examples
(:mod:`rfcircuits.crosscheck.differential.spec_examples`) must give their listed answers, then a
time-boxed ``rfcircuits fuzz`` with a fixed seed must find no disagreement. The mutant is *killed*
by a wrong example answer, a disagreement, a crash or a timeout, and *survives* otherwise. Survivors
that cannot change any answer are listed, with a one-line argument, in
``crosscheck/differential/EQUIVALENT_MUTANTS.md`` and counted as equivalent. The pure-Python
decision-graph store is used in the subprocess so that mutants of Python modules are the code that
runs.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import difflib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import rfcircuits
from rfcircuits.errors import InputError
from rfcircuits.crosscheck.campaigns.parallel import open_backend, run_tasks

#: Where the packages' sources are, by the path prefix that names their modules (the
#: library's folder and the oracles' folder differ in the repository; an editable install
#: maps them, a wheel nests the second in the first).
PACKAGE_DIRS = {"rfcircuits/crosscheck/": Path(__file__).resolve().parents[1],
                "rfcircuits/": Path(rfcircuits.__file__).resolve().parent}
DEFAULT_MODULES = tuple(f"rfcircuits/{name}.py" for name in (
    "sortnet", "classformula", "apply", "dgcompile", "reasons", "primes", "general",
    "robustness", "dgstore", "totalizer", "projections", "boxes", "pbdd", "binarysum"))
EQUIVALENT_FILE = Path(__file__).resolve().parent / "EQUIVALENT_MUTANTS.md"
FUZZ_SEED = 1

_SWAP_BIN = {ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd}
_SWAP_BOOL = {ast.And: ast.Or, ast.Or: ast.And}
_SWAP_CMP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
             ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
_SWAP_CALL = {"min": "max", "max": "min", "any": "all", "all": "any"}
_SYMBOL = {ast.BitAnd: "&", ast.BitOr: "|", ast.And: "and", ast.Or: "or", ast.Lt: "<",
           ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


@dataclass(frozen=True)
class Mutant:
    """One mutation: where, which operator, and the text of the change."""

    module: str
    line: int
    col: int
    operator: str
    change: str
    index: int  # position among the module's mutation points (ast.walk order)

    @property
    def ident(self) -> str:
        return f"{self.module}:{self.line}:{self.col} {self.operator} {self.change}"


@dataclass
class Verdict:
    mutant: str
    module: str
    operator: str
    status: str  # killed | survived | equivalent
    reason: str = ""
    seconds: float = 0.0
    diff: str = ""
    shrunk: list[dict[str, int]] = field(default_factory=list)


def _annotations(tree: ast.AST) -> set[int]:
    """Ids of the nodes inside type annotations: never evaluated under ``from __future__
    import annotations``, so mutating them (``int | None`` → ``int & None``) tests nothing."""
    roots = [a.annotation for a in ast.walk(tree) if isinstance(a, (ast.arg, ast.AnnAssign))]
    roots += [f.returns for f in ast.walk(tree)
              if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return {id(n) for root in roots if root is not None for n in ast.walk(root)}


def _points(tree: ast.AST) -> Iterator[tuple[ast.AST, str, str, object]]:
    """Mutation points in ast.walk order: (node, operator name, change text, payload)."""
    skip = _annotations(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _SWAP_BIN:
            new = _SWAP_BIN[type(node.op)]
            yield node, "binop", f"{_SYMBOL[type(node.op)]} → {_SYMBOL[new]}", new
        elif isinstance(node, ast.BoolOp):
            new = _SWAP_BOOL[type(node.op)]
            yield node, "boolop", f"{_SYMBOL[type(node.op)]} → {_SYMBOL[new]}", new
        elif isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                if type(op) in _SWAP_CMP:
                    new = _SWAP_CMP[type(op)]
                    yield node, "cmp", f"{_SYMBOL[type(op)]} → {_SYMBOL[new]}", (k, new)
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            for delta in (1, -1):
                yield node, "const", f"{node.value} → {node.value + delta}", delta
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in _SWAP_CALL:
            yield node, "call", f"{node.func.id} → {_SWAP_CALL[node.func.id]}", None
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield node, "not", "not x → x", None
        elif isinstance(node, (ast.For, ast.While)):
            for k, stmt in enumerate(node.body):
                yield stmt, "delete", f"delete loop statement at line {stmt.lineno}", (node, k)


def locate(module: str, source: Path | None = None) -> Path:
    """The file of a module named by its package path (``rfcircuits/primes.py``), in the tree
    ``source`` (a copy made by :func:`_copy_packages`) or else in the installed packages."""
    if source is not None:
        return source / module
    prefix = next((p for p in PACKAGE_DIRS if module.startswith(p)), None)
    if prefix is None:
        raise InputError(f"--modules: {module} is not a path under rfcircuits/")
    return PACKAGE_DIRS[prefix] / module[len(prefix):]


def mutants(module: str, source: Path | None = None) -> list[Mutant]:
    """Every mutation point of a module (see :func:`locate`)."""
    tree = ast.parse(locate(module, source).read_text(encoding="utf-8"))
    out = []
    for index, (node, op, change, _) in enumerate(_points(tree)):
        out.append(Mutant(module, getattr(node, "lineno", 0), getattr(node, "col_offset", 0),
                          op, change, index))
    return out


def _mutated_source(mutant: Mutant, source: Path | None = None) -> tuple[str, str]:
    """(original, mutated) source of the module, both unparsed from the AST."""
    path = locate(mutant.module, source)
    original = ast.unparse(ast.parse(path.read_text(encoding="utf-8")))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for index, (node, op, _, payload) in enumerate(_points(tree)):
        if index != mutant.index:
            continue
        if op in ("binop", "boolop"):
            node.op = payload()  # type: ignore[attr-defined,operator]
        elif op == "cmp":
            k, new = payload  # type: ignore[misc]
            node.ops[k] = new()  # type: ignore[attr-defined]
        elif op == "const":
            node.value += payload  # type: ignore[attr-defined,operator]
        elif op == "call":
            node.func.id = _SWAP_CALL[node.func.id]  # type: ignore[attr-defined]
        elif op == "not":
            _replace(tree, node, node.operand)  # type: ignore[attr-defined]
        else:
            loop, k = payload  # type: ignore[misc]
            loop.body[k] = ast.Pass()
        break
    return original, ast.unparse(ast.fix_missing_locations(tree))


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, name, new)
                return
            if isinstance(value, list):
                for k, item in enumerate(value):
                    if item is old:
                        value[k] = new
                        return


def equivalent_mutants() -> dict[str, str]:
    """Mutant ids listed in EQUIVALENT_MUTANTS.md (``- `id` — argument`` lines)."""
    if not EQUIVALENT_FILE.exists():
        return {}
    out = {}
    for line in EQUIVALENT_FILE.read_text(encoding="utf-8").splitlines():
        if line.startswith("- `") and "`" in line[3:]:
            ident, _, argument = line[3:].partition("`")
            out[ident] = argument.strip(" —-")
    return out


_JUDGE = """
import json, sys
from rfcircuits.crosscheck.differential.spec_examples import *
from rfcircuits.crosscheck.oracles.brute import BruteForce
from rfcircuits.explain import Explainer
from rfcircuits.classformula import compile_nnf
from rfcircuits.dgcompile import compile_dg
for doc, inst, answers in ((SUSAN_FOREST, SUSAN, SUSAN_ANSWERS), (FLIP_FOREST, FLIP, FLIP_ANSWERS)):
    f = forest(doc); x = instance(f, inst)
    e = Explainer(f).explain_states(x)
    for key, value in answers.items():
        if key == "decision":
            ok = f.classes[e.decision] == value
        else:
            ok = getattr(e, key) == (value if key == "robustness" else expected(f, value))
        if not ok:
            print("worked example: wrong", key); sys.exit(3)
f = forest(FIGURE1_FOREST); b = BruteForce(f)
for comp in (compile_nnf(f), compile_dg(f, form="dg")):
    for c, name in enumerate(f.classes):
        count = sum((comp.nnf.evaluate(comp.roots[c], w) if hasattr(comp, "nnf") else comp.evaluate(c, w)) for w in b.worlds)
        if count != FIGURE1_COUNTS[name]:
            print("worked example: Figure 1 count", name, count); sys.exit(3)
"""


def _copy_packages(source: Path | None, target: Path) -> None:
    """Copy the package ``rfcircuits`` (with ``rfcircuits.crosscheck``) of the tree ``source``,
    or of the installed packages, to ``target/rfcircuits``, without the C extension (mutants
    run on the pure-Python store)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyd")
    if source is not None:
        shutil.copytree(source / "rfcircuits", target / "rfcircuits", ignore=ignore)
        return
    library = PACKAGE_DIRS["rfcircuits/"]
    shutil.copytree(library, target / "rfcircuits",
                    ignore=lambda d, names: ignore(d, names) | ({"crosscheck"} if d == str(library)
                                                                 else set()))
    shutil.copytree(PACKAGE_DIRS["rfcircuits/crosscheck/"], target / "rfcircuits" / "crosscheck",
                    ignore=ignore)


def snapshot_archive(source: Path) -> bytes:
    """The packages copied into ``source`` (:func:`_copy_packages`), as a zip archive: what
    each mutant's task unpacks wherever it runs, a cluster's worker included."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(source.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(source).as_posix())
    return buffer.getvalue()


def judge(mutant: Mutant, budget: float, snapshot: bytes) -> Verdict:
    """Apply a mutant to a copy of the packages unpacked from ``snapshot``
    (:func:`snapshot_archive`) in a temporary directory, and run the examples and a fuzz run
    on it."""
    copy = Path(tempfile.mkdtemp(prefix="rfcircuits-mutant-"))
    try:
        with zipfile.ZipFile(io.BytesIO(snapshot)) as archive:
            archive.extractall(copy)
        return _judge_copy(mutant, budget, copy)
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def _judge_copy(mutant: Mutant, budget: float, copy: Path) -> Verdict:
    """:func:`judge` in the unpacked ``copy``."""
    original, mutated = _mutated_source(mutant, copy)
    diff = "".join(difflib.unified_diff(original.splitlines(True), mutated.splitlines(True),
                                        mutant.module, mutant.module + " (mutant)", n=1))
    verdict = Verdict(mutant.ident, mutant.module, mutant.operator, "survived", diff=diff)
    if original == mutated:
        verdict.status, verdict.reason = "equivalent", "the source does not change"
        return verdict
    (copy / mutant.module).write_text(mutated, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(copy), "RFCIRCUITS_PURE_PYTHON": "1",
           "PYTHONDONTWRITEBYTECODE": "1"}
    start = time.monotonic()
    steps = [([sys.executable, "-c", _JUDGE], budget),
             ([sys.executable, "-m", "rfcircuits", "fuzz", "--seconds", str(budget),
               "--seed", str(FUZZ_SEED), "--out", str(copy / "failures"), "--json",
               "--no-progress"], 3 * budget + 30)]
    for command, timeout in steps:
        try:
            run = _run_group(command, copy, env, timeout)
        except subprocess.TimeoutExpired:
            verdict.status, verdict.reason = "killed", "timeout"
            break
        if run.returncode != 0:
            verdict.status = "killed"
            tail = (run.stdout + run.stderr).strip().splitlines()
            verdict.reason = tail[-1][:200] if tail else f"exit {run.returncode}"
            break
    verdict.seconds = time.monotonic() - start
    for path in sorted((copy / "failures").glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        verdict.shrunk.append({"trees": len(doc["forest"]["trees"]),
                               "features": len(doc["forest"]["features"])})
    return verdict


def _run_group(command: list[str], cwd: Path, env: dict[str, str],
               timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a judge step in its own process group; on timeout kill the whole group, so that
    ``fuzz``'s worker processes (stuck in a mutant's endless loop) do not outlive it."""
    with subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # leftover workers of a finished step
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def campaign(modules: list[str], sample: int | None, budget: float, jobs: int,
             seed: int, dask: str | None = None) -> list[Verdict]:
    """Judge a seeded sample of the modules' mutants (all of them without ``sample``) on
    ``jobs`` local processes or the Dask cluster at ``dask``.

    The packages are copied once at the start and every mutant is made from that snapshot,
    so edits to the working tree during a long campaign change neither the sample nor the
    code a mutant is applied to."""
    known = equivalent_mutants()
    workdir = tempfile.mkdtemp(prefix="rfcircuits-mutate-")
    try:
        snapshot = Path(workdir) / "snapshot"
        _copy_packages(None, snapshot)
        pool = [m for module in modules for m in mutants(module, snapshot)]
        archive = snapshot_archive(snapshot)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rng = random.Random(seed)
    chosen = pool if sample is None or sample >= len(pool) else rng.sample(pool, sample)
    verdicts: list[Verdict] = []
    with open_backend(jobs, dask) as backend:
        tasks = ((k, (m, budget, archive)) for k, m in enumerate(chosen))
        for done, (_, verdict) in enumerate(run_tasks(backend, judge, tasks), start=1):
            if verdict.status == "survived" and verdict.mutant in known:
                verdict.status, verdict.reason = "equivalent", known[verdict.mutant]
            verdicts.append(verdict)
            killed = sum(v.status == "killed" for v in verdicts)
            print(f"[mutate] {done}/{len(chosen)} judged, {killed} killed "
                  f"({verdict.status}: {verdict.mutant}; {backend.workers()} workers)",
                  file=sys.stderr, flush=True)
    return sorted(verdicts, key=lambda v: v.mutant)


def summary(verdicts: list[Verdict]) -> dict[str, object]:
    total = len(verdicts)
    killed = sum(v.status == "killed" for v in verdicts)
    equivalent = sum(v.status == "equivalent" for v in verdicts)
    sizes = [s for v in verdicts for s in v.shrunk]
    small = sum(s["trees"] <= 3 and s["features"] <= 4 for s in sizes)
    table: dict[str, dict[str, dict[str, int]]] = {}
    for v in verdicts:
        cell = table.setdefault(v.module, {}).setdefault(v.operator, {})
        cell[v.status] = cell.get(v.status, 0) + 1
    return {
        "total": total, "killed": killed, "equivalent": equivalent,
        "survived": total - killed - equivalent,
        "kill_rate": round(killed / max(1, total - equivalent), 4),
        "table": table,
        "shrunk": {"repros": len(sizes), "at_most_3_trees_4_features": small,
                   "trees": sorted(s["trees"] for s in sizes),
                   "features": sorted(s["features"] for s in sizes)},
        "survivors": [asdict(v) for v in verdicts if v.status == "survived"],
    }


def report_text(data: dict[str, object]) -> str:
    lines = [f"{'module':24s} {'operator':8s} {'killed':>7s} {'survived':>9s} {'equivalent':>11s}"]
    for module, ops in sorted(data["table"].items()):  # type: ignore[union-attr]
        for op, cell in sorted(ops.items()):
            lines.append(f"{module:24s} {op:8s} {cell.get('killed', 0):7d} "
                         f"{cell.get('survived', 0):9d} {cell.get('equivalent', 0):11d}")
    lines.append(f"total {data['total']}, killed {data['killed']}, equivalent "
                 f"{data['equivalent']}, survived {data['survived']}: kill rate "
                 f"{100 * data['kill_rate']:.1f}% of non-equivalent mutants")  # type: ignore[operator]
    shrunk = data["shrunk"]
    lines.append(f"shrunk repros: {shrunk['repros']}, of which {shrunk['at_most_3_trees_4_features']} "  # type: ignore[index]
                 f"have ≤ 3 trees and ≤ 4 features")
    for s in data["survivors"]:  # type: ignore[union-attr]
        lines.append(f"\nSURVIVOR {s['mutant']}\n{s['diff']}")
    return "\n".join(lines)


def cmd_mutate(args: argparse.Namespace) -> int:
    modules = [m.strip() for m in args.modules.split(",")] if args.modules else list(DEFAULT_MODULES)
    for m in modules:
        if not locate(m).is_file():
            raise InputError(f"--modules: no module {m} (paths under rfcircuits/)")
    data = summary(campaign(modules, args.sample, args.budget, args.jobs, args.seed,
                           args.dask))
    print(json.dumps(data, ensure_ascii=False) if args.json else report_text(data))
    return 0
