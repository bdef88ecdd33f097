"""``rfcircuits bench``: reproduce the paper's tables beside its figures.

Each row trains the table's configuration (dataset, #trees, depth 4, 85/15 split, fixed
seed) with scikit-learn, measures ours, and prints the paper's value of every measured column
next to it, with the ratio ours/paper for times. ``--json`` prints one object per dataset
(JSON Lines) with snake_case keys and ``paper_<key>`` for the paper's values. Rows are printed
as they finish, so an interrupted run keeps them. Times are the minimum over repeated runs
when a run is short (see :func:`measure`).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from rfcircuits.cli import paper
from rfcircuits.errors import BudgetExceeded, InputError
from rfcircuits.progress import Progress
from rfcircuits.datasets import Dataset, Trained, load_csv, train_forest

T = TypeVar("T")
DEPTH = 4


def measure(fn: Callable[[], T], budget: float = 0.5, runs: int = 5) -> tuple[float, T]:
    """Minimum wall time of ``fn`` over up to ``runs`` runs while the total stays < ``budget``."""
    best = math.inf
    result: T
    total = 0.0
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        took = time.perf_counter() - start
        best = min(best, took)
        total += took
        if total >= budget:
            break
    return best, result


def load(data_dir: str, name: str) -> Dataset:
    """The dataset ``name`` of ``--data-dir`` (its file ``NAME.csv``)."""
    path = os.path.join(data_dir, f"{name}.csv")
    if not os.path.exists(path):
        raise InputError(f"--data-dir: no dataset file {path}")
    return load_csv(path)


def train(data_dir: str, name: str, trees: int, seed: int, depth: int = DEPTH) -> Trained:
    return train_forest(load(data_dir, name), trees, depth, seed)


def reset_peak() -> None:
    """Start measuring peak memory afresh (Linux 4.0+: writing 5 to ``/proc/self/clear_refs``
    resets the peak resident set ``VmHWM``); elsewhere the peak is the process's so far."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as out:
            out.write("5")
    except OSError:
        pass


def peak_mb() -> float:
    """Peak resident memory since :func:`reset_peak`, in MB (2^20 bytes)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource  # not on Windows; its unit is KB on Linux, bytes on macOS

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def selected(table: dict[str, Any], text: str | None, option: str = "--datasets") -> list[str]:
    """The keys of ``table`` that ``option``'s comma list ``text`` names (absent: all)."""
    if not text:
        return list(table)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in table]
    if unknown:
        raise InputError(f"{option}: {unknown[0]!r} is not in the table "
                         f"(choose from {', '.join(table)})")
    return names


def configurations(table: dict[str, dict[str, float]], args: argparse.Namespace
                   ) -> Iterator[tuple[str, dict[str, float], int, Trained]]:
    """Each dataset of ``table`` that ``--datasets`` selects: its name, the paper's row, the
    number of trees (``--trees`` or the paper's) and the forest trained for it (announced on
    stderr first: training a large forest takes a while)."""
    for name in selected(table, args.datasets):
        ref = table[name]
        trees = args.trees or int(ref["T"])
        if not args.no_progress:
            print(f"[bench] {name}: training {trees} trees", file=sys.stderr, flush=True)
        yield name, ref, trees, train(args.data_dir, name, trees, args.seed)


class Table:
    """Prints rows as text columns or JSON Lines, flushing each row."""

    def __init__(self, columns: Sequence[tuple[str, str, int]], as_json: bool) -> None:
        self.columns = columns  # (key, header, width)
        self.as_json = as_json
        if not as_json:
            print("  ".join(h.rjust(w) if i else h.ljust(w)
                            for i, (_, h, w) in enumerate(columns)), flush=True)

    def row(self, values: dict[str, Any]) -> None:
        if self.as_json:
            print(json.dumps(values), flush=True)
            return
        cells = []
        for i, (key, _, width) in enumerate(self.columns):
            v = values.get(key)
            text = "-" if v is None else _fmt(v)
            cells.append(text.ljust(width) if i == 0 else text.rjust(width))
        print("  ".join(cells), flush=True)


