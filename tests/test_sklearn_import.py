"""Importing scikit-learn forests: every tree reaches scikit-learn's leaf and votes its predict.

scikit-learn compares ``float32(x) <= threshold``. The expected leaves are scikit-learn's own
(``apply``, ``predict``); the rule that walks a scikit-learn tree with our states is derived
here from float32 arithmetic, not from the converter: at a node with threshold ``t``, a float32
input goes left iff it is at most ``a``, the largest float32 not above ``t``, iff its state is
at most the state holding ``a``.
"""

from __future__ import annotations

import bisect
import json

import numpy as np
import pytest
from sklearn.datasets import (load_breast_cancer, load_digits, load_iris, load_wine,
                              make_classification)
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from rfcircuits.errors import InputError
from rfcircuits.forest import Forest, forest_from_json, parse_instance
from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values

UP, DOWN = np.float32(np.inf), np.float32(-np.inf)


def floor32(t: float) -> float:
    """The largest float32 not above ``t`` (written independently of the importer's)."""
    a = np.float32(t)
    if float(a) > t:
        a = np.nextafter(a, DOWN)
    return float(a)


def next32(a: float) -> float:
    return float(np.nextafter(np.float32(a), UP))


def synthetic():
    return make_classification(n_samples=300, n_features=8, n_informative=5, n_classes=3,
                               random_state=0)


LOADERS = {"iris": lambda: load_iris(return_X_y=True), "wine": lambda: load_wine(return_X_y=True),
           "breast_cancer": lambda: load_breast_cancer(return_X_y=True),
           "digits": lambda: load_digits(return_X_y=True), "synthetic": synthetic}
MODELS = {
    "random-forest": lambda: RandomForestClassifier(n_estimators=15, max_depth=6, random_state=0),
    "extra-trees": lambda: ExtraTreesClassifier(n_estimators=10, max_depth=10, random_state=0),
    "decision-tree": lambda: DecisionTreeClassifier(random_state=0),
}


def estimators(model):
    return getattr(model, "estimators_", [model])


def leaf_by_our_states(est, forest: Forest, x) -> int:
    """The scikit-learn node our states reach: left iff state <= state of floor32(t)."""
    tree = est.tree_
    node = 0
    while tree.children_left[node] >= 0:
        f = tree.feature[node]
        limit = bisect.bisect_left(forest.features[f].thresholds, floor32(tree.threshold[node]))
        node = tree.children_left[node] if x[f] <= limit else tree.children_right[node]
    return int(node)


def near_thresholds(model, X, rng, limit=150) -> np.ndarray:
    """Rows of X with one value moved within float32 rounding of a threshold: the float32
    values on both sides of it, the threshold itself, its float64 neighbours, and float64
    values either side of the midpoint between the two float32 values (which round apart)."""
    cuts = sorted({(int(f), float(t)) for est in estimators(model)
                   for f, t in zip(est.tree_.feature, est.tree_.threshold) if f >= 0})
    if len(cuts) > limit:
        cuts = [cuts[i] for i in sorted(rng.choice(len(cuts), limit, replace=False))]
    rows = []
    for f, t in cuts:
        a = floor32(t)
        b = next32(a)
        middle = (a + b) / 2
        for v in (a, b, t, np.nextafter(t, -np.inf), np.nextafter(t, np.inf), middle,
                  np.nextafter(middle, -np.inf), np.nextafter(middle, np.inf)):
            row = X[rng.integers(len(X))].copy()
            row[f] = v
            rows.append(row)
    return np.array(rows)


def check_against_sklearn(model, forest: Forest, X: np.ndarray) -> None:
    """Per tree: our states reach scikit-learn's leaf (``apply``) and our tree votes its
    ``predict``; the forest's votes and hard-majority decision are those of the trees."""
    states = instances_from_values(forest, X)
    predictions = []
    for k, (est, tree) in enumerate(zip(estimators(model), forest.trees)):
        leaves = est.apply(X)
        predicted = np.searchsorted(est.classes_, est.predict(X))
        predictions.append(predicted)
        for i, x in enumerate(states):
            assert leaf_by_our_states(est, forest, x) == leaves[i], (k, i, X[i])
            assert tree.vote(x) == predicted[i], (k, i, X[i])
    n_classes = len(forest.classes)
    for i, x in enumerate(states):
        counts = np.bincount([int(p[i]) for p in predictions], minlength=n_classes).tolist()
        assert forest.votes(x) == counts
        assert forest.decision(x) == counts.index(max(counts))


