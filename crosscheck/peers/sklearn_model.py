"""A scikit-learn model of a forest file, for the peers that are given one (``verify-peer
--forest``, ``fuzz --adapter --forest``, :func:`rfcircuits.crosscheck.peers.grading.grade_peer`).

PyXAI imports a fitted ``RandomForestClassifier``, RFxpl reads its ``estimators_``: a forest
of ours reaches them as such a model, built tree by tree (:func:`sklearn_from_forest`). Every
tree node becomes ``x <= threshold`` tests: a branching on a numeric feature is split at the
thresholds between the runs of states that go to different branches (the states a path can
still be in form an interval, so a test that a path decides is left out and a branch on
states that are no interval is reached through several tests, its subtree copied), and a
leaf holds its class with weight 1, so that the model's ``predict`` (the mean of the trees'
class fractions, the first class on ties) is the forest's hard-majority decision. A forest of
soft votes whose leaves hold class probabilities (non-negative weights that ``predict_proba``
leaves as they are: divided by their float64 sum, they do not change) and no initial scores
has those probabilities in its leaves, so that ``predict`` is the forest's decision wherever
float64 sums cannot decide otherwise (:meth:`~rfcircuits.forest.Forest.near_tie`). Its
``classes_`` are the class indices ``0..k-1`` (as a model trained on ``Dataset.y``), its
features unnamed, in the forest's order.

A forest is refused (:class:`~rfcircuits.errors.InputError`) when no such model can decide
as it does: a categorical feature (a scikit-learn tree tests numbers), two thresholds of a
feature that no float32 value separates (scikit-learn's trees read float32 inputs, and would
test them alike), or soft votes that are no class probabilities (:func:`check_probabilities`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rfcircuits.errors import InputError
from rfcircuits.forest import Branching, Forest, Leaf, float32_floor


def check_numeric(forest: Forest) -> None:
    """InputError unless every feature has numeric thresholds that float32 inputs tell apart
    (module docstring)."""
    for feature in forest.features:
        if feature.thresholds is None:
            raise InputError(f"feature {feature.name!r} is categorical: a peer is given a "
                             "scikit-learn model, whose trees test numeric thresholds; grade "
                             "the peer on a scikit-learn forest (--model M --data D), or grade "
                             "explanations it wrote for this forest with rfcircuits verify")
        ts = feature.thresholds
        for low, high in zip(ts, ts[1:]):
            if float32_floor(low) == float32_floor(high):
                raise InputError(f"feature {feature.name!r}: thresholds {low!r} and {high!r} "
                                 "enclose no float32 value, and scikit-learn's trees read "
                                 "float32 inputs, so no scikit-learn model decides as this "
                                 "forest does; give the fitted model it was imported from "
                                 "(--model M --data D) instead")


def check_probabilities(forest: Forest) -> None:
    """InputError unless a soft forest's leaves hold class probabilities that
    ``predict_proba`` keeps as they are (non-negative, unchanged when divided by their float64
    sum) and it has no initial scores: then a scikit-learn forest sums them as it does."""
    if forest.voting != "soft":
        return
    problem = "it has initial scores" if forest.init is not None else ""
    for t, tree in enumerate(forest.trees):
        for node in tree.nodes:
            if problem or type(node) is not Leaf:
                continue
            value = np.asarray(node.weights, dtype=np.float64)
            if (value < 0).any() or not np.array_equal(value / value.sum(), value):
                problem = f"tree {t} has a leaf whose weights {list(node.weights)} are no " \
                          "class probabilities"
    if problem:
        raise InputError(f"the forest has soft votes that no scikit-learn forest sums alike "
                         f"({problem}); give the fitted model it was imported from (--model M "
                         "--data D) instead")


def sklearn_from_forest(forest: Forest) -> Any:
    """A fitted ``RandomForestClassifier`` whose ``predict`` is the forest's decision on every
    input (module docstring; soft votes: but at near ties); InputError for a forest no such
    model can follow."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.tree import DecisionTreeClassifier

    check_probabilities(forest)
    check_numeric(forest)
    n_features, n_classes = len(forest.features), len(forest.classes)
    classes = np.arange(n_classes)
    trees = []
    for t in range(len(forest.trees)):
        tree = DecisionTreeClassifier()
        tree.n_features_in_, tree.n_outputs_ = n_features, 1
        tree.classes_, tree.n_classes_, tree.max_features_ = classes, n_classes, n_features
        tree.tree_ = _tree(forest, t)
        trees.append(tree)
    model = RandomForestClassifier(n_estimators=len(trees))
    model.estimator_ = DecisionTreeClassifier()
    model.estimators_ = trees
    model.n_features_in_, model.n_outputs_ = n_features, 1
    model.classes_, model.n_classes_ = classes, n_classes
    return model


