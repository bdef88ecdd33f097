"""Totalizer: a counting network of direct merges (Bailleux & Boufkhad 2003), for Alg. 3B.

The decision-graph compile (:mod:`rfcircuits.dgcompile`) counts votes with this network instead of
the odd-even network of paper Alg. 1–2 (:mod:`rfcircuits.sortnet`); both are built from the same
comparator operations (``max`` = ∨, ``min`` = ∧) and compute the same outputs ``y_k`` ("at
least ``k`` inputs are true"), so the class formulas, and with a global feature order their
canonical graphs, are the same. What differs is the intermediate functions:

- here every intermediate is itself a threshold of a block of consecutive trees,
  ``T_B[k] = [Σ_{l ∈ B} count_l >= k]``, merged directly:
  ``T_{A∪B}[k] = ∨_{a+b=k} T_A[a] ∧ T_B[b]``;
- inside an odd-even merge, wires are thresholds of interleaved subsequences of sorted
  outputs, such as ``[⌈a/2⌉ + ⌈b/2⌉ >= k]`` for block counts ``a`` and ``b``, whose graphs
  must track the counts' parities as well as their sums.

The direct merge takes more operations (quadratic in the block sizes instead of
``n log² n``), but each builds a smaller graph. Where the graphs are large that wins; where
many trees meet small graphs the extra operations cost more than they save (docs/decisions.md,
"Decision graphs count votes top-down"). For NNF circuits, whose size
is the gate count, the odd-even network stays (paper Alg. 3).

Only the thresholds that the wanted outputs depend on are built: a block's range of ``k``
follows from its parent's range and its sibling's size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from rfcircuits.ops import Ops

T = TypeVar("T")


def counts(groups: Sequence[Sequence[T]], wanted: Sequence[int], ops: Ops[T]) -> list[T]:
    """``[Σ_l count_l >= k]`` for each ``k`` in ``wanted`` (each at least 1), where
    ``groups[l][m-1]`` is ``[count_l >= m]`` (a tree contributes ``0..len(groups[l])``).

    The blocks halve the trees, so the recursion is ``⌈log2(len(groups))⌉`` deep."""
    if not groups or min(wanted) < 1:
        raise ValueError("need at least one group and thresholds k >= 1")
    start = [0]
    for g in groups:
        start.append(start[-1] + len(g))
    true = object()  # the constant true threshold ``k <= 0``, folded away

    def conj(a: Any, b: Any) -> T:
        # never both true (their counts add up to k >= 1): the result is a graph, so the
        # disjunctions need no folding
        return b if a is true else a if b is true else ops.min(a, b)

    def block(lo: int, hi: int, k_lo: int, k_hi: int) -> dict[int, T]:
        """Thresholds ``k_lo..k_hi`` (``1 <= k_lo``, ``k_hi <=`` the block's size) of groups
        ``lo..hi-1``."""
        if hi - lo == 1:
            return {k: groups[lo][k - 1] for k in range(k_lo, k_hi + 1)}
        mid = (lo + hi) // 2
        size_a, size_b = start[mid] - start[lo], start[hi] - start[mid]
        a_lo, a_hi = max(1, k_lo - size_b), min(size_a, k_hi)
        b_lo, b_hi = max(1, k_lo - size_a), min(size_b, k_hi)
        left = block(lo, mid, a_lo, a_hi) if a_lo <= a_hi else {}
        right = block(mid, hi, b_lo, b_hi) if b_lo <= b_hi else {}
        out: dict[int, T] = {}
        for k in range(k_lo, k_hi + 1):
            acc = ops.false
            for a in range(max(0, k - size_b), min(size_a, k) + 1):
                acc = ops.max(acc, conj(left[a] if a else true, right[k - a] if k > a else true))
            out[k] = acc
        return out

    size = start[-1]
    inside = [k for k in wanted if k <= size]
    table = block(0, len(groups), min(inside), max(inside)) if inside else {}
    return [table[k] if k <= size else ops.false for k in wanted]
