"""Import fitted scikit-learn tree ensembles into the forest model (SPEC §1, §2).

Supports ``RandomForestClassifier``, ``ExtraTreesClassifier`` and ``DecisionTreeClassifier``.
Every feature becomes numeric; its thresholds are all thresholds any tree uses on it. A leaf
votes for the argmax (first on ties) of its class distribution, as each sklearn tree's
``predict`` does. A feature re-tested lower in a tree keeps only its feasible states; a test
that the path already decides is skipped (its reachable child takes its place).

scikit-learn compares ``float32(x) <= threshold``; :func:`instances_from_values` applies the
same cast so that states agree with ``predict`` on the rows it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rfcircuits.errors import InputError
from rfcircuits.forest import Branching, Feature, Forest, Instance, Leaf, Tree, TreeNode


def _estimators(model: Any) -> list[Any]:
    name = type(model).__name__
    if name not in ("RandomForestClassifier", "ExtraTreesClassifier", "DecisionTreeClassifier"):
        raise InputError(f"cannot import a {name}: expected a fitted RandomForestClassifier, "
                         "ExtraTreesClassifier or DecisionTreeClassifier")
    if not hasattr(model, "n_features_in_"):
        raise InputError(f"this {name} is not fitted: call its fit(X, y) first")
    return [model] if name == "DecisionTreeClassifier" else list(model.estimators_)


def forest_from_sklearn(model: Any, feature_names: Sequence[str] | None = None,
                        class_names: Sequence[str] | None = None) -> Forest:
    """The forest of a fitted scikit-learn classifier (hard-majority semantics, SPEC §2)."""
    estimators = _estimators(model)
    if getattr(model, "n_outputs_", 1) != 1:
        raise InputError("multi-output classifiers are not supported")
    n_features = int(model.n_features_in_)
    if feature_names is None:
        names = getattr(model, "feature_names_in_", None)
        feature_names = [str(n) for n in names] if names is not None else \
            [f"x{i}" for i in range(n_features)]
    if len(feature_names) != n_features:
        raise InputError(f"{len(feature_names)} feature names for {n_features} features")
    classes = [str(c) for c in (class_names if class_names is not None else model.classes_)]
    if len(classes) != len(model.classes_):
        raise InputError(f"{len(classes)} class names for {len(model.classes_)} classes")
    thresholds: list[set[float]] = [set() for _ in range(n_features)]
    for est in estimators:
        t = est.tree_
        for f, thr in zip(t.feature, t.threshold):
            if f >= 0:
                thresholds[f].add(float(thr))
    features = [Feature.numeric(n, ts) for n, ts in zip(feature_names, thresholds)]
    index = [{t: k for k, t in enumerate(f.thresholds or ())} for f in features]
    trees = [_convert(est.tree_, features, index) for est in estimators]
    return Forest(tuple(features), tuple(classes), tuple(trees))


def _convert(t: Any, features: list[Feature], index: list[dict[float, int]]) -> Tree:
    """One sklearn tree, iteratively (sklearn trees can be deeper than Python's stack)."""
    left_of, right_of, feat, thr = t.children_left, t.children_right, t.feature, t.threshold
    winners = np.argmax(t.value[:, 0, :], axis=1)
    nodes: list[TreeNode | None] = [None]
    stack: list[tuple[int, dict[int, int], int]] = [(0, {}, 0)]
    while stack:
        sk, ctx, slot = stack.pop()
        while left_of[sk] >= 0:
            f = int(feat[sk])
            full = features[f].full
            feasible = ctx.get(f, full)
            left = ((1 << (index[f][float(thr[sk])] + 1)) - 1) & feasible
            right = feasible & ~left
            if left and right:
                break
            sk = left_of[sk] if left else right_of[sk]
        else:
            nodes[slot] = Leaf(int(winners[sk]))
            continue
        l_slot, r_slot = len(nodes), len(nodes) + 1
        nodes.extend((None, None))
        nodes[slot] = Branching(f, ((left, l_slot), (right, r_slot)))
        stack.append((int(right_of[sk]), {**ctx, f: right}, r_slot))
        stack.append((int(left_of[sk]), {**ctx, f: left}, l_slot))
    return Tree(tuple(nodes))  # type: ignore[arg-type]  # every slot is filled


def instances_from_values(forest: Forest, rows: Any) -> list[Instance]:
    """States of raw numeric rows (features in forest order), cast to float32 like sklearn."""
    data = np.asarray(rows, dtype=np.float32).astype(np.float64)
    if data.ndim != 2 or data.shape[1] != len(forest.features):
        raise InputError(f"expected rows of {len(forest.features)} values, got shape {data.shape}")
    columns = []
    for j, f in enumerate(forest.features):
        if f.thresholds is None:
            raise InputError(f"feature {f.name!r} is categorical; raw values need numeric features")
        columns.append(np.searchsorted(np.asarray(f.thresholds), data[:, j], side="left"))
    return [tuple(int(c[i]) for c in columns) for i in range(data.shape[0])]
