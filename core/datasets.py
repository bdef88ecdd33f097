"""Training forests with scikit-learn on CSV data (``rfcircuits train``), and scoring
a forest against its model on rows of a CSV (``train``'s test rows, ``rfcircuits import
--data``).

A CSV has a header row; every feature column must be numeric; the target column holds the
class labels (labels that are all integers are ordered numerically, others as strings).
Rows are split 85/15 with a fixed seed; the forest is a ``RandomForestClassifier``.
"""

from __future__ import annotations

import contextlib
import csv
import math
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rfcircuits.errors import InputError
from rfcircuits.forest import Forest, Instance, read_value
from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values

TEST_FRACTION = 0.15
FLOAT32_MAX = float(np.finfo(np.float32).max)


@dataclass
class Dataset:
    """Numeric feature matrix, labels, and names."""

    name: str
    feature_names: list[str]
    X: np.ndarray
    y: np.ndarray
    classes: list[str]
    path: str | None = None  # the CSV file, whose line i + 2 is row i


def read_table(path: str) -> tuple[list[str], list[list[str]]]:
    """The header (names stripped, distinct) and data rows of a CSV file, every row with as
    many fields as the header."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    if len(rows) < 2:
        raise InputError(f"{path}: expected a header row and data rows")
    header = [h.strip() for h in rows[0]]
    if len(set(header)) != len(header):
        raise InputError(f"{path}: duplicate column names in the header")
    for r, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise InputError(f"{path}, line {r}: {len(row)} fields, header has {len(header)}")
    return header, rows[1:]


def _numbers(path: str, header: list[str], rows: list[list[str]],
             columns: Sequence[int]) -> np.ndarray:
    """The cells of ``columns`` as a float64 matrix (one row per data row); errors name the
    line and column of a cell that is no number or is NaN."""
    values = np.empty((len(rows), len(columns)), dtype=np.float64)
    for r, row in enumerate(rows):
        for c, k in enumerate(columns):
            try:
                value = float(row[k])
            except ValueError:
                raise InputError(f"{path}, line {r + 2}, column {header[k]!r}: {row[k]!r} is "
                                 "not a number (feature columns must be numeric)") from None
            if math.isnan(value):
                raise InputError(f"{path}, line {r + 2}, column {header[k]!r}: missing value "
                                 "(NaN)")
            values[r, c] = value
    return values


def load_csv(path: str | os.PathLike[str], target: str | None = None) -> Dataset:
    """Read a CSV; ``target`` names the label column (default: the last column)."""
    path = os.fspath(path)
    header, rows = read_table(path)
    if target is None:
        target = header[-1]
    if target not in header:
        raise InputError(f"{path}: no column named {target!r} (columns: {', '.join(header)})")
    t = header.index(target)
    names = [h for k, h in enumerate(header) if k != t]
    values = _numbers(path, header, rows, [k for k in range(len(header)) if k != t])
    labels = [row[t].strip() for row in rows]
    try:
        ordered = sorted(set(labels), key=int)
        classes = [str(int(v)) for v in ordered]
        y = np.array([classes.index(str(int(v))) for v in labels])
    except ValueError:
        classes = sorted(set(labels))
        y = np.array([classes.index(v) for v in labels])
    if len(classes) < 2:
        raise InputError(f"{path}: the target column {target!r} has a single class")
    name = os.path.splitext(os.path.basename(path))[0]
    return Dataset(name, names, values, y, classes, path)


@dataclass
class Rows:
    """Rows of a CSV to run a model on: feature values in the model's order, the label column
    if the file has one, and ``where(i, j)`` naming the cell of row ``i``, feature ``j``."""

    X: np.ndarray
    labels: list[str] | None
    where: Callable[[int, int], str]


def load_rows(path: str | os.PathLike[str], feature_names: Sequence[str] | None,
              n_features: int, target: str | None = None) -> Rows:
    """The rows of a CSV for a model with ``n_features`` features.

    With ``feature_names`` (a model fitted on named columns) columns are matched by name, as
    scikit-learn does; the label column is ``target``, or else the one column left over (none
    left: no labels), and a column that is neither is an error. Without names, columns are
    matched by position: every column but ``target``, or, without ``target``, all columns
    (no labels) or all but the last (the labels, as ``rfcircuits train`` reads a CSV)."""
    path = os.fspath(path)
    header, rows = read_table(path)
    if target is not None and target not in header:
        raise InputError(f"{path}: no column named {target!r} (columns: {', '.join(header)})")
    if feature_names is not None:
        if target in feature_names:
            raise InputError(f"{path}: --target {target!r} is a feature of the model")
        missing = [n for n in feature_names if n not in header]
        if missing:
            raise InputError(f"{path}: no column for the model's feature(s) "
                             f"{', '.join(map(repr, missing))}")
        columns = [header.index(n) for n in feature_names]
        rest = [h for h in header if h not in feature_names and h != target]
        if rest and (target is not None or len(rest) > 1):
            raise InputError(f"{path}: column(s) {', '.join(map(repr, rest))} are not features "
                             "of the model" + ("" if target else " (give --target for the "
                                                                  "label column)"))
        label = header.index(target) if target else header.index(rest[0]) if rest else None
    else:
        label = header.index(target) if target else \
            len(header) - 1 if len(header) == n_features + 1 else None
        columns = [k for k in range(len(header)) if k != label]
        if len(columns) != n_features:
            raise InputError(f"{path}: {len(columns)} feature columns for a model of "
                             f"{n_features} features (fitted without feature names, so columns "
                             "are matched by position" + (", the label column aside)" if
                                                          label is not None else ")"))
    X = _numbers(path, header, rows, columns)
    labels = None if label is None else [row[label].strip() for row in rows]
    return Rows(X, labels, lambda i, j: f"{path}, line {i + 2}, column {header[columns[j]]!r}")


def as_class_names(labels: Sequence[str], classes: Sequence[str], where: str) -> list[str]:
    """Labels read from text, each as the class name it stands for: equal as text or, both
    being numbers, as numbers (``1`` and ``1.0``); others are kept (they match no class). No
    label matching any class is an error, most likely the wrong column."""
    numbers = {}
    for c in classes:
        with contextlib.suppress(ValueError):
            numbers.setdefault(float(c), c)
    out = []
    for label in labels:
        if label not in classes:
            with contextlib.suppress(ValueError):
                label = numbers.get(float(label), label)
        out.append(label)
    if out and not set(out) & set(classes):
        raise InputError(f"{where}: no label is a class of the model "
                         f"({', '.join(classes)}); is it the label column?")
    return out


@dataclass
class Scored:
    """Rows placed in a forest's states, and how its vote fares on them."""

    instances: list[Instance]
    accuracy: float | None  # against the labels; None without labels; NaN without rows
    vote_agreement: float  # with the model's predict; NaN without rows
    near_ties: int = 0  # soft votes: rows the library's float rounding could decide


