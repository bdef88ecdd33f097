"""Import XGBoost and LightGBM classifiers into the forest model, from their own JSON documents:
forests of soft votes whose exact decision is the library's ``predict`` (docs/decisions.md,
"XGBoost and LightGBM are imported from their own JSON", says how each rule was established).

Both libraries decide a class from margins: per class, an initial score plus the value of
the leaf each of the class's trees reaches. Every leaf here adds its value to its class's
sum (a binary model has one margin, class 1's, against class 0's sum of 0, as
:func:`rfcircuits.sklearn_import.forest_from_sklearn` imports a binary gradient-boosted
model), and the decision is the first class of largest exact sum (docs/semantics.md §3).

- **XGBoost** (``Booster.save_raw("json")``, ``save_model`` JSON; the sklearn API's
  ``XGBClassifier``): a test goes left when ``x < split_condition``, both float32, inputs
  cast to float32: the forest reads inputs as float32 (``input_dtype``) and tests
  ``x <= t'`` with ``t'`` the largest float32 below the condition, the same test on every
  float32. The margins start from ``base_score`` taken to margin space (binary:logistic:
  its float32 logit; multi-class: the vector as stored) and are summed in float32
  (``sum_dtype``), tree by tree. ``predict`` takes class 1 when the float32 sigmoid of the
  margin exceeds 1/2, the argmax of the softmax probabilities (multi:softprob) or of the
  margins (multi:softmax), first on ties: the exact sums' decision except on near ties
  (:meth:`rfcircuits.forest.Forest.near_tie`). A model trained with early stopping is
  imported up to its ``best_iteration``, the trees ``XGBClassifier.predict`` uses.
- **LightGBM** (``Booster.dump_model()``; ``LGBMClassifier``): a test goes left when
  ``x <= threshold``, float64, except that the prediction API reads every input within
  ``1e-35`` (float32) of 0 as 0; a threshold in that band is moved to the band's edge so
  that the plain test on the raw value agrees. ``boost_from_average``'s initial score is
  already in the first trees' leaves; margins are float64 sums, turned into probabilities in
  float64 (``LGBMClassifier.predict``: class 1 when ``p > 1 - p``, else the argmax).

Not modelled, so refused or left out: missing values (instances are complete; the trees'
default directions are never taken; LightGBM's ``zero_as_missing``, which sends zeros
there, is refused), categorical splits, linear trees, other objectives and boosters (dart,
gblinear, LightGBM's random-forest mode, multiclassova, whose saturated probabilities tie),
vector leaves. A model's feature names are its own (``f0``, ``f1``, ... for XGBoost without
names, ``Column_0``, ... for LightGBM); its classes are ``0``, ``1``, ... unless given.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rfcircuits.errors import InputError
from rfcircuits.forest import Forest, JsonReader
from rfcircuits.jsonio import load_json_file
from rfcircuits.sklearn_import import (build_forest, forest_from_sklearn, given_names,
                                       load_model, score_leaf, soft_only)

XGBOOST_OBJECTIVES = ("binary:logistic", "binary:hinge", "multi:softprob", "multi:softmax")
LIGHTGBM_OBJECTIVES = ("binary", "multiclass")
#: LightGBM's ``kZeroThreshold``: the prediction API reads every ``|x| <= `` it as 0.
LIGHTGBM_ZERO = float(np.float32(1e-35))
_RT_EPS = float(np.float32(1e-6))  # XGBoost's kRtEps: the bounds of a logistic base_score


@dataclass(frozen=True)
class _Arrays:
    """One tree in scikit-learn's array form, what
    :func:`rfcircuits.sklearn_import.build_forest` reads: a leaf has left child -1 and
    feature -2, and ``value[node, 0, 0]`` is its value."""

    children_left: list[int]
    children_right: list[int]
    feature: list[int]
    threshold: list[float]
    value: np.ndarray


def forest_from_xgboost(model: Any, feature_names: Sequence[str] | None = None,
                        class_names: Sequence[str] | None = None) -> Forest:
    """The forest of an XGBoost classifier (module docstring): ``model`` is a fitted
    ``XGBClassifier``, a ``Booster`` or the parsed JSON document of one. Time O(nodes ×
    depth)."""
    r = JsonReader("XGBoost model")
    learner = r.get(xgboost_document(model), "learner", dict, "model")
    objective = r.get(r.get(learner, "objective", dict, "learner"), "name", str,
                      "learner.objective")
    if objective not in XGBOOST_OBJECTIVES:
        raise InputError(f"cannot import an XGBoost model with objective {objective!r}: "
                         f"expected one of {', '.join(XGBOOST_OBJECTIVES)}")
    booster = r.get(learner, "gradient_booster", dict, "learner")
    if booster.get("name") != "gbtree":
        raise InputError(f"cannot import an XGBoost {booster.get('name')!r} booster: only "
                         "'gbtree' (dart scales its trees at prediction, gblinear has none)")
    trees_model = r.get(booster, "model", dict, "learner.gradient_booster")
    where = "learner.learner_model_param"
    param = r.get(learner, "learner_model_param", dict, "learner")
    n_features = _numbers(r, param, "num_feature", int, where)[0]
    base = [float(np.float32(v)) for v in _numbers(r, param, "base_score", float, where)]
    trees = r.get(trees_model, "trees", list, "model")
    groups = r.get(trees_model, "tree_info", list, "model")
    best = learner.get("attributes", {}).get("best_iteration")
    if best is not None:  # early stopping: XGBClassifier.predict uses these iterations only
        indptr = r.get(trees_model, "iteration_indptr", list, "model")
        try:
            end = indptr[int(best) + 1]
        except (TypeError, ValueError, IndexError):
            raise r.fail("learner.attributes", f"best_iteration {best!r} is not an iteration "
                                               "of the model") from None
        trees, groups = trees[:end], groups[:end]
    if objective.startswith("binary:"):
        n_classes = 2
        init = [0.0, base[0] if objective == "binary:hinge" else _logit32(base[0])]
        groups = [1] * len(trees)
    else:
        n_classes = _numbers(r, param, "num_class", int, where)[0]
        init = base * n_classes if len(base) == 1 else base
    if len(groups) != len(trees) or any(g not in range(n_classes) for g in groups):
        raise r.fail("model", f"tree_info must give each of the {len(trees)} trees a class "
                              f"of 0 to {n_classes - 1}")
    names = learner.get("feature_names") or [f"f{i}" for i in range(n_features)]
    arrays = [_xgboost_tree(r, t, k, n_features) for k, t in enumerate(trees)]
    return build_forest(arrays, [score_leaf(n_classes, g) for g in groups],
                        given_names(feature_names, names, "feature"),
                        given_names(class_names, list(range(n_classes)), "class"),
                        "float32", "soft", init, "float32")


def _numbers(r: JsonReader, obj: Any, key: str, kind: type, where: str) -> list[Any]:
    """The numbers (``int`` or ``float``) of a string field: XGBoost writes its parameters
    as text (``"30"``, ``"[6.274165E-1]"``, ``"[0E0,1E-1]"``)."""
    text = r.get(obj, key, str, where)
    try:
        return [kind(v) for v in text.strip("[]").split(",")]
    except ValueError:
        raise r.fail(where, f"field {key!r} must hold {kind.__name__} numbers, not "
                            f"{text!r}") from None


def xgboost_document(model: Any) -> dict[str, Any]:
    """The JSON document of an XGBoost model: ``model`` itself when it is one (a dict),
    else its booster's ``save_raw("json")``."""
    if isinstance(model, dict):
        return model
    if hasattr(model, "__sklearn_is_fitted__") and not model.__sklearn_is_fitted__():
        raise InputError(f"cannot import an unfitted {type(model).__name__}: fit it first")
    booster = model.get_booster() if hasattr(model, "get_booster") else model
    if not hasattr(booster, "save_raw"):
        raise InputError(f"cannot import a {type(model).__name__} as an XGBoost model")
    return json.loads(booster.save_raw("json"))


