"""The SAT oracle on forests of soft votes (issue 43): its binary adders
(rfcircuits.crosscheck.oracles.adders) against integer arithmetic on every input, and every query
against the brute-force oracle and the trees' exact sums, under ``first``, ``all`` and ``strict``.

The forests are the random ones of :mod:`rfcircuits.crosscheck.differential.strategies` with weights
at the leaves drawn from a few floats, so that exact ties are common: zeros, halves, negatives,
floats that are not short binary fractions (their float64 sums depend on the order), and ``2**-60``
(whose scaled sums leave int64). The instance is often a world nearest a tie. The checks themselves
are the hard-vote tests' (tests/test_sat.py, tests/test_slices.py)."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pysat.formula import IDPool
from pysat.solvers import Solver

from rfcircuits.crosscheck.oracles.adders import Circuit, OneHotSum
from rfcircuits.crosscheck.oracles.brute import BruteForce
from rfcircuits.crosscheck.oracles.sat import SatOracle
from rfcircuits.crosscheck.differential.strategies import (Limits, all_worlds, forests,
                                                           pick_by_margin)
from rfcircuits.forest import Branching, Feature, Forest, Leaf, Tree
from tests import test_sat, test_slices
from tests.test_sat import COMPARED, CORRUPTIONS

LIMITS = Limits(max_features=4, max_states=4, max_trees=6, max_classes=4)


def examples(n: int) -> settings:
    """Hypothesis settings: ``n`` examples, the same ones every run."""
    return settings(max_examples=n, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


WEIGHT = st.sampled_from([0.0, 0.0, 0.5, 1.0, 1.0, -1.0, -0.5, 0.25, 2.0, 1 / 3, 2 / 3, 0.1,
                          0.2, 0.7, 2.0 ** -60])


@st.composite
def soft_cases(draw, limits=LIMITS):  # type: ignore[no-untyped-def]
    """A forest of soft votes (a random forest's trees, weights at every leaf, an ``init``
    half the time) and an instance: half the time a world of smallest margin (a tie when
    there is one)."""
    hard = draw(forests(limits))
    weights = st.lists(WEIGHT, min_size=len(hard.classes), max_size=len(hard.classes))

    def leaf(ws: list[float]) -> Leaf:
        return Leaf(ws.index(max(ws)), tuple(ws))

    trees = tuple(Tree(tuple(leaf(draw(weights)) if type(node) is Leaf else node
                             for node in tree.nodes)) for tree in hard.trees)
    forest = Forest(hard.features, hard.classes, trees, voting="soft",
                    init=draw(st.none() | weights))
    worlds = all_worlds(forest)
    if draw(st.booleans()):
        return forest, worlds[pick_by_margin(forest, worlds, 1)[0]]
    return forest, worlds[draw(st.integers(0, len(worlds) - 1))]


def brute_force(forest, ties):
    """The brute-force oracle, which knows ``first`` and ``all``; for ``strict`` its class
    worlds are replaced by the strict winners' (its answers all derive from them)."""
    brute = BruteForce(forest, "first" if ties == "strict" else ties)
    if ties == "strict":
        brute.member = [sum(1 << i for i, w in enumerate(brute.worlds)
                            if test_sat._strict_winners(forest.votes(w)) == [c])
                        for c in range(len(forest.classes))]
    return brute


# -- the adders -------------------------------------------------------------------------------


def _circuit():
    pool = IDPool()
    true = pool.id("true")
    return Circuit(pool.id, true), pool


def _solver(circuit):
    return Solver(name="cadical195", bootstrap_with=circuit.clauses + [[circuit.true]])


def _forced(solver, assumptions, literal):
    """Under the assumptions the clauses force the literal (both ways: its negation is
    unsatisfiable, and it is satisfiable)."""
    return solver.solve(assumptions=assumptions + [literal]) and \
        not solver.solve(assumptions=assumptions + [-literal])


@pytest.mark.parametrize("widths", [(1, 1), (3, 3), (3, 2, 1), (2, 2, 2, 1), (1, 1, 1, 1, 1)])
def test_adder_sums_and_compares_every_input(widths):
    """Numbers of a few free bits (and a constant true bit, which the gates fold): for every
    assignment the sum's bits are forced to the integer sum, and ``at_least(k)`` to
    ``[sum >= k]`` for every ``k`` from below 0 to beyond the largest sum."""
    circuit, pool = _circuit()
    numbers = [[pool.id() for _ in range(w)] for w in widths]
    numbers.append([-circuit.true, circuit.true])  # the constant 2
    total = circuit.add(numbers)
    largest = sum((1 << w) - 1 for w in widths) + 2
    ks = range(-1, largest + 3)
    at_least = {k: circuit.at_least(total, k) for k in ks}
    inputs = [v for bits in numbers[:-1] for v in bits]
    with _solver(circuit) as solver:
        for values in itertools.product((False, True), repeat=len(inputs)):
            _check_sum(solver, inputs, values, widths, total, at_least)


