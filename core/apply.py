"""Conjoin and disjoin weak test-once decision graphs (paper Alg. 4).

:meth:`Apply.generic` is Alg. 4 as written: it walks both graphs carrying the path ``p`` (the
feasible states of every feature), intersects branch states with ``p`` so the result is weak
test-once, and caches on ``(op, D1, D2, p*)`` where ``p*`` is ``p`` restricted to the features
of ``D1`` and ``D2``. Its terminal case conjoins/disjoins with a leaf and then removes the
states inconsistent with ``p`` (:meth:`Apply.restrict`). It runs on an explicit stack
(generator trampoline), because paths of weak test-once graphs may be longer than Python's
recursion limit.

Optimisations, as a BDD package would have them:

- **Terminal shortcuts**: ``a ∧ false = false``, ``a ∧ true = a``, ``a ∧ a = a`` and duals.
- **Operand ordering**: both operations are commutative, so cache keys put the smaller id first.
- **Global feature order**: when both operands are *ordered* (``DG.ordered``: features
  strictly increase along every path, hence test-once), :meth:`Apply.ordered` is the classic
  ordered-diagram Apply — no path needs carrying, since every test sees all states of its
  feature, and the cache key is ``(op, D1, D2)``. The result is again ordered. It runs in the
  manager's node store (:mod:`rfcircuits.dgstore`; the C extension by default), where a node's
  branches are run-length segments over its states, so the branch loop is a linear merge of
  two sorted segment lists. Its recursion depth is at most twice the number of features
  (a rank strictly increases at each level).
- **Node budget / timeout**: the manager raises ``BudgetExceeded`` (``--max-nodes``,
  ``--timeout``).
- The computed tables persist across calls (the ordered one is the store's, shared by every
  :class:`Apply` of the manager); :meth:`Apply.clear` drops them.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from rfcircuits.dgraph import FALSE, TRUE, DG
from rfcircuits.dgstore import AND, OR

Path = tuple[int, ...]


class Apply:
    """Apply for one :class:`DG` manager, with its computed tables."""

    def __init__(self, dg: DG) -> None:
        self.dg = dg
        self._generic_cache: dict[tuple[Any, ...], int] = {}
        self._restrict_cache: dict[tuple[int, Path], int] = {}

    def clear(self) -> None:
        """Drop the computed tables (nodes stay)."""
        self.dg.store.clear()
        self._generic_cache.clear()
        self._restrict_cache.clear()

    def conj(self, a: int, b: int) -> int:
        """``a ∧ b`` (ordered Apply when both are ordered, else Alg. 4)."""
        return self.apply(AND, a, b)

    def disj(self, a: int, b: int) -> int:
        """``a ∨ b`` (ordered Apply when both are ordered, else Alg. 4)."""
        return self.apply(OR, a, b)

    def apply(self, op: int, a: int, b: int) -> int:
        """``a op b`` (``AND`` or ``OR``), by ordered Apply when both are ordered, else Alg. 4."""
        ordered = self.dg.ordered
        if ordered[a] and ordered[b]:
            return self.ordered(op, a, b)
        return self.generic(op, a, b)

    def ordered(self, op: int, a: int, b: int) -> int:
        """Apply on two ordered graphs (see module docstring): the store's ordered Apply."""
        return self.dg.store.apply(op, a, b)

    # -- Alg. 4 ---------------------------------------------------------------------------------

    def generic(self, op: int, a: int, b: int, path: Path | None = None) -> int:
        """Paper Alg. 4 from path ``path`` (default: every state of every feature feasible)."""
        p = path if path is not None else tuple(self.dg.full)
        return _trampoline(self._alg4(op, a, b, p))

    def restrict(self, n: int, path: Path) -> int:
        """``n`` with the states inconsistent with ``path`` removed (weak test-once again)."""
        return _trampoline(self._restrict(n, path))

    def _key_path(self, node_vars: int, p: Path) -> Path:
        """``p*``: the part of the path on the given features (Alg. 4's cache key)."""
        out = []
        f = 0
        while node_vars:
            if node_vars & 1:
                out.append(p[f])
            node_vars >>= 1
            f += 1
        return tuple(out)

    def _alg4(self, op: int, a: int, b: int, p: Path) -> Generator[Any, int, int]:
        dg = self.dg
        if a <= TRUE or b <= TRUE:
            if op == AND:
                whole = FALSE if FALSE in (a, b) else (b if a == TRUE else a)
            else:
                whole = TRUE if TRUE in (a, b) else (b if a == FALSE else a)
            return (yield self._restrict(whole, p))
        if a > b:  # both operations are commutative: one cache entry per pair
            a, b = b, a
        key = (op, a, b, self._key_path(dg.vars[a] | dg.vars[b], p))
        cached = self._generic_cache.get(key)
        if cached is not None:
            return cached
        v1, v2 = dg.feature[a], dg.feature[b]
        edges = []
        if v1 == v2:
            for s1, c1 in dg.branches[a]:
                for s2, c2 in dg.branches[b]:
                    s = s1 & s2 & p[v1]
                    if s:
                        sub = p[:v1] + (s,) + p[v1 + 1:]
                        edges.append((s, (yield self._alg4(op, c1, c2, sub))))
        else:
            for s1, c1 in dg.branches[a]:
                s = s1 & p[v1]
                if s:
                    sub = p[:v1] + (s,) + p[v1 + 1:]
                    edges.append((s, (yield self._alg4(op, c1, b, sub))))
        result = dg.node(v1, edges)
        self._generic_cache[key] = result
        return result

    def _restrict(self, n: int, p: Path) -> Generator[Any, int, int]:
        dg = self.dg
        if n <= TRUE:
            return n
        key = (n, self._key_path(dg.vars[n], p))
        cached = self._restrict_cache.get(key)
        if cached is not None:
            return cached
        f = dg.feature[n]
        edges = []
        for m, c in dg.branches[n]:
            s = m & p[f]
            if s:
                edges.append((s, (yield self._restrict(c, p[:f] + (s,) + p[f + 1:]))))
        result = dg.node(f, edges)
        self._restrict_cache[key] = result
        return result


def _trampoline(gen: Generator[Any, int, int]) -> int:
    """Run generator-based recursion on an explicit stack (each ``yield`` is a sub-call)."""
    stack = [gen]
    value: Any = None
    while stack:
        try:
            value = stack[-1].send(value)
        except StopIteration as stop:
            stack.pop()
            value = stop.value
            continue
        stack.append(value)
        value = None
    return value
