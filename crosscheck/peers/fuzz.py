"""``rfcircuits fuzz --adapter NAME``: another explainer (a *peer*, plugged in as an adapter,
:mod:`rfcircuits.crosscheck.peers.adapters.base`) on random small scikit-learn forests, graded
against its own promises (:mod:`rfcircuits.crosscheck.peers.promises`); failing cases are shrunk
and saved.

**Cases.** Case ``k`` of seed ``s`` is a pure function of ``(s, k)``, drawn from
``random.Random(f"{s}/{k}/peer")`` (:func:`make_case`): a random data set (2–5 numeric features,
some with only a few distinct values so that the trees share thresholds and votes tie often; 2–4
classes; 20–80 rows labelled by a random linear rule with 10% noise), a scikit-learn
``RandomForestClassifier`` (1–7 trees, depth 1–4, its seed drawn too) trained on all of it and
imported into our :class:`~rfcircuits.forest.Forest`, and the instances a peer most likely gets
wrong: the :data:`NEAR_TIES` data rows closest to a vote tie
(:func:`~rfcircuits.crosscheck.differential.strategies.pick_by_margin`), a world with tied votes and
a world decided for each class when those rows have none
(:func:`~rfcircuits.crosscheck.differential.strategies.with_edge_worlds`), a world one vote from a
tie and a world that is no data row. For a peer of XGBoost models (its adapter's ``library``) the
model is an ``XGBClassifier`` of as many rounds and that depth, with at most as many classes as the
adapter takes (``max_classes``). The forest is imported with the votes the peer explains
(:func:`~rfcircuits.crosscheck.peers.adapters.base.adapter_votes`): for ``predict``'s soft vote the
rows closest to a tie are those whose two best exact sums are closest, and the world one vote from a
tie is the world of the pool with the smallest gap that is no tie. The peer is given raw values: a
data row's own, or for a world a value inside each of its states (:func:`state_value`), each checked
to fall back into its state as scikit-learn reads it (float32).

**Cases on the user's forest** (``--model M --data D`` or ``--forest F --instances I``: a
:class:`~rfcircuits.crosscheck.peers.grading.PeerData`; :func:`make_user_case`): the model is the
user's and stays so; case ``k`` of seed ``s`` explains the data row ``k``-th closest to a vote
tie, a data row drawn from ``random.Random(f"{s}/{k}/peer-user")``, and the world nearest a
tie among :data:`NEIGHBOURS` that move one or two features of the first row to other states
(raw values inside them, checked as above). Its rows keep their origins, which reports name.

**Running the peer** (:func:`guarded_answers`): in a forked child process, so that its crash
(even a segfault) or hang cannot take the run with it. A peer may take the task's ``timeout``
per row, and is expected to keep to it (the PyXAI adapter stops a call that overruns it); as a
backstop, when the answers of all ``n`` rows have not come within :data:`START_SECONDS` ``+
(n + 1) × (timeout +`` :data:`ROW_SLACK` ``)`` seconds, the child is stopped (SIGTERM, so that
the adapter's own clean-up runs; SIGKILL :data:`STOP_GRACE` seconds later) and the rows left
are *timeouts*; an exception of the peer (or its process dying) makes the rows left *errors*.
Where processes cannot be forked, the peer runs in this process, with no time limit.

**Verdicts.** A case fails when the report has a broken promise, an item missing that the
peer promised to give (``answers: all``), a dispute between our engine and the SAT oracle
(our bug), or a row the peer failed on (an error, unreadable output, a timeout): crashes and
timeouts are counted apart from the findings, and only the findings fail the run. A failing case is shrunk while the first of
its failures persists (:func:`shrink`; the same kind, field and promise of a finding, an
error raising the same exception): to the one row
that shows it, then to fewer features (the forest retrained, with the same seed, on fewer
columns of the data; not on the user's forest), then to fewer trees (subsets of the model's
``estimators_``, by halves, quarters, ... down to single trees), within
:data:`SHRINK_RUNS` runs of the peer and :data:`SHRINK_FACTOR` times the seconds of the case's
own run (a peer that takes seconds to start, as PyXAI's worker does, gets fewer attempts).
Timeouts are not shrunk (each attempt would cost the whole time limit).

**Repro files.** Each failing case is written at once, atomically, to
``DIR/peer-<adapter>-<seed>-<k>.json`` (:func:`~rfcircuits.crosscheck.peers.repro.peer_repro`:
``rfcircuits.repro/1`` with the peer's answers, our verdicts and their counterexample worlds;
``seed``, ``case`` and ``shrunk_from`` as ``fuzz`` writes them; ``peer.case`` says what the
shrunk case keeps and the raw rows the peer was given — on the user's forest also the user's
files with their SHA-256 digests (:func:`source_json`) — and :func:`task_from_repro` rebuilds
the scikit-learn model from it to run the peer again).

**Exit status** (:func:`exit_code`): 1 when a promise is broken, an item promised is missing
or we dispute an item; 0 otherwise (findings that rest only on states no float32 input reaches
are counted, not failures). The peer's crashes and timeouts are findings of their own
kind: counted, and a case it crashed on is shrunk and saved like any failing case. Cases run one after another
in this process (no ``--jobs``), each peer run in a fresh child, so that nothing an adapter
keeps carries from one case to the next. A signal stops the run; the files written are whole,
and a failure found in the case it stops is saved unshrunk.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import itertools
import json
import math
import multiprocessing
import os
import random
import re
import signal
import threading
import time
from collections import Counter
from fractions import Fraction
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from rfcircuits.atomicio import output_dir, write_json
from rfcircuits.errors import InputError
from rfcircuits.forest import Forest, Instance
from rfcircuits.interrupts import SIGNALS
from rfcircuits.progress import Progress
from rfcircuits.boosted_import import forest_from_model
from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values
from rfcircuits.crosscheck.peers.adapters.base import (Answer, RowOrigin, Task, adapter_library,
                                                       adapter_model, adapter_votes, error_text,
                                                       protocol_error)
from rfcircuits.crosscheck.differential.fuzz import timeline_point
from rfcircuits.crosscheck.campaigns.parallel import _leave_signals, can_fork
from rfcircuits.crosscheck.peers.repro import peer_repro
from rfcircuits.crosscheck.peers.grading import PeerData
from rfcircuits.crosscheck.peers.promises import FAILING as PROMISE_FAILING
from rfcircuits.crosscheck.peers.promises import PeerReport, grade_answers
from rfcircuits.crosscheck.differential.strategies import (all_worlds, margin, pick_by_margin,
                                                           random_instance, state_value,
                                                           with_edge_worlds, world_values)
from rfcircuits.crosscheck.verify import counted

#: Data rows closest to a vote tie explained in each case.
NEAR_TIES = 3
#: A forest with more worlds than this looks for its edge worlds among as many random ones.
WORLD_POOL = 4096
#: Most runs of the peer that shrinking one failing case may take, and most seconds, as a
#: multiple of the case's own run.
SHRINK_RUNS = 40
SHRINK_FACTOR = 10.0
#: The backstop on a peer's time (module docstring): seconds to start, and more per row than
#: the task's time limit (the PyXAI adapter waits as much longer for a call).
START_SECONDS = 60.0
ROW_SLACK = 10.0
#: Seconds a peer stopped for its time limit has to clean up before it is killed.
STOP_GRACE = 5.0
#: Kinds of findings that fail a case (and the run).
FAILING = tuple(PROMISE_FAILING)
#: Worlds near a data row a case on the user's forest looks at for the one nearest a tie.
NEIGHBOURS = 32
#: Soft votes: a gap between the two best sums at most this part of the weight at the row is
#: a close tie (the summary counts them): RFxpl's rounding of a forest's probabilities to
#: three decimals moves a gap by up to a thousandth per tree.
CLOSE = Fraction(1, 1000)


# ---------------------------------------------------------------------------------------------
# Cases.


@dataclass
class PeerCase:
    """A generated case: the data (``X`` raw values, ``y`` class indices), the forest's
    training ``params``, the ``rows`` to explain (raw values, all columns) and the model trained
    on every column (``model``)."""

    seed: int
    k: int
    X: np.ndarray
    y: np.ndarray
    params: dict[str, int]
    rows: np.ndarray
    model: Any
    votes: str = "hard"
    library: str = "sklearn"


@dataclass(frozen=True)
class Shape:
    """What a (shrunk) case keeps of the generated one: the data's ``columns``, the ``trees``
    (indices into ``estimators_``) of the forest trained on them (None: all of them) and the
    ``picks``, indices of the case's rows."""

    columns: tuple[int, ...]
    trees: tuple[int, ...] | None
    picks: tuple[int, ...]


