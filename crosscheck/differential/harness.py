"""The differential harness: the native engine against independent oracles.

:func:`crosscheck` runs the native engine and each chosen oracle on one forest, tie policy and
list of instances, and compares:

- **class formulas** of every native form — NNF (Alg. 3), decision graphs Alg. 3B and 3A with
  ordered Apply, and Alg. 3B with paper Alg. 4 (small forests) — against the brute force
  (model sets, world by world), the BDD oracle (the circuit *files* the native engine writes,
  read back and decided equivalent) and the SAT oracle (membership at the instances and at
  random worlds);
- **every explanation field** for each instance: against the brute force and the BDD oracle
  field by field; against the SAT oracle field by field for CEs and robustness, by its
  certificate (``certify_reasons``, which proves the native sets exactly right) for SRs and
  NRs, also field by field on forests of at most ``SAT_ENUMERATION_WORLDS`` worlds, and item by item
  (``check_gsr``/``check_gnr``/``check_flip``) for GSRs, GNRs and shortest flips.

An oracle whose size limits the case exceeds is *skipped* with its reason, and so is the
native engine once its decision graphs exceed the node budget ``max_nodes`` (a limit of this
machine, not a finding; the checks that need it are skipped, not run). Every difference
becomes a :class:`Disagreement` (check, engines, both values, a counterexample); crashes of
the native engine or of an oracle are disagreements too.
"""

from __future__ import annotations

import functools
import itertools
import json
import operator
import random
import traceback
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rfcircuits.classformula import COMPARISONS, compile_nnf
from rfcircuits.dgcompile import DGCompilation, compile_dg
from rfcircuits.errors import BudgetExceeded, InputError
from rfcircuits.errors import check_choice
from rfcircuits.explain import (AUTO_SECONDS, ENGINES, ROBUST_METHODS, SR_METHODS, Explainer,
                                auto_cap, load_explainer)
from rfcircuits.satengine import SatEngine
from rfcircuits.projections import MAX_FEATURES
from rfcircuits.explanation import ALL_WHAT, ENGINE_TEXT, WHAT_FIELDS, Explanation, dumps
from rfcircuits.forest import Forest, Instance, instance_to_json
from rfcircuits.nnf import NNF
from rfcircuits.interrupts import reraise_signal
from rfcircuits.progress import Progress
from rfcircuits.robustness import flips
from rfcircuits.terms import term_json, variables
from rfcircuits.crosscheck.oracles.brute import GENERAL as BRUTE_GENERAL, WorldSet
from rfcircuits.crosscheck.campaigns.parallel import can_fork, open_backend, run_tasks
from rfcircuits.crosscheck.differential.strategies import margin

ORACLES = ("brute", "bdd", "sat")
#: The decision graphs' methods users get (SRs, robustness, NRs), checked on large forests.
DEFAULT_METHODS = ("dual", "search", "auto")
HEADER = ("votes", "decision", "classes")
#: Largest forests (trees × worlds) on which Alg. 4 (generic Apply) is compiled as a check.
ALG4_LIMIT = 10 ** 6
#: Random worlds at which the SAT oracle checks class membership.
SAT_WORLDS = 32
#: Largest forests (worlds) on which the SAT oracle's enumerated SRs and NRs are compared too,
#: beside its certificate (which alone proves them; the enumeration checks the certificate).
SAT_ENUMERATION_WORLDS = 10 ** 6


#: ``on_unit(unit, outcomes, disagreements)``: the checks of one finished unit of a run.
OnUnit = Callable[[Any, Sequence["Outcome"], Sequence["Disagreement"]], None]


@dataclass(frozen=True)
class Outcome:
    """One cell of the check × engine table: ``agree``, ``disagree``, ``skipped`` or ``error``."""

    check: str
    engine: str
    status: str
    detail: str = ""


@dataclass(frozen=True)
class Disagreement:
    """A difference between the native engine and an oracle (or a crash)."""

    check: str
    engines: tuple[str, str]
    instance: dict[str, str] | None
    ours: Any
    theirs: Any
    counterexample: Any = None

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "engines": list(self.engines), "instance": self.instance,
                "ours": self.ours, "theirs": self.theirs, "counterexample": self.counterexample}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Disagreement:
        """The disagreement :meth:`to_json` wrote (values as JSON gives them back)."""
        return cls(obj["check"], tuple(obj["engines"]), obj["instance"], obj["ours"],
                   obj["theirs"], obj["counterexample"])


