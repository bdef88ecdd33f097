"""Instances from the values a user holds: a mapping, a pandas row or table, an array.

The names are checked as scikit-learn checks them, so that a forest imported from a model
explains the very rows the model predicts, never a silently different one: a mapping or a
pandas row names every feature once (no missing, repeated or unknown name, in any order); a
table's columns are exactly the forest's features, in its order; an unnamed row lists one
value per feature, in that order. A value is a number (numeric features) or a state name;
:func:`rfcircuits.forest.parse_instance`, which also reads the command line's instance files,
places it in its state. NumPy scalars become Python values first; a bool, NaN or any other
kind of value is an error.

pandas is recognised by its attributes (a table has ``columns``, a row ``keys`` and
``items``), never imported: the library does not depend on it.

Files of instances (:func:`read_instances`, the command line's ``--instances``) are JSON
Lines or CSV: a CSV's header names the features, in any order, and a label column may be named
(``target``) to be left out; any other column is an error, so that a misspelt feature is never
silently dropped.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rfcircuits.datasets import read_table
from rfcircuits.errors import InputError
from rfcircuits.forest import Forest, Instance, parse_instance
from rfcircuits.jsonio import load_json_lines

__all__ = ["Row", "Table", "Value", "instance_of", "instances_of", "read_instance_values",
           "read_instances"]
#: File suffixes read as JSON Lines; ``.csv`` is CSV; any other file is read by its first
#: character (an instance line starts with ``{``).
JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")

#: A feature's value: a number (numeric features) or a state name.
Value = float | str
#: One instance: ``{feature name: value}``, a pandas Series, or a NumPy row or list of values.
Row = Mapping[str, Value] | Sequence[Value] | Any
#: Many instances: a pandas DataFrame, a 2-D NumPy array, or a sequence of rows.
Table = Sequence[Row] | Any


def instance_of(forest: Forest, x: Any, where: str = "instance") -> Instance:
    """The state indices of one instance: a mapping ``{feature name: value}``, a pandas
    Series indexed by feature names, or a 1-D sequence or array of values in feature order.

    Raises :class:`InputError` naming ``where``, the features and the values at fault."""
    if hasattr(x, "columns"):
        raise InputError(f"{where}: expected one instance, not a table (explain_many takes "
                         "tables)")
    if _is_named(x):
        return _from_named(forest, list(x.items()), where)
    if isinstance(x, (str, bytes)) or not isinstance(x, Iterable):
        raise InputError(f"{where}: expected a mapping of feature names to values, a pandas "
                         f"Series or a sequence of values, not {type(x).__name__}")
    ndim = getattr(x, "ndim", 1)
    if ndim != 1:
        raise InputError(f"{where}: expected one row of values, not a {ndim}-D array"
                         + ("; explain_many takes a table" if ndim == 2 else ""))
    return _from_row(forest, x.tolist() if hasattr(x, "tolist") else list(x), where)


def instances_of(forest: Forest, X: Any) -> list[Instance]:
    """The state indices of every row of a table: a pandas DataFrame whose columns are the
    forest's features in order, a 2-D array, or a sequence of instances (each as
    :func:`instance_of` takes it). Every row is checked before any is returned."""
    if hasattr(X, "columns"):
        columns = list(X.columns)
        problem = names_problem(columns, forest)
        if problem is None and columns != [f.name for f in forest.features]:
            problem = ("columns in a different order than the forest's features: "
                       f"{_listed(columns)}")
        if problem is not None:
            raise InputError(f"DataFrame: {problem} (the forest's features, in order: "
                             f"{_listed(f.name for f in forest.features)})")
        rows: Iterable[Any] = X.itertuples(index=False, name=None)
    elif _is_named(X):
        raise InputError("expected a table of instances, not one instance (explain takes "
                         "one)")
    elif isinstance(X, (str, bytes)) or not isinstance(X, Iterable):
        raise InputError("expected a table of instances (a DataFrame, a 2-D array or a "
                         f"sequence of instances), not {type(X).__name__}")
    elif (ndim := getattr(X, "ndim", 2)) != 2:
        raise InputError(f"expected a table of instances (2-D), not a {ndim}-D array"
                         + ("; explain takes one instance" if ndim == 1 else ""))
    else:
        rows = X.tolist() if hasattr(X, "tolist") else X
    return [instance_of(forest, row, f"row {i}") for i, row in enumerate(rows)]


def read_instances(path: str | os.PathLike[str], forest: Forest,
                   target: str | None = None) -> list[Instance]:
    """The instances of a file, at least one: JSON Lines (docs/formats.md#instances) or CSV
    (module docstring; ``target`` names a column to leave out, CSV only). Errors name the
    file, the line and the column."""
    return [parse_instance(forest, values, where)
            for where, values in read_instance_values(path, forest, target)]


def read_instance_values(path: str | os.PathLike[str], forest: Forest,
                         target: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The instances of a file as :func:`read_instances` reads them, before they are placed
    in states: per instance where it is (``file, line n``) and its values, ``{feature name:
    number or state name}`` (a JSON line's values unchecked, which
    :func:`~rfcircuits.forest.parse_instance` checks)."""
    path = os.fspath(path)
    if not _is_csv(path):
        if target is not None:
            raise InputError(f"{path}: --target names a column of a CSV file, and this file "
                             "is read as JSON Lines (a CSV file's name ends in .csv)")
        lines = load_json_lines(path)
        if not lines:
            raise InputError(f"{path}: holds no instances")
        return [(f"{path}, line {line.number}", line.value) for line in lines]
    header, rows = read_table(path)
    if target is not None and target not in header:
        raise InputError(f"{path}: no column named {target!r} to leave out (columns: "
                         f"{_listed(header)})")
    named = [h for h in header if h != target]
    problem = names_problem(named, forest)
    if problem is not None:
        hint = "" if target is not None or not set(named) - set(forest.feature_index) else \
            "; a label column is left out with --target COLUMN"
        raise InputError(f"{path}, line 1: the header does not name the forest's features: "
                         f"{problem}{hint}")
    columns = [header.index(f.name) for f in forest.features]
    out = []
    for n, row in enumerate(rows, start=2):
        where = f"{path}, line {n}"
        out.append((where, {f.name: _cell(f.is_numeric, row[k], f.name, where)
                            for f, k in zip(forest.features, columns)}))
    return out


def _is_csv(path: str) -> bool:
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".csv" or suffix in JSON_SUFFIXES:
        return suffix == ".csv"
    try:
        with open(path, "rb") as handle:
            start = handle.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return False  # the JSON Lines reader names the problem
    return bool(start) and not start.startswith(b"{")


def _cell(numeric: bool, text: str, name: str, where: str) -> str | float:
    """A CSV cell as an instance value: a number for a numeric feature when it reads as one,
    else the text (a state name)."""
    text = text.strip()
    if not text:
        raise InputError(f"{where}, column {name!r}: missing value")
    if numeric:
        try:
            return float(text)
        except ValueError:
            pass
    return text


def names_problem(names: Sequence[Any], forest: Forest) -> str | None:
    """What is wrong with a list of feature names for ``forest`` (names repeated, unknown or
    missing), or None when each of its features is named once."""
    known = forest.feature_index
    given = set(names)
    repeated = [n for n, k in Counter(names).items() if k > 1]
    unknown = [n for n in dict.fromkeys(names) if n not in known]
    missing = [f.name for f in forest.features if f.name not in given]
    problems = [f"{kind} {_listed(found)}" for kind, found in (
        ("repeated", repeated), ("unknown", unknown), ("missing", missing)) if found]
    return "; ".join(problems) if problems else None


def _is_named(x: Any) -> bool:
    """A mapping, or a pandas Series (its index names the values)."""
    return isinstance(x, Mapping) or hasattr(x, "keys") and hasattr(x, "items")


def _from_named(forest: Forest, pairs: list[tuple[Any, Any]], where: str) -> Instance:
    problem = names_problem([name for name, _ in pairs], forest)
    if problem is not None:
        raise InputError(f"{where}: feature names do not match the forest's: {problem} "
                         f"(its features: {_listed(f.name for f in forest.features)})")
    return parse_instance(forest, {name: _value(v, name, where) for name, v in pairs}, where)


def _from_row(forest: Forest, values: list[Any], where: str) -> Instance:
    names = [f.name for f in forest.features]
    if len(values) != len(names):
        raise InputError(f"{where}: {len(values)} values for the forest's {len(names)} "
                         f"features ({_listed(names)})")
    return parse_instance(forest, {name: _value(v, name, where)
                                   for name, v in zip(names, values)}, where)


def _value(value: Any, name: str, where: str) -> str | int | float:
    """A Python number or string for ``value`` (NumPy scalars converted); bools and values of
    other kinds are refused here, NaN and unknown state names by ``parse_instance``."""
    if not isinstance(value, (str, int, float)) and hasattr(value, "item"):
        value = value.item()  # a NumPy scalar: float32 and int64 become float and int
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise InputError(f"{where}, feature {name!r}: expected a number or a state name, "
                         f"not {value!r} ({type(value).__name__})")
    return value


def _listed(names: Iterable[Any]) -> str:
    return ", ".join(repr(n) for n in names)
