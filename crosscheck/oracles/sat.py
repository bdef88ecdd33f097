"""SAT oracle: class formulas as CNF (reified cardinality constraints, or binary adders for soft
votes), queries under assumptions.

Semantics are those of docs/semantics.md (§3: votes, hard or soft, tie policies, class
formulas ``R^i``; §4–§10: reasons; §11: edge cases). The oracle shares no algorithm with the
native engine: no sorting network of its own, no decision graph, no closed form; only the data
model of ``core`` is used, and class membership itself is read from SAT models (the checks of
general reasons also count the trees' votes at given worlds:
:mod:`rfcircuits.crosscheck.oracles.slices`).

**Encoding** (built once per forest and tie policy, then queried incrementally; hard votes
unless said):

- an order encoding of every feature: ``le_{f,s} ⇔ [X_f <= s]`` for all but the last state,
  chained ``le_{f,s} → le_{f,s+1}``, and a state variable ``X_f = s`` defined as
  ``le_{f,s} ∧ ¬le_{f,s-1}`` (exactly one state holds without a cardinality constraint);
  ``X_f ∈ S`` for an interval ``S`` is two order literals, any other set the disjunction of
  its intervals. On numeric features with hundreds of thresholds this is linear where the
  one-hot branches were quadratic (banknote's 100 trees: 29,000 clauses instead of 347,000);
- per tree a reachability variable per node (the root is reached; a node is reached iff some
  branch into it is taken, and a node with one way in is reached exactly when that branch is:
  its parent is reached and the literal of the branch's states, made once per (feature, state
  set) and shared by every tree, holds — trees may be DAGs) and a vote variable ``t_{l,i}``
  that holds iff tree ``l`` reaches a leaf labelled ``c_i``;
- per comparison a selector ``g_{i,j}`` reified both ways, ``g → Σ_l t_{l,i} + Σ_l ¬t_{l,j} >= n``
  and ``¬g → Σ_l t_{l,i} + Σ_l ¬t_{l,j} <= n-1``, so ``g_{i,j} ⇔ [v_i >= v_j]`` (cardinality
  encoding of :data:`ENCODINGS`, by default the k-modulo totalizer: a fifth of the clauses of
  the totalizer on 5-class forests, and every call faster). The strict comparison
  ``[v_i > v_j]``, the constraint ``Σ_l t_{l,i} + Σ_l ¬t_{l,j} >= n+1``, is the negation of
  ``[v_j >= v_i]``: it is the literal ``¬g_{j,i}``, so ``first`` needs one reified constraint
  per pair ``i < j``, ``all`` one per ordered pair. When every tree votes ``c_i`` or ``c_j`` (any two-class forest) a tree reaches
  exactly one leaf, so ``¬t_{l,j} = t_{l,i}`` and the constraint is ``Σ_l t_{l,i} >= ⌈n/2⌉``:
  the same count with its duplicate literals merged, half the counter;
- **soft votes** (``forest.voting == "soft"``: ``v_i`` is the exact sum ``S_i``, ``int_init[i]``
  plus the integer weights ``int_weights`` of the leaves reached) need no vote variables: for a
  class pair ``a < b`` each tree's ``d_t = w_a(leaf) - w_b(leaf)`` is shifted by its smallest
  value and all are divided by the gcd of the shifted values, each tree's bits are
  disjunctions of its leaves' reachability variables (exactly one leaf is reached), a column
  compression of full adders sums them, and a comparator chain with a constant gives a
  literal ``g ⇔ [Σ_t d_t >= θ]`` (:mod:`rfcircuits.crosscheck.oracles.adders`; every gate Tseitin in
  both directions, so ``g`` can be asserted or denied). With ``δ = int_init[a] - int_init[b]``,
  ``g_{a,b} = [Σ >= -δ]`` is ``[S_a >= S_b]``, and ``g_{b,a} = ¬[Σ >= 1 - δ]`` is ``[S_b >= S_a]``:
  one sum per pair serves both directions, and strict comparisons are negations as above.
  Exact weights are wide (a 10-tree forest of ``predict_proba`` fractions: 62–67 bits a
  sum), so this is about ten times the clauses of the hard votes' counters
  (docs/decisions.md, "Oracles"). The sum and its comparators are definitions, so the goal
  CNFs below take them whole and assert (``R^c``) or deny one of (``¬R^c``) the comparison
  literals. This is not the engine's encoding (a decision diagram over the trees' partial
  sums), and PySAT's ``pysat.pb`` is not used: it needs ``pypblib``, not installable here,
  and reifies only through a big-M coefficient per direction;
- per class a selector ``r_i ⇔ R^i`` (``first``: ``∧_{j<i}[v_i > v_j] ∧
  ∧_{j>i}[v_i >= v_j]``; ``all``: ``∧_{j≠i}[v_i >= v_j]``; ``strict``: ``∧_{j≠i}[v_i > v_j]``).

``strict`` is a tie policy of this oracle only (:data:`SAT_TIES`), for grading tools that
promise that the explained class beats every other strictly (PyXAI on more than two classes): a
tied world is in no class. The library's policies stay ``first`` and ``all``. Under every policy
the decision of ``x`` is its first class with most votes, so under ``strict`` a tied ``x`` is
not in Δ.

A world is fixed on a feature by assuming its state variable; a literal ``X ∈ S`` is asserted
by assuming the state variables outside ``S`` false; ``R^i`` or ``¬R^i`` through ``r_i``.

**Enumeration** (SRs, NRs, CEs) uses the MUS/MCS hitting-set duality. For a goal literal ``g``
(``¬r_d`` for the decision ``d``, or ``r_t`` for a target class) a feature set ``V`` *frees*
``g`` when some world differing from ``x`` only on ``V`` satisfies ``g`` (an MCS of the soft
constraints "X keeps x[X]" under the hard ``g``), and *blocks* ``g`` when fixing ``V`` to ``x``
makes ``g`` unsatisfiable (an unsatisfiable subset). Minimal freers are found by increasing size:
a totalizer over the "feature changed" literals bounds the size by ``k``, every freer found is
blocked (its supersets excluded), and ``k`` grows when the bound makes the goal unsatisfiable.
A model found under bound ``k`` is a minimal freer, since every smaller freer contains one of the
(already blocked) minimal freers of size ``< k``. The minimal blockers are then the minimal
hitting sets of the minimal freers, enumerated by :class:`~pysat.examples.hitman.Hitman` in
its SAT mode (MiniSat-GH with hard negative phases gives subset-minimal hitting sets): faster
than its sorted MaxSAT mode on tens of thousands of SRs, and the order does not matter since
the sets are sorted afterwards.
NRs are the minimal freers of ``¬Δ``, SRs its minimal blockers, CEs for ``t`` the minimal
freers of ``R^t``. Robustness is a separate MaxSAT (RC2) computation.

**Certificate.** Given SRs and NRs (the native engine's), :meth:`SatOracle.certify_reasons` proves
them exactly right, or finds what is wrong, without enumerating: every SR blocks (one UNSAT call
each), every NR frees with all its features changed (one SAT call each), neither family has a member
inside another (bitsets), and every set meeting all SRs contains an NR (one propositional call over
one variable per feature); on large forests it is several times faster than the enumeration. The
harness (:mod:`rfcircuits.crosscheck.differential.harness`) checks the native SRs and NRs this way,
and on forests of at most ``SAT_ENUMERATION_WORLDS`` worlds also against the enumeration.
:meth:`SatOracle.missing_contrastive` certifies a target's CEs alike (every minimal set meeting them
blocks ``R^t``).

**Checks of given items.** Whether fixing some of x's states blocks a goal is monotone in the
features, so :meth:`SatOracle._blocks` answers from what x's earlier calls proved (blockers
from UNSAT cores, freers from models) before it calls a solver: verifying a complete family
takes about one call per item. GSRs are checked as families (an instance of a large forest
can have tens of thousands): primality asks for escaping worlds only where the boxes of
worlds outside Δ found so far do not answer, and a batch of GSRs meets all those boxes in a
few matrix products; GNR and shortest-flip checks read a table of the instance's slice
(:mod:`rfcircuits.crosscheck.oracles.slices`), with the counter-example search kept for slices too
large to table.

Each enumeration runs on a fresh solver holding the feature and tree clauses and the goal's
atoms as unreified cardinality constraints (fewer clauses and no idle reified half make these
many calls faster), the instance's counter and its blocking clauses. A solver kept per goal
across instances, with each instance's clauses retired by an activation literal, slowed down
as the retired clauses and counters piled up. The item checks keep one such solver per goal
(no counter, no blocking clauses: nothing piles up). Every other query uses the reified
encoding above. The measurements behind these choices are in docs/decisions.md ("Oracles and
cross-checking").
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pysat.card import CardEnc, EncType, ITotalizer
from pysat.examples.hitman import Hitman
from pysat.examples.rc2 import RC2
from pysat.formula import WCNF, IDPool
from pysat.solvers import Solver, SolverNames

from rfcircuits.errors import InputError, check_choice
from rfcircuits.explanation import ALL_WHAT, Explanation
from rfcircuits.forest import TIES, Branching, Forest, Instance, Leaf, mask_blocks
from rfcircuits.forest import mask_states as bits
from rfcircuits.interrupts import interruptible
from rfcircuits.terms import Clause, Literal, Term
from rfcircuits.crosscheck.oracles.adders import Circuit, OneHotSum
from rfcircuits.crosscheck.oracles.slices import (MAX_CELLS, Slice, gnr_verdicts, member_grid,
                                                  path_box)

#: GSRs whose primality one round of matrix products decides (:meth:`SatOracle._unwidenable`).
_BATCH = 256


#: Cardinality encodings accepted by the ``encoding`` parameter.
ENCODINGS = {
    "totalizer": EncType.totalizer,
    "seqcounter": EncType.seqcounter,
    "sortnetwrk": EncType.sortnetwrk,
    "cardnetwrk": EncType.cardnetwrk,
    "mtotalizer": EncType.mtotalizer,
    "kmtotalizer": EncType.kmtotalizer,
}


#: Tie policies of the oracle: the library's (:data:`rfcircuits.forest.TIES`) and ``strict``.
SAT_TIES = (*TIES, "strict")

#: The checks of :meth:`SatOracle.certify_reasons`, in the order they run.
CERTIFICATE_CHECKS = ("sr_well_formed", "nr_well_formed", "sr_antichain", "nr_antichain",
                      "sr_sufficient", "nr_frees", "sr_transversals")

#: SAT solver of the certificate's propositional call (a variable per feature, a clause
#: per reason): MiniSat 2.2 was among the fastest on tens of thousands of reasons
#: (docs/decisions.md).
DUALITY_SOLVER = "m22"


@dataclass(frozen=True)
class Certificate:
    """What :meth:`SatOracle.certify_reasons` found. ``verdicts`` maps every check of
    :data:`CERTIFICATE_CHECKS` to True (holds), False (fails) or None (not run: the items are
    malformed); ``counterexamples`` maps each failed check to its first counterexample, in
    words; ``missing`` is the item ``sr_transversals`` shows missing, as ``("sr", term)`` or
    ``("nr", clause)``, when that check fails."""

    verdicts: dict[str, bool | None]
    counterexamples: dict[str, str]
    missing: tuple[str, Term] | None = None

    @property
    def holds(self) -> bool:
        """Every check holds: the SRs and the NRs given are exactly the true ones."""
        return all(self.verdicts.values())

    def describe(self) -> str:
        """The failed checks with their counterexamples, or ``certified``."""
        return "; ".join(f"{check}: {text}" for check, text in self.counterexamples.items()) \
            or "certified"


class SatOracle:
    """SAT/MaxSAT answers for one forest and tie policy (one of :data:`SAT_TIES`).

    ``encoding`` names the cardinality encoding of the vote comparisons of hard votes (a key
    of :data:`ENCODINGS`; soft votes are compared by binary adders whatever it is); ``solver``
    is a PySAT solver name that honours assumptions (Kissat does not and is refused).
    """

    SUPPORTS = frozenset({"sr", "nr", "ce", "robust"})

    def __init__(self, forest: Forest, ties: str = "first", encoding: str = "kmtotalizer",
                 solver: str = "cadical195") -> None:
        if encoding not in ENCODINGS:
            raise InputError(f"unknown cardinality encoding {encoding!r}: expected one of "
                             f"{', '.join(ENCODINGS)}")
        if solver in SolverNames.kissat404:
            raise InputError("Kissat ignores assumptions: choose another SAT solver")
        self.forest = forest
        self.ties = check_choice("ties", ties, SAT_TIES)
        self.encoding = encoding
        self.solver_name = solver
        #: Largest slice GNR checks table (:mod:`rfcircuits.crosscheck.oracles.slices`); beyond it
        #: they search for counterexamples.
        self.max_slice_cells = MAX_CELLS
        self.n_features = len(forest.features)
        self._pool = IDPool()
        self._state_vars = [[self._pool.id(("x", f, s)) for s in range(feature.n_states)]
                            for f, feature in enumerate(forest.features)]
        self.clauses: list[list[int]] = []
        self._ge: dict[tuple[int, int], int] = {}
        #: Per class, the comparisons of ``R^c``: ``(c, j, strict)`` for ``[v_c >= v_j]``
        #: (strict 0) or ``[v_c > v_j]`` (strict 1).
        self._atoms: list[list[tuple[int, int, int]]] = [[] for _ in forest.classes]
        #: Soft votes: per class pair ``a < b``, ``Σ_t (w_a - w_b)`` in binary (module docstring).
        self._sums: dict[tuple[int, int], OneHotSum] = {}
        self._goal_clauses: dict[int, list[list[int]]] = {}
        self._order_vars: list[list[int]] = []
        self._literals: dict[tuple[int, int], int] = {}
        self._goal_solvers: dict[int, Solver] = {}
        self._encode()
        self._solver = Solver(name=solver, bootstrap_with=self.clauses)
        # Answers about the most recent instance (explain and the checks ask several times).
        self._cache_owner: Instance | None = None
        self._cache: dict[Any, Any] = {}

    def close(self) -> None:
        """Release the SAT solvers."""
        self._solver.delete()
        for solver in self._goal_solvers.values():
            solver.delete()
        self._goal_solvers.clear()

    def __enter__(self) -> SatOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- encoding ---------------------------------------------------------------------------

    def state_var(self, f: int, s: int) -> int:
        """The variable of ``X_f = s``."""
        return self._state_vars[f][s]

    def _encode(self) -> None:
        """The CNF of the module docstring, into :attr:`clauses`."""
        forest, pool, add = self.forest, self._pool, self.clauses.append
        true = pool.id("true")
        add([true])
        for f, feature in enumerate(forest.features):
            le = [pool.id(("le", f, s)) for s in range(feature.n_states - 1)]
            self._order_vars.append(le)
            for lower, upper in zip(le, le[1:]):
                add([-lower, upper])
            for s, v in enumerate(self._state_vars[f]):
                _define_and(add, v, self._interval(f, s, s + 1))
        n_classes = len(forest.classes)
        hard = forest.voting == "hard"
        self.vote_vars = [[pool.id(("t", l, i)) for i in range(n_classes)]
                          for l in range(len(forest.trees))] if hard else []
        #: Soft votes: per tree, its leaves as (node, reachability variable).
        self._leaves: list[list[tuple[int, int]]] = []
        self._tree_labels = [{node.label for node in tree.nodes if type(node) is Leaf}
                             for tree in forest.trees]
        for l, tree in enumerate(forest.trees):
            reach = [true] + [pool.id(("reach", l, k)) for k in range(1, len(tree.nodes))]
            parents = [0] * len(tree.nodes)
            for node in tree.nodes:
                if type(node) is Branching:
                    for _, child in node.branches:
                        parents[child] += 1
            incoming: list[list[int]] = [[] for _ in tree.nodes]
            leaves: list[list[int]] = [[] for _ in range(n_classes)]
            for k, node in enumerate(tree.nodes):
                if type(node) is Leaf:
                    leaves[node.label].append(reach[k])
                    continue
                assert type(node) is Branching
                for b, (mask, child) in enumerate(node.branches):
                    # A node with one way in is reached exactly when that branch is taken.
                    edge = reach[child] if parents[child] == 1 else pool.id(("edge", l, k, b))
                    _define_and(add, edge, [reach[k], self._holds(node.feature, mask)])
                    incoming[child].append(edge)
            for k in range(1, len(tree.nodes)):
                if parents[k] > 1:
                    _define_or(add, reach[k], incoming[k])
            if hard:
                for i in range(n_classes):
                    _define_or(add, self.vote_vars[l][i], leaves[i])
            else:
                self._leaves.append([(k, reach[k]) for k, node in enumerate(tree.nodes)
                                     if type(node) is Leaf])
        self._base_len = len(self.clauses)
        self.class_vars = [pool.id(("r", i)) for i in range(n_classes)]
        for i, r in enumerate(self.class_vars):
            conj = []
            for j in range(n_classes):
                if j != i:
                    strict = self.ties == "strict" or self.ties == "first" and j < i
                    self._atoms[i].append((i, j, int(strict)))
                    conj.append(self._atom_literal(self._atoms[i][-1]))
            for lit in conj:
                add([-r, lit])
            add([r] + [-lit for lit in conj])
        for total in self._sums.values():
            self.clauses.extend(total.circuit.clauses)

    def _interval(self, f: int, first: int, end: int) -> list[int]:
        """Literals whose conjunction says ``first <= X_f < end`` (none for every state)."""
        le = self._order_vars[f]
        return ([-le[first - 1]] if first > 0 else []) + ([le[end - 1]] if end <= len(le) else [])

    def _holds(self, f: int, mask: int) -> int:
        """A literal equivalent to ``X_f ∈ mask``, made once per literal (trees share them):
        an order literal or a state variable when one says it, else a new variable defined
        from the mask's intervals."""
        if (f, mask) not in self._literals:
            parts = []
            for first, end in mask_blocks(mask):
                lits = self._interval(f, first, end)
                if end - first == 1:
                    parts.append(self._state_vars[f][first])
                elif len(lits) < 2:
                    parts.append(lits[0] if lits else self._pool.id("true"))
                else:
                    parts.append(self._pool.id(("and", f, first, end)))
                    _define_and(self.clauses.append, parts[-1], lits)
            if len(parts) == 1:
                self._literals[(f, mask)] = parts[0]
            else:
                self._literals[(f, mask)] = self._pool.id(("in", f, mask))
                _define_or(self.clauses.append, self._literals[(f, mask)], parts)
        return self._literals[(f, mask)]

    def _atom_literal(self, atom: tuple[int, int, int]) -> int:
        """The literal of a comparison of :attr:`_atoms`: ``[v_i > v_j]`` is ``¬[v_j >= v_i]``."""
        i, j, strict = atom
        return -self._comparison(j, i) if strict else self._comparison(i, j)

    def _comparison(self, i: int, j: int) -> int:
        """Selector ``g ⇔ [v_i >= v_j]``: for hard votes ``Σ_l t_{l,i} + Σ_l ¬t_{l,j} >= n``,
        for soft votes the comparison of a binary sum with a constant (:meth:`_soft_comparison`)."""
        if (i, j) not in self._ge and self.forest.voting == "soft":
            self._ge[(i, j)] = self._soft_comparison(i, j)
        elif (i, j) not in self._ge:
            g = self._pool.id(("ge", i, j))
            for clause in self._count((i, j, 0), True):
                self.clauses.append([-g] + clause)
            for clause in self._count((i, j, 0), False):
                self.clauses.append([g] + clause)
            self._ge[(i, j)] = g
        return self._ge[(i, j)]

    def _soft_comparison(self, i: int, j: int) -> int:
        """The literal ``[S_i >= S_j]`` of soft votes. For ``a < b`` the pair's sum
        ``Σ_t (w_a - w_b)`` over the leaves reached is built once in binary
        (:class:`~rfcircuits.crosscheck.oracles.adders.OneHotSum`; its clauses join the encoding at
        the end of :meth:`_encode`); with ``δ = init_a - init_b``, ``[S_a >= S_b]`` is
        ``[Σ >= -δ]`` and ``[S_b >= S_a]`` is ``¬[Σ >= 1 - δ]``."""
        a, b = min(i, j), max(i, j)
        weights, init = self.forest.int_weights, self.forest.int_init
        if (a, b) not in self._sums:
            circuit = Circuit(self._pool.id, self._pool.id("true"))
            self._sums[(a, b)] = OneHotSum(circuit, [
                [(lit, tree[k][a] - tree[k][b]) for k, lit in leaves]  # type: ignore[index]
                for leaves, tree in zip(self._leaves, weights)])
        delta = init[a] - init[b]
        if i == a:
            return self._sums[(a, b)].at_least(-delta)
        return -self._sums[(a, b)].at_least(1 - delta)

    def _count(self, atom: tuple[int, int, int], holds: bool) -> list[list[int]]:
        """Clauses of the atom ``Σ_l t_{l,i} + Σ_l ¬t_{l,j} >= k`` (``holds``) or of its
        negation ``<= k-1``, in the chosen cardinality encoding (``k = n + strict``, hard
        votes)."""
        i, j, strict = atom
        k = len(self.forest.trees) + strict
        if all(labels <= {i, j} for labels in self._tree_labels):
            # Every tree votes c_i or c_j, so ``¬t_{l,j} = t_{l,i}`` and the sum is
            # ``2·Σ_l t_{l,i}``: merging the duplicate literals halves the counter.
            lits, k = [row[i] for row in self.vote_vars], -(-k // 2)
        else:
            lits = [row[i] for row in self.vote_vars] + [-row[j] for row in self.vote_vars]
        enc = ENCODINGS[self.encoding]
        with interruptible():  # PySAT's encoders catch SIGINT too
            if holds:
                return CardEnc.atleast(lits, k, vpool=self._pool, encoding=enc).clauses
            return CardEnc.atmost(lits, k - 1, vpool=self._pool, encoding=enc).clauses

    def _goal_cnf(self, goal: int) -> list[list[int]]:
        """The clauses for the enumerations of one goal literal ``r_c`` or ``¬r_c``: the feature
        and tree clauses with ``R^c`` (a conjunction of atoms) or ``¬R^c`` (a disjunction of
        negated atoms, one selector each) as unreified cardinality constraints (soft votes:
        the pairs' adders, and the atoms' literals as units or one clause). Built once per
        goal; leaner than the reified encoding, so the enumeration's many calls run faster."""
        if goal not in self._goal_clauses:
            c = self.class_vars.index(abs(goal))
            clauses = self.clauses[:self._base_len]
            atoms = self._atoms[c]
            if self.forest.voting == "soft":
                # The pairs' sums and comparators are definitions (both directions): the goal
                # asserts the comparisons' literals, or denies one of them.
                for i, j, _ in atoms:
                    clauses.extend(self._sums[(min(i, j), max(i, j))].circuit.clauses)
                literals = [self._atom_literal(atom) for atom in atoms]
                if goal > 0:
                    clauses.extend([lit] for lit in literals)
                else:
                    clauses.append([-lit for lit in literals])
            elif goal > 0:
                for atom in atoms:
                    clauses.extend(self._count(atom, True))
            else:
                selectors = [self._pool.id(("not", c, atom)) for atom in atoms]
                for sel, atom in zip(selectors, atoms):
                    clauses.extend([-sel] + clause for clause in self._count(atom, False))
                clauses.append(selectors)  # empty (unsatisfiable) when R^c is valid
            self._goal_clauses[goal] = clauses
        return self._goal_clauses[goal]

    # -- primitive queries ------------------------------------------------------------------

    def _solve(self, solver: Solver, assumptions: Sequence[int] = ()) -> bool:
        """``solver.solve(assumptions)``. Ctrl-C inside it raises KeyboardInterrupt; PySAT leaves
        that solver unusable, so the oracle's own solver is replaced (an enumeration's solver is
        dropped by the enumeration)."""
        try:
            with interruptible():
                return solver.solve(assumptions=list(assumptions))
        except KeyboardInterrupt:
            if solver is self._solver:
                self._solver = Solver(name=self.solver_name, bootstrap_with=self.clauses)
            for goal, kept in list(self._goal_solvers.items()):
                if kept is solver:
                    del self._goal_solvers[goal]
            raise

    def _model(self, assumptions: list[int]) -> list[int] | None:
        """A model under the assumptions, or None when they are unsatisfiable."""
        if self._solve(self._solver, assumptions):
            return self._solver.get_model()
        return None

    def _fix(self, x: Sequence[int], features: Iterable[int]) -> list[int]:
        """Assumptions fixing the given features to the instance's states."""
        return [self._state_vars[f][x[f]] for f in features]

    def _term(self, term: Term) -> list[int]:
        """Assumptions asserting every literal ``X ∈ S`` of a term: the two order literals
        of an interval of states, else the states outside ``S`` false."""
        out = []
        for f, mask in term:
            blocks = list(mask_blocks(mask))
            if len(blocks) == 1:
                out.extend(self._interval(f, *blocks[0]))
            else:
                out.extend(-v for s, v in enumerate(self._state_vars[f]) if not mask >> s & 1)
        return out

    def _states(self, model: list[int]) -> Instance:
        """The model's world."""
        return tuple(next(s for s, v in enumerate(row) if model[v - 1] > 0)
                     for row in self._state_vars)

    def _diff(self, model: list[int], x: Sequence[int]) -> frozenset[int]:
        """Features on which the model's world differs from ``x``."""
        return frozenset(f for f, row in enumerate(self._state_vars) if model[row[x[f]] - 1] < 0)

    def _freeing(self, x: Sequence[int], freed: Iterable[int], goal: int) -> list[int] | None:
        """A model whose world differs from ``x`` only on ``freed`` and satisfies the goal
        literal, or None."""
        free = set(freed)
        rest = [f for f in range(self.n_features) if f not in free]
        return self._model(self._fix(x, rest) + [goal])

    def _allows(self, x: Sequence[int], freed: Iterable[int], goal: int) -> bool:
        """Some world that differs from ``x`` only on ``freed`` satisfies the goal literal."""
        return self._freeing(x, freed, goal) is not None

    def _cache_of(self, x: Instance) -> dict[Any, Any]:
        """The result cache of ``x``; it is emptied when another instance comes."""
        if x != self._cache_owner:
            self._cache_owner, self._cache = x, {}
        return self._cache

    def _check_instance(self, x: Sequence[int]) -> Instance:
        x = tuple(x)
        if len(x) != self.n_features or any(
                not 0 <= s < f.n_states for s, f in zip(x, self.forest.features)):
            raise InputError(f"instance {x!r} does not fit the forest's features")
        return x

    def _check_items(self, items: Sequence[Literal]) -> None:
        """Literals on distinct known features with proper state sets."""
        seen = set()
        for f, mask in items:
            if not 0 <= f < self.n_features or f in seen:
                raise InputError(f"literal on feature {f}: unknown or repeated feature")
            if not 0 < mask < self.forest.features[f].full:
                raise InputError(f"literal ({f}, {mask:#b}) is not a proper state set")
            seen.add(f)

    def _classify(self, x: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Votes and the classes ``x`` belongs to, read from the model of the fixed world."""
        x = self._check_instance(x)
        cache = self._cache_of(x)
        if "classes" not in cache:
            model = self._model(self._fix(x, range(self.n_features)))
            assert model is not None, "every world satisfies the encoding"
            if self.forest.voting == "soft":  # init and the weights of the leaves reached
                sums = list(self.forest.int_init)
                for leaves, weights in zip(self._leaves, self.forest.int_weights):
                    k = next(k for k, lit in leaves if model[lit - 1] > 0)
                    for i, w in enumerate(weights[k]):  # type: ignore[arg-type]
                        sums[i] += w
                votes = tuple(sums)
            else:
                votes = tuple(sum(model[row[i] - 1] > 0 for row in self.vote_vars)
                              for i in range(len(self.forest.classes)))
            member = tuple(i for i, r in enumerate(self.class_vars) if model[r - 1] > 0)
            cache["classes"] = (votes, member)
        return cache["classes"]

    def votes(self, x: Sequence[int]) -> tuple[int, ...]:
        """``v_i(x)`` for every class."""
        return self._classify(x)[0]

    def classes_of(self, x: Sequence[int]) -> tuple[int, ...]:
        """All classes ``c`` with ``x ⊨ R^c``."""
        return self._classify(x)[1]

    def decision(self, x: Sequence[int]) -> int:
        """The first class with most votes (under ``first`` and ``all`` the first class ``c``
        with ``x ⊨ R^c``); Δ is ``R^decision``."""
        votes = self.votes(x)
        return votes.index(max(votes))

    def member(self, x: Sequence[int], c: int) -> bool:
        """``x ⊨ R^c``, by a SAT call with ``x`` and ``r_c`` assumed."""
        x = self._check_instance(x)
        return self._model(self._fix(x, range(self.n_features)) + [self._class_var(c)]) is not None

    def _class_var(self, c: int) -> int:
        """The selector ``r_c`` of a class index."""
        if not 0 <= c < len(self.class_vars):
            raise InputError(f"unknown class index {c}")
        return self.class_vars[c]

    def _not_delta(self, x: Sequence[int]) -> int:
        """The literal ``¬r_d`` asserting ``¬Δ`` for the decision ``d`` on ``x``."""
        return -self.class_vars[self.decision(x)]

    def _escape(self, x: Sequence[int], term: Term) -> list[int] | None:
        """A model of the term and ``¬Δ``, or None when ``term ⊨ Δ`` (on ``¬Δ``'s own solver,
        whose lean CNF answers these calls faster than the reified one)."""
        x = self._check_instance(x)
        solver = self._goal_solver(x, self._not_delta(x))
        return solver.get_model() if self._solve(solver, self._term(term)) else None

    def _implies(self, x: Sequence[int], term: Term) -> bool:
        """``term ⊨ Δ``: no world satisfies the term and ``¬Δ``."""
        return self._escape(x, term) is None

    # -- checks of given items --------------------------------------------------------------

    def check_sr(self, x: Sequence[int], term: Term) -> dict[str, bool]:
        """SR check. ``sufficient``: every world satisfying the term is in Δ (for
        instance literals: every world agreeing with x on vars(term)); ``minimal``: sufficient
        and no literal can be dropped keeping it sufficient (sufficiency is monotone, so dropping
        one literal at a time suffices)."""
        x = self._check_instance(x)
        self._check_items(term)
        features = [f for f, _ in term]
        if all(mask == 1 << x[f] for f, mask in term):
            sufficient = self._blocks(x, features)
            minimal = sufficient and not any(self._blocks(x, features[:k] + features[k + 1:])
                                             for k in range(len(features)))
            return {"sufficient": sufficient, "minimal": minimal}
        sufficient = self._implies(x, term)
        minimal = sufficient and not any(
            self._implies(x, term[:k] + term[k + 1:]) for k in range(len(term)))
        return {"sufficient": sufficient, "minimal": minimal}

    def _check_freer(self, x: Sequence[int], clause: Clause, goal: int,
                     minimal: bool = True) -> tuple[bool, bool]:
        """Instance literals whose features free ``goal``; and (when asked) minimality of that
        set."""
        self._check_items(clause)
        simple = all(mask == 1 << x[f] for f, mask in clause)
        features = [f for f, _ in clause]
        chosen = set(features)
        others = [f for f in range(self.n_features) if f not in chosen]
        holds = simple and not self._blocks(x, others, goal)
        return holds, minimal and holds and all(self._blocks(x, others + [f], goal)
                                                for f in features)

    def check_nr(self, x: Sequence[int], clause: Clause) -> dict[str, bool]:
        """NR check. ``necessary``: the literals are instance literals and some world
        differing from x only on vars(clause) is not in Δ (CR ⊨ clause); ``minimal``: necessary
        and no strict subset of its features is (monotone: one feature at a time suffices)."""
        x = self._check_instance(x)
        necessary, minimal = self._check_freer(x, clause, self._not_delta(x))
        return {"necessary": necessary, "minimal": minimal}

    def check_ce(self, x: Sequence[int], t: int, clause: Clause) -> dict[str, bool]:
        """CE check. ``reaches``: instance literals, and changing only vars(clause)
        can put x into ``R^t``; ``minimal``: reaches and no strict subset of its features does."""
        x = self._check_instance(x)
        reaches, minimal = self._check_freer(x, clause, self._class_var(t))
        return {"reaches": reaches, "minimal": minimal}

    def reaches(self, x: Sequence[int], t: int, clause: Clause) -> bool:
        """:meth:`check_ce`'s ``reaches`` alone (one call at most, none once known)."""
        x = self._check_instance(x)
        return self._check_freer(x, clause, self._class_var(t), minimal=False)[0]

    def freeing_world(self, x: Sequence[int], features: Iterable[int],
                      target: int | None = None) -> Instance | None:
        """A world that differs from ``x`` only on ``features`` and leaves Δ (``target``
        None) or is in ``R^target``: the witness of a necessary reason or of a contrastive
        explanation that reaches; None when there is none."""
        x = self._check_instance(x)
        goal = self._not_delta(x) if target is None else self._class_var(target)
        model = self._freeing(x, features, goal)
        return None if model is None else self._states(model)

    def _widen(self, x: Sequence[int], term: Term) -> Term:
        """``τ'``: every literal widened by the instance's state (full literals dropped).

        ``τ ⊨ GR`` iff ``τ' ⊨ Δ``: the union of ``GBox(w)`` over the models ``w`` of τ is the
        model set of ``τ'`` (GR)."""
        out = []
        for f, mask in term:
            wide = mask | 1 << x[f]
            if wide != self.forest.features[f].full:
                out.append((f, wide))
        return tuple(out)

    def check_gsr(self, x: Sequence[int], term: Term) -> dict[str, bool]:
        """GSR check of one term: :meth:`check_gsrs` of ``[term]``."""
        return self.check_gsrs(x, [term])[0]

    def check_gsrs(self, x: Sequence[int], terms: Sequence[Term]) -> list[dict[str, bool]]:
        """GSR checks, one verdict per term. ``valid``: implicant of GR; ``prime``: valid and
        no one-state widening (a literal that becomes full is dropped) is an implicant —
        implicants are closed under strengthening, so one step suffices; ``variable_minimal``:
        no prime implicant of GR mentions a strict subset of its features (whether or not the
        term is one: each verdict is its own property, so a failure is counted once) — one
        exists iff the instance literals on that subset imply Δ, which is monotone, so dropping
        one feature at a time suffices. A term is a GSR iff all three hold.

        The terms are checked together per feature set, since a large forest's instance can
        have tens of thousands of GSRs: validity one SAT call each (:meth:`_invalid`),
        primality by escapes shared between the terms (:meth:`_unwidenable`),
        variable-minimality once per feature set."""
        x = self._check_instance(x)
        for term in terms:
            self._check_items(term)
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, term in enumerate(terms):
            groups.setdefault(tuple(f for f, _ in term), []).append(i)
        out: list[dict[str, bool]] = [{} for _ in terms]
        for features, members in groups.items():
            # Neighbouring terms in turn: the solver's learnt clauses and the escapes found for
            # one serve the next (new-thyroid's two largest instances: 23 s, not 27 s).
            members.sort(key=lambda i: terms[i])
            minimal = not any(self._blocks(x, features[:k] + features[k + 1:])
                              for k in range(len(features)))
            group = [terms[i] for i in members]
            invalid = self._invalid(x, group)
            # A literal without x's state is not prime: adding that state changes no widening.
            candidates = [r for r, term in enumerate(group) if r not in invalid
                          and all(mask >> x[f] & 1 for f, mask in term)]
            prime = set(candidates) - self._unwidenable(x, features,
                                                        [group[r] for r in candidates],
                                                        candidates)
            for r, i in enumerate(members):
                out[i] = {"valid": r not in invalid, "prime": r in prime,
                          "variable_minimal": minimal}
        return out

    def _invalid(self, x: Instance, terms: Sequence[Term]) -> set[int]:
        """The indices of the terms that are not implicants of GR: ``τ ⊨ GR`` iff its widening
        ``τ' ⊨ Δ`` (:meth:`_widen`), one call each on ``¬Δ``'s solver; the world of a model is
        kept as an escape. (One call for the union of the terms' boxes is slower: on
        new-thyroid's 64,736 GSRs of one instance, 252 s against 10 s; docs/decisions.md.)"""
        invalid = set()
        for r, term in enumerate(terms):
            model = self._escape(x, self._widen(x, term))
            if model is not None:
                invalid.add(r)
                self._escape_box(x, self._states(model))
        return invalid

    def _unwidenable(self, x: Instance, features: tuple[int, ...], terms: Sequence[Term],
                     ids: Sequence[int]) -> set[int]:
        """The ids of the terms (valid ones on ``features``, every literal with x's state) that
        some one-state widening leaves an implicant of GR.

        Widening literal ``k`` by a state ``s`` it lacks leaves an implicant iff no world
        with ``s`` there, inside the other literals widened by x's states, is outside Δ. An
        *escape box* (a box of worlds outside Δ) meeting the other widened literals answers
        for every state it holds on ``k``. The escape boxes x's checks have found are kept
        (:class:`_Witnesses`, 0/1 matrices: a batch of terms against all boxes is a few
        matrix products); for each literal's states still open one SAT call asks for a new
        escape among them, kept as two boxes: where the trees vote alike around it
        (:meth:`_escape_box`) and the line of worlds with another state on ``k`` that leave Δ
        (:meth:`_escape_line`). A term is unwidenable at ``k`` when no escape exists."""
        cache = self._cache_of(x)
        sizes = [self.forest.features[f].n_states for f in features]
        witnesses = cache.setdefault(("witnesses", features), _Witnesses(features, sizes))
        escapes = cache.setdefault("escapes", [])
        out: set[int] = set()
        for start in range(0, len(terms), _BATCH):
            batch = terms[start:start + _BATCH]
            witnesses.take(escapes)
            known = len(escapes)
            wide = [np.array([_bits(term[j][1] | 1 << x[f], n) for term in batch],
                             dtype=np.float32) for j, (n, f) in enumerate(zip(sizes, features))]
            meets = [witnesses.rows(j) @ wide[j].T > 0 for j in range(len(features))]
            for k, f in enumerate(features):
                inside = np.ones(meets[0].shape, dtype=bool)
                for j in range(len(features)):
                    if j != k:
                        inside &= meets[j]
                covered = witnesses.rows(k).T @ inside.astype(np.float32) > 0
                for r, term in enumerate(batch):
                    if ids[start + r] in out:
                        continue
                    lacking = self.forest.features[f].full & ~term[k][1]
                    open_states = lacking & ~_mask(covered[:, r])
                    if open_states and not self._escapes_found(x, term, k, open_states, known):
                        out.add(ids[start + r])
        return out

    def _escapes_found(self, x: Instance, term: Term, k: int, open_states: int,
                       known: int) -> bool:
        """Every open state of literal ``k`` has an escape: first the escape boxes found since
        the ``known`` first, then new ones by SAT calls; False when none is left to find."""
        f = term[k][0]
        rest = self._widen(x, term[:k] + term[k + 1:])
        escapes = self._cache_of(x)["escapes"]
        while open_states:
            for box in escapes[known:]:
                if all(box[g] & mask for g, mask in rest):
                    open_states &= ~box[f]
            known = len(escapes)
            if not open_states:
                break
            model = self._escape(x, rest + ((f, open_states),))
            if model is None:
                return False
            w = self._states(model)
            self._escape_box(x, w)
            self._escape_line(x, w, f)
        return True

    def _blocks(self, x: Instance, features: Iterable[int], goal: int | None = None) -> bool:
        """Fixing ``features`` to x's states makes the goal literal (default ``¬Δ``)
        unsatisfiable. Blocking is monotone in the features, so what x's earlier calls proved
        decides first: a known blocker inside the set blocks it, a known freer outside it frees
        it (:class:`_Family`). Otherwise one call on the goal's own solver (its leaner CNF,
        :meth:`_goal_cnf`, with x's states as preferred phases so that models change few
        features); an UNSAT answer is kept as the blocker its core names, a model as the
        freer of the features its box (:func:`path_box`) leaves x's states on; the escape
        boxes of :meth:`_escape_box` are freers of ``¬Δ`` too. Verifying a family of reasons
        then takes about one call per item: a true NR's minimality is shown by the SRs that
        meet it in one feature, and so on."""
        goal = self._not_delta(x) if goal is None else goal
        fixed = 0
        for f in features:
            fixed |= 1 << f
        cache = self._cache_of(x)
        blockers = cache.setdefault(("blockers", goal), _Family(self.n_features))
        freers = cache.setdefault(("freers", goal), _Family(self.n_features))
        if blockers.has_inside(fixed):
            return True
        if freers.outside(fixed) is not None:
            return False
        solver = self._goal_solver(x, goal)
        fix = self._fix(x, range(self.n_features))
        if self._solve(solver, [fix[f] for f in bits(fixed)]):
            # The features the world's box (where the trees vote alike) leaves x's states on:
            # a freer as small as that world shows.
            _, box = path_box(self.forest, self._states(solver.get_model()))
            freers.add(self._moved(x, box))
            return False
        core = set(solver.get_core() or ())
        blockers.add(sum(1 << f for f in bits(fixed) if fix[f] in core))
        return True

    def _goal_solver(self, x: Instance, goal: int) -> Solver:
        """The solver kept for a goal literal, its preferred phases set to x's states."""
        goal = self._shared_goal(goal)
        if goal not in self._goal_solvers:
            self._goal_solvers[goal] = Solver(name=self.solver_name,
                                              bootstrap_with=self._goal_cnf(goal))
        solver = self._goal_solvers[goal]
        solver.set_phases(self._fix(x, range(self.n_features)))
        return solver

    def _escape_box(self, x: Instance, w: Instance) -> None:
        """Keeps the box of worlds voting as the world ``w`` a model of ``¬Δ`` gave
        (:func:`path_box`) among x's escapes. The trees' votes at ``w`` are counted: a model
        that is in Δ by them is an inconsistency of the encoding, raised rather than believed."""
        votes, box = path_box(self.forest, w)
        # Python ints: soft sums can leave int64 (and numpy would make such a list float64).
        if member_grid(np.array(votes, dtype=object), self.decision(x), self.ties):
            raise AssertionError(f"SAT oracle: the model {w} of ¬Δ has votes {votes}, in Δ")
        self._keep_escape(x, box)

    def _escape_line(self, x: Instance, w: Instance, f: int) -> None:
        """Keeps, among x's escapes, the box of the worlds equal to the escape ``w`` but on
        feature ``f``, with the states there that leave Δ (one line of votes, counted per atom
        by :class:`~rfcircuits.crosscheck.oracles.slices.Slice`)."""
        line = Slice(self.forest, w, (f,), self.decision(x), self.ties)
        out = 0
        for atom, inside in zip(line.atoms[0], line.delta):
            if not inside:
                out |= atom
        if not out >> w[f] & 1:
            raise AssertionError(f"SAT oracle: the model {w} of ¬Δ is in Δ by its votes")
        self._keep_escape(x, tuple(out if g == f else 1 << s for g, s in enumerate(w)))

    def _keep_escape(self, x: Instance, box: tuple[int, ...]) -> None:
        """A box of worlds outside Δ, kept for the GSR checks (:meth:`_unwidenable`) and as a
        freer of ``¬Δ`` (:meth:`_blocks`)."""
        cache = self._cache_of(x)
        cache.setdefault("escapes", []).append(box)
        cache.setdefault(("freers", self._not_delta(x)), _Family(self.n_features)).add(
            self._moved(x, box))

    def _moved(self, x: Instance, box: tuple[int, ...]) -> int:
        """The features on which a box misses x's state (a bitmask): the box's worlds change
        x there, and nowhere else need they."""
        return sum(1 << g for g in range(self.n_features) if not box[g] >> x[g] & 1)

    def _narrowings(self, x: Sequence[int], clause: Clause
                    ) -> Iterable[tuple[Clause, tuple[int, int] | None]]:
        """Clauses one state stronger (a literal that becomes empty is dropped), each with the
        removed ``(feature, state)`` when only the worlds taking that state need examining: the
        given clause is an implicate whenever this is asked, and its other falsifying
        assignments already have escapes (:meth:`_gr_implicate`). Removing the instance's state
        drops the literal from the test, so that case is checked in full."""
        for k, (f, mask) in enumerate(clause):
            for s in range(self.forest.features[f].n_states):
                if mask >> s & 1:
                    narrow = mask & ~(1 << s)
                    stronger = clause[:k] + (((f, narrow),) if narrow else ()) + clause[k + 1:]
                    yield stronger, (None if s == x[f] else (f, s))

    def _gr_implicate(self, x: Sequence[int], clause: Clause,
                      pinned: tuple[int, int] | None = None) -> bool:
        """``GR ⊨ clause`` (:meth:`_gr_violation` finds no world)."""
        return self._gr_violation(x, clause, pinned) is None

    def _gr_violation(self, x: Sequence[int], clause: Clause,
                      pinned: tuple[int, int] | None = None) -> Instance | None:
        """A world of GR falsifying the clause, or None when ``GR ⊨ clause``, by
        counter-example guided search.

        Literals missing the instance's state can be dropped without changing the answer (the
        models of GR are closed under moving a feature back to x; see the lemma of the
        brute-force oracle). For the rest, with ``V`` = vars(clause): the clause is an implicate
        iff every assignment ``a`` of ``V`` falsifying it has a world ``b ∉ Δ`` with
        ``b[X] ∈ {a[X], x[X]}`` on ``V`` and ``b = x`` elsewhere. A second solver proposes
        falsifying assignments ``a``; each escape ``b`` found, with the set ``S`` of features
        where ``b = a`` shrunk to a minimal one, rules out every ``a'`` agreeing with ``a`` on
        ``S``. The clause is an implicate iff the proposals run out. With ``pinned = (X, s)`` only
        the assignments with ``a[X] = s`` are examined (enough when the clause with ``s`` added
        to the literal on ``X`` is known to be an implicate). The world returned is ``a`` on
        ``V`` and x elsewhere: it falsifies the literals dropped too, since they miss x's state.
        """
        lits = [(f, m) for f, m in clause if m >> x[f] & 1]
        if not lits:  # x falsifies the clause: a violation if x ⊨ GR, i.e. x ⊨ Δ (not when
            # x ties under ``strict``: GR is then empty, every clause an implicate)
            return tuple(x) if self.decision(x) in self.classes_of(x) else None
        features = [f for f, _ in lits]
        base = self._fix(x, [f for f in range(self.n_features) if f not in features])
        base.append(self._not_delta(x))
        pool = IDPool()
        choice: dict[int, tuple[int, int]] = {}
        with Solver(name=self.solver_name) as proposer:
            for f, mask in lits:
                options = [pool.id((f, s)) for s in range(self.forest.features[f].n_states)
                           if not mask >> s & 1]
                choice.update((v, pool.obj(v)) for v in options)
                with interruptible():
                    proposer.append_formula(CardEnc.equals(options, 1, vpool=pool).clauses)
            if pinned is not None:
                proposer.add_clause([pool.id(pinned)])
            while self._solve(proposer):
                a = dict(choice[v] for v in proposer.get_model() if v in choice)
                model = self._model(base + self._boxes(x, a, features))
                if model is None:  # GBox(a) ⊆ Δ: a falsifies the clause and satisfies GR
                    return tuple(a.get(f, s) for f, s in enumerate(x))
                moved = [f for f in features if model[self.state_var(f, x[f]) - 1] < 0]
                for f in list(moved):
                    if f not in moved:
                        continue
                    trial = [g for g in moved if g != f]
                    again = self._model(base + self._boxes(x, a, trial)
                                        + self._fix(x, [g for g in features if g not in trial]))
                    if again is not None:
                        moved = [g for g in trial if again[self.state_var(g, x[g]) - 1] < 0]
                proposer.add_clause([-pool.id((f, a[f])) for f in moved])
        return None

    def _boxes(self, x: Sequence[int], a: dict[int, int], features: Iterable[int]) -> list[int]:
        """Assumptions restricting each feature to ``{a[X], x[X]}``."""
        return [-v for f in features for s, v in enumerate(self._state_vars[f])
                if s != a[f] and s != x[f]]

    def check_gnr(self, x: Sequence[int], clause: Clause) -> dict[str, bool]:
        """GNR check. ``valid``: implicate of GR; ``prime``: valid and no one-state
        narrowing (a literal that becomes empty is dropped) is an implicate — implicates are
        closed under weakening, so one step suffices; ``variable_minimal``: no prime implicate
        of GR mentions a strict subset ``V'`` of its features (whether or not the clause is
        one) — one exists iff some world differing from x only on ``V'`` is outside Δ, which is
        monotone, so dropping one feature at a time suffices. The clause is a GNR iff all three
        hold.

        The verdicts depend only on the worlds agreeing with x outside the clause's features, which
        :class:`~rfcircuits.crosscheck.oracles.slices.Slice` tables by counting votes (once per
        instance and feature set); a slice too large for that is searched by a counter-example loop
        over falsifying assignments (:meth:`_gr_implicate`), exponential in the worst case. Verdicts
        are kept per instance (a shortest flip is a GNR checked again).
        """
        x = self._check_instance(x)
        self._check_items(clause)
        cache = self._cache_of(x)
        if ("gnr", clause) not in cache:
            grid = self._slice(x, tuple(f for f, _ in clause))
            cache[("gnr", clause)] = self._gnr_by_search(x, clause) if grid.delta is None \
                else gnr_verdicts(grid, clause)
        return dict(cache[("gnr", clause)])

    def _slice(self, x: Instance, features: tuple[int, ...]) -> Slice:
        """x's slice on the features, kept per instance (``delta`` None: too large)."""
        cache = self._cache_of(x)
        if ("slice", features) not in cache:
            cache[("slice", features)] = Slice(self.forest, x, features, self.decision(x),
                                               self.ties, self.max_slice_cells)
        return cache[("slice", features)]

    def gnr_tabled(self, x: Sequence[int], features: Iterable[int]) -> bool:
        """:meth:`check_gnr` on a clause over ``features`` (in order) reads a table, rather than
        searching for counterexamples (whose cost can explode)."""
        return self._slice(self._check_instance(x), tuple(features)).delta is not None

    def _gnr_by_search(self, x: Instance, clause: Clause) -> dict[str, bool]:
        """:meth:`check_gnr` on a slice too large to table, by counter-example search."""
        valid = self._gr_implicate(x, clause)
        prime = valid and not any(self._gr_implicate(x, stronger, pinned)
                                  for stronger, pinned in self._narrowings(x, clause))
        features = [f for f, _ in clause]
        not_delta = self._not_delta(x)
        variable_minimal = not any(
            self._allows(x, features[:k] + features[k + 1:], not_delta)
            for k in range(len(features)))
        return {"valid": valid, "prime": prime, "variable_minimal": variable_minimal}

    def check_flip(self, x: Sequence[int], clause: Clause,
                   robustness: int | None) -> dict[str, bool]:
        """Shortest-flip check: ``valid`` iff the clause is a GNR (all three
        :meth:`check_gnr` verdicts hold); ``shortest`` iff it mentions exactly ``robustness``
        features — the robustness the caller states (``None``, no flip, makes it False)."""
        verdict = self.check_gnr(x, clause)
        return {"valid": all(verdict.values()),
                "shortest": robustness is not None and len(clause) == robustness}

    def counterexample(self, x: Sequence[int], kind: str, item: Term,
                       target: int | None = None) -> Instance | None:
        """A world refuting the first verdict of the item's check that fails, when a single
        world can; None when every verdict holds or the first failing one is refuted by no
        world (an item that cannot free at all: no world exists; a term or clause that is not
        prime or minimal: the refutation is a smaller item). ``kind`` (a ``--what`` key):

        - ``sr``, ``gsr``: a world satisfying the term — for ``gsr`` the term widened by x's
          states (:meth:`_widen`), which is the term itself when every literal holds x's state,
          as a GSR's do — outside Δ: the term is not sufficient (not valid);
        - ``nr``, ``ce`` (``target`` needed): a world differing from x only on a strict subset
          of the clause's features that leaves Δ (reaches ``R^target``): not minimal;
        - ``gnr``: a world falsifying the clause (every literal missing the world's state)
          whose ``GBox`` lies in Δ, so it keeps the decision: not an implicate of GR; when it
          is one but not variable-minimal, a world as for ``nr``.

        The worlds come from the models the checks compute; a caller can confirm one by
        counting the trees' votes at it."""
        x = self._check_instance(x)
        self._check_items(item)
        if kind in ("sr", "gsr"):
            model = self._escape(x, self._widen(x, item) if kind == "gsr" else item)
            return None if model is None else self._states(model)
        if kind not in ("nr", "ce", "gnr"):
            raise InputError(f"counterexample: unknown kind {kind!r} (sr, nr, ce, gsr, gnr)")
        if kind == "ce" and target is None:
            raise InputError("counterexample: a contrastive clause needs its target class")
        goal = self._class_var(target) if kind == "ce" and target is not None \
            else self._not_delta(x)
        features = [f for f, _ in item]
        if kind == "gnr":
            world = self._gr_violation(x, item)
            if world is not None or not self.check_gnr(x, item)["prime"]:
                return world  # None: not prime, refuted by a stronger clause
        elif not all(mask == 1 << x[f] for f, mask in item) or not self._allows(x, features, goal):
            return None
        for k in range(len(features)):
            model = self._freeing(x, features[:k] + features[k + 1:], goal)
            if model is not None:
                return self._states(model)
        return None

    # -- enumeration ------------------------------------------------------------------------

    def _freers(self, x: Instance, goal: int, most: int | None = None) -> list[frozenset[int]]:
        """All minimal freers of ``goal`` at ``x``, by increasing size (module docstring);
        with ``most``, only those of at most ``most`` features."""
        goal = self._shared_goal(goal)
        cache = self._cache_of(x)
        if goal in cache:
            return [v for v in cache[goal] if most is None or len(v) <= most]
        key = (goal, most)
        if most is not None and key in cache:
            return cache[key]
        found: list[frozenset[int]] = []
        with Solver(name=self.solver_name, bootstrap_with=self._goal_cnf(goal)) as solver:
            if self._solve(solver, self._fix(x, range(self.n_features))):
                found.append(frozenset())  # x itself satisfies the goal
            elif self._solve(solver):
                changed = [-row[x[f]] for f, row in enumerate(self._state_vars) if len(row) > 1]
                # The counter's variables lie above the pool's; this solver alone uses them.
                with interruptible(), ITotalizer(lits=changed, ubound=len(changed),
                                                 top_id=self._pool.top) as counter:
                    solver.append_formula(counter.cnf.clauses)
                    rhs = counter.rhs
                for k in range(1, min(len(changed), most or len(changed)) + 1):
                    bound = [-rhs[k]] if k < len(changed) else []
                    while self._solve(solver, bound):
                        freer = self._diff(solver.get_model(), x)
                        found.append(freer)
                        solver.add_clause(self._fix(x, sorted(freer)))
                    core = solver.get_core()
                    if not bound or core is None or bound[0] not in core:
                        break  # unsatisfiable whatever the bound: no freer is left
        cache[goal if most is None else key] = found
        return found

    def shortest_nr_sets(self, x: Sequence[int]) -> list[frozenset[int]]:
        """The feature sets of the shortest NRs (size :meth:`robustness`), without the
        others: what the shortest flips are on."""
        x = self._check_instance(x)
        r = self.robustness(x)
        return [] if r is None else self._freers(x, self._not_delta(x), r)

    def _shared_goal(self, goal: int) -> int:
        """The goal literal the fresh solvers use: with ``first`` ties and two classes
        ``R^1 = ¬R^0``, so goals on ``r_1`` become goals on ``r_0`` (one CNF serves both)."""
        if self.ties == "first" and len(self.class_vars) == 2 and abs(goal) == self.class_vars[1]:
            return -self.class_vars[0] if goal > 0 else self.class_vars[0]
        return goal

    def _blockers(self, x: Instance, goal: int) -> list[frozenset[int]]:
        """All minimal blockers of ``goal`` at ``x``: the minimal hitting sets of the minimal
        freers (module docstring)."""
        freers = self._freers(x, goal)
        if not freers:
            return [frozenset()]  # the goal is unsatisfiable: nothing needs fixing
        if freers == [frozenset()]:
            return []  # x satisfies the goal: no fixing blocks it
        with Hitman(bootstrap_with=[sorted(w) for w in freers], solver="mgh",
                    htype="sat") as hitman, interruptible():
            return [frozenset(h) for h in hitman.enumerate()]

    def _simple(self, x: Sequence[int], sets: Iterable[frozenset[int]]) -> tuple[Term, ...]:
        """Canonical terms/clauses of instance literals on each feature set."""
        return Explanation.sets(tuple((f, 1 << x[f]) for f in sorted(v)) for v in sets)

    def sufficient_reasons(self, x: Sequence[int]) -> tuple[Term, ...]:
        """All SRs: minimal feature sets whose fixing to x forces Δ; ``((),)`` when Δ is valid."""
        x = self._check_instance(x)
        return self._simple(x, self._blockers(x, self._not_delta(x)))

    def necessary_reasons(self, x: Sequence[int]) -> tuple[Clause, ...]:
        """All NRs: minimal feature sets whose change can leave Δ; ``()`` when Δ is valid."""
        x = self._check_instance(x)
        return self._simple(x, self._freers(x, self._not_delta(x)))

    def contrastive(self, x: Sequence[int], t: int) -> tuple[Clause, ...]:
        """All CEs for target class ``t``: minimal ``V`` such that changing ``V`` can put x
        into ``R^t``; ``()`` when no world is in ``R^t``. CEs are defined only for
        ``x ⊭ R^t``; otherwise the definition is applied as is and gives ``((),)``."""
        x = self._check_instance(x)
        return self._simple(x, self._freers(x, self._class_var(t)))

    def robustness(self, x: Sequence[int]) -> int | None:
        """Minimum number of features whose change leaves Δ, by MaxSAT (RC2): the
        encoding and ``¬Δ`` are hard, "feature keeps its state" is soft with weight 1. ``None``
        when Δ is valid (no flip exists)."""
        x = self._check_instance(x)
        cache = self._cache_of(x)
        if "robustness" not in cache:
            wcnf = WCNF()
            wcnf.extend(self.clauses)
            wcnf.append([self._not_delta(x)])
            for row, s in zip(self._state_vars, x):
                if len(row) > 1:
                    wcnf.append([row[s]], weight=1)
            with RC2(wcnf, solver=self.solver_name) as rc2, interruptible():
                cache["robustness"] = None if rc2.compute() is None else rc2.cost
        return cache["robustness"]

    def explain(self, x: Sequence[int], what: Sequence[str] = ("sr", "nr", "ce", "robust")
                ) -> Explanation:
        """The explanation with the requested fields, all among :attr:`SUPPORTS`."""
        x = self._check_instance(x)
        unsupported = sorted(set(what) - self.SUPPORTS)
        if unsupported:
            raise NotImplementedError(
                f"the SAT oracle enumerates only {', '.join(sorted(self.SUPPORTS))}, not "
                f"{', '.join(unsupported)}; verify general reasons and flips item by item with "
                "check_gsr, check_gnr and check_flip")
        fields: dict[str, Any] = {}
        if "sr" in what:
            fields["sufficient_reasons"] = self.sufficient_reasons(x)
        if "nr" in what:
            fields["necessary_reasons"] = self.necessary_reasons(x)
        if "ce" in what:
            member = set(self.classes_of(x))
            fields["contrastive"] = tuple((t, self.contrastive(x, t))
                                          for t in range(len(self.forest.classes))
                                          if t not in member)
        if "robust" in what:
            fields["robustness"] = self.robustness(x)
        return Explanation(self.forest, x, self.ties, self.votes(x), self.decision(x),
                           self.classes_of(x), tuple(k for k in ALL_WHAT if k in what), **fields)

    # -- certificate of given SRs and NRs --------------------------------------------------

    def certify_reasons(self, x: Sequence[int], srs: Sequence[Term],
                        nrs: Sequence[Clause]) -> Certificate:
        """Prove that ``srs`` are exactly the SRs of ``x`` and ``nrs`` exactly its NRs
        (docs/semantics.md §5–§6), or find what is wrong, with one SAT call per item and one
        propositional call instead of enumerating them.

        A feature set ``V`` is *sufficient*, ``g(V)``, when fixing ``V`` to x's states makes
        ``¬Δ`` unsatisfiable; ``U`` *frees*, ``h(U)``, when some world differing from x only
        on ``U`` satisfies ``¬Δ``. Both are monotone and ``h(U) = ¬g(complement of U)``; SRs
        are the minimal sufficient sets, NRs the minimal freeing ones. With ``A`` the SRs'
        feature sets and ``B`` the NRs', the checks (:data:`CERTIFICATE_CHECKS`) are:

        - ``sr_well_formed``, ``nr_well_formed``: every item is x's literals in feature order,
          each feature once, and the items strictly increase (canonical order, no duplicates);
          the other checks run only on well-formed items;
        - ``sr_antichain``, ``nr_antichain``: no member of ``A`` (of ``B``) strictly contains
          another (bitsets over the family, :func:`_strict_subset`);
        - ``sr_sufficient``: every ``a ∈ A`` is sufficient (an UNSAT call fixing ``a``);
        - ``nr_frees``: every ``b ∈ B`` frees, by a world changing all of ``b`` (a minimal
          freer is freed only so): a SAT call fixing the features outside ``b`` and assuming
          those of ``b`` off x's states;
        - ``sr_transversals``: every transversal of ``A`` (a set meeting every ``a``)
          contains some ``b ∈ B``: one UNSAT call over a variable ``X_f`` per feature with
          the clauses ``∨_{f∈a} X_f`` and ``∨_{f∈b} ¬X_f``.

        Together they prove ``A`` = SRs and ``B`` = NRs:

        - every SR ``s`` is in ``A``: no ``a ∈ A`` lies inside ``s`` but ``s`` itself (``a`` is
          sufficient and ``s`` minimal), so if ``s ∉ A`` its complement meets every ``a`` and
          contains some ``b ∈ B`` (``sr_transversals``), whose freeing world agrees with x on
          ``s``: ``s`` would not be sufficient;
        - every ``a ∈ A`` is an SR: it is sufficient, so it contains an SR, which is in ``A``,
          hence is ``a`` (``sr_antichain``);
        - every NR ``n`` is in ``B``: ``n`` meets every ``a`` (else ``a`` inside the complement
          of ``n`` would block every world that changes only ``n``), so it contains some
          ``b ∈ B``, which frees, hence is ``n`` (``n`` is minimal);
        - every ``b ∈ B`` is an NR: it frees, so it contains an NR, which is in ``B``, hence is
          ``b`` (``nr_antichain``).

        The dual call (every set meeting all NRs contains an SR) would add nothing. When Δ is
        valid (``A = {∅}``, ``B = {}``) the empty clause of ``∅`` makes the
        propositional call UNSAT.

        A set ``X`` the propositional call finds is diagnosed: ``X`` meets every ``a`` and
        contains no ``b``; either it frees, and a minimal freer inside it is an NR missing from
        ``B``, or its complement is sufficient, and a minimal sufficient set inside that is an
        SR missing from ``A``; the missing item is found by dropping one feature at a time
        (monotonicity).
        """
        x = self._check_instance(x)
        verdicts: dict[str, bool | None] = dict.fromkeys(CERTIFICATE_CHECKS)
        found: dict[str, str] = {}

        def record(check: str, problem: str | None) -> None:
            verdicts[check] = problem is None
            if problem is not None:
                found[check] = problem

        record("sr_well_formed", self._malformed(x, "SR", srs))
        record("nr_well_formed", self._malformed(x, "NR", nrs))
        if found:
            return Certificate(verdicts, found)
        a = [tuple(f for f, _ in term) for term in srs]
        b = [tuple(f for f, _ in clause) for clause in nrs]
        record("sr_antichain", self._nested(x, "SR", a))
        record("nr_antichain", self._nested(x, "NR", b))
        goal = self._shared_goal(self._not_delta(x))
        with Solver(name=self.solver_name, bootstrap_with=self._goal_cnf(goal)) as solver:
            # One solver for both: the clauses learnt refuting the SRs can speed up the NR
            # calls (a fresh solver for them was no better: docs/decisions.md, "Oracles").
            record("sr_sufficient", self._insufficient(solver, x, a))
            record("nr_frees", self._not_freeing(solver, x, b))
            uncovered = self._uncovered(solver, x, a, b)
        record("sr_transversals", None if uncovered is None else uncovered[0])
        missing = None if uncovered is None else (uncovered[1], self._simple(x, [uncovered[2]])[0])
        return Certificate(verdicts, found, missing)

    def missing_contrastive(self, x: Sequence[int], t: int,
                            ces: Sequence[Clause]) -> Clause | None:
        """A CE for target ``t`` missing from ``ces``, or None when every CE is among them;
        every item of ``ces`` must reach ``R^t`` (:meth:`check_ce`'s ``reaches``; minimal or
        not). The certificate: a minimal freer ``F`` of ``R^t`` not given contains no given
        item (one inside it would free, so be ``F``), so the features outside ``F`` meet every
        item, and do not block. Hence the items hold every CE iff every minimal set meeting
        each of them blocks ``R^t``: one UNSAT call per such set, enumerated by
        :class:`~pysat.examples.hitman.Hitman`, and each kept as a blocker (:meth:`_blocks`),
        which then decides the items' minimality without further calls. A set that does not
        block yields a world changing features outside it; a minimal freer inside those
        (shrunk one feature at a time) is missing. When ``x`` is in ``R^t`` (``()`` is given)
        nothing can be missing."""
        x = self._check_instance(x)
        sets = [sorted(f for f, _ in clause) for clause in ces]
        if [] in sets:
            return None
        goal = self._class_var(t)
        everything = set(range(self.n_features))
        with Hitman(bootstrap_with=sets, solver="mgh", htype="sat") as hitman, interruptible():
            for hitting in hitman.enumerate() if sets else iter([[]]):
                if self._blocks(x, hitting, goal):
                    continue
                fixed = sum(1 << f for f in hitting)
                freer = set(bits(self._cache_of(x)[("freers", goal)].outside(fixed)))
                for f in sorted(freer):
                    if not self._blocks(x, everything - freer | {f}, goal):
                        freer.discard(f)
                return self._simple(x, [frozenset(freer)])[0]
        return None

    def _malformed(self, x: Instance, kind: str, items: Sequence[Term]) -> str | None:
        """Why the items are not x's literals in canonical order, or None (``*_well_formed``)."""
        literals = {(f, 1 << s) for f, s in enumerate(x) if self.forest.features[f].n_states > 1}
        for k, item in enumerate(items):
            if not literals.issuperset(item):
                wrong = next(lit for lit in item if lit not in literals)
                return f"{kind} #{k} {item!r}: {wrong!r} is not a literal of x"
            # x's literals, one per feature: strictly increasing literals are strictly
            # increasing features
            if not all(map(operator.lt, item, item[1:])):
                return f"{kind} #{k} {item!r}: features repeat or are out of order"
            if k and items[k - 1] >= item:  # one-state literals: canonical order is tuple order
                how = "repeats" if items[k - 1] == item else "comes after"
                shown = self._shown(x, [f for f, _ in item])
                return f"{kind} #{k - 1} {how} {kind} #{k} {shown}"
        return None

    def _nested(self, x: Instance, kind: str, sets: Sequence[tuple[int, ...]]) -> str | None:
        """A member of the family that strictly contains another, or None (``*_antichain``)."""
        pair = _strict_subset(sets, self.n_features)
        if pair is None:
            return None
        i, j = pair
        return (f"{kind} #{i} {self._shown(x, sets[i])} contains "
                f"{kind} #{j} {self._shown(x, sets[j])}")

    def _insufficient(self, solver: Solver, x: Instance,
                      blockers: Sequence[tuple[int, ...]]) -> str | None:
        """The first set that does not block the solver's goal, or None (``sr_sufficient``).
        One call per set, in a tight loop (tens of thousands on large forests)."""
        fix = self._fix(x, range(self.n_features))
        with interruptible():
            for v in blockers:
                if solver.solve(assumptions=[fix[f] for f in v]):
                    return (f"SR {self._shown(x, v)} is not sufficient: "
                            f"{self._world(solver.get_model(), x)} agrees with it and leaves Δ")
        return None

    def _not_freeing(self, solver: Solver, x: Instance,
                     freers: Sequence[tuple[int, ...]]) -> str | None:
        """The first set such that no world changing exactly its features satisfies the
        solver's goal (it does not free, or a strict subset does), or None (``nr_frees``).
        Asking for exactly (a minimal freer frees only so) saves reading the models."""
        fix = self._fix(x, range(self.n_features))
        with interruptible():
            for v in freers:
                changed = list(fix)  # the features outside v keep x's states, those in v not
                for f in v:
                    changed[f] = -fix[f]
                if not solver.solve(assumptions=changed):
                    break
            else:
                return None
        rest = [fix[f] for f in range(self.n_features) if f not in v]
        if not self._solve(solver, rest):
            return f"NR {self._shown(x, v)} does not free: changing it cannot leave Δ"
        world = self._world(solver.get_model(), x)
        return f"NR {self._shown(x, v)} is not minimal: {world} leaves Δ"

    def _uncovered(self, solver: Solver, x: Instance, srs: Sequence[tuple[int, ...]],
                   nrs: Sequence[tuple[int, ...]]
                   ) -> tuple[str, str, frozenset[int]] | None:
        """A set meeting every SR and containing no NR, in words, with the item its existence
        shows missing (``"sr"`` or ``"nr"`` and its features); None when there is none
        (``sr_transversals``). One propositional call, feature ``f`` the variable ``f + 1``."""
        clauses = [[f + 1 for f in v] for v in srs] + [[-f - 1 for f in v] for v in nrs]
        with Solver(name=DUALITY_SOLVER, bootstrap_with=clauses) as duality:
            if not self._solve(duality):
                return None
            uncovered = frozenset(v - 1 for v in duality.get_model() if v > 0)
        # The complement of such a set is sufficient unless an NR is missing.
        fixed = frozenset(range(self.n_features)) - uncovered
        kind, features = self._missing(solver, x, fixed)
        return (f"the features {self._names(uncovered)} meet every SR and contain no NR, so "
                f"the {kind.upper()} {self._shown(x, features)} is missing", kind, features)

    def _missing(self, solver: Solver, x: Instance, fixed: frozenset[int]
                 ) -> tuple[str, frozenset[int]]:
        """The item that fixing ``fixed`` to x shows missing, as ``"sr"`` or ``"nr"`` and its
        features (the caller knows that no given item fits): when the goal stays satisfiable,
        a minimal freer inside the features the world changes (an NR), else a minimal blocker
        inside ``fixed`` (an SR); both shrunk one feature at a time (monotonicity)."""
        if self._solve(solver, self._fix(x, sorted(fixed))):
            freer = self._diff(solver.get_model(), x)
            for f in sorted(freer):
                if f not in freer:
                    continue
                if self._solve(solver, self._fix(x, [g for g in range(self.n_features)
                                                     if g not in freer or g == f])):
                    freer = self._diff(solver.get_model(), x)
            return "nr", freer
        blocker = set(fixed)
        for f in sorted(fixed):
            if not self._solve(solver, self._fix(x, sorted(blocker - {f}))):
                blocker.discard(f)
        return "sr", frozenset(blocker)

    def _names(self, features: Iterable[int]) -> str:
        """Feature names, e.g. ``{Age, BType}``."""
        return "{" + ", ".join(self.forest.features[f].name for f in sorted(features)) + "}"

    def _shown(self, x: Instance, features: Iterable[int]) -> str:
        """x's literals on the features, e.g. ``{Age=>=55, BType=A}``."""
        known = self.forest.features
        return "{" + ", ".join(f"{known[f].name}={known[f].states[x[f]]}"
                               for f in sorted(features)) + "}"

    def _world(self, model: list[int], x: Instance) -> str:
        """The model's world as its changes from x."""
        w = self._states(model)
        changed = [f"{feature.name}={feature.states[w[f]]}"
                   for f, feature in enumerate(self.forest.features) if w[f] != x[f]]
        return "the world changing x to {" + ", ".join(changed) + "}"


class _Family:
    """Feature sets (bitmasks) with two queries in ``O(#features)`` big-integer operations,
    whatever their number: ``holders[f]`` has bit ``k`` when the ``k``-th set contains ``f``."""

    def __init__(self, n: int) -> None:
        self.holders = [0] * n
        self.everyone = 0
        self.sets: list[int] = []

    def add(self, members: int) -> None:
        bit = 1 << len(self.sets)
        self.sets.append(members)
        self.everyone |= bit
        for f in bits(members):
            self.holders[f] |= bit

    def has_inside(self, mask: int) -> bool:
        """Some set lies inside ``mask``: one is held by no feature outside it."""
        outside = 0
        for f, held in enumerate(self.holders):
            if not mask >> f & 1:
                outside |= held
        return bool(self.everyone & ~outside)

    def outside(self, mask: int) -> int | None:
        """A set that misses ``mask`` (one held by no feature of it), or None."""
        inside = 0
        for f in bits(mask):
            inside |= self.holders[f]
        free = self.everyone & ~inside
        return self.sets[(free & -free).bit_length() - 1] if free else None


def _strict_subset(sets: Sequence[tuple[int, ...]], n: int) -> tuple[int, int] | None:
    """Some ``(i, j)`` with ``sets[j]`` a strict subset of ``sets[i]`` (the sets are distinct
    subsets of ``range(n)``), or None. Bitsets over the family: ``holders[f]`` has bit ``j``
    when ``sets[j]`` contains ``f``; the members inside ``sets[i]`` are those in no
    ``holders[f]`` with ``f`` outside it, and any but ``i`` itself is a strict subset. The
    unions of ``holders`` are tabled per byte of features (8 unions a member instead of one
    per feature outside it: a third of the time on 46,000 NRs of 30 features)."""
    rows = [bytearray((len(sets) + 7) // 8) for _ in range(n)]
    for j, v in enumerate(sets):
        for f in v:
            rows[f][j >> 3] |= 1 << (j & 7)
    holders = [int.from_bytes(row, "little") for row in rows]
    tables = []
    for low in range(0, n, 8):
        width = min(8, n - low)
        table = [0] * (1 << width)
        for m in range(1, 1 << width):
            table[m] = table[m & (m - 1)] | holders[low + (m & -m).bit_length() - 1]
        tables.append((low, (1 << width) - 1, table))
    everyone = (1 << len(sets)) - 1
    for i, v in enumerate(sets):
        mask = 0
        for f in v:
            mask |= 1 << f
        outside = 0
        for low, full, table in tables:
            outside |= table[~mask >> low & full]
        inside = (everyone & ~outside) ^ (1 << i)  # bit i is set: sets[i] is inside itself
        if inside:
            return i, (inside & -inside).bit_length() - 1
    return None


def _define_and(add: Any, out: int, inputs: list[int]) -> None:
    """Clauses of ``out ⇔ ∧ inputs`` (``out`` true when there is no input)."""
    add([out] + [-v for v in inputs])
    for v in inputs:
        add([-out, v])


def _define_or(add: Any, out: int, inputs: list[int]) -> None:
    """Clauses of ``out ⇔ ∨ inputs`` (``out`` false when there is no input)."""
    add([-out] + inputs)
    for v in inputs:
        add([-v, out])


class _Witnesses:
    """x's escape boxes projected on a feature tuple: per feature a 0/1 matrix with a row per
    box (float32, so that a batch of terms meets every box in one matrix product)."""

    def __init__(self, features: tuple[int, ...], sizes: Sequence[int]) -> None:
        self.features = features
        self.n = 0
        self._capacity = 64
        self._rows = [np.zeros((self._capacity, n), dtype=np.float32) for n in sizes]

    def take(self, escapes: Sequence[tuple[int, ...]]) -> None:
        """Adds the boxes of x's escape list (which only grows) not taken yet."""
        for box in escapes[self.n:]:
            if self.n == self._capacity:
                self._capacity *= 2
                self._rows = [np.concatenate([m, np.zeros_like(m)]) for m in self._rows]
            for j, f in enumerate(self.features):
                self._rows[j][self.n] = _bits(box[f], self._rows[j].shape[1])
            self.n += 1

    def rows(self, j: int) -> np.ndarray:
        """The matrix of feature ``features[j]``: a row per box, a column per state."""
        return self._rows[j][:self.n]


def _bits(mask: int, n: int) -> np.ndarray:
    """A state mask as ``n`` entries 0 or 1."""
    raw = np.frombuffer(mask.to_bytes((n + 7) // 8, "little"), dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little")[:n]


def _mask(column: np.ndarray) -> int:
    """The state mask of a boolean vector."""
    return int.from_bytes(np.packbits(column, bitorder="little").tobytes(), "little")
