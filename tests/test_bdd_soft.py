"""The OBDD oracle on forests of soft votes (issue 43): class formulas as exact comparisons of
weighted sums, checked against the brute force and against sums computed here with
:class:`fractions.Fraction`, on random forests and on examples that the last bits decide."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rfcircuits.crosscheck.oracles.bdd import MAX_SOFT_WORK, BddOracle
from rfcircuits.crosscheck.oracles.brute import BruteForce
from rfcircuits.crosscheck.differential.strategies import (Limits, all_worlds, forest_and_instance,
                                                           random_instance, random_soft_forest,
                                                           soft_forests, tied, with_edge_worlds)
from rfcircuits.forest import Branching, Feature, Forest, Leaf, Tree, forest_from_json
from tests.test_bdd import assert_explanations_match, assert_formulas_match, dnf_document

SOFT = Limits(max_features=4, max_states=4, max_trees=6, max_classes=4)
PROPERTY = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TIES = ["first", "all"]
EPS = 2.0 ** -60  # 1.0 + EPS == 1.0 - EPS == 1.0 in float64


def fraction_classes(doc: dict[str, Any], w: tuple[int, ...], ties: str) -> list[int]:
    """The classes of world ``w`` of a forest document of stumps (one test per tree, feature
    by name), from sums of :class:`Fraction`s: independent of the model's integer scaling."""
    names = [f["name"] for f in doc["features"]]
    sums = [Fraction(v) for v in doc.get("init", [0.0] * len(doc["classes"]))]
    for tree in doc["trees"]:
        root, *leaves = tree["nodes"]
        state = w[names.index(root["feature"])]
        child = next(c for states, c in root["branches"] if state in states)
        for i, v in enumerate(leaves[child - 1]["weights"]):
            sums[i] += Fraction(v)
    best = max(sums)
    winners = [i for i, v in enumerate(sums) if v == best]
    return winners if ties == "all" else winners[:1]


def stumps(classes: list[str], features: dict[str, int],
           trees: list[tuple[str, list[list[float]]]],
           init: list[float] | None = None) -> dict[str, Any]:
    """A soft-vote document of one-test trees: ``(feature, weights of each state's leaf)``."""
    doc: dict[str, Any] = {
        "format": "rfcircuits.forest/1", "votes": "soft", "classes": classes,
        "features": [{"name": n, "states": [f"{n}{s}" for s in range(k)]}
                     for n, k in features.items()],
        "trees": [{"nodes": [{"feature": f, "branches": [[[s], s + 1] for s in range(len(ws))]},
                             *({"weights": w} for w in ws)]} for f, ws in trees]}
    if init is not None:
        doc["init"] = init
    return doc


def _test(feature: int, n_states: int) -> Branching:
    """A root testing ``feature``, sending state ``s`` to node ``s + 1``."""
    return Branching(feature, tuple((1 << s, s + 1) for s in range(n_states)))


# -- exact examples --------------------------------------------------------------------------


