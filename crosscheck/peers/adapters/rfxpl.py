"""RFxpl adapter: every AXp and CXp of RFxpl (Izza & Marques-Silva, "On Explaining Random
Forests with SAT", IJCAI 2021), graded against what it promises.

**RFxpl is source only** (github.com/izzayacine/RFxpl, MIT; not on the package index): the adapter
takes the path of the user's checkout, as ``RfxplAdapter(path=...)`` or the environment variable
``RFCIRCUITS_RFXPL``, and runs it in a worker subprocess (``python -m
rfcircuits.crosscheck.peers.adapters.rfxpl WORKDIR``,
:class:`~rfcircuits.crosscheck.peers.adapters.worker.Worker`) with the checkout on its
``sys.path``: a row that overruns ``task.timeout`` is a ``timeout`` answer and a fresh worker takes
the next row.

**What it needs on current Python** (3.10 and later): ``pip install anytree namedlist`` (its
imports), and two shims the worker applies before importing it (:func:`apply_shims`):
namedlist 1.8 still uses ``collections.Mapping`` and ``collections.Sequence`` (moved to
``collections.abc`` in Python 3.3, removed in 3.10), so they are aliased; and python-sat 1.9's
``pysat.pb`` refuses to import without the optional ``pindakaas`` package, which RFxpl imports
for its weighted-vote (MaxSAT) explainer only: without pindakaas a stand-in module is put in
its place (the majority-vote SAT explainer used here never touches it; ``pip install
pindakaas`` brings the real one).

**Model.** RFxpl encodes the trees of a fitted scikit-learn forest itself (``XRF`` reads
``model.estimators()``, the ``estimators_`` of ``RandomForestClassifier``), so the task's
fitted model is handed over as it is, nothing is retrained; each row is given as the model
reads it (float32 values, :func:`~rfcircuits.forest.read_values`), so RFxpl's threshold tests
agree with scikit-learn's. Explanations come from its Python API, ``XRF(...).enumerate(x,
"abd" | "con", "sat", ...)`` (the majority-vote SAT encoding; its command line prints no
enumeration): AXps by its MARCO-style hitting-set loop, CXps by LBX's MCS enumeration.

**Mapping.** An AXp is a set of features fixed at the instance's values that keeps the
prediction: our sufficient reason (RFxpl's intervals are cut at every threshold of the forest,
as our states are, with one difference: RFxpl cuts at every distinct float64 threshold, while
scikit-learn's trees read float32 inputs, so two thresholds that no float32 value separates,
such as 0.5099999904632568 and 0.510000005364418, bound an interval no input reaches; our
importer merges them. A CXp that needs that interval is graded not necessary, and an AXp
that keeps the feature because of it not minimal: both hold for the model as scikit-learn
runs it). A CXp is a set of features whose change can change the prediction, to any
class: our necessary reason under ties ``first`` (RFxpl predicts the lowest class index among
tied ones, as ``numpy.argmax``). RFxpl's prediction is passed on as ``decision``, so a
disagreement with the forest is graded too. Both are promised formal, minimal over features
and complete (it enumerates all).

**The weighted-vote mode** (``rfxpl-maxsat``, ``RfxplAdapter(mode="maxsat")``; Izza &
Marques-Silva's MaxSAT encoding of the averaged vote, ``-E maxsat`` on RFxpl's command line —
its README's ``-e mx`` sets an option nothing reads) explains the decision ``predict`` makes,
so the task's forest has soft votes (``votes = "soft"``). Its promise, read in ``xrf/``:

- the class explained (``enc.target``) is the argmax of the trees' float64 class
  probabilities (``Forest.predict_proba``: per tree ``value / sum(value)``, summed in tree
  order, divided by the number of trees, first on ties), ``predict``'s arithmetic;
- every leaf's probability is rounded to three decimals for the reasoning,
  ``round(Decimal(str(p)), 3)`` (``MXEncoder.encode_predict``, ``relax=3``; ``round`` on a
  ``Decimal`` rounds half to even), and a world is a counterexample when another class's
  rounded sum *reaches* the target's (``MXReasoner.get_winner``: ``>=``): an AXp makes the
  target beat every other class strictly in the rounded sums, a CXp lets some class reach it;
- AXps (``MXExplainer.enumerate(x, "abd")``) and CXps (``"con"``) are enumerated completely,
  subset-minimal over features.

So the answers are graded against the exact sums under ties ``first`` (``ties = "strict"``),
and the grader is given RFxpl's model (:meth:`RfxplAdapter.peer_model`: the forest with each
leaf's probabilities rounded as RFxpl rounds them, in thousandths, and the strict rule): a
finding that holds there is a difference of definition shown by a world whose exact sums and
rounded sums decide apart (:mod:`rfcircuits.crosscheck.peers.modelling`). Where the rounded sums
at the instance itself do not make the target win strictly (a near tie the rounding flips,
an exact tie), RFxpl's own oracle finds the whole instance no explanation: no AXp, every
feature a CXp. The adapter answers nothing there (``none``, with both sums), which the grader
shows by that instance. ``XRF.enumerate(..., "maxsat")`` yields nothing (the method is a
generator, so the MaxSAT branch's ``return`` ends it empty), and ``XRF`` keeps the encoding
of the first instance it is given: the worker encodes each row with a fresh ``XRF`` and calls
``MXExplainer.enumerate`` itself. ``smallest=True`` is not used (its MaxSAT CXp weights are
Decimals, which ``PBEnc`` cannot take).
"""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any