def _logit32(p: float) -> float:
    """XGBoost's margin of a logistic ``base_score``: ``-log(1/p - 1)`` in float32, ``p``
    clamped to ``[1e-6, 1 - 1e-6]``; the log is rounded correctly here, where the platform's
    ``logf`` may be 1 float32 ulp off (within the near-tie bound, which counts the initial
    score as a term)."""
    f32 = np.float32
    p32 = min(max(f32(p), f32(_RT_EPS)), f32(1) - f32(_RT_EPS))
    odds = f32(f32(1) / p32) - f32(1)
    return -float(f32(math.log(float(odds))))


def _xgboost_tree(r: JsonReader, tree: Any, k: int, n_features: int) -> _Arrays:
    """Tree ``k`` of an XGBoost model in array form: a split's condition ``c`` (float32,
    ``x < c`` goes left) becomes the threshold of ``x <= t``, ``t`` the largest float32 below
    ``c``; a leaf's value is its ``split_conditions`` entry. The nodes reachable from the
    root must form a tree (checked iteratively)."""
    where = f"tree {k}"
    if _numbers(r, r.get(tree, "tree_param", dict, where), "size_leaf_vector", int,
                where)[0] > 1:
        raise InputError(f"XGBoost model, {where}: vector leaves (multi_strategy="
                         "'multi_output_tree') cannot be imported")
    left, right, split = (r.get(tree, key, list, where) for key in
                          ("left_children", "right_children", "split_indices"))
    condition = r.get(tree, "split_conditions", list, where)
    kinds = tree.get("split_type", [])
    n = len(left)
    if not n or not len(right) == len(split) == len(condition) == n or not all(
            type(v) is int for v in (*left, *right, *split)) or not all(
            type(v) in (int, float) and math.isfinite(v) for v in condition):
        raise r.fail(where, "left_children, right_children and split_indices must be lists "
                            "of integers, split_conditions of finite numbers, all of one length")
    seen = [False] * n
    stack = [0]
    while stack:
        node = stack.pop()
        if seen[node]:
            raise r.fail(where, f"node {node} is reached twice: not a tree")
        seen[node] = True
        if left[node] < 0:
            continue
        if node < len(kinds) and kinds[node] != 0:
            raise InputError(f"XGBoost model, {where}, node {node}: a categorical split cannot "
                             "be imported (numeric splits only)")
        if not 0 <= split[node] < n_features:
            raise r.fail(f"{where}, node {node}", f"feature index {split[node]} out of range "
                                                  f"({n_features} features)")
        for child in left[node], right[node]:
            if not 0 <= child < n:
                raise r.fail(f"{where}, node {node}", f"child {child} is not a node")
            stack.append(child)
    values = np.asarray(condition, dtype=np.float32)
    below = np.nextafter(values, np.float32(-np.inf))
    return _Arrays(list(left), list(right), [f if l >= 0 else -2 for f, l in zip(split, left)],
                   [float(t) for t in below], values.astype(np.float64).reshape(-1, 1, 1))