def make_case(seed: int, k: int, votes: str = "hard", library: str = "sklearn",
              max_classes: int | None = None) -> PeerCase:
    """Case ``k`` of a run with ``seed`` for a peer that explains ``votes`` of models of
    ``library`` with at most ``max_classes`` classes (module docstring). Its cost is training
    the forest and, for the edge worlds, the votes of up to :data:`WORLD_POOL` worlds."""
    rng = random.Random(f"{seed}/{k}/peer")
    n_features, n_classes, n_rows = rng.randint(2, 5), rng.randint(2, 4), rng.randint(20, 80)
    n_classes = min(n_classes, max_classes or n_classes)
    columns = []
    for _ in range(n_features):
        if rng.random() < 0.4:  # a few distinct values: every tree splits between the same ones
            values = rng.sample(range(10), rng.randint(2, 4))
            columns.append([float(rng.choice(values)) for _ in range(n_rows)])
        else:
            columns.append([round(rng.uniform(0, 10), 2) for _ in range(n_rows)])
    X = np.array(columns).T
    y = _labels(rng, X, n_classes)
    params = {"n_estimators": rng.randint(1, 7), "max_depth": rng.randint(1, 4),
              "random_state": rng.randrange(2 ** 31)}
    model = _train(X, y, params, library)
    forest = _import(model, range(n_features), n_classes, votes)
    first: dict[Instance, int] = {}  # the first data row of each instance
    for i, x in enumerate(instances_from_values(forest, X)):
        first.setdefault(x, i)
    data = list(first)
    chosen = [data[j] for j in pick_by_margin(forest, data, NEAR_TIES)]
    pool = all_worlds(forest) if forest.n_worlds() <= WORLD_POOL else \
        [random_instance(rng, forest) for _ in range(WORLD_POOL)]
    rng.shuffle(pool)
    chosen = with_edge_worlds(forest, chosen, rng, pool)
    gap = 1 if votes == "hard" else min((m for w in pool if (m := margin(forest, w))), default=0)
    for want in (lambda w: margin(forest, w) == gap, lambda w: w not in first):
        if not any(want(x) for x in chosen):
            chosen.extend(itertools.islice((w for w in pool if want(w)), 1))
    rows = np.array([X[first[x]] if x in first else world_values(forest, x) for x in chosen])
    if instances_from_values(forest, rows) != chosen:
        raise AssertionError(f"case {seed}/{k}: raw values that miss their states")
    return PeerCase(seed, k, X, y, params, rows, model, votes, library)


