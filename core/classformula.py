"""Class formulas of a forest through sorting networks (paper Alg. 3; docs/semantics.md §3).

``R^i`` is a conjunction of pairwise vote comparisons (:func:`comparisons`): under ties
``first`` ``R^i = ∧_{j<i}[v_i > v_j] ∧ ∧_{j>i}[v_i >= v_j]``, under ``all`` every comparison is
``>=``. A comparison is one output of an odd-even network (:mod:`rfcircuits.sortnet`; decision
graphs may count with :mod:`rfcircuits.totalizer` instead, which has the same outputs):

- two classes: the network over ``C^i_1..C^i_n``; ``v_i >= v_j`` iff ``v_i >= ⌈n/2⌉`` and
  ``v_i > v_j`` iff ``v_i >= ⌊n/2⌋+1`` (every tree votes for one of the two classes);
- more classes: the network over the sorted pairs ``(¬C^j_l, C^i_l)`` (first layer skipped,
  paper footnote) counts ``v_i + (n - v_j)``, so output ``y_n`` is ``[v_i >= v_j]`` and
  ``y_{n+1}`` is ``[v_i > v_j]``.

:func:`pair_outputs` is generic over the comparator operations, so the same plan drives NNF
circuits here and decision graphs in :mod:`rfcircuits.dgcompile`. :func:`compile_nnf` is Alg. 3
with NNF gates; tree formulas and their negations come from :func:`tree_formulas` in time
linear in the tree (closed form of Darwiche & Ji 2022: a branch contributes
``[X ∈ S_k] ∧ C(child)``; the negation swaps the leaves because the branches partition the
feasible states).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass
from typing import TypeVar

from rfcircuits.errors import check_choice
from rfcircuits.forest import Branching, Forest, Tree, check_ties, topological_order
from rfcircuits.nnf import FALSE, TRUE, NNF
from rfcircuits.ops import Compare, Ops
from rfcircuits.binarysum import at_least_binary, normalized
from rfcircuits.pbdd import DiagramTooLarge, at_least, difference_trees
from rfcircuits.sortnet import evaluate, network
from rfcircuits.totalizer import counts

T = TypeVar("T")
@dataclass(frozen=True)
class Comparison:
    """``[v_i > v_j]`` when ``strict``, else ``[v_i >= v_j]``."""

    i: int
    j: int
    strict: bool


def comparisons(i: int, n_classes: int, ties: str) -> list[Comparison]:
    """The comparisons whose conjunction is ``R^i`` (docs/semantics.md §3, "Ties")."""
    check_ties(ties)
    return [Comparison(i, j, ties == "first" and j < i) for j in range(n_classes) if j != i]


def pair_outputs(pos: Sequence[Sequence[T]], neg: Sequence[Sequence[T]], i: int, j: int,
                 strict: Sequence[bool], ops: Ops[T], counter: str = "oddeven") -> list[T]:
    """``[v_i >= v_j]`` / ``[v_i > v_j]`` (per ``strict`` flag) from one network evaluation.

    ``pos[c][l]`` is ``C^c_l`` and ``neg[c][l]`` is ``¬C^c_l``; outputs share their cone.
    ``counter`` is the network: ``oddeven`` (paper Alg. 1–2) or ``totalizer``
    (:mod:`rfcircuits.totalizer`; a tree's pair counts 1 for ``¬C^j_l`` and 2 for ``C^i_l``), or
    ``topdown``: no network, the operands' ``threshold`` operation on the same inputs.
    """
    n = len(pos[i])
    if len(pos) == 2:
        wanted = [n // 2 + 1 if s else (n + 1) // 2 for s in strict]
        groups = [[c] for c in pos[i]]
    else:
        wanted = [n + 1 if s else n for s in strict]
        groups = [[neg[j][l], pos[i][l]] for l in range(n)]
    inputs = [v for g in groups for v in g]
    if counter == "topdown":
        if ops.threshold is None:
            raise ValueError("counter 'topdown' needs a threshold operation")
        return ops.threshold(inputs, wanted)
    if counter == "totalizer":
        return counts(groups, wanted, ops)
    return evaluate(network(len(inputs), presorted_pairs=len(pos) > 2), inputs, wanted, ops.max,
                    ops.min, ops.false)


def soft_pair_outputs(forest: Forest, i: int, j: int, strict: Sequence[bool], ops: Ops[T],
                      true: T, atoms: Callable[[list[Tree], int], list[list[T]]],
                      compare: Compare[T]) -> list[T]:
    """``[S_i >= S_j]`` / ``[S_i > S_j]`` (per ``strict`` flag) of a forest of soft votes, by
    ``compare``: :func:`rfcircuits.pbdd.at_least` (decision diagrams over the trees) or
    :func:`rfcircuits.binarysum.at_least_binary` (binary sums), the outputs sharing their
    nodes. ``atoms(trees, m)`` gives, per relabelled tree
    (:func:`rfcircuits.pbdd.difference_trees`, at most ``m`` labels), its tree formula per
    label."""
    values, trees, constant = difference_trees(forest, i, j)
    formulas = atoms(trees, max((len(v) for v in values), default=1))
    return compare(values, [f[:len(v)] for f, v in zip(formulas, values)],
                   [int(s) - constant for s in strict], ops, true)


#: :func:`soft_comparison` counts in unary while the trees' values (shifted, divided by their
#: common divisor) add up to at most this many times the number of trees, and keeps the
#: diagram while its intervals number at most :data:`DIAGRAM_SPANS_PER_ADDER` times the full
#: adders of the binary sum.
UNARY_PER_TREE = 8
DIAGRAM_SPANS_PER_ADDER = 4
#: :func:`soft_comparison`'s methods: ``auto`` takes the first that fits; the others force
#: theirs, so that tests and fuzzing reach each (they compare the same sums, exactly).
COMPARISONS = ("auto", "unary", "diagram", "binary")
#: A forced ``unary`` comparison refuses values that add up to more units than this.
UNARY_MAX_UNITS = 1 << 12


def soft_comparison(values: Sequence[Sequence[int]], atoms: Sequence[Sequence[T]],
                    needs: Sequence[int], ops: Ops[T], true: T,
                    method: str = "auto") -> list[T]:
    """The NNF comparison of soft votes ``[Σ_t d_t >= K]``, by the first of three that fits
    (``method`` ``auto``), or by the one ``method`` names:

    - **unary**: small integer values (probabilities of pure leaves, unit weights) counted by
      the odd-even network of paper Alg. 1–2, each tree's value ``d`` its inputs
      ``[d >= 1], [d >= 2], …``: the hard vote's circuit when the weights are its votes;
    - **diagram** over the trees (:func:`rfcircuits.pbdd.at_least`) while it stays within a
      few times the binary sum's size: few distinct partial sums;
    - **binary** sum (:func:`rfcircuits.binarysum.at_least_binary`), polynomial whatever
      the weights (a forest of probabilities).

    The SAT solver propagates through networks and diagrams what it must search through
    adders: on iris (100 trees, pure leaves) the adders' SAT engine finds no SR within its
    10 s, the network's finds them all in seconds, as for the hard vote."""
    n = len(values)
    low, divisor, unary = normalized(values)
    total = sum(u[-1] for u in unary)
    if method == "unary" and total > UNARY_MAX_UNITS:
        raise ValueError(f"a unary comparison of {total} units (at most {UNARY_MAX_UNITS})")
    if method == "unary" or method == "auto" and 0 < total <= UNARY_PER_TREE * n:
        inputs = [_any([a for a, x in zip(tree_atoms, u) if x >= need], ops)
                  for u, tree_atoms in zip(unary, atoms) for need in range(1, u[-1] + 1)]
        ks = [-((low - need) // divisor) for need in needs]  # ceil((need - low) / divisor)
        inner = [k for k in ks if 1 <= k <= total]
        outputs = dict(zip(inner, evaluate(network(len(inputs)), inputs, inner, ops.max,
                                           ops.min, ops.false))) if inner else {}
        return [true if k < 1 else ops.false if k > total else outputs[k] for k in ks]
    if method == "diagram":
        return at_least(values, atoms, needs, ops, true)
    if method == "auto":
        # the binary sum's full adders: n · (bits of the widest tree + log2 n)
        adders = n * (max((u[-1] for u in unary), default=0).bit_length() + n.bit_length())
        try:
            return at_least(values, atoms, needs, ops, true,
                            max_spans=DIAGRAM_SPANS_PER_ADDER * adders)
        except DiagramTooLarge:
            pass
    return at_least_binary(values, atoms, needs, ops, true)


def _any(formulas: Sequence[T], ops: Ops[T]) -> T:
    out = ops.false
    for f in formulas:
        out = ops.max(out, f)
    return out


def tree_formulas(tree: Tree, n_classes: int, leaf: Callable[[bool], T],
                  branch: Callable[[int, Sequence[tuple[int, T]]], T]) -> tuple[list[T], list[T]]:
    """``(C^c, ¬C^c for every class c)`` of one tree, bottom-up over its nodes.

    ``branch(feature, [(mask, child value), ...])`` builds a node from its branches; it is
    called once per distinct list (with two classes ``C^0 = ¬C^1``, so half the calls).
    """
    pos: dict[int, list[T]] = {}
    neg: dict[int, list[T]] = {}
    yes, no = leaf(True), leaf(False)
    made: dict[tuple[int, tuple[tuple[int, T], ...]], T] = {}

    def build(feature: int, kids: tuple[tuple[int, T], ...]) -> T:
        key = (feature, kids)
        if key not in made:
            made[key] = branch(feature, kids)
        return made[key]

    for k in reversed(topological_order(tree.nodes)):
        node = tree.nodes[k]
        if type(node) is Branching:
            pos[k] = [build(node.feature, tuple((m, pos[ch][c]) for m, ch in node.branches))
                      for c in range(n_classes)]
            neg[k] = [build(node.feature, tuple((m, neg[ch][c]) for m, ch in node.branches))
                      for c in range(n_classes)]
        else:
            pos[k] = [yes if c == node.label else no for c in range(n_classes)]
            neg[k] = [no if c == node.label else yes for c in range(n_classes)]
    return pos[0], neg[0]


def per_class(forest: Forest, leaf: Callable[[bool], T],
              branch: Callable[[int, Sequence[tuple[int, T]]], T]) -> tuple[list[list[T]], list[list[T]]]:
    """``pos[c][l] = C^c_l`` and ``neg[c][l] = ¬C^c_l`` for every class and tree."""
    k = len(forest.classes)
    pos: list[list[T]] = [[] for _ in range(k)]
    neg: list[list[T]] = [[] for _ in range(k)]
    for tree in forest.trees:
        p, q = tree_formulas(tree, k, leaf, branch)
        for c in range(k):
            pos[c].append(p[c])
            neg[c].append(q[c])
    return pos, neg


@dataclass
class NNFCompilation:
    """Class formulas as roots in one NNF manager (Alg. 3)."""

    nnf: NNF
    roots: list[int]
    seconds: list[float]

    def nodes(self, c: int) -> int:
        return len(self.nnf.reachable([self.roots[c]]))

    def total_nodes(self) -> int:
        return len(self.nnf.reachable(self.roots))


def compile_nnf(forest: Forest, ties: str = "first",
                progress: Callable[[int, int, Sized], None] | None = None,
                comparison: str = "auto") -> NNFCompilation:
    """Paper Alg. 3: every class formula ``R^c`` as an NNF circuit.

    ``progress(done, total, nnf)`` is called after each comparison network (``len(nnf)``:
    the nodes so far). Per-class seconds include an even share of the tree stage: they add up.
    ``comparison``: how soft votes are compared (:func:`soft_comparison`'s ``method``).
    """
    check_ties(ties)
    check_choice("comparison", comparison, COMPARISONS)
    compare = functools.partial(soft_comparison, method=comparison)
    start = time.perf_counter()
    nnf = NNF(forest.features)

    def branch(f: int, kids: Sequence[tuple[int, int]]) -> int:
        return nnf.disj(nnf.and2(nnf.literal(f, m), child) for m, child in kids)

    def leaf(v: bool) -> int:
        return TRUE if v else FALSE

    k = len(forest.classes)
    if forest.voting == "hard":
        pos, neg = per_class(forest, leaf, branch)
    shared = (time.perf_counter() - start) / k
    ops: Ops[int] = Ops(nnf.or2, nnf.and2, FALSE)
    plans = [comparisons(c, k, ties) for c in range(k)]
    total, done = sum(len(p) for p in plans), 0
    roots, seconds = [], []
    for plan in plans:
        t0 = time.perf_counter()
        parts = []
        for cmp in plan:
            if forest.voting == "hard":
                parts.append(pair_outputs(pos, neg, cmp.i, cmp.j, [cmp.strict], ops)[0])
            else:
                parts.append(soft_pair_outputs(
                    forest, cmp.i, cmp.j, [cmp.strict], ops, TRUE,
                    lambda trees, m: [tree_formulas(t, m, leaf, branch)[0] for t in trees],
                    compare)[0])
            done += 1
            if progress:
                progress(done, total, nnf)
        roots.append(nnf.conj(parts))
        seconds.append(time.perf_counter() - t0 + shared)
    return NNFCompilation(nnf, roots, seconds)
