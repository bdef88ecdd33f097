"""Class formulas through sorting networks (paper Alg. 3) against the brute-force oracle."""

from __future__ import annotations

from hypothesis import given, settings

from rfcircuits.classformula import comparisons, compile_nnf
from rfcircuits.crosscheck.brute import BruteForce
from rfcircuits.crosscheck.harness import nnf_worlds
from rfcircuits.crosscheck.spec_examples import FIGURE1_COUNTS, FIGURE1_FOREST, forest
from rfcircuits.crosscheck.strategies import Limits, forests

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
