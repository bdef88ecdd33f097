"""OBDD oracle: class formulas, reasons and explanations of a forest by BDD operations.

An independent oracle for the answers docs/semantics.md defines. It shares only the data model
with the native engine (``rfcircuits.forest``, ``rfcircuits.terms``, ``rfcircuits.explanation``,
``rfcircuits.errors``): no sorting network, no decision-graph Apply, no closed form on decision
graphs and no prime-implicant code of the engine is used.

Encoding. One Boolean BDD variable ``x{f}_{s}`` per feature ``f`` and state ``s``;
the *domain constraint* D says that every feature has exactly one true variable. The order is
static (dynamic reordering off: sifting was slower here): each feature's variables are
adjacent in state order, and the features are ordered by how close to the tree roots they
are tested (:func:`_feature_order`). Formulas are only meaningful on worlds satisfying D,
and every query (model count, implication, equivalence, counterexample) is asked under D.
Conditioning on ``X = t`` (``Δ|t``) sets ``x{X}_t`` true and the feature's other variables
false. ``dd.cudd`` is used when it imports, else the pure-Python ``dd.autoref``
(``backend=`` picks one explicitly).

Class formulas. A tree's class formulas come from its root-to-leaf paths, memoised
per node (trees are DAGs) in one iterative bottom-up pass. The forest's formulas count votes
by dynamic programming over the trees, one pair of classes ``(i, j)`` at a time: a map
``d → [v_i − v_j = d over the trees seen so far]`` (conjoined with D, which keeps the BDDs
much smaller) is updated tree by tree, then ``[v_i >= v_j]`` is the disjunction over
``d >= 0`` and ``[v_i > v_j]`` over ``d >= 1``. ``first``: ``R^i = ∧_{j<i}[v_i > v_j] ∧
∧_{j>i}[v_i >= v_j]``; ``all``: ``R^i = ∧_{j≠i}[v_i >= v_j]``; a one-class forest has
``R^0 = true``.

Soft votes (``forest.voting == "soft"``): the same formulas with ``v_i`` the exact sums
``S_i`` (docs/semantics.md §3), in the integers of ``Forest.int_init`` and
``Forest.int_weights`` (the float64 weights times one power of two), so that nothing is
rounded and a sum that float64 would tie is decided by its last bits. The same bottom-up pass
groups each tree's leaves by their weight vector. Per pair ``(i, j)``, tree ``t`` adds
``d_t = w_i − w_j`` of the leaf it reaches: its groups are joined by value into a partition
of D, a tree with a single value adds a constant (into the threshold), and ``[S_i >= S_j] =
[Σ_t d_t >= init_j − init_i]``, ``[S_i > S_j]`` the same with the threshold plus one, are
built by a pseudo-Boolean recursion over the trees on the remaining threshold,
``F(t, θ) = ∨_v [d_t = v] ∧ F(t+1, θ − v)``, pruned by the least and greatest sums of the
remaining trees and memoised by intervals of thresholds on which ``F(t, ·)`` is one BDD
(:class:`_AtLeast`; trees by decreasing spread of values, :func:`_pair_levels`). The reverse
comparisons are their complements on D. No code of the engine's compilers is used.

Reasons. CR and GR by the per-feature quantifier form applied to every feature,
``∀^C_X Δ = Δ|s ∧ ([X=s] ∨ ∧_t Δ|t)`` and ``∀^G_X Δ = Δ|s ∧ ∧_{t≠s}([X≠t] ∨ Δ|t)``;
the latter's conjunction is built in its equivalent form ``Δ ∨ [X=s]`` (equal on D).

Primes. Prime implicants of a multi-valued function φ are computed feature by feature (in level
order; the recursion depth is the number of features). For the first remaining feature X with
cofactors ``φ|t``, a term ``L ∧ τ`` (L a non-empty state set; ``L`` full means X is not mentioned)
implies φ iff τ implies ``φ_L = ∧_{t∈L} φ|t``, and it is prime iff τ is a prime implicant of ``φ_L``
and τ implies no ``φ|u`` with ``u ∉ L`` (a term is prime iff no one-state widening is an implicant).
So L must be closed (``φ_L ⊨ φ|u`` puts u in L), and the closed sets are enumerated with Ganter's
NextClosure instead of all ``2^n`` subsets. Implication of a term is a BDD query under D. Prime
implicates of φ are the complements, literal by literal, of the prime implicants of ¬φ.
Variable-minimal primes (GSRs, GNRs) are not filtered from all primes (GR can have thousands): their
feature sets are the minimal sets V such that some term on V implies φ, found by a second
feature-by-feature recursion, and for each such V they are the primes of ``∀_{X∉V} φ``. The routines
are general: they do not use the lemma that every literal of a prime of GR contains the instance's
state (``rfcircuits.crosscheck.oracles.brute`` does), so agreement with the brute force also checks
that lemma. From these: SRs/NRs = prime implicants/implicates of CR, GSRs/GNRs = the
variable-minimal prime implicants/implicates of GR, CEs for target t = prime implicates of the CR of
``¬R^t`` at x, robustness = size of the shortest NRs, shortest flips = the shortest GNRs.

Circuit files (docs/formats.md). :meth:`BddOracle.check_circuit` reads an ``rfcircuits.nnf/1`` or
``rfcircuits.dg/1`` document into a BDD and decides equivalence with the oracle's own class
formula under D; a difference comes back as a counterexample world.

Size limits (:meth:`BddOracle.too_big`). Vote BDDs blow up quickly with the number of trees
and state variables, and prime enumeration is exponential in the number of features
(measured: docs/decisions.md, "The BDD oracle keeps a static order and size limits"). The
oracle therefore accepts at most :data:`MAX_FEATURES` features, :data:`MAX_VARIABLES` state
variables, :data:`MAX_TREES` trees, and ``trees × state variables × class pairs`` up to
:data:`MAX_WORK` (one vote DP per pair of classes). The bounds are conservative; the
property-test forests (≤ 6 features, ≤ 5 states, ≤ 10 trees, ≤ 3 classes, work ≤ 900) take
well under a second. Soft votes must also keep state variables × the threshold nodes the
recursion should build (:func:`_weighted_nodes`, which grows with the number of distinct
sums of the trees' weight differences) up to :data:`MAX_SOFT_WORK`. On scikit-learn forests
that admits random forests built in up to 5 s (one, of ten depth-4 trees on 98 state
variables, in 20 s) and turns away those taking 28 s or more; it is conservative on boosted
forests, whose trees split alike (their sums take far fewer values on the worlds than the
estimate counts: some turned away build in 1–2 s).
"""

