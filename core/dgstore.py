"""Decision-graph node store: the pure-Python reference implementation (docs/algorithms.md; paper §3
"Tractable Class Formulas", Alg. 4 and its ordered special case).

:class:`rfcircuits.dgraph.DG` is the public facade; it keeps its nodes in a *store*, either this
class or the C extension ``core/_dgstore.c``, which implements the same interface and, for the
same sequence of calls, creates the same nodes with the same ids. This one is the readable
reference the C code is tested against (``RFCIRCUITS_PURE_PYTHON=1`` selects it).

Representation. Node ``0`` is false, ``1`` is true; a decision node tests ``feature`` and
holds its branches as **run-length segments over the feature's state indices**: a tuple of
``(end_exclusive, child)`` with increasing ends, the last one equal to the feature's number of
states, and adjacent segments leading to different children. States not feasible at the node
(a weak test-once node below a re-test of its feature covers only the feasible states) lead to
the marker ``GAP``. ``(feature, segments)`` is the unique-table key, so equal nodes are one
id; children have smaller ids than parents. Reduction: a node whose non-gap segments all lead
to one child *is* that child.

A node is *ordered* when the ranks of the features strictly increase along every path below
it (``rank`` is the global feature order). On ordered nodes Apply is the classic
ordered-diagram Apply, and on segments its branch loop is a two-pointer merge of the sorted
segment lists: linear in their lengths, not quadratic in the branch counts.

Nodes live until :meth:`PyStore.collect` keeps only those below given roots (renumbering
them); the node budget bounds the decision nodes held at once.
"""

from __future__ import annotations

import sys
import time
from array import array
from collections.abc import Callable, Iterable, Sequence

FALSE = 0
TRUE = 1
#: ``feature`` of a leaf.
LEAF = -1
#: Child of the segments of states not feasible at a node.
GAP = -1
AND, OR = 0, 1
#: The node budget bounds the memory of :meth:`PyStore.threshold`'s sub-problems too: one of
#: ``m`` residues counts ``m + MEMO_ENTRY_WORDS`` 4-byte words, and every ``MEMO_NODE_WORDS``
#: of them one node (the C store's table; ``rfcircuits.budget.NODE_BYTES`` per node).
MEMO_ENTRY_WORDS = 12
MEMO_NODE_WORDS = 50

Segments = tuple[tuple[int, int], ...]