#: Class b wins at (x0, y1) by 2^-60 of 1 (float64 sums would tie a and b, and argmax take a);
#: a wins at (x0, y0) by as little; c wins wherever x = 1.
LAST_BITS = stumps(["a", "b", "c"], {"x": 2, "y": 2},
                   [("x", [[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
                    ("y", [[EPS, 0.0, 0.0], [-EPS, 0.0, 0.0]])])
#: At x0, a and b tie exactly (0.1 + 0.2 + 0.7 both ways), though float64 sums in tree order
#: differ; at x1, b's 0.1 + 0.2 beats a's 0.3 by about 1.7e-17.
EXACT_TIE = stumps(["a", "b", "c"], {"x": 2},
                   [("x", [[0.1, 0.7, 0.0], [0.0, 0.1, 0.0]]),
                    ("x", [[0.2, 0.2, 0.0], [0.0, 0.2, 0.0]]),
                    ("x", [[0.7, 0.1, 0.0], [0.3, 0.0, 0.0]])], init=[0.0, 0.0, -1.0])
#: Without the init b's 0.3 beats a's 0.2; with it, a's 0.1 + 0.2 beats 0.3 by a hair; at
#: (x1, y1) a and c tie exactly (0.1 + 0.2 + 1/3 each); negative weights elsewhere.
INIT_DECIDES = stumps(["a", "b", "c"], {"x": 2, "y": 2},
                      [("x", [[0.2, 0.3, -1.0], [0.2, 0.3, 0.2]]),
                       ("y", [[0.0, 0.0, -1.0], [1 / 3, -1.0, 1 / 3]])], init=[0.1, 0.0, 0.1])

EXAMPLES = {"last_bits": LAST_BITS, "exact_tie": EXACT_TIE, "init_decides": INIT_DECIDES}


def test_the_examples_are_decided_by_the_last_bits() -> None:
    """The premises of the examples, in float64 and exactly."""
    assert 1.0 + EPS == 1.0 - EPS == 1.0
    assert fraction_classes(LAST_BITS, (0, 1), "all") == [1]
    assert fraction_classes(LAST_BITS, (0, 0), "all") == [0]
    assert (0.1 + 0.2) + 0.7 != (0.7 + 0.2) + 0.1
    assert fraction_classes(EXACT_TIE, (0,), "all") == [0, 1]
    assert fraction_classes(EXACT_TIE, (1,), "all") == [1]
    assert Fraction(0.1) + Fraction(0.2) > Fraction(0.3)
    assert fraction_classes(INIT_DECIDES, (0, 0), "all") == [0]
    assert fraction_classes({**INIT_DECIDES, "init": [0.0] * 3}, (0, 0), "all") == [1]
    assert fraction_classes(INIT_DECIDES, (1, 1), "all") == [0, 2]


@pytest.mark.parametrize("backend", ["cudd", "autoref"])
@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_match_exact_fraction_sums(name: str, ties: str, backend: str) -> None:
    doc = EXAMPLES[name]
    forest = forest_from_json(doc)
    oracle, brute = BddOracle(forest, ties, backend=backend), BruteForce(forest, ties)
    for w in all_worlds(forest):
        expected = fraction_classes(doc, w, ties)
        assert [c for c in range(len(forest.classes)) if oracle.holds(c, w)] == expected, w
    assert_formulas_match(oracle, brute)
    for w in all_worlds(forest):
        assert oracle.explain(w).to_json() == brute.explain(w).to_json(), w


def test_last_bits_explained() -> None:
    """At (x0, y1) b wins by 2^-60: both features are needed, and changing either flips it."""
    forest = forest_from_json(LAST_BITS)
    e = BddOracle(forest).explain((0, 1))
    assert forest.classes[e.decision] == "b"
    assert e.sufficient_reasons == (((0, 0b01), (1, 0b10)),)
    assert e.necessary_reasons == (((0, 0b01),), ((1, 0b10),))
    assert e.robustness == 1
    assert dict(e.contrastive) == {0: (((1, 0b10),),), 2: (((0, 0b01),),)}


def test_many_trees_are_built_without_deep_recursion() -> None:
    """1,300 stumps on two features: the threshold recursion runs over about as many levels
    (a recursive one would pass Python's limit of 1,000 frames)."""
    rng = random.Random(7)
    values = [0.0, 1 / 3, -1 / 3, 1.0]
    features = (Feature.categorical("x", ["x0", "x1", "x2"]),
                Feature.categorical("y", ["y0", "y1"]))
    trees = []
    for k in range(1300):
        f = k % 2
        leaves = [tuple(rng.choice(values) for _ in range(3)) for _ in range(features[f].n_states)]
        trees.append(Tree((_test(f, len(leaves)), *(Leaf(w.index(max(w)), w) for w in leaves))))
    forest = Forest(features, ("a", "b", "c"), tuple(trees), voting="soft", init=(0.0, 0.1, 0.2))
    oracle = BddOracle(forest, "all")
    for w in all_worlds(forest):
        assert [c for c in range(3) if oracle.holds(c, w)] == forest.classes_of(w, "all"), w


@pytest.mark.parametrize("ties", TIES)
def test_circuits_checked_against_soft_class_formulas(ties: str) -> None:
    forest = forest_from_json(EXACT_TIE)
    oracle, brute = BddOracle(forest, ties), BruteForce(forest, ties)
    for c, name in enumerate(forest.classes):
        models = {w for i, w in enumerate(brute.worlds) if brute.class_worlds(c) >> i & 1}
        assert oracle.check_circuit(dnf_document(forest, models, name, ties)).equivalent
        check = oracle.check_circuit(dnf_document(forest, models ^ {(0,)}, name, ties))
        assert not check.equivalent and check.counterexample == {"x": "x0"}


def test_too_big_estimates_soft_work_by_distinct_values() -> None:
    """The same shape of forest is within the limit when its leaf values repeat (few
    distinct sums) and beyond it when every leaf's value is its own."""
    features = tuple(Feature.categorical(f"f{i}", [str(s) for s in range(10)]) for i in range(8))

    def forest(value: Any) -> Forest:
        trees = tuple(Tree((_test(t % 8, 10), *(Leaf(0, (p, 1 - p)) for p in
                                                 (value(t, s) for s in range(10)))))
                      for t in range(16))
        return Forest(features, ("a", "b"), trees, voting="soft")

    assert BddOracle.too_big(forest(lambda t, s: float(s % 2))) is None
    reason = BddOracle.too_big(forest(lambda t, s: 0.1 * s + 1 / (3 + 10 * t + s)))
    assert reason is not None and "soft votes" in reason and str(MAX_SOFT_WORK) in reason
    hard = Forest(features, ("a", "b"), tuple(Tree((Leaf(0),)) for _ in range(16)))
    assert BddOracle.too_big(hard) is None  # hard votes keep their own measure


# -- random forests ----------------------------------------------------------------------------


@PROPERTY
@given(soft_forests(SOFT), st.sampled_from(TIES))
def test_class_formulas_match_brute_force(forest: Forest, ties: str) -> None:
    assert_formulas_match(BddOracle(forest, ties), BruteForce(forest, ties))


@PROPERTY
@given(forest_and_instance(SOFT, soft=True), st.sampled_from(TIES))
def test_explanations_match_brute_force(case: tuple[Forest, tuple[int, ...]], ties: str) -> None:
    assert_explanations_match(case, ties)


@pytest.mark.parametrize("block", range(2))
def test_seeded_soft_forests_at_their_ties_match_brute_force(block: int) -> None:
    """Uniformly drawn forests; the instances include a tied world and one per class."""
    found_ties = 0
    for seed in range(40 * block, 40 * block + 40):
        rng = random.Random(seed)
        forest = random_soft_forest(rng, SOFT)
        assert BddOracle.too_big(forest) is None
        xs = with_edge_worlds(forest, [random_instance(rng, forest)], rng)
        found_ties += any(tied(forest, x) for x in xs)
        for ties in TIES:
            oracle, brute = BddOracle(forest, ties), BruteForce(forest, ties)
            assert_formulas_match(oracle, brute)
            for x in xs:
                assert oracle.explain(x).to_json() == brute.explain(x).to_json(), (seed, ties, x)
    assert found_ties >= 5  # the draws do reach exact ties


@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(forest_and_instance(Limits(max_features=3, max_states=3, max_trees=4, max_classes=3),
                           soft=True))
def test_backends_agree(case: tuple[Forest, tuple[int, ...]]) -> None:
    forest, x = case
    answers = {b: BddOracle(forest, backend=b).explain(x).to_json() for b in ("cudd", "autoref")}
    assert answers["cudd"] == answers["autoref"]
