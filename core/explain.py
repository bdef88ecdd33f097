"""The explainer: every field of an explanation (docs/semantics.md) for an instance, from
tractable class formulas.

:class:`Explainer` compiles the forest's class formulas once, lazily, on first use: Alg. 3B
(each ``R^c`` as a conjunction of ordered decision graphs) for the decision's complete and
general reasons, and for contrastive explanations Alg. 3A (the conjunction folded into one
graph with Apply, then negated). Its methods are stateless between calls: :meth:`Explainer.explain`
takes an instance as a user holds it (values by feature name or in feature order, placed in
their states by :mod:`rfcircuits.inputs`), :meth:`Explainer.explain_many` a table of them and
:meth:`Explainer.explain_states` state indices; each explanation is an immutable
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
from dataclasses import dataclass
from typing import Literal, get_args

from rfcircuits.apply import Apply
from rfcircuits.dgcompile import DGCompilation, compile_dg
from rfcircuits.dgraph import TRUE as DG_TRUE
from rfcircuits.errors import InputError, check_choice
from rfcircuits.explanation import ALL_WHAT, Explanation, What, what_keys
from rfcircuits.featureorder import ORDERS
from rfcircuits.forest import Forest, Instance, check_ties
from rfcircuits.inputs import Row, Table, instance_of, instances_of
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
#: measured: docs/decisions.md, "Explanations"), and gives up when the projections add more
#: than ``PROJECTION_FACTOR`` times its nodes plus ``PROJECTION_SLACK`` to the manager; the
#: search serves such graphs.
PROJECTION_WORK = 6 * 10 ** 8
PROJECTION_FACTOR = 16
PROJECTION_SLACK = 65536


@dataclass
class Timings:
    """Seconds spent per stage of the :meth:`Explainer.explain_states` calls given them."""

    reasons: float = 0.0
    sr: float = 0.0
    nr: float = 0.0
    gsr: float = 0.0
    gnr: float = 0.0
    robust: float = 0.0
    flips: float = 0.0
    compile: float = 0.0
    ce: float = 0.0
    ce_targets: int = 0


class Explainer:
    """Formal explanations of a forest's decisions: why it decides as it does on an instance.

    The forest's class formulas are compiled on the first explanation and kept, so later ones
    are fast. Every explanation is exact: its reasons are proved from the formulas, not
    sampled.

    Parameters
    ----------
    forest : Forest
        The forest to explain (:func:`rfcircuits.from_sklearn`, :func:`rfcircuits.load_forest`).
    ties : {"first", "all"}
        How a tie of votes is decided: ``"first"`` gives it to the first class in class
        order (like ``numpy.argmax``), ``"all"`` puts the instance in every class tied.
    sr_method : {"dual", "expand"}
        How sufficient reasons are found: as the minimal hitting sets of the necessary
        reasons, or by expanding the complete reason (slower on most forests).
    robust_method : {"search", "alg5"}
        How robustness is found: from the shortest necessary reasons, or by the paper's
        Algorithm 5 on the complete reason.
    nr_method : {"auto", "search", "project"}
        How necessary reasons and contrastive explanations are found: by a search of the
        decision graphs, or read off their projections (compiled up front; at most 10
        features), ``"auto"`` projecting where that is cheap enough.
    order : {"auto", "depth", "usage", "force", "index"} or sequence of int
        The features' order in the decision graphs, or how to choose it.
    max_nodes : int or None
        Stop with :class:`rfcircuits.BudgetExceeded` when the decision graphs would exceed
        this many nodes (None: no limit).
    compiled : optional
        This forest's class formulas, compiled already by the caller (the checks do).
    progress : callable, optional
        Called as the class formulas compile: ``progress(done, total, dg)`` before and after
        each pair network (``len(dg)``: the nodes so far), as by
        :func:`rfcircuits.dgcompile.compile_dg`; a :class:`rfcircuits.progress.Progress` draws it.

    Invalid options raise :class:`rfcircuits.InputError` naming the valid values.
    """

    def __init__(self, forest: Forest, ties: Ties = "first", *, sr_method: SrMethod = "dual",
                 order: Order | Sequence[int] = "auto", robust_method: RobustMethod = "search",
                 max_nodes: int | None = None, nr_method: NrMethod = "auto",
                 compiled: DGCompilation | None = None,
                 progress: Callable[[int, int, Sized], None] | None = None) -> None:
        if not isinstance(forest, Forest):
            raise InputError(f"Explainer takes a Forest, not a {type(forest).__name__} (a "
                             "scikit-learn model converts with rfcircuits.from_sklearn)")
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
                                             max_nodes=self.max_nodes, progress=self._progress)
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
        return [self.explain_states(x, keys) for x in instances_of(self.forest, X)]

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
                           **fields)  # type: ignore[arg-type]


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