def check_reachable(model, forest: Forest) -> None:
    """Kept thresholds are scikit-learn's; each of scikit-learn's tests alike with a kept one
    on float32 inputs; every interval state holds a float32 value."""
    for j, feature in enumerate(forest.features):
        used = {float(t) for est in estimators(model)
                for f, t in zip(est.tree_.feature, est.tree_.threshold) if f == j}
        kept = feature.thresholds
        assert set(kept) <= used
        assert {floor32(t) for t in used} == {floor32(t) for t in kept}
        for low, high in zip(kept, kept[1:]):
            assert next32(floor32(low)) <= high  # a float32 in (low, high]


@pytest.mark.parametrize("data", sorted(LOADERS))
@pytest.mark.parametrize("kind", sorted(MODELS))
def test_states_leaves_and_votes_equal_sklearn(data, kind):
    X, y = LOADERS[data]()
    model = MODELS[kind]().fit(X, y)
    forest = forest_from_sklearn(model, votes="hard")
    assert forest.input_dtype == "float32"
    check_reachable(model, forest)
    rng = np.random.default_rng(0)
    check_against_sklearn(model, forest, np.vstack([X, near_thresholds(model, X, rng)]))


def test_one_placement_for_instances_and_rows():
    X, y = load_iris(return_X_y=True)
    model = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    forest = forest_from_sklearn(model, votes="hard")
    rows = near_thresholds(model, X, np.random.default_rng(1))
    names = [f.name for f in forest.features]
    via_json = [parse_instance(forest, json.loads(json.dumps(dict(zip(names, row.tolist())))))
                for row in rows]
    assert via_json == instances_from_values(forest, rows)
    again = forest_from_json(json.loads(json.dumps(forest.to_json())))
    assert again == forest and again.input_dtype == "float32"


def test_iris_thresholds_that_no_float32_separates_are_merged():
    # 0.75 = (0.5 + 1.0) / 2 and (float32(0.4) + float32(1.1)) / 2 = 0.7500000149 are both
    # midpoints scikit-learn makes on iris; no float32 lies between them.
    X, y = load_iris(return_X_y=True)
    model = RandomForestClassifier(n_estimators=15, max_depth=5, random_state=0).fit(X, y)
    used = {float(t) for est in model.estimators_ for t in est.tree_.threshold}
    assert {0.75, 0.7500000149011612} <= used
    thresholds = forest_from_sklearn(model, votes="hard").features[3].thresholds
    assert 0.75 in thresholds and 0.7500000149011612 not in thresholds


def tied_thresholds_model():
    """Two trees testing x0 at t1 = 1.5 and t2 = 1.5 + 2**-30 (distinct as float64, no float32
    in (t1, t2]), the first tree testing x0 against t2 again below t1's right branch."""
    X = np.array([[v, w] for v in (0.0, 1.0, 2.0, 3.0) for w in (0.0, 1.0)] * 3)
    y = (X[:, 0] > 1.5).astype(int) + 2 * (X[:, 1] > 0.5)
    model = RandomForestClassifier(n_estimators=2, bootstrap=False, max_features=None,
                                   random_state=0).fit(X, y)
    t1, t2 = 1.5, 1.5 + 2.0 ** -30
    assert floor32(t1) == floor32(t2) and t1 < t2
    for k, est in enumerate(model.estimators_):
        tree = est.tree_
        on_x0 = [n for n in range(tree.node_count) if tree.feature[n] == 0]
        assert on_x0
        for n in on_x0:
            tree.threshold[n] = t1 if k == 0 and n == on_x0[0] else t2
    assert {float(t) for est in model.estimators_ for t in est.tree_.threshold} >= {t1, t2}
    return model, t1, t2


