"""Forests of soft votes (issue 43): leaves carrying per-class float64 weights, summed
exactly. The expected sums are computed here with :class:`fractions.Fraction`, independently of
the model's scaling to integers."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rfcircuits.errors import InputError
from rfcircuits.forest import forest_from_json

WEIGHT = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False) | \
    st.sampled_from([0.0, 1 / 3, 2 / 3, 0.1, 0.2, 0.7, 5e-324, 2.0 ** -60])


def soft_doc(leaves: list[list[float]], init: list[float] | None = None) -> dict[str, Any]:
    """Trees of one split on ``x`` (state 0 to the first leaf, 1 to the second), two leaves
    each, over the classes a, b, c (as many as a leaf has weights)."""
    doc: dict[str, Any] = {
        "format": "rfcircuits.forest/1", "votes": "soft",
        "classes": ["a", "b", "c"][:len(leaves[0])],
        "features": [{"name": "x", "thresholds": [0.5]}],
        "trees": [{"nodes": [{"feature": "x", "branches": [[[0], 1], [[1], 2]]},
                             {"weights": leaves[t]}, {"weights": leaves[t + 1]}]}
                  for t in range(0, len(leaves) - 1, 2)]}
    if init is not None:
        doc["init"] = init
    return doc


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(WEIGHT, min_size=3, max_size=3), min_size=2, max_size=12)
       .filter(lambda ls: len(ls) % 2 == 0),
       st.none() | st.lists(WEIGHT, min_size=3, max_size=3))
def test_soft_sums_are_exact(leaves, init):
    forest = forest_from_json(soft_doc(leaves, init))
    for state in (0, 1):
        expected = [Fraction(w) for w in init or [0.0] * 3]
        for t in range(0, len(leaves), 2):
            for i, w in enumerate(leaves[t + state]):
                expected[i] += Fraction(w)
        got = [Fraction(v, 2 ** forest.scale) for v in forest.votes((state,))]
        assert got == expected
        best = max(expected)
        assert forest.decision((state,)) == expected.index(best)
        assert forest.classes_of((state,), "all") == [i for i, v in enumerate(expected)
                                                      if v == best]
    assert forest_from_json(json.loads(json.dumps(forest.to_json()))) == forest


def test_a_near_tie_below_float64_resolution_is_decided_exactly():
    """0.1 + 0.2 + 0.7 and 0.7 + 0.2 + 0.1 are the same real sum but differ as float64 sums
    accumulated in order; the exact sums tie, and the tie policy decides."""
    leaves = [[0.1, 0.7, 0.0], [0.0, 0.0, 1.0], [0.2, 0.2, 0.0], [0.0, 0.0, 1.0],
              [0.7, 0.1, 0.0], [0.0, 0.0, 1.0]]
    forest = forest_from_json(soft_doc(leaves))
    assert (0.1 + 0.2) + 0.7 != (0.7 + 0.2) + 0.1
    assert forest.classes_of((0,), "all") == [0, 1]
    assert forest.decision((0,)) == 0


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("votes"), "weights in a forest of hard votes"),
    (lambda d: d["trees"][0]["nodes"][1].update(weights=[1.0]), "1 weights for 3 classes"),
    (lambda d: d["trees"][0]["nodes"].__setitem__(1, {"class": "a"}), "needs weights"),
    (lambda d: d.update(votes="averaged"), "votes"),
    (lambda d: d.update(init=[0.0, "x", 0.0]), "finite numbers expected"),
    (lambda d: (d.pop("votes"), d.update(init=[0.0, 0.0, 0.0])), "only soft votes"),
    (lambda d: d.update(sum_dtype="float16"), "sum_dtype must be one of 'float64', 'float32'"),
    (lambda d: (d.pop("votes"), d["trees"][0]["nodes"].__setitem__(1, {"class": "a"}),
                d["trees"][0]["nodes"].__setitem__(2, {"class": "b"}),
                d.update(sum_dtype="float32")), "sum_dtype: only soft votes"),
])
def test_malformed_soft_forests_are_refused_naming_the_place(change, message):
    doc = soft_doc([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    change(doc)
    with pytest.raises(InputError, match=message):
        forest_from_json(doc)


def test_soft_forest_files_follow_their_schema():
    from tests.test_formats import assert_valid, problems

    forest = forest_from_json({**soft_doc([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], [0.0, 0.1, -2.0]),
                               "sum_dtype": "float32"})
    doc = forest.to_json()
    assert_valid("forest", doc)
    assert doc["sum_dtype"] == "float32" and forest_from_json(doc) == forest
    doc["trees"][0]["nodes"][1]["class"] = "a"  # a leaf is one kind or the other
    assert problems("forest", doc)


@pytest.mark.parametrize("weights", ["none", "class_weight", "sample_weight"])
def test_soft_import_decides_what_predict_decides(weights):
    """Imported with soft votes, the forest's exact decision is the model's ``predict`` on
    every row; with hard votes it differs on some (the rows this product explained wrongly
    for scikit-learn forests before)."""
    import numpy as np
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values

    X, y = load_breast_cancer(return_X_y=True)
    model = RandomForestClassifier(n_estimators=10, max_depth=3, random_state=0,
                                   class_weight="balanced" if weights == "class_weight" else None)
    model.fit(X, y, sample_weight=np.arange(1, len(y) + 1) % 5 + 1
              if weights == "sample_weight" else None)
    predicted = list(model.predict(X))
    soft, hard = (forest_from_sklearn(model, votes=v) for v in ("soft", "hard"))
    rows = instances_from_values(soft, X)
    assert [model.classes_[soft.decision(x)] for x in rows] == predicted
    assert [model.classes_[hard.decision(x)] for x in rows] != predicted


def float_decisions(leaves: list[list[float]], state: int, orders: int, seed: int) -> set[int]:
    """The classes numpy's argmax takes from float64 sums of the leaves ``state`` reaches,
    added in ``orders`` random orders and divided by the number of trees, as scikit-learn's
    forests do (the order is their threads')."""
    import random

    import numpy as np

    rng = random.Random(seed)
    reached = [leaves[t + state] for t in range(0, len(leaves), 2)]
    found = set()
    for _ in range(orders):
        rng.shuffle(reached)
        total = np.zeros(3)
        for w in reached:
            total += np.asarray(w)
        found.add(int(np.argmax(total / len(reached))))
    return found


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.7, 1 / 3, 2 / 3, 0.5, 1.0]),
                         min_size=3, max_size=3), min_size=2, max_size=16)
       .filter(lambda ls: len(ls) % 2 == 0), st.integers(0, 2 ** 32))
