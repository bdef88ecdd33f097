"""``rfcircuits verify-peer``: run other explainers on a scikit-learn forest and grade their
answers against what each promises.

The forest is a scikit-learn ``RandomForestClassifier`` trained on a dataset bundled with
scikit-learn (:func:`rfcircuits.datasets.train_forest`, the seed's 85/15 split) and imported
into our model; the rows explained are K rows of the whole dataset (:func:`pick_rows`: drawn at
random with the seed, or those closest to a vote tie). Each adapter named with ``--adapter``
(:mod:`rfcircuits.crosscheck.adapters.base`: built-in names or ``module:Class``) gets the same
:class:`~rfcircuits.crosscheck.adapters.base.Task`; its answers are graded as they arrive
(:class:`rfcircuits.crosscheck.promises.PromiseGrader`), with progress on stderr. ``--out DIR``
keeps, per adapter, the report (``<name>.report.json``), the peer's answers as it gave them
(``<name>.answers.jsonl``: row, status, record, seconds, error) and a repro file per row with a
broken promise. Exit 1 when some promise is broken, something promised complete is missing or
our engine and the oracle disagree; a peer's crashes and timeouts are listed and counted.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from rfcircuits.atomicio import atomic_open, output_dir, write_json
from rfcircuits.datasets import Dataset, train_forest
from rfcircuits.errors import InputError
from rfcircuits.forest import Forest, Instance
from rfcircuits.progress import Progress
from rfcircuits.sklearn_import import instances_from_values
from rfcircuits.crosscheck.adapters.base import Answer, Task, load_adapter, protocol_error
from rfcircuits.crosscheck.promises import PeerReport, PromiseGrader
from rfcircuits.crosscheck.strategies import pick_by_margin

DATASETS = ("iris", "wine", "breast-cancer")
#: How the rows to explain are chosen (:func:`pick_rows`).
PICKS = ("random", "margin")


def load_dataset(name: str) -> Dataset:
    """A dataset bundled with scikit-learn, as :class:`rfcircuits.datasets.Dataset`."""
    from sklearn import datasets

    loaders = {"iris": datasets.load_iris, "wine": datasets.load_wine,
               "breast-cancer": datasets.load_breast_cancer}
    if name not in loaders:
        raise InputError(f"--dataset: unknown dataset {name!r} (choose from {', '.join(DATASETS)})")
    bunch = loaders[name]()
    return Dataset(name, [str(n) for n in bunch.feature_names], np.asarray(bunch.data, float),
                   np.asarray(bunch.target), [str(c) for c in bunch.target_names])


def pick_rows(forest: Forest, X: np.ndarray, k: int, pick: str, seed: int) -> np.ndarray:
    """Indices of the ``k`` rows of ``X`` to explain, in dataset order. ``random``: ``k``
    distinct rows drawn with ``seed``. ``margin``: the rows whose instances (``forest``'s
    states of the row) are closest to a vote tie (:func:`~rfcircuits.crosscheck.strategies.
    pick_by_margin`, exact ties first), one row per instance (the first in the dataset): rows
    in the same states would be graded alike, so they would only take the place of others."""
    if pick == "random":
        rng = np.random.default_rng(seed)
        return np.sort(rng.choice(len(X), size=min(k, len(X)), replace=False))
    if pick != "margin":
        raise InputError(f"--pick must be one of {', '.join(PICKS)}, not {pick!r}")
    first: dict[Instance, int] = {}
    for i, x in enumerate(instances_from_values(forest, X)):
        first.setdefault(x, i)
    unique = list(first)
    return np.sort(np.array([first[unique[j]] for j in pick_by_margin(forest, unique, k)],
                            dtype=np.intp))


def make_task(dataset: str, trees: int, depth: int, seed: int, k: int, pick: str,
              timeout: float) -> Task:
    """The task ``verify-peer`` gives every adapter (module docstring)."""
    data = load_dataset(dataset)
    trained = train_forest(data, trees, depth, seed)
    rows = data.X[pick_rows(trained.forest, data.X, k, pick, seed)]
    return Task(trained.forest, trained.model, trained.X_train, trained.y_train, rows,
                instances_from_values(trained.forest, rows), seed, timeout,
                list(data.feature_names))


def adapter_options(pairs: Sequence[str]) -> dict[str, Any]:
    """``--adapter-option KEY=VALUE`` pairs; a value is read as JSON when it parses
    (``true``, ``3``, ``"a"``), else kept as text (a path, a command)."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.isidentifier():
            raise InputError(f"--adapter-option: expected KEY=VALUE, not {pair!r}")
        try:
            options[key] = json.loads(value)
        except ValueError:
            options[key] = value
    return options