def _check_sum(solver, inputs, values, widths, total, at_least):
    """The sum's bits and comparisons are forced to the integer sum of the values (and 2)."""
    assumptions = [v if on else -v for v, on in zip(inputs, values)]
    got = iter(values)
    expected = sum(sum(next(got) << i for i in range(w)) for w in widths) + 2
    for i, bit in enumerate(total):
        assert _forced(solver, assumptions, bit if expected >> i & 1 else -bit)
    assert expected >> len(total) == 0
    for k, lit in at_least.items():
        assert _forced(solver, assumptions, lit if expected >= k else -lit), (values, k)


@examples(60)
@given(st.lists(st.lists(st.integers(-9, 9), min_size=1, max_size=3), min_size=1, max_size=3))
def test_one_hot_sum_compares_every_choice_with_every_constant(groups):
    """Groups of one-hot choices with any integers (negatives, repeats, common factors):
    for every choice per group, ``at_least(k)`` is forced to ``[Σ >= k]`` for every ``k``."""
    circuit, pool = _circuit()
    literals = [[pool.id() for _ in group] for group in groups]
    total = OneHotSum(circuit, [list(zip(lits, group)) for lits, group in zip(literals, groups)])
    low = sum(map(min, groups))
    high = sum(map(max, groups))
    ks = range(low - 2, high + 3)
    at_least = {k: total.at_least(k) for k in ks}
    with _solver(circuit) as solver:
        for choice in itertools.product(*(range(len(group)) for group in groups)):
            assumptions = [lit if c == i else -lit
                           for lits, c in zip(literals, choice) for i, lit in enumerate(lits)]
            value = sum(group[c] for group, c in zip(groups, choice))
            for k in ks:
                assert _forced(solver, assumptions,
                               at_least[k] if value >= k else -at_least[k])


def test_adder_sizes():
    """A full adder is 2 variables and 14 clauses; ten 3-bit numbers need fewer full adders
    than their 30 bits; a comparison is a chain of at most 3 clauses a bit; a sum is counted
    in units of the gcd of the shifted values."""
    circuit, pool = _circuit()
    circuit.full_adder(pool.id(), pool.id(), pool.id())
    assert len(circuit.clauses) == 14
    circuit, pool = _circuit()
    total = circuit.add([[pool.id() for _ in range(3)] for _ in range(10)])
    assert len(total) == 7 and len(circuit.clauses) <= 14 * 30
    before = len(circuit.clauses)
    circuit.at_least(total, 37)
    assert len(circuit.clauses) - before <= 3 * len(total)
    # Values 0, 8 and 4, 12: shifted 0, 8 and 0, 8, so in units of 8 one bit each.
    a, b, c, d = (pool.id() for _ in range(4))
    pair = OneHotSum(circuit, [[(a, 0), (b, 8)], [(c, 4), (d, 12)]])
    assert (pair.low, pair.unit, len(pair.bits)) == (4, 8, 2)


# -- the oracle against brute force and the trees' sums ---------------------------------------


@pytest.mark.parametrize("ties", ["first", "all", "strict"])
@examples(40)
@given(case=soft_cases())
def test_soft_membership_on_every_world(ties, case):
    """Sums, classes and membership read from the SAT models equal the trees' exact sums on
    every world."""
    forest, _ = case
    with SatOracle(forest, ties) as oracle:
        for w in all_worlds(forest):
            assert oracle.votes(w) == tuple(forest.votes(w))
            expected = [c for c in range(len(forest.classes))
                        if test_sat._in_class(forest, w, c, ties)]
            assert list(oracle.classes_of(w)) == expected
            assert [c for c in range(len(forest.classes)) if oracle.member(w, c)] == expected
            assert oracle.decision(w) == forest.decision(w)


@pytest.mark.parametrize("ties", ["first", "all", "strict"])
@examples(40)
@given(case=soft_cases())
def test_soft_enumeration_matches_brute(ties, case):
    """SRs, NRs, CEs and robustness (RC2) equal the brute-force oracle's."""
    forest, x = case
    brute = brute_force(forest, ties).explain(x, ("sr", "nr", "ce", "robust"))
    with SatOracle(forest, ties) as oracle:
        mine = oracle.explain(x)
        for name in COMPARED:
            assert getattr(mine, name) == getattr(brute, name), name


@pytest.mark.parametrize("ties", ["first", "all"])
@examples(40)
@given(case=soft_cases(), seed=st.integers(0, 2**16))
def test_soft_checks_of_items(ties, case, seed):
    test_sat.check_brute_items_and_corruptions(*case, ties, seed)


@pytest.mark.parametrize("ties", ["first", "all", "strict"])
@pytest.mark.parametrize("tabled", [True, False], ids=["slices", "search"])
@examples(20)
@given(case=soft_cases(Limits(max_features=3, max_states=4, max_trees=5, max_classes=4)),
       seed=st.integers(0, 2**16))
