"""DG.threshold (core/dgstore.py, core/_dgstore.c): "at least k of these ordered graphs are
true" by top-down expansion, against counting world by world, and against the totalizer's
graph (ordered graphs under one feature order are canonical, so the ids must be equal)."""

from __future__ import annotations

import itertools
import random

import pytest

from rfcircuits import dgraph
from rfcircuits.apply import Apply
from rfcircuits.ops import Ops
from rfcircuits.dgraph import DG, FALSE, TRUE
from rfcircuits.forest import Feature
from rfcircuits.totalizer import counts

BACKENDS = sorted(dgraph.STORES)


def random_graph(dg: DG, ap: Apply, rng: random.Random, depth: int) -> int:
    """A random ordered graph: a random function of random features, built by ordered Apply."""
    if depth == 0 or rng.random() < 0.2:
        return rng.choice((TRUE, FALSE))
    f = rng.randrange(len(dg.features))
    out = FALSE
    for s in range(dg.features[f].n_states):
        branch = ap.ordered(0, dg.literal(f, 1 << s), random_graph(dg, ap, rng, depth - 1))
        out = ap.ordered(1, out, branch)
    return out


@pytest.mark.parametrize("seed", range(60))
def test_threshold_counts_world_by_world_and_equals_the_totalizer(monkeypatch, seed):
    shapes = []
    for backend in BACKENDS:
        monkeypatch.setattr(dgraph, "BACKEND", backend)
        rng = random.Random(seed)
        features = [Feature.categorical(f"f{i}", [f"s{j}" for j in range(rng.randint(2, 5))])
                    for i in range(rng.randint(1, 4))]
        order = list(range(len(features)))
        rng.shuffle(order)
        dg = DG(features, order)
        ap = Apply(dg)
        roots = [random_graph(dg, ap, rng, 3) for _ in range(rng.randint(0, 7))]
        if roots and rng.random() < 0.5:
            roots.append(rng.choice(roots))  # a repeated input counts twice
        ks = [rng.randint(-1, len(roots) + 2) for _ in range(3)]
        got = dg.threshold(roots, ks)
        dg.check_invariants(got)
        assert all(dg.ordered[g] for g in got)
        for world in itertools.product(*(range(f.n_states) for f in features)):
            true = sum(dg.evaluate(r, world) for r in roots)
            assert [dg.evaluate(g, world) for g in got] == [true >= k for k in ks], world
        positive = [k for k in ks if k >= 1]
        if roots and positive:
            want = counts([[r] for r in roots], positive, Ops(ap.disj, ap.conj, FALSE))
            assert want == [g for g, k in zip(got, ks) if k >= 1]
        shapes.append((got, [(dg.feature[n], dg.store.segments(n)) for n in range(len(dg))]))
    assert all(s == shapes[0] for s in shapes)


@pytest.mark.parametrize("backend", BACKENDS)
def test_threshold_needs_ordered_nodes(monkeypatch, backend):
    monkeypatch.setattr(dgraph, "BACKEND", backend)
    dg = DG([Feature.categorical("a", ["0", "1", "2"]), Feature.categorical("b", ["0", "1"])])
    inner = dg.node(1, [(0b01, FALSE), (0b10, TRUE)])
    retest = dg.node(0, [(0b001, dg.node(0, [(0b110, TRUE), (0b001, FALSE)])), (0b110, inner)])
    with pytest.raises(ValueError, match="ordered"):
        dg.threshold([inner, retest], [1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_threshold_depth_is_the_number_of_features(monkeypatch, backend):
    """One input per feature: the expansion descends through every feature, deeper than
    Python's default recursion limit."""
    monkeypatch.setattr(dgraph, "BACKEND", backend)
    k = 1500
    dg = DG([Feature.categorical(f"f{i}", ["0", "1"]) for i in range(k)])
    inputs = [dg.literal(f, 0b10) for f in range(k)]
    at_least, everything = dg.threshold(inputs, [2, k])
    world = [0] * k
    world[7] = world[1400] = 1
    assert dg.evaluate(at_least, world) and not dg.evaluate(everything, world)
    assert dg.evaluate(everything, [1] * k)
