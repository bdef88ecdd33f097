"""Choosing instances near vote ties: margins and pick_by_margin, against votes written by
hand and against a brute-force ordering of the trees' votes; the random soft-vote forests."""

from __future__ import annotations

import itertools
import random

import pytest

from rfcircuits.forest import Leaf, forest_from_json
from rfcircuits.crosscheck.differential.strategies import (Limits, all_worlds, margin,
                                                           pick_by_margin, random_forest,
                                                           random_soft_forest, tied)


def _stump(leaves: list[str]) -> dict:
    """A tree that tests f once, state i going to the leaf of class leaves[i]."""
    return {"nodes": [{"feature": "f", "branches": [[[s], s + 1] for s in range(len(leaves))]}]
            + [{"class": c} for c in leaves]}


# Per state of f, the class each of the four trees votes for.
FOREST = forest_from_json({
    "format": "rfcircuits.forest/1", "classes": ["a", "b", "c"],
    "features": [{"name": "f", "states": ["s0", "s1", "s2", "s3", "s4"]}],
    "trees": [_stump(["a", "a", "b", "c", "a"]),
              _stump(["a", "b", "b", "c", "b"]),
              _stump(["b", "b", "a", "c", "c"]),
              _stump(["a", "a", "a", "c", "b"])]})
# Counted by hand from the table above: votes (a, b, c) and margin per state.
VOTES = {0: [3, 1, 0], 1: [2, 2, 0], 2: [2, 2, 0], 3: [0, 0, 4], 4: [1, 2, 1]}
MARGINS = {0: 2, 1: 0, 2: 0, 3: 4, 4: 1}


def test_margins_and_ties_on_hand_counted_votes():
    for s, votes in VOTES.items():
        assert FOREST.votes((s,)) == votes
        assert margin(FOREST, (s,)) == MARGINS[s]
        assert tied(FOREST, (s,)) == (s in (1, 2))


def test_pick_by_margin_on_hand_counted_votes():
    instances = [(3,), (0,), (4,), (2,), (1,)]  # margins 4, 2, 1, 0, 0
    # The two exact ties first, in input order (s2 before s1), then margin 1, then 2.
    assert pick_by_margin(FOREST, instances, 3) == [3, 4, 2]
    assert pick_by_margin(FOREST, instances, 10) == [3, 4, 2, 1, 0]
    assert pick_by_margin(FOREST, instances, 0) == []
    assert pick_by_margin(FOREST, [], 2) == []
    # Duplicates are separate instances: both copies of a tie come before margin 1.
    assert pick_by_margin(FOREST, [(4,), (1,), (4,), (1,)], 2) == [1, 3]
    with pytest.raises(ValueError, match="non-negative"):
        pick_by_margin(FOREST, instances, -1)


def _brute_margin(votes: list[int]) -> int:
    rest = list(votes)
    top = max(rest)
    rest.remove(top)
    return top - max(rest, default=0)


@pytest.mark.parametrize("seed", range(40))
def test_pick_by_margin_is_a_sort_of_the_votes(seed):
    rng = random.Random(f"pick-by-margin/{seed}")
    forest = random_forest(rng, Limits(max_trees=6, max_classes=4))
    worlds = all_worlds(forest)
    instances = [rng.choice(worlds) for _ in range(rng.randint(1, 30))]
    k = rng.randint(0, len(instances) + 2)
    margins = [_brute_margin(forest.votes(x)) for x in instances]
    expected = sorted(range(len(instances)), key=lambda i: (margins[i], i))[:k]
    got = pick_by_margin(forest, instances, k)
    assert got == expected
    ties = [i for i, x in enumerate(instances)
            if forest.votes(x).count(max(forest.votes(x))) > 1]
    assert got[:len(ties)] == ties[:k]  # exact ties first, in input order


def test_all_worlds_enumerates_every_instance_once():
    forest = random_forest(random.Random("all-worlds"), Limits())
    worlds = all_worlds(forest)
    assert len(worlds) == len(set(worlds)) == forest.n_worlds()
    assert worlds == sorted(worlds)


def test_soft_forest_strategy_draws_valid_varied_forests():
    """Soft votes, every leaf weighted, the sizes within the limits, inits sometimes, the
    weights of SOFT_WEIGHTS, and sums that tie exactly."""
    limits = Limits(max_trees=6, max_classes=4)
    drawn = [random_soft_forest(random.Random(seed), limits) for seed in range(60)]
    assert all(f.voting == "soft" for f in drawn)
    assert {f.init is None for f in drawn} == {True, False}
    assert {len(f.classes) for f in drawn} == {2, 3, 4}
    assert max(len(f.trees) for f in drawn) <= limits.max_trees
    weights = {w for f in drawn for t in f.trees for n in t.nodes if type(n) is Leaf
               for w in n.weights or ()}
    assert {0.0, 1 / 3, 0.1} <= weights and min(weights) < 0
    assert any(tied(f, w) for f in drawn for w in itertools.islice(all_worlds(f), 50))