def test_only_near_ties_can_be_decided_otherwise_by_float_sums(leaves, seed):
    """An instance not flagged as a near tie gets the exact decision from float64 sums in
    any order; the weights are a few values whose sums often tie exactly."""
    forest = forest_from_json(soft_doc(leaves))
    for state in (0, 1):
        if not forest.near_tie((state,)):
            assert float_decisions(leaves, state, 20, seed) == {forest.decision((state,))}


def test_an_exact_tie_that_float_sums_break_is_flagged():
    """a and b tie exactly on state 0; summed in float64 they come out as 1.0 and
    0.9999999999999999 or the reverse, by the order (four trees: the division is exact)."""
    leaves = [[0.1, 0.7, 0.0], [0.0, 0.0, 1.0], [0.2, 0.2, 0.0], [0.0, 0.0, 1.0],
              [0.7, 0.1, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    forest = forest_from_json(soft_doc(leaves))
    assert forest.near_tie((0,)) and not forest.near_tie((1,))
    assert float_decisions(leaves, 0, 50, 0) == {0, 1}


def float32_decisions(leaves: list[list[float]], state: int, orders: int, seed: int) -> set[int]:
    """The classes XGBoost's arithmetic takes from the leaves ``state`` reaches, added in
    float32 in ``orders`` random orders: a binary model's class 1 when the float32 sigmoid of
    its margin (class 1's sum; class 0's is 0) exceeds 1/2, else the first largest float32
    softmax probability (exponentials summed in float64, as XGBoost does)."""
    import random

    import numpy as np

    f32 = np.float32
    rng = random.Random(seed)
    reached = [np.asarray(leaves[t + state], dtype=f32) for t in range(0, len(leaves), 2)]
    found = set()
    for _ in range(orders):
        rng.shuffle(reached)
        total = np.zeros(len(reached[0]), dtype=f32)
        for w in reached:
            total += w
        if len(total) == 2:
            found.add(int(f32(1) / (np.exp(-total[1]) + f32(1)) > 0.5))
        else:
            e = np.exp(total - total.max())
            found.add(int(np.argmax(e / f32(sum(float(v) for v in e)))))
    return found


FLOAT32_WEIGHT = st.sampled_from([float(__import__("numpy").float32(v)) for v in (
    0.0, 0.1, 0.2, 0.3, 0.7, 1 / 3, 0.5, 1.0, -0.1, -0.3, 2.0 ** -25, -(2.0 ** -26), 1e-7)])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.integers(2, 3).flatmap(lambda k: st.lists(
    st.lists(FLOAT32_WEIGHT, min_size=k, max_size=k).map(
        lambda w: [0.0, w[1]] if len(w) == 2 else w),  # binary: class 0's sum stays 0
    min_size=2, max_size=16).filter(lambda ls: len(ls) % 2 == 0)), st.integers(0, 2 ** 32))
def test_only_near_ties_can_be_decided_otherwise_by_float32_sums(leaves, seed):
    """``sum_dtype`` float32 (XGBoost): an instance not flagged gets the exact decision from
    float32 sums in any order through XGBoost's sigmoid or softmax; the weights include
    margins within its sigmoid's rounding of 1/2."""
    forest = forest_from_json({**soft_doc(leaves), "sum_dtype": "float32"})
    for state in (0, 1):
        if not forest.near_tie((state,)):
            assert float32_decisions(leaves, state, 20, seed) == {forest.decision((state,))}


def test_import_votes_soft_reports_full_agreement_with_predict(tmp_path, capsys):
    import joblib
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier

    from rfcircuits.cli.main import main
    from rfcircuits.forest import load_forest

    data = load_breast_cancer(as_frame=True)
    model = RandomForestClassifier(n_estimators=10, max_depth=3, random_state=0)
    model.fit(data.data, data.target)
    joblib.dump(model, tmp_path / "m.joblib")
    data.frame.to_csv(tmp_path / "rows.csv", index=False)
    common = ["import", "--model", str(tmp_path / "m.joblib"), "--data",
              str(tmp_path / "rows.csv"), "--target", "target"]
    assert main([*common, "--out", str(tmp_path / "hard.json"), "--votes", "hard"]) == 0
    assert "vote agrees with sklearn predict: 100.00%" not in capsys.readouterr().out
    assert main([*common, "--out", str(tmp_path / "soft.json")]) == 0  # soft by default
    out = capsys.readouterr().out
    assert "accuracy (exact soft vote)" in out
    assert "vote agrees with sklearn predict: 100.00% of rows" in out
    assert load_forest(tmp_path / "soft.json").voting == "soft"
    assert load_forest(tmp_path / "hard.json").voting == "hard"


@pytest.mark.parametrize("load", ["breast_cancer", "wine"])
def test_gradient_boosting_imports_as_soft_votes_deciding_as_predict(load):
    """Binary (one score against 0) and multi-class (a tree per class and stage, non-zero
    initial scores on wine): the exact decision is ``predict``'s on every row."""
    import numpy as np
    import sklearn.datasets
    from sklearn.ensemble import GradientBoostingClassifier

    from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values

    X, y = getattr(sklearn.datasets, f"load_{load}")(return_X_y=True)
    model = GradientBoostingClassifier(n_estimators=30, max_depth=3, random_state=0).fit(X, y)
    forest = forest_from_sklearn(model, votes="soft")
    assert len(forest.trees) == model.estimators_.size
    assert forest.init is not None and any(forest.init)
    rows = instances_from_values(forest, X)
    assert not any(forest.near_tie(x) for x in rows)
    assert [model.classes_[forest.decision(x)] for x in rows] == list(model.predict(X))
    assert forest_from_sklearn(model) == forest  # boosted: soft votes by default
    with pytest.raises(InputError, match="import it with soft votes"):
        forest_from_sklearn(model, votes="hard")
    model.init_ = "zero"  # as init="zero" fits it: every score starts at 0
    assert forest_from_sklearn(model, votes="soft").init == (0.0,) * len(forest.classes)
    assert np.all(model._raw_predict_init(X[:3]) == 0)


def test_import_a_boosted_model_from_the_command_line(tmp_path, capsys):
    import joblib
    from sklearn.datasets import load_wine
    from sklearn.ensemble import GradientBoostingClassifier

    from rfcircuits.cli.main import main
    from rfcircuits.forest import load_forest

    data = load_wine(as_frame=True)
    model = GradientBoostingClassifier(n_estimators=10, max_depth=2, random_state=0)
    joblib.dump(model.fit(data.data, data.target), tmp_path / "gb.joblib")
    data.frame.to_csv(tmp_path / "rows.csv", index=False)
    assert main(["import", "--model", str(tmp_path / "gb.joblib"), "--data",
                 str(tmp_path / "rows.csv"), "--target", "target", "--out",
                 str(tmp_path / "gb.json")]) == 0
    out = capsys.readouterr().out
    assert "30 trees, depth 2" in out and "agrees with sklearn predict: 100.00%" in out
    assert load_forest(tmp_path / "gb.json").voting == "soft"