def stopped(table: Table, row: dict[str, Any], exc: BudgetExceeded) -> None:
    """The row of a dataset whose compile exceeded the node budget: its name, #T and (JSON)
    why; the message also on stderr."""
    print(f"[bench] {row['dataset']}: {exc.for_cli()}", file=sys.stderr, flush=True)
    table.row({**row, "stopped": exc.for_cli()})


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v.is_integer() and abs(v) >= 100:
            return str(int(v))
        if v == 0 or abs(v) >= 100:
            return f"{v:.1f}"
        return f"{v:.4f}" if abs(v) < 0.1 else f"{v:.3f}" if abs(v) < 10 else f"{v:.2f}"
    return str(v)


def ratio(ours: float | None, theirs: float | None) -> float | None:
    if ours is None or not theirs:
        return None
    return ours / theirs


def run_bench(args: argparse.Namespace) -> int:
    if args.what == "compile":
        if args.form == "nnf":
            return bench_nnf(args)
        return bench_dg(args)
    return bench_explain(args)


def bench_dg(args: argparse.Namespace) -> int:
    """Table 2 (Alg. 3 vs 3B per class) or, with ``--form dg``, Table 4 (3A vs 3B)."""
    from rfcircuits.classformula import compile_nnf
    from rfcircuits.dgcompile import compile_dg

    table4 = args.form == "dg"
    ref_table = paper.TABLE4 if table4 else paper.TABLE2
    if table4:
        columns = [("dataset", "dataset", 13), ("t", "#T", 4), ("n_3b", "#N_3B", 9),
                   ("paper_n_3b", "paper", 10), ("n_3a", "#N_3A", 9), ("paper_n_3a", "paper", 10),
                   ("t_3b", "T_3B", 8), ("paper_t_3b", "paper", 7),
                   ("t_3a_3b", "T_3A-3B", 8), ("paper_t_3a_3b", "paper", 7)]
    else:
        columns = [("dataset", "dataset", 13), ("t", "#T", 4), ("n_rf", "#N_RF", 6),
                   ("a", "%A", 6), ("n_3", "#N_3", 8), ("paper_n_3", "paper", 8),
                   ("t_3", "T_3", 7), ("paper_t_3", "paper", 6), ("n_3b", "#N_3B", 9),
                   ("paper_n_3b", "paper", 10), ("t_3b", "T_3B", 8), ("paper_t_3b", "paper", 7),
                   ("t_ratio", "ratio", 7)]
    columns += [("peak_mb", "peak MB", 8), ("node_bytes", "B/node", 6)]
    out = Table(columns, args.json)
    for name, ref, trees, trained in configurations(ref_table, args):
        forest = trained.forest
        k = len(forest.classes)
        same = trees == ref["T"]
        row: dict[str, object] = {"dataset": name, "t": trees}
        gc.collect()
        reset_peak()
        try:
            comp = compile_dg(forest, form="dg" if table4 else "dg-conj",
                              max_nodes=args.node_budget, counter=args.counter)
        except BudgetExceeded as exc:
            stopped(out, row, exc)
            continue
        # The compile's peak (the NNF compile below is far smaller), and what the graphs
        # hold per node at the end: every node in the store, intermediates not yet collected.
        row["peak_mb"] = round(peak_mb())
        row["node_bytes"] = round(comp.dg.store.node_bytes() / len(comp.dg), 1)
        t_3b = (sum(comp.seconds) - sum(comp.extra_3a_seconds)) / k
        if table4:
            row.update(n_3b=round(sum(comp.dg.size(rs) for rs in comp.roots_3b) / k, 1),
                       n_3a=round(sum(comp.nodes(c) for c in range(k)) / k, 1),
                       t_3b=round(t_3b, 4), t_3a_3b=round(sum(comp.extra_3a_seconds) / k, 4))
        else:
            t3, nnf = measure(lambda: compile_nnf(forest))
            row.update(n_rf=forest.n_nodes, a=round(100 * trained.accuracy, 2),
                       n_3=round(sum(nnf.nodes(c) for c in range(k)) / k, 1),
                       t_3=round(t3 / k, 4),
                       n_3b=round(sum(comp.nodes(c) for c in range(k)) / k, 1),
                       t_3b=round(t_3b, 4))
            row["t_ratio"] = None if not same else ratio(t_3b, ref["T_3B"])
        for key in list(row):
            ref_key = {"n_3": "N_3", "t_3": "T_3", "n_3b": "N_3B", "t_3b": "T_3B",
                       "n_3a": "N_3A", "t_3a_3b": "T_3A_3B"}.get(key)
            if ref_key and ref_key in ref:
                row["paper_" + key] = ref[ref_key] if same else None
        if row.get("t_ratio") is not None:
            row["t_ratio"] = round(row["t_ratio"], 4)  # type: ignore[arg-type]
        del comp  # free this forest's graphs before the next one is compiled
        out.row(row)
    return 0


