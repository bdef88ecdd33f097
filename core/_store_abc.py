"""The interface of a decision-graph node store, which :class:`rfcircuits.dgraph.DG` (the
facade) and the compilers use; declared the way ``dd/_abc.py`` declares the BDD interface that
dd's Python and CUDD backends implement.

Two stores implement it: :class:`rfcircuits.dgstore.PyStore`, the readable reference, and
:class:`rfcircuits.cstore.CStore`, the C extension ``rfcircuits._dgstore.Store`` with its own
limits handled in its Python subclass. For the same calls both create the same nodes with the
same ids (tests/test_store_interface.py checks every method). Node ``0`` is false, ``1`` true;
a decision node tests a feature and holds its branches as run-length *segments*
``((end_exclusive, child), ...)`` over the feature's states, ``GAP`` (-1) for states not
feasible there; children have smaller ids than parents. ``N`` below is the number of nodes
held, ``n`` the number of nodes below the roots of a call, ``k`` the number of features.
Methods take their arguments by position only (the C store's calling convention).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

#: A node's segments: ``(end_exclusive, child)`` with increasing ends.
Segments = tuple[tuple[int, int], ...]


@runtime_checkable
class Store(Protocol):
    """Hash-consed decision-graph nodes with ordered Apply, negation, thresholds and the
    searches the explanations run on a class graph."""

    #: feature[n]: the feature node n tests (``LEAF`` = -1 for the leaves).
    feature: Sequence[int]
    #: ordered[n]: feature ranks strictly increase along every path below n.
    ordered: Sequence[bool]

    def __len__(self) -> int:
        """The number of nodes held, leaves included. O(1)."""

    def segments(self, n: int, /) -> Segments:
        """Node ``n``'s segments (empty for a leaf). O(segments)."""

    def branches(self, n: int, /) -> tuple[tuple[int, int], ...]:
        """Node ``n``'s ``(state mask, child)`` per feasible child, in the order of the
        children's lowest states (empty for a leaf). O(segments)."""

    def lookup(self, feature: int, segments: Segments, /) -> int:
        """The id of the node ``(feature, segments)``, or -1 when there is none. O(segments)
        expected (unique table)."""

    def make(self, feature: int, segments: Segments, /) -> int:
        """The reduced, hash-consed node of canonical ``segments``: a node whose feasible
        segments all lead to one child is that child. O(segments) expected; raises the
        store's budget error past its node budget or deadline."""

    def apply(self, op: int, a: int, b: int, /) -> int:
        """``a ∧ b`` (op 0) or ``a ∨ b`` (op 1) of two ordered nodes: ordered-diagram Apply,
        the test-once special case of paper Alg. 4; memoised in the store's computed tables.
        O(|a| · |b|) nodes visited at worst."""

    def negate(self, root: int, /) -> int:
        """``¬root``: the same graph with the leaves swapped (the negation step of paper
        Alg. 3). Memoised both ways; O(n) for the nodes not negated before."""

    def exists(self, root: int, feature: int, /) -> int:
        """``∃feature. root`` of an ordered node, as an ordered node (the disjunction of the
        children of each node testing ``feature``, the nodes above rebuilt). O(n) plus the
        Apply calls."""

    def falsified(self, roots: Sequence[int], x: Sequence[int],
                  feature_sets: Sequence[Sequence[int]], /) -> list[int]:
        """Per feature set ``V``: ``∃(the features outside V). ¬GR`` as an ordered node on
        ``V``, GR the general reason of the ordered ``∧ roots`` at ``x``
        (:meth:`rfcircuits.dgstore.PyStore.falsified`): what the GSRs on ``V`` avoid.
        O(n) per set plus the Apply calls."""

    def threshold(self, roots: Sequence[int], ks: Sequence[int], /) -> list[int]:
        """Per ``k`` of ``ks``: the ordered node of "at least ``k`` of the ordered ``roots``
        are true" (a multiset), built top-down from the roots' residues; counts votes in
        place of paper Alg. 1–2's sorting network. Sub-problems are shared by the ``ks``;
        their memory counts against the node budget."""

    def tree_formulas(self, codes: Sequence[bytes], k: int, /
                      ) -> tuple[list[list[int]], list[list[int]]]:
        """``(pos, neg)``: ``pos[c][l]`` is the ordered graph of ``C^c_l`` (tree ``l`` votes
        for class ``c``) and ``neg[c][l]`` of its negation, for trees in the format of
        :func:`rfcircuits.dgcompile.tree_code` and ``k`` classes: the tree stage of paper
        Alg. 3 (closed form ``∨_k ([X ∈ S_k] ∧ C(child))`` by ordered Apply; a node whose
        children all lie below its feature is made directly). O(tree nodes · k) calls."""

    def evaluate(self, roots: Sequence[int], x: Sequence[int], /) -> bytes:
        """Bit ``i`` (little-endian) set when instance ``x`` reaches true from ``roots[i]``.
        O(path lengths)."""

    def min_true_sets(self, rows: Sequence[int], x: Sequence[int], /) -> list[int]:
        """The sets ``d`` (bitmasks indexing ``rows``, whose number is a power of two) such that
        ``rows[d]`` holds at instance ``x`` and no ``rows[d']`` for a proper subset ``d'`` of
        ``d`` does, ordered by size then value: the minimal true sets of the NR/CE projections
        (:mod:`rfcircuits.projections`). Walks only the rows no subset of which holds: when
        the rows are upward closed (as the projections are) most of them are never walked.
        O(n log n + path lengths of the rows walked)."""

    def reachable(self, roots: Sequence[int], /) -> list[int]:
        """All node ids below the roots (roots included), ascending (= topological). O(n)."""

    def dump(self, roots: Sequence[int], /) -> tuple[bytes, list[int]]:
        """``(words, numbers)``: the decision nodes below ``roots`` as native-endian int32
        words in ascending id order (children first), per node its feature, its number of
        segments and each segment's ``(end, child)``; nodes are numbered by position (the
        leaves 0 and 1, the ``i``-th node written ``2 + i``, ``GAP`` -1), children and the
        roots' ``numbers`` too. O(n)."""

    def load(self, code: bytes, roots: Sequence[int], /) -> list[int]:
        """Make the nodes of a :meth:`dump`'s ``code`` in turn (hash-consed: into an empty
        store they get the numbers as ids) and return the ids of ``roots`` given by number.
        Words that are not such nodes over the store's features, each child before its
        parent, raise ValueError naming the node's number. O(words) expected; the budget
        and deadline apply as in :meth:`make`."""

    def collect(self, roots: Sequence[int], /) -> list[int]:
        """Garbage collection: keep the leaves and the nodes below ``roots``, renumbered in
        ascending order, drop the computed tables, and return the roots' new ids. O(N)."""

    def node_bytes(self, /) -> int:
        """The memory the nodes occupy, in bytes: their features, branch lists and unique
        table, not Apply's computed tables (caches). O(1) in C; the reference store sums its
        Python objects' sizes, O(N)."""

    def set_budget(self, max_nodes: int | None, message: str, /) -> None:
        """Replace the node budget given at construction (None: none) and the message of the
        budget error; the nodes held stay. O(1)."""

    def set_deadline(self, deadline: float | None, message: str, /) -> None:
        """Replace the deadline given at construction (a ``time.monotonic()`` value; None:
        none) and the message of the time error; the nodes held stay. O(1)."""

    def clear(self, /) -> None:
        """Drop Apply's computed tables (nodes and negations stay). O(table size)."""

    def prepare(self, roots: Sequence[int], /) -> None:
        """Do now the instance-independent part of :meth:`min_deviations` below ``roots``
        (the C store lays the graph out contiguously; the reference has nothing to do)."""

    def min_deviations(self, roots: Sequence[int], x: Sequence[int], /) -> list[int]:
        """The inclusion-minimal deviation sets of the paths from ``roots`` to false at
        ``x``, as feature bitmasks by size then value: the NRs (or, on a negated class
        graph, the CEs), found best-first by size (:func:`rfcircuits.dgstore.min_deviations`).
        Exponential in the size of the sets at worst; any number of features."""
