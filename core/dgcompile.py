"""Tractable class formulas: Alg. 3B (conjunction of decision graphs) and Alg. 3A (one graph).

The plan of :mod:`core.classformula` (which comparisons make ``R^i``, which network output is
each comparison) runs with :class:`core.apply.Apply` as the comparator: ``max`` is Apply-∨ and
``min`` Apply-∧. Inputs are the trees' ``C^c_l`` and ``¬C^c_l`` as decision graphs:

- ``apply="ordered"`` (default): each tree formula is built with the closed form
  ``∨_k ([X ∈ S_k] ∧ C(child))`` in ordered Apply under a global feature order, so every graph
  is ordered (test-once) and the fast path of :mod:`core.apply` applies throughout. Sizes
  depend on the order: :func:`feature_order` (default ``auto``) keeps the best of a few
  static heuristics on a sample of the trees;
- ``apply="generic"``: each tree is copied node for node (trees are weak test-once; re-tests
  keep only feasible states) and combined with paper Alg. 4.

A decision graph negates by swapping leaves, so one network per unordered class pair ``a < b``
serves both classes: ``[v_b > v_a] = ¬[v_a >= v_b]`` and ``[v_b >= v_a] = ¬[v_a > v_b]``.
Alg. 3B keeps ``R^i`` as the list of its comparison graphs (their conjunction); Alg. 3A
conjoins them with Apply into one graph. Between networks, once the manager has grown by
:data:`COLLECT_GROWTH` since the last collection, the intermediate graphs of the finished
networks are garbage collected (:meth:`DG.collect`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from core.apply import Apply
from core.classformula import Ops, comparisons, pair_outputs, per_class
from core.dgraph import FALSE, TRUE, DG
from core.errors import BudgetExceeded
from core.forest import Branching, Forest, check_ties, topological_order

ORDERS = ("auto", "depth", "usage", "force", "index")
#: Garbage-collect between pair networks once the manager holds this many times the nodes it
#: kept at the last collection (amortised: each collection costs time linear in the nodes).
COLLECT_GROWTH = 2.0
#: ``auto`` samples growing prefixes of the trees until its best candidate order creates at
#: least this many nodes (a fraction of a second of Apply).
SAMPLE_NODES = 50_000


def feature_order(forest: Forest, how: str = "auto") -> list[int]:
    """A global feature order for ordered Apply (the graphs' sizes depend on it).

    ``depth`` puts features tested near the roots first (by mean test depth, then by use),
    ``usage`` the most tested first, ``index`` is the forest's order. ``force`` refines
    ``depth`` with FORCE (Aloul, Markov & Sakallah 2003): features whose tests are parent and
    child in some tree are pulled together, which keeps trees spread over many features
    (ionosphere, segment) from being split by many levels. ``auto`` (the default) compiles
    Alg. 3B for ``depth``, ``usage`` and ``force`` on a prefix of the trees, doubling the
    prefix (2, 4, 8, … trees, at most half the forest) until the best one creates
    :data:`SAMPLE_NODES` nodes, and keeps the order that created the fewest nodes there
    (deterministic: it counts nodes, not seconds). Trees are i.i.d., so a prefix ranks the
    orders much as the whole forest does; ``force`` roughly halves the nodes of segment,
    twonorm and waveform against ``depth``, and ``usage`` helps magic and ring.
    """
    k = len(forest.features)
    if how == "index":
        return list(range(k))
    if how == "auto":
        return _sampled_best(forest, [feature_order(forest, h) for h in ORDERS[1:4]])
    if how == "force":
        return _force(forest, feature_order(forest, "depth"))
    uses = [0] * k
    depth_sum = [0] * k
    for tree in forest.trees:
        depth = [0] * len(tree.nodes)  # length of the shortest path from the root
        for n in topological_order(tree.nodes):
            node = tree.nodes[n]
            if type(node) is not Branching:
                continue
            uses[node.feature] += 1
            depth_sum[node.feature] += depth[n]
            for _, child in node.branches:
                depth[child] = depth[n] + 1 if not depth[child] else min(depth[child], depth[n] + 1)
    if how == "usage":
        return sorted(range(k), key=lambda f: (-uses[f], f))
    if how == "depth":
        return sorted(range(k), key=lambda f: (depth_sum[f] / uses[f] if uses[f] else 1e9,
                                               -uses[f], f))
    raise ValueError(f"unknown order {how!r}: expected one of {', '.join(ORDERS)}")


def _force(forest: Forest, start: list[int], rounds: int = 50) -> list[int]:
    """FORCE on the (parent test, child test) feature pairs of the trees: each round places
    every feature at the mean midpoint of its pairs; returns the order of least total pair
    span seen, ``start`` included."""
    pairs = [(node.feature, sub.feature) for tree in forest.trees for node in tree.nodes
             if type(node) is Branching for _, child in node.branches
             if type(sub := tree.nodes[child]) is Branching and sub.feature != node.feature]
    k = len(start)
    position = [0] * k
    for i, f in enumerate(start):
        position[f] = i
    best = (sum(abs(position[a] - position[b]) for a, b in pairs), start)
    for _ in range(rounds):
        total, count = [0.0] * k, [0] * k
        for a, b in pairs:
            middle = (position[a] + position[b]) / 2
            total[a] += middle
            total[b] += middle
            count[a] += 1
            count[b] += 1
        order = sorted(range(k), key=lambda f: (total[f] / count[f] if count[f] else position[f],
                                                position[f]))
        for i, f in enumerate(order):
            position[f] = i
        span = sum(abs(position[a] - position[b]) for a, b in pairs)
        if span < best[0]:
            best = (span, order)
    return best[1]


def _sampled_best(forest: Forest, candidates: list[list[int]]) -> list[int]:
    """The candidate order with which Alg. 3B on a prefix of the trees creates the fewest
    nodes (see :func:`feature_order`, ``auto``); earlier candidates win ties."""
    orders = [o for i, o in enumerate(candidates) if o not in candidates[:i]]
    half = max(1, len(forest.trees) // 2)
    m = min(2, half)
    while True:
        sample = Forest(forest.features, forest.classes, forest.trees[:m])
        created: list[float] = []
        for order in orders:
            # Stop an order early once it is 4x worse than the best so far, or too big to sample.
            budget = int(min(4 * min(created, default=math.inf), 40 * SAMPLE_NODES))
            try:
                created.append(compile_dg(sample, order=order, max_nodes=budget).created)
            except BudgetExceeded:
                created.append(math.inf)
        if min(created) >= SAMPLE_NODES or 2 * m > half:
            return orders[created.index(min(created))]
        m *= 2


@dataclass
class DGCompilation:
    """Class formulas as decision graphs in one manager: ``roots[c]`` are R^c's conjuncts
    (one for Alg. 3A); ``roots_3b[c]`` are Alg. 3B's, also under ``form="dg"``."""

    dg: DG
    form: str
    roots: list[list[int]]
    seconds: list[float]
    tree_seconds: float
    extra_3a_seconds: list[float] = field(default_factory=list)
    roots_3b: list[list[int]] = field(default_factory=list)
    #: Nodes created in all, garbage collected ones included (the work done).
    created: int = 0

    def nodes(self, c: int) -> int:
        return self.dg.size(self.roots[c])

    def total_nodes(self) -> int:
        return self.dg.size([r for rs in self.roots for r in rs])

    def evaluate(self, c: int, x: Sequence[int]) -> bool:
        return all(self.dg.evaluate(r, x) for r in self.roots[c])


def compile_dg(forest: Forest, ties: str = "first", form: str = "dg-conj",
               apply: str = "ordered", order: str | Sequence[int] = "auto",
               max_nodes: int | None = None, timeout: float | None = None,
               progress: Callable[[int, int], None] | None = None) -> DGCompilation:
    """Alg. 3B (``form="dg-conj"``) or Alg. 3A (``form="dg"``) for every class.

    Per-class seconds: the shared tree stage split evenly, plus each pair network split
    between its two classes, plus (3A) that class's final conjunction.
    """
    check_ties(ties)
    if form not in ("dg", "dg-conj"):
        raise ValueError(f"unknown form {form!r}")
    if apply not in ("ordered", "generic"):
        raise ValueError(f"unknown apply {apply!r}")
    start = time.perf_counter()
    k = len(forest.classes)
    ranks = feature_order(forest, order) if isinstance(order, str) else list(order)
    dg = DG(forest.features, ranks, max_nodes=max_nodes, timeout=timeout)
    ap = Apply(dg)
    if apply == "ordered":
        def branch(f: int, kids: Sequence[tuple[int, int]]) -> int:
            out = FALSE
            for m, child in kids:
                out = ap.ordered(1, out, ap.ordered(0, dg.literal(f, m), child))
            return out
    else:
        def branch(f: int, kids: Sequence[tuple[int, int]]) -> int:
            return dg.node(f, kids)
    pos, neg = per_class(forest, lambda v: TRUE if v else FALSE, branch)
    tree_seconds = time.perf_counter() - start
    seconds = [tree_seconds / k] * k
    ops: Ops[int] = Ops(ap.disj, ap.conj, FALSE)
    needed = _pair_plan(k, ties)
    conjuncts: list[list[int]] = [[] for _ in range(k)]
    live = len(dg)
    collected = 0
    for done, ((a, b), wants) in enumerate(needed.items(), start=1):
        t0 = time.perf_counter()
        graphs = pair_outputs(pos, neg, a, b, [strict for strict, _, _ in wants], ops)
        for graph, (_, owner, negated) in zip(graphs, wants):
            conjuncts[owner].append(dg.negate(graph) if negated else graph)
        if done < len(needed) and len(dg) > COLLECT_GROWTH * live:
            # The network's intermediate graphs are garbage now: without collecting them, the
            # memory of a many-class forest is the sum of its networks', not their maximum.
            collected += len(dg)
            pos, neg, conjuncts = _collect(dg, ap, pos, neg, conjuncts)
            live = len(dg)
            collected -= live
        took = (time.perf_counter() - t0) / 2
        seconds[a] += took
        seconds[b] += took
        dg.check_budget()
        if progress:
            progress(done, len(needed))
    extra = [0.0] * k
    roots_3b = [list(c) for c in conjuncts]
    if form == "dg":
        for c in range(k):
            t0 = time.perf_counter()
            root = TRUE
            for g in conjuncts[c]:
                root = ap.conj(root, g)
            conjuncts[c] = [root]
            extra[c] = time.perf_counter() - t0
            seconds[c] += extra[c]
    return DGCompilation(dg, form, conjuncts, seconds, tree_seconds, extra, roots_3b,
                         collected + len(dg))


def _collect(dg: DG, ap: Apply, *groups: list[list[int]]) -> list[list[list[int]]]:
    """:meth:`DG.collect` keeping the node lists ``groups`` (returned renumbered)."""
    new = iter(dg.collect([n for group in groups for ids in group for n in ids]))
    ap.clear()
    return [[[next(new) for _ in ids] for ids in group] for group in groups]


def _pair_plan(k: int, ties: str) -> dict[tuple[int, int], list[tuple[bool, int, bool]]]:
    """Per class pair ``a < b``: the network outputs to compute, as ``(strict, owner class,
    negated)``; ``[v_a >= v_b]`` belongs to a, its negation ``[v_b > v_a]`` to b, etc."""
    plan: dict[tuple[int, int], list[tuple[bool, int, bool]]] = {}
    for c in range(k):
        for cmp in comparisons(c, k, ties):
            if cmp.i < cmp.j:
                plan.setdefault((cmp.i, cmp.j), []).append((cmp.strict, c, False))
            else:  # [v_i ? v_j] with i > j is the negation of the opposite comparison
                plan.setdefault((cmp.j, cmp.i), []).append((not cmp.strict, c, True))
    return plan