def _labels(rng: random.Random, X: np.ndarray, n_classes: int) -> np.ndarray:
    """The class whose random linear score (over the centred features) is highest, a tenth of
    the labels redrawn at random; every class given to some row."""
    weights = np.array([[rng.uniform(-1, 1) for _ in range(X.shape[1])]
                        for _ in range(n_classes)])
    y = [int(c) for c in np.argmax((X - X.mean(axis=0)) @ weights.T, axis=1)]
    for i in range(len(y)):
        if rng.random() < 0.1:
            y[i] = rng.randrange(n_classes)
    for c in range(n_classes):
        if c not in y:  # take a row from a class that has others
            counts = Counter(y)
            y[next(i for i in rng.sample(range(len(y)), len(y)) if counts[y[i]] > 1)] = c
    return np.array(y)


def _train(X: np.ndarray, y: np.ndarray, params: dict[str, int], library: str) -> Any:
    if library == "xgboost":
        from xgboost import XGBClassifier

        return XGBClassifier(**params, n_jobs=1).fit(X, y)
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(**params).fit(X, y)


def _import(model: Any, columns: Sequence[int], n_classes: int, votes: str) -> Forest:
    return forest_from_model(model, [f"x{c}" for c in columns],
                             [f"c{c}" for c in range(n_classes)], votes=votes)


def build(case: Case, shape: Shape, timeout: float) -> Task:
    """The task of ``case`` as ``shape`` keeps it: the model retrained (same seed) when it
    drops columns, its trees cut to ``shape.trees``."""
    if isinstance(case, UserCase):
        return case.task(shape, timeout)
    n_classes = int(case.y.max()) + 1
    columns = list(shape.columns)
    model = case.model if len(columns) == case.X.shape[1] else \
        _train(case.X[:, columns], case.y, case.params, case.library)
    if shape.trees is not None:
        model = _with_trees(model, shape.trees)
    forest = _import(model, columns, n_classes, case.votes)
    rows = case.rows[np.ix_(list(shape.picks), columns)]
    return Task(forest, model, case.X[:, columns], case.y, rows,
                instances_from_values(forest, rows), seed=case.params["random_state"],
                timeout=timeout)


def _with_trees(model: Any, trees: Sequence[int]) -> Any:
    """A shallow copy of a fitted forest keeping ``trees`` of its ``estimators_``."""
    small = copy.copy(model)
    small.estimators_ = [model.estimators_[t] for t in trees]
    small.n_estimators = len(trees)
    return small


