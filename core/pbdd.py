"""Comparisons of soft votes as decision diagrams over the trees (the weighted Alg. 3).

Under soft votes (:attr:`rfcircuits.forest.Forest.voting`) class ``i`` beats class ``j`` when
``S_i − S_j = init_i − init_j + Σ_t d_t`` is positive (or non-negative), ``d_t`` the
difference ``w_i − w_j`` of the weights of the leaf tree ``t`` reaches, exact integers
(:attr:`~rfcircuits.forest.Forest.int_weights`). A tree's leaves fall into groups of equal
difference ``v_{t,1} < … < v_{t,m}``; the formula ``A_{t,k}`` "tree ``t`` reaches a leaf of
difference ``v_{t,k}``" is the tree formula of a tree whose leaves are relabelled by their
group (:func:`difference_trees`), and a tree's ``A_{t,k}`` are exclusive and exhaustive.

``[Σ_t d_t >= K]`` is then the decision diagram over the trees of Abío, Nieuwenhuis,
Oliveras, Rodríguez-Carbonell and Mayer-Eichberger (2012), "A new look at BDDs for
pseudo-Boolean constraints" (:func:`at_least`):

    node(t, K) = ∨_k (A_{t,k} ∧ node(t + 1, K − v_{t,k})),

true when ``K`` is at most the least sum the trees from ``t`` on can make, false when it
exceeds their largest. Sums differ almost always, so nodes are shared by *interval*: every
node is the answer for all ``K`` of an interval (the intersection of its children's shifted
intervals), and a level's intervals are kept sorted, so a lookup is a binary search. Where
hard votes count (sorting networks, totalizers), this is the comparison soft votes need; with
unit weights it is the vote count again.

The diagram is generic over the operations (:class:`rfcircuits.ops.Ops`); Apply on
decision graphs in :func:`rfcircuits.dgcompile.compile_dg` builds it, canonical, within the
compile's node budget and deadline. Where the partial sums are many (forests of
probabilities) it outgrows any budget; the SAT engine's NNF circuits add in binary instead
(:mod:`rfcircuits.binarysum`), in polynomial size.

Cost: at most ``Σ_t (intervals at level t) · m_t`` operations; the intervals of a level are
at most the distinct partial sums of the trees before it, and in practice far fewer (trees are
taken by decreasing spread ``v_{t,m} − v_{t,1}``, which Abío et al. find keeps the diagram
small). Iterative (an explicit stack): forests of thousands of trees do not recurse.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from typing import TypeVar

from rfcircuits.forest import Forest, Leaf, Tree

from rfcircuits.ops import Ops

T = TypeVar("T")


#: Steps of :func:`at_least` between two calls of ``ops.check`` (the compile's deadline).
CHECK_EVERY = 1 << 12


def difference_trees(forest: Forest, i: int, j: int) -> tuple[list[list[int]], list[Tree], int]:
    """For ``[S_i − S_j >= K]``: per tree that can differ, the sorted distinct differences
    ``w_i − w_j`` of its leaves and the tree relabelled so that a leaf's label is the index
    of its difference, ordered by decreasing spread; and the sum of the differences of the
    trees whose leaves all have one (a constant, with ``init_i − init_j``). O(tree nodes)."""
    constant = forest.int_init[i] - forest.int_init[j]
    groups: list[tuple[list[int], Tree]] = []
    for tree, weights in zip(forest.trees, forest.int_weights):
        diff = [None if w is None else w[i] - w[j] for w in weights]
        values = sorted({d for d in diff if d is not None})
        if len(values) == 1:
            constant += values[0]
            continue
        index = {v: k for k, v in enumerate(values)}
        groups.append((values, Tree(tuple(node if d is None else Leaf(index[d])
                                          for node, d in zip(tree.nodes, diff)))))
    groups.sort(key=lambda g: g[0][0] - g[0][-1])  # stable: equal spreads keep tree order
    return [g[0] for g in groups], [g[1] for g in groups], constant


class DiagramTooLarge(Exception):
    """:func:`at_least` would keep more intervals than its ``max_spans``."""


def at_least(values: Sequence[Sequence[int]], atoms: Sequence[Sequence[T]],
             needs: Sequence[int], ops: Ops[T], true: T,
             max_spans: int | None = None) -> list[T]:
    """Per ``K`` of ``needs``: ``[Σ_t d_t >= K]``, where tree ``t``'s ``d_t`` is
    ``values[t][k]`` exactly when ``atoms[t][k]`` holds (a tree's atoms exclusive and
    exhaustive; ``values[t]`` ascending). The diagrams of the ``needs`` share their nodes.

    Each level ``t`` keeps disjoint intervals of ``K``, sorted, each with its node; a node's
    interval is the intersection of its children's intervals shifted by the values (clipped
    to the gap it fills, which keeps the level's intervals disjoint). O(Σ_t intervals_t ·
    m_t · log intervals_t) steps, plus the operations; ``ops.check`` (if any) every
    :data:`CHECK_EVERY` steps, as most steps create no node (the store's budgets count
    nodes). Past ``max_spans`` intervals in all, raises :class:`DiagramTooLarge` (the caller
    then compares otherwise)."""
    n = len(values)
    low = [0] * (n + 1)  # low[t], high[t]: least and largest Σ_{u>=t} d_u
    high = [0] * (n + 1)
    for t in range(n - 1, -1, -1):
        low[t] = low[t + 1] + values[t][0]
        high[t] = high[t + 1] + values[t][-1]
    starts: list[list[float]] = [[] for _ in range(n)]  # per level, sorted interval starts
    spans: list[list[tuple[float, float, T]]] = [[] for _ in range(n)]  # (lo, hi, node)

    def lookup(t: int, need: int) -> tuple[float, float, T] | None:
        if need <= low[t]:
            return (-math.inf, low[t], true)
        if need > high[t]:
            return (high[t] + 1, math.inf, ops.false)
        k = bisect_right(starts[t], need) - 1
        if k >= 0 and need <= spans[t][k][1]:
            return spans[t][k]
        return None

    out = []
    spans_made = 0
    steps = 0
    for target in needs:
        stack = [(0, target)]
        while stack:
            steps += 1
            if ops.check is not None and steps % CHECK_EVERY == 0:
                ops.check()
            t, need = stack[-1]
            if lookup(t, need) is not None:
                stack.pop()
                continue
            kids = [lookup(t + 1, need - v) for v in values[t]]
            missing = [(t + 1, need - v) for v, kid in zip(values[t], kids) if kid is None]
            if missing:
                stack.extend(missing)
                continue
            lo = max(kid[0] + v for v, kid in zip(values[t], kids) if kid is not None)
            hi = min(kid[1] + v for v, kid in zip(values[t], kids) if kid is not None)
            node = _choose(atoms[t], [kid[2] for kid in kids if kid is not None], ops, true)
            k = bisect_right(starts[t], need)  # clip to the gap ``need`` lies in
            if k > 0:
                lo = max(lo, spans[t][k - 1][1] + 1)
            if k < len(starts[t]):
                hi = min(hi, starts[t][k] - 1)
            starts[t].insert(k, lo)
            spans[t].insert(k, (lo, hi, node))
            stack.pop()
            spans_made += 1
            if max_spans is not None and spans_made > max_spans:
                raise DiagramTooLarge
        found = lookup(0, target)
        assert found is not None
        out.append(found[2])
    return out


def _choose(atoms: Sequence[T], kids: Sequence[T], ops: Ops[T], true: T) -> T:
    """``∨_k (atoms[k] ∧ kids[k])``, atoms exclusive and exhaustive: one child is the node
    itself, and atoms of the same child are joined first."""
    if all(kid == kids[0] for kid in kids):
        return kids[0]
    by_kid: dict[T, T] = {}
    for atom, kid in zip(atoms, kids):
        if kid != ops.false:
            by_kid[kid] = atom if kid not in by_kid else ops.max(by_kid[kid], atom)
    node = ops.false
    for kid, when in by_kid.items():
        node = ops.max(node, when if kid == true else ops.min(when, kid))
    return node