def bench_nnf(args: argparse.Namespace) -> int:
    """Table 1 (NNF, Alg. 3), or the scaling run with ``--trees``."""
    from rfcircuits.classformula import compile_nnf

    table = Table([("dataset", "dataset", 13), ("f", "#F", 3), ("c", "#C", 3), ("t", "#T", 5),
                   ("n_rf", "#N_RF", 6), ("a", "%A", 6), ("n_nnf", "#N_NNF", 8),
                   ("paper_n_nnf", "paper", 8), ("t_nnf", "T_NNF", 8),
                   ("paper_t_nnf", "paper", 7), ("t_ratio", "ratio", 7)], args.json)
    for name, ref, trees, trained in configurations(paper.TABLE1, args):
        forest = trained.forest
        seconds, comp = measure(lambda: compile_nnf(forest))
        same = trees == ref["T"]
        scaling = paper.SCALING_1000.get(name, {}) if trees == 1000 else {}
        paper_n = ref["N_NNF"] if same else scaling.get("N_NNF")
        paper_t = ref["T_NNF"] if same else scaling.get("T_NNF")
        table.row({"dataset": name, "f": len(forest.features), "c": len(forest.classes),
                   "t": trees, "n_rf": forest.n_nodes, "a": round(100 * trained.accuracy, 2),
                   "n_nnf": comp.total_nodes(), "paper_n_nnf": paper_n,
                   "t_nnf": round(seconds, 4), "paper_t_nnf": paper_t,
                   "t_ratio": None if ratio(seconds, paper_t) is None
                   else round(ratio(seconds, paper_t), 4)})
    return 0


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Time without the cyclic garbage collector, then collect untimed (as :mod:`timeit`
    does): a reason is an NNF of up to millions of objects, and a full collection that one
    of them triggers would be charged to whichever stage happened to allocate next."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()


@contextlib.contextmanager
def _frozen() -> Iterator[Callable[[], None]]:
    """Keep the cyclic garbage collector off the objects alive now (the compiled forest and
    graphs) while explanations are timed, and give a function that does the same for those
    alive later (call it after each explanation's collection: the explainer's caches grow).
    :func:`_no_gc` collects after each explanation, and a full collection walks every
    container of the compiled graphs and caches, streaming them through the CPU caches and
    evicting what the next explanation's first stage reads (docs/decisions.md, "Finding: the
    NR/CE search's rounds and instructions"). Frozen objects that become garbage meanwhile
    are collected once unfrozen."""
    gc.freeze()
    try:
        yield gc.freeze
    finally:
        gc.unfreeze()


