"""PyXAI as an adapter (:mod:`rfcircuits.crosscheck.peers.adapters.base`): its reasons on a
scikit-learn forest, graded against what each reason kind promises
(:mod:`rfcircuits.crosscheck.peers.promises`) by ``verify-peer``, ``verify-pyxai`` and ``fuzz
--adapter``.

**PyXAI is optional.** Nothing here imports it: it runs in a worker subprocess
(``python -m rfcircuits.crosscheck.peers.adapters.pyxai WORKDIR``), because ``import pyxai`` parses
``sys.argv`` and pulls in shap and matplotlib, ``minimal_sufficient_reason`` ignores its time
limit inside C code (the worker's process group is killed when a call overruns the task's
timeout and a fresh worker takes the next call; a kind that overruns :data:`MAX_TIMEOUTS`
times is skipped for the other rows), and its external solvers leave files in ``./tmp`` and
``/tmp`` (the worker runs in a temporary directory, where MUSER's files are redirected too,
removed afterwards). The worker may run in another environment (:data:`PYTHON_ENV`, or the
adapter's ``python`` option): PyXAI pulls about 1.5 GB of dependencies (xgboost, ortools,
shap...) that need not share this environment's versions; that environment needs
rfcircuits too, at this version (the worker is this module).

**Conversion.** The worker returns each reason as PyXAI's binary literals decoded through the
model's own condition map (``feature > threshold`` for a positive literal, ``feature <=
threshold`` for a negative one), so thresholds are exact floats rather than printed text
(``to_features`` prints them as ``f3 <= 2.45`` or ``f1 in ]12.47, 12.78]``). The conditions on
one feature are intersected into the interval ``low < value <= high`` and written as an
``{"feature", "interval"}`` literal, which ``verify`` maps to our interval states. Reasons
are graded at the instance as PyXAI reads it (:func:`pyxai_reading`), which differs from
scikit-learn's float32 reading when a value lies within float32 rounding of a threshold.

**Promises** (:data:`PROMISES`). ``sufficient_reason``, ``minimal_sufficient_reason``,
``majoritary_reason`` and ``minimal_majoritary_reason`` are terms of threshold conditions that
contain the instance — the shape of a ``general_sufficient_reasons`` item, whose ``valid``
(the term implies the decision) is PyXAI's sufficiency, promised by all four. The two
sufficient kinds also promise subset-minimality over conditions (no condition can be
dropped; the minimal one is of minimum size, which implies it); our ``prime`` (no literal can
be widened by any one state) and minimality over features are differences of definition.
Majoritary reasons promise validity only (they are minimal for "a majority of trees agree",
not for implying the decision). ``minimal_contrastive_reason`` (two classes only) is checked
as ``contrastive`` for the other class, projected onto its features: PyXAI promises that
changing them can change the class (``reaches``); its minimum size is over conditions, not
features, so feature minimality is a difference of definition. PyXAI's prediction is graded
too (``decision``). Ties: PyXAI's reasons make the predicted class beat every other strictly
while its prediction breaks ties to the first class (``ties = "strict"``).

**Boosted trees** (:class:`PyxaiBoostedAdapter`: ``pyxai-bt``, ``pyxai-bt-direct``,
``pyxai-bt-contrastive``; PyXAI imports XGBoost classifiers only). The forest is the XGBoost
model with its exact decision (soft votes, :mod:`rfcircuits.boosted_import`), ties ``first``
(PyXAI takes class 1 when the margin exceeds 0). ``tree_specific_reason`` (a randomized greedy
search, the smallest of 50 runs: "subset minimal" for its tree-specific test, not for
sufficiency) and ``direct_reason`` (the union of the instance's paths) promise validity
(``general_sufficient_reasons``, minimal ``none``); ``minimal_contrastive_reason`` promises to
reach the other class (``contrastive``, features projected). With XGBoost 3 the tree-specific
and contrastive reasons take two classes only (a multi-class model's vector ``base_score``
makes PyXAI 2.0.1 raise ``TypeError``): those adapters answer ``none`` there. PyXAI reads a
split ``x >= c`` with ``c`` the float64 of XGBoost's printed float32 condition; the worker maps
it to the tree's own threshold, the float32 below ``c``, and rows are graded at PyXAI's reading
(:func:`pyxai_reading`). PyXAI's model of the forest (:func:`boosted_reading`: leaf values and
base score as float64 decimals, the base score's logit in float64) is declared, so findings
that hold there are differences of definition shown by a world.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pickle
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from rfcircuits.errors import InputError
from rfcircuits.boosted_import import library_of, xgboost_document
from rfcircuits.budget import peak_mb
from rfcircuits.forest import Forest, Instance, Leaf, Tree, instance_to_json, mask_states
from rfcircuits.crosscheck.peers.adapters.base import Answer, Promise, Task, error_text
from rfcircuits.crosscheck.peers.modelling import PeerModel
from rfcircuits.crosscheck.verify import interval_mask
from rfcircuits.crosscheck.peers.adapters.worker import (Worker, installed_version, other_python,
                                                         reply, required_version)

#: Seconds a worker may take to import PyXAI and convert the model.
STARTUP_SECONDS = 300.0
#: This module, run as the worker (``python -m``, :class:`~rfcircuits.crosscheck.peers.adapters.
#: worker.Worker`).
WORKER_MODULE = "rfcircuits.crosscheck.peers.adapters.pyxai"
#: A kind whose calls ran past ``--timeout`` this many times is skipped for the rest.
MAX_TIMEOUTS = 2
#: The environment variable naming the Python of another environment, where PyXAI is
#: installed, for the worker (the adapter's ``python`` option takes precedence).
PYTHON_ENV = "RFCIRCUITS_PYXAI_PYTHON"


def pyxai_python(python: str | None = None) -> str | None:
    """The Python of the environment the worker runs in, when not this one: ``python``, else
    :data:`PYTHON_ENV`'s; None for this interpreter."""
    return other_python(python, PYTHON_ENV)