from __future__ import annotations

import bisect
import itertools
import math
import os
import sys
from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rfcircuits.errors import InputError
from rfcircuits.explanation import ALL_WHAT, Explanation
from rfcircuits.forest import (TIES, Branching, Forest, Instance, JsonReader, Leaf, Tree,
                               check_ties, load_json_file, parse_states)
from rfcircuits.terms import Clause, Term

NNF_FORMAT = "rfcircuits.nnf/1"
DG_FORMAT = "rfcircuits.dg/1"
BACKENDS = ("auto", "cudd", "autoref")

#: Size limits of :meth:`BddOracle.too_big` (see the module docstring).
MAX_FEATURES = 8
MAX_VARIABLES = 100
MAX_TREES = 16
MAX_WORK = 2000
#: Soft votes: the limit on :func:`_weighted_nodes` × state variables.
MAX_SOFT_WORK = 2 * 10 ** 7
#: Soft votes: :func:`_distinct_sums` counts sums exactly up to this many per level.
SUMS_COUNTED = 10 ** 5

#: A BDD node handle of the chosen backend (``dd.cudd.Function`` or ``dd.autoref.Function``).
Bdd = Any
#: The values of one tree's weight differences (as a set, or as the keys of a map to BDDs).
_Values = TypeVar("_Values", bound=Collection[int])


#: dd.cudd managers of finalised oracles, kept until no ``Function`` refers to them.
_RETIRED: list[Any] = []


def _sweep_retired() -> None:
    """Free the retired cudd managers that nothing but :data:`_RETIRED` refers to.

    When the garbage collector frees an oracle that sits in a reference cycle, it may clear
    a ``dd.cudd.Function``'s reference to its manager before the function itself is freed;
    if that drops the manager to zero references, CUDD finds nodes still referenced, prints
    "Exception ignored … Still N nodes referenced upon shutdown" and leaks the manager.
    :meth:`BddOracle.__del__` therefore parks its manager here, and it is freed by a later
    sweep (outside the collector), once every function has gone. A manager is free to go
    when ``sys.getrefcount`` counts only the list's and the call's own reference.
    """
    for i in reversed(range(len(_RETIRED))):
        if sys.getrefcount(_RETIRED[i]) == 2:
            del _RETIRED[i]