def forest_from_lightgbm(model: Any, feature_names: Sequence[str] | None = None,
                         class_names: Sequence[str] | None = None) -> Forest:
    """The forest of a LightGBM classifier (module docstring): ``model`` is a fitted
    ``LGBMClassifier`` (its classes named as its ``classes_``), a ``Booster`` or the
    dictionary its ``dump_model()`` returns. Time O(nodes × depth)."""
    if class_names is None and hasattr(model, "classes_"):
        class_names = [str(c) for c in model.classes_]
    doc = lightgbm_document(model)
    r = JsonReader("LightGBM model")
    name, *options = r.get(doc, "objective", str, "model").split()
    if name not in LIGHTGBM_OBJECTIVES:
        raise InputError(f"cannot import a LightGBM model with objective {name!r}: expected "
                         f"one of {', '.join(LIGHTGBM_OBJECTIVES)}")
    try:
        sigmoid = float(dict(o.split(":", 1) for o in options if ":" in o).get("sigmoid", 1))
    except ValueError:
        raise r.fail("model", f"objective {doc['objective']!r}: sigmoid is no number") from None
    if sigmoid < 0.25:  # p is 1/2 on margins up to 2 u / sigmoid: within LINK_ULPS u
        raise InputError(f"cannot import a LightGBM model with sigmoid {sigmoid} < 0.25: its "
                         "probabilities round to 1/2 beyond the near-tie bound")
    if doc.get("average_output"):
        raise InputError("cannot import a LightGBM random forest (boosting 'rf'): it "
                         "averages its trees")
    per_iteration = int(r.get(doc, "num_tree_per_iteration", int, "model"))
    n_classes = 2 if name == "binary" else per_iteration
    features = r.get(doc, "feature_names", list, "model")
    arrays = []
    for k, info in enumerate(r.get(doc, "tree_info", list, "model")):
        arrays.append(_lightgbm_tree(r, r.get(info, "tree_structure", dict, f"tree {k}"),
                                     k, len(features)))
    leaves = [score_leaf(n_classes, 1 if name == "binary" else k % per_iteration)
              for k in range(len(arrays))]
    return build_forest(arrays, leaves, given_names(feature_names, features, "feature"),
                        given_names(class_names, list(range(n_classes)), "class"),
                        "float64", "soft")