def pyxai_version(python: str | None = None) -> str | None:
    """The PyXAI version the worker would run (:func:`pyxai_python`), or None when PyXAI is
    not installed there; nothing imports it here. PeerUnavailable when another environment
    has PyXAI but not rfcircuits at this version (the worker runs rfcircuits' module)."""
    return installed_version("pyxai", "PyXAI", pyxai_python(python))


# ---------------------------------------------------------------------------------------------
# Conversion: PyXAI conditions → literals of the explanations format (with intervals).

Condition = tuple[int, bool, float]  # (feature index, value > threshold?, threshold)


def interval_literals(forest: Forest, conditions: Sequence[Condition]) -> list[dict[str, Any]]:
    """One ``{"feature", "interval"}`` literal per feature: the intersection of its
    conditions (``> t`` raises the low bound, ``<= t`` lowers the high one)."""
    bounds: dict[int, list[float | None]] = {}
    for f, greater, t in conditions:
        low, high = bounds.setdefault(f, [None, None])
        if greater:
            bounds[f][0] = t if low is None else max(low, t)
        else:
            bounds[f][1] = t if high is None else min(high, t)
    return [{"feature": forest.features[f].name, "interval": bounds[f]} for f in sorted(bounds)]


def instance_literals(forest: Forest, x: Instance,
                      conditions: Sequence[Condition]) -> list[dict[str, Any]]:
    """The instance's states on the features the conditions mention (a projection)."""
    features = sorted({f for f, _, _ in conditions})
    return [{"feature": forest.features[f].name, "states": [x[f]]} for f in features]


def pyxai_reading(forest: Forest, x: Instance, representation: Sequence[Condition]) -> Instance:
    """The instance as PyXAI reads it: on each feature, the one state that all its conditions
    in PyXAI's binary representation allow. PyXAI compares float64 values with the
    thresholds, scikit-learn (and :func:`instances_from_values`) ``float32(x)``, so a value
    within float32 rounding of a threshold can fall on the other side; ``x`` elsewhere.
    InputError when the conditions allow no state: a value between two thresholds no float32
    separates (merged into one by the importer) lies in no state of the forest."""
    out = list(x)
    for literal in interval_literals(forest, representation):
        f = forest.feature_index[literal["feature"]]
        states = mask_states(interval_mask(forest.features[f], *literal["interval"],
                                           "PyXAI's binary representation", forest.input_dtype))
        if len(states) == 1:
            out[f] = states[0]
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# The worker (runs in a subprocess; the only code that imports PyXAI).


