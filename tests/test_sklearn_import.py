"""Importing scikit-learn forests: every tree votes as its sklearn ``predict``."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from rfcircuits.errors import InputError
from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values


@pytest.mark.parametrize("loader", [load_iris, load_wine, load_breast_cancer])
@pytest.mark.parametrize("model", [
    RandomForestClassifier(n_estimators=15, max_depth=5, random_state=0),
    ExtraTreesClassifier(n_estimators=15, random_state=0),
    DecisionTreeClassifier(random_state=0),
])
def test_per_tree_votes_equal_sklearn_predict(loader, model):
    X, y = loader(return_X_y=True)
    model.fit(X, y)
    forest = forest_from_sklearn(model)
    states = instances_from_values(forest, X)
    estimators = getattr(model, "estimators_", [model])
    for est, tree in zip(estimators, forest.trees):
        predicted = est.predict(X)
        assert [tree.vote(x) for x in states] == [int(p) for p in predicted]
    # Thresholds are collected per feature across the forest.
    for j, feature in enumerate(forest.features):
        used = {float(t) for est in estimators for f, t in
                zip(est.tree_.feature, est.tree_.threshold) if f == j}
        assert set(feature.thresholds) == used


def test_hard_majority_vs_predict_is_reported_not_assumed():
    X, y = load_wine(return_X_y=True)
    model = RandomForestClassifier(n_estimators=6, max_depth=2, random_state=1).fit(X, y)
    forest = forest_from_sklearn(model)
    states = instances_from_values(forest, X)
    votes = np.array([forest.decision(x) for x in states])
    # Where all trees agree, the hard vote and probability averaging must agree too.
    unanimous = [i for i, x in enumerate(states) if max(forest.votes(x)) == len(forest.trees)]
    assert all(votes[i] == model.predict(X[i:i + 1])[0] for i in unanimous)


def test_rejects_other_models():
    from sklearn.linear_model import LogisticRegression

    with pytest.raises(InputError, match="cannot import a LogisticRegression"):
        forest_from_sklearn(LogisticRegression())
