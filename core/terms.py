"""Literals, terms and clauses, and their canonical order and JSON form
(docs/formats.md#literals-terms-and-clauses).

A literal is ``(feature index, state mask)`` with ``0 < mask < full``; a term or a clause is
a tuple of literals on distinct features sorted by feature index (the same representation
serves both; the container says which). A set of terms/clauses is canonically a list sorted
by ``[[feature index, [state indices]] for each literal]`` compared as Python lists.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any

from rfcircuits.forest import Forest, mask_states

Literal = tuple[int, int]
Term = tuple[Literal, ...]
Clause = tuple[Literal, ...]


def make(literals: Iterable[Literal]) -> Term:
    """A term/clause from literals on distinct features (sorted by feature)."""
    out = tuple(sorted(literals))
    for a, b in zip(out, out[1:]):
        if a[0] == b[0]:
            raise ValueError(f"two literals on feature {a[0]}")
    return out


def sort_key(term: Term) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """The canonical sort key of a term or clause: its ``[[feature, [states]], …]`` as tuples, which
    compare as those lists do."""
    return tuple((f, _states(m)) for f, m in term)


def _mask_order(a: int, b: int) -> int:
    """-1, 0 or 1 as the ascending state lists of masks ``a`` and ``b`` compare as lists,
    from their lowest differing state ``p``: the list holding ``p`` comes first if the other
    goes on past ``p``, and last if the other ends before it (then a prefix of it)."""
    if a == b:
        return 0
    low = (a ^ b) & -(a ^ b)
    above = ~((low << 1) - 1)
    if a & low:
        return -1 if b & above else 1
    return 1 if a & above else -1


def _term_order(s: Term, t: Term) -> int:
    """:func:`sort_key`'s order of two terms, with masks compared by :func:`_mask_order`:
    wide masks (deep forests have features with thousands of states) are never turned into
    state lists."""
    for (f, a), (g, b) in zip(s, t):
        if f != g:
            return -1 if f < g else 1
        if a != b:
            return _mask_order(a, b)
    return (len(s) > len(t)) - (len(s) < len(t))


@functools.lru_cache(maxsize=1 << 16)
def _states(mask: int) -> tuple[int, ...]:
    """The states of a mask (cached: explanations of one forest share their literals)."""
    return tuple(mask_states(mask))


class Canonical(tuple):  # type: ignore[type-arg]
    """A tuple of terms/clauses that :func:`canonical` made (deduplicated, canonical order), so
    that canonicalising it again (:meth:`rfcircuits.explanation.Explanation.to_json` does, for
    fields any engine fills) costs nothing: tens of thousands of SRs and NRs take about a
    second to sort."""

    __slots__ = ()


def canonical(items: Iterable[Term]) -> tuple[Term, ...]:
    """A set of terms/clauses, deduplicated and in canonical order (docs/formats.md).

    When every literal has one state (NRs, SRs, CEs), the terms themselves compare in that
    order: a one-state mask ``1 << s`` grows with ``s``."""
    if type(items) is Canonical:
        return items
    unique = set(items)
    if all(m & (m - 1) == 0 for term in unique for _, m in term):
        return Canonical(sorted(unique))
    if any(m.bit_length() > 64 for term in unique for _, m in term):
        return Canonical(sorted(unique, key=functools.cmp_to_key(_term_order)))
    return Canonical(sorted(unique, key=sort_key))


#: From this many sets on, :func:`simple_terms` builds them from byte tables (whose 256
#: entries per byte of features cost about as much as 30 terms built one by one).
TABLE_SETS = 64


def simple_terms(x: Sequence[int], sets: Iterable[int]) -> tuple[Term, ...]:
    """``canonical(simple(x, v) for v in sets)``, built faster: the terms, of one-state
    literals only, sort as they are (:func:`canonical`), and many are made from tables
    (:func:`_table_terms`)."""
    unique = set(sets)
    if len(unique) < TABLE_SETS:
        return Canonical(sorted(simple(x, v) for v in unique))
    return Canonical(sorted(_table_terms(x, unique)))


def _table_terms(x: Sequence[int], sets: Iterable[int]) -> list[Term]:
    """``[simple(x, v) for v in sets]``: each term the concatenation of its literals byte by
    byte of the bitmask, from tables of the 256 literal tuples of each byte (an NR search
    with tens of thousands of results spends a second building them one by one)."""
    tables = []
    for low in range(0, len(x), 8):
        literals = [(f, 1 << x[f]) for f in range(low, min(low + 8, len(x)))]
        table: list[Term] = [()]
        for b in range(1, 1 << len(literals)):  # lowest literal first, then b's other bits
            table.append((literals[(b & -b).bit_length() - 1],) + table[b & (b - 1)])
        tables.append(table)
    terms = []
    for v in sets:
        term: Term = ()
        for table in tables:
            if v & 255:
                term += table[v & 255]
            v >>= 8
        terms.append(term)
    return terms


def variables(term: Term) -> int:
    """The features a term/clause mentions, as a bitmask."""
    v = 0
    for f, _ in term:
        v |= 1 << f
    return v


def simple(x: Sequence[int], features: int) -> Term:
    """The term/clause of instance literals ``{x[X]}`` on the features of a bitmask."""
    out = []
    while features:
        low = features & -features
        f = low.bit_length() - 1
        out.append((f, 1 << x[f]))
        features ^= low
    return tuple(out)


def literal_json(forest: Forest, lit: Literal) -> dict[str, Any]:
    feature = forest.features[lit[0]]
    return {"feature": feature.name, "states": [feature.states[s] for s in mask_states(lit[1])]}


def term_json(forest: Forest, term: Term) -> list[dict[str, Any]]:
    return [literal_json(forest, lit) for lit in term]


def terms_json(forest: Forest, items: Iterable[Term]) -> list[list[dict[str, Any]]]:
    """The items' JSON (docs/formats.md). Items repeat a few literals (SRs and NRs use one per
    feature) tens of thousands of times, so each literal's dict is made once and shared."""
    made: dict[Literal, dict[str, Any]] = {}
    return [[made[lit] if lit in made else made.setdefault(lit, literal_json(forest, lit))
             for lit in t] for t in canonical(items)]


def literal_text(forest: Forest, lit: Literal) -> str:
    """Readable literal: ``BType∈{A,B}``, ``Age=>=55``; numeric runs of intervals as bounds,
    e.g. ``0.8 < petal_width ≤ 1.75`` (numbers with 4 significant digits)."""
    feature = forest.features[lit[0]]
    states = mask_states(lit[1])
    if feature.thresholds is None:
        names = [feature.states[s] for s in states]
        return f"{feature.name}={names[0]}" if len(names) == 1 else \
            f"{feature.name}∈{{{','.join(names)}}}"
    runs: list[list[int]] = []
    for s in states:
        if runs and runs[-1][1] == s - 1:
            runs[-1][1] = s
        else:
            runs.append([s, s])
    ts = feature.thresholds
    parts = []
    for lo, hi in runs:
        low = f"{ts[lo - 1]:.4g} < " if lo > 0 else ""
        high = f" ≤ {ts[hi]:.4g}" if hi < len(ts) else ""
        parts.append(f"{low}{feature.name}{high}")
    return parts[0] if len(parts) == 1 else "(" + " or ".join(parts) + ")"


def term_text(forest: Forest, term: Term, joiner: str = " ∧ ") -> str:
    """Readable term (``joiner`` " ∧ ") or clause (" ∨ "); the empty one is true / false."""
    if not term:
        return "true" if joiner.strip() == "∧" else "false"
    return joiner.join(literal_text(forest, lit) for lit in term)