def full_shape(case: Case) -> Shape:
    """The whole case: every column, tree and row."""
    return Shape(tuple(range(case.X.shape[1])), None, tuple(range(len(case.rows))))


def task_from_repro(doc: dict[str, Any], timeout: float = 60.0) -> Task:
    """The task a ``fuzz --adapter`` repro file was saved from (its case regenerated from
    ``seed`` and ``case``, or read again from the user's files, cut as ``peer.case`` says):
    run the peer on it again."""
    kept = doc["peer"]["case"]
    trees, votes, library = kept["trees"], kept.get("votes", "hard"), \
        kept.get("library", "sklearn")
    if "source" in kept:
        rows = np.array(kept["rows"], dtype=np.float64)
        case: Case = UserCase(doc["seed"], doc["case"],
                              UserSource(source_data(kept["source"]).for_votes(votes)),
                              rows, [RowOrigin(*o) for o in kept["origins"]])
        picks = tuple(range(len(rows)))
    else:
        case = make_case(doc["seed"], doc["case"], votes, library, kept.get("max_classes"))
        picks = tuple(kept["picks"])
    shape = Shape(tuple(kept["columns"]), None if trees is None else tuple(trees), picks)
    return build(case, shape, timeout)


# ---------------------------------------------------------------------------------------------
# Cases on the user's forest.


class UserSource:
    """The user's forest and rows for ``fuzz --adapter --model/--forest`` (``data``, a
    :class:`~rfcircuits.crosscheck.peers.grading.PeerData`), with what its cases draw on: the first
    data row of each instance, and those rows ordered by closeness to a vote tie."""

    def __init__(self, data: PeerData) -> None:
        self.data = data
        self.instances = instances_from_values(data.forest, data.X)
        self.first: dict[Instance, int] = {}
        for i, x in enumerate(self.instances):
            self.first.setdefault(x, i)
        unique = list(self.first)
        self.near = [self.first[unique[j]]
                     for j in pick_by_margin(data.forest, unique, len(unique))]


@dataclass
class UserCase:
    """A case on the user's forest (module docstring): the ``rows`` to explain (raw values)
    with their ``origins``; the model is the user's, ``X`` its data."""

    seed: int
    k: int
    source: UserSource
    rows: np.ndarray
    origins: list[RowOrigin]

    @property
    def X(self) -> np.ndarray:
        return self.source.data.X

    @property
    def model(self) -> Any:
        return self.source.data.model

    def task(self, shape: Shape, timeout: float) -> Task:
        """The task ``shape`` keeps (every column; trees and rows cut)."""
        data = self.source.data
        model, forest = data.model, data.forest
        if shape.trees is not None:
            model = _with_trees(model, shape.trees)
            forest = forest_from_sklearn(model, [f.name for f in forest.features],
                                         list(forest.classes), votes=forest.voting)
        rows = self.rows[list(shape.picks)]
        return Task(forest, model, data.X_train, data.y_train, rows,
                    instances_from_values(forest, rows),
                    random.Random(f"{self.seed}/{self.k}/user").randrange(2 ** 31), timeout,
                    [f.name for f in forest.features], [self.origins[p] for p in shape.picks])


#: A case of ``fuzz --adapter``: generated, or on the user's forest.
Case = PeerCase | UserCase


def make_user_case(source: UserSource, seed: int, k: int) -> UserCase:
    """Case ``k`` of ``seed`` on the user's forest (module docstring): the data row ``k``-th
    closest to a vote tie, a data row drawn at random, and the world nearest a tie among
    :data:`NEIGHBOURS` that move one or two features of the first row to other states."""
    rng = random.Random(f"{seed}/{k}/peer-user")
    data, forest = source.data, source.data.forest
    near = source.near[k % len(source.near)]
    picked = list(dict.fromkeys((near, source.first[source.instances[
        rng.randrange(len(data.X))]])))
    rows = [data.X[i] for i in picked]
    origins = [data.origins[i] for i in picked]
    x, best = source.instances[near], None
    for _ in range(NEIGHBOURS):
        w = list(x)
        for f in rng.sample(range(len(w)), min(len(w), rng.randint(1, 2))):
            w[f] = rng.randrange(forest.features[f].n_states)
        world = tuple(w)
        if world not in source.first and (best is None or margin(forest, world) < best[0]):
            best = (margin(forest, world), world)
    if best is not None:
        world = best[1]
        row = data.X[near].copy()
        moved = [f for f in range(len(world)) if world[f] != x[f]]
        for f in moved:
            row[f] = state_value(forest.features[f], world[f], forest.input_dtype)
        if instances_from_values(forest, [row]) != [world]:
            raise AssertionError(f"case {seed}/{k}: raw values that miss their states")
        rows.append(row)
        origins.append(RowOrigin(None, f"a world near {data.origins[near].where}, with "
                                       + ", ".join(forest.features[f].name for f in moved)
                                       + " moved"))
    return UserCase(seed, k, source, np.array(rows), origins)