@dataclass
class Report:
    """Outcomes of every check and the disagreements found; ``explained`` counts the instances
    whose checks are complete (all of them unless interrupted)."""

    outcomes: list[Outcome] = field(default_factory=list)
    disagreements: list[Disagreement] = field(default_factory=list)
    explained: int = 0
    interrupted: bool = False
    #: The native engine that answered ("graphs" or "sat"; "auto" when nothing was run).
    engine: str = "graphs"
    #: The tie policy checked.
    ties: str = "first"

    @property
    def ok(self) -> bool:
        return not self.disagreements

    def to_json(self) -> dict[str, Any]:
        """The report as one JSON object: the counts, every outcome as ``[check, engine,
        status, detail]`` (as ``crosscheck --out`` keeps them) and every disagreement."""
        return {"ties": self.ties, "engine": self.engine, "ok": self.ok,
                "checks": self.checks(), "explained": self.explained,
                "interrupted": self.interrupted,
                "outcomes": [[o.check, o.engine, o.status, o.detail] for o in self.outcomes],
                "disagreements": [d.to_json() for d in self.disagreements]}

    def text(self, shown: int = 5) -> str:
        """What ``rfcircuits crosscheck`` prints for one tie policy: the counts, the check ×
        engine table, then the first ``shown`` disagreements."""
        engine = ENGINE_TEXT.get(self.engine, self.engine)
        lines = [f"ties {self.ties}: {self.checks()} checks, {len(self.disagreements)} "
                 f"disagreements (native engine: {engine})", self.table()]
        for d in self.disagreements[:shown]:
            lines.append(f"  DISAGREE {d.check} ({' vs '.join(d.engines)})"
                         f"{' at ' + json.dumps(d.instance) if d.instance else ''}: "
                         f"{json.dumps(d.counterexample, ensure_ascii=False)[:300]}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        """Short: the counts."""
        return (f"<crosscheck Report: ties {self.ties}, {self.checks()} checks, "
                f"{len(self.disagreements)} disagreements, engine {self.engine}>")

    def record(self, check: str, engine: str, agree: bool, detail: str = "") -> None:
        self.outcomes.append(Outcome(check, engine, "agree" if agree else "disagree", detail))

    def skip(self, check: str, engine: str, reason: str) -> None:
        self.outcomes.append(Outcome(check, engine, "skipped", reason))

    def checks(self) -> int:
        """Number of comparisons made (agreeing or not)."""
        return sum(o.status in ("agree", "disagree") for o in self.outcomes)

    def table(self) -> str:
        """Check × engine table: counts of agreements, disagreements, skips with reasons."""
        checks = list(dict.fromkeys(o.check for o in self.outcomes))
        engines = list(dict.fromkeys(o.engine for o in self.outcomes))
        cells: dict[tuple[str, str], dict[str, int]] = {}
        reasons: dict[str, str] = {}
        for o in self.outcomes:
            cells.setdefault((o.check, o.engine), {}).setdefault(o.status, 0)
            cells[(o.check, o.engine)][o.status] += 1
            if o.status in ("skipped", "error"):
                reasons.setdefault(o.engine, o.detail)
        width = max([len(c) for c in checks] + [5])
        lines = ["check".ljust(width) + "".join(e.rjust(22) for e in engines)]
        for c in checks:
            row = c.ljust(width)
            for e in engines:
                counts = cells.get((c, e), {})
                text = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "-"
                row += text.rjust(22)
            lines.append(row)
        for engine, reason in reasons.items():
            lines.append(f"{engine}: {reason}")
        return "\n".join(lines)


def _difference(ours: Any, theirs: Any) -> Any:
    """Items in one list and not the other (for set-valued fields), else None."""
    if isinstance(ours, list) and isinstance(theirs, list):
        a = {dumps(i) for i in ours}
        b = {dumps(i) for i in theirs}
        return {"only_ours": [i for i in ours if dumps(i) not in b],
                "only_theirs": [i for i in theirs if dumps(i) not in a]}
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return {k: _difference(ours.get(k), theirs.get(k)) for k in set(ours) | set(theirs)
                if ours.get(k) != theirs.get(k)}
    return None


def nnf_worlds(nnf: NNF, roots: Sequence[int], worlds: WorldSet) -> list[int]:
    """The worlds of ``worlds`` (a bitmask) in which each NNF root is true: one bottom-up pass
    with world sets for values, instead of one evaluation per world."""
    return nnf.fold(roots, lambda v: worlds.all if v else 0, worlds.literal_worlds,
                    lambda xs: functools.reduce(operator.and_, xs, worlds.all),
                    lambda xs: functools.reduce(operator.or_, xs, 0))


def circuit_worlds(form: str, comp: Any, classes: Sequence[int], worlds: WorldSet) -> list[int]:
    """For each class of ``classes``, the worlds of ``worlds`` (a bitmask) in which its native
    circuit is true, as :func:`nnf_worlds` computes them, in one pass over the circuits (the
    classes share subcircuits). A decision node's worlds are the union over its branches of
    (the worlds with one of the branch's states) ∩ (the child's worlds); a world whose state
    no branch holds never reaches the node."""
    if form == "nnf":
        return nnf_worlds(comp.nnf, [comp.roots[c] for c in classes], worlds)
    roots = [r for c in classes for r in comp.roots[c]]
    values = dict(zip(roots, comp.dg.fold(roots, lambda v: worlds.all if v else 0,
                                          lambda f, kids: functools.reduce(
                                              operator.or_, (worlds.literal_worlds(f, m) & v
                                                             for m, v in kids), 0))))
    return [functools.reduce(operator.and_, (values[r] for r in comp.roots[c]), worlds.all)
            for c in classes]


class Crosscheck:
    """One forest and tie policy, the native engine built once, oracles built on demand."""

    def __init__(self, forest: Forest, ties: str = "first",
                 oracles: Sequence[str] = ORACLES, seed: int = 0,
                 max_nodes: int | None = None, progress: Progress | None = None,
                 also_ties: Sequence[str] = (), engine: str = "graphs",
                 limits: dict[str, Any] | None = None, comparison: str = "auto") -> None:
        unknown = sorted(set(oracles) - set(ORACLES))
        if unknown:
            raise InputError(f"--oracles: unknown oracle {unknown[0]!r} "
                             f"(choose from {', '.join(ORACLES)})")
        check_choice("engine", engine, ENGINES)
        #: The native engine checked: "graphs", "sat", or "auto" until the compile decides.
        self.engine = engine
        #: The SAT engine's per-instance limits (none by default: complete answers).
        self.limits = limits or {"limit_seconds": None, "limit_items": None}
        #: How the NNF circuits compare soft votes (compile_nnf's ``comparison``).
        self.comparison = check_choice("comparison", comparison, COMPARISONS)
        self.forest = forest
        self.ties = ties
        #: Tie policies checked next, whose class formulas the compile makes too (compile_dg's
        #: ``also``: the same networks serve every policy).
        self.also_ties = tuple(also_ties)
        self.oracles = list(oracles)
        self.seed = seed
        self.rng = random.Random(seed)
        self.report = Report(ties=ties)
        self.max_nodes = max_nodes
        #: Why the native engine stopped (its node budget), once it has.
        self.native_stopped: str | None = None
        #: Alg. 3B's class formulas as :meth:`class_formulas` compiled and checked them.
        self.compiled_3b: DGCompilation | None = None
        #: Where the stages and the native compiles are reported (None: nowhere).
        self.progress = progress
        self._oracle: dict[str, Any] = {}
        self._sat: SatEngine | None = None

    def _stage(self, text: str, total: int | None = None) -> None:
        if self.progress is not None:
            self.progress.stage(f"ties {self.ties}: {text}", total)

    # -- building engines -----------------------------------------------------------------------

    def _guard(self, check: str, engines: tuple[str, str], instance: dict[str, str] | None,
               fn: Callable[[], Any]) -> Any:
        """Run ``fn``; a crash becomes a disagreement (with its traceback) and None; the
        native engine's budget stops it (a skip, and every later native step is skipped)."""
        if self.native_stopped and engines == ("native", "-"):
            self.report.skip(check, "native", self.native_stopped)
            return None
        try:
            return fn()
        except BudgetExceeded as exc:  # only the native engine has a node budget
            self.native_stopped = f"stopped: {exc.for_cli()}"
            self.report.skip(check, "native", self.native_stopped)
            return None
        except Exception as exc:  # a crash is a finding, not a harness failure (a signal is not)
            reraise_signal(exc)
            culprit = engines[0] if engines[1] == "-" else engines[1]
            self.report.outcomes.append(Outcome(check, culprit, "error", repr(exc)))
            self.report.disagreements.append(Disagreement(
                check, engines, instance, None, None, traceback.format_exc(limit=6)))
            return None

    def oracle(self, name: str) -> Any:
        """The oracle, or a str saying why it is skipped (or None after a crash)."""
        if name not in self._oracle:
            self._oracle[name] = self._guard(f"build {name}", ("native", name), None,
                                             lambda: self._build(name))
        return self._oracle[name]

    def _build(self, name: str) -> Any:
        forest = self.forest
        if name == "brute":
            from rfcircuits.crosscheck.oracles.brute import MAX_WORLDS, BruteForce

            if forest.n_worlds() > MAX_WORLDS:
                return f"{forest.n_worlds()} worlds exceed the brute force's {MAX_WORLDS}"
            return BruteForce(forest, self.ties)
        if name == "bdd":
            from rfcircuits.crosscheck.oracles.bdd import BddOracle

            reason = BddOracle.too_big(forest)
            return reason if reason else BddOracle(forest, self.ties)
        from rfcircuits.crosscheck.oracles.sat import SatOracle

        return SatOracle(forest, self.ties)

    # -- class formulas -------------------------------------------------------------------------

    def class_formulas(self) -> None:
        forest, ties, budget = self.forest, self.ties, self.max_nodes
        forms: dict[str, Any] = {}
        progress = self.progress
        self._stage("compiling nnf")
        forms["nnf"] = self._guard("formula nnf", ("native", "-"), None,
                                   lambda: compile_nnf(forest, ties, progress=progress,
                                                       comparison=self.comparison))
        # One compile serves both forms: Alg. 3A's keeps Alg. 3B's conjuncts (roots_3b), and
        # the explanations reuse them (a large forest's graphs are compiled once, not thrice).
        if self.engine != "sat":
            self._stage("compiling dg")
            both = self._guard("formula dg-conj", ("native", "-"), None, self._compile_graphs)
        if self.engine == "sat":  # the SAT engine's CNF of the NNF circuits instead
            self._stage("compiling cnf")
            forms["cnf"] = self._guard("formula cnf", ("native", "-"), None, self._sat_engine)
            for form in ("dg-conj", "dg", "dg-conj alg4"):
                self.report.skip(f"formula {form}", "native", "the SAT engine answers")
        else:
            forms["dg-conj"] = self.compiled_3b = None if both is None else replace(
                both, form="dg-conj", roots=both.roots_3b)
            forms["dg"] = self._guard("formula dg", ("native", "-"), None, lambda: both)
        if self.engine != "sat" and len(forest.trees) * forest.n_worlds() <= ALG4_LIMIT:
            self._stage("compiling dg-conj alg4")
            forms["dg-conj alg4"] = self._guard(
                "formula dg-conj alg4", ("native", "-"), None,
                lambda: compile_dg(forest, ties, "dg-conj", apply="generic",
                                   max_nodes=budget, progress=progress))
        if forms.get("dg") is not None:
            # Alg. 3A folds each class formula into one graph (the form CEs are negated from).
            shapes = [len(roots) for roots in forms["dg"].roots]
            self._result("formula dg is one graph per class", "native", set(shapes) == {1},
                         None, shapes, [1] * len(shapes), None)
        if len(forest.trees) * forest.n_worlds() <= ALG4_LIMIT:
            for form, comp in forms.items():
                if form not in ("nnf", "cnf") and comp is not None:
                    self._invariants(f"formula {form} invariants", comp)
        for form, comp in forms.items():
            if comp is None:
                continue
            check = f"formula {form}"
            for name in self.oracles:
                self._stage(f"class formulas {form} against {name}")
                oracle = self.oracle(name)
                if isinstance(oracle, str):
                    self.report.skip(check, name, oracle)
                elif oracle is not None:
                    self._guard(check, ("native", name), None,
                                lambda: self._compare_formulas(check, form, comp, name, oracle))

    def _compile_graphs(self) -> DGCompilation | None:
        """Alg. 3A (with Alg. 3B's conjuncts) within the node budget; under ``auto`` within
        the explainer's capped attempt, past which the SAT engine is checked instead."""
        forest, ties, budget = self.forest, self.ties, self.max_nodes
        if self.engine == "graphs":
            return compile_dg(forest, ties, "dg", max_nodes=budget, progress=self.progress,
                              also=self.also_ties)
        try:
            both = compile_dg(forest, ties, "dg", max_nodes=auto_cap(budget),
                              timeout=AUTO_SECONDS, progress=self.progress, also=self.also_ties)
        except (BudgetExceeded, MemoryError):
            self.engine = "sat"
            return None
        self.engine = "graphs"
        return both.lift_caps(budget)

    def _sat_engine(self) -> SatEngine:
        """The SAT engine's CNF, compiled (checked as the form ``cnf``)."""
        if self._sat is None:
            self._sat = SatEngine(self.forest, self.ties, limit_seconds=None, limit_items=None,
                                  progress=self.progress, comparison=self.comparison)
            self._sat.compile()
        return self._sat

    def _invariants(self, check: str, comp: Any) -> None:
        """Structure, ``ordered`` flags and weak test-once of every class's graphs."""
        try:
            comp.dg.check_invariants([r for roots in comp.roots for r in roots])
        except AssertionError as exc:
            self._result(check, "native", False, None, str(exc), None, None)
        else:
            self._result(check, "native", True, None, None, None, None)

    def _docs(self, form: str, comp: Any) -> list[dict[str, Any]]:
        """The circuit documents the native engine writes with ``compile --out``."""
        forest = self.forest
        if form == "nnf":
            return [comp.nnf.to_json(comp.roots[c], forest, name, self.ties)
                    for c, name in enumerate(forest.classes)]
        return [comp.dg.to_json(comp.roots[c], forest, name, self.ties)
                for c, name in enumerate(forest.classes)]

    def _compare_formulas(self, check: str, form: str, comp: Any, name: str, oracle: Any) -> None:
        forest = self.forest
        if form == "cnf":
            self._compare_cnf(check, comp, name, oracle)
            return
        if name == "brute":
            accepted = circuit_worlds(form, comp, range(len(forest.classes)), oracle)
        for c, class_name in enumerate(forest.classes):
            if name == "brute":
                worlds = accepted[c]
                truth = oracle.class_worlds(c)
                if worlds == truth:
                    self._result(check, name, True, None, None, None, None)
                    continue
                i = ((worlds ^ truth) & -(worlds ^ truth)).bit_length() - 1
                self._result(check, name, False, None, bool(worlds >> i & 1),
                             bool(truth >> i & 1), instance_to_json(forest, oracle.worlds[i]),
                             f"class {class_name}")
            elif name == "bdd":
                verdict = oracle.check_circuit(self._docs(form, comp)[c], f"{form} {class_name}")
                self._result(check, name, verdict.equivalent, None, None, None,
                             verdict.counterexample, verdict.describe())
            else:
                worlds = [tuple(self.rng.randrange(f.n_states) for f in forest.features)
                          for _ in range(SAT_WORLDS)]
                if form == "nnf":
                    models = circuit_worlds(form, comp, [c], WorldSet(forest, worlds))[0]
                    member = [bool(models >> i & 1) for i in range(len(worlds))]
                else:  # one path per world: a fold would visit every node of a large graph
                    member = [comp.evaluate(c, w) for w in worlds]
                for ours, w in zip(member, worlds):
                    theirs = oracle.member(w, c)
                    self._result(check, name, ours == theirs, None, ours, theirs,
                                 instance_to_json(forest, w), f"class {class_name}")

    def _compare_cnf(self, check: str, engine: SatEngine, name: str, oracle: Any) -> None:
        """The SAT engine's goals at random worlds: ``R^c`` satisfiable with the world fixed
        iff the oracle puts it in class ``c``, and ``¬R^c`` iff not."""
        forest = self.forest
        worlds = [tuple(self.rng.randrange(f.n_states) for f in forest.features)
                  for _ in range(SAT_WORLDS)]
        for c, class_name in enumerate(forest.classes):
            for w in worlds:
                if name == "brute":
                    theirs = bool(oracle.class_worlds(c) >> oracle.worlds.index(w) & 1)
                elif name == "bdd":
                    theirs = oracle.holds(c, w)
                else:
                    theirs = oracle.member(w, c)
                ours = engine.holds(c, w)
                agree = ours == theirs and engine.holds(c, w, positive=False) != theirs
                self._result(check, name, agree, None, ours, theirs,
                             instance_to_json(forest, w), f"class {class_name}")

    def _result(self, check: str, engine: str, agree: bool, instance: dict[str, str] | None,
                ours: Any, theirs: Any, counterexample: Any, detail: str = "") -> None:
        self.report.record(check, engine, agree, detail)
        if not agree:
            self.report.disagreements.append(Disagreement(
                check, ("native", engine), instance, ours, theirs, counterexample))

    # -- explanations ---------------------------------------------------------------------------

    def explanations(self, instances: Sequence[Instance], what: Sequence[str] = ALL_WHAT,
                     progress: Callable[[int, int], None] | None = None, jobs: int = 1,
                     start: int = 0, on_unit: OnUnit | None = None,
                     dask: str | None = None) -> None:
        """Every instance's explanation against the oracles, from instance ``start`` on;
        ``on_unit(i, outcomes, disagreements)`` receives each instance's checks, in instance
        order. ``jobs > 1`` forks that many workers, which share the circuits and oracles built
        here (where fork is available); on the Dask cluster at ``dask`` the circuits are
        compiled here and sent to each worker once, which loads them and builds its oracles
        at its first instance."""
        explainer = Explainer(self.forest, self.ties, engine=self.engine,
                              max_nodes=self.max_nodes, **self.limits,
                              comparison=self.comparison,
                              compiled=self.compiled_3b if self.engine == "graphs" else None)
        # On small forests every combination of SR, robustness and NR methods faces the
        # oracles, chosen per instance (by its states: fuzz cases have three instances); on
        # large ones the defaults (what users get) alone.
        small = len(self.forest.trees) * self.forest.n_worlds() <= ALG4_LIMIT
        nr_methods = ("search", "project") if len(self.forest.features) <= MAX_FEATURES \
            else ("search",)
        combos = list(itertools.product(SR_METHODS, ROBUST_METHODS, nr_methods))
        methods = [combos[(i + sum(x)) % len(combos)] if small else DEFAULT_METHODS
                   for i, x in enumerate(instances)]
        todo = range(start, len(instances))
        self._stage("instances", len(instances))
        if dask is None and (jobs <= 1 or len(todo) <= 1 or not can_fork()):
            report = self.report
            for i in todo:
                seen = len(report.outcomes), len(report.disagreements)
                self._explain(explainer, instances[i], what, *methods[i])
                report.explained = i + 1
                if on_unit:
                    on_unit(i, report.outcomes[seen[0]:], report.disagreements[seen[1]:])
                if progress:
                    progress(i + 1, len(instances))
            return
        global _WORKER
        shipped: bytes | None = None
        if dask is None:
            self._prepare(explainer, what)
            _WORKER = (self, explainer, instances, methods, what)
            task: Callable[..., tuple[list[Outcome], list[Disagreement]]] = _explain_in_worker
        else:  # compiled here once, loaded by each worker
            task = _explain_remote
            shipped = explainer.dumps() if self._compile(explainer, what) else None
        finished: dict[int, tuple[list[Outcome], list[Disagreement]]] = {}
        shown = start  # units are passed on in instance order: a prefix of a serial run's
        # Far instances have by far the most SRs and NRs (docs/decisions.md, "Oracles"):
        # start them first so that short ones fill the end.
        order = sorted(todo, key=lambda i: -margin(self.forest, instances[i]))
        try:
            with open_backend(min(jobs, len(todo)), dask) as backend:
                setup: tuple[Any, ...] = () if dask is None else (
                    uuid.uuid4().hex, backend.share(shipped), self.native_stopped, self.forest,
                    self.ties, self.oracles, self.seed, self.max_nodes, self.engine,
                    self.limits, self.comparison, instances, methods, what)
                for i, result in run_tasks(backend, task, ((i, setup + (i,)) for i in order)):
                    finished[i] = result
                    while on_unit and shown in finished:
                        on_unit(shown, *finished[shown])
                        shown += 1
                    if progress:
                        progress(start + len(finished), len(instances))
        finally:  # also on Ctrl-C: keep the finished instances' checks, in instance order
            _WORKER = None
            for i in sorted(finished):
                self.report.outcomes.extend(finished[i][0])
                self.report.disagreements.extend(finished[i][1])
            self.report.explained = start + len(finished)

    def _prepare(self, explainer: Explainer, what: Sequence[str]) -> None:
        """Build the native circuits and the oracles before forking, so that workers share
        them."""
        if self._compile(explainer, what):
            for name in self.oracles:
                self.oracle(name)

    def _compile(self, explainer: Explainer, what: Sequence[str]) -> bool:
        """Compile the native engine for the explanations ``what`` (the negated classes
        too when CEs are asked); False when it did not compile. A budget stop is recorded
        for the workers to skip on; any other failure is left for them to meet again and
        report per instance, as a serial run does."""
        if self.native_stopped:
            return False  # the workers skip the native steps, as a serial run does
        try:
            explainer.compile(negated="ce" in what)
        except BudgetExceeded as exc:
            self.native_stopped = f"stopped: {exc.for_cli()}"
            return False
        except Exception as exc:  # reported per instance by the workers' own attempts
            reraise_signal(exc)
            return False
        return True

    def _explain(self, explainer: Explainer, x: Instance, what: Sequence[str], method: str,
                 robust: str, nr: str) -> None:
        """One instance's explanation by the native engine against every oracle."""
        shown = instance_to_json(self.forest, x)
        asked = what
        if "sat" in self.oracles and {"sr", "nr"} & set(what):
            # The SAT oracle certifies SRs and NRs together (:meth:`_certify`): asked for one,
            # the native engine computes both, and only the one asked for is reported.
            asked = tuple(k for k in ALL_WHAT if k in what or k in ("sr", "nr"))
        ours = self._guard("explain", ("native", "-"), shown,
                           lambda: explainer.explain_states(x, asked, sr_method=method,
                                                            robust_method=robust, nr_method=nr))
        if ours is None:
            return
        self.engine = ours.engine
        for k in ours.not_computed:
            if k in what:
                self.report.skip(WHAT_FIELDS[k], "native", f"not computed by the {ours.engine} "
                                                           "engine")
        partial = tuple(k for k in what if k in ours.incomplete)
        what = tuple(k for k in what if k in ours.what and k not in partial)
        mine = _FieldsJson(ours)
        for name in self.oracles:
            oracle = self.oracle(name)
            if isinstance(oracle, str):
                for key in HEADER + tuple(WHAT_FIELDS[k] for k in what):
                    self.report.skip(key, name, oracle)
                continue
            if oracle is None:
                continue
            if partial:
                self._guard("incomplete fields", ("native", name), shown,
                            lambda: self._partial(x, shown, ours, partial, name, oracle))
            if name == "sat":
                self._guard("explain", ("native", name), shown,
                            lambda: self._against_sat(x, shown, ours, mine, oracle, what))
                continue
            fields = what
            beyond = oracle.general_too_big() if name == "brute" else None
            if beyond:  # the worlds fit, the general candidates do not: the rest is checked
                fields = tuple(k for k in what if k not in BRUTE_GENERAL)
                for k in what:
                    if k in BRUTE_GENERAL:
                        self.report.skip(WHAT_FIELDS[k], name, beyond)
            theirs = self._guard("explain", ("native", name), shown,
                                 lambda: oracle.explain(x, fields))
            if theirs is not None:
                self._fields(name, shown, mine, theirs.to_json(),
                             HEADER + tuple(WHAT_FIELDS[k] for k in fields))
            if name == "brute" and "flips" in what:
                self._guard("shortest flip worlds", ("native", name), shown,
                            lambda: self._flip_worlds(x, shown, ours, oracle))

    def _partial(self, x: Instance, shown: dict[str, str], ours: Explanation,
                 partial: Sequence[str], name: str, oracle: Any) -> None:
        """Fields the engine cut short at its limits: every item must be right (the SAT
        oracle judges each; the others' complete answers must hold it) and an incomplete
        robustness (the smallest NR found) can only be above the true one."""
        if name == "sat":
            r = oracle.robustness(x)
            for key in partial:
                field = WHAT_FIELDS[key]
                if key == "robust":
                    self._result(f"{field} (incomplete)", name,
                                 ours.robustness is None or r is not None and r <= ours.robustness,
                                 shown, ours.robustness, r, None)
                elif key == "ce":
                    for t, clauses in ours.contrastive:
                        for item in clauses:
                            self._item(field, shown, item,
                                       lambda: oracle.check_ce(x, t, item))
                else:
                    check = {"sr": oracle.check_sr, "nr": oracle.check_nr,
                             "flips": lambda x, item: oracle.check_flip(x, item, r)}[key]
                    for item in getattr(ours, field):
                        self._item(field, shown, item, lambda: check(x, item))
            return
        theirs = oracle.explain(x, partial)
        for key in partial:
            field = WHAT_FIELDS[key]
            if key == "robust":
                agree = ours.robustness is None or theirs.robustness is not None and \
                    theirs.robustness <= ours.robustness
                self._result(f"{field} (incomplete)", name, agree, shown, ours.robustness,
                             theirs.robustness, None)
                continue
            if key == "ce":
                truth = dict(theirs.contrastive)
                pairs = [(item, truth.get(t, ())) for t, items in ours.contrastive
                         for item in items]
            else:
                pairs = [(item, getattr(theirs, field)) for item in getattr(ours, field)]
            extra = [term_json(self.forest, item) for item, known in pairs if item not in known]
            self._result(f"{field} (incomplete: items)", name, not extra, shown, extra, [],
                         {"not_theirs": extra[:5]} if extra else None)

    def _flip_worlds(self, x: Instance, shown: dict[str, str], ours: Any, brute: Any) -> None:
        """The worlds :func:`rfcircuits.robustness.flips` enumerates from our shortest GNRs must be
        exactly the worlds outside Δ at the least distance from ``x`` (paper §4)."""
        full = [f.full for f in self.forest.features]
        mine = set(flips(x, ours.shortest_flips, full))
        delta = brute.class_worlds(ours.decision)
        outside = [w for i, w in enumerate(brute.worlds) if not delta >> i & 1]
        least = min((brute.diff(x, w).bit_count() for w in outside), default=None)
        truth = {w for w in outside if brute.diff(x, w).bit_count() == least}
        self._result("shortest flip worlds", "brute", mine == truth, shown, sorted(mine),
                     sorted(truth), {"only_ours": sorted(mine - truth)[:5],
                                     "only_brute": sorted(truth - mine)[:5]})

    def _fields(self, engine: str, shown: dict[str, str], mine: dict[str, Any],
                theirs: dict[str, Any], keys: Sequence[str]) -> None:
        for key in keys:
            agree = mine.get(key) == theirs.get(key)
            self._result(key, engine, agree, shown, mine.get(key), theirs.get(key),
                         None if agree else _difference(mine.get(key), theirs.get(key)))

    def _against_sat(self, x: Instance, shown: dict[str, str], ours: Any,
                     mine: dict[str, Any], sat: Any, what: Sequence[str]) -> None:
        reasons = tuple(k for k in ("sr", "nr") if k in what)
        # SRs and NRs face the certificate (:meth:`_certify`); their enumeration, the slow
        # part on large forests, only on small ones (a check of the certificate itself).
        large = self.forest.n_worlds() > SAT_ENUMERATION_WORLDS
        listed = tuple(k for k in what if k in sat.SUPPORTS and not (large and k in reasons))
        theirs = sat.explain(x, listed).to_json()
        self._fields("sat", shown, mine, theirs, HEADER + tuple(WHAT_FIELDS[k] for k in listed))
        certified = bool(reasons) and self._certify(x, shown, ours, mine, sat, reasons)

        @functools.cache  # GNRs and shortest flips both want the NRs'
        def feature_sets(name: str) -> frozenset[int]:
            """The SR or NR feature sets: the native ones once certified, else SAT's."""
            items = getattr(ours, name) if certified else getattr(sat, name)(x)
            return frozenset(variables(t) for t in items)

        # Completeness: GSRs are on exactly the SR feature sets, GNRs on exactly the NR
        # feature sets, shortest flips on the shortest ones.
        expected_sets = {
            "gsr": lambda: feature_sets("sufficient_reasons"),
            "gnr": lambda: feature_sets("necessary_reasons"),
            "flips": lambda: {v for v in feature_sets("necessary_reasons")
                              if v.bit_count() == sat.robustness(x)} if certified else
            {sum(1 << f for f in v) for v in sat.shortest_nr_sets(x)}}
        for key, sets_of in expected_sets.items():
            if key in what:
                name = WHAT_FIELDS[key]
                sets = sets_of()
                got = {variables(t) for t in getattr(ours, name)}
                self._result(f"{name} (feature sets)", "sat", got == sets, shown,
                             sorted(got), sorted(sets),
                             None if got == sets else {"only_ours": sorted(got - sets),
                                                       "only_sat": sorted(sets - got)})
        if "gsr" in what:
            items = ours.general_sufficient_reasons
            try:  # together: a large forest's instance can have tens of thousands
                verdicts = sat.check_gsrs(x, items)
            except InputError:  # a malformed item: each is judged on its own to name it
                verdicts = [None] * len(items)
            for item, verdict in zip(items, verdicts):
                self._item("general_sufficient_reasons", shown, item,
                           lambda: verdict or sat.check_gsr(x, item))
        if "gnr" in what:
            for item in ours.general_necessary_reasons:
                self._item("general_necessary_reasons", shown, item,
                           lambda: sat.check_gnr(x, item))
        if "flips" in what:
            for item in ours.shortest_flips:
                self._item("shortest_flips", shown, item,
                           lambda: sat.check_flip(x, item, ours.robustness))

    def _certify(self, x: Instance, shown: dict[str, str], ours: Any, mine: dict[str, Any],
                 sat: Any, reasons: Sequence[str]) -> bool:
        """The native SRs and NRs against :meth:`SatOracle.certify_reasons`: each requested
        field agrees iff the certificate holds, which proves both exactly right; on failure
        the disagreement says which checks failed, with the oracle's enumerated sets."""
        certificate = sat.certify_reasons(x, ours.sufficient_reasons, ours.necessary_reasons)
        for key in reasons:
            name = WHAT_FIELDS[key]
            if certificate.holds:
                self._result(name, "sat", True, shown, None, None, None, "certified")
                continue
            theirs = sat.explain(x, (key,)).to_json()[name]
            self._result(name, "sat", False, shown, mine[name], theirs,
                         {"certificate": certificate.counterexamples,
                          **_difference(mine[name], theirs)}, certificate.describe())
        return certificate.holds

    def _item(self, name: str, shown: dict[str, str], item: Any,
              verdict_of: Callable[[], dict[str, bool]]) -> None:
        """One item judged by the SAT oracle: every verdict must hold."""
        shown_item = term_json(self.forest, item)
        try:
            verdict = verdict_of()
        except InputError as exc:  # e.g. an improper literal: the item is malformed
            verdict = {"well_formed": False, "problem": str(exc)}  # type: ignore[dict-item]
        # An empty verdict decides nothing: it must not read as agreement.
        checked = [v for k, v in verdict.items() if k != "problem"]
        agree = bool(checked) and all(v is True for v in checked)
        self._result(name, "sat", agree, shown, shown_item, verdict,
                     None if agree else {"item": shown_item, "verdict": verdict})

    def close(self) -> None:
        sat = self._oracle.get("sat")
        if sat is not None and not isinstance(sat, str):
            sat.close()


class _FieldsJson(dict):  # type: ignore[type-arg]
    """An explanation's JSON (:meth:`Explanation.to_json`), each field made when first
    read: a large forest's certified SRs and NRs (tens of thousands) are read only to show a
    disagreement, and making their JSON cost about a second per instance."""

    def __init__(self, explanation: Explanation) -> None:
        super().__init__(explanation.header_json())
        self._explanation = explanation
        self._keys = {WHAT_FIELDS[k]: k for k in explanation.what}

    def __missing__(self, name: str) -> Any:
        if name not in self._keys:
            raise KeyError(name)
        value = self[name] = self._explanation.field_json(self._keys[name])
        return value

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return self[name] if name in self or name in self._keys else default


#: What forked workers explain with: the run, its explainer, the instances, the SR and
#: robustness methods per instance, and the fields (set just before the pool forks).
_WORKER: tuple[Crosscheck, Explainer, Sequence[Instance], list[tuple[str, str]],
               Sequence[str]] | None = None


def _explain_in_worker(i: int) -> tuple[list[Outcome], list[Disagreement]]:
    """Instance ``i``'s checks, made in a forked worker on its copy of the run."""
    assert _WORKER is not None
    run, explainer, instances, methods, what = _WORKER
    run.report = Report()
    run._explain(explainer, instances[i], what, *methods[i])
    return run.report.outcomes, run.report.disagreements


#: The run a cluster's worker rebuilt for the campaign of a token: (token, run, explainer).
_REMOTE: tuple[str, Crosscheck, Explainer] | None = None


def _explain_remote(token: str, circuits: bytes | None, stopped: str | None, forest: Forest,
                    ties: str, oracles: Sequence[str], seed: int, max_nodes: int | None,
                    engine: str, limits: dict[str, Any], comparison: str,
                    instances: Sequence[Instance],
                    methods: list[tuple[str, str, str]], what: Sequence[str],
                    i: int) -> tuple[list[Outcome], list[Disagreement]]:
    """Instance ``i``'s checks on a cluster's worker. The run is built at the worker's first
    instance of the campaign ``token`` and kept for the next: the native engine loaded from
    the ``circuits`` the client compiled (:meth:`rfcircuits.Explainer.dumps`), else (the
    client's compile ``stopped`` at the budget, or failed) as the client's was, and the
    oracles."""
    global _REMOTE
    if _REMOTE is None or _REMOTE[0] != token:
        if _REMOTE is not None:
            _REMOTE[1].close()
            _REMOTE = None
        run = Crosscheck(forest, ties, oracles, seed, max_nodes, engine=engine, limits=limits,
                         comparison=comparison)
        run.native_stopped = stopped
        explainer = Explainer(forest, ties, engine=engine, max_nodes=max_nodes,
                              comparison=comparison, **limits) if circuits is None else \
            load_explainer(circuits, forest, ties=ties, max_nodes=max_nodes,
                           comparison=comparison, **limits)
        run._prepare(explainer, what)
        _REMOTE = (token, run, explainer)
    _, run, explainer = _REMOTE
    run.report = Report()
    run._explain(explainer, instances[i], what, *methods[i])
    return run.report.outcomes, run.report.disagreements


def crosscheck(forest: Forest, instances: Sequence[Instance], ties: str = "first",
               oracles: Sequence[str] = ORACLES, what: Sequence[str] = ALL_WHAT,
               formulas: bool = True, seed: int = 0, max_nodes: int | None = None,
               progress: Callable[[int, int], None] | None = None, jobs: int = 1,
               start: int = 0, on_unit: OnUnit | None = None,
               also_ties: Sequence[str] = (), dask: str | None = None,
               engine: str = "graphs", limits: dict[str, Any] | None = None,
               comparison: str = "auto") -> Report:
    """Compare the native engine with the oracles on a forest and its instances; the native
    engine stops (its checks skipped) when its decision graphs exceed ``max_nodes``.
    ``progress(done, total)`` is called per instance (a :class:`Progress` also shows each
    stage and the compiles); ``jobs`` worker processes, or the workers of the Dask cluster
    at ``dask``, share the instances. Ctrl-C returns the report so far, marked ``interrupted`` (the checks of
    finished instances are kept).

    A resumed run starts at instance ``start``; ``on_unit(unit, outcomes, disagreements)``
    receives the checks of each finished unit — ``"formulas"``, then each instance index in
    order — for the caller to keep. ``also_ties``: the tie policies the caller checks next
    (their class formulas are compiled with this run's, and handed to their runs).

    ``engine``: the native engine checked, ``graphs``, ``sat`` (with its per-instance
    ``limits``, by default none), or ``auto`` as :class:`rfcircuits.Explainer` chooses; the
    report's ``engine`` says which answered. ``comparison``: how the NNF circuits compare
    soft votes (:func:`rfcircuits.classformula.soft_comparison`'s methods)."""
    run = Crosscheck(forest, ties, oracles, seed, max_nodes,
                     progress if isinstance(progress, Progress) else None, also_ties,
                     engine=engine, limits=limits, comparison=comparison)
    try:
        if formulas:
            run.class_formulas()
            if on_unit:
                on_unit("formulas", run.report.outcomes, run.report.disagreements)
        run.explanations(instances, what, progress, jobs, start, on_unit, dask)
    except KeyboardInterrupt:
        run.report.interrupted = True
    finally:
        run.close()
    run.report.engine = run.engine
    return run.report
