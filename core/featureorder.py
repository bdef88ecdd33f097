"""Global feature orders for ordered decision graphs (:mod:`rfcircuits.dgcompile`).

The class formulas do not depend on the order, only the graphs' sizes and the compile times
do: an order is a performance choice. :func:`feature_order` offers static heuristics and
``auto``, which ranks them by compiling Alg. 3B on a prefix of the trees; :func:`sift`
improves an order by moving features one at a time, judged on windows of the trees
(:func:`rfcircuits.dgcompile.compile_dg` sifts the ``auto`` order of forests that compile
large).
Both judge orders by a cost function the caller passes (:data:`Created`, in practice
:func:`rfcircuits.dgcompile.created_nodes`), so that ordering does not import compiling.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from rfcircuits.errors import BudgetExceeded
from rfcircuits.forest import Branching, Forest, topological_order

ORDERS = ("auto", "depth", "usage", "force", "index")

#: ``created(forest, order, max_nodes, counter)``: the nodes Alg. 3B creates compiling
#: ``forest`` under ``order`` counting votes with ``counter`` (None: the compile's default);
#: raises :class:`BudgetExceeded` past ``max_nodes``. The cost by which orders are judged.
Created = Callable[[Forest, list[int], int, str | None], int]
#: ``auto`` samples growing prefixes of the trees until its best candidate order creates at
#: least this many nodes (a fraction of a second of Apply).
SAMPLE_NODES = 50_000
#: :func:`sift` judges orders on windows of as many consecutive trees as the given order
#: compiles into at most this many nodes (tens of milliseconds each; larger windows judge
#: orders more like the whole forest does) ...
WINDOW_NODES = 20_000
#: ... and stops once its trial compiles have created this many nodes in all (10-30 s), or
#: :data:`SIFT_TREE_WORK` per tree if less: a forest of few trees compiles in a second or two,
#: and its sifting must stay short beside that.
SIFT_WORK = 40_000_000
SIFT_TREE_WORK = 2_000_000
#: Forests of more than :data:`WIDE` features keep the windows and work of before
#: 2026-11-28: ann-thyroid (21 features, 100 trees) sifted on 20 K-node windows with 50 M of
#: work got an order whose compile outgrew 75 M nodes, where 5 K and 30 M give 41 M.
WIDE = 20
WIDE_WINDOW_NODES = 5_000
WIDE_SIFT_WORK = 30_000_000
#: Passes of :func:`sift` over the features (it also stops after a pass without gain).
SIFT_PASSES = 2


def feature_order(forest: Forest, how: str = "auto", created: Created | None = None
                  ) -> list[int]:
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
    orders much as the whole forest does. Each candidate wins on some forests, and the sample
    counts with the odd-even network whatever the compile counts with, as ranking by another
    counter's work picked orders with larger graphs (docs/decisions.md, "The `auto` order ranks
    static orders on a prefix of the trees"). ``created`` is the compile cost ``auto`` ranks by.
    """
    k = len(forest.features)
    if how == "index":
        return list(range(k))
    if how == "auto":
        if created is None:
            raise ValueError("order 'auto' needs the compile cost 'created'")
        return _sampled_best(forest, [feature_order(forest, h) for h in ORDERS[1:4]], created)
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


def sift(forest: Forest, order: list[int], created: Created, work: int | None = None,
         deadline: float | None = None) -> list[int]:
    """``order`` improved by sifting (Rudell 1993) on windows of the trees: each feature in
    turn is moved to every other position, and a move is kept when the windows' Alg. 3B
    graphs then have fewer nodes in all; at most :data:`SIFT_PASSES` passes, and no more trial
    compiles once they have created ``work`` nodes (by default :data:`SIFT_WORK`, at most
    :data:`SIFT_TREE_WORK` per tree, or :data:`WIDE_SIFT_WORK` for forests of more than
    :data:`WIDE` features; deterministic: nodes, not seconds), or
    once ``time.monotonic()`` passes ``deadline`` (a compile's ``--timeout``).

    An order's cost is the nodes its windows' compiles create (the graphs, and the tree
    formulas they start from). A window is ``m`` consecutive trees (cyclically), ``m`` the
    largest count whose compile under ``order`` creates at most :data:`WINDOW_NODES` nodes
    (:data:`WIDE_WINDOW_NODES` beyond :data:`WIDE` features);
    windows start every ``m / 2`` trees, so every tree and every pair of neighbours is in
    some window (one window when ``m`` is the whole forest). Judging on a prefix of the trees
    alone overfits it (docs/decisions.md, "Compiles past 500 K live nodes start again under a
    sifted order"). ``created`` measures a compile."""
    trees = forest.trees
    wide = len(forest.features) > WIDE
    window = WIDE_WINDOW_NODES if wide else WINDOW_NODES
    if work is None:
        work = WIDE_SIFT_WORK if wide else min(SIFT_WORK, SIFT_TREE_WORK * len(trees))
    spent = 0

    def nodes(sample: Forest, trial: list[int], cap: int) -> int:
        """Nodes the sample's compile creates (counted in ``spent`` too), or ``cap + 1`` when
        it would exceed ``cap`` (its node budget stops it there)."""
        nonlocal spent
        try:
            made = created(sample, trial, max(cap, 1), None)
        except BudgetExceeded:
            made = cap + 1
        spent += made
        return made

    m = 1
    while m < len(trees) and nodes(forest.with_trees(trees[:m + 1]),
                                   order, window) <= window:
        m += 1
    windows = [forest.with_trees([trees[(start + i) % len(trees)] for i in range(m)])
               for start in range(0, len(trees) if m < len(trees) else 1, max(1, m // 2))]

    def exhausted() -> bool:
        return spent > work or deadline is not None and time.monotonic() > deadline

    def cost(trial: list[int], bound: float) -> float:
        total = 0
        for window in windows:
            if total > bound or exhausted():
                return math.inf
            total += nodes(window, trial, int(min(bound - total, 2 ** 62)))
        return total if total <= bound else math.inf

    best = cost(order, math.inf)
    for _ in range(SIFT_PASSES):
        start = best
        for f in list(order):
            here = order.index(f)
            for position in range(len(order)):
                if position == here:
                    continue
                trial = order[:here] + order[here + 1:]
                trial.insert(position, f)
                found = cost(trial, best - 1)
                if found < best:
                    best, order, here = found, trial, position
            if exhausted():
                return order
        if best == start:
            break
    return order


def _sampled_best(forest: Forest, candidates: list[list[int]], created: Created) -> list[int]:
    """The candidate order with which Alg. 3B on a prefix of the trees creates the fewest
    nodes by ``created`` (see :func:`feature_order`, ``auto``); earlier candidates win ties."""

    orders = [o for i, o in enumerate(candidates) if o not in candidates[:i]]
    half = max(1, len(forest.trees) // 2)
    m = min(2, half)
    while True:
        sample = forest.with_trees(forest.trees[:m])
        made: list[float] = []
        for order in orders:
            # Stop an order early once it is 4x worse than the best so far, or too big to sample.
            budget = int(min(4 * min(made, default=math.inf), 40 * SAMPLE_NODES))
            try:
                made.append(created(sample, order, budget, "oddeven"))
            except BudgetExceeded:
                made.append(math.inf)
        if min(made) >= SAMPLE_NODES or 2 * m > half:
            return orders[made.index(min(made))]
        m *= 2