def _worker_main(workdir: str) -> None:
    """Serve PyXAI calls: read ``{"i", "kind"}`` lines on stdin, answer with :func:`reply`."""
    sys.argv = [sys.argv[0]]  # import pyxai parses the command line
    import warnings

    warnings.filterwarnings("ignore")
    with open(os.path.join(workdir, "job.pickle"), "rb") as handle:
        job = pickle.load(handle)
    from pyxai import Explaining, Learning, Tools
    from pyxai.sources.solvers.MUS.MUSERSolver import MUSERSolver

    # MUSER writes /tmp/muser-<hash>.gcnf by default and never removes it.
    MUSERSolver.__init__.__kwdefaults__["filenames"] = os.path.join(workdir, "muser-")
    Tools.set_verbose(0)
    _, model = Learning.ModelIO.import_models(job["model"], instances_type=Learning.TABULAR)
    # PyXAI 2.0.1 names features f1..f<number of *used* features> when the forest was fitted
    # without names, so a theory over a forest that skips a feature fails (IndexError): name
    # them all, as its default would (the label last).
    n_features = int(job["model"].n_features_in_)
    model.learner_information.feature_names = [f"f{i + 1}" for i in range(n_features)] + ["p"]
    types = {"numerical": Learning.DEFAULT} if job["theory"] else None
    explainer = Explaining.initialize(model, features_type=types)
    decode: dict[int, tuple[int, float]] = {}
    for (feature, operator, threshold), info in model.map_features_to_id_binaries.items():
        name = str(getattr(operator, "value", operator))
        if name == "GE":  # XGBoost's x >= c, float32 inputs: x > the float32 below c
            threshold = float(np.nextafter(np.float32(threshold), np.float32(-np.inf)))
        elif name != "GT":
            raise SystemExit(f"unsupported PyXAI condition operator {operator!r}")
        decode[int(info[0])] = (int(feature) - 1, float(threshold))

    def conditions(literals: Sequence[int]) -> list[Condition]:
        return [(decode[abs(v)][0], v > 0, decode[abs(v)][1]) for v in literals]

    limit = job["timeout"]
    calls = {
        "sufficient_reason": lambda: explainer.sufficient_reason(time_limit=limit),
        "minimal_sufficient_reason": lambda: explainer.minimal_sufficient_reason(time_limit=limit),
        # A greedy (polynomial) algorithm: given a time limit it searches until the limit.
        "majoritary_reason": lambda: explainer.majoritary_reason(
            n_iterations=50, seed=job["seed"] + 1),  # seed 0 would mean a random seed
        "minimal_majoritary_reason": lambda: explainer.minimal_majoritary_reason(
            time_limit=limit),
        "minimal_contrastive_reason": lambda: explainer.minimal_contrastive_reason(
            time_limit=math.ceil(limit)),  # its MIP solver of boosted trees takes int seconds
        # boosted trees: the greedy tree-specific reason, the smallest of 50 randomized runs
        # (given a time limit it searches until the limit, as majoritary_reason does)
        "tree_specific_reason": lambda: explainer.tree_specific_reason(
            n_iterations=50, seed=job["seed"] + 1),
        "direct_reason": lambda: explainer.direct_reason(),
    }
    current = None
    reply({"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        i, kind = request["i"], request["kind"]
        answer: dict[str, Any] = {"i": i, "kind": kind}
        if current != i:
            explainer.set_instance(job["rows"][i])
            current = i
        answer["prediction"] = int(explainer.cpp_target_prediction)
        answer["representation"] = conditions(explainer.binary_representation)
        start = time.perf_counter()
        try:
            reason = calls[kind]()
            answer["status"] = "none" if reason is None else "ok"
            answer["reason"] = None if reason is None else conditions(reason)
            answer["approximate"] = explainer.elapsed_time == Explaining.TIMEOUT
        except Exception as exc:  # PyXAI's failure is a finding, reported per call
            answer.update(status="error", error=error_text(exc))
        answer["seconds"] = time.perf_counter() - start
        answer["peak_mb"] = peak_mb()
        reply(answer)


def run_pyxai(model: Any, rows: np.ndarray, kinds: Sequence[str], timeout: float,
              theory: bool = True, seed: int = 0,
              python: str | None = None) -> Iterator[dict[str, Any]]:
    """Every PyXAI call ``(row, kind)``, answered by worker subprocesses (run by
    :func:`pyxai_python`), each answer as soon as it is known; an answer has ``status`` ok /
    none / error / timeout / skipped (after :data:`MAX_TIMEOUTS`). Closing the generator
    stops the worker."""
    timeouts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="rfcircuits-pyxai-") as workdir:
        with open(os.path.join(workdir, "job.pickle"), "wb") as handle:
            pickle.dump({"model": model, "rows": [list(map(float, r)) for r in rows],
                         "timeout": timeout, "theory": theory, "seed": seed}, handle)
        worker: Worker | None = None
        try:
            for i in range(len(rows)):
                for kind in kinds:
                    if timeouts[kind] >= MAX_TIMEOUTS:
                        yield {"i": i, "kind": kind, "status": "skipped"}
                        continue
                    if worker is None:
                        worker = Worker(WORKER_MODULE, workdir, pyxai_python(python))
                        if worker.ask(None, STARTUP_SECONDS) is None:
                            raise InputError("the PyXAI worker did not start: "
                                             + worker.error())
                    answer = worker.ask({"i": i, "kind": kind}, timeout + 10.0)
                    if answer is None:
                        dead, why = worker.dead, worker.error()
                        worker.stop()
                        worker = None
                        if dead:
                            answer = {"i": i, "kind": kind, "status": "error",
                                      "error": "worker died: " + why}
                        else:
                            timeouts[kind] += 1
                            answer = {"i": i, "kind": kind, "status": "timeout",
                                      "seconds": timeout}
                    yield answer
        finally:
            if worker is not None:
                worker.stop()


# ---------------------------------------------------------------------------------------------
# The adapter.

#: What each PyXAI reason kind promises (module docstring).
PROMISES = {
    "sufficient_reason": ("general_sufficient_reasons", Promise("formal", "conditions", "one")),
    "minimal_sufficient_reason": ("general_sufficient_reasons",
                                  Promise("formal", "conditions", "one")),
    "majoritary_reason": ("general_sufficient_reasons", Promise("formal", "none", "one")),
    "minimal_majoritary_reason": ("general_sufficient_reasons", Promise("formal", "none", "one")),
    "minimal_contrastive_reason": ("contrastive", Promise("formal", "none", "one")),
}
#: What each of PyXAI's explainers of boosted trees promises, and its adapter's name
#: (:class:`PyxaiBoostedAdapter`).
BOOSTED = {
    "tree_specific_reason": ("general_sufficient_reasons", Promise("formal", "none", "one"),
                             "pyxai-bt"),
    "direct_reason": ("general_sufficient_reasons", Promise("formal", "none", "one"),
                      "pyxai-bt-direct"),
    "minimal_contrastive_reason": ("contrastive", Promise("formal", "none", "one"),
                                   "pyxai-bt-contrastive"),
}


class PyxaiAdapter:
    """One PyXAI reason kind (:data:`PROMISES`) as an adapter
    (:mod:`rfcircuits.crosscheck.peers.adapters.base`): ``pyxai``, ``pyxai-minimal``,
    ``pyxai-majoritary``, ``pyxai-minimal-majoritary``, ``pyxai-contrastive``. ``theory``:
    whether PyXAI uses its domain theory for numeric features (module docstring); ``python``:
    the Python of another environment where PyXAI is installed (default
    :data:`PYTHON_ENV`'s, else this one)."""

    ties = "strict"
    votes = "hard"

    def __init__(self, kind: str = "sufficient_reason", theory: bool = True,
                 python: str | None = None) -> None:
        if kind not in PROMISES:
            raise InputError(f"PyXAI reason kind {kind!r} is not one of {', '.join(PROMISES)}")
        self.kind = kind
        self.theory = bool(theory)
        self.python = python
        self.field, promise = PROMISES[kind]
        self.promises = {self.field: promise}
        self.name = "pyxai" if kind == "sufficient_reason" else \
            "pyxai-" + kind.removesuffix("_reason").replace("_", "-")

    def version(self) -> str:
        return required_version("pyxai", "PyXAI", self.python, PYTHON_ENV,
                                "pip install pyxai, or pip install '.[pyxai]'")

    def explain(self, task: Task) -> Iterator[Answer]:
        forest = task.forest
        if self.field == "contrastive" and len(forest.classes) != 2:
            for i in range(len(task.rows)):
                yield Answer(i, "none", error="PyXAI's contrastive reasons need two classes")
            return
        for a in run_pyxai(task.model, task.rows, [self.kind], task.timeout, self.theory,
                           task.seed, self.python):
            i = a["i"]
            if a["status"] != "ok":
                status = {"skipped": "timeout"}.get(a["status"], a["status"])
                yield Answer(i, status, seconds=a.get("seconds", 0.0),
                             error=a.get("error", "skipped after repeated timeouts"
                                         if a["status"] == "skipped" else ""))
                continue
            try:
                x = pyxai_reading(forest, task.instances[i],
                                  [tuple(c) for c in a["representation"]])
            except InputError as exc:
                # PyXAI reads float64 values, the forest float32: a value between two
                # thresholds no float32 separates lies in a state the forest does not have
                yield Answer(i, "none", seconds=a["seconds"],
                             error=f"not graded: PyXAI reads the row in no state of the forest "
                                   f"({exc})")
                continue
            reason = [tuple(c) for c in a["reason"]]
            record: dict[str, Any] = {"instance": instance_to_json(forest, x),
                                      "decision": forest.classes[a["prediction"]]}
            if self.field == "contrastive":
                other = 1 - a["prediction"]
                record["contrastive"] = {forest.classes[other]:
                                         [instance_literals(forest, x, reason)]}
            else:
                record[self.field] = [interval_literals(forest, reason)]
            yield Answer(i, "ok", record, a["seconds"],
                         "PyXAI's time limit was hit" if a.get("approximate") else "")


class PyxaiBoostedAdapter(PyxaiAdapter):
    """One of PyXAI's explainers of boosted trees (:data:`BOOSTED`) on an XGBoost classifier:
    ``pyxai-bt`` (tree-specific reasons), ``pyxai-bt-direct``, ``pyxai-bt-contrastive``
    (module docstring, "Boosted trees")."""

    votes = "soft"
    library = "xgboost"
    ties = "first"

    def __init__(self, kind: str = "tree_specific_reason", theory: bool = True,
                 python: str | None = None) -> None:
        if kind not in BOOSTED:
            raise InputError(f"PyXAI's boosted-tree reason kind {kind!r} is not one of "
                             f"{', '.join(BOOSTED)}")
        self.kind, self.theory, self.python = kind, bool(theory), python
        self.field, promise, self.name = BOOSTED[kind]
        self.promises = {self.field: promise}
        # with XGBoost 3 its tree-specific and contrastive reasons take two classes only
        self.max_classes = None if kind == "direct_reason" else 2

    def peer_model(self, task: Task) -> PeerModel | None:
        """PyXAI's reading of the XGBoost model (:func:`boosted_reading`)."""
        return boosted_reading(task.forest, task.model)

    def explain(self, task: Task) -> Iterator[Answer]:
        why = "" if library_of(task.model) == "xgboost" else \
            "PyXAI 2.0.1 explains boosted trees of XGBoost only (scikit-learn's and LightGBM's " \
            "classifiers are not supported)"
        if not why and self.max_classes and len(task.forest.classes) > self.max_classes:
            why = "PyXAI 2.0.1's tree-specific and contrastive reasons of boosted trees need " \
                  "two classes (with XGBoost 3 it raises TypeError: must be real number, not " \
                  "list)"
        if why:
            for i in range(len(task.rows)):
                yield Answer(i, "none", error=why)
            return
        yield from super().explain(task)


def boosted_reading(forest: Forest, model: Any) -> PeerModel | None:
    """The forest of an XGBoost ``model`` as PyXAI reads it: its leaf values and base score as
    the float64 numbers that their decimals in the model's JSON stand for (XGBoost's are the
    float32 numbers the decimals print), the base score's margin (a binary model's logit)
    computed in float64; its prediction takes class 1 when the margin exceeds 0, else the
    first class of largest score (``BoostedTrees._scores_to_probabilities``). None when the
    model is no XGBoost classifier."""
    if library_of(model) != "xgboost":
        return None
    document = xgboost_document(model)
    read: dict[float, float] = {}  # XGBoost's float32 number -> PyXAI's float64 one
    for tree in document["learner"]["gradient_booster"]["model"]["trees"]:
        for v in tree["split_conditions"]:
            read[float(np.float32(v))] = float(v)
    base = json.loads(document["learner"]["learner_model_param"]["base_score"])
    if len(forest.classes) == 2:
        init = (0.0, float(-np.log(1 / base[0] - 1)) if base[0] else 0.0)
    else:
        init = tuple(float(b) for b in (base if len(base) > 1 else base * len(forest.classes)))

    def leaf(node: Any) -> Any:
        if type(node) is not Leaf:
            return node
        return Leaf(node.label, tuple(read.get(w, w) for w in node.weights))

    trees = [Tree(tuple(leaf(n) for n in t.nodes)) for t in forest.trees]
    return PeerModel(dataclasses.replace(forest, trees=tuple(trees), init=init,
                                         sum_dtype="float64"), "first",
                     "PyXAI reads XGBoost's leaf values and base score as the float64 numbers "
                     "of their printed decimals (XGBoost's are float32) and takes the base "
                     "score's logit in float64", lambda sums: [repr(v) for v in sums])


if __name__ == "__main__":
    _worker_main(sys.argv[1])
