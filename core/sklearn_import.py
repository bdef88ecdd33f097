"""Import fitted scikit-learn tree ensembles into the forest model (docs/semantics.md §1, §3).

Supports fitted single-output ``RandomForestClassifier``, ``ExtraTreesClassifier`` and
``DecisionTreeClassifier`` models (and their subclasses); not a ``Pipeline``, whose other steps
transform the inputs before its trees see them. Every feature becomes numeric; its thresholds
are the thresholds any tree uses on it. A leaf votes for the argmax (first on ties) of its
class distribution, as each scikit-learn tree's ``predict`` does. A feature re-tested lower in
a tree keeps only its feasible states; a test that the path already decides is skipped (its
reachable child takes its place).

scikit-learn casts its inputs to float32 and then compares ``float32(x) <= threshold`` with
float64 thresholds. An imported forest therefore has ``input_dtype`` ``"float32"``: every raw
number placed in its states is rounded to float32 first
(:func:`rfcircuits.forest.read_value`), and thresholds that no float32 separates are merged
(:func:`merge_thresholds`), so that states agree with ``predict`` on every input.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from rfcircuits.errors import InputError, check_choice
from rfcircuits.forest import (VOTES, Branching, Feature, Forest, Instance, Leaf, Tree,
                               TreeNode, float32_floor, read_values)

SUPPORTED = ("RandomForestClassifier, ExtraTreesClassifier, DecisionTreeClassifier or "
             "GradientBoostingClassifier")


def _estimators(model: Any) -> list[Any]:
    """The fitted trees of a supported model; InputError for anything else."""
    from sklearn.ensemble import (ExtraTreesClassifier, GradientBoostingClassifier,
                                  RandomForestClassifier)
    from sklearn.exceptions import NotFittedError
    from sklearn.pipeline import Pipeline
    from sklearn.tree import DecisionTreeClassifier
    from sklearn.utils.validation import check_is_fitted

    name = type(model).__name__
    if isinstance(model, Pipeline):
        raise InputError(f"cannot import a {name}: its steps before the trees transform the "
                         "inputs, which a forest over the raw features cannot express; import "
                         "its final estimator (pipeline[-1]) only if those steps leave the "
                         "features unchanged")
    if not isinstance(model, (RandomForestClassifier, ExtraTreesClassifier,
                              DecisionTreeClassifier, GradientBoostingClassifier)):
        raise InputError(f"cannot import a {name}: expected a fitted {SUPPORTED}")
    try:
        check_is_fitted(model)
    except NotFittedError:
        raise InputError(f"cannot import an unfitted {name}: fit it first") from None
    if isinstance(model, DecisionTreeClassifier):
        return [model]
    if isinstance(model, GradientBoostingClassifier):
        return list(model.estimators_.ravel())  # stage by stage, a tree per class in each
    return list(model.estimators_)


def _boosted_init(model: Any) -> tuple[float, ...]:
    """A boosted model's initial raw scores, per class of the forest: the same for every
    input when its ``init`` is the class prior (the default) or zero; InputError otherwise."""
    from sklearn.dummy import DummyClassifier

    init = model.init_
    if not (init == "zero" or isinstance(init, DummyClassifier) and init.strategy == "prior"):
        raise InputError(f"cannot import a {type(model).__name__} whose init estimator is "
                         f"{type(init).__name__}: its initial scores depend on the input")
    raw = [float(v) for v in model._raw_predict_init(np.zeros((1, model.n_features_in_)))[0]]
    return (0.0, raw[0]) if len(raw) == 1 else tuple(raw)


def merge_thresholds(thresholds: Iterable[float]) -> tuple[list[float], dict[float, int]]:
    """The thresholds a float32 forest keeps (ascending), and for every given threshold the
    index of the kept one that stands for it.

    Two thresholds ``t1 < t2`` with no float32 ``v`` such that ``t1 < v <= t2`` (the same
    :func:`float32_floor`) make the tests ``v <= t1`` and ``v <= t2`` agree on every float32
    input, and the interval state ``(t1, t2]`` between them holds no input scikit-learn can be
    given. Such a state would be a world no input reaches, yet explanations would quantify
    over it: a sufficient reason would have to cover it, a counterfactual could use it. So
    thresholds with one float32 floor are one test: the smallest stands for all, every tree
    test on the others maps to it, and every state holds a float32 input.
    """
    kept: list[float] = []
    index: dict[float, int] = {}
    floor = -math.inf
    for t in sorted(set(thresholds)):
        f32 = float32_floor(t)
        if not kept or f32 != floor:
            kept.append(t)
            floor = f32
        index[t] = len(kept) - 1
    return kept, index


def forest_from_sklearn(model: Any, feature_names: Sequence[str] | None = None,
                        class_names: Sequence[str] | None = None, merge: bool = True,
                        votes: str | None = None) -> Forest:
    """The forest of a fitted scikit-learn classifier, with ``input_dtype`` ``"float32"``
    (module docstring).

    ``votes="hard"``: each tree votes for its leaf's argmax class (the paper's semantics,
    docs/semantics.md §3). ``votes="soft"``: each leaf carries the class probabilities its
    tree's ``predict_proba`` returns there (``tree_.value``, weighted by ``class_weight`` and
    sample weights as fitted), so that the largest exact sum is the class the model's
    ``predict`` takes, which averages them.

    ``votes=None`` (the default): soft, the decision ``predict`` makes (docs/decisions.md,
    "Soft votes by default"); the paper's benchmarks and the peers that explain the majority
    vote ask for hard. A ``GradientBoostingClassifier`` has soft votes only: its
    decision is the argmax of raw
    scores, the initial ones plus each stage's tree of each class, whose leaf adds
    ``learning_rate * value`` (as the float64 product scikit-learn adds). A binary model has
    one score, class 1 when it is at least 0: here class 0's sum stays 0, so the exact sums
    order the classes as ``predict`` does, but an exact tie, which ``predict`` gives to
    class 1, is a near tie (:meth:`rfcircuits.forest.Forest.near_tie`), flagged.

    ``merge=False`` keeps every distinct threshold and reads inputs as float64: the forest as
    an explainer that compares float64 values with the thresholds sees it, states that no
    float32 input reaches included (what :mod:`rfcircuits.crosscheck.peers.unreachable` grades a
    peer's answers against when they differ from ours only there)."""
    estimators = _estimators(model)
    if getattr(model, "n_outputs_", 1) != 1:
        raise InputError("multi-output classifiers are not supported")
    names = getattr(model, "feature_names_in_", None)
    feature_names = given_names(feature_names, list(names) if names is not None else
                                [f"x{i}" for i in range(int(model.n_features_in_))], "feature")
    classes = given_names(class_names, list(model.classes_), "class")
    boosted = hasattr(model, "n_trees_per_iteration_")
    votes = check_choice("votes", votes or "soft", VOTES)
    init = None
    if boosted:
        if votes != "soft":
            raise soft_only(type(model).__name__)
        init = _boosted_init(model)
        k, scale = model.n_trees_per_iteration_, float(model.learning_rate)
        n_classes = len(classes)
        leaf_of = [score_leaf(n_classes, 1 if k == 1 else c % k, scale)
                   for c in range(len(estimators))]
    else:
        leaf_of = [_class_leaf(votes == "soft")] * len(estimators)
    return build_forest([est.tree_ for est in estimators], leaf_of, feature_names, classes,
                        "float32" if merge else "float64", votes, init)


def soft_only(name: str) -> InputError:
    """The error for a boosted model asked for hard votes."""
    return InputError(f"the {name} decides by summed scores: import it with soft votes")


def given_names(given: Sequence[Any] | None, default: Sequence[Any], what: str) -> list[str]:
    """``given`` names (else the model's ``default`` ones) as strings, one per ``what``
    (``"feature"`` or ``"class"``) of the model."""
    names = [str(n) for n in (default if given is None else given)]
    if len(names) != len(default):
        plural = "classes" if what == "class" else what + "s"
        raise InputError(f"{len(names)} {what} names for {len(default)} {plural}")
    return names


def build_forest(trees: Sequence[Any], leaf_of: Sequence[Callable[[Any, int], Leaf]],
                 feature_names: Sequence[str], classes: Sequence[str], input_dtype: str,
                 votes: str, init: Sequence[float] | None = None,
                 sum_dtype: str = "float64") -> Forest:
    """The forest of trees in scikit-learn's array form (``children_left``,
    ``children_right``, ``feature`` and ``threshold`` per node; a leaf has no left child,
    a negative ``feature``), whose test ``x <= threshold`` goes left: ``leaf_of[t](tree,
    node)`` makes tree ``t``'s leaves. With ``input_dtype`` ``"float32"`` thresholds that
    no float32 separates are merged (:func:`merge_thresholds`). Time O(nodes × depth)."""
    thresholds: list[set[float]] = [set() for _ in feature_names]
    for k, t in enumerate(trees):
        for f, thr in zip(t.feature, t.threshold):
            if f < 0:
                continue
            if not math.isfinite(thr):  # scikit-learn's split of missing from present values
                raise InputError(f"tree {k} splits {feature_names[f]!r} at {thr}: a model "
                                 "trained with missing values (NaN) cannot be imported")
            thresholds[f].add(float(thr))
    features, index = [], []
    for name, ts in zip(feature_names, thresholds):
        kept, where = merge_thresholds(ts) if input_dtype == "float32" else \
            (sorted(ts), {t: k for k, t in enumerate(sorted(ts))})
        features.append(Feature.numeric(name, kept))
        index.append(where)
    converted = [_convert(t, features, index, leaf) for t, leaf in zip(trees, leaf_of)]
    return Forest(tuple(features), tuple(classes), tuple(converted), input_dtype, votes,
                  None if init is None else tuple(init), sum_dtype)


def _class_leaf(soft: bool) -> Callable[[Any, int], Leaf]:
    """A classification tree's leaf: its argmax class, and its class probabilities when
    ``soft``."""
    def leaf(t: Any, k: int) -> Leaf:
        value = t.value[k, 0, :]
        return Leaf(int(np.argmax(value)), tuple(float(p) for p in value) if soft else None)
    return leaf


def score_leaf(n_classes: int, c: int, scale: float = 1.0) -> Callable[[Any, int], Leaf]:
    """A boosted regression tree's leaf for class ``c``: ``scale * value`` (its float64
    product) added to it; ``value`` is indexed ``[node, 0, 0]``, as scikit-learn's."""
    def leaf(t: Any, k: int) -> Leaf:
        weights = [0.0] * n_classes
        weights[c] = scale * float(t.value[k, 0, 0])
        return Leaf(max(range(n_classes), key=weights.__getitem__), tuple(weights))
    return leaf


def _convert(t: Any, features: list[Feature], index: list[dict[float, int]],
             leaf: Callable[[Any, int], Leaf]) -> Tree:
    """One sklearn tree, iteratively (sklearn trees can be deeper than Python's stack);
    ``leaf(tree_, node)`` makes its leaves."""
    left_of, right_of, feat, thr = t.children_left, t.children_right, t.feature, t.threshold
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
            nodes[slot] = leaf(t, sk)
            continue
        l_slot, r_slot = len(nodes), len(nodes) + 1
        nodes.extend((None, None))
        nodes[slot] = Branching(f, ((left, l_slot), (right, r_slot)))
        stack.append((int(right_of[sk]), {**ctx, f: right}, r_slot))
        stack.append((int(left_of[sk]), {**ctx, f: left}, l_slot))
    return Tree(tuple(nodes))  # type: ignore[arg-type]  # every slot is filled


def instances_from_values(forest: Forest, rows: Any,
                          where: Callable[[int, int], str] | None = None) -> list[Instance]:
    """States of raw numeric rows (features in forest order), each value read as the forest's
    ``input_dtype`` says (float32 for an imported forest, so states agree with ``predict``).

    ``where(i, j)`` names value ``j`` of row ``i`` in error messages (default: the row's number
    from 1 and the feature's name)."""
    data = np.asarray(rows, dtype=np.float64)
    if data.ndim != 2 or data.shape[1] != len(forest.features):
        raise InputError(f"expected rows of {len(forest.features)} values, got shape {data.shape}")
    for f in forest.features:
        if f.thresholds is None:
            raise InputError(f"feature {f.name!r} is categorical; raw values need numeric features")
    data = read_values(data, forest.input_dtype, where or (
        lambda i, j: f"row {i + 1}, feature {forest.features[j].name!r}"))
    columns = [np.searchsorted(np.asarray(f.thresholds), data[:, j], side="left")
               for j, f in enumerate(forest.features)]
    return [tuple(int(c[i]) for c in columns) for i in range(data.shape[0])]


def load_model(path: str | os.PathLike[str]) -> Any:
    """A model saved with :mod:`pickle` or ``joblib.dump`` (``joblib.load`` reads both).

    Loading a pickle runs code the file names: load only files you trust."""
    import joblib

    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, expected a model file")
    try:
        return joblib.load(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except (ImportError, AttributeError) as exc:  # a class this Python does not have
        raise InputError(f"{path}: cannot load the model ({exc})") from None
    except Exception:  # unpickling other bytes can raise anything
        raise InputError(f"{path}: not a pickle or joblib file of a model") from None
