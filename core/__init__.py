"""rfcircuits: exact explanations of a random forest's decisions, from its logical circuits.

Quick start, with a fitted scikit-learn ``RandomForestClassifier``, ``ExtraTreesClassifier``
or ``DecisionTreeClassifier`` ``model``::

    import rfcircuits

    forest = rfcircuits.from_sklearn(model)      # feature names from a DataFrame fit
    explainer = rfcircuits.Explainer(forest)     # compiles the class formulas on first use
    e = explainer.explain(X[0])                  # a NumPy row, a list, a dict, a Series
    print(e)                                     # decision, votes and every reason
    e.to_json()                                  # the same as a JSON object
    explainer.explain_many(X_test)               # a DataFrame, a 2-D array, ...

An instance names every feature once (a mapping or a pandas Series), or gives one value per
feature in the forest's order (an array, a list); a DataFrame's columns must be the forest's
features in its order. Values are numbers, or state names. Anything else raises
:class:`InputError` saying which feature or column is at fault. ``explain(x, what=...)``
picks the fields: ``"sr"``, ``"nr"``, ``"gsr"``, ``"gnr"``, ``"ce"``, ``"robust"``,
``"flips"`` or ``"all"``.

The forest votes by hard majority (one vote per tree), not by averaging probabilities as
scikit-learn's ``predict`` does; the two rarely differ, and the explanations are of the vote.
:func:`load_forest` reads a forest file written by the command line (``rfcircuits train``).
``explainer.save(path)`` keeps the compiled class formulas in a file, and
:func:`load_explainer` reads them back instead of compiling again (``rfcircuits compile --out
DIR`` writes one too).
:data:`BACKEND` names the decision-graph store in use: ``"c"`` (the compiled extension) or
``"python"``.

Checking, as the commands ``verify`` and ``crosscheck`` do, returns report objects
(docs/api.md#checking)::

    report = rfcircuits.verify(forest, X_test, their_explanations)   # dicts or a file
    report = rfcircuits.crosscheck(forest, X_test)                    # engine vs oracles
    report = rfcircuits.grade_peer("pyxai", model=model, rows=X_test) # another explainer
    report.ok, report.to_json(), print(report)

They load the independent oracles (:mod:`rfcircuits.crosscheck`) only when called; the
library itself never imports them.

Names are imported on first use, so ``import rfcircuits`` stays cheap; scikit-learn and
pandas are never imported by it.
"""

from __future__ import annotations

import importlib

#: ``typing.TYPE_CHECKING`` without importing :mod:`typing` (a third of this import's time);
#: type checkers know the name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from rfcircuits.dgraph import BACKEND
    from rfcircuits.errors import BudgetExceeded, InputError
    from rfcircuits.explain import Explainer, load_explainer
    from rfcircuits.explanation import Explanation
    from rfcircuits.forest import Forest, load_forest

__version__ = "0.2.0"

__all__ = ["BACKEND", "BudgetExceeded", "Explainer", "Explanation", "Forest", "InputError",
           "__version__", "crosscheck", "from_lightgbm", "from_sklearn", "from_xgboost",
           "grade_peer", "load_explainer", "load_forest", "verify"]

#: The module defining each name imported on first use (:func:`__getattr__`).
_LAZY = {
    "BACKEND": "rfcircuits.dgraph",
    "BudgetExceeded": "rfcircuits.errors",
    "Explainer": "rfcircuits.explain",
    "Explanation": "rfcircuits.explanation",
    "Forest": "rfcircuits.forest",
    "InputError": "rfcircuits.errors",
    "load_explainer": "rfcircuits.explain",
    "load_forest": "rfcircuits.forest",
    # Checking (rfcircuits.crosscheck.api): the oracles load only when these are used.
    "verify": "rfcircuits.crosscheck.api",
    "grade_peer": "rfcircuits.crosscheck.peers.grading",
}


def __getattr__(name: str) -> Any:
    """The names of :data:`_LAZY`, imported on first use (PEP 562) and then kept."""
    if name == "crosscheck":  # the package of the oracles, callable as their harness
        return importlib.import_module("rfcircuits.crosscheck")
    if name not in _LAZY:
        raise AttributeError(f"module 'rfcircuits' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def from_sklearn(model: Any, feature_names: Sequence[str] | None = None,
                 class_names: Sequence[Any] | None = None, votes: str = "soft") -> Forest:
    """The forest of a fitted scikit-learn ``RandomForestClassifier``,
    ``ExtraTreesClassifier``, ``DecisionTreeClassifier`` or ``GradientBoostingClassifier``.

    ``votes="soft"`` (the default): the forest decides what the model's ``predict`` decides,
    the largest exact sum of the leaves' class probabilities (a boosted model's scores);
    ``votes="hard"``: the majority vote of the trees, each for its leaf's most probable
    class (the paper's semantics, and what PyXAI and RFxpl explain).

    Feature names are ``feature_names`` when given, else the names of the DataFrame the
    model was fitted on (``model.feature_names_in_``), else ``x0``, ``x1``, ...; class names
    are ``class_names`` when given, else ``model.classes_``, as strings. Each numeric feature
    gets one state per interval between the thresholds the trees use on it.

    Raises :class:`InputError` for another kind of model, an unfitted one, or names that do
    not fit it.
    """
    from rfcircuits.sklearn_import import forest_from_sklearn  # NumPy: only when needed

    return forest_from_sklearn(model, feature_names, class_names, votes=votes)


def from_xgboost(model: Any, feature_names: Sequence[str] | None = None,
                 class_names: Sequence[Any] | None = None) -> Forest:
    """The forest of an XGBoost classifier (a fitted ``XGBClassifier``, a ``Booster``, or
    the parsed JSON document of one): soft votes, deciding what ``predict`` decides, the
    largest exact sum of the leaves' margins and the base score, read as XGBoost's float32.

    Names as :func:`from_sklearn`'s (the booster's feature names when it has them). Raises
    :class:`InputError` for an objective or booster that is not a classifier's trees.
    """
    from rfcircuits.boosted_import import forest_from_xgboost

    return forest_from_xgboost(model, feature_names, class_names)


def from_lightgbm(model: Any, feature_names: Sequence[str] | None = None,
                  class_names: Sequence[Any] | None = None) -> Forest:
    """The forest of a LightGBM classifier (a fitted ``LGBMClassifier``, a ``Booster``, or
    the dictionary its ``dump_model()`` returns): soft votes, deciding what ``predict``
    decides, the largest exact sum of the leaves' scores. Names as :func:`from_sklearn`'s.
    Raises :class:`InputError` for an objective that is not a classifier's.
    """
    from rfcircuits.boosted_import import forest_from_lightgbm

    return forest_from_lightgbm(model, feature_names, class_names)
