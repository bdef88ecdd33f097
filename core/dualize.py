"""Minimal blockers and minimal freers of a monotone predicate, enumerated together by
dualize and advance (Gunopulos et al. 1997; the hitting-set duality MARCO-style enumerators
use), for the SAT engine (:mod:`rfcircuits.satengine`).

Fixing features of an instance to its states either *blocks* a goal (no world that agrees
with the instance on them satisfies it) or not, and blocking is monotone: fixing more
features blocks more. A *freer* is a set ``D`` of features such that fixing all the others
does not block. The minimal blockers of ``¬Δ`` are the SRs, its minimal freers the NRs;
the minimal freers of ``R^t`` are the CEs for ``t``. The two families are each other's
minimal hitting sets (a set blocks iff it meets every freer), which drives the loop:

1. a *map* solver over one variable per feature holds one clause per freer found (a
   candidate must meet it) and one per blocker found (a candidate must not contain it);
   its model, reduced to a minimal hitting set of the freers found, is the candidate ``H``;
2. if ``H`` blocks, it is a minimal blocker: each proper subset misses some freer, whose
   complement it lies in, so it does not block;
3. otherwise the world found differs from the instance on a freer ``D`` disjoint from ``H``,
   which is shrunk to a minimal freer by fixing its features one at a time (each world
   found on the way shrinks it further);
4. when the map solver has no model, both families are complete: a minimal freer not yet
   found would leave its complement as a candidate.

Every step adds a new item, so the number of oracle calls is at most the number of
blockers plus the sum of the sizes of the freers, and every item yielded is exact when it
is yielded: an enumeration stopped early gives correct, incomplete families.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from rfcircuits.forest import mask_states as bits
from rfcircuits.interrupts import interruptible

#: ``oracle(fixed)``: None when fixing the features of the bitmask ``fixed`` blocks the goal,
#: else the features on which a world that is not blocked differs from the instance.
Oracle = Callable[[int], "int | None"]

BLOCKER, FREER = True, False


def dualize(universe: int, oracle: Oracle) -> Iterator[tuple[bool, int]]:
    """Yield ``(BLOCKER, set)`` for every minimal blocker and ``(FREER, set)`` for every
    minimal freer of ``oracle`` over the features of ``universe`` (bitmasks), as they are
    found; the generator ends when both families are complete.

    With no freer at all (the goal cannot hold) the one minimal blocker is the empty set.
    """
    from pysat.solvers import Solver  # PySAT loads with the SAT engine's first use only

    freers = Freers()
    with Solver(name="minisat22") as hitting, interruptible():  # PySAT catches SIGINT
        while hitting.solve():
            model = hitting.get_model()
            h = 0
            for v in model:
                if v > 0 and universe >> (v - 1) & 1:
                    h |= 1 << (v - 1)
            h = freers.minimal_hitting(h)
            world = oracle(h)
            if world is None:
                yield BLOCKER, h
                if not h:
                    return
                hitting.add_clause([-(f + 1) for f in bits(h)])
                continue
            d = shrink_freer(world & universe & ~h, universe, oracle)
            freers.add(d)
            yield FREER, d
            hitting.add_clause([f + 1 for f in bits(d)])


class Freers:
    """Freers found, held per feature as the bitmask of the freers it meets (bit ``i``: the
    ``i``-th found), so that whether a set meets them all is a few big-int operations, not a
    pass over the freers."""

    def __init__(self) -> None:
        self.all = 0  # one bit per freer
        self.meets: dict[int, int] = {}

    def add(self, d: int) -> None:
        bit = self.all + 1  # the lowest bit not yet used
        self.all |= bit
        for f in bits(d):
            self.meets[f] = self.meets.get(f, 0) | bit

    def minimal_hitting(self, h: int) -> int:
        """``h`` (meeting every freer) without the members that no freer needs: a member
        stays when some freer meets ``h`` in it alone. ``O(|h|²)`` big-int operations."""
        for f in bits(h):
            rest = h & ~(1 << f)
            met = 0
            for g in bits(rest):
                met |= self.meets.get(g, 0)
            if met == self.all:
                h = rest
        return h

    def greedy_hitting(self) -> int:
        """A set meeting every freer, greedily: the feature meeting most freers not yet met,
        until all are (not the smallest, but found without a solver)."""
        h, left = 0, self.all
        while left:
            f = max(self.meets, key=lambda g: ((self.meets[g] & left).bit_count(), -g))
            h |= 1 << f
            left &= ~self.meets[f]
        return h


def shrink_freer(d: int, universe: int, oracle: Oracle) -> int:
    """A minimal freer inside the freer ``d``: each feature in turn is fixed too; a world
    still found replaces ``d`` by its (smaller or equal) deviations."""
    for f in bits(d):
        one = 1 << f
        if not d & one:
            continue  # a world found earlier left it already
        world = oracle(universe & ~(d & ~one))
        if world is not None:
            d = world & d & ~one
    return d
