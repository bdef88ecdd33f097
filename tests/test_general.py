"""The machinery of rfcircuits.general (GSRs, GNRs; paper Alg. 6–7) against plain references:
antichains, prime implicates as maximal boxes of the falsified grid, maximal boxes around an
instance inside a graph, and the general reasons through the pure-Python store's
``falsified`` (the C store's is the default elsewhere)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rfcircuits.general as general
from rfcircuits import dgraph
from rfcircuits.explain import Explainer
from rfcircuits.forest import Feature
from rfcircuits.general import Packing, close_by_resolution, maximal
from rfcircuits.crosscheck.oracles.brute import BruteForce
from rfcircuits.crosscheck.differential.strategies import Limits, forest_and_instance

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
    """The pure-Python store, whose ``PyStore.falsified`` the GSRs then use."""
    monkeypatch.setattr(dgraph, "BACKEND", "python")


# The fixture only sets a constant for the whole test, so sharing it between inputs is fine.
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(forest_and_instance(Limits(max_features=4, max_states=5, max_trees=7)),
       st.sampled_from(["first", "all"]))
def test_general_reasons_through_the_python_store_equal_brute_force(python_store, case, ties):
    f, x = case
    what = ("gsr", "gnr", "robust", "flips")
    ours = Explainer(f, ties).explain_states(x, what).to_json(engine=False)
    truth = BruteForce(f, ties).explain(x, what).to_json()
    assert ours == truth


@st.composite
def graphs_on(draw):  # type: ignore[no-untyped-def]
    """An ordered graph on up to 3 features of up to 4 states (any function, from its truth
    table), its features in rank order, and a point it holds at (None if it holds nowhere)."""
    sizes = draw(st.lists(st.integers(2, 4), min_size=1, max_size=3))
    order = draw(st.permutations(range(len(sizes))))
    points = list(itertools.product(*(range(n) for n in sizes)))
    table = dict(zip(points, draw(st.lists(st.booleans(), min_size=len(points),
                                           max_size=len(points)))))
    dg = dgraph.DG([Feature.categorical(f"f{f}", [str(s) for s in range(n)])
                    for f, n in enumerate(sizes)], order)

    def build(fixed: dict[int, int], depth: int) -> int:
        if depth == len(order):
            point = tuple(fixed[f] for f in range(len(sizes)))
            return dgraph.TRUE if table[point] else dgraph.FALSE
        f = order[depth]
        return dg.node(f, [(1 << s, build({**fixed, f: s}, depth + 1)) for s in range(sizes[f])])

    root = build({}, 0)
    inside = [p for p in points if table[p]]
    x = draw(st.sampled_from(inside)) if inside else None
    return dg, root, list(order), sizes, table, x


@settings(max_examples=300, deadline=None)
@given(graphs_on())
def test_maximal_boxes_are_the_largest_boxes_around_x(case):
    # Every box containing x (a state set per feature holding x's state) listed and checked
    # point by point against the truth table; the maximal ones among those inside.
    dg, root, order, sizes, table, x = case
    if x is None:
        return
    choices = [[m for m in range(1, 1 << n) if m >> x[f] & 1] for f, n in enumerate(sizes)]
    inside = []
    for box in itertools.product(*choices):
        if all(table[p] for p in itertools.product(*(
                [s for s in range(n) if m >> s & 1] for m, n in zip(box, sizes)))):
            inside.append(box)
    expected = {box for box in inside
                if not any(other != box and all(a & b == a for a, b in zip(box, other))
                           for other in inside)}
    got = general.maximal_boxes(dg, root, x, order)
    assert len(got) == len(set(got))
    assert {tuple(dict(zip(order, box))[f] for f in range(len(sizes))) for box in got} == expected