def run_peer(adapter: Any, task: Task, progress: Progress | None = None,
             answers_out: list[Answer] | None = None) -> PeerReport:
    """The adapter's answers on ``task``, graded as they arrive; each answer is appended to
    ``answers_out`` when given. A KeyboardInterrupt stops the peer and keeps what is graded."""
    with PromiseGrader(task.forest, adapter.name, adapter.version(), adapter.ties,
                       adapter.promises) as grader:
        if progress is not None:
            progress.stage(f"{adapter.name}: rows explained and graded", len(task.rows))
        seen: set[int] = set()
        answers = adapter.explain(task)
        try:
            for answer in answers:
                problem = protocol_error(answer, len(task.rows), seen)
                if problem:
                    grader.report.failures.append({"row": None, "status": "error",
                                                   "error": problem})
                    continue
                seen.add(answer.index)
                grader.grade(answer, task.instances[answer.index])
                if answers_out is not None:
                    answers_out.append(answer)
                if progress is not None:
                    progress(len(seen), len(task.rows))
        finally:
            close = getattr(answers, "close", None)
            if close is not None:
                close()  # a generator's cleanup (a worker to stop) runs now, not at exit
        return grader.report


def write_outputs(out: str, name: str, report: PeerReport, task: Task,
                  answers: Sequence[Answer]) -> None:
    """``--out DIR``'s files for one adapter (module docstring)."""
    stem = os.path.join(out, name.replace("/", "_").replace(":", "_"))
    write_json(f"{stem}.report.json", report.to_json())
    with atomic_open(f"{stem}.answers.jsonl") as handle:
        for a in sorted(answers, key=lambda a: a.index):
            handle.write(json.dumps({"row": a.index + 1, "status": a.status, "record": a.record,
                                     "seconds": round(a.seconds, 4), "error": a.error},
                                    ensure_ascii=False) + "\n")
    if report.broken:
        from rfcircuits.crosscheck.peer_repro import peer_repro

        write_json(f"{stem}.repro.json", peer_repro(report, task.forest, task.instances, answers))


def run_verify_peer(args: argparse.Namespace) -> int:
    """``rfcircuits verify-peer`` (module docstring)."""
    for name in ("trees", "depth", "instances"):
        if getattr(args, name) < 1:
            raise InputError(f"--{name} must be at least 1")
    names = [n.strip() for spec in args.adapter for n in spec.split(",") if n.strip()]
    options = adapter_options(args.adapter_option or ())
    adapters = [load_adapter(n, **options) for n in names]
    versions = [a.version() for a in adapters]  # unavailable peers stop the run before training
    if args.out:
        output_dir(args.out)
    task = make_task(args.dataset, args.trees, args.depth, args.seed, args.instances,
                     args.pick, args.timeout)
    reports: dict[str, PeerReport] = {}
    interrupted = False
    with Progress("training", enabled=not args.no_progress) as progress:
        for name, adapter in zip(names, adapters):
            answers: list[Answer] = []
            try:
                reports[name] = run_peer(adapter, task, progress, answers)
            except KeyboardInterrupt:
                interrupted = True
                break
            finally:
                if args.out and name in reports:
                    write_outputs(args.out, name, reports[name], task, answers)
    head = {"dataset": args.dataset, "trees": args.trees, "depth": args.depth, "seed": args.seed,
            "pick": args.pick, "rows": len(task.rows), "timeout": args.timeout}
    if args.json:
        print(json.dumps({**head, "peers": {n: r.to_json() for n, r in reports.items()}},
                         ensure_ascii=False))
    else:
        print(f"verify-peer: {args.dataset}, {args.trees} trees, depth {args.depth}, seed "
              f"{args.seed}, {len(task.rows)} rows "
              f"{'closest to a vote tie' if args.pick == 'margin' else 'drawn at random'}; "
              + ", ".join(f"{a.name} {v}" for a, v in zip(adapters, versions)))
        for report in reports.values():
            print(report.text())
    if interrupted:
        raise KeyboardInterrupt  # the reports of the finished peers are printed and kept
    return 0 if all(r.ok for r in reports.values()) else 1