def _tree(forest: Forest, t: int) -> Any:
    """Tree ``t`` of the forest as a scikit-learn ``Tree`` (module docstring), built
    iteratively (a path can be long)."""
    from sklearn.tree._tree import NODE_DTYPE, TREE_LEAF, TREE_UNDEFINED, Tree

    nodes = forest.trees[t].nodes
    rows: list[list[Any]] = []
    values: list[Any] = []  # each leaf's class, or its probabilities (soft); None for a test
    depth = 0
    full = {f: (0, ft.n_states - 1) for f, ft in enumerate(forest.features)}
    # (our node, the interval of states per feature the path leaves, the parent's slot, depth)
    stack: list[tuple[int, dict[int, tuple[int, int]], tuple[int, int] | None, int]] = \
        [(0, full, None, 0)]
    while stack:
        k, box, parent, level = stack.pop()
        node = nodes[k]
        split = None
        while type(node) is Branching:
            low, high = box[node.feature]
            child = [next(c for mask, c in node.branches if mask >> s & 1)
                     for s in range(low, high + 1)]
            cuts = [low + i for i in range(1, len(child)) if child[i] != child[i - 1]]
            if cuts:
                split = (node.feature, cuts[len(cuts) // 2])
                break
            k = child[0]
            node = nodes[k]
        slot = len(rows)
        if parent is not None:
            rows[parent[0]][parent[1]] = slot
        depth = max(depth, level)
        if split is None:
            rows.append([TREE_LEAF, TREE_LEAF, TREE_UNDEFINED, float(TREE_UNDEFINED)])
            values.append(node.label if node.weights is None else node.weights)
            continue
        f, cut = split
        threshold = forest.features[f].thresholds[cut - 1]  # states < cut: x <= t_{cut-1}
        rows.append([TREE_LEAF, TREE_LEAF, f, threshold])
        values.append(None)
        low, high = box[f]
        stack.append((k, {**box, f: (cut, high)}, (slot, 1), level + 1))
        stack.append((k, {**box, f: (low, cut - 1)}, (slot, 0), level + 1))
    n_classes = len(forest.classes)
    # per node the leaves below it per class (children come after their parent), as fractions
    # the way scikit-learn 1.4 and later keeps them; a leaf holds its class alone, or its
    # probabilities
    counts = np.zeros((len(rows), n_classes))
    for i in reversed(range(len(rows))):
        left, right = rows[i][:2]
        if isinstance(values[i], tuple):
            counts[i] = values[i]
        elif values[i] is not None:
            counts[i, values[i]] = 1.0
        else:
            counts[i] = counts[left] + counts[right]
    array = np.zeros(len(rows), dtype=NODE_DTYPE)
    for i, (left, right, f, threshold) in enumerate(rows):
        size = counts[i].sum()
        array[i] = (left, right, f, threshold, 0.0, int(size), size, 0)
    sums = counts.sum(axis=1, keepdims=True)
    value = np.where([[isinstance(v, tuple)] for v in values], counts, counts / sums)
    value = value[:, np.newaxis, :]
    tree = Tree(len(forest.features), np.array([n_classes], dtype=np.intp), 1)
    tree.__setstate__({"max_depth": depth, "node_count": len(rows), "nodes": array,
                       "values": value})
    return tree
