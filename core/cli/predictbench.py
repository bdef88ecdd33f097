"""``rfcircuits bench predict``: the imported forest decides what the model's ``predict`` does.

For each kind of model of ``--models`` (:data:`MODELS`) and each of its datasets (``--datasets``,
or the kind's own list), the library trains the model on the benchmarks' 85/15 split
(:func:`rfcircuits.datasets.split`, seed ``--seed``, ``--trees`` estimators, 100 unless told),
the model is imported with soft votes, and every test row's exact decision (the first class
of largest exact sum, :meth:`rfcircuits.forest.Forest.decision`) is compared with ``predict``'s
class. A row of the table gives the test rows, how many of them the forest decides as
``predict`` does (all, or there is a bug), how many are near ties
(:meth:`rfcircuits.forest.Forest.near_tie`: float64 sums could order the two best classes
otherwise than the exact ones), and, for forests of classification trees, on how many rows
the hard vote (a vote per tree for its leaf's majority class, the paper's semantics) decides
otherwise than ``predict``, with the vote counts and the model's scores of the first
:data:`EXAMPLES` of them. Seconds: ``t_train`` training, ``t_import`` importing (both votes),
``t_decide`` placing all test rows in the forest's states, their exact decisions and near-tie
tests.

A row the forest decides otherwise is reported in full on stderr and in the row's
``disagreements``: its CSV line, the exact sums (decimal, every digit), the library's float
scores, whether it is a near tie. The exit status is 1 when a row that is not a near tie
disagrees.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rfcircuits.atomicio import Records, record_output
from rfcircuits.cli import paper
from rfcircuits.cli.bench import Table, load, selected
from rfcircuits.datasets import Dataset, split
from rfcircuits.forest import Forest
from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values

#: Rows whose hard vote differs from ``predict`` shown per model and dataset.
EXAMPLES = 3
#: Estimators of every model unless ``--trees`` says otherwise.
ESTIMATORS = 100


@dataclass(frozen=True)
class Model:
    """A kind of model of the benchmark; another library's (XGBoost, LightGBM) is one more
    entry of :data:`MODELS`.

    ``fit(X, y, estimators, seed)`` trains it; ``to_forest(model, feature names, class names,
    votes)`` imports it (``votes`` ``"soft"``, and ``"hard"`` when ``hard``);
    ``scores(model, X)`` are the float scores per row and class that its ``predict`` takes
    the first largest of (the forest's sums stand for them); ``datasets`` are the datasets
    it runs on unless ``--datasets`` says (None: all of them)."""

    label: str
    fit: Callable[[np.ndarray, np.ndarray, int, int], Any]
    to_forest: Callable[[Any, Sequence[str], Sequence[str], str], Forest]
    scores: Callable[[Any, np.ndarray], np.ndarray]
    hard: bool
    datasets: tuple[str, ...] | None = None


def _sklearn(estimator: str, **params: Any) -> Callable[[np.ndarray, np.ndarray, int, int], Any]:
    """Training of the scikit-learn ensemble ``estimator`` with ``params``."""
    def fit(X: np.ndarray, y: np.ndarray, estimators: int, seed: int) -> Any:
        import sklearn.ensemble

        cls = getattr(sklearn.ensemble, estimator)
        return cls(n_estimators=estimators, random_state=seed, **params).fit(X, y)
    return fit


def _from_sklearn(model: Any, features: Sequence[str], classes: Sequence[str],
                  votes: str) -> Forest:
    return forest_from_sklearn(model, features, classes, votes=votes)


def _probabilities(model: Any, X: np.ndarray) -> np.ndarray:
    """A forest's ``predict_proba``: the mean of its trees' probabilities (the forest's sums
    are ``n_trees`` times these)."""
    return np.asarray(model.predict_proba(X))


def _raw_scores(model: Any, X: np.ndarray) -> np.ndarray:
    """A boosted model's raw scores; a binary model's one score as class 1's beside 0 for
    class 0, as the forest sums them (``predict``: class 1 iff the score is at least 0)."""
    raw = np.asarray(model.decision_function(X), dtype=np.float64)
    return np.column_stack([np.zeros(len(raw)), raw]) if raw.ndim == 1 else raw


#: The models ``--models`` chooses from, in the order they run on a dataset. Gradient
#: boosting runs on two binary and three multi-class datasets (ecoli's 5 classes, segment's
#: 7, waveform-21's 3).
MODELS: dict[str, Model] = {
    "rf": Model("RandomForestClassifier", _sklearn("RandomForestClassifier", max_depth=4),
                _from_sklearn, _probabilities, hard=True),
    "et": Model("ExtraTreesClassifier", _sklearn("ExtraTreesClassifier", max_depth=4),
                _from_sklearn, _probabilities, hard=True),
    "gb": Model("GradientBoostingClassifier", _sklearn("GradientBoostingClassifier",
                                                       max_depth=3),
                _from_sklearn, _raw_scores, hard=False,
                datasets=("banknote", "magic", "ecoli", "segment", "waveform-21")),
}


def exact_decimal(numerator: int, scale: int) -> str:
    """``numerator / 2**scale`` in decimal with every digit (a dyadic fraction has finitely
    many: ``n / 2**s = n * 5**s / 10**s``)."""
    digits = str(abs(numerator) * 5 ** scale).rjust(scale + 1, "0")
    whole, fraction = digits[:len(digits) - scale], digits[len(digits) - scale:].rstrip("0")
    return ("-" if numerator < 0 else "") + whole + ("." + fraction if fraction else "")


def _by_class(classes: Sequence[str], values: Sequence[Any]) -> dict[str, Any]:
    return dict(zip(classes, values))


def check_model(kind: Model, data: Dataset, parts: Sequence[np.ndarray], estimators: int,
                seed: int) -> dict[str, Any]:
    """The row of one model on one dataset's split (module docstring); ``disagreements``
    only when there are any, ``hard_examples`` only for models with a hard vote. Beyond the
    training, O(rows × trees × (depth + classes)): each row walks every tree to a leaf and
    adds its weights, for the decision and again for the near-tie test (and the hard vote)."""
    X_train, X_test, y_train, _, test_rows = parts
    start = time.perf_counter()
    model = kind.fit(X_train, y_train, estimators, seed)
    trained = time.perf_counter()
    classes = [data.classes[int(c)] for c in model.classes_]
    soft = kind.to_forest(model, data.feature_names, classes, "soft")
    hard = kind.to_forest(model, data.feature_names, classes, "hard") if kind.hard else None
    imported = time.perf_counter()
    rows = instances_from_values(soft, X_test)
    decided = [soft.decision(x) for x in rows]
    near = [soft.near_tie(x) for x in rows]
    decided_at = time.perf_counter()
    index = {c: i for i, c in enumerate(model.classes_.tolist())}
    wanted = [index[p] for p in model.predict(X_test).tolist()]
    disagree = [i for i, (d, w) in enumerate(zip(decided, wanted)) if d != w]
    row: dict[str, Any] = {
        "t": len(soft.trees), "c": len(classes), "rows": len(rows),
        "agree": len(rows) - len(disagree), "near_tie": sum(near), "hard_differ": None,
        "t_train": round(trained - start, 3), "t_import": round(imported - trained, 3),
        "t_decide": round(decided_at - imported, 3)}

    def scores(picked: Sequence[int]) -> list[list[float]]:
        return kind.scores(model, X_test[list(picked)]).tolist() if picked else []

    if hard is not None:
        assert hard.features == soft.features  # the same trees: the rows' states are its own
        differ = [i for i, x in enumerate(rows) if hard.decision(x) != wanted[i]]
        row["hard_differ"] = len(differ)
        shown = differ[:EXAMPLES]
        row["hard_examples"] = [
            {"line": int(test_rows[i]) + 2, "predict": classes[wanted[i]],
             "hard": classes[hard.decision(rows[i])],
             "votes": _by_class(classes, hard.votes(rows[i])),
             "scores": _by_class(classes, s)} for i, s in zip(shown, scores(shown))]
    if disagree:
        row["disagreements"] = [
            {"line": int(test_rows[i]) + 2, "predict": classes[wanted[i]],
             "decision": classes[decided[i]], "near_tie": near[i],
             "exact_sums": _by_class(classes, [exact_decimal(v, soft.scale)
                                               for v in soft.votes(rows[i])]),
             "scores": _by_class(classes, s)} for i, s in zip(disagree, scores(disagree))]
    return row


def _plan(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """The datasets to run, each with the models to run on it, in the tables' order."""
    kinds = selected(MODELS, args.models, "--models")
    chosen = selected(paper.TABLE1, args.datasets)
    plan = []
    for name in chosen:
        on = [k for k in kinds if args.datasets or MODELS[k].datasets is None
              or name in MODELS[k].datasets]
        if on:
            plan.append((name, on))
    return plan


def _report(name: str, kind: str, found: dict[str, Any]) -> None:
    """A row the forest decides otherwise than ``predict``, on stderr, every digit given (a
    float's ``str`` is its shortest exact ``repr``)."""
    def listed(values: dict[str, Any]) -> str:
        return ", ".join(f"{c}: {v}" for c, v in values.items())

    near = " (a near tie)" if found["near_tie"] else ""
    print(f"[bench] {kind} on {name}, line {found['line']}: the forest decides "
          f"{found['decision']}, predict {found['predict']}{near}; exact sums "
          f"{listed(found['exact_sums'])}; the library's scores {listed(found['scores'])}",
          file=sys.stderr, flush=True)


def _example_cells(name: str, kind: str, example: dict[str, Any]) -> dict[str, Any]:
    return {"dataset": name, "model": kind, "line": example["line"],
            "predict": example["predict"], "hard": example["hard"],
            "votes": " ".join(f"{c}:{v}" for c, v in example["votes"].items()),
            "scores": " ".join(f"{c}:{v:.4f}" for c, v in example["scores"].items())}


@contextlib.contextmanager
def _records(path: str | None) -> Iterator[Records | None]:
    """``--out FILE``'s record output, or None without it."""
    if path is None:
        yield None
        return
    with record_output(path, what="rows") as records:
        yield records


def bench_predict(args: argparse.Namespace) -> int:
    """One row per dataset and model, then (text) the rows whose hard vote differs from
    ``predict``; exit 1 when a row that is no near tie disagrees."""
    estimators = args.trees[0] if args.trees else ESTIMATORS
    plan = _plan(args)
    examples = []
    failed = 0
    with _records(args.out) as records:  # a bad --out path is refused before any output
        table = Table([("dataset", "dataset", 13), ("model", "model", 5), ("t", "#T", 4),
                       ("c", "#C", 3), ("rows", "rows", 5), ("agree", "= predict", 9),
                       ("near_tie", "near tie", 8), ("hard_differ", "hard ≠", 6),
                       ("t_train", "T train", 8), ("t_import", "T import", 8),
                       ("t_decide", "T decide", 8)], args.json)
        for name, kinds in plan:
            data = load(args.data_dir, name)
            parts = split(data, args.seed)
            for kind in kinds:
                if not args.no_progress:
                    print(f"[bench] {name}: training {MODELS[kind].label} ({estimators})",
                          file=sys.stderr, flush=True)
                row = {"dataset": name, "model": kind,
                       **check_model(MODELS[kind], data, parts, estimators, args.seed)}
                for found in row.get("disagreements", ()):
                    _report(name, kind, found)
                    failed += not found["near_tie"]
                examples += [_example_cells(name, kind, e) for e in row.get("hard_examples", ())]
                table.row(row)
                if records is not None:
                    records.write(json.dumps(row) + "\n")  # as --json prints it
    if examples and not args.json:
        print(f"\nrows whose hard vote differs from predict (the first {EXAMPLES} of each):")
        shown = Table([("dataset", "dataset", 13), ("model", "model", 5), ("line", "line", 6),
                       ("predict", "predict", 8), ("hard", "hard", 8), ("votes", "votes", 20),
                       ("scores", "scores", 30)], False)
        for cells in examples:
            shown.row(cells)
    return 1 if failed else 0