def lightgbm_document(model: Any) -> dict[str, Any]:
    """The ``dump_model()`` dictionary of a LightGBM model: ``model`` itself when it is one,
    else its booster's (the iterations its ``predict`` uses: up to the best one after early
    stopping)."""
    if isinstance(model, dict):
        return model
    if hasattr(model, "__sklearn_is_fitted__") and not model.__sklearn_is_fitted__():
        raise InputError(f"cannot import an unfitted {type(model).__name__}: fit it first")
    booster = getattr(model, "booster_", model)
    if not hasattr(booster, "dump_model"):
        raise InputError(f"cannot import a {type(model).__name__} as a LightGBM model")
    return booster.dump_model()


def _lightgbm_tree(r: JsonReader, root: dict[str, Any], k: int, n_features: int) -> _Arrays:
    """Tree ``k`` of a LightGBM dump in array form, flattened iteratively (nodes in
    depth-first order, the root first)."""
    left: list[int] = []
    right: list[int] = []
    features: list[int] = []
    thresholds: list[float] = []
    values: list[float] = []
    stack: list[tuple[dict[str, Any], int, bool]] = [(root, -1, True)]
    while stack:
        node, parent, is_left = stack.pop()
        at = len(values)
        if parent >= 0:
            (left if is_left else right)[parent] = at
        left.append(-1)
        right.append(-1)
        where = f"tree {k}, node {at}"
        if "split_feature" not in node:
            if "leaf_const" in node:
                raise InputError(f"LightGBM model, {where}: a linear tree's leaves depend on "
                                 "the input: linear trees cannot be imported")
            values.append(float(r.get(node, "leaf_value", (int, float), where)))
            features.append(-2)
            thresholds.append(0.0)
            continue
        decision = r.get(node, "decision_type", str, where)
        if decision != "<=":
            raise InputError(f"LightGBM model, {where}: a categorical split ({decision!r}) "
                             "cannot be imported (numeric splits only)")
        if node.get("missing_type") == "Zero":
            raise InputError(f"LightGBM model, {where}: it treats zeros as missing values "
                             "(zero_as_missing), sent the default way: not modelled")
        feature = r.get(node, "split_feature", int, where)
        if not 0 <= feature < n_features:
            raise r.fail(where, f"feature index {feature} out of range ({n_features} "
                                "features)")
        values.append(0.0)
        features.append(feature)
        thresholds.append(_lightgbm_threshold(
            float(r.get(node, "threshold", (int, float), where))))
        stack.append((r.get(node, "right_child", dict, where), at, False))
        stack.append((r.get(node, "left_child", dict, where), at, True))
    return _Arrays(left, right, features, thresholds, np.asarray(values).reshape(-1, 1, 1))


def _lightgbm_threshold(t: float) -> float:
    """The threshold ``t'`` with ``x <= t'`` exactly when LightGBM's reading of ``x`` (0 for
    ``|x| <= LIGHTGBM_ZERO``) is ``<= t``: ``t`` itself outside the zero band."""
    if 0 <= t < LIGHTGBM_ZERO:
        return LIGHTGBM_ZERO
    if -LIGHTGBM_ZERO <= t < 0:
        return math.nextafter(-LIGHTGBM_ZERO, -math.inf)
    return t


IMPORTERS: dict[str, Callable[..., Forest]] = {"xgboost": forest_from_xgboost,
                                               "lightgbm": forest_from_lightgbm}


