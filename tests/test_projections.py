"""Existential projections of ordered graphs and the NRs / CEs read off them
(core/projections.py, DG.exists, DG.min_true_sets), against the brute-force oracle and the
graph search they replace."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rfcircuits import dgraph
from rfcircuits.dgcompile import compile_dg
from rfcircuits.graphengine import NR_METHODS, GraphEngine
from rfcircuits.forest import Feature
from rfcircuits.projections import MAX_FEATURES, Projections, TooLarge
from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values
from rfcircuits.crosscheck.oracles.brute import BruteForce
from rfcircuits.crosscheck.differential.strategies import Limits, forest_and_instance, random_forest
from sklearn.ensemble import RandomForestClassifier

BACKENDS = sorted(dgraph.STORES)
LIMITS = Limits(max_features=4, max_states=4, max_trees=7, max_classes=3)


def iris_forest():
    """Five trees on scikit-learn's iris: projections that add nodes to the manager."""
    from sklearn.datasets import load_iris

    data, target = load_iris(return_X_y=True)
    model = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0)
    return forest_from_sklearn(model.fit(data, target))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", range(8))
def test_exists_is_the_disjunction_over_the_feature_states(monkeypatch, backend, seed):
    monkeypatch.setattr(dgraph, "BACKEND", backend)
    rng = random.Random(seed)
    f = random_forest(rng, Limits(max_features=4, max_states=5, max_trees=6, max_classes=3))
    comp = compile_dg(f, "first", "dg-conj")
    dg = comp.dg
    brute = BruteForce(f, "first")
    roots = [r for rs in comp.roots for r in rs]
    roots += [dg.negate(r) for r in roots]
    for g in roots:
        for feature, ft in enumerate(f.features):
            e = dg.exists(g, feature)
            assert dg.ordered[e]
            dg.check_invariants([e])
            assert not dg.vars[e] >> feature & 1
            for w in brute.worlds:
                some = any(dg.evaluate(g, w[:feature] + (s,) + w[feature + 1:])
                           for s in range(ft.n_states))
                assert dg.evaluate(e, w) == some
        x = brute.worlds[rng.randrange(len(brute.worlds))]
        bits = dg.store.evaluate([g, e, dg.negate(g)], x)
        assert bits[0] == dg.evaluate(g, x) | dg.evaluate(e, x) << 1 | (not dg.evaluate(g, x)) << 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_exists_needs_an_ordered_node(monkeypatch, backend):
    monkeypatch.setattr(dgraph, "BACKEND", backend)
    dg = dgraph.DG([Feature.categorical("A", list("pq"))])
    retest = dg.node(0, ((0b01, dg.literal(0, 0b01)), (0b10, dgraph.TRUE)))
    assert not dg.ordered[retest]
    with pytest.raises(ValueError, match="ordered"):
        dg.exists(retest, 0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", range(12))
def test_projected_sets_equal_the_search(monkeypatch, backend, seed):
    # NRs on each class's conjunction (Alg. 3B) and CEs on each negated class (Alg. 3A), at
    # every world: the projections' minimal sets are the search's, in the same order.
    monkeypatch.setattr(dgraph, "BACKEND", backend)
    rng = random.Random(100 + seed)
    f = random_forest(rng, Limits(max_features=5, max_states=4, max_trees=7, max_classes=4))
    explainer = GraphEngine(f, nr_method="search")
    comp = explainer.compiled
    dg = comp.dg
    lists = [list(rs) for rs in comp.roots]
    lists += [[explainer.negated_class(t)] for t in range(len(f.classes))]
    worlds = BruteForce(f, "first").worlds
    for roots in lists:
        p = Projections(dg, roots)
        for x in worlds:
            assert p.min_deviations(x) == dg.min_deviations(roots, x)


def test_projection_limits():
    # The cap counts the nodes the projections add: exactly enough passes, one fewer fails.
    f = iris_forest()
    added = []
    for cap in (None, "exact", "one fewer"):
        comp = compile_dg(f, "first", "dg-conj")
        before = len(comp.dg)
        if cap is None:
            Projections(comp.dg, comp.roots[0])
            added.append(len(comp.dg) - before)
            assert added[0] > 0
        elif cap == "exact":
            Projections(comp.dg, comp.roots[0], max_new_nodes=added[0])
        else:
            with pytest.raises(TooLarge):
                Projections(comp.dg, comp.roots[0], max_new_nodes=added[0] - 1)
    wide = [Feature.categorical(f"f{i}", ["a", "b"]) for i in range(MAX_FEATURES + 1)]
    with pytest.raises(TooLarge):
        Projections(dgraph.DG(wide), [dgraph.TRUE])
    rng = np.random.default_rng(0)
    data = rng.integers(0, 2, size=(60, MAX_FEATURES + 1))
    model = RandomForestClassifier(n_estimators=2, random_state=0)
    f = forest_from_sklearn(model.fit(data, data.sum(axis=1) % 2))
    with pytest.raises(ValueError, match="at most"):
        GraphEngine(f, nr_method="project")
    assert GraphEngine(f).explain_states(instances_from_values(f, data[:1])[0], ("nr",))


def test_auto_falls_back_to_the_search_past_the_cap(monkeypatch):
    # A cap below what the projections need: "auto" searches, "project" insists.
    import rfcircuits.graphengine as explain

    f = iris_forest()
    monkeypatch.setattr(explain, "PROJECTION_FACTOR", 0)
    monkeypatch.setattr(explain, "PROJECTION_SLACK", 0)
    auto = GraphEngine(f)
    auto.compile(negated=True)
    # (later lists may reuse nodes made for earlier ones and add none)
    assert auto._projections[tuple(auto.compiled.roots[0])] is None
    forced = GraphEngine(f, nr_method="project")
    forced.compile(negated=True)
    assert all(p is not None for p in forced._projections.values())
    for x in BruteForce(f, "first").worlds[::7]:
        what = ("sr", "nr", "ce", "robust", "flips")
        assert auto.explain_states(x, what).to_json() == forced.explain_states(x, what).to_json()


@settings(max_examples=150, deadline=None)
@given(forest_and_instance(LIMITS), st.sampled_from(["first", "all"]), st.sampled_from(NR_METHODS))
def test_nr_methods_equal_brute_force(case, ties, method):
    f, x = case
    explainer = GraphEngine(f, ties, nr_method=method)
    what = ("sr", "nr", "ce", "robust", "flips")
    truth = BruteForce(f, ties).explain(x, what)
    assert explainer.explain_states(x, what).to_json(engine=False) == truth.to_json()


def test_unknown_nr_method_is_refused():
    f = iris_forest()
    with pytest.raises(ValueError, match="nr_method"):
        GraphEngine(f, nr_method="nope")
    with pytest.raises(ValueError, match="nr_method"):
        GraphEngine(f).explain_states(BruteForce(f, "first").worlds[0], ("nr",), nr_method="nope")


def test_projections_need_ordered_graphs():
    f = iris_forest()
    comp = compile_dg(f, "first", "dg-conj")
    dg = comp.dg
    retest = dg.node(0, ((1, dg.literal(0, 1)), (dg.full[0] & ~1, dgraph.TRUE)))
    assert not dg.ordered[retest]
    with pytest.raises(ValueError, match="ordered"):
        Projections(dg, [comp.roots[0][0], retest])
