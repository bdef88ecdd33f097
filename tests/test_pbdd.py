"""Soft votes in the engines: the comparison diagrams of :mod:`rfcircuits.pbdd`, the class
formulas both engines build from them, and explanations, against the brute-force oracle
(which sums the weights of each world's leaves exactly)."""

from __future__ import annotations

import functools
import itertools
import math
import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rfcircuits import classformula
from rfcircuits.classformula import UNARY_MAX_UNITS, compile_nnf, soft_comparison
from rfcircuits.ops import Ops
from rfcircuits.crosscheck.differential.fuzz import SOFT_PLAN, make_case, soft_case
from rfcircuits.crosscheck.oracles.brute import BruteForce
from rfcircuits.crosscheck.differential.strategies import (Limits, random_forest, random_instance,
                                                           random_soft_forest)
from rfcircuits.dgcompile import compile_dg
from rfcircuits.dgraph import DG
from rfcircuits.errors import BudgetExceeded
from rfcircuits.explain import Explainer
from rfcircuits.forest import Forest, Leaf, Tree
from rfcircuits.binarysum import at_least_binary
from rfcircuits.pbdd import at_least

def soft_forest(seed: int) -> Forest:
    return random_soft_forest(random.Random(seed))


# -- the diagram alone, on sets of choices --------------------------------------------------

COMPARES = {"diagram": at_least, "binary": at_least_binary, "auto": soft_comparison,
            **{f"forced {m}": functools.partial(soft_comparison, method=m)
               for m in ("unary", "diagram", "binary")}}


@pytest.mark.parametrize("compare", COMPARES.values(), ids=COMPARES.keys())
@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.lists(st.integers(-2 ** 70, 2 ** 70) | st.integers(-3, 3), min_size=1,
                         max_size=4, unique=True), min_size=0, max_size=5),
       needs=st.lists(st.integers(-2 ** 71, 2 ** 71) | st.integers(-8, 8), min_size=1,
                      max_size=4))
def test_comparisons_hold_exactly_on_the_choices_whose_sum_reaches_the_need(compare, values,
                                                                            needs):
    """Formulas are sets of choice vectors (one value index per tree): ∨ is union, ∧
    intersection, so the circuit's result can be compared with every choice's sum. A forced
    unary comparison takes small integers only (each unit is an input of its network)."""
    values = [sorted(v) for v in values]
    divisor = math.gcd(*(x - v[0] for v in values for x in v)) or 1
    units = sum((v[-1] - v[0]) // divisor for v in values)  # the network's inputs
    if compare is COMPARES["forced unary"] and units > UNARY_MAX_UNITS:
        with pytest.raises(ValueError, match="unary comparison"):
            compare(values, [[None] * len(v) for v in values], needs, None, None)
        values = [[x % 7 for x in v] for v in values]  # 0..6: at most 6 units a tree
        values = [sorted(set(v)) for v in values]
    everything = frozenset(itertools.product(*(range(len(v)) for v in values)))
    atoms = [[frozenset(c for c in everything if c[t] == k) for k in range(len(v))]
             for t, v in enumerate(values)]
    ops = Ops(frozenset.union, frozenset.intersection, frozenset())
    got = compare(values, atoms, needs, ops, everything)
    for need, formula in zip(needs, got):
        assert formula == {c for c in everything
                           if sum(v[k] for v, k in zip(values, c)) >= need}


# -- class formulas of both engines ---------------------------------------------------------

def test_fuzz_soft_cases_reach_every_comparison_of_soft_votes(monkeypatch):
    """fuzz's soft cases (SOFT_PLAN) take each way the NNF circuits compare soft votes: the
    unary network (``evaluate``), the decision diagram and the binary adders."""
    used: list[str] = []
    for name in ("evaluate", "at_least", "at_least_binary"):
        real = getattr(classformula, name)
        monkeypatch.setattr(classformula, name, functools.partial(
            lambda real, name, *a, **k: used.append(name) or real(*a, **k), real, name))
    limits = Limits(votes="mixed")
    reached = {}
    for k in range(1, 2 * 3 * len(SOFT_PLAN), 2):
        weights, comparison = SOFT_PLAN[soft_case(k, limits) % len(SOFT_PLAN)]
        forest, _ = make_case(0, k, limits, "", weights)
        used.clear()
        compile_nnf(forest, "first", comparison=comparison)
        reached.setdefault(comparison, set()).update(used)
    assert reached == {"auto": {"evaluate", "at_least"}, "binary": {"at_least_binary"},
                       "diagram": {"at_least"}, "unary": {"evaluate"}}


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 32), st.sampled_from(["first", "all"]))
def test_class_formulas_of_soft_forests_are_the_exact_sums_decisions(seed, ties):
    forest = soft_forest(seed)
    brute = BruteForce(forest, ties)
    nnf = compile_nnf(forest, ties)
    graphs = [compile_dg(forest, ties),
              compile_dg(forest, ties, apply="generic", order=range(len(forest.features))),
              compile_dg(forest, ties, form="dg")]
    for i, world in enumerate(brute.worlds):
        for c in range(len(forest.classes)):
            member = bool(brute.class_worlds(c) >> i & 1)
            assert nnf.nnf.evaluate(nnf.roots[c], world) == member
            for comp in graphs:
                assert comp.evaluate(c, world) == member