def score(model: Any, forest: Forest, X: np.ndarray, labels: Sequence[str] | None = None,
          where: Callable[[int, int], str] | None = None) -> Scored:
    """The states of rows ``X``, the fraction of rows whose vote (hard or soft, as the forest
    says) is their label (a class name), the fraction where it is the model's ``predict``,
    and the number of near ties (:meth:`rfcircuits.forest.Forest.near_tie`)."""
    instances = instances_from_values(forest, X, where)
    if not instances:
        return Scored(instances, None if labels is None else math.nan, math.nan)
    votes = [forest.classes[forest.decision(x)] for x in instances]
    name = dict(zip(model.classes_.tolist(), forest.classes))
    with warnings.catch_warnings():  # a model fitted on named columns, given a plain array
        warnings.filterwarnings("ignore", "X does not have valid feature names")
        predicted = [name[p] for p in model.predict(X).tolist()]
    agreement = float(np.mean([v == p for v, p in zip(votes, predicted)]))
    near = sum(forest.near_tie(x) for x in instances)
    accuracy = None if labels is None else float(np.mean([v == y for v, y in zip(votes, labels)]))
    return Scored(instances, accuracy, agreement, near)


@dataclass
class Trained:
    """A trained forest with its test split and quality figures, and the rows it was trained
    on (``y_train``: indices into the dataset's classes)."""

    model: Any
    forest: Forest
    test_instances: list[Instance]
    accuracy: float
    vote_agreement: float
    X_train: Any = None
    y_train: Any = None


