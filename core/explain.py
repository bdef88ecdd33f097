"""The explainer: formal explanations of a forest's decisions from whichever engine fits the
forest.

:class:`Explainer` is a facade over the two engines declared in
:mod:`rfcircuits._engine_abc`: the decision graphs (:class:`rfcircuits.graphengine.GraphEngine`,
every field, complete, where the graphs fit) and SAT on the NNF circuits
(:class:`rfcircuits.satengine.SatEngine`, any forest, per-instance limits). It takes
instances as a user holds them (values by feature name or in feature order, placed in their
states by :mod:`rfcircuits.inputs`) and returns immutable
:class:`rfcircuits.explanation.Explanation` records, each naming the engine that answered.

``engine="auto"`` (the default) decides before the first answer, by a capped attempt: the
decision graphs compile within :data:`AUTO_SECONDS` and :data:`AUTO_NODES` (and the node
budget), or the SAT engine answers. When the rows to explain are known
(:meth:`Explainer.compile` with ``rows``, :meth:`Explainer.explain_many`, the command line)
and the SAT engine computes every field asked, it first answers the first of them, and the
graphs get only as long as the SAT engine would take for all of them at that pace (at
least :data:`AUTO_FLOOR`): a forest the SAT engine answers in milliseconds a row is not held
up by seconds of compiling. Should the SAT engine then take longer than ``auto_seconds``
over the rows, the graphs get another attempt once (``auto_seconds``, or half the SAT
engine's projected time for all the rows if longer) and answer the rest if they compile.
Graphs that fit run without the cap; should a later graph (a contrastive explanation's
negated class) outgrow the node budget, the SAT engine takes over from that instance on.
The choice and why are in :attr:`Explainer.choice`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence, Sized
from typing import Literal, get_args

from rfcircuits import circuits
from rfcircuits._engine_abc import Engine, Timings
from rfcircuits.atomicio import atomic_open
from rfcircuits.budget import default_max_nodes
from rfcircuits.classformula import COMPARISONS
from rfcircuits.dgcompile import DGCompilation
from rfcircuits.errors import BudgetExceeded, InputError, check_choice
from rfcircuits.explanation import ALL_WHAT, Explanation, What, what_keys
from rfcircuits.forest import Forest, Instance, check_ties
from rfcircuits.graphengine import (NR_METHODS, ROBUST_METHODS, SR_METHODS, NrMethod, Order,
                                    RobustMethod, SrMethod, Ties, GraphEngine)
from rfcircuits.inputs import Row, Table, instance_of, instances_of
from rfcircuits.satengine import LIMIT_ITEMS, LIMIT_SECONDS, NOT_COMPUTED, SatEngine

__all__ = ["AUTO_FLOOR", "AUTO_NODES", "AUTO_SECONDS", "ENGINES", "Explainer", "NR_METHODS",
           "ROBUST_METHODS", "SR_METHODS", "Timings", "auto_cap", "load_explainer"]

EngineName = Literal["auto", "graphs", "sat"]
ENGINES: tuple[str, ...] = get_args(EngineName)
#: ``engine="auto"`` gives the decision graphs this long and this many nodes (about 2 GB)
#: to compile before it turns to the SAT engine.
AUTO_SECONDS = 10.0
AUTO_NODES = 10_000_000
#: The least time the graphs get when the SAT engine's pace shortens the attempt: small
#: forests compile in milliseconds either way, and always to graphs.
AUTO_FLOOR = 1.0


class Explainer:
    """Formal explanations of a forest's decisions: why it decides as it does on an instance.

    The forest's class formulas are compiled on the first explanation and kept, so later ones
    are fast. Every explanation is exact: its reasons are proved from the formulas, not
    sampled. A field the SAT engine cut short at its limits is listed in the explanation's
    ``incomplete`` (its items are still exact).

    Parameters
    ----------
    forest : Forest
        The forest to explain (:func:`rfcircuits.from_sklearn`, :func:`rfcircuits.load_forest`).
    ties : {"first", "all"}
        How a tie of votes is decided: ``"first"`` gives it to the first class in class
        order (like ``numpy.argmax``), ``"all"`` puts the instance in every class tied.
    engine : {"auto", "graphs", "sat"}
        ``"graphs"``: decision graphs (every field, always complete; large forests may not
        fit). ``"sat"``: SAT calls on the NNF circuits (any forest; enumerations stop at
        ``limit_seconds`` and ``limit_items``; general sufficient and necessary reasons are
        not computed). ``"auto"``: the graphs when they compile within ``auto_seconds`` and
        the node budget (and, rows known, within the SAT engine's time for them), else SAT.
    max_nodes : int, None or "machine"
        Stop the decision graphs at this many nodes: ``"machine"`` (default) as many as 60 %
        of this machine's memory holds, None no limit. Past it, ``engine="graphs"`` raises
        :class:`rfcircuits.BudgetExceeded`; ``"auto"`` turns to the SAT engine.
    auto_seconds : float
        How long ``engine="auto"`` lets the decision graphs compile.
    limit_seconds : float or None
        SAT engine: seconds an instance's enumerations may take in all (None: no limit).
    limit_items : int or None
        SAT engine: items an enumerated field may hold (None: no limit).
    sr_method : {"dual", "expand"}
        Decision graphs: sufficient reasons as the minimal hitting sets of the necessary
        reasons, or by expanding the complete reason (slower on most forests).
    robust_method : {"search", "alg5"}
        Decision graphs: robustness from the shortest necessary reasons, or by the paper's
        Algorithm 5 on the complete reason.
    nr_method : {"auto", "search", "project"}
        Decision graphs: necessary reasons and contrastive explanations by a search of the
        graphs, or read off their projections (compiled up front; at most 10 features),
        ``"auto"`` projecting where that is cheap enough.
    order : {"auto", "depth", "usage", "force", "index"} or sequence of int
        Decision graphs: the features' order, or how to choose it.
    comparison : {"auto", "unary", "diagram", "binary"}
        SAT engine, soft votes: how the circuits compare the sums of weights. ``"auto"``
        takes the first that fits (a sorting network for small integers, a decision diagram
        while it stays small, else a binary adder); the others force one. All are exact: the
        choice changes sizes and times, never an answer (the checks try each).
    compiled : optional
        This forest's decision graphs, compiled already by the caller (the checks do).
    progress : callable, optional
        Called as the class formulas compile: ``progress(done, total, nodes)`` per network
        (a :class:`rfcircuits.progress.Progress` draws it, and shows the engine's stages).

    Invalid options raise :class:`rfcircuits.InputError` naming the valid values.
    """

    def __init__(self, forest: Forest, ties: Ties = "first", *, engine: EngineName = "auto",
                 max_nodes: int | None | Literal["machine"] = "machine",
                 auto_seconds: float = AUTO_SECONDS,
                 limit_seconds: float | None = LIMIT_SECONDS,
                 limit_items: int | None = LIMIT_ITEMS,
                 sr_method: SrMethod = "dual", order: Order | Sequence[int] = "auto",
                 robust_method: RobustMethod = "search", nr_method: NrMethod = "auto",
                 comparison: str = "auto", compiled: DGCompilation | None = None,
                 progress: Callable[[int, int, Sized], None] | None = None) -> None:
        if not isinstance(forest, Forest):
            raise InputError(f"Explainer takes a Forest, not a {type(forest).__name__} (a "
                             "scikit-learn model converts with rfcircuits.from_sklearn)")
        check_ties(ties)
        check_choice("engine", engine, ENGINES)
        if max_nodes == "machine":
            max_nodes = default_max_nodes()
        elif max_nodes is not None and (isinstance(max_nodes, bool)
                                        or not isinstance(max_nodes, int) or max_nodes < 1):
            raise InputError(f"max_nodes must be a positive int, None or 'machine', not "
                             f"{max_nodes!r}")
        if not auto_seconds > 0:
            raise InputError(f"auto_seconds must be positive, not {auto_seconds!r}")
        self.forest = forest
        self.ties = ties
        self.requested = engine
        self.max_nodes = max_nodes
        self.auto_seconds = auto_seconds
        self._progress = progress
        self._graphs: GraphEngine | None = None
        if engine != "sat":
            self._graphs = GraphEngine(forest, ties, sr_method=sr_method, order=order,
                                       robust_method=robust_method, max_nodes=max_nodes,
                                       nr_method=nr_method, compiled=compiled,
                                       progress=progress)
        self._sat = SatEngine(forest, ties, limit_seconds=limit_seconds,
                              limit_items=limit_items, progress=progress,
                              comparison=check_choice("comparison", comparison, COMPARISONS))
        self._given = compiled is not None
        self._engine: Engine | None = None
        self._probe: tuple[Instance, tuple[str, ...], Explanation] | None = None
        # graphs cut short by the SAT engine's pace; the SAT engine's seconds and rows since,
        # and the rows planned
        self._retry: GraphEngine | None = None
        self._sat_seconds = 0.0
        self._sat_rows = self._rows = 0
        #: Which engine answers and why, once chosen (:attr:`engine`).
        self.choice = ""

    @property
    def engine(self) -> Engine:
        """The engine that answers (chosen, and its class formulas compiled, on first use)."""
        if self._engine is None:
            self._engine = self._choose()
        return self._engine

    @property
    def graphs(self) -> GraphEngine:
        """The decision-graph engine (InputError when it does not answer here)."""
        if self.engine is not self._graphs or self._graphs is None:
            raise InputError(f"the decision graphs do not answer here ({self.choice})")
        return self._graphs

    def _choose(self, rows: Sequence[Instance] = (), what: Sequence[str] = ALL_WHAT
                ) -> Engine:
        if self._graphs is None:
            self.choice = "sat: SAT on the NNF circuits, as asked"
            self._stage("compiling NNF circuits")
            self._sat.compile()
            return self._sat
        graphs = self._graphs
        self._stage("compiling decision graphs")
        if self.requested == "graphs" or self._given:
            try:
                graphs.compile()
            except BudgetExceeded as exc:
                raise self._budget_error(exc) from None
            self.choice = "graphs: decision graphs" + (", as asked" if self.requested ==
                                                       "graphs" else ", compiled by the caller")
            return graphs
        seconds, pace = self.auto_seconds, ""
        if rows and not set(what) & set(NOT_COMPUTED):
            # the SAT engine's pace on the first row bounds the graphs' attempt
            self._stage("compiling NNF circuits")
            self._sat.compile()
            start = time.perf_counter()
            e = self._sat.explain_states(rows[0], what)
            self._probe = (tuple(rows[0]), tuple(what), e)
            self._sat_seconds = time.perf_counter() - start
            self._sat_rows, self._rows = 1, len(rows)
            if not e.incomplete:
                sat_seconds = len(rows) * self._sat_seconds
                if sat_seconds < seconds:
                    seconds = max(AUTO_FLOOR, sat_seconds)
                    pace = (f" (the SAT engine's time for {len(rows)} "
                            f"row{'s' if len(rows) > 1 else ''} at its pace on the first)")
            self._stage("compiling decision graphs")
        outcome = self._attempt(graphs, seconds)
        if isinstance(outcome, BaseException):
            why = _why(outcome, seconds, auto_cap(self.max_nodes))
            if pace and _timed_out(outcome):
                self._retry = graphs
                return self._to_sat(why + pace)
            return self._to_sat(why)
        self._probe = None
        self.choice = f"graphs: decision graphs, {outcome}"
        return graphs

    def _attempt(self, graphs: GraphEngine, seconds: float) -> str | BaseException:
        """Compile the decision graphs within ``seconds`` and :func:`auto_cap`'s nodes: what
        they took, in words (their caps lifted), or why they stopped."""
        graphs.max_nodes, graphs.timeout = auto_cap(self.max_nodes), seconds
        start = time.perf_counter()
        try:
            graphs.compile()
        except (BudgetExceeded, MemoryError) as exc:
            return exc
        comp = graphs.compiled.lift_caps(self.max_nodes)
        graphs.max_nodes, graphs.timeout = self.max_nodes, None
        return f"compiled in {time.perf_counter() - start:.1f} s ({comp.total_nodes():,} nodes)"

    def _second_attempt(self) -> None:
        """The SAT engine, chosen for its pace on the first row, has since taken longer
        than ``auto_seconds``: the decision graphs get another attempt (once), of
        ``auto_seconds`` or half the SAT engine's time for all planned rows at its pace so
        far, whichever is longer, and answer the rest if they compile (at worst, the run
        takes 1.5 times the SAT engine's time plus the first attempt's)."""
        graphs, self._retry = self._retry, None
        assert graphs is not None
        seconds = max(self.auto_seconds,
                      self._sat_seconds / self._sat_rows * max(self._rows, self._sat_rows) / 2)
        outcome = self._attempt(graphs, seconds)
        if isinstance(outcome, BaseException):
            why = _why(outcome, seconds, auto_cap(self.max_nodes))
            self.choice += f"; then {why}"
            return
        self._graphs = self._engine = graphs
        self.choice = (f"graphs: decision graphs, {outcome}, once the SAT engine had taken "
                       f"{self._sat_seconds:.1f} s")

    def _to_sat(self, why: str) -> Engine:
        """Turn to the SAT engine, dropping the decision graphs (for good unless the SAT
        engine's pace cut them short: ``_retry``)."""
        self._graphs = None
        self.choice = f"sat: SAT on the NNF circuits ({why})"
        self._stage("compiling NNF circuits")
        self._sat.compile()
        self._engine = self._sat
        return self._sat

    def _stage(self, text: str) -> None:
        stage = getattr(self._progress, "stage", None)
        if stage is not None:
            stage(text)

    def _budget_error(self, exc: BudgetExceeded) -> BudgetExceeded:
        """The node budget's error, saying what to do next in the API's words and the
        command line's."""
        if _timed_out(exc):
            return exc
        return BudgetExceeded(
            f"decision graphs exceed max_nodes={self.max_nodes}: engine='sat' explains any "
            "forest (engine='auto', the default, turns to it by itself), or max_nodes=None "
            "lifts the budget",
            cli=f"decision graphs exceed --max-nodes {self.max_nodes}: --engine sat explains "
                "any forest (--engine auto, the default, turns to it by itself), or "
                "--max-nodes 0 lifts the budget")

    def compile(self, negated: bool = False, rows: Sequence[Instance] = (),
                what: Sequence[str] = ALL_WHAT) -> None:
        """Choose the engine and compile now what :meth:`explain_states` would compile on
        first use (with ``negated``, also what contrastive explanations need), so that a
        benchmark times compiling apart and forked workers share it.

        ``rows`` (state indices, as :meth:`explain_states` takes them) and ``what``: the
        explanations about to be asked; ``engine="auto"`` then times the SAT engine on the
        first row (when it computes every field of ``what``) and gives the decision graphs
        no longer than the SAT engine would take for all of them (that first answer is kept
        for the first call that asks it)."""
        if self._engine is None:
            self._engine = self._choose(rows, what)
        engine = self._engine
        try:
            engine.compile(negated)
        except BudgetExceeded as exc:
            if self.requested != "auto":
                raise self._budget_error(exc) from None
            self._to_sat(_why(exc, None, self.max_nodes))

    def dumps(self) -> bytes:
        """What this explainer has compiled so far, as the bytes of a circuits file (UTF-8
        JSON, ``rfcircuits.circuits/1``: :meth:`save`) that :func:`load_explainer` reads
        back: the engine chosen and its class formulas (compiled first if need be) and, for
        the decision graphs, the negated classes and projections made so far."""
        self.compile()
        doc = circuits.document(self.engine)
        return json.dumps(doc, ensure_ascii=False).encode("utf-8") + b"\n"

    def save(self, path: str | os.PathLike[str]) -> None:
        """Save the compiled class formulas to a circuits file (docs/formats.md#saved-circuits)
        for :func:`load_explainer` to read back instead of compiling. Compiles first what is
        not compiled yet: the engine chosen, its class formulas and, for the decision graphs,
        the negated classes that contrastive explanations search, so that the file holds
        all they compile: the graphs (with their projections) and the feature order they
        were compiled under. The SAT engine's file holds only that choice: its circuits
        compile in well under a second. The file embeds the forest, its digest and the tie
        policy, so that it is never read as another's; it is replaced atomically."""
        self.compile()
        if self.engine is self._graphs:
            self.compile(negated=True)  # (past the node budget, auto turns to SAT here)
        data = self.dumps()
        with atomic_open(path, "wb") as handle:
            handle.write(data)

    def _restore(self, saved: circuits.Saved) -> None:
        """Answer with the engine a circuits file saved, its class formulas read from it
        (:func:`load_explainer`)."""
        if saved.compiled is not None:
            assert self._graphs is not None and saved.negated is not None \
                and saved.projections is not None
            self._graphs.restore(saved.compiled, saved.negated, saved.projections)
            self._engine = self._graphs
            self.choice = f"graphs: decision graphs, loaded from {saved.source}"
            return
        self._stage("compiling NNF circuits")
        self._sat.compile()
        self._engine = self._sat
        self.choice = (f"sat: SAT on the NNF circuits, the engine of {saved.source} (compiled "
                       "on loading)")

    def explain(self, x: Row, what: What = "all") -> Explanation:
        """The explanation of the forest's decision on one instance.

        Parameters
        ----------
        x : mapping, pandas Series, or 1-D array or sequence
            ``{feature name: value}`` or a Series indexed by feature names, each feature
            named once, in any order; or one value per feature in the forest's feature order
            (a NumPy row, a list). A value is a number for a numeric feature, or a state name.
        what : "all", a key, or a sequence of keys
            The fields to compute, among ``"sr"``, ``"nr"``, ``"gsr"``, ``"gnr"``, ``"ce"``,
            ``"robust"`` and ``"flips"`` (the decision and votes always come).

        Raises :class:`rfcircuits.InputError` naming any missing, unknown or repeated
        feature, and any value that is not a number or a state name of its feature (NaN,
        bool, ...): never a decision on a different instance.
        """
        keys = what_keys(what)
        return self.explain_states(instance_of(self.forest, x), keys)

    def explain_many(self, X: Table, what: What = "all") -> list[Explanation]:
        """The explanations of the forest's decisions on every row of a table.

        ``X`` is a pandas DataFrame whose columns are exactly the forest's features in its
        order (as scikit-learn requires of the frames a model predicts), a 2-D array of
        values in feature order, or a sequence of instances as :meth:`explain` takes them.
        Every row is checked before any is explained; an error names the row."""
        keys = what_keys(what)
        xs = instances_of(self.forest, X)
        self.compile(rows=xs, what=keys)
        return [self.explain_states(x, keys) for x in xs]

    def explain_states(self, x: Instance, what: Sequence[str] = ALL_WHAT,
                       timings: Timings | None = None, **graph_options: str) -> Explanation:
        """Every requested explanation field for instance ``x`` given as state indices (one
        per feature, in feature order), as the command line and the checks hold instances.

        ``timings`` accumulates seconds per stage; ``graph_options`` (``sr_method``,
        ``robust_method``, ``nr_method``) override the decision graphs' methods for this
        call."""
        engine = self.engine
        if engine is not self._graphs:
            if self._probe is not None and timings is None and \
                    self._probe[:2] == (tuple(x), tuple(what)):
                e, self._probe = self._probe[2], None
                return e
            start = time.perf_counter()
            e = engine.explain_states(x, what, timings)
            if self._retry is not None:
                self._sat_seconds += time.perf_counter() - start
                self._sat_rows += 1
                if self._sat_seconds > self.auto_seconds:
                    self._second_attempt()
            return e
        try:
            return self._graphs.explain_states(x, what, timings, **graph_options)
        except BudgetExceeded as exc:  # a negated class's graph outgrew the budget
            if self.requested != "auto":
                raise self._budget_error(exc) from None
            return self._to_sat(_why(exc, None, self.max_nodes)).explain_states(x, what,
                                                                                timings)


def load_explainer(source: str | os.PathLike[str] | bytes, forest: Forest | None = None, *,
                   ties: Ties | None = None, engine: EngineName = "auto",
                   max_nodes: int | None | Literal["machine"] = "machine",
                   limit_seconds: float | None = LIMIT_SECONDS,
                   limit_items: int | None = LIMIT_ITEMS, sr_method: SrMethod = "dual",
                   robust_method: RobustMethod = "search", nr_method: NrMethod = "auto",
                   comparison: str = "auto",
                   progress: Callable[[int, int, Sized], None] | None = None) -> Explainer:
    """An :class:`Explainer` of the class formulas :meth:`Explainer.save` saved, read back
    instead of compiled: it answers with the engine saved, byte for byte as the explainer
    that saved them.

    Parameters
    ----------
    source : path or bytes
        A circuits file (:meth:`Explainer.save`), a directory written by ``rfcircuits compile
        --out DIR`` (its ``circuits.json``), or the bytes of :meth:`Explainer.dumps`.
    forest : Forest, optional
        The forest to explain, checked against the one the file embeds (absent: that one).
    ties, engine : optional
        Checked against the file's tie policy and engine (``engine="auto"`` takes the
        file's).
    max_nodes, limit_seconds, limit_items, sr_method, robust_method, nr_method, progress
        As for :class:`Explainer`; ``max_nodes`` bounds the graphs made after loading.
    comparison : optional
        As for :class:`Explainer`: how the SAT engine's circuits compare soft votes (the
        file holds the engine chosen, not those circuits, which are compiled again).

    Circuits of another forest (by the digest of its canonical JSON) or tie policy, a file of
    a later format, and a damaged file raise :class:`rfcircuits.InputError` naming the file,
    what differs (both digests or policies) and what to do.
    """
    check_choice("engine", engine, ENGINES)
    if ties is not None:
        check_ties(ties)
    saved = circuits.read(source, forest, ties, engine)
    explainer = Explainer(saved.forest, saved.ties, engine=saved.engine,  # type: ignore[arg-type]
                          max_nodes=max_nodes, limit_seconds=limit_seconds,
                          limit_items=limit_items, sr_method=sr_method,
                          robust_method=robust_method, nr_method=nr_method,
                          comparison=comparison, progress=progress)
    explainer._restore(saved)
    return explainer


def auto_cap(max_nodes: int | None) -> int:
    """The node budget of ``auto``'s attempt under the budget ``max_nodes``."""
    return AUTO_NODES if max_nodes is None else min(max_nodes, AUTO_NODES)


def _timed_out(exc: BaseException) -> bool:
    """Whether the decision graphs stopped at their time limit (not nodes, not memory)."""
    return isinstance(exc, BudgetExceeded) and "timeout" in str(exc)


def _why(exc: BaseException, seconds: float | None, nodes: int | None) -> str:
    """Why the decision graphs were left, in words."""
    if isinstance(exc, MemoryError):
        return "the decision graphs ran out of memory"
    if _timed_out(exc):
        return f"the decision graphs did not compile within {seconds:g} s"
    return f"the decision graphs exceed {nodes:,} nodes"
