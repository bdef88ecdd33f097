"""Class formulas through sorting networks (paper Alg. 3) against the brute-force oracle."""

from __future__ import annotations

from hypothesis import given, settings

from rfcircuits.classformula import comparisons, compile_nnf
from rfcircuits.crosscheck.oracles.brute import BruteForce
from rfcircuits.crosscheck.differential.harness import circuit_worlds, nnf_worlds
from rfcircuits.dgcompile import compile_dg
from rfcircuits.errors import BudgetExceeded
from rfcircuits.crosscheck.differential.spec_examples import FIGURE1_COUNTS, FIGURE1_FOREST, forest
from rfcircuits.crosscheck.differential.strategies import Limits, forests

LIMITS = Limits(max_features=4, max_states=4, max_trees=7, max_classes=3)


def check(f, ties):
    brute = BruteForce(f, ties)
    comp = compile_nnf(f, ties)
    comp.nnf.check_invariants()
    got = nnf_worlds(comp.nnf, comp.roots, brute)
    for c in range(len(f.classes)):
        assert got[c] == brute.class_worlds(c), (ties, c)


@settings(max_examples=150, deadline=None)
@given(forests(LIMITS))
def test_class_formulas_equal_brute_force(f):
    check(f, "first")
    check(f, "all")


@settings(max_examples=40, deadline=None)
@given(forests(Limits(max_features=3, max_states=3, max_trees=12, max_classes=5)))
def test_many_trees_and_classes(f):
    check(f, "first")
    check(f, "all")


@settings(max_examples=60, deadline=None)
@given(forests(Limits(max_features=3, max_states=3, max_trees=8, max_classes=4)))
def test_one_compile_serves_both_tie_policies(f):
    """compile_dg(also=...) makes another policy's class formulas in the same manager and
    hands them, once, to the next compile asking for them; both equal brute force."""
    order = list(range(len(f.features)))
    for form in ("dg", "dg-conj"):
        first = compile_dg(f, "first", form, order=order, also=("all",))
        other = compile_dg(f, "all", form, order=order)
        assert other.dg is first.dg
        for ties, comp in (("first", first), ("all", other)):
            brute = BruteForce(f, ties)
            got = circuit_worlds(form, comp, range(len(f.classes)), brute)
            assert got == [brute.class_worlds(c) for c in range(len(f.classes))], ties
        assert compile_dg(f, "all", form, order=order).dg is not first.dg
    budgeted = compile_dg(f, "first", order=order, max_nodes=10**6, also=("all",))
    assert compile_dg(f, "all", order=order, max_nodes=10**6).dg is budgeted.dg


def test_both_policies_past_the_budget_compile_one_alone(monkeypatch):
    """When the shared manager exceeds the node budget, the asked policy compiles alone (it
    may fit) and nothing is handed over."""
    import rfcircuits.dgcompile as dgcompile

    f = forest(FIGURE1_FOREST)
    real = dgcompile._compile

    def tight(forest_, policies, *args):
        if len(policies) > 1:
            raise BudgetExceeded("over budget")
        return real(forest_, policies, *args)

    monkeypatch.setattr(dgcompile, "_compile", tight)
    order = list(range(len(f.features)))
    first = compile_dg(f, "first", order=order, max_nodes=10**6, also=("all",))
    brute = BruteForce(f, "first")
    assert circuit_worlds("dg-conj", first, range(len(f.classes)), brute) == [
        brute.class_worlds(c) for c in range(len(f.classes))]
    assert compile_dg(f, "all", order=order, max_nodes=10**6).dg is not first.dg


def test_figure1_model_counts():
    f = forest(FIGURE1_FOREST)
    brute = BruteForce(f)
    comp = compile_nnf(f)
    counts = {name: bin(w).count("1")
              for name, w in zip(f.classes, nnf_worlds(comp.nnf, comp.roots, brute))}
    assert counts == FIGURE1_COUNTS


def test_comparisons_per_tie_policy():
    assert [(c.j, c.strict) for c in comparisons(1, 3, "first")] == [(0, True), (2, False)]
    assert [(c.j, c.strict) for c in comparisons(1, 3, "all")] == [(0, False), (2, False)]
    assert comparisons(0, 1, "first") == []