#: The models :func:`train_forests` fits, by name.
TRAINERS = {"rf": "RandomForestClassifier", "gb": "GradientBoostingClassifier"}


def train_forest(data: Dataset, trees: int, depth: int | None, seed: int,
                 votes: str = "hard", model: str = "rf") -> Trained:
    """:func:`train_forests` with one vote."""
    return train_forests(data, trees, depth, seed, (votes,), model)[0]


def train_forests(data: Dataset, trees: int, depth: int | None, seed: int,
                  votes: Sequence[str], model: str = "rf") -> list[Trained]:
    """One ``RandomForestClassifier`` (``model="rf"``) or ``GradientBoostingClassifier``
    (``"gb"``, ``trees`` stages; soft votes only) trained on an 85/15 split, imported once per
    entry of ``votes`` (``"hard"`` or ``"soft"``), each forest with the accuracy of its own
    vote (the hard majority, or the exact soft sums) on the test rows. The forests differ
    only in their leaves, so their test rows' states are the same. Time: one training, plus
    per import O(nodes × depth) and the test rows."""
    from sklearn import ensemble

    if trees < 1:
        raise InputError("--trees must be at least 1")
    if depth is not None and depth < 1:
        raise InputError("--depth must be at least 1")
    X_train, X_test, y_train, y_test, _ = split(data, seed)
    fitted = getattr(ensemble, TRAINERS[model])(n_estimators=trees, max_depth=depth,
                                                random_state=seed)
    fitted.fit(X_train, y_train)
    classes = [data.classes[int(c)] for c in fitted.classes_]
    labels = [data.classes[int(v)] for v in y_test]
    out = []
    for vote in votes:
        forest = forest_from_sklearn(fitted, data.feature_names, classes, votes=vote)
        scored = score(fitted, forest, X_test, labels)
        out.append(Trained(fitted, forest, scored.instances, scored.accuracy,
                           scored.vote_agreement, X_train, y_train))
    return out


def split(data: Dataset, seed: int) -> tuple[np.ndarray, ...]:
    """The 85/15 split every benchmark trains and tests on (rows shuffled by ``seed``):
    ``X_train, X_test, y_train, y_test`` and the test rows' indices in ``data`` (row ``i`` is
    line ``i + 2`` of its CSV). A value float32 cannot hold is an error naming its cell."""
    from sklearn.model_selection import train_test_split

    _check_float32(data)
    # The indices ride along: the shuffle depends only on the number of rows and the seed.
    X_train, X_test, y_train, y_test, _, test_rows = train_test_split(
        data.X, data.y, np.arange(len(data.y)), test_size=TEST_FRACTION, random_state=seed)
    return X_train, X_test, y_train, y_test, test_rows


def _check_float32(data: Dataset) -> None:
    """scikit-learn trains on float32 and rejects a value float32 cannot hold; say which."""
    for i, j in np.argwhere(np.isinf(data.X) | (np.abs(data.X) > FLOAT32_MAX)):
        try:
            read_value(float(data.X[i, j]), "float32")
        except ValueError as exc:
            row = f"{data.path}, line {i + 2}" if data.path else f"{data.name}: row {i + 1}"
            raise InputError(f"{row}, column {data.feature_names[j]!r}: {exc}") from None
