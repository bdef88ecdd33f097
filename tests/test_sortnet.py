"""Odd-even merge networks (paper Alg. 1–2): the 0-1 principle and the demand-driven cone."""

from __future__ import annotations

import itertools

import pytest

from rfcircuits.sortnet import evaluate, network


def bool_or(a: bool, b: bool) -> bool:
    return a or b


def bool_and(a: bool, b: bool) -> bool:
    return a and b


@pytest.mark.parametrize("n", range(1, 17))
def test_sorts_every_01_input(n):
    # Bit-parallel 0-1 principle: input i is the set of the 2^n assignments with bit i set,
    # so one evaluation with | and & sorts every 0/1 input at once.
    net = network(n)
    inputs = [sum(1 << a for a in range(2 ** n) if a >> i & 1) for i in range(n)]
    outputs = evaluate(net, inputs, list(range(1, len(net.outputs) + 1)),
                       lambda a, b: a | b, lambda a, b: a & b, 0)
    for k, got in enumerate(outputs, start=1):
        assert got == sum(1 << a for a in range(2 ** n) if bin(a).count("1") >= k), k


@pytest.mark.parametrize("pairs", range(1, 8))
def test_presorted_pairs_skip_the_first_layer(pairs):
    net = network(2 * pairs, presorted_pairs=True)
    assert len(net.ops) < len(network(2 * pairs).ops) or pairs == 1
    outputs = list(range(1, len(net.outputs) + 1))
    # Every pair (a, b) with b ⊨ a: (0,0), (1,0), (1,1).
    for choice in itertools.product([(False, False), (True, False), (True, True)], repeat=pairs):
        bits = [v for pair in choice for v in pair]
        got = evaluate(net, bits, outputs, bool_or, bool_and, False)
        ones = sum(bits)
        assert got == [True] * ones + [False] * (len(got) - ones), bits


def test_only_the_cone_of_wanted_outputs_is_computed():
    calls = []

    def counting_or(a, b):
        calls.append("or")
        return a or b

    net = network(16)
    evaluate(net, [True] * 16, [1], counting_or, bool_and, False)
    cone_1 = len(calls)
    calls.clear()
    evaluate(net, [True] * 16, list(range(1, 17)), counting_or, bool_and, False)
    assert 0 < cone_1 < len(calls)


def test_output_k_counts():
    # Output y_k of a sorting network is "at least k inputs are true" (k beyond n: padding).
    for n in range(1, 10):
        for bits in itertools.product([False, True], repeat=n):
            ks = list(range(1, n + 2))
            got = evaluate(network(n), list(bits), ks, bool_or, bool_and, False)
            assert got == [sum(bits) >= k for k in ks]


def test_padding_is_folded_statically():
    # 5 real inputs padded to 8: comparators against padding disappear.
    assert len(network(5).ops) < len(network(8).ops)
    assert network(1).ops == ()
