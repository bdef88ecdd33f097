"""``rfcircuits verify-peer``: run other explainers on a random forest and grade their answers
against what each promises; :func:`grade_peer` does the same from Python.

**The forest and the rows** (:class:`PeerData`) come by one of three routes:

- ``--dataset iris|wine|breast-cancer``: a scikit-learn ``RandomForestClassifier`` trained on a
  dataset bundled with scikit-learn (:func:`rfcircuits.datasets.train_forest`, the seed's 85/15
  split) and imported into our model; the rows are the dataset's;
- ``--model M.joblib --data D.csv [--target COL]``: the user's fitted model
  (:func:`~rfcircuits.sklearn_import.load_model`, imported by
  :func:`~rfcircuits.sklearn_import.forest_from_sklearn`) and the rows of a CSV
  (:func:`~rfcircuits.datasets.load_rows`: columns matched to the model's
  ``feature_names_in_`` when it has them; the label column, named or the one left over, is
  not explained; its labels are ``y_train`` when they are all classes of the model, else the
  model's predictions are);
- ``--forest F --instances I``: the user's forest file and instances (JSON Lines or CSV,
  :func:`~rfcircuits.inputs.read_instance_values`); the peers are given a scikit-learn model
  built from the forest (:func:`~rfcircuits.crosscheck.peers.sklearn_model.sklearn_from_forest`,
  numeric features only), checked to read every instance in its own states, and the instances
  as training data, labelled by the forest's decision. A value given as a state name becomes
  a number inside that state.

The rows explained are K of those rows (:func:`pick_rows`: drawn at random with the seed, or
those closest to a vote tie; ``--rows K``, by default 20 of a dataset or ``--data``, every
instance of ``--instances``). Each row keeps its origin (its index among the data's rows
and where it is: a file and line), which every finding of the report names with the row's
raw values.

Each adapter named with ``--adapter`` (:mod:`rfcircuits.crosscheck.peers.adapters.base`: built-in
names or ``module:Class``, built with the ``--adapter-option`` pairs, :func:`adapter_options`)
gets the same :class:`~rfcircuits.crosscheck.peers.adapters.base.Task`, its forest imported with
the votes the peer explains (the hard majority, or ``predict``'s soft vote:
:meth:`PeerData.for_votes`; ``--pick margin`` then looks for ties of those votes); its answers are graded as
they arrive (:class:`rfcircuits.crosscheck.peers.promises.PromiseGrader`), with progress on stderr.
``--out DIR`` keeps, per adapter, the report (``<name>.report.json``), the peer's answers as it
gave them (``<name>.answers.jsonl``: row, data row, status, record, seconds, error) and a repro
file when the report has findings; ``--html FILE`` writes the reports as one self-contained
page (:mod:`rfcircuits.crosscheck.peers.report`). Exit 1 when some promise is broken, something
promised complete is missing or our engine and the oracle disagree; a peer's crashes and
timeouts, and findings that rest only on states no float32 input reaches, are listed and
counted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rfcircuits.atomicio import atomic_open, check_output, output_dir, write_json
from rfcircuits.boosted_import import forest_from_model, forest_from_xgboost, library_of
from rfcircuits.datasets import Dataset, as_class_names, load_rows, split, train_forest
from rfcircuits.errors import InputError
from rfcircuits.forest import Forest, Instance, as_forest, parse_instance
from rfcircuits.inputs import read_instance_values
from rfcircuits.progress import Progress
from rfcircuits.sklearn_import import instances_from_values, load_model
from rfcircuits.crosscheck.peers.adapters.base import (Answer, RowOrigin, Task, adapter_library,
                                                       adapter_model, adapter_votes, load_adapter,
                                                       protocol_error)
from rfcircuits.crosscheck.peers.promises import PeerReport, PromiseGrader
from rfcircuits.crosscheck.peers.sklearn_model import sklearn_from_forest
from rfcircuits.crosscheck.differential.strategies import pick_by_margin, state_value

DATASETS = ("iris", "wine", "breast-cancer")
#: How the rows to explain are chosen (:func:`pick_rows`).
PICKS = ("random", "margin")
#: Rows explained of a dataset or of ``--data`` when ``--rows`` is not given.
DEFAULT_ROWS = 20
#: The routes to a forest, each with the options it takes (module docstring).
ROUTES = {"dataset": ("--dataset",), "model": ("--model", "--data"),
          "forest": ("--forest", "--instances")}


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


def pick_rows(forest: Forest, X: np.ndarray, k: int | None, pick: str,
              seed: int) -> np.ndarray:
    """Indices of the ``k`` rows of ``X`` to explain (None: all), in data order. ``random``: ``k``
    distinct rows drawn with ``seed``. ``margin``: the rows whose instances (``forest``'s states of
    the row) are closest to a vote tie
    (:func:`~rfcircuits.crosscheck.differential.strategies.pick_by_margin`, exact ties first), one
    row per instance (the first in the data): rows in the same states would be graded alike, so they
    would only take the place of others."""
    k = len(X) if k is None else k
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


@dataclass
class PeerData:
    """What peers are graded on before the rows are chosen (module docstring): ``forest``
    (ours) and ``model`` (the fitted scikit-learn forest the peers are given), the training
    data ``X_train``/``y_train`` (class indices), the rows that may be explained ``X`` (raw
    values, features in the forest's order) with their ``origins``, and how reports name
    them (``head``: the JSON report's keys, ``title``: its first line)."""

    forest: Forest
    model: Any
    X_train: np.ndarray
    y_train: np.ndarray
    X: np.ndarray
    origins: list[RowOrigin]
    head: dict[str, Any] = field(default_factory=dict)
    title: str = ""

    def for_votes(self, votes: str) -> PeerData:
        """The same data with the model imported with ``votes`` (``hard``: the trees'
        majority; ``soft``: ``predict``'s decision), the votes an adapter's peer explains
        (:func:`~rfcircuits.crosscheck.peers.adapters.base.adapter_votes`)."""
        if self.forest.voting == votes:
            return self
        forest = forest_from_model(self.model, [f.name for f in self.forest.features],
                                   list(self.forest.classes), votes=votes)
        return dataclasses.replace(self, forest=forest)

    def task(self, k: int | None, pick: str, seed: int, timeout: float) -> Task:
        """The task of ``k`` rows (None: all) chosen by ``pick`` (:func:`pick_rows`)."""
        if k is not None and k < 1:
            raise InputError("--rows must be at least 1")
        chosen = pick_rows(self.forest, self.X, k, pick, seed)
        rows = self.X[chosen]
        return Task(self.forest, self.model, self.X_train, self.y_train, rows,
                    instances_from_values(self.forest, rows), seed, timeout,
                    [f.name for f in self.forest.features],
                    [self.origins[i] for i in chosen])


def from_dataset(name: str, trees: int, depth: int, seed: int,
                 library: str = "sklearn") -> PeerData:
    """A forest trained on a dataset bundled with scikit-learn, its rows the dataset's: a
    ``RandomForestClassifier``, or for peers of XGBoost models (``library``) an
    ``XGBClassifier`` of ``trees`` rounds of depth ``depth``, on the same split."""
    data = load_dataset(name)
    loader = "load_" + name.replace("-", "_")
    origins = [RowOrigin(i, f"sklearn.datasets.{loader}().data[{i}]")
               for i in range(len(data.X))]
    head = {"dataset": name, "trees": trees, "depth": depth}
    if library == "xgboost":
        from xgboost import XGBClassifier

        X_train, _, y_train, _, _ = split(data, seed)
        model = XGBClassifier(n_estimators=trees, max_depth=depth, random_state=seed,
                              n_jobs=1).fit(X_train, y_train)
        forest = forest_from_xgboost(model, data.feature_names, data.classes)
        return PeerData(forest, model, X_train, y_train, data.X, origins, head,
                        f"{name}, XGBoost, {trees} rounds of depth {depth}")
    trained = train_forest(data, trees, depth, seed)
    return PeerData(trained.forest, trained.model, trained.X_train, trained.y_train, data.X,
                    origins, head, f"{name}, {trees} trees, depth {depth}")


def make_task(dataset: str, trees: int, depth: int, seed: int, k: int, pick: str,
              timeout: float) -> Task:
    """The task ``verify-peer --dataset`` gives every adapter (module docstring)."""
    return from_dataset(dataset, trees, depth, seed).task(k, pick, seed, timeout)


def from_model(model: Any, X: Any, origins: Sequence[RowOrigin] | None = None,
               labels: Sequence[str] | None = None, source: str = "the model") -> PeerData:
    """A fitted scikit-learn forest and rows ``X`` for it (a 2-D array or a DataFrame of its
    features, in order); ``labels`` (class names, as :func:`~rfcircuits.datasets.
    as_class_names` reads them) are ``y_train`` when every one is a class of the model, else
    the model's predictions are."""
    # the majority vote the first peers explained (for_votes gives soft); boosted: soft only
    forest = forest_from_model(model, votes=None if library_of(model) else "hard")
    X = _matrix(X, forest)
    origins = list(origins or (RowOrigin(i, f"rows[{i}]") for i in range(len(X))))
    instances_from_values(forest, X, lambda i, j: f"{origins[i].where}, column "
                                                  f"{forest.features[j].name!r}")
    classes = list(forest.classes)
    if labels is not None and all(y in classes for y in labels):
        y = np.array([classes.index(y) for y in labels])
    else:
        with warnings.catch_warnings():  # a model fitted on named columns, given an array
            warnings.filterwarnings("ignore", "X does not have valid feature names")
            known = [str(c) for c in model.classes_]
            y = np.array([known.index(str(p)) for p in model.predict(X)])
    return PeerData(forest, model, X, y, X, origins, title=source)


def from_forest(forest: Forest, rows: Sequence[tuple[str, Mapping[str, Any]]],
                source: str = "the forest") -> PeerData:
    """A forest of ours and its instances, each ``(where, {feature: number or state
    name})``: the peers get a scikit-learn model built from the forest and the instances as
    training data labelled by its decision (module docstring); our forest reads raw values as
    that model does (float32). InputError when a value falls in another state as
    scikit-learn reads it than as the forest file reads it."""
    model = sklearn_from_forest(forest)
    ours = dataclasses.replace(forest, input_dtype="float32")
    X = np.empty((len(rows), len(forest.features)))
    for i, (where, values) in enumerate(rows):
        x = parse_instance(forest, values, where)
        for j, f in enumerate(forest.features):
            value = values[f.name]
            X[i, j] = state_value(f, x[j], "float32") if isinstance(value, str) else value
            try:
                read = f.state_of_value(float(X[i, j]), "float32")
            except ValueError as exc:  # beyond float32's range: scikit-learn refuses it too
                raise InputError(f"{where}, feature {f.name!r}: {exc}") from None
            if read != x[j]:
                raise InputError(f"{where}, feature {f.name!r}: {value!r} is in state "
                                 f"{f.states[x[j]]} as the forest reads it ({forest.input_dtype})"
                                 " but not as scikit-learn reads it (float32), and the peers "
                                 "are given a scikit-learn model: give a value that float32 "
                                 "places alike")
    instances = instances_from_values(ours, X)
    decisions = np.array([ours.decision(x) for x in instances])
    # the model is the forest (our bug otherwise), but for float64 sums at a near tie
    apart = (model.predict(X) != decisions) & ~np.array([ours.near_tie(x) for x in instances],
                                                         dtype=bool)
    if apart.any():
        raise AssertionError(f"the scikit-learn model of {source} does not decide as it does")
    origins = [RowOrigin(i, where) for i, (where, _) in enumerate(rows)]
    return PeerData(ours, model, X, decisions, X, origins, title=source)


def load_model_data(model: Any, data: str, target: str | None = None) -> PeerData:
    """``--model M --data D [--target COL]`` (module docstring); ``model`` is a path or a
    fitted model."""
    fitted = load_model(model) if isinstance(model, (str, os.PathLike)) else model
    forest = forest_from_model(fitted, votes=None if library_of(fitted) else "hard")
    names = getattr(fitted, "feature_names_in_", None)
    rows = load_rows(data, None if names is None else [str(n) for n in names],
                     len(forest.features), target)
    labels = None if rows.labels is None else as_class_names(rows.labels, forest.classes, data)
    origins = [RowOrigin(i, f"{data}, line {i + 2}") for i in range(len(rows.X))]
    name = os.fspath(model) if isinstance(model, (str, os.PathLike)) else type(fitted).__name__
    out = from_model(fitted, rows.X, origins, labels,
                     f"{name} ({type(fitted).__name__}, {len(forest.trees)} trees) on {data}")
    out.head = {"model": name, "data": data, "target": target}
    return out


def load_forest_data(forest: Forest | str, instances: str,
                     target: str | None = None) -> PeerData:
    """``--forest F --instances I [--target COL]`` (module docstring); ``forest`` is a path
    or a forest."""
    ours = as_forest(forest)
    name = os.fspath(forest) if isinstance(forest, (str, os.PathLike)) else "the forest"
    out = from_forest(ours, read_instance_values(instances, ours, target),
                      f"{name} ({len(ours.trees)} trees) on {instances}")
    out.head = {"forest": name, "instances": instances, "target": target}
    return out


def _matrix(X: Any, forest: Forest) -> np.ndarray:
    """Rows as a float64 matrix of the forest's features: a DataFrame (its columns named as
    the features, in order) or a 2-D array."""
    if hasattr(X, "columns"):
        columns = [str(c) for c in X.columns]
        names = [f.name for f in forest.features]
        if columns != names:
            raise InputError(f"rows: columns {columns} are not the model's features, in order "
                             f"({names})")
        X = X.to_numpy()
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"rows: not a table of numbers ({exc})") from None
    if X.ndim != 2 or X.shape[1] != len(forest.features) or not len(X):
        raise InputError(f"rows: expected rows of {len(forest.features)} values, got shape "
                         f"{X.shape}")
    return X


def peer_data(args: argparse.Namespace, library: str = "sklearn") -> PeerData:
    """The forest and rows the command line names (module docstring): one route of
    :data:`ROUTES`, with the options it takes (``fuzz --adapter`` has no ``--dataset``);
    ``--dataset`` trains a model of ``library``."""
    def option(name: str) -> Any:
        """The value of the option spelt ``name`` (None when not given or not taken)."""
        return getattr(args, name.lstrip("-").replace("-", "_"), None)

    given = [r for r, (first, *_) in ROUTES.items() if option(first) is not None]
    if len(given) != 1:
        raise InputError("give one of --dataset NAME, --model M --data D, or --forest F "
                         "--instances I" + (f" (not {' and '.join(ROUTES[r][0] for r in given)})"
                                            if given else ""))
    route = given[0]
    for name in ROUTES[route][1:]:
        if option(name) is None:
            raise InputError(f"{ROUTES[route][0]} needs {name}")
    others = [o for r, options in ROUTES.items() if r != route for o in options[1:]
              if option(o) is not None]
    if route == "dataset" and option("--target") is not None:
        others.append("--target")
    if route != "dataset" and (option("--trees") is not None or option("--depth") is not None):
        others.append("--trees/--depth")
    if others:
        raise InputError(f"{', '.join(others)}: not with {ROUTES[route][0]}")
    if route == "dataset":
        trees = 11 if option("--trees") is None else args.trees
        depth = 4 if option("--depth") is None else args.depth
        for name, value in (("trees", trees), ("depth", depth)):
            if value < 1:
                raise InputError(f"--{name} must be at least 1")
        return from_dataset(args.dataset, trees, depth, args.seed, library)
    if route == "model":
        return load_model_data(args.model, args.data, args.target)
    return load_forest_data(args.forest, args.instances, args.target)


def rows_wanted(args: argparse.Namespace) -> int | None:
    """How many rows to explain: ``--rows``, else 20 (every instance with ``--forest``)."""
    if args.rows is not None:
        return args.rows
    return None if args.forest is not None else DEFAULT_ROWS


def adapter_options(pairs: Sequence[str], names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per adapter of ``names``, its ``--adapter-option KEY=VALUE`` pairs: a value is read as
    JSON when it parses (``true``, ``3``, ``"a"``), else kept as text (a path, a command);
    ``NAME.KEY=VALUE`` is for the adapter ``NAME`` only (``rfxpl.path=/src/RFxpl`` beside
    ``--adapter rfxpl,anchors``), ``KEY=VALUE`` for every one."""
    options: dict[str, dict[str, Any]] = {name: {} for name in names}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        scope, _, key = key.rpartition(".")
        if not sep or not key.isidentifier() or scope and scope not in options:
            raise InputError(f"--adapter-option: expected KEY=VALUE or NAME.KEY=VALUE with NAME "
                             f"one of the adapters given ({', '.join(names)}), not {pair!r}")
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = value
        for name in [scope] if scope else names:
            options[name][key] = parsed
    return options


def run_peer(adapter: Any, task: Task, progress: Progress | None = None,
             answers_out: list[Answer] | None = None) -> PeerReport:
    """The adapter's answers on ``task``, graded as they arrive; each answer is appended to
    ``answers_out`` when given. A KeyboardInterrupt stops the peer and keeps what is graded."""
    with PromiseGrader(task.forest, adapter.name, adapter.version(), adapter.ties,
                       adapter.promises, task=task,
                       peer_model=adapter_model(adapter, task)) as grader:
        if progress is not None:
            progress.stage(f"{adapter.name}: rows explained and graded", len(task.rows))
        seen: set[int] = set()
        answers = adapter.explain(task)
        try:
            for answer in answers:
                problem = protocol_error(answer, len(task.rows), seen)
                if problem:
                    grader.report.failures.append({"row": None, "data_row": None, "where": "",
                                                   "status": "error", "error": problem})
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


def grade_peer(adapter: str | Any, *, model: Any = None, forest: Forest | str | None = None,
               rows: Any = None, target: str | None = None, dataset: str | None = None,
               trees: int = 11, depth: int = 4, count: int | None = None,
               pick: str = "random", seed: int = 0, timeout: float = 60.0,
               options: Mapping[str, Any] | None = None) -> PeerReport:
    """Grade another explainer on a random forest, as ``rfcircuits verify-peer`` does
    (docs/peers.md), and return its report.

    ``adapter`` is a built-in adapter's name (``pyxai``, ``anchors``, ``rfxpl``, ...),
    ``module:Class``, or an adapter object (:class:`~rfcircuits.crosscheck.peers.adapters.base.
    Adapter`); ``options`` are passed to a named adapter's constructor (``--adapter-option``).
    The forest and rows, by one of three routes:

    - ``model``: a fitted ``RandomForestClassifier`` (or a path to one saved with joblib or
      pickle: loading runs code the file names, load only files you trust) and ``rows``, the
      rows to explain: a DataFrame or 2-D array of its features, or a CSV file (``target``:
      its label column, not explained);
    - ``forest``: a :class:`~rfcircuits.forest.Forest` or a forest file, and ``rows``, a file
      of instances (JSON Lines or CSV) or a sequence of ``{feature: value}`` mappings; the
      peer gets a scikit-learn model built from the forest (numeric features only);
    - ``dataset``: ``iris``, ``wine`` or ``breast-cancer``: a forest of ``trees`` trees of
      depth ``depth`` trained with ``seed``, and its rows.

    ``count`` rows are explained (None: every row given, 20 of a dataset), chosen by ``pick``
    (``random`` with ``seed``, or ``margin``: closest to a vote tie); the peer may take
    ``timeout`` seconds per row.

    Returns the :class:`~rfcircuits.crosscheck.peers.promises.PeerReport`: ``ok`` (no broken
    promise, nothing promised missing, no dispute: the command's exit 0), ``findings`` (each
    with its row's ``data_row``, ``where`` and raw ``values``), ``to_json()`` (what
    ``verify-peer --out`` keeps as ``NAME.report.json``) and ``text()`` (what it prints).
    Raises :class:`~rfcircuits.errors.InputError` for bad input, and
    :class:`~rfcircuits.crosscheck.peers.adapters.base.PeerUnavailable` when the peer is not
    installed."""
    peer = load_adapter(adapter, **(options or {})) if isinstance(adapter, str) else adapter
    peer.version()  # an unavailable peer stops the call before any training
    routes = [name for name, value in (("model", model), ("forest", forest),
                                       ("dataset", dataset)) if value is not None]
    if len(routes) != 1:
        raise InputError("grade_peer: give one of model=, forest= or dataset=")
    if dataset is not None:
        data = from_dataset(dataset, trees, depth, seed, adapter_library(peer))
        count = DEFAULT_ROWS if count is None else count
    elif rows is None:
        raise InputError(f"grade_peer: {routes[0]}= needs rows=")
    elif isinstance(rows, (str, os.PathLike)):
        data = load_model_data(model, os.fspath(rows), target) if model is not None else \
            load_forest_data(forest, os.fspath(rows), target)  # type: ignore[arg-type]
    elif model is not None:
        data = from_model(load_model(model) if isinstance(model, (str, os.PathLike))
                          else model, rows)
    else:
        ours = as_forest(forest)
        records = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
        data = from_forest(ours, [(f"rows[{i}]", r) for i, r in enumerate(records)])
    return run_peer(peer, data.for_votes(adapter_votes(peer)).task(count, pick, seed, timeout))


def write_outputs(out: str, name: str, report: PeerReport, task: Task,
                  answers: Sequence[Answer]) -> None:
    """``--out DIR``'s files for one adapter (module docstring)."""
    stem = os.path.join(out, name.replace("/", "_").replace(":", "_"))
    write_json(f"{stem}.report.json", report.to_json())
    with atomic_open(f"{stem}.answers.jsonl") as handle:
        for a in sorted(answers, key=lambda a: a.index):
            origin = task.origins[a.index] if a.index < len(task.origins) else None
            handle.write(json.dumps({"row": a.index + 1,
                                     "data_row": origin and origin.index,
                                     "status": a.status, "record": a.record,
                                     "seconds": round(a.seconds, 4), "error": a.error},
                                    ensure_ascii=False) + "\n")
    if report.findings:
        from rfcircuits.crosscheck.peers.repro import peer_repro

        write_json(f"{stem}.repro.json",
                   peer_repro(report, task.forest, task.instances, answers, task))


def run_verify_peer(args: argparse.Namespace) -> int:
    """``rfcircuits verify-peer`` (module docstring)."""
    names = [n.strip() for spec in args.adapter for n in spec.split(",") if n.strip()]
    options = adapter_options(args.adapter_option or (), names)
    adapters = [load_adapter(n, **options[n]) for n in names]
    versions = [a.version() for a in adapters]  # unavailable peers stop the run before training
    if args.out:
        output_dir(args.out)
    if args.html:
        check_output(args.html)  # now, not after the peers have run
    kinds = {(adapter_library(a), adapter_votes(a)) for a in adapters}
    datas = {library: peer_data(args, library) for library in sorted({k[0] for k in kinds})}
    tasks = {(library, votes): datas[library].for_votes(votes).task(
        rows_wanted(args), args.pick, args.seed, args.timeout) for library, votes in kinds}
    data = next(iter(datas.values()))  # the routes' options and files are the same
    reports: dict[str, PeerReport] = {}
    interrupted = False
    with Progress("training", enabled=not args.no_progress) as progress:
        for name, adapter in zip(names, adapters):
            task = tasks[adapter_library(adapter), adapter_votes(adapter)]
            answers: list[Answer] = []
            try:
                reports[name] = run_peer(adapter, task, progress, answers)
            except KeyboardInterrupt:
                interrupted = True
                break
            finally:
                if args.out and name in reports:
                    write_outputs(args.out, name, reports[name], task, answers)
    rows = len(next(iter(tasks.values())).rows)
    document = {**data.head, "seed": args.seed, "pick": args.pick, "rows": rows,
                "timeout": args.timeout, "peers": {n: r.to_json() for n, r in reports.items()}}
    if args.html:
        from rfcircuits.crosscheck.peers.report import write_html

        write_html(args.html, document, interrupted)
    if args.json:
        print(json.dumps(document, ensure_ascii=False))
    else:
        print(f"verify-peer: {'; '.join(d.title for d in datas.values())}, seed {args.seed}, "
              f"{rows} rows "
              f"{'closest to a vote tie' if args.pick == 'margin' else 'drawn at random'}; "
              + ", ".join(f"{a.name} {v}" for a, v in zip(adapters, versions)))
        for report in reports.values():
            print(report.text())
    if interrupted:
        raise KeyboardInterrupt  # the reports of the finished peers are printed and kept
    return 0 if all(r.ok for r in reports.values()) else 1
