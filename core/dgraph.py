"""Hash-consed decision graphs with true/false leaves (SPEC §2, §5; paper §3 "Tractable
Class Formulas").

A :class:`DG` manager owns immutable nodes with integer ids: the leaves ``FALSE`` (0) and
``TRUE`` (1) and decision nodes ``(feature, branches)`` whose branches ``(state mask, child)``
have disjoint non-empty masks. :meth:`DG.node` reduces (branches to the same child are merged;
a node whose branches all lead to one child *is* that child) and hash-conses through a unique
table, so equal nodes are one id. Children have smaller ids than parents: ascending ids are a
topological order, and traversals here are loops.

A graph is **weak test-once** when along every path the branch states of a node are exactly
the states of its feature still feasible there (:meth:`DG.check_invariants`). With a global
feature order (``rank``) a node is *ordered* when its features strictly increase along every
path — then it is test-once, the case :mod:`core.apply` accelerates; the flag is kept per node.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from core.errors import BudgetExceeded
from core.forest import Feature, Forest, mask_states, weak_test_once_violation

FALSE = 0
TRUE = 1
LEAF = -1
T = TypeVar("T")


class DG:
    """Manager of hash-consed decision-graph nodes over a forest's features."""

    def __init__(self, features: Sequence[Feature], order: Sequence[int] | None = None,
                 max_nodes: int | None = None, timeout: float | None = None) -> None:
        self.features = tuple(features)
        self.full = [f.full for f in self.features]
        order = list(order) if order is not None else list(range(len(self.features)))
        if sorted(order) != list(range(len(self.features))):
            raise ValueError("order must be a permutation of the feature indices")
        #: rank[f]: position of feature f in the global order.
        self.rank = [0] * len(self.features)
        for position, f in enumerate(order):
            self.rank[f] = position
        self.feature: list[int] = [LEAF, LEAF]
        self.branches: list[tuple[tuple[int, int], ...]] = [(), ()]
        #: vars[n]: features tested at or below node n (bitmask).
        self.vars: list[int] = [0, 0]
        #: ordered[n]: features strictly increase in rank along every path below n.
        self.ordered: list[bool] = [True, True]
        self._unique: dict[tuple[int, tuple[tuple[int, int], ...]], int] = {}
        self._negation: dict[int, int] = {FALSE: TRUE, TRUE: FALSE}
        self.max_nodes = max_nodes
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self._timeout = timeout

    def __len__(self) -> int:
        return len(self.feature)

    # -- construction ---------------------------------------------------------------------------

    def node(self, feature: int, branches: Iterable[tuple[int, int]]) -> int:
        """The reduced, hash-consed node testing ``feature`` with these (disjoint) branches."""
        by_child: dict[int, int] = {}
        for mask, child in branches:
            by_child[child] = by_child.get(child, 0) | mask
        if len(by_child) == 1:
            return next(iter(by_child))
        key = (feature, tuple(sorted(((m, c) for c, m in by_child.items()),
                                     key=lambda mc: mc[0] & -mc[0])))
        n = self._unique.get(key)
        if n is None:
            n = self._create(key)
        return n

    def _create(self, key: tuple[int, tuple[tuple[int, int], ...]]) -> int:
        feature, branches = key
        n = len(self.feature)
        if self.max_nodes is not None and n - 2 >= self.max_nodes:
            raise BudgetExceeded(f"decision graphs exceed --max-nodes {self.max_nodes}")
        if self.deadline is not None and n & 0x1FFF == 0 and time.monotonic() > self.deadline:
            raise BudgetExceeded(f"compilation exceeds --timeout {self._timeout:g} s")
        rank, below, ordered = self.rank[feature], 1 << feature, True
        for _, c in branches:
            below |= self.vars[c]
            if c > TRUE and (not self.ordered[c] or self.rank[self.feature[c]] <= rank):
                ordered = False
        self.feature.append(feature)
        self.branches.append(branches)
        self.vars.append(below)
        self.ordered.append(ordered)
        self._unique[key] = n
        return n

    def literal(self, feature: int, mask: int) -> int:
        """The one-node graph of ``feature ∈ mask``."""
        return self.node(feature, ((mask, TRUE), (self.full[feature] & ~mask, FALSE)))

    def check_budget(self) -> None:
        """Raise :class:`BudgetExceeded` once the timeout has passed."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise BudgetExceeded(f"compilation exceeds --timeout {self._timeout:g} s")

    def negate(self, root: int) -> int:
        """``¬root``: the same graph with leaves swapped (memoised)."""
        neg = self._negation
        for n in self.reachable([root]):
            if n not in neg:
                neg[n] = self.node(self.feature[n], [(m, neg[c]) for m, c in self.branches[n]])
        return neg[root]

    # -- traversal ------------------------------------------------------------------------------

    def reachable(self, roots: Iterable[int]) -> list[int]:
        """All node ids below the roots (roots included), ascending (= topological)."""
        seen = set()
        stack = list(roots)
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(c for _, c in self.branches[n])
        return sorted(seen)

    def size(self, roots: Iterable[int]) -> int:
        """Distinct nodes below the roots, leaves included."""
        return len(self.reachable(roots))

    def fold(self, roots: Sequence[int], leaf: Callable[[bool], T],
             branch: Callable[[int, list[tuple[int, T]]], T]) -> list[T]:
        """Evaluate the roots bottom-up: ``branch(feature, [(mask, child value), ...])``."""
        value: dict[int, T] = {}
        for n in self.reachable(roots):
            if n <= TRUE:
                value[n] = leaf(n == TRUE)
            else:
                value[n] = branch(self.feature[n], [(m, value[c]) for m, c in self.branches[n]])
        return [value[r] for r in roots]

    def evaluate(self, root: int, x: Sequence[int]) -> bool:
        """Truth value on instance ``x`` (follow the branch holding each state)."""
        n = root
        while n > TRUE:
            bit = 1 << x[self.feature[n]]
            n = next(c for m, c in self.branches[n] if m & bit)
        return n == TRUE

    def count_models(self, root: int) -> int:
        """Number of worlds satisfying ``root`` (weak test-once graphs)."""
        k = len(self.features)
        memo: dict[tuple[int, tuple[int, ...]], int] = {}
        start = tuple(self.full)
        stack: list[tuple[int, tuple[int, ...]]] = [(root, start)]
        while stack:  # post-order over (node, feasible states) pairs
            n, path = stack[-1]
            if (n, path) in memo:
                stack.pop()
                continue
            if n <= TRUE:
                total = 1
                for f in range(k):
                    total *= bin(path[f]).count("1")
                memo[(n, path)] = total if n == TRUE else 0
                stack.pop()
                continue
            f = self.feature[n]
            subs = [(c, path[:f] + (path[f] & m,) + path[f + 1:]) for m, c in self.branches[n]
                    if path[f] & m]
            missing = [s for s in subs if s not in memo]
            if missing:
                stack.extend(missing)
            else:
                memo[(n, path)] = sum(memo[s] for s in subs)
                stack.pop()
        return memo[(root, start)]

    def check_invariants(self, roots: Sequence[int]) -> None:
        """Assert structure (reduced, hash-consed, disjoint masks, children first) and the
        weak test-once property below the roots; raises AssertionError."""
        nodes = self.reachable(roots)
        for n in nodes:
            if n <= TRUE:
                continue
            f, branches = self.feature[n], self.branches[n]
            assert self._unique.get((f, branches)) == n, f"node {n} not in the unique table"
            assert len(branches) >= 2, f"node {n} is not reduced (one branch)"
            assert len({c for _, c in branches}) == len(branches), f"node {n}: repeated child"
            seen = 0
            for m, c in branches:
                assert m and not m & seen and not m & ~self.full[f], f"node {n}: bad masks"
                assert c < n, f"node {n}: child {c} created later"
                seen |= m
        problem = weak_test_once_violation(
            [n for n in reversed(nodes) if n > TRUE] if nodes else [], roots,
            lambda n: (self.feature[n], self.branches[n]) if n > TRUE else None, self.full)
        assert problem is None, "not weak test-once: node %d on feature %d covers %s, feasible %s" \
            % problem

    # -- export ---------------------------------------------------------------------------------

    def to_json(self, roots: Sequence[int], forest: Forest, class_name: str,
                ties: str) -> dict[str, Any]:
        """The ``rfcircuits.dg/1`` document; the formula is the conjunction of ``roots``."""
        ids = self.reachable(roots)
        renumber = {n: i for i, n in enumerate(ids)}
        nodes: list[dict[str, Any]] = []
        for n in ids:
            if n <= TRUE:
                nodes.append({"leaf": n == TRUE})
            else:
                nodes.append({"feature": self.feature[n],
                              "branches": [[mask_states(m), renumber[c]]
                                           for m, c in self.branches[n]]})
        return {"format": "rfcircuits.dg/1", "class": class_name, "ties": ties,
                "features": [f.to_json() for f in forest.features], "nodes": nodes,
                "roots": [renumber[r] for r in roots]}

    def label(self, n: int) -> str:
        if n <= TRUE:
            return "true" if n == TRUE else "false"
        return self.features[self.feature[n]].name

    def edge_label(self, f: int, mask: int) -> str:
        return ",".join(self.features[f].states[s] for s in mask_states(mask))

    def to_networkx(self, roots: Sequence[int]) -> Any:
        """A networkx DiGraph; edges carry the branch ``states`` (list of state names)."""
        import networkx as nx

        graph = nx.MultiDiGraph()
        for n in self.reachable(roots):
            graph.add_node(n, label=self.label(n))
            for m, c in self.branches[n]:
                graph.add_edge(n, c, states=[self.features[self.feature[n]].states[s]
                                             for s in mask_states(m)])
        return graph

    def to_dot(self, roots: Sequence[int]) -> str:
        """Graphviz DOT text of the graphs below the roots."""
        lines = ["digraph dg {"]
        for n in self.reachable(roots):
            shape = "box" if n <= TRUE else "ellipse"
            lines.append(f"  n{n} [label={json.dumps(self.label(n), ensure_ascii=False)}, "
                         f"shape={shape}];")
            for m, c in self.branches[n]:
                label = json.dumps(self.edge_label(self.feature[n], m), ensure_ascii=False)
                lines.append(f"  n{n} -> n{c} [label={label}];")
        lines.append("}")
        return "\n".join(lines) + "\n"