def test_thresholds_no_float32_separates_keep_states_and_votes_on_both_sides():
    model, t1, t2 = tied_thresholds_model()
    forest = forest_from_sklearn(model, votes="hard")
    assert forest.features[0].thresholds == (t1,)
    check_reachable(model, forest)
    between = 1.5 + 2.0 ** -31  # t1 < between <= t2 as float64: the old reading split here
    assert t1 < between <= t2
    middle = (t1 + next32(t1)) / 2
    values = [1.0, t1, between, t2, np.nextafter(t2, np.inf), middle,
              np.nextafter(middle, np.inf), np.nextafter(next32(t1), -np.inf), next32(t1), 2.0]
    X = np.array([[v, w] for v in values for w in (0.0, 1.0)])
    check_against_sklearn(model, forest, X)
    states = [x[0] for x in instances_from_values(forest, X)]
    # Up to the midpoint between 1.5 and the next float32, values round to 1.5 (a tie goes to
    # the even 1.5); above it, to the next float32.
    assert states == [0, 0] * 6 + [1, 1] * 4


def test_unreachable_retest_is_skipped():
    """Below ``x0 > t1`` the test ``x0 <= t2`` sends every float32 input right."""
    X = np.array([[v] for v in (0.0, 1.0, 2.0, 3.0)] * 2)
    y = np.array([0, 0, 1, 2] * 2)  # root x0 <= 1.5, then x0 <= 2.5 on its right
    model = DecisionTreeClassifier(random_state=0).fit(X, y)
    tree = model.tree_
    root_right = tree.children_right[0]
    assert (tree.threshold[0], tree.threshold[root_right]) == (1.5, 2.5)
    tree.threshold[root_right] = 1.5 + 2.0 ** -30
    forest = forest_from_sklearn(model, votes="hard")
    assert forest.features[0].thresholds == (1.5,)
    assert len(forest.trees[0].nodes) == 3  # the right child's test is decided: skipped
    check_against_sklearn(model, forest, np.array([[v] for v in (
        0.0, 0.5, 1.0, 1.5, 1.5 + 2.0 ** -31, 1.5 + 2.0 ** -30, next32(1.5), 2.0, 3.0)]))


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")
def test_values_beyond_float32_are_errors():
    X, y = load_iris(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)
    forest = forest_from_sklearn(model, votes="hard")
    with pytest.raises(ValueError):  # scikit-learn rejects them too
        model.predict([[1e39, 1, 1, 1]])
    for bad in (1e39, -1e39, np.inf):
        with pytest.raises(InputError, match=r"row 1, feature 'x0': .*float32"):
            instances_from_values(forest, [[bad, 1, 1, 1]])
    with pytest.raises(InputError, match="NaN"):
        instances_from_values(forest, [[1, np.nan, 1, 1]])
    # The largest float32 and values that round to it are fine.
    biggest = float(np.finfo(np.float32).max)
    assert instances_from_values(forest, [[biggest * (1 + 2.0 ** -26), 1, 1, 1]])
    model.predict([[biggest * (1 + 2.0 ** -26), 1, 1, 1]])


def test_hard_majority_vs_predict_is_reported_not_assumed():
    X, y = load_wine(return_X_y=True)
    model = RandomForestClassifier(n_estimators=6, max_depth=2, random_state=1).fit(X, y)
    forest = forest_from_sklearn(model, votes="hard")
    states = instances_from_values(forest, X)
    votes = np.array([forest.decision(x) for x in states])
    # Where all trees agree, the hard vote and probability averaging must agree too.
    unanimous = [i for i, x in enumerate(states) if max(forest.votes(x)) == len(forest.trees)]
    assert all(votes[i] == model.predict(X[i:i + 1])[0] for i in unanimous)


def test_rejects_other_models():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    with pytest.raises(InputError, match="cannot import a LogisticRegression"):
        forest_from_sklearn(LogisticRegression())
    with pytest.raises(InputError, match="cannot import an unfitted RandomForestClassifier"):
        forest_from_sklearn(RandomForestClassifier())
    X, y = load_iris(return_X_y=True)
    pipeline = make_pipeline(StandardScaler(), DecisionTreeClassifier()).fit(X, y)
    with pytest.raises(InputError, match=r"cannot import a Pipeline: .*pipeline\[-1\]"):
        forest_from_sklearn(pipeline)


def test_rejects_a_split_on_missing_values():
    X = np.array([[0.0], [1.0], [np.nan], [2.0], [np.nan], [3.0]])
    model = DecisionTreeClassifier(random_state=0).fit(X, [0, 0, 1, 0, 1, 0])
    with pytest.raises(InputError, match="trained with missing values"):
        forest_from_sklearn(model)
