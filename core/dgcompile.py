"""Tractable class formulas: Alg. 3B (conjunction of decision graphs) and Alg. 3A (one graph).

The plan of :mod:`rfcircuits.classformula` (which comparisons make ``R^i``, which network output is
each comparison) runs with :class:`rfcircuits.apply.Apply` as the comparator: ``max`` is Apply-∨ and
``min`` Apply-∧. Inputs are the trees' ``C^c_l`` and ``¬C^c_l`` as decision graphs:

- ``apply="ordered"`` (default): each tree formula is built with the closed form
  ``∨_k ([X ∈ S_k] ∧ C(child))`` in ordered Apply under a global feature order (the node
  itself when every child lies below ``X`` in the order), so every graph is ordered
  (test-once) and the fast path of :mod:`rfcircuits.apply` applies throughout. Sizes depend on the
  order: :func:`rfcircuits.featureorder.feature_order` (default ``auto``) keeps the best of a few
  static heuristics on a sample of the trees, and forests that compile large are compiled
  again under a sifted order (:data:`SIFT_TRIGGER`);
- ``apply="generic"``: each tree is copied node for node (trees are weak test-once; re-tests
  keep only feasible states) and combined with paper Alg. 4.

Votes are counted, with ordered Apply, by ``counter="topdown"`` (the default): no network,
but :meth:`rfcircuits.dgraph.DG.threshold` on the network's inputs, which builds each comparison
graph top-down from the residues of the tree graphs, so the only nodes made are the result's
(and its sub-graphs'). The networks remain: ``counter="totalizer"`` (the default with generic
Apply), a network of direct merges whose intermediates are thresholds of blocks of trees
(:mod:`rfcircuits.totalizer`), and ``counter="oddeven"``, the odd-even network of paper Alg. 1–2.
Under one feature order all three make the same (canonical) graphs; only the work differs:
top-down is the fastest on most forests and creates the fewest nodes (docs/decisions.md,
"Decision graphs count votes top-down").

Soft votes (weighted leaves) are not counted: each class pair's comparison is the decision
diagram over the trees of :mod:`rfcircuits.pbdd`, built with Apply from the tree graphs of its
leaf differences, whatever ``counter`` says.

A decision graph negates by swapping leaves, so one network per unordered class pair ``a < b``
serves both classes: ``[v_b > v_a] = ¬[v_a >= v_b]`` and ``[v_b >= v_a] = ¬[v_a > v_b]``.
Alg. 3B keeps ``R^i`` as the list of its comparison graphs (their conjunction); Alg. 3A
conjoins them with Apply into one graph. Between networks, once the manager has grown by
:data:`COLLECT_GROWTH` since the last collection, the intermediate graphs of the finished
networks are garbage collected (:meth:`DG.collect`).
"""

from __future__ import annotations

import functools
import time
from array import array
from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass, field

from rfcircuits.apply import Apply
from rfcircuits.classformula import (comparisons, pair_outputs, per_class, soft_pair_outputs,
                                     tree_formulas)
from rfcircuits.dgraph import FALSE, TRUE, DG
from rfcircuits.errors import BudgetExceeded
from rfcircuits.featureorder import feature_order, sift
from rfcircuits.ops import Ops
from rfcircuits.pbdd import at_least
from rfcircuits.forest import Branching, Forest, Tree, check_ties, mask_blocks, topological_order

#: How votes are counted (module docstring); the first is the default (with ordered Apply).
COUNTERS = ("topdown", "totalizer", "oddeven")

#: With ``order="auto"`` and ordered Apply, a compile that outgrows :data:`SIFT_TRIGGER`
#: live nodes stops, and the forest is compiled again under the order
#: :func:`rfcircuits.featureorder.sift` makes of the heuristic one (the first attempt's work
#: is lost). Forests of few features gain from it as well as wide ones; smaller compiles
#: would not repay the sifting, which takes seconds however small the forest, so tiny
#: forests (tests, fuzzing, the corpus) never sift (docs/decisions.md, "Compiles past 500 K
#: live nodes start again under a sifted order").
SIFT_TRIGGER = 500_000
#: Sifted orders of the last forests that needed one: another compile of the same forest
#: (the other tie policy of a crosscheck, an explainer after the formula checks) reuses it
#: instead of sifting again (ecoli, 100 trees of depth 5: 90 s of sifting).
SIFTED_KEPT = 4
_SIFTED: dict[Forest, tuple[int, ...]] = {}

