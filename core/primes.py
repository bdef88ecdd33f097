"""Prime implicants of a monotone NNF (SRs) and minimal hitting sets (docs/semantics.md §5).

The complete reason is monotone — its literals are the instance's states ``{x[X]}`` — so a
prime implicant or implicate is determined by its set of features, an int bitmask. Families
of feature sets are kept as lists of bitmasks without supersets (:func:`minimal`).

- Prime implicates (NRs, CEs) are read off the decision graph as its minimal deviation sets
  (:meth:`rfcircuits.dgraph.DG.min_deviations`), without building the complete reason.
- Prime implicants (SRs), two ways: bottom-up expansion (a literal gives ``{X}``, ``true``
  the empty term, ``false`` none; ∨ unites, ∧ takes pairwise unions, both minimised) or
  dualisation: the SRs are the minimal hitting sets of the NRs (MMCS).
  ``rfcircuits bench explain`` reports both.
"""

from __future__ import annotations

from collections.abc import Iterable

from rfcircuits.dgraph import NATIVE
from rfcircuits.forest import mask_states as bits
from rfcircuits.nnf import AND, CONST, LIT, NNF, TRUE


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
    """Minimal hitting sets of a family of feature sets, sorted by size then value.

    The minimal hitting sets of the prime implicates of a monotone formula are its prime
    implicants. No set to hit gives ``[0]`` (the empty set); an empty set to hit gives ``[]``.
    The search is :func:`mmcs`, run by its C twin in ``core/_dgstore.c`` when the C store is
    the backend (the same search on arrays of 64-bit words, several times faster:
    docs/decisions.md, "MMCS in C")."""
    edges = sorted(set(family), key=lambda s: (s.bit_count(), s))
    if not edges:
        return [0]
    if edges[0] == 0:
        return []
    if NATIVE is None:
        out = mmcs(edges)
    else:
        words = max(max(e.bit_length() for e in edges) + 63 >> 6, 1)
        size = 8 * words
        found = NATIVE.hitting_sets(b"".join(e.to_bytes(size, "little") for e in edges), words)
        out = [int.from_bytes(found[i:i + size], "little") for i in range(0, len(found), size)]
    return sorted(out, key=lambda s: (s.bit_count(), s))


def mmcs(edges: list[int]) -> list[int]:
    """The minimal hitting sets of ``edges`` (non-empty sets sorted by size then value, at
    least one), in the order the search finds them.

    MMCS (Murakami & Uno, 2014), depth first on an explicit stack: a partial set ``S`` is
    extended by the members of one set it does not hit yet, and kept only while it is
    minimal — while each ``u ∈ S`` has a *critical* set, hit by ``u`` alone. The candidates
    ``CAND`` exclude what earlier siblings already tried, so each minimal hitting set is
    found once. Sets of sets are bitmasks over the family's members (``occ[f]``: the
    members holding ``f``), so every step is a few big-integer operations; unlike Berge's
    dualisation no intermediate family is kept."""
    occ: dict[int, int] = {}
    everything = 0
    for i, e in enumerate(edges):
        everything |= e
        for f in bits(e):
            occ[f] = occ.get(f, 0) | 1 << i
    out = []
    # frame: S, crit (u, the members only u hits), uncovered members, CAND, features to try
    stack: list[list] = [[0, [], (1 << len(edges)) - 1, everything, None]]
    while stack:
        frame = stack[-1]
        s, crit, uncov, cand, todo = frame
        if todo is None:
            if not uncov:
                out.append(s)
                stack.pop()
                continue
            # the smallest uncovered member (the family is sorted by size): fewest branches
            c = edges[(uncov & -uncov).bit_length() - 1] & cand
            frame[3] = cand & ~c
            frame[4] = todo = bits(c)[::-1]
        if not todo:
            stack.pop()
            continue
        v = todo.pop()
        cand = frame[3]
        frame[3] = cand | 1 << v  # later siblings may use v
        ov = occ[v]
        kept = []
        for u, cu in crit:
            cu &= ~ov
            if not cu:  # u lost its last critical member: S ∪ {v} is not minimal
                break
            kept.append((u, cu))
        else:
            kept.append((v, uncov & ov))
            stack.append([s | 1 << v, kept, uncov & ~ov, cand, None])
    return out