@pytest.mark.parametrize("seed", range(8))
def test_unit_weights_compile_to_the_hard_votes_graphs(seed):
    """A leaf weighing 1 for its class and 0 for the others is a hard vote: under one order
    the (canonical) decision graphs are the same size as the vote counters'."""
    hard = random_forest(random.Random(seed))
    k = len(hard.classes)
    unit = Forest(hard.features, hard.classes, tuple(
        Tree(tuple(Leaf(n.label, tuple(float(c == n.label) for c in range(k)))
                   if type(n) is Leaf else n for n in t.nodes)) for t in hard.trees),
        voting="soft")
    order = list(range(len(hard.features)))
    for ties in ("first", "all"):
        assert compile_dg(unit, ties, order=order).total_nodes() == \
            compile_dg(hard, ties, order=order).total_nodes()


# -- explanations -------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2 ** 32), st.sampled_from(["first", "all"]),
       st.sampled_from(["graphs", "sat"]))
def test_explanations_of_soft_forests_match_the_brute_force(seed, ties, engine):
    forest = soft_forest(seed)
    brute = BruteForce(forest, ties)
    what = ("sr", "nr", "ce", "robust", "flips")
    if not brute.general_too_big():
        what += ("gsr", "gnr")
    explainer = Explainer(forest, ties, engine=engine, limit_seconds=None, limit_items=None)
    rng = random.Random(seed)
    for _ in range(3):
        x = random_instance(rng, forest)
        got = explainer.explain_states(x, what).to_json(engine=False)
        expected = brute.explain(x, what).to_json(engine=False)
        assert "incomplete" not in got
        for key in got.keys() - {"not_computed"}:  # the SAT engine computes no GSR/GNR
            assert got[key] == expected[key], key


# -- the compile's deadline -----------------------------------------------------------------
# Most steps of a soft-vote diagram create no node, and the stores count nodes: a compile's
# --timeout has to reach into the diagram and into the order's trial compiles (before, a
# 100-tree soft forest ran for minutes past a 60 s timeout in the order's choice).

def test_the_diagram_calls_check_every_so_often(monkeypatch):
    from rfcircuits import pbdd

    values = [[0, 1, 3], [-2, 0, 5], [0, 7], [1, 2, 4, 8]]
    everything = frozenset(itertools.product(*(range(len(v)) for v in values)))
    atoms = [[frozenset(c for c in everything if c[t] == k) for k in range(len(v))]
             for t, v in enumerate(values)]
    plain = Ops(frozenset.union, frozenset.intersection, frozenset())
    expected = at_least(values, atoms, [0, 5], plain, everything)
    monkeypatch.setattr(pbdd, "CHECK_EVERY", 2)
    calls = []
    checked = Ops(frozenset.union, frozenset.intersection, frozenset(),
                  check=lambda: calls.append(1))
    assert at_least(values, atoms, [0, 5], checked, everything) == expected
    assert len(calls) >= 3

    def time_is_up() -> None:
        raise BudgetExceeded("compilation exceeds --timeout 1 s")

    stopped = Ops(frozenset.union, frozenset.intersection, frozenset(), check=time_is_up)
    with pytest.raises(BudgetExceeded):
        at_least(values, atoms, [0, 5], stopped, everything)


def test_the_orders_trial_compiles_share_the_compiles_deadline(monkeypatch):
    from rfcircuits import dgcompile

    forest = soft_forest(7)
    real = dgcompile.created_nodes
    deadlines: list[float | None] = []

    def spy(*args, deadline=None):  # type: ignore[no-untyped-def]
        deadlines.append(deadline)
        return real(*args, deadline=deadline)

    monkeypatch.setattr(dgcompile, "created_nodes", spy)
    before = time.monotonic()
    compile_dg(forest, timeout=100.0)
    assert deadlines and all(d is not None and before + 100 <= d <= time.monotonic() + 100
                             for d in deadlines)
    deadlines.clear()
    compile_dg(forest.with_trees(forest.trees[::-1]))  # another forest: no cached order
    assert deadlines and set(deadlines) == {None}


def test_a_deadline_set_earlier_names_the_timeout_asked():
    dg = DG(soft_forest(1).features, timeout=20.0, deadline=time.monotonic() - 1)
    with pytest.raises(BudgetExceeded, match=r"^compilation exceeds --timeout 20 s$"):
        dg.check_budget()