def test_soft_check_verdicts_equal_definitions(ties, tabled, case, seed):
    """Every check's verdicts by brute force (which knows ``first`` and ``all``), and the GSR
    and GNR verdicts by GR's definition under every policy."""
    if ties != "strict":
        test_sat.check_verdicts_equal_definitions(*case, ties, tabled, seed)
    test_slices.check_general_verdicts(*case, ties, tabled, seed)


@pytest.mark.parametrize("ties", ["first", "all"])
@examples(40)
@given(case=soft_cases())
def test_soft_certificate_accepts_the_true_reasons(ties, case):
    test_sat.check_certificate_accepts(*case, ties)


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
@examples(15)
@given(case=soft_cases(), ties=st.sampled_from(["first", "all"]), seed=st.integers(0, 2**16))
def test_soft_certificate_rejects_each_corruption(corruption, case, ties, seed):
    test_sat.check_certificate_rejects(*case, corruption, ties, seed)


@pytest.mark.parametrize("ties", ["first", "all", "strict"])
@examples(20)
@given(case=soft_cases())
def test_soft_freeing_worlds(ties, case):
    test_sat.check_freeing_worlds(*case, ties)


@pytest.mark.parametrize("ties", ["first", "all", "strict"])
@examples(20)
@given(case=soft_cases(), seed=st.integers(0, 2**16))
def test_soft_counterexample_worlds(ties, case, seed):
    test_sat.check_counterexample_worlds(*case, ties, seed)


@pytest.mark.parametrize("ties", ["first", "all", "strict"])
@examples(30)
@given(case=soft_cases(), picks=st.data())
def test_soft_slices_and_path_boxes(ties, case, picks):
    test_slices.check_slice_cell_by_cell(*case, ties, picks)
    test_slices.check_path_box(*case)


# -- exact examples ---------------------------------------------------------------------------


def _tie_forest():
    """Classes a, b, c over a feature of three states, two trees and an equal init. At ``u``
    the sums of a and b tie exactly (0.875 each); at ``v`` negative weights let c win; at
    ``w`` c beats b by 5e-324 only (``0.5 + 5e-324`` is ``0.5`` in float64, not exactly)."""
    f = Feature.categorical("f", ["u", "v", "w"])
    split = Branching(0, ((1, 1), (2, 2), (4, 3)))
    t1 = Tree((split, Leaf(0, (0.5, 0.5, 0.0)), Leaf(2, (-1.0, 0.0, 0.25)),
               Leaf(1, (0.0, 0.5, 0.5))))
    t2 = Tree((split, Leaf(0, (0.25, 0.25, 0.0)), Leaf(0, (0.0, -0.25, 0.0)),
               Leaf(2, (0.0, 0.0, 5e-324))))
    return Forest((f,), ("a", "b", "c"), (t1, t2), voting="soft", init=(0.125,) * 3)


def test_soft_exact_ties_and_tiny_weights():
    """Sums scaled by 2**1074: a tie at u (a, b), c at v, and at w c beats b by 5e-324 only."""
    forest = _tie_forest()
    assert forest.scale == 1074
    expected = {"first": [[0], [2], [2]], "all": [[0, 1], [2], [2]], "strict": [[], [2], [2]]}
    for ties, classes in expected.items():
        with SatOracle(forest, ties) as oracle:
            assert [list(oracle.classes_of((s,))) for s in range(3)] == classes
            assert oracle.votes((2,)) == tuple(forest.votes((2,)))
            assert oracle.robustness((2,)) == 1
        if ties != "strict":
            assert [forest.classes_of((s,), ties) for s in range(3)] == classes


def test_soft_sklearn_forest_matches_brute():
    """predict_proba's float64 fractions (1/3, ...) as leaf weights."""
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier

    from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values

    data, target = load_iris(return_X_y=True)
    model = RandomForestClassifier(n_estimators=5, max_depth=2, random_state=0).fit(data, target)
    forest = forest_from_sklearn(model, votes="soft")
    assert forest.voting == "soft"
    for x in instances_from_values(forest, data[::37]):
        for ties in ("first", "all"):
            test_sat._compare(forest, x, ties)


def test_soft_two_class_goal_sharing():
    """With two classes and ``first``, goals on ``R^1`` are answered on ``¬R^0``'s CNF: the
    contrastive explanations of both classes equal brute force's on every world."""
    rng = random.Random(5)
    f = Feature.numeric("x", [1.0, 2.0, 3.0])
    g = Feature.categorical("g", ["p", "q"])
    trees = []
    for _ in range(4):
        ws = [(rng.choice([-0.5, 0.0, 0.25, 1 / 3]), rng.choice([0.0, 0.5, 2 / 3]))
              for _ in range(3)]
        trees.append(Tree((Branching(0, ((0b11, 1), (0b1100, 2))),
                           Branching(1, ((1, 3), (2, 4))), Leaf(0, ws[0]),
                           Leaf(0, ws[1]), Leaf(0, ws[2]))))
    forest = Forest((f, g), ("a", "b"), tuple(trees), voting="soft", init=(0.125, 0.0))
    for x in all_worlds(forest):
        test_sat._compare(forest, x, "first")
