"""Hash-consed NNF circuits over discrete literals (docs/formats.md#circuit-files).

An :class:`NNF` manager owns immutable nodes with integer ids: the constants ``FALSE`` (0)
and ``TRUE`` (1), literals ``(feature, state mask)`` and ∧/∨ nodes over child ids. A unique
table per kind makes structurally equal nodes one node. Constructors fold constants
(``a ∧ false = false``, ``a ∧ true = a`` …), remove duplicate children and turn a one-child
gate into its child; a literal with an empty mask is false, with a full mask true. Children
always have smaller ids than their parents, so ascending ids are a topological order and
every traversal here is a loop, not a recursion.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from rfcircuits.forest import Feature, Forest, mask_states

FALSE = 0
TRUE = 1
CONST, LIT, AND, OR = 0, 1, 2, 3
KIND_NAMES = {CONST: "const", LIT: "lit", AND: "and", OR: "or"}

T = TypeVar("T")


def sum_vars(sets: Iterable[int]) -> int:
    """Union of feature bitmasks."""
    out = 0
    for v in sets:
        out |= v
    return out


class NNF:
    """Manager of hash-consed NNF nodes over the features of a forest."""

    def __init__(self, features: Sequence[Feature]) -> None:
        self.features = tuple(features)
        self._full = [f.full for f in self.features]
        self.kind: list[int] = [CONST, CONST]
        # For LIT: (feature, mask); for AND/OR: sorted tuple of child ids; for CONST: ().
        self.args: list[tuple[int, ...]] = [(), ()]
        #: vars[n]: the features node n mentions (bitmask).
        self.vars: list[int] = [0, 0]
        self._unique: dict[tuple[int, tuple[int, ...]], int] = {}

    def __len__(self) -> int:
        return len(self.kind)

    def _node(self, kind: int, args: tuple[int, ...]) -> int:
        key = (kind, args)
        node = self._unique.get(key)
        if node is None:
            node = len(self.kind)
            self.kind.append(kind)
            self.args.append(args)
            if kind == LIT:
                self.vars.append(1 << args[0])
            else:
                v = 0
                for c in args:
                    v |= self.vars[c]
                self.vars.append(v)
            self._unique[key] = node
        return node

    # -- constructors ---------------------------------------------------------------------------

    def literal(self, feature: int, mask: int) -> int:
        """The literal ``feature ∈ mask`` (false if empty, true if all states)."""
        if mask == 0:
            return FALSE
        if mask == self._full[feature]:
            return TRUE
        return self._node(LIT, (feature, mask))

    def and2(self, a: int, b: int) -> int:
        if a == FALSE or b == FALSE:
            return FALSE
        if a == TRUE or a == b:
            return b
        if b == TRUE:
            return a
        return self._node(AND, (a, b) if a < b else (b, a))

    def or2(self, a: int, b: int) -> int:
        if a == TRUE or b == TRUE:
            return TRUE
        if a == FALSE or a == b:
            return b
        if b == FALSE:
            return a
        return self._node(OR, (a, b) if a < b else (b, a))

    def conj(self, children: Iterable[int]) -> int:
        """∧ of any number of nodes (true if none)."""
        return self._gate(AND, children, absorbing=FALSE, neutral=TRUE)

    def disj(self, children: Iterable[int]) -> int:
        """∨ of any number of nodes (false if none)."""
        return self._gate(OR, children, absorbing=TRUE, neutral=FALSE)

    def _gate(self, kind: int, children: Iterable[int], absorbing: int, neutral: int) -> int:
        kept = set()
        for c in children:
            if c == absorbing:
                return absorbing
            if c != neutral:
                kept.add(c)
        if not kept:
            return neutral
        if len(kept) == 1:
            return kept.pop()
        return self._node(kind, tuple(sorted(kept)))

    # -- traversal ------------------------------------------------------------------------------

    def reachable(self, roots: Iterable[int]) -> list[int]:
        """Ids of all nodes below the roots (roots included), ascending (= topological)."""
        seen = set()
        stack = list(roots)
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            if self.kind[n] >= AND:
                stack.extend(self.args[n])
        return sorted(seen)

    def fold(self, roots: Sequence[int], const: Callable[[bool], T], lit: Callable[[int, int], T],
             and_: Callable[[list[T]], T], or_: Callable[[list[T]], T]) -> list[T]:
        """Evaluate the roots bottom-up in any algebra (bitsets of worlds, BDDs, booleans…)."""
        value: dict[int, T] = {}
        for n in self.reachable(roots):
            kind, args = self.kind[n], self.args[n]
            if kind == CONST:
                value[n] = const(n == TRUE)
            elif kind == LIT:
                value[n] = lit(args[0], args[1])
            elif kind == AND:
                value[n] = and_([value[c] for c in args])
            else:
                value[n] = or_([value[c] for c in args])
        return [value[r] for r in roots]

    def evaluate(self, root: int, x: Sequence[int]) -> bool:
        """Truth value of a node on instance ``x`` (state indices)."""
        return self.fold([root], bool, lambda f, m: bool(m >> x[f] & 1), all, any)[0]

    def stats(self, roots: Sequence[int]) -> dict[str, int]:
        """Size (distinct nodes), edges and depth of the circuit below the roots."""
        depth: dict[int, int] = {}
        edges = 0
        nodes = self.reachable(roots)
        for n in nodes:
            if self.kind[n] >= AND:
                edges += len(self.args[n])
                depth[n] = 1 + max(depth[c] for c in self.args[n])
            else:
                depth[n] = 0
        return {"nodes": len(nodes), "edges": edges, "depth": max((depth[r] for r in roots), default=0)}

    def is_or_decomposable(self, roots: Sequence[int]) -> bool:
        """True iff no ∨ node below the roots has two children sharing a feature."""
        for n in self.reachable(roots):
            if self.kind[n] == OR:
                seen = 0
                for c in self.args[n]:
                    if self.vars[c] & seen:
                        return False
                    seen |= self.vars[c]
        return True

    def check_invariants(self) -> None:
        """Assert the manager's structural invariants (raises AssertionError)."""
        assert self.kind[FALSE] == CONST and self.kind[TRUE] == CONST
        assert len(self._unique) == len(self.kind) - 2
        for n in range(2, len(self.kind)):
            kind, args = self.kind[n], self.args[n]
            assert self._unique.get((kind, args)) == n, f"node {n} not in the unique table"
            if kind == LIT:
                f, m = args
                assert 0 <= f < len(self.features) and 0 < m < self._full[f], f"bad literal {n}"
            else:
                assert kind in (AND, OR) and len(args) >= 2, f"gate {n} with {len(args)} children"
                assert list(args) == sorted(set(args)), f"gate {n}: unsorted/duplicate children"
                assert all(TRUE < c < n for c in args), f"gate {n}: constant or later child"
            expected = 1 << args[0] if kind == LIT else sum_vars(self.vars[c] for c in args)
            assert self.vars[n] == expected, f"node {n}: wrong feature set"

    # -- export ---------------------------------------------------------------------------------

    def to_json(self, root: int, forest: Forest, class_name: str, ties: str) -> dict[str, Any]:
        """The ``rfcircuits.nnf/1`` document of one class formula (docs/formats.md)."""
        ids = self.reachable([root])
        renumber = {n: i for i, n in enumerate(ids)}
        nodes: list[dict[str, Any]] = []
        for n in ids:
            kind, args = self.kind[n], self.args[n]
            if kind == CONST:
                nodes.append({"const": n == TRUE})
            elif kind == LIT:
                nodes.append({"lit": [args[0], mask_states(args[1])]})
            else:
                nodes.append({KIND_NAMES[kind]: [renumber[c] for c in args]})
        return {"format": "rfcircuits.nnf/1", "class": class_name, "ties": ties,
                "features": [f.to_json() for f in forest.features], "nodes": nodes}

    def to_networkx(self, roots: Sequence[int]) -> Any:
        """A networkx DiGraph (edges parent → child) with ``kind`` and ``label`` attributes."""
        import networkx as nx

        graph = nx.DiGraph()
        for n in self.reachable(roots):
            graph.add_node(n, kind=KIND_NAMES[self.kind[n]], label=self.label(n))
            if self.kind[n] >= AND:
                graph.add_edges_from((n, c) for c in self.args[n])
        return graph

    def label(self, n: int) -> str:
        kind, args = self.kind[n], self.args[n]
        if kind == CONST:
            return "true" if n == TRUE else "false"
        if kind == LIT:
            feature = self.features[args[0]]
            return f"{feature.name}∈{{{','.join(feature.states[s] for s in mask_states(args[1]))}}}"
        return "∧" if kind == AND else "∨"

    def to_dot(self, roots: Sequence[int]) -> str:
        """Graphviz DOT text of the circuit below the roots."""
        lines = ["digraph nnf {"]
        for n in self.reachable(roots):
            shape = "box" if self.kind[n] <= LIT else "circle"
            lines.append(f"  n{n} [label={json.dumps(self.label(n), ensure_ascii=False)}, shape={shape}];")
            if self.kind[n] >= AND:
                lines.extend(f"  n{n} -> n{c};" for c in self.args[n])
        lines.append("}")
        return "\n".join(lines) + "\n"
