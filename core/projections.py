"""NRs and CEs by existential projections, for forests with few features (docs/algorithms.md).

The NRs of a decision are the minimal feature sets ``D`` such that some world that agrees
with the instance ``x`` outside ``D`` falsifies the class formula ``∧ roots`` (the prime
implicates of its complete reason; the CEs for a target class are the same on the graph of
``¬R^t``): the sets at which the projection ``∃D. ¬(∧ roots)`` holds at ``x``. The
projections do not depend on ``x``. With ``n`` features there are ``2^n`` of them; for small
``n`` (``MAX_FEATURES``) :class:`Projections` compiles them all once: per ordered graph ``g``
of the conjunction, each ``∃D. ¬g`` from one with a feature fewer
(``∃D. ¬g = ∃f. ∃(D ∖ {f}). ¬g``, :meth:`rfcircuits.dgraph.DG.exists`), then their disjunction
over ``g`` with Apply. An instance's minimal sets then take at most one path walk per set
(:meth:`rfcircuits.dgraph.DG.min_true_sets` skips the sets with a subset that holds) instead
of :meth:`rfcircuits.dgraph.DG.min_deviations`' search, whose cost grows with the part of the
graph the small deviation sets reach (appendicitis: up to 0.55 s). Same
definition, another algorithm: the two face each other and the oracles in the tests and
the harness.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from functools import reduce

from rfcircuits.apply import Apply
from rfcircuits.dgraph import DG, FALSE, TRUE

#: Most features for which projections are compiled (``2^n`` sets per graph).
MAX_FEATURES = 10


class TooLarge(Exception):
    """The projections would hold more nodes than allowed."""


class Projections:
    """``∃D. ¬(∧ roots)`` for every feature set ``D``, for a conjunction of ordered graphs.

    ``max_new_nodes`` bounds the nodes the projections add to the manager (``None``: only the
    manager's own budget); past it the constructor raises :class:`TooLarge`."""

    def __init__(self, dg: DG, roots: Sequence[int], max_new_nodes: int | None = None) -> None:
        n = len(dg.features)
        if n > MAX_FEATURES:
            raise TooLarge(f"{n} features: more than {MAX_FEATURES}")
        if not all(dg.ordered[r] for r in roots):
            raise ValueError("projections need ordered graphs")
        self.dg = dg
        start = len(dg)
        disj = Apply(dg).disj
        parts = [[dg.negate(r)] for r in roots]  # per root g: ∃D. ¬g by bitmask d
        #: row[d]: ∃D. ¬(∧ roots) = ∨_g ∃D. ¬g for the set D with bitmask d.
        self.row = array("i", [reduce(disj, (part[0] for part in parts), FALSE)])
        for d in range(1, 1 << n):
            low = d & -d  # ∃D from ∃(D minus its lowest feature)
            for part in parts:
                g = part[d ^ low]
                part.append(g if g <= TRUE else dg.exists(g, low.bit_length() - 1))
            self.row.append(reduce(disj, (part[d] for part in parts), FALSE))
            if max_new_nodes is not None and len(dg) - start > max_new_nodes:
                raise TooLarge(f"projections exceed {max_new_nodes} new nodes")

    @classmethod
    def restored(cls, dg: DG, row: Sequence[int]) -> Projections:
        """The projections whose rows, nodes of ``dg``, were compiled before (and saved:
        :mod:`rfcircuits.circuits`)."""
        self = cls.__new__(cls)
        self.dg = dg
        self.row = array("i", row)
        return self

    def min_deviations(self, x: Sequence[int]) -> list[int]:
        """What :meth:`rfcircuits.dgraph.DG.min_deviations` returns for the roots at ``x``: the
        minimal sets ``D`` at which ``∃D. ¬(∧ roots)`` holds, by size then value."""
        return self.dg.min_true_sets(self.row, x)
