"""Maximal boxes inside a set of points of a grid (a product of small axes), as bitmasks.

A grid over axes of ``counts[i]`` values numbers its points row-major (the last axis
fastest), so a set of points is one int, bit ``p`` for point ``p``, and a *box* is a tuple
of value masks, one per axis. :func:`boxes_in` lists the inclusion-maximal boxes inside a
set: the prime implicates of a set of clauses on a few features are the negations of the
maximal boxes inside the part of the grid they falsify (:mod:`rfcircuits.general`), and the
shortest flips of an instance are the maximal boxes inside the worlds that flip it
(:mod:`rfcircuits.flipgrid`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rfcircuits.forest import mask_states as bits


def grid_sizes(counts: Sequence[int]) -> list[int]:
    """Points per value of each axis below it, for axes of ``counts[i]`` values: the grid
    over axes ``i, i + 1, …`` has ``sizes[i]`` points, value ``s`` of axis ``i`` holding the
    block of ``sizes[i + 1]`` points from ``s * sizes[i + 1]``."""
    sizes = [1]
    for count in reversed(counts):
        sizes.append(sizes[-1] * count)
    return sizes[::-1]


def box_region(box: Sequence[int], sizes: Sequence[int], at: int) -> int:
    """The points of the grid over axes ``at, at + 1, …`` inside the box (values per axis).

    The last axis's block is one point, so its values are its points; each earlier axis
    copies the region below it to the blocks of its values."""
    region = box[-1]
    for i in range(len(box) - 2, at - 1, -1):
        block, grown = sizes[i + 1], 0
        for s in bits(box[i]):
            grown |= region << s * block
        region = grown
    return region


def boxes_in(region: int, sizes: Sequence[int], at: int) -> list[tuple[int, ...]]:
    """The maximal boxes (states per feature of ``features[at:]``) inside a set of points.

    Read by slices along the first feature: a box ``S × B`` lies inside iff ``B`` lies in
    every slice ``s ∈ S``; so the maximal ones are, for each intersection ``I`` of slices,
    the maximal boxes ``B`` inside ``I`` whose slices ``S(B) = {s : B ⊆ slice_s}`` are
    exactly those holding ``I`` (each maximal box comes from one ``I``: the intersection of
    its own slices). Recursion depth: the number of features."""
    if at == len(sizes) - 2:
        return [(region,)] if region else []
    block = sizes[at + 1]
    ones = (1 << block) - 1
    slices = [region >> s * block & ones for s in range(sizes[at] // block)]
    meets: dict[int, None] = {}
    for row in slices:
        for m in [row, *(row & m for m in meets)]:
            if m:
                meets[m] = None
    out = []
    for meet in meets:
        holding, others = 0, []
        for s, row in enumerate(slices):
            if row & meet == meet:
                holding |= 1 << s
            else:
                others.append(row)
        for rest in boxes_in(meet, sizes, at + 1):
            # the slices holding meet hold the box's part inside it; no other may
            inside = box_region((0,) * (at + 1) + rest, sizes, at + 1)
            if not any(row & inside == inside for row in others):
                out.append((holding, *rest))
    return out


