"""Slices and path boxes (rfcircuits.crosscheck.oracles.slices) against the trees' votes world by
world, and the SAT oracle's GSR and GNR verdicts against their definitions under every tie policy,
``strict`` included (the brute-force oracle knows only ``first`` and ``all``)."""

from __future__ import annotations

import itertools
import random
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rfcircuits.forest import classes_from_votes
from rfcircuits.crosscheck.oracles import sat
from rfcircuits.crosscheck.oracles.sat import SatOracle
from rfcircuits.crosscheck.oracles.slices import Slice, general_reason_grid, path_box
from rfcircuits.crosscheck.differential.strategies import Limits, all_worlds, forest_and_instance

LIMITS = Limits(max_features=4, max_states=5, max_trees=7, max_classes=3)
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def in_class(votes, c, ties):
    """``R^c`` from vote counts, by the definition (docs/semantics.md §3)."""
    if ties == "strict":
        return all(votes[c] > v for d, v in enumerate(votes) if d != c)
    return c in classes_from_votes(votes, ties)


@pytest.mark.parametrize("ties", ["first", "all", "strict"])
@SETTINGS
@given(case=forest_and_instance(LIMITS), picks=st.data())
def test_slice_is_delta_and_gr_cell_by_cell(ties, case, picks):
    check_slice_cell_by_cell(*case, ties, picks)


def check_slice_cell_by_cell(forest, x, ties, picks):
    n = len(forest.features)
    features = picks.draw(st.lists(st.integers(0, n - 1), unique=True, max_size=3))
    c = picks.draw(st.integers(0, len(forest.classes) - 1))
    sl = Slice(forest, x, features, c, ties)
    gr = general_reason_grid(sl)
    worlds = [w for w in all_worlds(forest)
              if all(w[f] == x[f] for f in range(n) if f not in features)]
    delta = {w: in_class(forest.votes(w), c, ties) for w in worlds}
    for w in worlds:
        cell = tuple(sl.atom_of[i][w[f]] for i, f in enumerate(features))
        assert bool(sl.delta[cell]) == delta[w]
        corners = itertools.product(*({w[f], x[f]} for f in features))
        box = [dict(zip(features, corner)) for corner in corners]
        expected = all(delta[tuple(b.get(f, x[f]) for f in range(n))] for b in box)
        assert bool(gr[cell]) == expected
    for i, atoms in enumerate(sl.atoms):  # a partition of the states, in state order
        assert sum(atoms) == forest.features[features[i]].full
        assert sorted(atoms, key=lambda m: m & -m) == atoms


@SETTINGS
@given(case=forest_and_instance(LIMITS))
def test_path_box_votes_alike(case):
    check_path_box(*case)


def check_path_box(forest, x):
    votes, box = path_box(forest, x)
    assert votes == forest.votes(x)
    inside = [w for w in all_worlds(forest) if all(box[f] >> s & 1 for f, s in enumerate(w))]
    assert x in inside and all(forest.votes(w) == votes for w in inside)


@SETTINGS
@given(case=forest_and_instance(LIMITS))
def test_a_slice_beyond_its_cells_is_not_tabled(case):
    forest, x = case
    features = range(len(forest.features))
    assert Slice(forest, x, features, 0, "first", max_cells=0).delta is None
    assert Slice(forest, x, features, 0, "first").delta is not None


@pytest.mark.parametrize("ties", ["first", "all", "strict"])
@pytest.mark.parametrize("tabled", [True, False], ids=["slices", "search"])
@SETTINGS
@given(case=forest_and_instance(Limits(max_features=3, max_states=4, max_trees=5,
                                       max_classes=3)),
       seed=st.integers(0, 2**16))
def test_general_verdicts_equal_definitions(ties, tabled, case, seed):
    check_general_verdicts(*case, ties, tabled, seed)


def check_general_verdicts(forest, x, ties, tabled, seed):
    """check_gsr and check_gnr on arbitrary items, by GR's definition: the worlds whose GBox
    (each feature at its own state or x's) lies in Δ."""
    rng = random.Random(seed)
    n = len(forest.features)
    worlds = all_worlds(forest)
    d = forest.decision(x)
    delta = {w for w in worlds if in_class(forest.votes(w), d, ties)}
    gr = {w for w in worlds
          if all(b in delta for b in itertools.product(*({s, x[f]} for f, s in enumerate(w))))}

    def holds(item, w, clause):
        hits = [m >> w[f] & 1 for f, m in item]
        return any(hits) if clause else all(hits)

    def implicant(term):
        return all(w in gr for w in worlds if holds(term, w, False))

    def implicate(clause):
        return all(holds(clause, w, True) for w in gr)

    def simple_implies(features):  # x's states on the features force Δ
        return all(w in delta for w in worlds if all(w[f] == x[f] for f in features))

    def simple_frees(features):  # changing only the features can leave Δ
        return any(w not in delta for w in worlds
                   if all(w[f] == x[f] for f in range(n) if f not in features))

    def steps(item, wider):
        for k, (f, mask) in enumerate(item):
            for s in range(forest.features[f].n_states):
                if bool(mask >> s & 1) != wider:
                    new = mask ^ 1 << s
                    keep = 0 < new < forest.features[f].full
                    yield item[:k] + (((f, new),) if keep else ()) + item[k + 1:]

    def verdicts(item, valid_of, wider, smaller_holds):
        valid = valid_of(item)
        features = [f for f, _ in item]
        return {"valid": valid,
                "prime": valid and not any(valid_of(i) for i in steps(item, wider)),
                "variable_minimal": not any(
                    smaller_holds([g for g in features if g != f]) for f in features)}

    options = [[None, *range(1, f.full)] for f in forest.features]
    candidates = list(itertools.product(*options))
    items = [tuple((f, m) for f, m in enumerate(choice) if m is not None)
             for choice in rng.sample(candidates, min(30, len(candidates)))]
    # With x's states added (when that leaves a literal proper), more items are implicants and
    # their primality is put to the test.
    widened = {tuple((f, m | 1 << x[f]) for f, m in item) for item in items}
    items += [item for item in sorted(widened)
              if all(m != forest.features[f].full for f, m in item)]
    # All GSR verdicts at once, in batches of 4 terms so that escapes found for one batch
    # serve the next, as on a large forest's tens of thousands of GSRs.
    with SatOracle(forest, ties) as oracle, mock.patch.object(sat, "_BATCH", 4):
        assert oracle.check_gsrs(x, items) == [
            verdicts(item, implicant, True, simple_implies) for item in items]
    with SatOracle(forest, ties) as oracle:
        oracle.max_slice_cells = oracle.max_slice_cells if tabled else 0
        for item in items:
            assert oracle.check_gsr(x, item) == verdicts(item, implicant, True, simple_implies)
            assert oracle.check_gnr(x, item) == verdicts(item, implicate, False, simple_frees)
