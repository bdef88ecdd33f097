"""The decision-graph engine: every field of an explanation (docs/semantics.md) for an
instance, from tractable class formulas (one of the two engines behind
:class:`rfcircuits.explain.Explainer`; the other is :mod:`rfcircuits.satengine`).

:class:`GraphEngine` compiles the forest's class formulas once, lazily, on first use: Alg. 3B
(each ``R^c`` as a conjunction of ordered decision graphs) for the decision's complete and
general reasons, and for contrastive explanations Alg. 3A (the conjunction folded into one
graph with Apply, then negated). Its methods are stateless between calls: :meth:`GraphEngine.explain_states`
takes an instance as state indices; each explanation is an immutable
:class:`rfcircuits.explanation.Explanation`:

- CR and GR by the closed forms (:mod:`rfcircuits.reasons`), as NNF in a per-call manager;
- NRs: prime implicates of CR, read off the graph as its minimal deviation sets, without
  building CR: by the search :meth:`rfcircuits.dgraph.DG.min_deviations` (``nr_method="search"``)
  or, with few features, from the existential projections compiled with the class formulas
  (:mod:`rfcircuits.projections`; ``"project"``; ``"auto"``, the default, projects a graph when
  that is cheap enough, see ``PROJECTION_WORK``, else searches); SRs: prime implicants of CR,
  as the minimal hitting sets of the NRs (``sr_method="dual"``, the default: on the forests
  of ``bench explain`` it is the faster method) or by bottom-up expansion of CR
  (``"expand"``) (:mod:`rfcircuits.primes`);
- GSRs / GNRs: variable-minimal prime implicants / implicates of GR (:mod:`rfcircuits.general`),
  on the GSRs' full GR, otherwise on the part of GR whose clauses fit an NR's features;
- robustness and its feature sets ``V``: the shortest NRs (``robust_method="search"``, the
  default: no CR needed) or Alg. 5 on CR (``"alg5"``); the shortest GNRs: Alg. 6–7 on the
  part of GR whose clauses fit a set of ``V`` (:mod:`rfcircuits.robustness`);
- CEs for each class ``t`` the instance is not in: prime implicates of the CR of ``¬R^t``,
  again as minimal deviation sets, of the graph of ``¬R^t`` (searched or projected as NRs).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence, Sized
from typing import Literal, get_args

from rfcircuits.apply import Apply
from rfcircuits.dgcompile import DGCompilation, compile_dg
from rfcircuits.dgraph import TRUE as DG_TRUE
from rfcircuits.errors import InputError, check_choice
from rfcircuits._engine_abc import Timings
from rfcircuits.explanation import ALL_WHAT, Explanation
from rfcircuits.featureorder import ORDERS
from rfcircuits.forest import Forest, Instance, check_ties
from rfcircuits.general import gnrs, gsrs
from rfcircuits.nnf import NNF
from rfcircuits.primes import hitting_sets, implicants
from rfcircuits.projections import MAX_FEATURES, Projections, TooLarge
from rfcircuits.reasons import complete_reason, general_reason
from rfcircuits.robustness import robustness, shortest_gnrs, shortest_sets
from rfcircuits.terms import simple_terms

#: The options' values (the tuples below list them for messages and loops).
Ties = Literal["first", "all"]
SrMethod = Literal["expand", "dual"]
RobustMethod = Literal["alg5", "search"]
NrMethod = Literal["auto", "search", "project"]
Order = Literal["auto", "depth", "usage", "force", "index"]
SR_METHODS: tuple[str, ...] = get_args(SrMethod)
ROBUST_METHODS: tuple[str, ...] = get_args(RobustMethod)
NR_METHODS: tuple[str, ...] = get_args(NrMethod)
#: ``nr_method="auto"`` projects a graph only when its nodes times the ``2^n`` feature sets
#: stay within ``PROJECTION_WORK`` (building the projections walks a graph per set;
#: measured: docs/decisions.md, "With few features, NRs and CEs come from existential
#: projections"), and gives up when the projections add more than ``PROJECTION_FACTOR`` times
#: its nodes plus ``PROJECTION_SLACK`` to the manager; the search serves such graphs.
PROJECTION_WORK = 6 * 10 ** 8
PROJECTION_FACTOR = 16
PROJECTION_SLACK = 65536


class GraphEngine:
    """Explanations of a forest's decisions from its class formulas as decision graphs.

    The class formulas are compiled on the first explanation and kept; every field is
    complete. Parameters as :class:`rfcircuits.explain.Explainer` describes them
    (``sr_method``, ``robust_method``, ``nr_method``, ``order``, ``max_nodes``,
    ``compiled``, ``progress``), plus ``timeout``: seconds the class formulas may take to
    compile (None: no limit). Past a budget, :class:`rfcircuits.BudgetExceeded`.
    """

    name = "graphs"

    def __init__(self, forest: Forest, ties: Ties = "first", *, sr_method: SrMethod = "dual",
                 order: Order | Sequence[int] = "auto", robust_method: RobustMethod = "search",
                 max_nodes: int | None = None, nr_method: NrMethod = "auto",
                 compiled: DGCompilation | None = None,
                 progress: Callable[[int, int, Sized], None] | None = None,
                 timeout: float | None = None) -> None:
        check_ties(ties)
        check_choice("sr_method", sr_method, SR_METHODS)
        check_choice("robust_method", robust_method, ROBUST_METHODS)
        check_choice("nr_method", nr_method, NR_METHODS)
        if isinstance(order, str):
            check_choice("order", order, ORDERS)
        if nr_method == "project" and len(forest.features) > MAX_FEATURES:
            raise InputError(f"nr_method 'project' needs at most {MAX_FEATURES} features")
        self.forest = forest
        self.ties = ties
        self.sr_method = sr_method
        self.robust_method = robust_method
        self.nr_method = nr_method
        self.order = order
        self.max_nodes = max_nodes
        self.timeout = timeout
        #: Alg. 3B's class formulas of this forest and tie policy from ordered Apply, when
        #: the caller has compiled them already (the crosscheck harness checks them first).
        self._given = compiled
        self._progress = progress
        self._compiled: DGCompilation | None = None
        self._apply: Apply | None = None
        self._negated: dict[int, int] = {}
        self._projections: dict[tuple[int, ...], Projections | None] = {}

    @property
    def compiled(self) -> DGCompilation:
        """Alg. 3B class formulas (compiled on first use, each class's NR search prepared or
        its projections compiled)."""
        if self._compiled is None:
            comp = self._given or compile_dg(self.forest, self.ties, "dg-conj", order=self.order,
                                             max_nodes=self.max_nodes, timeout=self.timeout,
                                             progress=self._progress)
            self._compiled = comp
            self._apply = Apply(comp.dg)
            for roots in comp.roots:
                self._prepare(roots)
        return self._compiled

    def _prepare(self, roots: Sequence[int]) -> None:
        """Ready the minimal deviation sets of ``∧ roots``: the search's layout, and the
        projections unless ``nr_method`` is ``"search"``."""
        if self.nr_method == "search" or self._projection(roots, self.nr_method) is None:
            self.compiled.dg.prepare_search(roots)

    def _projection(self, roots: Sequence[int], method: str) -> Projections | None:
        """The projections of ``∧ roots`` (compiled on first use, cached); ``None`` when
        ``method`` is ``"auto"`` and they are too large (then the search serves)."""
        key = tuple(roots)
        if key not in self._projections or (method == "project"
                                            and self._projections[key] is None):
            dg = self.compiled.dg
            cap = None
            if method == "auto":
                # the feature count first: it spares wide forests a walk of their graphs
                size = dg.size(roots) if len(dg.features) <= MAX_FEATURES else None
                if size is None or size << len(dg.features) > PROJECTION_WORK:
                    self._projections[key] = None
                    return None
                cap = PROJECTION_FACTOR * size + PROJECTION_SLACK
                if dg.max_nodes is not None:  # leave the budget's other half to the graphs
                    cap = min(cap, (dg.max_nodes - len(dg)) // 2)
            try:
                self._projections[key] = Projections(dg, roots, cap)
            except TooLarge as exc:
                if method != "auto":
                    raise ValueError(f"nr_method 'project': {exc}") from exc
                self._projections[key] = None
        return self._projections[key]

    def prepared(self) -> tuple[dict[int, int], dict[tuple[int, ...], Projections | None]]:
        """The negated class graphs (by class) and the projections (by the roots they
        project; None where they were too large) made so far: with :attr:`compiled`, all
        that this engine compiles (what :mod:`rfcircuits.circuits` saves)."""
        return dict(self._negated), dict(self._projections)

    def restore(self, compiled: DGCompilation, negated: dict[int, int],
                projections: dict[tuple[int, ...], Sequence[int] | None]) -> None:
        """Answer from what another engine of this forest and tie policy had made, read back
        by :mod:`rfcircuits.circuits`: the class formulas ``compiled``, the negated class
        graphs and the projections' rows (None: too large to project), all graphs of
        ``compiled``'s manager, which serves on under this engine's node budget. Nothing of
        it is compiled again; the search is readied where there is no projection."""
        self._given = compiled.lift_caps(self.max_nodes)
        self._compiled = None
        self._negated = dict(negated)
        self._projections = {key: None if row is None else Projections.restored(compiled.dg, row)
                             for key, row in projections.items()}
        self.compile()  # readies the class formulas' search where they have no projections
        for root in self._negated.values():
            self._prepare([root])

    def projected(self) -> tuple[int, int]:
        """How many of the graphs (class conjunctions, negated classes) prepared so far have
        projections, out of how many."""
        return sum(p is not None for p in self._projections.values()), len(self._projections)

    def _min_deviations(self, roots: Sequence[int], x: Instance, method: str) -> list[int]:
        """NRs (CEs on a negated class graph) by ``method`` (see :data:`NR_METHODS`)."""
        if method != "search":
            projections = self._projection(roots, method)
            if projections is not None:
                return projections.min_deviations(x)
        return self.compiled.dg.min_deviations(roots, x)

    def compile(self, negated: bool = False) -> None:
        """Compile now what :meth:`explain_states` would compile on first use: the class formulas
        and, with ``negated``, every ``¬R^t`` graph that CEs search (so a benchmark times
        compiling apart, and forked workers share the graphs)."""
        self.compiled  # the property compiles on first use
        if negated:
            for t in range(len(self.forest.classes)):
                self.negated_class(t)

    def negated_class(self, t: int) -> int:
        """``¬R^t`` as one decision graph: Alg. 3A's conjunction, negated (cached)."""
        if t not in self._negated:
            comp = self.compiled
            assert self._apply is not None
            root = DG_TRUE
            for g in comp.roots[t]:
                root = self._apply.conj(root, g)
            self._negated[t] = comp.dg.negate(root)
            self._prepare([self._negated[t]])
        return self._negated[t]

    def explain_states(self, x: Instance, what: Sequence[str] = ALL_WHAT,
                       timings: Timings | None = None, sr_method: str | None = None,
                       robust_method: str | None = None,
                       nr_method: str | None = None) -> Explanation:
        """Every requested explanation field for instance ``x`` given as state indices (one
        per feature, in feature order), as the command line and the checks hold instances.

        ``timings`` accumulates seconds per stage; ``sr_method``, ``robust_method`` and
        ``nr_method`` override the explainer's."""
        nr_method = check_choice("nr_method", nr_method or self.nr_method, NR_METHODS)
        check_choice("sr_method", sr_method or self.sr_method, SR_METHODS)
        check_choice("robust_method", robust_method or self.robust_method, ROBUST_METHODS)
        forest = self.forest
        what = tuple(k for k in ALL_WHAT if k in what)
        votes = forest.votes(x)
        decision = forest.decision(x)
        member = tuple(forest.classes_of(x, self.ties))
        fields: dict[str, object] = {}
        clock = _Clock(timings)
        if what:
            comp = self.compiled
            clock.lap("compile")
            dg = comp.dg
            full = dg.full
            nnf = NNF(forest.features)
            roots = comp.roots[decision]
            wanted = set(what)
            srs = bool({"sr", "gsr"} & wanted)
            expand = srs and (sr_method or self.sr_method) == "expand"
            robust = bool({"robust", "flips"} & wanted)
            alg5 = robust and (robust_method or self.robust_method) == "alg5"
            # NRs (and the dual SRs, and robustness) come from the graph itself; CR is built
            # only for the stages that walk it.
            needs_nr = bool({"nr", "gnr"} & wanted) or (srs and not expand) or (robust and not alg5)
            nr_sets = self._min_deviations(roots, x, nr_method) if needs_nr else []
            if "nr" in what:
                fields["necessary_reasons"] = simple_terms(x, nr_sets)
            clock.lap("nr")
            cr = complete_reason(dg, roots, x, nnf) if expand or alg5 else None
            clock.lap("reasons")
            if srs:
                if expand:
                    assert cr is not None
                    sr_sets = implicants(nnf, cr)
                else:
                    sr_sets = hitting_sets(nr_sets)
                if "sr" in what:
                    fields["sufficient_reasons"] = simple_terms(x, sr_sets)
                clock.lap("sr")
            shortest: list[int] = []
            if robust:
                if alg5:
                    assert cr is not None
                    r, shortest = robustness(nnf, cr)
                else:
                    r, shortest = shortest_sets(nr_sets)
                fields["robustness"] = r
                clock.lap("robust")
            # The GSRs check boxes on the graph itself; the GNRs and flips need only the
            # clauses of GR on the features of an NR or of a shortest one.
            if {"gnr", "flips"} & wanted:
                gr = general_reason(dg, roots, x, nnf, nr_sets if "gnr" in wanted else shortest)
                clock.lap("reasons")
            if "gsr" in what:
                assert all(dg.ordered[r] for r in roots)
                fields["general_sufficient_reasons"] = Explanation.sets(gsrs(dg, roots, x, sr_sets))
                clock.lap("gsr")
            if "gnr" in what:
                fields["general_necessary_reasons"] = Explanation.sets(gnrs(nnf, gr, nr_sets, full))
                clock.lap("gnr")
            if "flips" in what:
                fields["shortest_flips"] = Explanation.sets(shortest_gnrs(nnf, gr, shortest, full))
                clock.lap("flips")
            if "ce" in what:
                ces = []
                for t in range(len(forest.classes)):
                    if t in member:
                        continue
                    negated = self.negated_class(t)
                    clock.lap("compile")
                    ces.append((t, simple_terms(
                        x, self._min_deviations([negated], x, nr_method))))
                    clock.lap("ce")
                    if timings is not None:
                        timings.ce_targets += 1
                fields["contrastive"] = tuple(ces)
        return Explanation(forest, tuple(x), self.ties, tuple(votes), decision, member, what,
                           engine=self.name, **fields)  # type: ignore[arg-type]


class _Clock:
    """Adds the time since the previous lap to a :class:`Timings` field."""

    def __init__(self, timings: Timings | None) -> None:
        self.timings = timings
        self.last = time.perf_counter()

    def lap(self, name: str) -> None:
        if self.timings is not None:
            now = time.perf_counter()
            setattr(self.timings, name, getattr(self.timings, name) + now - self.last)
            self.last = now