class PyStore:
    """Hash-consed nodes, ordered Apply, thresholds, negation and traversal (reference
    implementation).

    ``n_states[f]`` and ``rank[f]`` describe feature ``f``; ``max_nodes`` (decision nodes
    held) and ``deadline`` (a ``time.monotonic()`` value) bound the work and raise ``error``
    with ``nodes_message`` / ``time_message``. :meth:`make` trusts that its segments are
    canonical (the facade builds them); the C store also validates them.
    """

    def __init__(self, n_states: Sequence[int], rank: Sequence[int], max_nodes: int | None,
                 deadline: float | None, error: type[Exception], nodes_message: str,
                 time_message: str) -> None:
        self.n_states = list(n_states)
        self.rank = list(rank)
        #: feature[n]: the feature node n tests (LEAF for the leaves).
        self.feature: list[int] = [LEAF, LEAF]
        #: ordered[n]: feature ranks strictly increase along every path below n.
        self.ordered: list[bool] = [True, True]
        self._segments: list[Segments] = [(), ()]
        self._unique: dict[tuple[int, Segments], int] = {}
        self._negation: dict[int, int] = {FALSE: TRUE, TRUE: FALSE}
        self._computed: tuple[dict[tuple[int, int], int], ...] = ({}, {})
        self._max_nodes = max_nodes
        self._memo_words = 0  # of the threshold in progress
        self._deadline = deadline
        self._error = error
        self._messages = (nodes_message, time_message)
        depth_needed = 2 * len(self.n_states) + 50  # ordered Apply's depth bound, with slack
        if sys.getrecursionlimit() < depth_needed:
            sys.setrecursionlimit(depth_needed)

    def __len__(self) -> int:
        return len(self.feature)

    def segments(self, n: int, /) -> Segments:
        """The segments of node ``n`` (empty for a leaf)."""
        return self._segments[n]

    def branches(self, n: int, /) -> tuple[tuple[int, int], ...]:
        """Node ``n``'s ``(state mask, child)`` per feasible child, by lowest state."""
        return segments_branches(self._segments[n])

    def lookup(self, feature: int, segments: Segments, /) -> int:
        """The id of the node ``(feature, segments)``, or -1 if it does not exist."""
        return self._unique.get((feature, segments), -1)

    def make(self, feature: int, segments: Segments, /) -> int:
        """The reduced, hash-consed node for canonical ``segments`` (see module docstring)."""
        first = GAP  # reduction: look for a second distinct feasible child
        for _, child in segments:
            if child != GAP:
                if first == GAP:
                    first = child
                elif child != first:
                    break
        else:
            if first == GAP:
                raise ValueError("a decision node needs at least one feasible state")
            return first
        key = (feature, segments)
        n = self._unique.get(key)
        return self._create(key) if n is None else n

    def _create(self, key: tuple[int, Segments]) -> int:
        n = len(self.feature)
        if self._max_nodes is not None and n - 2 >= self._max_nodes:
            raise self._error(self._messages[0])
        if self._deadline is not None and n & 0x1FFF == 0 and time.monotonic() > self._deadline:
            raise self._error(self._messages[1])
        feature, segments = key
        rank = self.rank[feature]
        ordered = all(c <= TRUE or self.ordered[c] and self.rank[self.feature[c]] > rank
                      for _, c in segments if c != GAP)
        self.feature.append(feature)
        self.ordered.append(ordered)
        self._segments.append(segments)
        self._unique[key] = n
        return n

    def apply(self, op: int, a: int, b: int, /) -> int:
        """``a ∧ b`` (op 0) or ``a ∨ b`` (op 1) of two ordered nodes (ordered-diagram Apply)."""
        if not (self.ordered[a] and self.ordered[b]):
            raise ValueError("ordered Apply needs ordered operands")
        return self._apply(op, a, b)

    def _apply(self, op: int, a: int, b: int) -> int:
        # Terminal cases: a leaf operand decides, and both operations are idempotent.
        absorbing, neutral = (FALSE, TRUE) if op == AND else (TRUE, FALSE)
        if a == absorbing or b == absorbing:
            return absorbing
        if a == neutral or a == b:
            return b
        if b == neutral:
            return a
        if a > b:  # commutative: one cache entry per unordered pair
            a, b = b, a
        cache = self._computed[op]
        result = cache.get((a, b))
        if result is not None:
            return result
        fa, fb = self.feature[a], self.feature[b]
        ra, rb = self.rank[fa], self.rank[fb]
        out: list[tuple[int, int]] = []
        if ra == rb:  # same feature: merge the two sorted segment lists
            sa, sb = self._segments[a], self._segments[b]
            i = j = 0
            while i < len(sa):
                (ea, ca), (eb, cb) = sa[i], sb[j]
                end = min(ea, eb)
                _push(out, end, GAP if GAP in (ca, cb) else self._apply(op, ca, cb))
                i += ea == end
                j += eb == end
        elif ra < rb:  # a tests first: b is constant along every branch of a
            for end, c in self._segments[a]:
                _push(out, end, GAP if c == GAP else self._apply(op, c, b))
        else:
            for end, c in self._segments[b]:
                _push(out, end, GAP if c == GAP else self._apply(op, a, c))
        result = self.make(fa if ra <= rb else fb, tuple(out))
        cache[(a, b)] = result
        return result

    def negate(self, root: int, /) -> int:
        """``¬root``: the same graph with the leaves swapped (memoised both ways).

        The nodes still to negate are created in ascending id order (children first)."""
        neg = self._negation
        if root in neg:
            return neg[root]
        pending: set[int] = set()
        stack = [root]
        while stack:  # below a negated node everything is negated: stop there
            n = stack.pop()
            if n not in neg and n not in pending:
                pending.add(n)
                stack.extend(c for _, c in self._segments[n] if c != GAP)
        for n in sorted(pending):
            if n not in neg:
                m = self.make(self.feature[n], tuple((e, c if c == GAP else neg[c])
                                                     for e, c in self._segments[n]))
                neg[n] = m
                neg[m] = n
        return neg[root]

    def exists(self, root: int, feature: int, /) -> int:
        """``∃feature. root`` of an ordered node: each node testing ``feature`` replaced by the
        disjunction of its children (ordered Apply on a balanced tree of them, pairs in
        segment order), the nodes above it rebuilt, in ascending id order."""
        if not self.ordered[root]:
            raise ValueError("exists needs an ordered node")
        rank = self.rank[feature]
        result: dict[int, int] = {}
        for n in self.reachable([root]):
            f = self.feature[n]
            if n <= TRUE or self.rank[f] > rank:  # ordered: feature is not tested below
                result[n] = n
            elif f == feature:
                result[n] = self._disjoin([c for _, c in self._segments[n] if c != GAP])
            else:
                out: list[tuple[int, int]] = []
                for end, c in self._segments[n]:
                    _push(out, end, GAP if c == GAP else result[c])
                result[n] = self.make(f, tuple(out))
        return result[root]

    def _disjoin(self, kids: list[int]) -> int:
        """The disjunction of ordered nodes (false for none), by ordered Apply on a balanced
        tree of them, pairs in list order."""
        if not kids:
            return FALSE
        while len(kids) > 1:
            kids = [self._apply(OR, *kids[i:i + 2]) if i + 1 < len(kids) else kids[i]
                    for i in range(0, len(kids), 2)]
        return kids[0]

    def falsified(self, roots: Sequence[int], x: Sequence[int],
                  feature_sets: Sequence[Sequence[int]], /) -> list[int]:
        """Per feature set ``V``: ``∃(the features outside V). ¬GR``, where GR is the
        general reason of ``∧ roots`` at ``x``, as an ordered node testing only ``V``: the
        states of ``V`` at which some world falsifies GR (the GSRs on ``V`` are the maximal
        boxes containing ``x`` outside it, :mod:`rfcircuits.general`).

        By the closed form (:mod:`rfcircuits.reasons`) GR's clauses are the paths to false,
        each clause the complements of the branches the path takes away from ``x``. A world
        falsifies a clause iff it lies in every such branch; the other features being free,
        a state of ``V`` does iff it lies in the path's deviating branches on ``V``. So,
        bottom-up over the nodes below the roots (ascending ids): false becomes true and
        true false; a node testing a feature of ``V`` keeps its branches, each or-ed with
        what ``x``'s branch gives (a world may follow ``x``'s branch, which is no literal of
        the clause, with any state); a node testing another feature becomes the disjunction
        of its children's results. O(n) per set plus the Apply calls (the C store lists the
        nodes once for all the sets)."""
        if not all(self.ordered[n] for n in roots):
            raise ValueError("falsified needs ordered nodes")
        nodes = self.reachable(roots)
        out = []
        for features in feature_sets:
            on = set(features)
            result = {FALSE: TRUE, TRUE: FALSE}
            for n in nodes:
                if n <= TRUE:
                    continue
                f = self.feature[n]
                segments = self._segments[n]
                if f in on:
                    own = next(c for end, c in segments if x[f] < end)
                    own = FALSE if own == GAP else result[own]
                    branches: list[tuple[int, int]] = []
                    for end, c in segments:
                        _push(branches, end,
                              GAP if c == GAP else self._apply(OR, result[c], own))
                    result[n] = self.make(f, tuple(branches))
                else:
                    result[n] = self._disjoin([result[c] for _, c in segments if c != GAP])
            out.append(self._disjoin([result[r] for r in roots]))
        return out

    def threshold(self, roots: Sequence[int], ks: Sequence[int], /) -> list[int]:
        """Per ``k`` of ``ks``: the ordered node of "at least ``k`` of ``roots`` are true"
        (ordered roots, a multiset), by top-down expansion (:meth:`_threshold`); the
        sub-problems are shared by the ``ks`` of one call."""
        if not all(self.ordered[n] for n in roots):
            raise ValueError("threshold needs ordered nodes")
        rest = tuple(sorted(n for n in roots if n > TRUE))
        trues = sum(n == TRUE for n in roots)
        memo: dict[tuple[int, tuple[int, ...]], int] = {}
        self._memo_words = 0
        return [self._threshold(k - trues, rest, memo) for k in ks]

    def _threshold(self, need: int, rest: tuple[int, ...],
                   memo: dict[tuple[int, tuple[int, ...]], int]) -> int:
        """The node of: at least ``need`` of ``rest`` (sorted decision nodes) are true. It
        tests the first feature (by rank) any of them tests; on each block of its states where no
        residue changes child, the residues move to those children, leaves leave the list (a
        true one lowers ``need``), and the rest is the block's sub-problem, memoised. Every
        level raises the first tested rank: the depth is at most the number of features."""
        if need <= 0:
            return TRUE
        if need > len(rest):
            return FALSE
        key = (need, rest)
        result = memo.get(key)
        if result is not None:
            return result
        feature = min((self.feature[n] for n in rest), key=self.rank.__getitem__)
        testing = [n for n in rest if self.feature[n] == feature]
        kept = [n for n in rest if self.feature[n] != feature]
        cursor = [0] * len(testing)
        out: list[tuple[int, int]] = []
        while True:
            segs = [self._segments[n][i] for n, i in zip(testing, cursor)]
            end = min(e for e, _ in segs)
            kids = [c for _, c in segs]
            if GAP in kids:
                child = GAP
            else:
                child = self._threshold(need - kids.count(TRUE),
                                        tuple(sorted(kept + [c for c in kids if c > TRUE])), memo)
            _push(out, end, child)
            if end == self.n_states[feature]:
                break
            cursor = [c + (e == end) for c, (e, _) in zip(cursor, segs)]
        result = self.make(feature, tuple(out))
        self._memo_words += len(rest) + MEMO_ENTRY_WORDS
        if (self._max_nodes is not None
                and len(self.feature) - 2 + self._memo_words // MEMO_NODE_WORDS > self._max_nodes):
            raise self._error(self._messages[0])
        memo[key] = result
        return result

    def tree_formulas(self, codes: Sequence[bytes], k: int, /
                      ) -> tuple[list[list[int]], list[list[int]]]:
        """``pos[c][l]``, ``neg[c][l]``: ``C^c_l`` and its negation as ordered graphs, per
        tree code (:func:`rfcircuits.dgcompile.tree_code`: entries children first, the root
        last) and class. A node whose children all lie below its feature is made directly
        (states of no branch lead to false); any other is ``∨ (literal ∧ child)`` over its
        branches by ordered Apply, in branch order."""
        if k < 1:
            raise ValueError("tree_formulas needs at least one class")
        pos: list[list[int]] = [[] for _ in range(k)]
        neg: list[list[int]] = [[] for _ in range(k)]
        for code in codes:
            values: tuple[list[list[int]], list[list[int]]] = ([], [])  # C^c, ¬C^c per entry
            for entry in _tree_entries(array("i", code)):
                for polarity, value in enumerate(values):  # node ids follow this call order
                    if isinstance(entry, int):  # a leaf voting for class ``entry``
                        value.append([int((c == entry) != polarity) for c in range(k)])
                    else:
                        f, branches = entry
                        value.append([self._tree_node(f, [(blocks, value[i][c])
                                                          for i, blocks in branches])
                                      for c in range(k)])
            for c in range(k):
                pos[c].append(values[0][-1][c])
                neg[c].append(values[1][-1][c])
        return pos, neg

    def _tree_node(self, f: int, kids: list[tuple[list[tuple[int, int]], int]]) -> int:
        """One node of :meth:`tree_formulas` from its branches ``(state runs, child)``."""
        rank = self.rank[f]
        if all(c <= TRUE or self.rank[self.feature[c]] > rank for _, c in kids):
            return self._runs_node(f, [(s, e, c) for blocks, c in kids for s, e in blocks])
        out = FALSE
        for blocks, child in kids:
            literal = self._runs_node(f, [(s, e, TRUE) for s, e in blocks])
            out = self._apply(OR, out, self._apply(AND, literal, child))
        return out

    def _runs_node(self, f: int, runs: list[tuple[int, int, int]]) -> int:
        """The node of feature ``f`` whose states in the disjoint ``(start, end, child)`` runs
        lead to their children and all others to false."""
        out: list[tuple[int, int]] = []
        covered = 0
        for start, end, child in sorted(runs):
            if start < covered or end > self.n_states[f]:
                raise ValueError(f"node on feature {f}: branch masks overlap or name a state "
                                 "that does not exist")
            if start > covered:
                _push(out, start, FALSE)
            _push(out, end, child)
            covered = end
        if covered < self.n_states[f]:
            _push(out, self.n_states[f], FALSE)
        return self.make(f, tuple(out))

    def evaluate(self, roots: Sequence[int], x: Sequence[int], /) -> bytes:
        """Bit ``i`` (little-endian) set when instance ``x`` reaches the true leaf from
        ``roots[i]`` (a state that is not feasible on the path raises ValueError)."""
        value = 0
        for i, n in enumerate(roots):
            while n > TRUE:
                state = x[self.feature[n]]
                n = next(c for end, c in self._segments[n] if state < end)
                if n == GAP:
                    raise ValueError("the instance's state is not feasible on its path")
            value |= n << i
        return value.to_bytes((len(roots) + 7) // 8, "little")

    def min_true_sets(self, rows: Sequence[int], x: Sequence[int], /) -> list[int]:
        """The sets ``d`` (bitmasks indexing ``rows``, a power of two of them) whose row holds
        at ``x`` while no proper subset's does, by size then value. A set with a subset known
        to hold (then so does ``d`` minus one element) is not walked."""
        n = len(rows)
        if n == 0 or n & (n - 1):
            raise ValueError("rows: expected a power of two of them")
        if any(not 0 <= r < len(self.feature) for r in rows):
            raise IndexError("no decision-graph node among the rows")
        held = [False] * n  # the row of d or of a subset of d holds
        found = []
        for d in sorted(range(n), key=lambda d: (d.bit_count(), d)):
            held[d] = any(held[d ^ 1 << f] for f in range(n.bit_length() - 1) if d >> f & 1)
            if not held[d] and self.evaluate([rows[d]], x) == b"\1":
                held[d] = True
                found.append(d)
        return found

    def reachable(self, roots: Iterable[int], /) -> list[int]:
        """All node ids below the roots (roots included), ascending (= topological)."""
        seen: set[int] = set()
        stack = list(roots)
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(c for _, c in self._segments[n] if c != GAP)
        return sorted(seen)

    def dump(self, roots: Sequence[int], /) -> tuple[bytes, list[int]]:
        """The decision nodes below ``roots`` as native int32 words, in ascending id order
        (children first): per node its feature, its number of segments and each segment's
        ``(end, child)``. Nodes are numbered by position, the leaves 0 and 1 and the ``i``-th
        node written ``2 + i`` (``GAP`` stays -1); returns the words and the roots' numbers."""
        if any(not 0 <= r < len(self.feature) for r in roots):
            raise IndexError("no decision-graph node among the roots")
        number = {FALSE: FALSE, TRUE: TRUE, GAP: GAP}
        words = array("i")
        for n in self.reachable(roots):
            if n <= TRUE:
                continue
            number[n] = len(number) - 1
            segments = self._segments[n]
            words.extend((self.feature[n], len(segments)))
            for end, child in segments:
                words.extend((end, number[child]))
        return words.tobytes(), [number[r] for r in roots]

    def load(self, code: bytes, roots: Sequence[int], /) -> list[int]:
        """Make the nodes of a :meth:`dump` (hash-consed with those held, so they get this
        store's ids) and return the ids of ``roots``, numbered as in the dump. Words that are
        not such nodes over these features, each child written before its parent, raise
        ValueError naming the node by its number; the budget and deadline apply as in
        :meth:`make`."""
        if len(code) % 4:
            raise ValueError(f"{len(code)} bytes are not whole 4-byte words")
        words = array("i")
        words.frombytes(code)
        ids = [FALSE, TRUE]
        at = 0
        while at < len(words):
            node = len(ids)
            f = words[at]
            k = words[at + 1] if at + 1 < len(words) else 0
            if not 0 <= f < len(self.n_states):
                raise ValueError(f"node {node}: no feature {f}")
            if not 1 <= k <= self.n_states[f] or at + 2 + 2 * k > len(words):
                raise ValueError(f"node {node}: {k} segments, of a feature of "
                                 f"{self.n_states[f]} states, in {len(words) - at - 2} words")
            segments: list[tuple[int, int]] = []
            previous = 0
            for end, child in zip(words[at + 2:at + 2 + 2 * k:2], words[at + 3:at + 2 + 2 * k:2]):
                if not previous < end <= self.n_states[f] or not GAP <= child < node:
                    raise ValueError(f"node {node}: segment ({end}, {child}) is not after "
                                     f"state {previous} or its child not a node before it")
                _push(segments, end, GAP if child == GAP else ids[child])
                previous = end
            if previous != self.n_states[f] or all(c == GAP for _, c in segments):
                raise ValueError(f"node {node}: segments end at state {previous} of "
                                 f"{self.n_states[f]}, or lead to no child")
            ids.append(self.make(f, tuple(segments)))
            at += 2 + 2 * k
        if any(not 0 <= r < len(ids) for r in roots):
            raise ValueError(f"roots: not all among the {len(ids)} nodes loaded")
        return [ids[r] for r in roots]

    def collect(self, roots: Sequence[int], /) -> list[int]:
        """Keep only the leaves and the nodes below ``roots``, renumbered in ascending order of
        their ids (children still come first); drop the computed tables. Returns the new ids
        of the roots; every other id becomes invalid."""
        keep = self.reachable([FALSE, TRUE, *roots])
        new = {old: i for i, old in enumerate(keep)}
        # In place: the facade holds these two lists.
        self.feature[:] = [self.feature[n] for n in keep]
        self.ordered[:] = [self.ordered[n] for n in keep]
        self._segments = [tuple((e, c if c == GAP else new[c]) for e, c in self._segments[n])
                          for n in keep]
        self._unique = {(self.feature[n], self._segments[n]): n for n in range(2, len(keep))}
        self._negation = {new[a]: new[b] for a, b in self._negation.items()
                          if a in new and b in new}
        self.clear()
        return [new[r] for r in roots]

    def clear(self, /) -> None:
        """Drop the computed tables of Apply (nodes and negations stay)."""
        for table in self._computed:
            table.clear()

    def set_budget(self, max_nodes: int | None, message: str, /) -> None:
        """Replace the node budget and its message."""
        self._max_nodes = max_nodes
        self._messages = (message, self._messages[1])

    def set_deadline(self, deadline: float | None, message: str, /) -> None:
        """Replace the deadline and its message."""
        self._deadline = deadline
        self._messages = (self._messages[0], message)

    def node_bytes(self, /) -> int:
        """Bytes of the per-node lists, the segment tuples and the unique table."""
        size = sys.getsizeof
        return (size(self.feature) + size(self.ordered) + size(self._segments) + size(self._unique)
                + sum(size(s) + sum(map(size, s)) for s in self._segments))

    def prepare(self, roots: Sequence[int], /) -> None:
        """Ready the search of :meth:`min_deviations` below ``roots`` ahead of time: nothing
        to do here (the C store lays the graph out contiguously)."""

    def min_deviations(self, roots: Sequence[int], x: Sequence[int], /) -> list[int]:
        """See :func:`min_deviations`."""
        return min_deviations(self.feature, self.segments, roots, x)


def min_deviations(feature: Sequence[int], segments: Callable[[int], Segments],
                   roots: Sequence[int], x: Sequence[int]) -> list[int]:
    """The inclusion-minimal *deviation sets* of the paths from ``roots`` to false, as
    feature bitmasks sorted by size then value: the feature sets of the prime implicates of
    the complete reason of ``∧ roots`` at ``x``, i.e. the NRs (docs/semantics.md §6; for the
    graph of ``¬R^t``, the CEs for target ``t``) — read off the graph without building CR.

    Why this is the prime implicates: by the closed form (:mod:`rfcircuits.reasons`) the clauses of
    the complete reason are, bottom-up, those of the branch holding ``x[X]`` plus those of
    every other branch with ``X`` added, and, where ``x[X]`` is not feasible, those of every
    branch unchanged; false gives the empty clause, true none. So the clauses are the
    deviation sets of the paths to false — the features ``X`` whose tests the path passes on
    a branch without ``x[X]`` while ``x[X]`` is feasible — and the primes are the minimal ones.

    The search is best-first by size: level ``k`` holds the states ``(node, set)`` with
    ``k`` features in the set; branches keeping the set stay in the level, the others go to
    level ``k + 1``. A false leaf reached with a set that holds no set found so far is a new
    minimal one (found sets are no larger). States are pruned when their set holds a found
    set (every completion would too) or a set already expanded at that node (its completions
    are supersets of that set's). So the search touches the part of the graph within the
    minimal sets' reach, not the whole graph — far less than the reason's bottom-up
    expansion on large forests. :meth:`PyStore.min_deviations` and the C store's method
    agree (the C one packs sets in 64 bits)."""
    found: list[int] = []
    expanded: dict[int, list[int]] = {}
    level = [(r, 0) for r in roots]
    while level:
        later: list[tuple[int, int]] = []
        while level:
            n, held = level.pop()
            if n <= TRUE:
                if n == FALSE and not any(f & ~held == 0 for f in found):
                    found.append(held)
                continue
            if any(f & ~held == 0 for f in found):
                continue
            seen = expanded.setdefault(n, [])
            if any(s & ~held == 0 for s in seen):
                continue
            seen.append(held)
            f = feature[n]
            state, bit = x[f], 1 << f
            start = 0
            own = GAP
            for end, child in segments(n):
                if start <= state < end:
                    own = child
                start = end
            free = own == GAP or held & bit  # x[X] infeasible, or X already deviates
            for end, child in segments(n):
                if child == GAP:
                    continue
                if free or child == own:
                    level.append((child, held))
                else:
                    later.append((child, held | bit))
        level = later
    return sorted(found, key=lambda s: (s.bit_count(), s))


def _push(out: list[tuple[int, int]], end: int, child: int) -> None:
    """Append a segment, extending the previous one when it leads to the same child."""
    if out and out[-1][1] == child:
        out[-1] = (end, child)
    else:
        out.append((end, child))


def segments_branches(segments: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """A node's ``(state mask, child)`` per child from its segments, in the order of the
    children's lowest states (infeasible segments dropped)."""
    masks: dict[int, int] = {}  # insertion order = order of the lowest states
    start = 0
    for end, child in segments:
        if child != GAP:
            masks[child] = masks.get(child, 0) | (1 << end) - (1 << start)
        start = end
    return tuple((m, c) for c, m in masks.items())


#: A decoded tree-code entry: a leaf's class, or ``(feature, [(child entry, runs), ...])``.
TreeEntry = int | tuple[int, list[tuple[int, list[tuple[int, int]]]]]


def _tree_entries(code: Sequence[int]) -> list[TreeEntry]:
    """The entries of a tree code (:func:`rfcircuits.dgcompile.tree_code`), in its order."""
    entries: list[TreeEntry] = []
    i = 0
    while i < len(code):
        if code[i] < 0:
            entries.append(-1 - code[i])
            i += 1
            continue
        feature, n_branches = code[i], code[i + 1]
        i += 2
        branches = []
        for _ in range(n_branches):
            child, n_runs = code[i], code[i + 1]
            branches.append((child, [(code[i + 2 + 2 * r], code[i + 3 + 2 * r])
                                     for r in range(n_runs)]))
            i += 2 + 2 * n_runs
        entries.append((feature, branches))
    if not entries:
        raise ValueError("empty tree code")
    return entries
