"""The packed machinery of rfcircuits.general (GSRs, GNRs; paper Alg. 6–7) against plain references:
antichains, prime implicates as maximal boxes of the falsified grid, and the general reasons
through the pure-Python store's box check (the C store's is the default elsewhere)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rfcircuits.general as general
from rfcircuits import dgraph
from rfcircuits.explain import Explainer
from rfcircuits.general import Packing, close_by_resolution, maximal
from rfcircuits.crosscheck import spec_examples
from rfcircuits.crosscheck.brute import BruteForce
from rfcircuits.crosscheck.strategies import Limits, forest_and_instance

FULL = (0b111, 0b1111, 0b11, 0b11111)


def features_of(packing: Packing, t: int) -> int:
    return sum(1 << f for f, full in enumerate(packing.full) if packing.field(t, f) != full)


@st.composite
def terms(draw):  # type: ignore[no-untyped-def]
    """A packed term over FULL: per feature all states or a non-empty proper subset."""
    packing = Packing(FULL)
    t = packing.top
    for f, full in enumerate(FULL):
        if draw(st.booleans()):
            t &= packing.literal(f, draw(st.integers(1, full - 1)))
    return t


@settings(max_examples=60, deadline=None)
@given(st.lists(terms(), max_size=400))
def test_maximal_is_the_antichain_of_unimplied_items(items):
    # Large families go through the per-feature index (beyond general._SCAN kept items).
    packing = Packing(FULL)
    family = {t: features_of(packing, t) for t in items}
    expected = {t for t in family if not any(o != t and t | o == o for o in family)}
    got = maximal(family, packing)
    assert set(got) == expected
    assert all(got[t] == family[t] for t in got)


@st.composite
def clauses_on(draw, features):  # type: ignore[no-untyped-def]
    """Clauses (packed negated) on exactly ``features`` whose literals hold state 0."""
    packing = Packing(FULL)
    out = []
    for _ in range(draw(st.integers(1, 12))):
        c = packing.top
        for f in features:
            literal = 1 | draw(st.integers(0, FULL[f] - 1)) & ~1 & FULL[f]
            if literal == FULL[f]:
                literal &= ~2
            c &= packing.literal(f, FULL[f] & ~literal)
        out.append(c)
    return features, out


@settings(max_examples=300, deadline=None)
@given(st.one_of(clauses_on((0, 3)), clauses_on((0, 1, 3)), clauses_on((0, 1, 2, 3))))
def test_maximal_boxes_are_the_resolution_closure(case):
    features, clauses = case
    packing = Packing(FULL)
    v = sum(1 << f for f in features)
    unsubsumed = list(maximal(dict.fromkeys(clauses, v), packing))
    closed = close_by_resolution(unsubsumed, v, packing)
    assert sorted(general._maximal_boxes(clauses, features, packing)) == sorted(closed)


def test_maximal_boxes_are_the_falsified_part():
    # X, Y in {0..3}, instance (0, 0): the falsified part is an L of two overlapping bars.
    packing = Packing((0b1111, 0b1111))
    bar = [packing.literal(0, 0b0110) & packing.literal(1, 0b1110),
           packing.literal(0, 0b1110) & packing.literal(1, 0b0010)]
    got = general._maximal_boxes(bar, (0, 1), packing)
    worlds = {(a, b) for c in bar for a, b in itertools.product(range(4), repeat=2)
              if packing.field(c, 0) >> a & 1 and packing.field(c, 1) >> b & 1}
    boxes = {frozenset(itertools.product(
        [a for a in range(4) if packing.field(c, 0) >> a & 1],
        [b for b in range(4) if packing.field(c, 1) >> b & 1])) for c in got}
    assert set().union(*boxes) == worlds
    assert len(boxes) == 2 and not any(a < b for a in boxes for b in boxes)


@pytest.fixture
def python_store(monkeypatch):
    """The pure-Python store, whose box check (``PyStore.violations``) the GSRs then use."""
    monkeypatch.setattr(dgraph, "BACKEND", "python")


# The fixture only sets a constant for the whole test, so sharing it between inputs is fine.
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(forest_and_instance(Limits(max_features=4, max_states=5, max_trees=7)),
       st.sampled_from(["first", "all"]))
def test_general_reasons_through_the_python_store_equal_brute_force(python_store, case, ties):
    f, x = case
    what = ("gsr", "gnr", "robust", "flips")
    ours = Explainer(f, ties).explain_states(x, what).to_json()
    truth = BruteForce(f, ties).explain(x, what).to_json()
    assert ours == truth


def unit_clauses_hold(f, x, ties):  # type: ignore[no-untyped-def]
    """GR's unit clauses from the graphs, checked two ways: each state they rule out for a
    feature is one that, set alone in ``x``, takes the forest's votes out of the decision's
    class (the paths to false leaving ``x``'s path once), and no world of brute force's GR
    has such a state. Returns them."""
    ex = Explainer(f, ties)
    comp = ex.compiled
    decision = f.decision(x)
    units = general.unit_clauses(comp.dg, comp.roots[decision], x)
    flips = {}
    for feature, spec in enumerate(f.features):
        for s in range(spec.n_states):
            y = list(x)
            y[feature] = s
            if decision not in f.classes_of(y, ties):
                flips[feature] = flips.get(feature, 0) | 1 << s
    assert units == flips
    brute = BruteForce(f, ties)
    gr = brute.general_reason(x, brute.member[decision])
    for feature, states in units.items():
        assert gr & brute.literal_worlds(feature, states) == 0
    return units


@settings(max_examples=60, deadline=None)
@given(forest_and_instance(Limits(max_features=4, max_states=5, max_trees=7)),
       st.sampled_from(["first", "all"]))
def test_unit_clauses_are_implied_by_the_general_reason(case, ties):
    f, x = case
    unit_clauses_hold(f, x, ties)


def test_unit_clauses_of_susan():
    # Susan's decision flips with Age alone (her GNR {Age: >=55}), so GR has the
    # unit clause Age ∉ {<55}: the check above is not vacuous.
    f = spec_examples.forest(spec_examples.SUSAN_FOREST)
    x = spec_examples.instance(f, spec_examples.SUSAN)
    assert unit_clauses_hold(f, x, "first") == {0: 0b01}
