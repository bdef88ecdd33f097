"""The totalizer (core/totalizer.py) against direct counting and the odd-even network."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rfcircuits.ops import Ops
from rfcircuits.sortnet import evaluate, network
from rfcircuits.totalizer import counts

#: Sets of assignments as bitmasks (bit-parallel 0-1 principle, as in test_sortnet).
BITS = Ops(lambda a, b: a | b, lambda a, b: a & b, 0)


@given(st.lists(st.integers(1, 3), min_size=1, max_size=6), st.data())
@settings(max_examples=150, deadline=None)
def test_thresholds_of_the_summed_counts(widths, data):
    # Tree l contributes 0..widths[l]; every assignment of contributions is one bit.
    assignments = list(itertools.product(*[range(w + 1) for w in widths]))
    groups = [[sum(1 << a for a, values in enumerate(assignments) if values[l] >= m)
               for m in range(1, w + 1)] for l, w in enumerate(widths)]
    top = sum(widths)
    wanted = data.draw(st.lists(st.integers(1, top + 2), min_size=1, max_size=4))
    got = counts(groups, wanted, BITS)
    for k, value in zip(wanted, got):
        assert value == sum(1 << a for a, values in enumerate(assignments)
                            if sum(values) >= k), (widths, k)


@pytest.mark.parametrize("n", range(1, 12))
def test_same_outputs_as_the_odd_even_network(n):
    inputs = [sum(1 << a for a in range(2 ** n) if a >> i & 1) for i in range(n)]
    wanted = list(range(1, n + 1))
    assert counts([[v] for v in inputs], wanted, BITS) == \
        evaluate(network(n), inputs, wanted, BITS.max, BITS.min, BITS.false)


def test_only_the_wanted_thresholds_are_built():
    calls = []

    def counting_and(a, b):
        calls.append(1)
        return a & b

    ops = Ops(BITS.max, counting_and, 0)
    counts([[1 << i] for i in range(16)], [16], ops)
    top_only = len(calls)
    calls.clear()
    counts([[1 << i] for i in range(16)], list(range(1, 17)), ops)
    assert 0 < top_only < len(calls)


@pytest.mark.parametrize("groups, wanted", [([[1]], [0]), ([[1], [2]], [0, 2]), ([], [1])])
def test_thresholds_below_one_and_no_groups_are_refused(groups, wanted):
    with pytest.raises(ValueError):
        counts(groups, wanted, BITS)