def _digest(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def source_json(data: PeerData) -> dict[str, Any]:
    """What a repro file keeps of the user's files: their paths and SHA-256 digests, and the
    target column (its ``peer.case.source``)."""
    out: dict[str, Any] = {"target": data.head.get("target")}
    for key in ("model", "data", "forest", "instances"):
        if key in data.head:
            out[key] = {"path": os.path.abspath(data.head[key]),
                        "sha256": _digest(data.head[key])}
    return out


def source_data(source: dict[str, Any]) -> PeerData:
    """The user's forest and rows again, from a repro file's ``peer.case.source``;
    InputError when a file is gone or has changed."""
    from rfcircuits.crosscheck.peers.grading import load_forest_data, load_model_data

    for key in ("model", "data", "forest", "instances"):
        if key in source:
            path = source[key]["path"]
            if not os.path.isfile(path):
                raise InputError(f"{path}: no such file (the repro file's {key})")
            if _digest(path) != source[key]["sha256"]:
                raise InputError(f"{path}: changed since the repro file was written (its "
                                 "SHA-256 differs); the case cannot be rebuilt")
    if "model" in source:
        return load_model_data(source["model"]["path"], source["data"]["path"],
                               source["target"])
    return load_forest_data(source["forest"]["path"], source["instances"]["path"],
                            source["target"])


# ---------------------------------------------------------------------------------------------
# Running the peer.


def guarded_answers(adapter: Any, task: Task) -> list[Answer]:
    """One answer per row of ``task``, in row order: the peer's own, or a timeout or an error
    for the rows it left (module docstring)."""
    n = len(task.rows)
    got: dict[int, Answer] = {}
    status, why = "error", "the peer gave no answer for this row"
    with _peer_messages(adapter, task) as messages:
        for kind, value in messages:
            problem = protocol_error(value, n, got) if kind == "answer" else ""
            if kind == "answer" and not problem:
                got[value.index] = value
                continue
            if kind == "timeout":
                status = kind
            why = problem or value or why
            break
    return [got.get(i) or Answer(i, status, error=why) for i in range(n)]


@contextlib.contextmanager
def _peer_messages(adapter: Any, task: Task) -> Iterator[Iterator[tuple[str, Any]]]:
    """The peer's messages (:func:`_messages`) from a forked child, which is stopped when
    the block ends; a last ``("timeout", why)`` when the time is up, ``("error", why)`` when
    the child died. In this process when processes cannot be forked."""
    if not can_fork():
        yield _messages(adapter, task)
        return
    receive, send = multiprocessing.Pipe(duplex=False)
    ctx = multiprocessing.get_context("fork")
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:  # the child starts with the signals blocked, until it has its own handlers
        child = ctx.Process(target=_child, daemon=True, args=(
            adapter, task, send, os.getpid(), threading.get_ident(), blocked))
        child.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    send.close()
    budget = START_SECONDS + (len(task.rows) + 1) * (task.timeout + ROW_SLACK)

    def received() -> Iterator[tuple[str, Any]]:
        deadline = time.monotonic() + budget
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not receive.poll(left):
                yield "timeout", f"no answer within {budget:g} s (the time limit per row " \
                                 f"was {task.timeout:g} s)"
                return
            try:
                yield receive.recv()
            except EOFError:
                child.join(STOP_GRACE)
                yield "error", f"the peer's process died ({_exit_text(child.exitcode)})"
                return

    try:
        yield received()
    finally:
        if child.is_alive():
            child.terminate()
            child.join(STOP_GRACE)
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()


def _messages(adapter: Any, task: Task) -> Iterator[tuple[str, Any]]:
    """``("answer", Answer)`` per answer of the peer, then ``("done", "")`` or ``("error",
    what the peer raised)``."""
    try:
        for answer in adapter.explain(task):
            yield "answer", answer
    except Exception as exc:  # the peer's crash is a finding
        yield "error", error_text(exc)
        return
    yield "done", ""


def _child(adapter: Any, task: Task, conn: Any, parent: int, creator: int, mask: Any) -> None:
    """The forked child: the peer's messages through ``conn``. SIGINT is the parent's; a
    SIGTERM (the parent stopping it) exits through the adapter's ``finally`` blocks."""
    _leave_signals(parent, creator, mask)
    signal.signal(signal.SIGTERM, _exit)
    try:
        for message in _messages(adapter, task):
            conn.send(message)
    except Exception as exc:  # an answer that cannot be sent (not picklable)
        conn.send(("error", "cannot pass on the peer's answer: " + error_text(exc)))


def _exit(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


# ---------------------------------------------------------------------------------------------
# Grading, shrinking, saving.

#: One run of the peer on a task: the task, the peer's answers, our report.
Run = tuple[Task, list[Answer], PeerReport]
#: What failed: a finding's (kind, field, promise), or (``error``, '', the exception's name,
#: if the error names one) or (``timeout``, '', '').
Failure = tuple[str, str, str]


def run_case(adapter: Any, version: str, case: Case, shape: Shape, timeout: float) -> Run:
    """The peer on ``case`` cut to ``shape``, graded."""
    task = build(case, shape, timeout)
    answers = guarded_answers(adapter, task)
    report = grade_answers(task.forest, task.instances, answers, adapter.name, version,
                           adapter.ties, adapter.promises, task=task,
                           peer_model=adapter_model(adapter, task))
    return task, answers, report


def failures(report: PeerReport) -> list[tuple[Failure, int]]:
    """What fails in a report, findings first, each with its row (from 1)."""
    out = [((f.kind, f.field, f.promise), f.row) for f in report.findings if f.kind in FAILING]
    for f in report.failures:
        named = re.match(r"\w+(?=: )", f["error"]) if f["status"] != "timeout" else None
        out.append((("timeout" if f["status"] == "timeout" else "error", "",
                     named.group(0) if named else ""), f["row"]))
    return out


def shrink(adapter: Any, version: str, case: Case, run: Run, failure: Failure, row: int,
           timeout: float, seconds: float) -> tuple[Shape, Run]:
    """The smallest cut of ``case`` found on which ``failure`` persists (module docstring),
    and its run; ``run`` is the case's own, which took ``seconds`` and whose ``row`` (from 1)
    shows the failure."""
    shape, runs = full_shape(case), 0
    until = time.monotonic() + SHRINK_FACTOR * max(seconds, 1.0)

    def attempt(candidate: Shape) -> bool:
        nonlocal shape, run, runs
        if runs >= SHRINK_RUNS or time.monotonic() > until:
            return False
        runs += 1
        tried = run_case(adapter, version, case, candidate, timeout)
        if failure not in {f for f, _ in failures(tried[2])}:
            return False
        shape, run = candidate, tried
        return True

    if len(shape.picks) > 1:
        attempt(replace(shape, picks=(shape.picks[row - 1],)))
    while not isinstance(case, UserCase) and len(shape.columns) > 1 and any(
            attempt(replace(shape, columns=tuple(c for c in shape.columns if c != drop)))
            for drop in shape.columns):
        pass
    # trees by halves, then quarters... down to one at a time (a user's forest has hundreds)
    trees = tuple(range(len(getattr(run[0].model, "estimators_", ()))))
    size = len(trees) // 2
    while size >= 1:
        chunks = [trees[i:i + size] for i in range(0, len(trees), size)]
        if any(attempt(replace(shape, trees=tuple(t for t in trees if t not in chunk)))
               for chunk in chunks):
            trees = shape.trees or trees
            size = min(size, len(trees) // 2)
        else:
            size //= 2
    return shape, run


def save(out_dir: str, adapter: Any, case: Case, shape: Shape, run: Run,
         original: Task) -> str:
    """Write the repro file of a failing case (module docstring); its path."""
    task, answers, report = run
    doc = peer_repro(report, task.forest, task.instances, answers, task)
    doc.update(seed=case.seed, case=case.k,
               shrunk_from={"trees": len(original.forest.trees),
                            "features": len(original.forest.features)})
    doc["peer"]["case"] = {"columns": list(shape.columns),
                           "trees": None if shape.trees is None else list(shape.trees),
                           "picks": list(shape.picks), "rows": task.rows.tolist(),
                           "votes": task.forest.voting}
    if isinstance(case, PeerCase) and case.library != "sklearn":
        doc["peer"]["case"].update(library=case.library,
                                   max_classes=getattr(adapter, "max_classes", None))
    if isinstance(case, UserCase):
        doc["peer"]["case"].update(source=source_json(case.source.data),
                                   origins=[[o.index, o.where] for o in task.origins])
    name = re.sub(r"[^\w.-]", "_", adapter.name)
    path = os.path.join(out_dir, f"peer-{name}-{case.seed}-{case.k}.json")
    write_json(path, doc)
    return path


# ---------------------------------------------------------------------------------------------
# The run.


@dataclass
class PeerSummary:
    """What a ``fuzz --adapter`` run did: ``cases``, ``checks`` (the peer's items graded),
    ``failures`` (repro paths), ``rows`` explained, of them ``ties`` (``exact``, ``margin_1``:
    one vote from a tie; ``close``: soft votes whose two best sums differ by at most
    :data:`CLOSE` of the weight at the row, :func:`close_tie`) and per decided class
    (``classes``), ``findings`` by kind (broken, missing, disputed; ``errors`` and
    ``timeouts``: rows) and the ``differences`` of definition counted (not errors);
    ``unreachable``: findings that rest only on states no float32 input reaches,
    ``definition``: findings that rest on the peer's model of the forest (neither fails). ``source`` names the user's forest (None: random
    forests). ``timeline``: cases, checks and failing cases against the seconds
    (:func:`rfcircuits.crosscheck.differential.fuzz.timeline_point`)."""

    peer: dict[str, str]
    source: str | None = None
    cases: int = 0
    checks: int = 0
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False
    rows: int = 0
    ties: dict[str, int] = field(default_factory=lambda: {"exact": 0, "margin_1": 0,
                                                          "close": 0})
    classes: dict[str, int] = field(default_factory=dict)
    findings: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        (*FAILING, "unreachable", "definition", "errors", "timeouts"), 0))
    differences: dict[str, int] = field(default_factory=dict)
    timeline: list[list[float]] = field(default_factory=list)

    def count(self, task: Task, report: PeerReport) -> None:
        forest = task.forest
        self.cases += 1
        self.rows += len(task.instances)
        for x in task.instances:
            m = margin(forest, x)
            self.ties["exact"] += m == 0
            if forest.voting == "hard":
                self.ties["margin_1"] += m == 1
            else:
                self.ties["close"] += m > 0 and close_tie(forest, x)
            c = forest.classes[forest.decision(x)]
            self.classes[c] = self.classes.get(c, 0) + 1
        for tally in report.fields.values():
            self.checks += tally.items
            for kind, n in tally.differences.items():
                self.differences[kind] = self.differences.get(kind, 0) + n
        for f in report.findings:
            if f.kind in self.findings:
                self.findings[f.kind] += 1
        for failure in report.failures:
            self.findings["timeouts" if failure["status"] == "timeout" else "errors"] += 1


def close_tie(forest: Forest, x: Instance) -> bool:
    """Soft votes: whether the two best exact sums at ``x`` differ by at most :data:`CLOSE`
    of the weight the leaves reached carry (the sum of their absolute weights over every
    class: the number of trees for a forest of probabilities). Time O(trees × classes)."""
    weight = sum(abs(w) for w in forest.int_init) + sum(
        abs(w) for tree, weights in zip(forest.trees, forest.int_weights)
        for w in weights[tree.leaf(x)] or ())
    return margin(forest, x) * CLOSE.denominator <= weight * CLOSE.numerator


def peer_fuzz(adapter: Any, seconds: float, seed: int, out_dir: str, timeout: float = 60.0,
              progress: bool = True, cases: int | None = None,
              data: PeerData | None = None) -> PeerSummary:
    """Run cases ``0, 1, ...`` of ``seed`` on ``adapter`` for ``seconds`` (or ``cases`` of
    them, whichever ends first): random forests, or the user's forest and rows ``data``;
    failing cases land in ``out_dir``. ``timeout``: the seconds the peer may take per row. A
    signal stops the run; the files saved are whole."""
    version = adapter.version()
    output_dir(out_dir)
    summary = PeerSummary({"name": adapter.name, "version": version},
                          None if data is None else data.title)
    votes = adapter_votes(adapter)
    source = None if data is None else UserSource(data.for_votes(votes))
    start = time.monotonic()
    bar = Progress(f"fuzz {adapter.name}", enabled=progress)
    try:
        k = 0
        while time.monotonic() - start < seconds and (cases is None or k < cases):
            case: Case = make_case(seed, k, votes, adapter_library(adapter),
                                   getattr(adapter, "max_classes", None)) if source is None else \
                make_user_case(source, seed, k)
            started = time.monotonic()
            run = run_case(adapter, version, case, full_shape(case), timeout)
            summary.count(run[0], run[2])
            found = failures(run[2])
            if found:
                failure, row = found[0]
                shape, kept, stopped = full_shape(case), run, False
                try:
                    if failure[0] != "timeout":
                        shape, kept = shrink(adapter, version, case, run, failure, row, timeout,
                                             time.monotonic() - started)
                except KeyboardInterrupt:  # a signal while shrinking: saved as found
                    stopped = True
                summary.failures.append(save(out_dir, adapter, case, shape, kept, run[0]))
                bar.write(f"[fuzz] case {k}: {_failure_text(failure, row, run[2])}; saved to "
                          f"{summary.failures[-1]}")
                if stopped:
                    raise KeyboardInterrupt
            k += 1
            timeline_point(summary.timeline, time.monotonic() - start, summary.cases,
                           summary.checks, len(summary.failures))
            bar.note(f"{summary.cases} cases, {summary.rows} rows, "
                     f"{len(summary.failures)} failures")
            if cases is not None:
                bar(k, cases)
            elif math.isfinite(seconds):
                bar(min(round(time.monotonic() - start), round(seconds)), round(seconds))
    except KeyboardInterrupt:  # the case in progress is lost (but for a failure found)
        summary.interrupted = True
    finally:
        bar.close()
        summary.seconds = time.monotonic() - start
        timeline_point(summary.timeline, summary.seconds, summary.cases, summary.checks,
                       len(summary.failures), last=True)
    return summary


def _failure_text(failure: Failure, row: int, report: PeerReport) -> str:
    kind, name, what = failure
    if kind in FAILING:
        return f"{kind} {name}: {what}"
    error = next(f["error"] for f in report.failures if f["row"] == row)
    return f"the peer's {kind}: {error[:200]}"


def exit_code(summary: PeerSummary) -> int:
    """1 for a broken promise, a missing item or a dispute; else 0. The peer's crashes and
    timeouts are findings of their own kind, counted and saved, as every report treats them
    (:mod:`rfcircuits.crosscheck.peers.promises`)."""
    return int(any(summary.findings[k] for k in FAILING))


def summary_json(summary: PeerSummary) -> str:
    return json.dumps(asdict(summary), ensure_ascii=False)


def summary_text(summary: PeerSummary) -> str:
    s, f = summary, summary.findings
    rate = s.cases / max(1e-9, s.seconds)
    lines = [
        f"fuzz --adapter {s.peer['name']} ({s.peer['version']})"
        + (f" on {s.source}" if s.source else "") + f": {counted(s.cases, 'case')} "
        f"({rate:.2f}/s), {counted(s.rows, 'row')} ({counted(s.ties['exact'], 'exact tie')}, "
        f"{s.ties['margin_1']} one vote from a tie"
        + (f", {s.ties['close']} within {float(CLOSE):.1%} of the vote" if s.ties["close"]
           else "") + "; decided " + ", ".join(
            f"{c} {n}" for c, n in sorted(s.classes.items())) + f"), "
        f"{counted(s.checks, 'item')} graded in {s.seconds:.0f} s"
        + (" (interrupted)" if s.interrupted else ""),
        f"findings: {counted(f['broken'], *PROMISE_FAILING['broken'])}, "
        f"{counted(f['missing'], *PROMISE_FAILING['missing'])}, "
        f"{counted(f['disputed'], *PROMISE_FAILING['disputed'])}"
        + (f", {counted(f['unreachable'], 'finding')} resting only on states no float32 input "
           "reaches (not broken promises)" if f["unreachable"] else "")
        + (f", {counted(f['definition'], 'finding')} resting on the peer's model of the forest "
           "(differences of definition shown by a world, not broken promises)"
           if f["definition"] else "")
        + f"; the peer failed on {counted(f['errors'], 'row')} and timed out on "
        f"{f['timeouts']}"]
    if s.differences:
        lines.append("differences of definition (not errors): " + "; ".join(
            f"{k} {v}" for k, v in sorted(s.differences.items())))
    if s.failures:
        lines.append("failing cases (repro files):")
        lines.extend(f"  {path}" for path in s.failures)
    problems = [counted(f[k], *PROMISE_FAILING[k]) for k in FAILING if f[k]]
    failed = [counted(f[k], *label) for k, label in
              (("errors", ("row the peer crashed on", "rows the peer crashed on")),
               ("timeouts", ("timeout", "timeouts"))) if f[k]]
    lines.append("result: " + ("; ".join(problems) + " (exit 1)" if problems else
                               "every promise kept") + "".join(f"; {t}" for t in failed))
    return "\n".join(lines)