#: Compilations made for other tie policies alongside one (``compile_dg(also=...)``), each
#: returned, once, to the next compile asking for it with the same arguments; the next
#: compile with ``also`` drops those not asked for.
_HANDED: dict[tuple[object, ...], DGCompilation] = {}

#: Garbage-collect between pair networks once the manager holds this many times the nodes it
#: kept at the last collection (amortised: each collection costs time linear in the nodes).
COLLECT_GROWTH = 2.0


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

    def lift_caps(self, max_nodes: int | None) -> DGCompilation:
        """Graphs compiled under caps (a smaller node budget, a time limit: an attempt)
        serve on under ``max_nodes`` and no time limit."""
        self.dg.set_max_nodes(max_nodes)
        self.dg.set_timeout(None)
        return self


def compile_dg(forest: Forest, ties: str = "first", form: str = "dg-conj",
               apply: str = "ordered", order: str | Sequence[int] = "auto",
               max_nodes: int | None = None, timeout: float | None = None,
               progress: Callable[[int, int, Sized], None] | None = None,
               counter: str | None = None, also: Sequence[str] = ()) -> DGCompilation:
    """Alg. 3B (``form="dg-conj"``) or Alg. 3A (``form="dg"``) for every class.

    Per-class seconds: the shared tree stage split evenly, plus each pair network split
    between its two classes, plus (3A) that class's final conjunction. ``counter`` defaults
    to ``topdown`` with ordered Apply and to ``totalizer`` with generic Apply.
    ``progress(done, total, dg)`` is called before and after each pair network.

    ``also``: other tie policies to compile in the same networks and manager: every policy's
    comparisons are outputs of the same class pairs' networks (``first`` needs
    ``[v_a >= v_b]``, ``all`` that and ``[v_a > v_b]``), so a crosscheck of both policies
    compiles once. Each is returned by the next call asking for it with the same arguments
    (their seconds are this compile's). When the shared manager exceeds ``max_nodes``, the
    asked policy compiles alone. With ``order="auto"`` a compile whose first attempt stays
    under :data:`SIFT_TRIGGER` nodes returns alone (it is quick anyway).
    """
    check_ties(ties)
    for policy in also:
        check_ties(policy)
    if form not in ("dg", "dg-conj"):
        raise ValueError(f"unknown form {form!r}")
    if apply not in ("ordered", "generic"):
        raise ValueError(f"unknown apply {apply!r}")
    if counter is None:
        counter = "topdown" if apply == "ordered" else "totalizer"
    if counter not in COUNTERS:
        raise ValueError(f"unknown counter {counter!r}")
    if counter == "topdown" and apply != "ordered":
        raise ValueError("counter 'topdown' needs apply 'ordered'")
    handed = _HANDED.pop(_handoff_key(forest, ties, form, apply, order, max_nodes, counter), None)
    if handed is not None:
        return handed
    start = time.perf_counter()
    deadline = None if timeout is None else time.monotonic() + timeout
    # The order's trial compiles count against the deadline too: under soft votes one trial
    # can take minutes below its node cap (Python work in pbdd, few new nodes).
    cost = created_nodes if deadline is None else functools.partial(created_nodes,
                                                                    deadline=deadline)
    ranks = feature_order(forest, order, cost) if isinstance(order, str) else list(order)
    if order == "auto" and apply == "ordered" and (max_nodes is None
                                                   or max_nodes > SIFT_TRIGGER):
        # A large forest's graphs depend much on the order: past SIFT_TRIGGER nodes, sift it
        # (once per forest: sifting judges orders under ties "first", whatever the compile's).
        sifted = _SIFTED.get(forest)
        if sifted is not None:
            ranks = list(sifted)
        else:
            try:
                comp, = _compile(forest, (ties,), form, apply, ranks, SIFT_TRIGGER,
                                 (timeout, deadline), progress, counter, start)
                comp.dg.set_max_nodes(max_nodes)  # the trigger only chose not to sift
                return comp
            except BudgetExceeded:
                if deadline is not None and time.monotonic() > deadline:
                    raise
            # A timed compile (auto's attempt) sifts for a third of the time left: a partly
            # sifted order mostly compiles in the rest (ionosphere, 16 trees: sifting takes
            # 9.2 s for a 2.4 s compile; cut at 3 s, the compile takes 2.0 s).
            now = time.monotonic()
            ranks = sift(forest, ranks, cost,
                         deadline=None if deadline is None else now + (deadline - now) / 3)
            if deadline is None:  # a sift cut short by the timeout is not the forest's best
                if len(_SIFTED) >= SIFTED_KEPT:
                    del _SIFTED[next(iter(_SIFTED))]
                _SIFTED[forest] = tuple(ranks)
    if also:
        try:
            first, *others = _compile(forest, (ties, *also), form, apply, ranks, max_nodes,
                                      (timeout, deadline), progress, counter, start)
        except BudgetExceeded:
            if deadline is not None and time.monotonic() > deadline:
                raise
            # The budget holds the manager: one policy's graphs may fit where all do not.
        else:
            _HANDED.clear()  # earlier hand-offs nobody asked for are dropped
            for policy, comp in zip(also, others):
                _HANDED[_handoff_key(forest, policy, form, apply, order, max_nodes,
                                     counter)] = comp
            return first
    return _compile(forest, (ties,), form, apply, ranks, max_nodes, (timeout, deadline),
                    progress, counter, start)[0]


