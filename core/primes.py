"""Prime implicants of a monotone NNF (SRs) and minimal hitting sets (SPEC §3).

The complete reason is monotone — its literals are the instance's states ``{x[X]}`` — so a
prime implicant or implicate is determined by its set of features, an int bitmask. Families
of feature sets are kept as lists of bitmasks without supersets (:func:`minimal`).

- Prime implicates (NRs, CEs) are read off the decision graph as its minimal deviation sets
  (:meth:`core.dgraph.DG.min_deviations`), without building the complete reason.
- Prime implicants (SRs), two ways: bottom-up expansion (a literal gives ``{X}``, ``true``
  the empty term, ``false`` none; ∨ unites, ∧ takes pairwise unions, both minimised) or
  dualisation: the SRs are the minimal hitting sets of the NRs (Berge's algorithm).
  ``rfcircuits bench explain`` reports both.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.nnf import AND, CONST, LIT, NNF, TRUE


def popcount(v: int) -> int:
    return v.bit_count()


def minimal(family: Iterable[int]) -> list[int]:
    """The inclusion-minimal sets of a family (duplicates and supersets removed), sorted by
    size then value.

    Sets are visited by growing size, so a set is kept unless a kept one is its subset. The
    kept sets are indexed per feature — bit ``k`` of ``holding[f]`` says that the ``k``-th kept
    set contains ``f`` — and the kept subsets of ``v`` are those holding no feature outside
    ``v``: a few big-integer operations per set instead of a scan of the kept ones."""
    ordered = sorted(set(family), key=lambda s: (s.bit_count(), s))
    width = max((v.bit_length() for v in ordered), default=0)
    holding = [0] * width
    everything = 0
    kept: list[int] = []
    for v in ordered:
        outside = 0
        for f in range(width):
            if not v >> f & 1:
                outside |= holding[f]
        if everything & ~outside:
            continue
        bit = 1 << len(kept)
        kept.append(v)
        everything |= bit
        rest = v
        while rest:
            low = rest & -rest
            holding[low.bit_length() - 1] |= bit
            rest ^= low
    return kept


def _cross(a: list[int], b: list[int]) -> list[int]:
    return minimal(u | v for u in a for v in b)


def implicants(nnf: NNF, root: int) -> list[int]:
    """Feature sets of the prime implicants of a monotone NNF (bottom-up expansion)."""
    value: dict[int, list[int]] = {}
    for n in nnf.reachable([root]):
        kind, args = nnf.kind[n], nnf.args[n]
        if kind == CONST:
            value[n] = [0] if n == TRUE else []
        elif kind == LIT:
            value[n] = [1 << args[0]]
        elif kind == AND:
            acc = value[args[0]]
            for c in args[1:]:
                acc = _cross(acc, value[c])
            value[n] = acc
        else:
            value[n] = minimal(s for c in args for s in value[c])
    return value[root]


def hitting_sets(family: Iterable[int]) -> list[int]:
    """Minimal hitting sets of a family of feature sets (Berge's dualisation), sorted by size
    then value.

    The minimal hitting sets of the prime implicates of a monotone formula are its prime
    implicants. No set to hit gives ``[0]`` (the empty set); an empty set to hit gives ``[]``.

    Adding an edge ``e`` keeps the sets ``k`` that hit it and extends each set ``h`` that
    misses it by each ``f ∈ e``. No minimisation pass is needed: ``h ∪ {f}`` is not minimal
    only when it contains a kept ``k`` — and then ``f ∈ k``, as ``k ⊄ h``; the extensions are
    pairwise incomparable (``h ∪ {f} ⊆ h' ∪ {f'}`` forces ``f = f'`` as ``f ∉ h'``, then
    ``h ⊆ h'``), and no kept set lies inside an extension's ``h``."""
    hits = [0]
    for edge in sorted(set(family), key=lambda s: (s.bit_count(), s)):
        if edge == 0:
            return []
        keep, miss = [], []
        for h in hits:
            (keep if h & edge else miss).append(h)
        grown = []
        if miss:
            for f in bits(edge):
                b = 1 << f
                with_f = [k for k in keep if k & b]
                grown.extend(h | b for h in miss if not any(k & ~(h | b) == 0 for k in with_f))
        hits = keep + grown
    return sorted(hits, key=lambda s: (s.bit_count(), s))


def bits(v: int) -> list[int]:
    """The members of a bitmask (features, states), ascending."""
    out = []
    while v:
        low = v & -v
        out.append(low.bit_length() - 1)
        v ^= low
    return out
