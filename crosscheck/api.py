"""Checking from Python: :func:`verify` and :func:`crosscheck`, what the commands ``rfcircuits
verify`` and ``rfcircuits crosscheck`` do, for a notebook or another project's tests
(docs/api.md#checking).

Each takes the forest as a :class:`~rfcircuits.forest.Forest` or a forest file, and the
instances as :meth:`rfcircuits.Explainer.explain_many` takes them (a DataFrame, a 2-D array, a
sequence of rows or mappings) or as a file (JSON Lines or CSV, as ``--instances`` reads them);
each returns a report object whose ``to_json()`` is the command's JSON report, whose ``text()``
(and ``str()``) is what the command prints, and whose ``ok`` is true exactly when the command
exits 0. Bad input raises :class:`~rfcircuits.errors.InputError`, as the commands' exit 2.

They are exported as ``rfcircuits.verify`` and ``rfcircuits.crosscheck`` (the package
``rfcircuits.crosscheck`` is callable: :mod:`rfcircuits.crosscheck`); ``rfcircuits.grade_peer``
grades another explainer (:func:`rfcircuits.crosscheck.peers.grading.grade_peer`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from rfcircuits.explanation import Explanation, What, what_keys
from rfcircuits.forest import Forest, Instance, as_forest, check_ties
from rfcircuits.inputs import Table, instances_of, read_instances
from rfcircuits.crosscheck.differential.harness import ORACLES, Report
from rfcircuits.crosscheck.differential.harness import crosscheck as run_crosscheck
from rfcircuits.crosscheck.verify import GNR_LIMIT, VerifyReport, read_lines
from rfcircuits.crosscheck.verify import verify as run_verify

__all__ = ["crosscheck", "verify"]

#: A file name, as the commands take it.
Path = str | os.PathLike[str]


def verify(forest: Forest | Path, instances: Table | Path,
           explanations: Iterable[dict[str, Any] | Explanation] | Path, *,
           ties: str = "first", gnr_limit: int = GNR_LIMIT, oracle_only: Iterable[str] = (),
           max_nodes: int | None = None) -> VerifyReport:
    """Grade another tool's explanations item by item (``rfcircuits verify``,
    docs/formats.md#verify-input): each record is a JSON object (a dict) or an
    :class:`~rfcircuits.explanation.Explanation`, or they are the lines of a JSON Lines
    file. Records with an ``instance`` are matched to the instances by it, otherwise the k-th
    record answers the k-th instance. ``oracle_only``: fields graded by the SAT oracle alone
    (``sr``, ``nr``, … or their JSON names); ``max_nodes`` bounds the native engine's
    decision graphs; ``gnr_limit``: the largest GNR search.

    Returns the report: ``ok``, ``to_json()`` (what ``verify --json`` prints), ``text()``."""
    forest = as_forest(forest)
    rows = _instances(forest, instances)
    if isinstance(explanations, (str, os.PathLike)):
        source, lines = os.fspath(explanations), read_lines(explanations)
    else:
        source = "explanations"
        lines = [(k, e.to_json() if isinstance(e, Explanation) else e)
                 for k, e in enumerate(explanations, start=1)]
    return run_verify(forest, rows, lines, ties, source, gnr_limit, oracle_only, max_nodes)


def crosscheck(forest: Forest | Path, instances: Table | Path, *, ties: str = "first",
               oracles: Sequence[str] = ORACLES, what: What = "all", engine: str = "auto",
               formulas: bool = True, max_nodes: int | None = None,
               limits: dict[str, Any] | None = None) -> Report:
    """Compare the native engine with the independent ``oracles`` (``brute``, ``bdd``,
    ``sat``) on the class formulas (unless ``formulas`` is false) and on every field of
    ``what`` for each instance (``rfcircuits crosscheck``). ``engine``: ``auto`` (as
    :class:`rfcircuits.Explainer` chooses), ``graphs`` or ``sat`` (with its per-instance
    ``limits``: ``limit_seconds``, ``limit_items``); an oracle skips a forest too large for it,
    and the report says why.

    Returns the report: ``ok`` (no disagreement), ``to_json()``, ``text()`` (the check ×
    engine table), ``disagreements`` (each with a counterexample)."""
    check_ties(ties)
    forest = as_forest(forest)
    return run_crosscheck(forest, _instances(forest, instances), ties, tuple(oracles),
                          what_keys(what), formulas, max_nodes=max_nodes, engine=engine,
                          limits=limits)


def _instances(forest: Forest, instances: Table | Path) -> list[Instance]:
    if isinstance(instances, (str, os.PathLike)):
        return read_instances(instances, forest)
    return instances_of(forest, instances)