def _handoff_key(forest: Forest, ties: str, form: str, apply: str, order: str | Sequence[int],
                 max_nodes: int | None, counter: str | None) -> tuple[object, ...]:
    return (forest, ties, form, apply, order if isinstance(order, str) else tuple(order),
            max_nodes, counter)


def created_nodes(forest: Forest, order: list[int], max_nodes: int, counter: str | None,
                  deadline: float | None = None) -> int:
    """The nodes Alg. 3B creates compiling ``forest`` under ``order`` (raises BudgetExceeded
    past ``max_nodes``, or past ``deadline``, a ``time.monotonic()`` value): the cost
    :mod:`rfcircuits.featureorder` judges orders by."""
    timeout = None if deadline is None else max(deadline - time.monotonic(), 1e-3)
    return compile_dg(forest, order=order, max_nodes=max_nodes, counter=counter,
                      timeout=timeout).created


@functools.lru_cache(maxsize=1 << 14)
def tree_code(tree: Tree) -> bytes:
    """A tree for the stores' ordered tree stage (``Store.tree_formulas``): int32 entries
    in the order :func:`rfcircuits.classformula.tree_formulas` builds nodes (children first, the
    root last); a leaf is ``-1 - label``, a node is its feature, its number of branches and
    per branch the child's entry index, its number of runs of consecutive states and each
    run's ``(start, end)``. Cached: sifting compiles the same trees many times."""
    order = list(reversed(topological_order(tree.nodes)))
    entry = {k: e for e, k in enumerate(order)}
    out: list[int] = []
    for k in order:
        node = tree.nodes[k]
        if type(node) is not Branching:
            out.append(-1 - node.label)
            continue
        out += (node.feature, len(node.branches))
        for mask, child in node.branches:
            blocks = list(mask_blocks(mask))
            out += (entry[child], len(blocks))
            for start, end in blocks:
                out += (start, end)
    return array("i", out).tobytes()