def _manager(backend: str) -> tuple[str, Any]:
    """A fresh BDD manager of the requested backend, with dynamic reordering off."""
    _sweep_retired()
    if backend not in BACKENDS:
        raise InputError(f"unknown BDD backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    if backend in ("auto", "cudd"):
        try:
            import dd.cudd as cudd
        except ImportError:
            if backend == "cudd":
                raise InputError("BDD backend 'cudd' requested but dd.cudd does not "
                                 "import") from None
        else:
            bdd = cudd.BDD(initial_cache_size=1 << 12)  # the cache grows on demand
            bdd.configure(reordering=False)
            return "cudd", bdd
    import dd.autoref as autoref

    bdd = autoref.BDD()
    bdd.configure(reordering=False)
    return "autoref", bdd


@dataclass(frozen=True)
class CircuitCheck:
    """Verdict of :meth:`BddOracle.check_circuit` on one circuit document.

    ``counterexample`` (``{feature name: state name}``) is a world on which the circuit and the
    oracle's class formula differ; ``satisfied_by`` says which side that world satisfies
    (``"circuit"`` or ``"forest"``). Both are None when the two are equivalent.
    """

    source: str
    format: str
    class_name: str
    ties: str
    equivalent: bool
    counterexample: dict[str, str] | None = None
    satisfied_by: str | None = None

    def describe(self) -> str:
        """One line for reports."""
        head = f"{self.source or '<circuit>'} ({self.format}, class {self.class_name!r}, " \
               f"ties {self.ties})"
        if self.equivalent:
            return f"{head}: equivalent to the forest's class formula"
        other = "forest" if self.satisfied_by == "circuit" else "circuit"
        return (f"{head}: NOT equivalent; the world {self.counterexample} satisfies the "
                f"{self.satisfied_by} but not the {other}")


class BddOracle:
    """Class formulas of a forest as BDDs, and every explanation field computed from them."""

    def __init__(self, forest: Forest, ties: str = "first", backend: str = "auto") -> None:
        self.forest = forest
        self.ties = check_ties(ties)
        self.backend, self.bdd = _manager(backend)
        features = forest.features
        self._names = [[f"x{f}_{s}" for s in range(feature.n_states)]
                       for f, feature in enumerate(features)]
        self.order = _feature_order(forest)
        self.bdd.declare(*(name for f in self.order for name in self._names[f]))
        self._vars = [[self.bdd.var(name) for name in names] for names in self._names]
        self._n_vars = sum(len(names) for names in self._names)
        self._care = {name for names in self._names for name in names}
        self.domain = self.bdd.true
        for f in range(len(features)):
            self.domain &= self._exactly_one(f)
        self._literals: dict[tuple[int, int], Bdd] = {}
        if forest.voting == "hard":
            self._ge, self._gt = self._comparisons(
                [self._tree_formulas(tree) for tree in forest.trees])
        else:
            self._ge, self._gt = self._weighted_comparisons()
        self._classes: dict[str, list[Bdd]] = {}

    def __del__(self, _retired: list[Any] = _RETIRED) -> None:
        """Park a cudd manager until its functions are gone (see :func:`_sweep_retired`)."""
        if getattr(self, "backend", None) == "cudd":  # bound default: safe at shutdown
            _retired.append(self.bdd)

    # -- encoding --------------------------------------------------------------------------

    @staticmethod
    def too_big(forest: Forest) -> str | None:
        """Why this forest is beyond the oracle's limits (module docstring), or None."""
        n_vars = sum(f.n_states for f in forest.features)
        n_trees = len(forest.trees)
        n_pairs = max(1, len(forest.classes) * (len(forest.classes) - 1) // 2)
        work = n_trees * n_vars * n_pairs
        checks = [
            (len(forest.features) > MAX_FEATURES,
             f"{len(forest.features)} features exceed the BDD oracle's limit of {MAX_FEATURES}"),
            (n_vars > MAX_VARIABLES,
             f"{n_vars} state variables exceed the BDD oracle's limit of {MAX_VARIABLES}"),
            (n_trees > MAX_TREES,
             f"{n_trees} trees exceed the BDD oracle's limit of {MAX_TREES}"),
            (work > MAX_WORK,
             f"{n_trees} trees × {n_vars} state variables × {n_pairs} class pairs = {work} "
             f"exceed the BDD oracle's limit of {MAX_WORK}"),
        ]
        for failed, reason in checks:
            if failed:
                return reason
        if forest.voting == "soft":  # estimated last: within the bounds above it is quick
            nodes = _weighted_nodes(forest)
            if nodes * n_vars > MAX_SOFT_WORK:
                return (f"soft votes: about {nodes} threshold nodes × {n_vars} state variables "
                        f"= {nodes * n_vars} exceed the BDD oracle's limit of {MAX_SOFT_WORK}")
        return None

    def _exactly_one(self, f: int) -> Bdd:
        """Exactly one of feature ``f``'s variables is true."""
        none_yet, one_so_far = self.bdd.true, self.bdd.false
        for v in self._vars[f]:
            one_so_far = (one_so_far & ~v) | (none_yet & v)
            none_yet &= ~v
        return one_so_far

    def literal(self, f: int, mask: int) -> Bdd:
        """``[X_f ∈ mask]`` (meaningful under the domain constraint)."""
        key = (f, mask)
        if key not in self._literals:
            out = self.bdd.false
            for s, v in enumerate(self._vars[f]):
                if mask >> s & 1:
                    out |= v
            self._literals[key] = out
        return self._literals[key]

    def _condition(self, f: int, t: int) -> dict[str, bool]:
        """The assignment ``X_f = t`` in the one-hot encoding."""
        return {name: s == t for s, name in enumerate(self._names[f])}

    def _cofactors(self, f: int, u: Bdd) -> list[Bdd]:
        """``u|t`` for every state ``t`` of feature ``f``."""
        return [self.bdd.let(self._condition(f, t), u) for t in range(len(self._names[f]))]

    def _world(self, x: Sequence[int]) -> dict[str, bool]:
        """A full assignment of the state variables for instance ``x``."""
        self._check_instance(x)
        out: dict[str, bool] = {}
        for f, s in enumerate(x):
            out.update(self._condition(f, s))
        return out

    def _check_instance(self, x: Sequence[int]) -> None:
        features = self.forest.features
        if len(x) != len(features) or any(
                isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < f.n_states
                for f, s in zip(features, x)):
            raise InputError(f"instance {tuple(x)!r}: expected one state index per feature "
                             f"({len(features)} features)")

    # -- class formulas --------------------------------------------------------------------

    def _tree_formulas(self, tree: Tree) -> list[Bdd]:
        """``C^c`` of one tree for every class ``c``, from its root-to-leaf paths."""
        groups = self._leaf_groups(tree, lambda k, leaf: leaf.label)
        return [groups.get(c, self.bdd.false) for c in range(len(self.forest.classes))]

    def _leaf_groups(self, tree: Tree, key: Callable[[int, Leaf], Hashable]
                     ) -> dict[Hashable, Bdd]:
        """For every value of ``key(node index, leaf)``: the worlds whose path through the
        tree ends in a leaf with that value, built from the root-to-leaf paths.

        One iterative bottom-up pass; a node's map is built once (trees are DAGs). Cost:
        per edge, one conjunction and disjunction per key value below the child.
        """
        done: dict[int, dict[Hashable, Bdd]] = {}
        stack = [0]
        while stack:  # iterative post-order: a node is built once all its children are
            k = stack[-1]
            node = tree.nodes[k]
            if k in done:
                stack.pop()
                continue
            if type(node) is Leaf:
                done[k] = {key(k, node): self.bdd.true}
                stack.pop()
                continue
            assert type(node) is Branching
            todo = [child for _, child in node.branches if child not in done]
            if todo:
                stack.extend(todo)
                continue
            out: dict[Hashable, Bdd] = {}
            for mask, child in node.branches:
                lit = self.literal(node.feature, mask)
                for value, w in done[child].items():
                    out[value] = out.get(value, self.bdd.false) | (lit & w)
            done[k] = out
            stack.pop()
        return done[0]

    def _comparisons(self, trees: list[list[Bdd]]
                     ) -> tuple[dict[tuple[int, int], Bdd], dict[tuple[int, int], Bdd]]:
        """``[v_i >= v_j]`` and ``[v_i > v_j]`` for all ordered pairs, by vote-difference DP."""
        ge: dict[tuple[int, int], Bdd] = {}
        gt: dict[tuple[int, int], Bdd] = {}
        for i, j in itertools.combinations(range(len(self.forest.classes)), 2):
            diff = {0: self.domain}
            for formulas in trees:
                ci, cj = formulas[i] & self.domain, formulas[j] & self.domain
                neither = self.domain & ~(ci | cj)
                new: dict[int, Bdd] = {}
                for d, u in diff.items():
                    for step, guard in ((1, ci), (-1, cj), (0, neither)):
                        w = u & guard
                        if w != self.bdd.false:
                            new[d + step] = new.get(d + step, self.bdd.false) | w
                diff = new
            ge[i, j] = self._any(diff, lambda d: d >= 0)
            gt[i, j] = self._any(diff, lambda d: d >= 1)
            ge[j, i] = self._any(diff, lambda d: d <= 0)
            gt[j, i] = self._any(diff, lambda d: d <= -1)
        return ge, gt

    def _any(self, diff: dict[int, Bdd], keep: Callable[[int], bool]) -> Bdd:
        """The disjunction of the entries whose vote difference ``keep`` accepts."""
        out = self.bdd.false
        for d, u in diff.items():
            if keep(d):
                out |= u
        return out

    def _weighted_comparisons(self) -> tuple[dict[tuple[int, int], Bdd],
                                             dict[tuple[int, int], Bdd]]:
        """Soft votes: ``[S_i >= S_j]`` and ``[S_i > S_j]`` for all ordered pairs, exactly.

        In integers (``Forest.int_weights``, ``Forest.int_init``), ``S_i − S_j = c + Σ_t d_t``
        with ``c = init_i − init_j`` and ``d_t = w_i − w_j`` of the leaf tree ``t`` reaches.
        So ``[S_i >= S_j] = [Σ_t d_t >= −c]`` and ``[S_i > S_j] = [Σ_t d_t >= 1 − c]``, both by
        :class:`_AtLeast` (sharing its memo), and ``[S_j >= S_i]``, ``[S_j > S_i]`` are the
        complements of the latter and the former on D.
        """
        forest = self.forest
        # One pass per tree for all pairs: leaves with equal weights share a group.
        trees = [self._leaf_groups(tree, lambda k, leaf, ws=ws: ws[k])
                 for tree, ws in zip(forest.trees, forest.int_weights)]
        ge: dict[tuple[int, int], Bdd] = {}
        gt: dict[tuple[int, int], Bdd] = {}
        for i, j in itertools.combinations(range(len(forest.classes)), 2):
            by_values = []
            for groups in trees:
                by_value: dict[int, Bdd] = {}
                for w, u in groups.items():
                    d = w[i] - w[j]
                    by_value[d] = by_value.get(d, self.bdd.false) | u
                by_values.append({d: u & self.domain for d, u in by_value.items()})
            c, levels = _pair_levels(forest.int_init[i] - forest.int_init[j], by_values)
            sums = _AtLeast(levels, self.domain, self.bdd.false)
            ge[i, j], gt[i, j] = sums.at_least(-c), sums.at_least(1 - c)
            ge[j, i], gt[j, i] = self.domain & ~gt[i, j], self.domain & ~ge[i, j]
        return ge, gt

    def class_formulas(self, ties: str | None = None) -> list[Bdd]:
        """``R^c`` for every class under a tie policy (default: the oracle's)."""
        ties = check_ties(ties or self.ties)
        if ties not in self._classes:
            out = []
            for i in range(len(self.forest.classes)):
                r = self.bdd.true
                for j in range(len(self.forest.classes)):
                    if j != i:
                        r &= self._gt[i, j] if ties == "first" and j < i else self._ge[i, j]
                out.append(r)
            self._classes[ties] = out
        return self._classes[ties]

    def class_formula(self, c: int, ties: str | None = None) -> Bdd:
        """``R^c`` (meaningful under :attr:`domain`)."""
        return self.class_formulas(ties)[c]

    def holds(self, c: int, x: Sequence[int], ties: str | None = None) -> bool:
        """``x ⊨ R^c``, by evaluating the BDD."""
        return self.bdd.let(self._world(x), self.class_formula(c, ties)) == self.bdd.true

    def model_count(self, c: int, ties: str | None = None) -> int:
        """Number of worlds in ``R^c`` (the paper's Figure 1 counts)."""
        return self._count(self.class_formula(c, ties) & self.domain)

    def _count(self, u: Bdd) -> int:
        # dd.cudd returns a float, dd.autoref an int; all declared variables are state variables.
        return int(round(self.bdd.count(u, nvars=self._n_vars)))

    # -- reasons ---------------------------------------------------------------------------

    def complete_reason(self, x: Sequence[int], delta: Bdd) -> Bdd:
        """CR of Δ at x: ``∀^C_X Δ = Δ|s ∧ ([X=s] ∨ ∧_t Δ|t)`` for every feature X.

        Features are taken in level order, top first (the order does not matter; top first
        was faster).
        """
        self._check_instance(x)
        for f in self.order:
            s = x[f]
            delta = self.bdd.let(self._condition(f, s), delta) & (
                self._vars[f][s] | self._forall(f, delta))
        return delta

    def general_reason(self, x: Sequence[int], delta: Bdd) -> Bdd:
        """GR of Δ at x: ``∀^G_X Δ = Δ|s ∧ ∧_{t≠s}([X≠t] ∨ Δ|t)`` for every X.

        On the domain, ``∧_{t≠s}([X≠t] ∨ Δ|t)`` is ``Δ ∨ [X=s]`` (in a world with
        ``X = t ≠ s`` both say ``Δ|t``, with ``X = s`` both are true); that form needs one
        cofactor instead of one per state and avoids large intermediate conjunctions (much
        faster).
        """
        self._check_instance(x)
        for f in self.order:
            s = x[f]
            delta = self.bdd.let(self._condition(f, s), delta) & (delta | self._vars[f][s])
        return delta

    # -- prime implicants and implicates ---------------------------------------------------

    def prime_implicants(self, phi: Bdd) -> tuple[Term, ...]:
        """All prime implicants of φ on the domain worlds, in canonical order (see module doc)."""
        return _canonical(self._primes(0, phi, _Memo()))

    def prime_implicates(self, phi: Bdd) -> tuple[Clause, ...]:
        """All prime implicates of φ: the literal-wise complements of the primes of ¬φ."""
        return self._complements(self._primes(0, ~phi, _Memo()))

    def _complements(self, terms: Iterable[Term]) -> tuple[Clause, ...]:
        """The clauses ¬τ of terms τ: every literal's state set complemented."""
        features = self.forest.features
        return _canonical(tuple((f, features[f].full & ~m) for f, m in term) for term in terms)

    def variable_minimal_implicants(self, phi: Bdd) -> tuple[Term, ...]:
        """The prime implicants of φ whose feature set has no strict subset among the primes'.

        Their feature sets are exactly the minimal sets V such that some term on V implies φ
        (:meth:`_min_supports`), and for such a V they are the prime implicants of
        ``∀_{X∉V} φ``, which all mention exactly V. This avoids enumerating every prime.
        """
        memo = _Memo()
        out: list[Term] = []
        for v in self._min_supports(0, phi, {}):
            psi = phi
            for f in range(len(self.forest.features)):
                if not v >> f & 1:
                    psi = self._forall(f, psi)
            out.extend(self._primes(0, psi, memo))
        return _canonical(out)

    def variable_minimal_implicates(self, phi: Bdd) -> tuple[Clause, ...]:
        """The variable-minimal prime implicates of φ (complements of those of ¬φ)."""
        return self._complements(self.variable_minimal_implicants(~phi))

    def _forall(self, f: int, u: Bdd) -> Bdd:
        """``∧_t u|t``: u for every state of feature ``f``."""
        out = self.bdd.true
        for w in self._cofactors(f, u):
            out &= w
        return out

    def _min_supports(self, pos: int, phi: Bdd, memo: dict[tuple[int, Bdd], list[int]]
                      ) -> list[int]:
        """Minimal feature sets V (bitmasks) such that a term on V implies φ.

        φ depends only on the features ``order[pos:]`` (level order), and so does V. Some
        term on V implies φ iff some simple term on V does (any world of its box gives one).
        With ``X = order[pos]``: without X that is a term implying ``∀_X φ``; with X it is
        ``X = t ∧ τ`` with τ implying ``φ|t``. Recursion depth is the number of features.
        """
        if phi == self.bdd.false:
            return []
        if phi == self.bdd.true:
            return [0]
        key = (pos, phi)
        if key not in memo:
            f = self.order[pos]
            cofs = set(self._cofactors(f, phi))
            without = self._min_supports(pos + 1, self._forall(f, phi), memo)
            if len(cofs) == 1:  # φ does not depend on X_f
                memo[key] = without
            else:
                with_f: set[int] = set()
                for u in cofs:
                    with_f.update(self._min_supports(pos + 1, u, memo))
                memo[key] = without + [
                    w | 1 << f for w in _minimal_sets(with_f)
                    if not any(v & w == v for v in without)]
        return memo[key]

    def _primes(self, pos: int, phi: Bdd, memo: _Memo) -> list[Term]:
        """Prime implicants of φ, a function of the features ``order[pos:]`` only.

        Literals come in level order (:func:`_canonical` sorts them). Recursion depth is the
        number of features.
        """
        if phi == self.bdd.false:
            return []
        if phi == self.bdd.true:
            return [()]
        key = (pos, phi)
        if key in memo.primes:
            return memo.primes[key]
        f = self.order[pos]
        # L must be closed: a state u with φ_L ⊨ φ|u is in L, else widening L by u keeps an
        # implicant. States are grouped by equal cofactors (a group is all in or all out)
        # and the closed unions of groups are enumerated by Ganter's NextClosure.
        groups: dict[Bdd, int] = {}
        for t, u in enumerate(self._cofactors(f, phi)):
            groups[u] = groups.get(u, 0) | 1 << t
        cofs, masks = list(groups), list(groups.values())
        full = self.forest.features[f].full
        out = []
        closed: int | None = self._closure(cofs, 0)[0]
        while closed is not None:
            if closed:
                inside = self._closure(cofs, closed)[1]
                mask = sum(m for g, m in enumerate(masks) if closed >> g & 1)
                outside = [u for g, u in enumerate(cofs) if not closed >> g & 1]
                for tau in self._primes(pos + 1, inside, memo):
                    box = memo.term(self, tau)
                    if any(box & ~u == self.bdd.false for u in outside):
                        continue  # widening L by a state u keeps an implicant: not prime
                    out.append(tau if mask == full else ((f, mask),) + tau)
            closed = self._next_closure(cofs, closed)
        memo.primes[key] = out
        return out

    def _closure(self, cofs: list[Bdd], pick: int) -> tuple[int, Bdd]:
        """``(cl(pick), φ_pick)`` with ``φ_pick = ∧_{g∈pick} φ|g``.

        ``cl(pick)`` adds to ``pick`` every group whose cofactor ``φ_pick`` implies on D (all
        of them when ``φ_pick`` is false on D).
        """
        inside = self.bdd.true
        for g, u in enumerate(cofs):
            if pick >> g & 1:
                inside &= u
        inside_d = inside & self.domain
        for g, u in enumerate(cofs):
            if not pick >> g & 1 and inside_d & ~u == self.bdd.false:
                pick |= 1 << g
        return pick, inside

    def _next_closure(self, cofs: list[Bdd], closed: int) -> int | None:
        """The closed set after ``closed`` in lectic order (Ganter's NextClosure), or None."""
        for i in reversed(range(len(cofs))):
            if closed >> i & 1:
                continue
            below = (1 << i) - 1
            candidate = self._closure(cofs, closed & below | 1 << i)[0]
            if candidate & below == closed & below:
                return candidate
        return None

    # -- explanations ----------------------------------------------------------------------

    def explain(self, x: Instance, what: Iterable[str] = ALL_WHAT) -> Explanation:
        """Every requested explanation field for instance ``x``, from the BDDs."""
        self._check_instance(x)
        what = tuple(what)
        unknown = sorted(set(what) - set(ALL_WHAT))
        if unknown:
            raise InputError(f"what: unknown key {unknown[0]!r}")
        forest = self.forest
        decision = forest.decision(x)
        formulas = self.class_formulas()
        member_of = tuple(c for c in range(len(formulas)) if self.holds(c, x))
        delta = formulas[decision]
        fields: dict[str, Any] = {}
        if {"sr", "nr", "robust"} & set(what):
            cr = self.complete_reason(x, delta)
            if "sr" in what:
                fields["sufficient_reasons"] = self.prime_implicants(cr)
            if {"nr", "robust"} & set(what):
                nrs = self.prime_implicates(cr)
                if "nr" in what:
                    fields["necessary_reasons"] = nrs
                if "robust" in what:
                    fields["robustness"] = min((len(c) for c in nrs), default=None)
        if {"gsr", "gnr", "flips"} & set(what):
            gr = self.general_reason(x, delta)
            if "gsr" in what:
                fields["general_sufficient_reasons"] = self.variable_minimal_implicants(gr)
            if {"gnr", "flips"} & set(what):
                gnrs = self.variable_minimal_implicates(gr)
                if "gnr" in what:
                    fields["general_necessary_reasons"] = gnrs
                if "flips" in what:
                    shortest = min((len(c) for c in gnrs), default=None)
                    fields["shortest_flips"] = tuple(c for c in gnrs if len(c) == shortest)
        if "ce" in what:
            fields["contrastive"] = tuple(
                (t, self.prime_implicates(self.complete_reason(x, ~formulas[t])))
                for t in range(len(formulas)) if t not in member_of)
        return Explanation(forest, tuple(x), self.ties, tuple(forest.votes(x)), decision,
                           member_of, tuple(k for k in ALL_WHAT if k in what), **fields)

    # -- circuit documents -----------------------------------------------------------------

    def check_circuit(self, doc: Any, source: str = "") -> CircuitCheck:
        """Decide whether an nnf/dg circuit document is equivalent to ``R^class`` (under D).

        Raises :class:`InputError` naming the file, node and field when the document is
        malformed or does not belong to this forest.
        """
        reader = _CircuitReader(self, source)
        fmt, c, ties, circuit = reader.read(doc)
        differ = self.bdd.apply("xor", circuit, self.class_formula(c, ties)) & self.domain
        name = self.forest.classes[c]
        if differ == self.bdd.false:
            return CircuitCheck(source, fmt, name, ties, True)
        model = self.bdd.pick(differ, care_vars=self._care)
        world = tuple(next(s for s, n in enumerate(names) if model[n]) for names in self._names)
        side = "circuit" if self.bdd.let(self._world(world), circuit) == self.bdd.true \
            else "forest"
        counterexample = {f.name: f.states[s] for f, s in zip(self.forest.features, world)}
        return CircuitCheck(source, fmt, name, ties, False, counterexample, side)

    def check_circuit_file(self, path: str | os.PathLike[str]) -> CircuitCheck:
        """:meth:`check_circuit` on a JSON file; errors name the file."""
        return self.check_circuit(load_json_file(path), source=os.fspath(path))


class _AtLeast:
    """``F(t, θ) = [Σ_{s>=t} d_s >= θ]``, the sum of one class pair's weight differences over
    the trees ``t, t+1, …`` against a threshold, as BDDs within D.

    ``levels[t]`` maps each value ``v`` of ``d_t`` to the worlds of D whose path through tree
    ``t`` ends in a leaf with that value (they partition D). The pseudo-Boolean recursion is
    ``F(t, θ) = ∨_v [d_t = v] ∧ F(t+1, θ − v)``, ending at ``F(n, θ) = D`` for ``θ <= 0`` and
    false above.

    Memo by intervals (after Abío, Nieuwenhuis, Oliveras and Rodríguez-Carbonell, "A new
    look at BDDs for pseudo-Boolean constraints", JAIR 2012): ``F(t, ·)`` is antitone in θ, so
    each BDD it takes, it takes on an interval of thresholds. Each level keeps disjoint
    intervals with their BDD; a threshold inside one is a lookup. A node computed for a new
    θ holds on the intersection of its children's intervals shifted by their v, and is joined
    with a neighbouring interval of the same BDD (by antitonicity it holds in between too).
    Every level starts with D up to ``low[t]``, the least the trees from ``t`` on can add, and
    false above ``high[t]``, the most: the pruning by the remaining trees' bounds, which the
    joins then widen to what the worlds really reach (trees share features, so their least
    values seldom meet in one world).

    Cost: a node per threshold met that no interval holds yet (at most the distinct sums of
    the trees before ``t`` per starting threshold; on scikit-learn forests about the distinct
    sums of the trees from ``t`` on), each one conjunction and disjunction per value of
    ``d_t``. Iterative: forests can have hundreds of trees.
    """

    def __init__(self, levels: list[dict[int, Bdd]], true: Bdd, false: Bdd) -> None:
        self.levels, self.false = levels, false
        low = high = 0
        # Per level t <= n: the intervals' first thresholds, sorted, and per interval (its
        # last threshold, the BDD on it).
        self.starts: list[list[float]] = [[-math.inf, 1]]
        self.found: list[list[tuple[float, Bdd]]] = [[(0, true), (math.inf, false)]]
        for values in reversed(levels):
            low, high = low + min(values), high + max(values)
            self.starts.append([-math.inf, high + 1])
            self.found.append([(low, true), (math.inf, false)])
        self.starts.reverse()
        self.found.reverse()

    def at_least(self, theta: int) -> Bdd:
        """``[Σ_t d_t >= θ]`` over all trees (within D)."""
        stack = [(0, theta)]
        while stack:  # post-order: a node is built once its children are all known
            t, th = stack[-1]
            if self._lookup(t, th) is not None:
                stack.pop()
                continue
            todo = [(t + 1, th - v) for v in self.levels[t]
                    if self._lookup(t + 1, th - v) is None]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            first, last, out = -math.inf, math.inf, self.false
            for v, u in self.levels[t].items():
                known = self._lookup(t + 1, th - v)
                assert known is not None
                lo, hi, child = known
                first, last = max(first, lo + v), min(last, hi + v)
                out |= u & child
            self._store(t, th, first, last, out)
        known = self._lookup(0, theta)
        assert known is not None
        return known[2]

    def _lookup(self, t: int, theta: int) -> tuple[float, float, Bdd] | None:
        """``(first, last, F(t, θ))`` with ``F(t, ·)`` equal on ``[first, last] ∋ θ``, or None
        when no interval known yet holds θ."""
        k = bisect.bisect_right(self.starts[t], theta) - 1
        last, u = self.found[t][k]  # k >= 0: the first interval starts at -inf
        return (self.starts[t][k], last, u) if theta <= last else None

    def _store(self, t: int, theta: int, first: float, last: float, u: Bdd) -> None:
        """Record ``F(t, ·) = u`` on ``[first, last] ∋ θ``, clipped to the gap around θ
        between the known intervals, and joined with a neighbour of the same BDD."""
        starts, found = self.starts[t], self.found[t]
        k = bisect.bisect_right(starts, theta)  # θ lies between intervals k - 1 and k
        # Clipped: the children's intersection may reach into a known interval (of the
        # same BDD); the intervals must stay disjoint for the bisection.
        first, last = max(first, found[k - 1][0] + 1), min(last, starts[k] - 1)
        # Joined: F(t, ·) is antitone, so u holds between u's intervals too (2.5-13x fewer
        # nodes on scikit-learn forests, docs/decisions.md).
        if found[k - 1][1] == u:
            k -= 1
            first = starts.pop(k)
            found.pop(k)
        if found[k][1] == u:
            last = found.pop(k)[0]
            starts.pop(k)
        starts.insert(k, first)
        found.insert(k, (last, u))


@dataclass
class _Memo:
    """Caches of one prime computation: primes per ``(position, φ)``, and term BDDs."""

    primes: dict[tuple[int, Bdd], list[Term]] = field(default_factory=dict)
    terms: dict[Term, Bdd] = field(default_factory=dict)

    def term(self, oracle: BddOracle, term: Term) -> Bdd:
        """The worlds of a term, conjoined with the domain constraint."""
        if term not in self.terms:
            out = oracle.domain
            for f, mask in term:
                out &= oracle.literal(f, mask)
            self.terms[term] = out
        return self.terms[term]


def _pair_levels(c: int, by_values: list[_Values]) -> tuple[int, list[_Values]]:
    """The constant ``c`` and the trees of one class pair as :class:`_AtLeast` takes them,
    from each tree's values of ``d_t`` (a set, or a map from value to BDD): a tree of one
    value (in a boosted forest, a tree of a third class) adds it to the constant; the others
    come largest spread ``max d_t − min d_t`` first (stable), the order of decreasing
    coefficients usual for pseudo-Boolean BDDs. On scikit-learn forests that order built
    multi-class boosted forests 2–12× faster than the forest's, random forests from 30%
    faster to 20% slower (docs/decisions.md)."""
    levels = []
    for values in by_values:
        if len(values) == 1:
            c += next(iter(values))
        else:
            levels.append(values)
    return c, sorted(levels, key=lambda values: min(values) - max(values))


def _weighted_nodes(forest: Forest) -> int:
    """Soft votes: an estimate of the nodes :class:`_AtLeast` builds, over all class pairs.

    Per pair, the trees as :meth:`BddOracle._weighted_comparisons` takes them
    (:func:`_pair_levels`). The nodes of
    level ``t`` are at most its *live* thresholds, those reached from the two starting ones
    (``[S_i >= S_j]``, ``[S_i > S_j]``) that the pruning bounds leave undecided
    (:func:`_live_thresholds`), and in practice about as many as the trees from ``t`` on
    have distinct sums, plus one (:func:`_distinct_sums`), whichever is less; each costs a
    conjunction and a disjunction per value of ``d_t``. Cost: per pair and tree, at most
    :data:`SUMS_COUNTED` additions for each count.
    """
    leaves = [{w for w in weights if w is not None} for weights in forest.int_weights]
    total = 0
    for i, j in itertools.combinations(range(len(forest.classes)), 2):
        c, values = _pair_levels(forest.int_init[i] - forest.int_init[j],
                                 [{w[i] - w[j] for w in tree} for tree in leaves])
        live = _live_thresholds(values, {-c, 1 - c})
        after = _distinct_sums(values[::-1])[::-1]
        total += sum(len(v) * min(live[t], after[t] + 1) for t, v in enumerate(values))
    return total


def _live_thresholds(values: list[set[int]], start: set[int]) -> list[int]:
    """``out[t]``: how many thresholds ``θ − Σ_{s<t} d_s`` (θ in ``start``) lie strictly
    above the least and at most the greatest sum of ``values[t:]``, followed while that
    takes at most :data:`SUMS_COUNTED` subtractions per level, then bounded by the product
    of the counts of values."""
    low, high = [0], [0]
    for v in reversed(values):
        low.append(low[-1] + min(v))
        high.append(high[-1] + max(v))
    low.reverse()
    high.reverse()
    live: set[int] | None = start
    out, count = [], len(start)
    for t, v in enumerate(values):
        if live is not None:
            live = {th for th in live if low[t] < th <= high[t]}
            count = len(live)
        out.append(count)
        if live is not None and len(live) * len(v) <= SUMS_COUNTED:
            live = {th - d for th in live for d in v}
        else:
            live = None
            count *= len(v)
    return out


def _distinct_sums(values: list[set[int]]) -> list[int]:
    """``out[t]``: how many distinct sums the first ``t`` levels' values make, counted while
    that takes at most :data:`SUMS_COUNTED` additions per level, then bounded by the
    product of the counts of values."""
    sums: set[int] | None = {0}
    out = [1]
    for v in values:
        if sums is not None and len(sums) * len(v) <= SUMS_COUNTED:
            sums = {s + d for s in sums for d in v}
            out.append(len(sums))
        else:
            sums = None
            out.append(out[-1] * len(v))
    return out


def _feature_order(forest: Forest) -> list[int]:
    """Static variable order: features tested near the roots first (ties: forest order).

    A feature scores ``Σ 2^-depth`` over the test nodes on it (depth = fewest edges from the
    root, by breadth-first search); on scikit-learn forests this order gave smaller class BDDs
    and faster compiles than the forest's feature order.
    """
    score = [0.0] * len(forest.features)
    for tree in forest.trees:
        depth = {0: 0}
        frontier = [0]
        while frontier:
            nxt = []
            for k in frontier:
                node = tree.nodes[k]
                if type(node) is Branching:
                    score[node.feature] += 2.0 ** -depth[k]
                    for _, child in node.branches:
                        if child not in depth:
                            depth[child] = depth[k] + 1
                            nxt.append(child)
            frontier = nxt
    return sorted(range(len(forest.features)), key=lambda f: -score[f])


def _canonical(terms: Iterable[Term]) -> tuple[Term, ...]:
    """Terms/clauses with literals sorted by feature, as a canonical set."""
    return Explanation.sets(tuple(sorted(term)) for term in terms)


def _minimal_sets(family: Iterable[int]) -> list[int]:
    """The inclusion-minimal members of a family of bitmasks."""
    out: list[int] = []
    for v in sorted(set(family), key=lambda m: bin(m).count("1")):
        if not any(u & v == u for u in out):
            out.append(v)
    return out


class _CircuitReader(JsonReader):
    """Validates a circuit document (docs/formats.md) and builds its BDD; errors name the place."""

    def __init__(self, oracle: BddOracle, source: str) -> None:
        super().__init__(source)
        self.oracle = oracle
        self.bdd = oracle.bdd
        self.forest = oracle.forest

    def read(self, doc: Any) -> tuple[str, int, str, Bdd]:
        """``(format, class index, ties, circuit BDD)`` of a document."""
        if not isinstance(doc, dict):
            raise self.fail("circuit", "expected a JSON object")
        fmt = self.get(doc, "format", str, "circuit")
        if fmt not in (NNF_FORMAT, DG_FORMAT):
            raise self.fail("circuit", f"field 'format' must be {NNF_FORMAT!r} or "
                                       f"{DG_FORMAT!r}, not {fmt!r}")
        allowed = {"format", "class", "ties", "features", "nodes", "meta"}
        if fmt == DG_FORMAT:
            allowed.add("roots")
        self.only(doc, allowed, "circuit")
        name = self.get(doc, "class", str, "circuit")
        if name not in self.forest.classes:
            raise self.fail("circuit", f"field 'class': unknown class {name!r} (the forest's "
                                       f"classes are {', '.join(self.forest.classes)})")
        ties = self.get(doc, "ties", str, "circuit")
        if ties not in TIES:
            raise self.fail("circuit", f"field 'ties' must be one of {', '.join(TIES)}, "
                                       f"not {ties!r}")
        features = self.get(doc, "features", list, "circuit")
        expected = [f.to_json() for f in self.forest.features]
        if len(features) != len(expected):
            raise self.fail("circuit", f"field 'features' lists {len(features)} features, the "
                                       f"forest has {len(expected)}")
        for i, (got, want) in enumerate(zip(features, expected)):
            if got != want:
                raise self.fail(f"features[{i}]", f"{_short(got)} does not match the forest's "
                                                  f"feature {_short(want)}")
        nodes = self.get(doc, "nodes", list, "circuit")
        if fmt == NNF_FORMAT:
            if not nodes:
                raise self.fail("circuit", "field 'nodes' is empty (the last node is the root)")
            circuit = self.nnf(nodes)[-1]
        else:
            built = self.dg(nodes)
            circuit = self.bdd.true
            for r, root in enumerate(self.get(doc, "roots", list, "circuit")):
                circuit &= built[self.index(root, len(built), f"roots[{r}]", "a root")]
        return fmt, self.forest.classes.index(name), ties, circuit

    def index(self, value: Any, bound: int, where: str, what: str) -> int:
        """A node id ``0 <= value < bound`` (earlier nodes only)."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(where, f"{what} must be a node id, not {value!r}")
        if not 0 <= value < bound:
            raise self.fail(where, f"{what} {value} is not an earlier node "
                                   f"(ids must be in 0..{bound - 1})")
        return value

    def feature(self, value: Any, where: str) -> int:
        """A feature index of the forest."""
        if isinstance(value, bool) or not isinstance(value, int) \
                or not 0 <= value < len(self.forest.features):
            last = len(self.forest.features) - 1
            raise self.fail(where, f"feature must be an index in 0..{last}, not {value!r}")
        return value

    def states(self, f: int, value: Any, where: str) -> int:
        """A state mask from a list of distinct in-range state indices of feature ``f``."""
        return parse_states(self.forest.features[f], value,
                            lambda problem: self.fail(where, problem))

    def nnf(self, nodes: list[Any]) -> list[Bdd]:
        """The BDD of every ``rfcircuits.nnf/1`` node (children must be earlier nodes)."""
        built: list[Bdd] = []
        for i, node in enumerate(nodes):
            where = f"node {i}"
            if not isinstance(node, dict) or len(node) != 1:
                raise self.fail(where, "expected an object with exactly one of the fields "
                                       "'const', 'lit', 'and', 'or'")
            (kind,) = node
            if kind == "const":
                built.append(self.bdd.true if self.get(node, "const", bool, where)
                             else self.bdd.false)
            elif kind == "lit":
                lit = self.get(node, "lit", list, where)
                if len(lit) != 2:
                    raise self.fail(where, "field 'lit' must be [feature index, [state indices]]")
                f = self.feature(lit[0], f"{where}, field 'lit'")
                mask = self.states(f, lit[1], f"{where}, field 'lit'")
                if mask in (0, self.forest.features[f].full):
                    raise self.fail(where, "a literal's states must be a non-empty proper "
                                           "subset of the feature's states")
                built.append(self.oracle.literal(f, mask))
            elif kind in ("and", "or"):
                out = self.bdd.true if kind == "and" else self.bdd.false
                for k, child in enumerate(self.get(node, kind, list, where)):
                    u = built[self.index(child, i, f"{where}, field {kind!r}[{k}]", "child")]
                    out = out & u if kind == "and" else out | u
                built.append(out)
            else:
                raise self.fail(where, f"unknown field {kind!r} (expected 'const', 'lit', "
                                       f"'and' or 'or')")
        return built

    def dg(self, nodes: list[Any]) -> list[Bdd]:
        """The BDD of every ``rfcircuits.dg/1`` node: ``∨_k ([X ∈ S_k] ∧ child_k)``.

        Branch state sets must be non-empty and disjoint; they need not cover every state
        (a decision graph lists only the states feasible at a node).
        """
        built: list[Bdd] = []
        for i, node in enumerate(nodes):
            where = f"node {i}"
            if not isinstance(node, dict):
                raise self.fail(where, "expected a JSON object")
            if "leaf" in node:
                self.only(node, ("leaf",), where)
                built.append(self.bdd.true if self.get(node, "leaf", bool, where)
                             else self.bdd.false)
                continue
            self.only(node, ("feature", "branches"), where)
            f = self.feature(self.get(node, "feature", int, where), f"{where}, field 'feature'")
            branches = self.get(node, "branches", list, where)
            if not branches:
                raise self.fail(where, "a test node needs at least one branch")
            out, seen = self.bdd.false, 0
            for b, branch in enumerate(branches):
                bwhere = f"{where}, branch {b}"
                if not (isinstance(branch, list) and len(branch) == 2):
                    raise self.fail(bwhere, "expected [[state indices], child id]")
                mask = self.states(f, branch[0], bwhere)
                if not mask:
                    raise self.fail(bwhere, "empty state set")
                if mask & seen:
                    raise self.fail(bwhere, "a state appears in more than one branch")
                seen |= mask
                child = built[self.index(branch[1], i, bwhere, "child")]
                out |= self.oracle.literal(f, mask) & child
            built.append(out)
        return built


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
