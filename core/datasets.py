"""Training forests with scikit-learn on CSV data (SPEC §6 ``rfcircuits train``).

A CSV has a header row; every feature column must be numeric; the target column holds the
class labels (labels that are all integers are ordered numerically, others as strings).
Rows are split 85/15 with a fixed seed; the forest is a ``RandomForestClassifier``.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from rfcircuits.errors import InputError
from rfcircuits.forest import Forest, Instance
from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values

TEST_FRACTION = 0.15


@dataclass
class Dataset:
    """Numeric feature matrix, labels, and names."""

    name: str
    feature_names: list[str]
    X: np.ndarray
    y: np.ndarray
    classes: list[str]


def load_csv(path: str | os.PathLike[str], target: str | None = None) -> Dataset:
    """Read a CSV; ``target`` names the label column (default: the last column)."""
    path = os.fspath(path)
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
    if target is None:
        target = header[-1]
    if target not in header:
        raise InputError(f"{path}: no column named {target!r} (columns: {', '.join(header)})")
    t = header.index(target)
    names = [h for k, h in enumerate(header) if k != t]
    values = np.empty((len(rows) - 1, len(names)), dtype=np.float64)
    labels = []
    for r, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise InputError(f"{path}, line {r}: {len(row)} fields, header has {len(header)}")
        labels.append(row[t].strip())
        for c, (k, cell) in enumerate((k, v) for k, v in enumerate(row) if k != t):
            try:
                value = float(cell)
            except ValueError:
                raise InputError(f"{path}, line {r}, column {header[k]!r}: {cell!r} is not a "
                                 "number (feature columns must be numeric)") from None
            if math.isnan(value):
                raise InputError(f"{path}, line {r}, column {header[k]!r}: missing value (NaN)")
            values[r - 2, c] = value
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
    return Dataset(name, names, values, y, classes)


@dataclass
class Trained:
    """A trained forest with its test split and quality figures."""

    model: Any
    forest: Forest
    test_instances: list[Instance]
    accuracy: float
    vote_agreement: float


def train_forest(data: Dataset, trees: int, depth: int | None, seed: int) -> Trained:
    """``RandomForestClassifier`` on an 85/15 split; accuracy of the hard-majority vote."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import train_test_split

    if trees < 1:
        raise InputError("--trees must be at least 1")
    if depth is not None and depth < 1:
        raise InputError("--depth must be at least 1")
    X_train, X_test, y_train, y_test = train_test_split(
        data.X, data.y, test_size=TEST_FRACTION, random_state=seed)
    model = RandomForestClassifier(n_estimators=trees, max_depth=depth, random_state=seed)
    model.fit(X_train, y_train)
    forest = forest_from_sklearn(model, data.feature_names,
                                 [data.classes[int(c)] for c in model.classes_])
    test = instances_from_values(forest, X_test)
    votes = np.array([model.classes_[forest.decision(x)] for x in test])
    accuracy = float(np.mean(votes == y_test)) if len(test) else float("nan")
    agreement = float(np.mean(votes == model.predict(X_test))) if len(test) else float("nan")
    return Trained(model, forest, test, accuracy, agreement)
