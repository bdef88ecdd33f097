"""Hash-consed decision graphs with true/false leaves (docs/algorithms.md; paper §3 "Tractable
Class Formulas").

A :class:`DG` manager owns immutable nodes with integer ids: the leaves ``FALSE`` (0) and
``TRUE`` (1) and decision nodes ``(feature, branches)`` whose branches ``(state mask, child)``
have disjoint non-empty masks. :meth:`DG.node` reduces (branches to the same child are merged;
a node whose branches all lead to one child *is* that child) and hash-conses, so equal nodes
are one id. Children have smaller ids than parents: ascending ids are a topological order, and
traversals here are loops.

A graph is **weak test-once** when along every path the branch states of a node are exactly
the states of its feature still feasible there (:meth:`DG.check_invariants`). With a global
feature order (``rank``) a node is *ordered* when its features strictly increase along every
path — then it is test-once, the case :mod:`rfcircuits.apply` accelerates; the flag is kept per node.

:class:`DG` is a facade over a node *store* that holds each node's branches as run-length
segments over state indices (see :mod:`rfcircuits.dgstore`) and implements hash-consing, ordered
Apply and negation: the C extension :mod:`rfcircuits._dgstore` (``_dgstore.c``, built by
``pip install``) or, when ``RFCIRCUITS_PURE_PYTHON=1`` is set or the install had no C
compiler, the pure-Python reference :class:`rfcircuits.dgstore.PyStore`. Both give the same node ids
for the same calls. :data:`BACKEND` names the active one. ``branches[n]`` (masks) is derived
from the segments by the store on first use. Both stores implement the interface
:class:`rfcircuits._store_abc.Store`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from rfcircuits._store_abc import Store
from rfcircuits.dgstore import FALSE, GAP, LEAF, TRUE, PyStore
from rfcircuits.errors import BudgetExceeded
from rfcircuits.forest import Feature, Forest, mask_blocks, mask_states, weak_test_once_violation

__all__ = ["BACKEND", "DG", "FALSE", "LEAF", "STORES", "TRUE"]

T = TypeVar("T")


def _stores() -> tuple[dict[str, type[Store]], str, Any]:
    """The available store classes by backend name, the default backend, and the C extension
    module (None when it is not the default)."""
    stores: dict[str, type[Store]] = {"python": PyStore}
    if os.environ.get("RFCIRCUITS_PURE_PYTHON") == "1":
        return stores, "python", None
    try:
        from rfcircuits import _dgstore
        from rfcircuits.cstore import CStore
    except ImportError:  # built without a C compiler: ``rfcircuits --version`` says so
        return stores, "python", None
    stores["c"] = CStore
    return stores, "c", _dgstore


#: Store classes by backend name ("c" when the extension loaded, and "python").
#: BACKEND: the backend new :class:`DG` managers use ("c" or "python").
#: NATIVE: the C extension module when BACKEND is "c" (it also serves
#: :func:`rfcircuits.primes.hitting_sets`), else None.
STORES, BACKEND, NATIVE = _stores()


def _budget_message(max_nodes: int | None) -> str:
    return f"decision graphs exceed --max-nodes {max_nodes}"


def backend_text() -> str:
    """The store in use as users are told it (``rfcircuits --version``, the demo)."""
    if BACKEND == "c":
        return "C extension"
    if os.environ.get("RFCIRCUITS_PURE_PYTHON") == "1":
        return "pure Python, as RFCIRCUITS_PURE_PYTHON=1 asks"
    return "pure Python: the C extension was not built at install, see the README"


class DG:
    """Manager of hash-consed decision-graph nodes over a forest's features."""

    def __init__(self, features: Sequence[Feature], order: Sequence[int] | None = None,
                 max_nodes: int | None = None, timeout: float | None = None,
                 deadline: float | None = None) -> None:
        self.features = tuple(features)
        self.full = [f.full for f in self.features]
        order = list(order) if order is not None else list(range(len(self.features)))
        if sorted(order) != list(range(len(self.features))):
            raise ValueError("order must be a permutation of the feature indices")
        #: rank[f]: position of feature f in the global order.
        self.rank = [0] * len(self.features)
        for position, f in enumerate(order):
            self.rank[f] = position
        self.max_nodes = max_nodes
        # ``deadline`` (a ``time.monotonic()`` value, with its ``timeout``): a compile's, set
        # when it started choosing its order; else ``timeout`` counts from now
        if deadline is None and timeout is not None:
            deadline = time.monotonic() + timeout
        self.deadline = deadline
        self._timeout = timeout
        self.backend = BACKEND
        self.store: Store = STORES[BACKEND](
            [f.n_states for f in self.features], self.rank, max_nodes, self.deadline,
            BudgetExceeded, _budget_message(max_nodes),
            "" if timeout is None else f"compilation exceeds --timeout {timeout:g} s")
        #: feature[n]: the feature node n tests (LEAF for the leaves).
        self.feature: Sequence[int] = self.store.feature
        #: ordered[n]: features strictly increase in rank along every path below n.
        self.ordered: Sequence[bool] = self.store.ordered
        #: branches[n]: ``(state mask, child)`` pairs sorted by lowest state (leaves: ``()``).
        self.branches = _Branches(self.store)
        #: vars[n]: features tested at or below node n (bitmask).
        self.vars = _Vars(self.store)
        self._literals: dict[tuple[int, int], int] = {}

    def __len__(self) -> int:
        return len(self.store)

    # -- construction ---------------------------------------------------------------------------

    def node(self, feature: int, branches: Iterable[tuple[int, int]]) -> int:
        """The reduced, hash-consed node testing ``feature`` with these (disjoint) branches."""
        runs = []  # (first state, end state, child) of each run of consecutive states
        for mask, child in branches:
            runs.extend((start, end, child) for start, end in mask_blocks(mask))
        runs.sort()
        segments: list[tuple[int, int]] = []
        covered = 0
        for start, end, child in runs:
            if start < covered:
                raise ValueError(f"node on feature {feature}: branch masks overlap")
            if start > covered:
                segments.append((start, GAP))
            if segments and segments[-1][1] == child:
                segments[-1] = (end, child)
            else:
                segments.append((end, child))
            covered = end
        n_states = self.features[feature].n_states
        if covered > n_states:
            raise ValueError(f"node on feature {feature}: state {covered - 1} does not exist")
        if covered < n_states:
            segments.append((n_states, GAP))
        return self.store.make(feature, tuple(segments))

    def literal(self, feature: int, mask: int) -> int:
        """The one-node graph of ``feature ∈ mask`` (memoised: trees repeat their tests)."""
        key = (feature, mask)
        n = self._literals.get(key)
        if n is None:
            n = self._literals[key] = self.node(
                feature, ((mask, TRUE), (self.full[feature] & ~mask, FALSE)))
        return n

    def set_max_nodes(self, max_nodes: int | None) -> None:
        """Replace the node budget (None: none): a compile that sifts its order decides so by
        compiling under a trial budget first, whose graphs then live on under the caller's."""
        self.max_nodes = max_nodes
        self.store.set_budget(max_nodes, _budget_message(max_nodes))

    def set_timeout(self, timeout: float | None) -> None:
        """Replace the time limit, counted from now (None: none): a compile tried under a
        short limit whose graphs then serve without one."""
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self._timeout = timeout
        self.store.set_deadline(self.deadline, "" if timeout is None
                                else f"compilation exceeds --timeout {timeout:g} s")

    def check_budget(self) -> None:
        """Raise :class:`BudgetExceeded` once the timeout has passed."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise BudgetExceeded(f"compilation exceeds --timeout {self._timeout:g} s")

    def negate(self, root: int) -> int:
        """``¬root``: the same graph with leaves swapped (memoised)."""
        return self.store.negate(root)

    def exists(self, root: int, feature: int) -> int:
        """``∃feature. root`` (some state of ``feature`` satisfies ``root``) of an ordered
        graph, as an ordered graph."""
        return self.store.exists(root, feature)

    def threshold(self, roots: Sequence[int], ks: Sequence[int]) -> list[int]:
        """Per ``k`` of ``ks``: "at least ``k`` of the ordered graphs ``roots`` are true" as an
        ordered graph (repeats count), by top-down expansion: the sub-problems are the
        number still needed and the residues of the roots, so no intermediate graph is
        built (:meth:`rfcircuits.dgstore.PyStore.threshold`)."""
        return self.store.threshold(list(roots), list(ks))

    def collect(self, roots: Sequence[int]) -> list[int]:
        """Garbage collection: keep only the nodes below ``roots`` (and the leaves), renumbered
        in the same relative order, and return the roots' new ids. Every other id, and every
        Apply cache of this manager, becomes invalid (:meth:`rfcircuits.apply.Apply.clear`)."""
        new = self.store.collect(list(roots))
        self._literals.clear()
        self.branches = _Branches(self.store)
        self.vars = _Vars(self.store)
        return new

    def dump(self, roots: Sequence[int]) -> tuple[bytes, list[int]]:
        """The nodes below ``roots`` as int32 words, children first, numbered by position,
        and the roots' numbers (:meth:`rfcircuits._store_abc.Store.dump`): what
        :meth:`load` makes again, here or in another manager over the same features and
        order (:mod:`rfcircuits.circuits` saves them)."""
        return self.store.dump(list(roots))

    def load(self, code: bytes, roots: Sequence[int]) -> list[int]:
        """Make the nodes of a :meth:`dump` and return the ids of its ``roots`` (ValueError
        naming the node when ``code`` does not hold such nodes)."""
        return self.store.load(code, list(roots))

    # -- traversal ------------------------------------------------------------------------------

    def reachable(self, roots: Iterable[int]) -> list[int]:
        """All node ids below the roots (roots included), ascending (= topological)."""
        return self.store.reachable(list(roots))

    def prepare_search(self, roots: Sequence[int]) -> None:
        """Do now the instance-independent part of :meth:`min_deviations` below ``roots``
        (the C store's contiguous layout of the graph, built in one pass over it), so that
        compiling, not the first explanation, pays for it."""
        self.store.prepare(list(roots))

    def min_deviations(self, roots: Sequence[int], x: Sequence[int]) -> list[int]:
        """The feature sets (bitmasks, by size then value) of the prime implicates of the
        complete reason of ``∧ roots`` at ``x``: NRs, or CEs on a negated class graph
        (docs/semantics.md §6, §10; the search is :func:`rfcircuits.dgstore.min_deviations`)."""
        return self.store.min_deviations(list(roots), list(x))

    def falsified(self, roots: Sequence[int], x: Sequence[int],
                  feature_sets: Sequence[int]) -> list[int]:
        """Per feature set (a bitmask): ``∃(the other features). ¬GR`` as an ordered graph
        testing only that set's features, GR the general reason of the ordered ``∧ roots``
        at ``x``: where on those features some world falsifies GR
        (:meth:`rfcircuits.dgstore.PyStore.falsified`)."""
        return self.store.falsified(list(roots), list(x), [mask_states(v) for v in feature_sets])

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
        """Truth value on instance ``x`` (follow the segment holding each state)."""
        return self.store.evaluate((root,), x) == b"\1"

    def min_true_sets(self, rows: Sequence[int], x: Sequence[int]) -> list[int]:
        """The sets ``d`` (bitmasks indexing ``rows``, a power of two of them) whose row holds
        at ``x`` while no proper subset's does, by size then value (the store's
        :meth:`~rfcircuits._store_abc.Store.min_true_sets`)."""
        return self.store.min_true_sets(rows, x)

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
        """Assert structure (canonical segments, reduced, hash-consed, children first, correct
        ``ordered`` flags) and the weak test-once property below the roots; raises
        AssertionError."""
        nodes = self.reachable(roots)
        store = self.store
        for n in nodes:
            if n <= TRUE:
                continue
            f, segments = self.feature[n], store.segments(n)
            assert store.lookup(f, segments) == n, f"node {n} not in the unique table"
            ends = [e for e, _ in segments]
            assert ends == sorted(set(ends)) and ends[0] > 0 \
                and ends[-1] == self.features[f].n_states, f"node {n}: bad segment ends"
            assert all(x[1] != y[1] for x, y in zip(segments, segments[1:])), \
                f"node {n}: adjacent segments lead to the same child"
            children = {c for _, c in segments if c != GAP}
            assert len(children) >= 2, f"node {n} is not reduced (one child)"
            assert max(children) < n, f"node {n}: a child was created later"
            ordered = all(c <= TRUE or self.ordered[c] and self.rank[self.feature[c]] > self.rank[f]
                          for c in children)
            assert self.ordered[n] == ordered, f"node {n}: wrong ordered flag"
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


class _Branches:
    """``branches[n]`` of a store's node: ``(state mask, child)`` per child, sorted by lowest
    state, computed on first use by the store (the C store converts its segments in C:
    converting them in Python was a large share of building a general reason:
    docs/decisions.md, "GR is built only where it is needed")."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._convert = store.branches
        self._cache: dict[int, tuple[tuple[int, int], ...]] = {FALSE: (), TRUE: ()}

    def __len__(self) -> int:
        return len(self._store)

    def __getitem__(self, n: int) -> tuple[tuple[int, int], ...]:
        branches = self._cache.get(n)
        if branches is None:
            branches = self._cache[n] = self._convert(n)
        return branches


class _Vars:
    """``vars[n]``: bitmask of the features tested at or below node ``n``, memoised on first
    use (Alg. 4 keys its cache on the path restricted to these features)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._memo: dict[int, int] = {FALSE: 0, TRUE: 0}

    def __len__(self) -> int:
        return len(self._store)

    def __getitem__(self, n: int) -> int:
        memo = self._memo
        value = memo.get(n)
        if value is not None:
            return value
        store = self._store
        stack = [n]
        while stack:  # post-order; paths of weak test-once graphs can be long, so no recursion
            m = stack[-1]
            if m in memo:
                stack.pop()
                continue
            children = [c for _, c in store.segments(m) if c != GAP]
            missing = [c for c in children if c not in memo]
            if missing:
                stack.extend(missing)
                continue
            value = 1 << store.feature[m]
            for c in children:
                value |= memo[c]
            memo[m] = value
            stack.pop()
        return memo[n]