import numpy as np

from rfcircuits.errors import InputError
from rfcircuits.forest import Forest, Instance, Leaf, read_values
from rfcircuits.sklearn_import import build_forest
from rfcircuits.crosscheck.peers.adapters.base import (Answer, PeerUnavailable, Promise, Task,
                                                       error_text)
from rfcircuits.crosscheck.peers.adapters.worker import Worker, reply
from rfcircuits.crosscheck.peers.modelling import PeerModel, winners

#: The environment variable naming the checkout when no ``path`` is given.
ENV = "RFCIRCUITS_RFXPL"
#: A file every RFxpl checkout has (its Python API).
API_FILE = os.path.join("xrf", "xforest.py")
#: Packages RFxpl imports that are not ours (module name → what to install).
REQUIRES = {"anytree": "anytree", "namedlist": "namedlist", "pysat": "python-sat",
            "six": "six", "sklearn": "scikit-learn"}
#: This module, run as the worker.
WORKER_MODULE = "rfcircuits.crosscheck.peers.adapters.rfxpl"
#: Seconds a worker may take to import RFxpl and load the model.
STARTUP_SECONDS = 120.0
#: How many explanations of a kind RFxpl is asked for: all of them.
ALL = 1 << 62
#: RFxpl's encodings: the majority vote (SAT) and the averaged vote (MaxSAT).
MODES = ("sat", "maxsat")
#: Decimals RFxpl's MaxSAT encoding keeps of each leaf probability (``MXEncoder``'s relax).
DECIMALS = 3


def checkout(path: str | None) -> str:
    """The RFxpl checkout: ``path``, else ``$RFCIRCUITS_RFXPL``; PeerUnavailable when neither
    is set or the directory holds no RFxpl."""
    where = path or os.environ.get(ENV)
    if not where:
        raise PeerUnavailable(f"RFxpl is not configured: give the path of a checkout of "
                              f"github.com/izzayacine/RFxpl with --adapter-option path=DIR "
                              f"(verify-peer, fuzz --adapter; RfxplAdapter(path=DIR) in "
                              f"Python) or in the environment variable {ENV}")
    if not os.path.isfile(os.path.join(where, API_FILE)):
        via = "--adapter-option path" if path else ENV
        raise PeerUnavailable(f"{where} (the RFxpl {via}): not an RFxpl checkout (no "
                              f"{API_FILE})")
    return os.path.abspath(where)