def _compile(forest: Forest, policies: tuple[str, ...], form: str, apply: str,
             ranks: list[int], max_nodes: int | None,
             limit: tuple[float | None, float | None],
             progress: Callable[[int, int, Sized], None] | None, counter: str,
             start: float) -> list[DGCompilation]:
    """:func:`compile_dg` under the order ``ranks`` for each tie policy, in one manager; the
    seconds since ``start`` (choosing the order) count as the tree stage's. ``limit``: the
    compile's timeout and the deadline it set when it started (``(None, None)``: none)."""
    k = len(forest.classes)
    timeout, deadline = limit
    dg = DG(forest.features, ranks, max_nodes=max_nodes, timeout=timeout, deadline=deadline)
    ap = Apply(dg)
    soft = forest.voting == "soft"
    if soft:  # each class pair relabels the trees by its differences (soft_pair_outputs)
        pos, neg = [], []
    elif apply == "ordered":
        # The tree stage runs in the store (in C on the C store: the sifting's trial
        # compiles are mostly this stage), with no call back into Python per node.
        pos, neg = dg.store.tree_formulas([tree_code(t) for t in forest.trees], k)
    else:
        pos, neg = per_class(forest, _leaf, dg.node)

    def atoms(trees: list[Tree], m: int) -> list[list[int]]:
        if apply == "generic":
            return [tree_formulas(t, m, _leaf, dg.node)[0] for t in trees]
        by_label = dg.store.tree_formulas([tree_code(t) for t in trees], m)[0]
        return [[by_label[c][t] for c in range(m)] for t in range(len(trees))]

    tree_seconds = time.perf_counter() - start
    seconds = [tree_seconds / k] * k
    ops: Ops[int] = Ops(ap.disj, ap.conj, FALSE, dg.threshold, dg.check_budget)
    needed = _pair_plan(k, policies)
    conjuncts: list[list[int]] = [[] for _ in range(k * len(policies))]
    live = len(dg)
    collected = 0
    if progress:  # the tree stage's nodes (dg's len), while the first network runs
        progress(0, len(needed), dg)
    for done, ((a, b), wants) in enumerate(needed.items(), start=1):
        t0 = time.perf_counter()
        stricts = sorted({strict for strict, _, _ in wants})
        graphs = dict(zip(stricts, soft_pair_outputs(forest, a, b, stricts, ops, TRUE, atoms,
                                                      at_least)
                          if soft else pair_outputs(pos, neg, a, b, stricts, ops, counter)))
        for strict, owner, negated in wants:
            graph = graphs[strict]
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
            progress(done, len(needed), dg)
    out = []
    for p in range(len(policies)):
        mine = conjuncts[p * k:(p + 1) * k]
        extra = [0.0] * k
        roots_3b = [list(c) for c in mine]
        spent = list(seconds)
        if form == "dg":
            for c in range(k):
                t0 = time.perf_counter()
                root = TRUE
                for g in mine[c]:
                    root = ap.conj(root, g)
                mine[c] = [root]
                extra[c] = time.perf_counter() - t0
                spent[c] += extra[c]
        out.append(DGCompilation(dg, form, mine, spent, tree_seconds, extra, roots_3b,
                                 collected + len(dg)))
    return out


def _leaf(value: bool) -> int:
    return TRUE if value else FALSE


def _collect(dg: DG, ap: Apply, *groups: list[list[int]]) -> list[list[list[int]]]:
    """:meth:`DG.collect` keeping the node lists ``groups`` (returned renumbered)."""
    new = iter(dg.collect([n for group in groups for ids in group for n in ids]))
    ap.clear()
    return [[[next(new) for _ in ids] for ids in group] for group in groups]


def _pair_plan(k: int, policies: Sequence[str]
               ) -> dict[tuple[int, int], list[tuple[bool, int, bool]]]:
    """Per class pair ``a < b``: the network outputs to compute, as ``(strict, owner,
    negated)`` with owner ``p·k + c`` for class c under ``policies[p]``; ``[v_a >= v_b]``
    belongs to a, its negation ``[v_b > v_a]`` to b, etc."""
    plan: dict[tuple[int, int], list[tuple[bool, int, bool]]] = {}
    for p, ties in enumerate(policies):
        for c in range(k):
            for cmp in comparisons(c, k, ties):
                owner = p * k + c
                if cmp.i < cmp.j:
                    plan.setdefault((cmp.i, cmp.j), []).append((cmp.strict, owner, False))
                else:  # [v_i ? v_j] with i > j is the negation of the opposite comparison
                    plan.setdefault((cmp.j, cmp.i), []).append((not cmp.strict, owner, True))
    return plan
