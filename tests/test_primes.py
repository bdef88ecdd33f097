"""Minimal hitting sets and minimal families (core.primes) against their definitions."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.primes import hitting_sets, minimal

WIDTH = 7
families = st.lists(st.integers(0, (1 << WIDTH) - 1), max_size=12)


def by_size(sets):
    return sorted(sets, key=lambda s: (s.bit_count(), s))


@settings(max_examples=400, deadline=None)
@given(families)
def test_minimal_is_the_inclusion_minimal_members(family):
    want = {v for v in family if not any(u != v and u & ~v == 0 for u in family)}
    assert minimal(family) == by_size(want)


@settings(max_examples=400, deadline=None)
@given(families)
def test_hitting_sets_are_the_minimal_transversals(family):
    hitting = [s for s in range(1 << WIDTH) if all(s & e for e in family)]
    want = [s for s in hitting if not any(h != s and h & ~s == 0 for h in hitting)]
    assert hitting_sets(family) == by_size(want)


@settings(max_examples=200, deadline=None)
@given(families)
def test_dualisation_is_an_involution_on_antichains(family):
    sets = minimal(family)
    if 0 not in sets and sets:
        assert hitting_sets(hitting_sets(sets)) == sets