def source_version(path: str) -> str:
    """The git commit of the checkout at ``path`` (when it is the top of a git work tree),
    else ``source``."""
    try:
        done = subprocess.run(["git", "-C", path, "rev-parse", "--show-toplevel", "HEAD"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "source"
    lines = done.stdout.split()
    if done.returncode or len(lines) != 2 or \
            os.path.realpath(lines[0]) != os.path.realpath(path):
        return "source"
    return lines[1]


def literals(forest: Forest, x: Instance, features: Sequence[int]) -> list[dict[str, Any]]:
    """The instance's literals on ``features`` (an AXp or a CXp) in the explanations format."""
    return [{"feature": forest.features[f].name, "states": [forest.features[f].states[x[f]]]}
            for f in sorted(features)]


def record(forest: Forest, x: Instance, prediction: int, axps: Sequence[Sequence[int]],
           cxps: Sequence[Sequence[int]]) -> dict[str, Any]:
    """RFxpl's answer for one row as an explanation record (module docstring: the mapping)."""
    return {"decision": forest.classes[prediction],
            "sufficient_reasons": [literals(forest, x, a) for a in axps],
            "necessary_reasons": [literals(forest, x, c) for c in cxps]}


def rounded_probabilities(tree: Any) -> np.ndarray:
    """Per node and class of a fitted scikit-learn tree (``tree_``), the leaf probability as
    RFxpl's MaxSAT encoding weighs it, in thousandths (integers): ``value / sum(value)`` per
    node as ``xrf/tree.py`` computes it (a zero sum left as it is), its shortest decimal
    rounded half to even to three places (module docstring)."""
    values = tree.value.reshape(tree.value.shape[0], tree.value.shape[2])
    normalizer = values.sum(axis=1)[:, np.newaxis]
    normalizer[normalizer == 0.0] = 1.0
    probs = values / normalizer
    return np.array([[int(round(Decimal(str(p)), DECIMALS).scaleb(DECIMALS)) for p in row]
                     for row in probs], dtype=np.int64)


def rounded_forest(forest: Forest, model: Any) -> Forest | None:
    """``forest`` (imported from the fitted forest ``model``) with RFxpl's MaxSAT leaf weights:
    each leaf's class probabilities in rounded thousandths (:func:`rounded_probabilities`);
    None when ``forest`` is not ``model``'s (other states)."""
    estimators = getattr(model, "estimators_", None)
    if estimators is None:
        return None
    rounded = [rounded_probabilities(est.tree_) for est in estimators]

    def leaf_of(t: int) -> Any:
        def leaf(tree: Any, k: int) -> Leaf:
            weights = tuple(float(w) for w in rounded[t][k])
            return Leaf(int(np.argmax(tree.value[k, 0, :])), weights)
        return leaf

    try:
        ours = build_forest([est.tree_ for est in estimators],
                            [leaf_of(t) for t in range(len(estimators))],
                            [f.name for f in forest.features], list(forest.classes),
                            forest.input_dtype, "soft")
    except InputError:
        return None
    return ours if ours.features == forest.features else None


def thousandths(sums: Sequence[int]) -> list[str]:
    """Sums in thousandths as RFxpl's Decimals print them (``2.334``)."""
    return [str(Decimal(v).scaleb(-DECIMALS)) for v in sums]


class RfxplAdapter:
    """RFxpl's AXps and CXps (module docstring): of the majority vote (``mode`` ``sat``, the
    adapter ``rfxpl``) or of the averaged vote (``maxsat``, ``rfxpl-maxsat``)."""

    promises = {"sufficient_reasons": Promise("formal", "features", "all"),
                "necessary_reasons": Promise("formal", "features", "all")}

    def __init__(self, path: str | None = None, mode: str = "sat") -> None:
        if mode not in MODES:
            raise InputError(f"RFxpl mode {mode!r} is not one of {', '.join(MODES)}")
        self.path = path
        self.mode = mode
        self.name = "rfxpl" if mode == "sat" else "rfxpl-maxsat"
        # the majority vote, ties first; the averaged vote, strictly in rounded sums
        self.ties = "first" if mode == "sat" else "strict"
        self.votes = "hard" if mode == "sat" else "soft"

    def peer_model(self, task: Task) -> PeerModel | None:
        """The weighted-vote mode's model of the task's forest: leaf probabilities rounded to
        three decimals, the strict rule (module docstring); None in the majority-vote mode,
        or when the task's forest is not its model's."""
        if self.mode == "sat" or task.forest.voting != "soft":
            return None
        rounded = rounded_forest(task.forest, task.model)
        return None if rounded is None else PeerModel(
            rounded, "strict", "RFxpl sums each leaf's class probabilities rounded to three "
            "decimals (half to even) and asks its class to beat every other strictly",
            thousandths)

    def version(self) -> str:
        """The checkout's git commit, or ``source``; PeerUnavailable when it is not configured
        or a package RFxpl imports is missing."""
        where = checkout(self.path)
        missing = [pip for module, pip in REQUIRES.items()
                   if importlib.util.find_spec(module) is None]
        if missing:
            raise PeerUnavailable("RFxpl needs packages that are not installed: pip install "
                                  + " ".join(missing))
        return source_version(where)

    def explain(self, task: Task) -> Iterator[Answer]:
        """One answer per row, in row order; each row may take ``task.timeout`` seconds."""
        where = checkout(self.path)
        rows = read_values(np.asarray(task.rows, dtype=np.float64), task.forest.input_dtype,
                           lambda i, j: f"row {i + 1}, feature {task.feature_names[j]!r}")
        with tempfile.TemporaryDirectory(prefix="rfcircuits-rfxpl-") as workdir:
            with open(os.path.join(workdir, "job.pickle"), "wb") as handle:
                pickle.dump({"path": where, "model": task.model, "rows": rows.tolist(),
                             "mode": self.mode}, handle)
            model = self.peer_model(task)
            worker: Worker | None = None
            try:
                for i, x in enumerate(task.instances):
                    if worker is None:
                        worker = Worker(WORKER_MODULE, workdir)
                        if worker.ask(None, STARTUP_SECONDS) is None:
                            raise PeerUnavailable(f"RFxpl ({where}) did not start: "
                                                  f"{worker.error()}")
                    start = time.perf_counter()
                    answer = worker.ask({"i": i}, task.timeout)
                    if answer is None:
                        dead, why = worker.dead, worker.error()
                        worker.stop()
                        worker = None
                        seconds = time.perf_counter() - start
                        yield Answer(i, "error", None, seconds, f"RFxpl died: {why}") if dead \
                            else Answer(i, "timeout", None, seconds,
                                        f"overran {task.timeout:g} s")
                    elif answer["status"] != "ok":
                        yield Answer(i, "error", None, answer["seconds"], answer["error"])
                    elif model is not None and winners(model.forest.votes(x), "strict") != \
                            [answer["prediction"]]:
                        yield Answer(i, "none", None, answer["seconds"],
                                     unexplained(task.forest, model, x, answer["prediction"]))
                    else:
                        yield Answer(i, "ok", record(task.forest, x, answer["prediction"],
                                                    answer["axps"], answer["cxps"]),
                                     answer["seconds"])
            finally:
                if worker is not None:
                    worker.stop()


def unexplained(forest: Forest, model: PeerModel, x: Instance, target: int) -> str:
    """Why the weighted-vote mode explains nothing at ``x``: its rounded sums do not make its
    class ``target`` win strictly (module docstring)."""
    exact = ", ".join(f"{c} {v!r}" for c, v in zip(forest.classes,
                                                    forest.readable_votes(forest.votes(x))))
    rounded = ", ".join(f"{c} {v}" for c, v in zip(forest.classes,
                                                    model.show(model.forest.votes(x))))
    return (f"RFxpl's rounded sums ({rounded}) do not make its class {forest.classes[target]} "
            f"beat every other strictly, so its oracle finds no explanation (exact sums "
            f"{exact})")


# ---------------------------------------------------------------------------------------------
# The worker (runs in a subprocess; the only code that imports RFxpl).


def apply_shims() -> None:
    """Let RFxpl import on current Python (module docstring)."""
    import collections
    import collections.abc
    import types

    for name in ("Mapping", "Sequence"):  # namedlist 1.8, at RFxpl's import
        if not hasattr(collections, name):
            setattr(collections, name, getattr(collections.abc, name))
    try:
        importlib.import_module("pysat.pb")
    except (ImportError, AssertionError):  # python-sat 1.9 without pindakaas asserts

        class NoPseudoBoolean:
            def __getattr__(self, name: str) -> Any:
                raise ImportError("pysat.pb needs pindakaas (pip install pindakaas)")

        stand_in = types.ModuleType("pysat.pb")
        stand_in.PBEnc = NoPseudoBoolean()  # type: ignore[attr-defined]
        sys.modules["pysat.pb"] = stand_in


class _Model:
    """What RFxpl's ``XRF`` reads of its model wrapper: the fitted trees."""

    def __init__(self, model: Any) -> None:
        self.forest = model

    def estimators(self) -> list[Any]:
        return list(self.forest.estimators_)


def _worker_main(workdir: str) -> None:
    """Serve rows: read ``{"i"}`` lines on stdin, answer with every AXp and CXp of row i."""
    with open(os.path.join(workdir, "job.pickle"), "rb") as handle:
        job = pickle.load(handle)
    apply_shims()
    sys.path.insert(0, job["path"])  # RFxpl imports its own top-level modules (data.py)
    from xrf import XRF

    model = _Model(job["model"])
    n_features = int(job["model"].n_features_in_)
    names = [f"f{j}" for j in range(n_features)]  # RFxpl's own names (no "_": not one-hot)
    classes = [str(c) for c in range(len(job["model"].classes_))]
    reply({"ready": True})
    for line in sys.stdin:
        i = json.loads(line)["i"]
        x = np.asarray(job["rows"][i], dtype=np.float64)
        answer: dict[str, Any] = {"i": i, "status": "ok"}
        start = time.perf_counter()
        try:
            xrf = XRF(model, names, classes)
            if job["mode"] == "sat":
                axps = xrf.enumerate(x, "abd", "sat", False, ALL)
                cxps = xrf.enumerate(x, "con", "sat", False, ALL)
            else:  # XRF.enumerate yields nothing for maxsat (module docstring)
                from xrf.explain import MXExplainer

                xrf.encode(x, "maxsat")
                axps = MXExplainer(xrf.enc, xrf.ffnames, [], classes, verb=0).enumerate(
                    x, "abd", False, ALL)[0]  # (AXps, CXps found on the way)
                cxps = MXExplainer(xrf.enc, xrf.ffnames, [], classes, verb=0).enumerate(
                    x, "con", False, ALL)[1]  # (AXps found on the way, CXps)
            answer["axps"] = [[int(f) for f in e] for e in axps]
            answer["cxps"] = [[int(f) for f in e] for e in cxps]
            answer["prediction"] = int(xrf.enc.target)
        except Exception as exc:  # RFxpl's failure on a row is a finding about that row
            answer = {"i": i, "status": "error", "error": error_text(exc)}
        answer["seconds"] = time.perf_counter() - start
        reply(answer)


if __name__ == "__main__":
    _worker_main(sys.argv[1])