def _beside_sat(forest: Any, instances: Sequence[Any], what: Sequence[str],
                answers: Sequence[Any], args: argparse.Namespace) -> dict[str, Any]:
    """The SAT engine on the same instances (its default limits, or ``--limit-*``): seconds
    per instance (its compile apart, ``t_sat_compile``), the share of its fields complete,
    and how many complete fields differ from the decision graphs' (must be 0)."""
    from rfcircuits.explain import Explainer

    start = time.perf_counter()
    sat = Explainer(forest, engine="sat", limit_seconds=args.limit_seconds or None,
                    limit_items=args.limit_items or None)
    sat.compile()
    compiled = time.perf_counter()
    fields = complete = differ = 0
    for x, ours in zip(instances, answers):
        theirs = sat.explain_states(x, what)
        fields += len(what)
        for key in theirs.what:
            if key not in theirs.incomplete:
                complete += 1
                differ += theirs.field_json(key) != ours.field_json(key)
    n = max(1, len(instances))
    return {"t_sat_compile": round(compiled - start, 3),
            "t_sat": round((time.perf_counter() - compiled) / n, 6),
            "sat_complete": round(complete / max(1, fields), 3), "sat_differ": differ}


def bench_explain(args: argparse.Namespace) -> int:
    """Table 3 (SRs, NRs, robustness, shortest GNRs) and Table 4 (CEs) per test instance.

    Times are per explained instance (up to 100 test rows) and exclude compiling the class
    formulas (reported as ``t_compile``), as in the paper; ``t_nr`` and ``t_ce`` (per target
    class) are all of the NRs' and CEs' work, read off the graphs' existential projections
    where the explainer's default ``nr_method="auto"`` compiles them (their build is part of
    ``t_compile``; ``nr_by`` says for how many graphs), else searched on the graphs; ``t_sr`` is
    the default SR method, the minimal hitting sets of the NRs (which it needs: add
    ``t_nr``); robustness and ``V`` are read off the NRs. ``t_sgnr`` is Alg. 6–7 on GR,
    excluding building GR as the paper does; ``t_gr`` is building the part of GR they need
    (its clauses on the shortest NRs' features). ``t_sr_expand`` is bottom-up
    expansion of CR and ``t_cr`` building CR for it, over the first ``--expand`` instances
    only (the slow method on large graphs, where it would dominate the run). Each
    explanation is timed with the garbage collector off (:func:`_no_gc`), the objects alive
    before it frozen (:func:`_frozen`). The SAT engine's columns beside them are
    :func:`_beside_sat`'s, on the same instances."""
    from rfcircuits.explain import Explainer, Timings

    table3 = Table([("dataset", "dataset", 13), ("t", "#T", 4), ("n_rf", "#N_RF", 6),
                    ("a", "%A", 6), ("t_compile", "T_comp", 7), ("t_cr", "T_CR", 7),
                    ("t_gr", "T_GR", 7),
                    ("t_sr", "T_SR", 8), ("paper_t_sr", "paper", 7),
                    ("t_sr_expand", "T_SRexp", 8), ("c_sr", "#C_SR", 7), ("paper_c_sr", "paper", 7),
                    ("t_nr", "T_NR", 8), ("paper_t_nr", "paper", 7), ("c_nr", "#C_NR", 7),
                    ("paper_c_nr", "paper", 7), ("r", "r", 5), ("paper_r", "paper", 5),
                    ("nr_by", "NRs by", 7),
                    ("t_sgnr", "T_sGNR", 8), ("paper_t_sgnr", "paper", 7),
                    ("c_sgnr", "#C_sGNR", 7), ("paper_c_sgnr", "paper", 7),
                    ("t_sat", "T SAT", 8), ("sat_complete", "SAT cmpl", 8),
                    ("sat_differ", "differ", 6)], args.json)
    rows4 = []
    for name, ref, trees, trained in configurations(paper.TABLE3, args):
        forest = trained.forest
        start = time.perf_counter()
        multi = name in paper.TABLE4
        try:
            with Progress(f"{name}: compiling", enabled=not args.no_progress) as progress:
                explainer = Explainer(forest, engine="graphs", max_nodes=args.node_budget,
                                      progress=progress)
                explainer.compile(negated=multi)
        except BudgetExceeded as exc:
            stopped(table3, {"dataset": name, "t": trees}, exc)
            continue
        compile_seconds = time.perf_counter() - start
        instances = trained.test_instances[:100]
        what = ("sr", "nr", "robust", "flips") + (("ce",) if multi else ())
        timing, expand = Timings(), Timings()
        counts = {"sr": 0, "nr": 0, "sgnr": 0, "ce": 0, "r": 0, "robust": 0}
        answers = []
        with _frozen() as freeze, Progress(f"{name}: instances",
                                           enabled=not args.no_progress) as progress:
            for i, x in enumerate(instances):
                progress(i, len(instances))
                with _no_gc():
                    e = explainer.explain_states(x, what, timing)
                answers.append(e)
                if i < args.expand:
                    with _no_gc():
                        explainer.explain_states(x, ("sr",), expand, sr_method="expand")
                freeze()
                counts["sr"] += len(e.sufficient_reasons)
                counts["nr"] += len(e.necessary_reasons)
                counts["sgnr"] += len(e.shortest_flips)
                counts["ce"] += sum(len(ces) for _, ces in e.contrastive)
                if e.robustness is not None:
                    counts["r"] += e.robustness
                    counts["robust"] += 1
        n = max(1, len(instances))
        same = trees == ref["T"]

        def expanded(seconds: float) -> float | None:
            done = min(len(instances), args.expand)
            return round(seconds / done, 6) if done else None

        def pair(key: str, value: float, ref_key: str) -> dict[str, float | None]:
            return {key: value, f"paper_{key}": ref[ref_key] if same else None}

        row: dict[str, object] = {"dataset": name, "t": trees, "n_rf": forest.n_nodes,
                                  "a": round(100 * trained.accuracy, 2),
                                  "t_compile": round(compile_seconds, 3),
                                  "t_cr": expanded(expand.reasons),
                                  "t_sr_expand": expanded(expand.sr)}
        row.update(pair("t_sr", round(timing.sr / n, 6), "T_SR"))
        row.update(pair("c_sr", round(counts["sr"] / n, 2), "C_SR"))
        row.update(pair("t_nr", round(timing.nr / n, 6), "T_NR"))
        row.update(pair("c_nr", round(counts["nr"] / n, 2), "C_NR"))
        row.update(pair("r", round(counts["r"] / max(1, counts["robust"]), 2), "r"))
        projected, graphs = explainer.graphs.projected()
        row["nr_by"] = ("proj" if projected == graphs else "search" if not projected
                        else f"proj {projected}/{graphs}")
        row["t_gr"] = round(timing.reasons / n, 6)
        if args.engine == "both":
            row.update(_beside_sat(forest, instances, what, answers, args))
        row.update(pair("t_sgnr", round(timing.flips / n, 6), "T_sGNR"))
        row.update(pair("c_sgnr", round(counts["sgnr"] / n, 2), "C_sGNR"))
        if multi:
            ref4 = paper.TABLE4[name]
            targets = max(1, timing.ce_targets)
            ce = {"t_ce": round(timing.ce / targets, 6),
                  "paper_t_ce": ref4["T_CE"] if same else None,
                  "c_ce": round(counts["ce"] / targets, 2),
                  "paper_c_ce": ref4["C_CE"] if same else None}
            if args.json:
                row.update(ce)
            else:
                rows4.append({"dataset": name, "t": trees, **ce})
        table3.row(row)
    if rows4:
        print()
        table4 = Table([("dataset", "dataset", 13), ("t", "#T", 4),
                        ("t_ce", "T_CE", 8), ("paper_t_ce", "paper", 7), ("c_ce", "#C_CE", 7),
                        ("paper_c_ce", "paper", 7)], False)
        for r4 in rows4:
            table4.row(r4)
    return 0