class LightGBMFile:
    """A LightGBM model read from its text model file (``Booster.save_model``), deciding as
    ``LGBMClassifier.predict`` does from the booster's probabilities: class 1 when
    ``p > 1 - p`` (binary), else the first class of largest probability."""

    def __init__(self, booster: Any) -> None:
        self.booster_ = booster
        n_classes = booster.num_model_per_iteration()
        self.classes_ = np.arange(2 if n_classes == 1 else n_classes)
        names = booster.feature_name()
        if names != [f"Column_{i}" for i in range(len(names))]:  # LightGBM's defaults
            self.feature_names_in_ = np.asarray(names, dtype=object)

    def predict(self, X: Any) -> np.ndarray:
        p = self.booster_.predict(X)
        return np.argmax(np.column_stack((1.0 - p, p)) if p.ndim == 1 else p, axis=1)


def library_of(model: Any) -> str | None:
    """``"xgboost"`` or ``"lightgbm"`` for a model (or document) of that library, None for
    anything else (a scikit-learn model, say)."""
    if isinstance(model, LightGBMFile):
        return "lightgbm"
    if isinstance(model, dict):
        return "xgboost" if "learner" in model else "lightgbm" if "tree_info" in model else None
    root = type(model).__module__.split(".")[0]
    return root if root in IMPORTERS else None


def forest_from_model(model: Any, feature_names: Sequence[str] | None = None,
                      class_names: Sequence[str] | None = None,
                      votes: str | None = None) -> Forest:
    """The forest of any model ``rfcircuits import`` takes: an XGBoost or LightGBM
    classifier (soft votes only), else a scikit-learn one
    (:func:`rfcircuits.sklearn_import.forest_from_sklearn`)."""
    library = library_of(model)
    if library is None:
        return forest_from_sklearn(model, feature_names, class_names, votes=votes)
    if votes not in (None, "soft"):
        raise soft_only(model_name(model))
    return IMPORTERS[library](model, feature_names, class_names)


def model_name(model: Any) -> str:
    """What a model is, for messages: its class's name, or the kind of file it was read
    from."""
    if isinstance(model, LightGBMFile):
        return "LightGBM Booster"
    if isinstance(model, dict):
        return "LightGBM dump_model() document" if library_of(model) == "lightgbm" else \
            "XGBoost JSON document"
    return type(model).__name__


def load_model_file(path: str | os.PathLike[str]) -> Any:
    """The model in a file: an XGBoost model file (``save_model``, JSON or UBJSON) as an
    ``XGBClassifier``, a LightGBM text model file as a :class:`LightGBMFile`, a LightGBM
    ``dump_model()`` JSON file as its dictionary (it cannot predict), else what
    :func:`rfcircuits.sklearn_import.load_model` reads (pickle, joblib).

    Loading a pickle runs code the file names: load only files you trust."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(64).lstrip()
    except OSError:
        return load_model(path)  # which names the problem
    if head.startswith(b"tree\n") or head.startswith(b"tree\r\n"):
        lightgbm = _library("lightgbm", path)
        try:
            return LightGBMFile(lightgbm.Booster(model_file=path))
        except lightgbm.basic.LightGBMError as exc:
            raise InputError(f"{path}: cannot read the LightGBM model ({exc})") from None
    if path.endswith(".ubj") or head.startswith(b"{"):
        if not path.endswith(".ubj"):
            doc = load_json_file(path)
            if library_of(doc) != "xgboost":
                if library_of(doc) == "lightgbm":
                    return doc
                raise InputError(f"{path}: a JSON file, but no XGBoost model (no 'learner') "
                                 "nor LightGBM dump (no 'tree_info')")
        xgboost = _library("xgboost", path)
        model = xgboost.XGBClassifier()
        try:
            model.load_model(path)
        except xgboost.core.XGBoostError as exc:
            first = str(exc).strip().splitlines()[0]
            raise InputError(f"{path}: cannot read the XGBoost model ({first})") from None
        return model
    return load_model(path)


def _library(name: str, path: str) -> Any:
    """The module ``name``, or an InputError saying that ``path`` needs it."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise InputError(f"{path}: reading this model file needs the {name} package (pip "
                         "install 'rfcircuits[boost]')") from None
