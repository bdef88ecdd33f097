"""Minimal hitting sets and minimal families (rfcircuits.primes) against their definitions."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rfcircuits import primes
from rfcircuits.primes import hitting_sets, minimal

WIDTH = 7
families = st.lists(st.integers(0, (1 << WIDTH) - 1), max_size=12)


def by_size(sets):
    return sorted(sets, key=lambda s: (s.bit_count(), s))


@settings(max_examples=400, deadline=None)
@given(families)
def test_minimal_is_the_inclusion_minimal_members(family):
    want = {v for v in family if not any(u != v and u & ~v == 0 for u in family)}
    assert minimal(family) == by_size(want)


#: Each hitting-set test runs with the C twin of the MMCS search and with the Python one.
backends = pytest.mark.parametrize("backend", ["c", "python"])


@contextlib.contextmanager
def searching_with(backend):
    if backend == "c" and primes.NATIVE is None:
        pytest.skip("the C extension is not the backend")
    with pytest.MonkeyPatch.context() as patch:
        if backend == "python":
            patch.setattr(primes, "NATIVE", None)
        yield


@backends
@settings(max_examples=400, deadline=None)
@given(family=families)
def test_hitting_sets_are_the_minimal_transversals(backend, family):
    hitting = [s for s in range(1 << WIDTH) if all(s & e for e in family)]
    want = [s for s in hitting if not any(h != s and h & ~s == 0 for h in hitting)]
    with searching_with(backend):
        assert hitting_sets(family) == by_size(want)


@backends
@settings(max_examples=200, deadline=None)
@given(family=st.lists(st.sets(st.integers(0, 150), min_size=1, max_size=3), max_size=4))
def test_hitting_sets_of_wide_families(backend, family):
    """Features beyond one 64-bit word (the C twin's multi-word masks): a set hits every
    member and is minimal, and every minimal hitting set is found (the members' features
    renumbered into 0..n-1 and checked against all subsets)."""
    used = sorted({f for member in family for f in member})
    masks = [sum(1 << f for f in member) for member in family]
    with searching_with(backend):
        got = hitting_sets(masks)
    small = [sum(1 << used.index(f) for f in member) for member in family]
    hitting = [s for s in range(1 << len(used)) if all(s & e for e in small)]
    want = [s for s in hitting if not any(h != s and h & ~s == 0 for h in hitting)]
    assert sorted(got) == sorted(sum(1 << used[i] for i in range(len(used)) if s >> i & 1)
                                 for s in want)
    assert got == by_size(got)


@backends
@settings(max_examples=200, deadline=None)
@given(family=families)
def test_dualisation_is_an_involution_on_antichains(backend, family):
    sets = minimal(family)
    if 0 not in sets and sets:
        with searching_with(backend):
            assert hitting_sets(hitting_sets(sets)) == sets
