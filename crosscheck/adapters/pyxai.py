"""PyXAI adapter: PyXAI's reasons on a scikit-learn forest, graded by ``verify``.

``rfcircuits verify-pyxai --dataset iris|wine|breast-cancer`` trains a scikit-learn
``RandomForestClassifier`` on a dataset bundled with scikit-learn (:func:`rfcircuits.datasets.
train_forest`), imports it into our forest model (every threshold a tree uses cuts its
feature's states), runs PyXAI on K rows of the whole dataset (:func:`pick_rows`: drawn with
the seed, or with ``--pick margin`` the rows closest to a vote tie of the forest), and grades
every reason PyXAI returns with :func:`rfcircuits.crosscheck.verify.verify` (tie policy
``first``), by the SAT oracle alone (:data:`GRADED`): PyXAI returns one reason per call, so
completeness is not asked.

**PyXAI is optional.** Nothing here imports it: it runs in a worker subprocess
(``python -m rfcircuits.crosscheck.adapters.pyxai WORKDIR``), because ``import pyxai`` parses
``sys.argv`` and pulls in shap and matplotlib, ``minimal_sufficient_reason`` ignores its time
limit inside C code (the worker's process group is killed when a call overruns ``--timeout``
and a fresh worker takes the next call), and its external solvers leave files in ``./tmp`` and
``/tmp`` (the worker runs in a temporary directory, where MUSER's files are redirected too,
removed afterwards).

**Conversion.** The worker returns each reason as PyXAI's binary literals decoded through the
model's own condition map (``feature > threshold`` for a positive literal, ``feature <=
threshold`` for a negative one), so thresholds are exact floats rather than printed text
(``to_features`` prints them as ``f3 <= 2.45`` or ``f1 in ]12.47, 12.78]``). The conditions on
one feature are intersected into the interval ``low < value <= high`` and written as an
``{"feature", "interval"}`` literal, which ``verify`` maps to our interval states. Reasons
are graded at the instance as PyXAI reads it (:func:`pyxai_reading`), which differs from
scikit-learn's float32 reading when a value lies within float32 rounding of a threshold.

**Fields** each PyXAI reason kind is checked as (why, and what PyXAI promises):

- ``sufficient_reason``, ``minimal_sufficient_reason``, ``majoritary_reason``,
  ``minimal_majoritary_reason`` → ``general_sufficient_reasons`` with the literals as PyXAI
  states them: a PyXAI reason is a term of threshold conditions, each containing the
  instance's value and possibly more states (``x3 <= 2.45``) — exactly the shape of a GSR
  literal, and GSR's ``valid`` (the term implies Δ) is PyXAI's sufficiency. PyXAI promises
  validity for all four. Its minimality (the two sufficient kinds) is subset-minimality of
  the instance's conditions, which is not our ``prime`` (no literal can be widened by any one
  state): a subset-minimal reason may keep a tighter threshold than needed, or miss a
  widening that is no interval. ``check_gsr``'s ``variable_minimal`` (no implicant of GR on
  fewer features; independent of ``prime``, so a failure of ``prime`` is counted once) is
  minimality over features, as is the projection's ``minimal`` below. Majoritary reasons are
  implicants, not necessarily prime ones. The same reasons projected onto their features
  (``x[X]`` on every feature they mention) are also checked as ``sufficient_reasons``:
  sufficiency follows from validity; ``minimal`` is SR minimality over features, which
  PyXAI does not promise.
- ``minimal_contrastive_reason`` (PyXAI: two classes only) → ``contrastive`` for the other
  class, projected onto its features (our CEs are sets of features whose change can reach
  the target): PyXAI promises ``reaches`` and minimum size over conditions.

The exit code is 1 when a verdict PyXAI promises fails (validity of a sufficient-type reason,
``reaches`` of a contrastive one) or PyXAI's prediction differs from our hard-majority
decision, else 0; other verdicts are findings about definitions, reported as counts.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pickle
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rfcircuits.errors import InputError
from rfcircuits.forest import Forest, Instance, instance_to_json, mask_states, parse_instance
from rfcircuits.sklearn_import import instances_from_values
from rfcircuits.terms import Term
from rfcircuits.datasets import Dataset, train_forest
from rfcircuits.crosscheck.sat import SatOracle
from rfcircuits.crosscheck.strategies import pick_by_margin
from rfcircuits.crosscheck.adapters.worker import Worker, reply
from rfcircuits.crosscheck.verify import VerifyReport, interval_mask, verify

#: PyXAI explainer methods run, with the explanation field each is graded as (module docstring).
KINDS = {
    "sufficient_reason": "general_sufficient_reasons",
    "minimal_sufficient_reason": "general_sufficient_reasons",
    "majoritary_reason": "general_sufficient_reasons",
    "minimal_majoritary_reason": "general_sufficient_reasons",
    "minimal_contrastive_reason": "contrastive",
}
#: Fields PyXAI's reasons are graded as, by the SAT oracle alone: PyXAI returns one reason per
#: call, so completeness is not asked (and enumerating all of ours can be expensive).
GRADED = ("sufficient_reasons", "general_sufficient_reasons", "contrastive")
WHY = {"drop": "a literal can be dropped", "relax": "a threshold can be relaxed",
       "non-interval": "only a non-interval widening"}
SHORT = {"sufficient_reasons": "SRs", "general_sufficient_reasons": "GSRs", "contrastive": "CEs"}
#: The verdicts PyXAI's own definitions promise, per field graded (exit 1 if one fails).
PROMISED = {"general_sufficient_reasons": "valid", "contrastive": "reaches"}
DATASETS = ("iris", "wine", "breast-cancer")
#: Seconds a worker may take to import PyXAI and convert the model.
STARTUP_SECONDS = 300.0
#: This module, run as the worker (``python -m``, :class:`~rfcircuits.crosscheck.adapters.
#: worker.Worker`).
WORKER_MODULE = "rfcircuits.crosscheck.adapters.pyxai"
#: A kind whose calls ran past ``--timeout`` this many times is skipped for the rest.
MAX_TIMEOUTS = 2


def pyxai_version() -> str | None:
    """The installed PyXAI version, or None when PyXAI is not installed (no import of it)."""
    if importlib.util.find_spec("pyxai") is None:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pyxai")
    except PackageNotFoundError:
        return "unknown"


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


def why_not_prime(sat: SatOracle, forest: Forest, term: Term, x: Instance) -> str:
    """Why a valid term whose literals hold x's states is not a prime implicant (as a
    GSR must be): ``drop`` (a whole literal can go: not subset-minimal under our tie semantics),
    ``relax`` (a literal widened by a state adjacent to its run still implies Δ: a looser
    threshold suffices) or ``non-interval`` (only a widening that is no interval does)."""
    def implies(t: Term) -> bool:  # τ ⊨ Δ (for these terms the same as τ ⊨ GR)
        return sat.check_sr(x, t)["sufficient"]

    if any(implies(term[:k] + term[k + 1:]) for k in range(len(term))):
        return "drop"
    for k, (f, mask) in enumerate(term):
        states = mask_states(mask)
        for s in (states[0] - 1, states[-1] + 1):
            if not 0 <= s < forest.features[f].n_states:
                continue
            wide = mask | 1 << s
            if wide != forest.features[f].full and implies(term[:k] + ((f, wide),) + term[k + 1:]):
                return "relax"
    return "non-interval"


def pyxai_reading(forest: Forest, x: Instance, representation: Sequence[Condition]) -> Instance:
    """The instance as PyXAI reads it: on each feature, the one state that all its conditions
    in PyXAI's binary representation allow. PyXAI compares float64 values with the
    thresholds, scikit-learn (and :func:`instances_from_values`) ``float32(x)``, so a value
    within float32 rounding of a threshold can fall on the other side; ``x`` elsewhere."""
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
    """Serve PyXAI calls: read ``{"i", "kind"}`` lines on stdin, answer with ``MARK`` lines."""
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
        if str(getattr(operator, "value", operator)) != "GT":
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
            time_limit=limit),
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
            answer.update(status="error", error=f"{type(exc).__name__}: {exc}")
        answer["seconds"] = time.perf_counter() - start
        reply(answer)


def run_pyxai(model: Any, rows: np.ndarray, kinds: Sequence[str], timeout: float,
              theory: bool = True, seed: int = 0) -> list[dict[str, Any]]:
    """Every PyXAI call ``(row, kind)``, answered by worker subprocesses; an answer has
    ``status`` ok / none / error / timeout / skipped (after :data:`MAX_TIMEOUTS`)."""
    answers = []
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
                        answers.append({"i": i, "kind": kind, "status": "skipped"})
                        continue
                    if worker is None:
                        worker = Worker(WORKER_MODULE, workdir)
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
                            answer = {"i": i, "kind": kind, "status": "timeout"}
                    answers.append(answer)
        finally:
            if worker is not None:
                worker.stop()
    return answers


# ---------------------------------------------------------------------------------------------
# Grading and the command.


@dataclass
class KindResult:
    """What ``verify`` found about one PyXAI reason kind (``report`` is None when PyXAI
    returned no reason of this kind)."""

    kind: str
    field: str
    calls: Counter[str] = field(default_factory=Counter)
    approximate: int = 0
    seconds: float = 0.0
    report: VerifyReport | None = None
    errors: list[str] = field(default_factory=list)
    not_prime: Counter[str] = field(default_factory=Counter)

    def _first(self, per_field: dict[str, Any]) -> dict[str, Any]:
        """The graded field first, then the projection."""
        return {name: per_field[name] for name in sorted(per_field, key=lambda n: n != self.field)}

    def verdicts(self) -> dict[str, dict[str, dict[str, int]]]:
        """Per field graded, per verdict: counts of holds / fails / unknown."""
        return self._first(self.report.summary()["verdicts"]) if self.report else {}

    def statuses(self) -> dict[str, dict[str, int]]:
        """Per field graded, the status of PyXAI's reasons: ``ok`` when it is an SR / GSR /
        CE by our definitions (every verdict holds), ``wrong`` when some verdict fails."""
        out: dict[str, Counter[str]] = {}
        for line in self.report.lines if self.report else ():
            for f in line.fields:
                for item in f.items or ():
                    out.setdefault(f.field, Counter())[item.status] += 1
        return self._first({name: dict(c) for name, c in out.items()})

    @property
    def promise_broken(self) -> bool:
        """Some reason fails the verdict PyXAI's own definition promises (:data:`PROMISED`)."""
        return bool(self.verdicts().get(self.field, {}).get(PROMISED[self.field], {}).get("fails"))

    def to_json(self) -> dict[str, Any]:
        """Counts of one kind (``verify-pyxai --json``)."""
        return {"field": self.field, "calls": dict(self.calls), "approximate": self.approximate,
                "seconds": round(self.seconds, 3), "verdicts": self.verdicts(),
                "statuses": self.statuses(), "not_prime": dict(self.not_prime),
                "errors": self.errors[:3]}


def grade(forest: Forest, instances: Sequence[Instance], answers: Sequence[dict[str, Any]],
          kinds: Sequence[str]) -> dict[str, KindResult]:
    """Turn PyXAI's answers into explanation lines per kind and grade them with ``verify``."""
    results = {k: KindResult(k, KINDS[k]) for k in kinds}
    rows: dict[str, list[tuple[int, Any]]] = {k: [] for k in kinds}
    for a in answers:
        r = results[a["kind"]]
        r.calls[a["status"]] += 1
        r.seconds += a.get("seconds", 0.0)
        r.approximate += bool(a.get("approximate"))
        if a["status"] == "error":
            r.errors.append(a["error"])
        if a["status"] != "ok":
            continue
        x = pyxai_reading(forest, instances[a["i"]], [tuple(c) for c in a["representation"]])
        reason = [tuple(c) for c in a["reason"]]
        line: dict[str, Any] = {"instance": instance_to_json(forest, x),
                                "decision": forest.classes[a["prediction"]]}
        if r.field == "contrastive":
            other = [t for t in range(len(forest.classes)) if t != a["prediction"]]
            line["contrastive"] = {forest.classes[t]: [instance_literals(forest, x, reason)]
                                   for t in other}
        else:
            line["general_sufficient_reasons"] = [interval_literals(forest, reason)]
            line["sufficient_reasons"] = [instance_literals(forest, x, reason)]
        rows[a["kind"]].append((a["i"] + 1, line))
    with SatOracle(forest, "first") as sat:
        for kind, lines in rows.items():
            if not lines:
                continue
            asked = [parse_instance(forest, line["instance"]) for _, line in lines]
            report = verify(forest, asked, lines, "first", f"PyXAI {kind}", oracle_only=GRADED)
            results[kind].report = report
            for line in report.lines:
                for f in line.fields:
                    for item in f.items or ():
                        if f.field == "general_sufficient_reasons" and item.verdict["valid"] \
                                and item.verdict["prime"] is False:
                            results[kind].not_prime[
                                why_not_prime(sat, forest, item.item, line.instance)] += 1
    return results


#: How ``verify-pyxai --pick`` chooses the rows PyXAI explains (:func:`pick_rows`).
PICKS = ("random", "margin")


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


def run_verify_pyxai(args: argparse.Namespace) -> int:
    """``rfcircuits verify-pyxai`` (module docstring): counts per verdict, per reason kind."""
    version = pyxai_version()
    if version is None:
        raise InputError("PyXAI is not installed (an optional dependency): "
                         "pip install pyxai, or pip install '.[pyxai]'")
    for name in ("trees", "depth", "instances"):
        if getattr(args, name) < 1:
            raise InputError(f"--{name} must be at least 1")
    if args.timeout <= 0:
        raise InputError("--timeout must be positive")
    data = load_dataset(args.dataset)
    trained = train_forest(data, args.trees, args.depth, args.seed)
    forest = trained.forest
    rows = data.X[pick_rows(forest, data.X, args.instances, args.pick, args.seed)]
    instances = instances_from_values(forest, rows)
    kinds = [k for k in KINDS if k != "minimal_contrastive_reason" or len(forest.classes) == 2]
    answers = run_pyxai(trained.model, rows, kinds, args.timeout, not args.no_theory, args.seed)
    results = grade(forest, instances, answers, kinds)

    first = {a["i"]: a for a in answers if "prediction" in a}
    read = {i: pyxai_reading(forest, instances[i], [tuple(c) for c in a["representation"]])
            for i, a in first.items()}
    sklearn = trained.model.predict(rows)
    agree = {
        "pyxai_prediction_is_ours": sum(first[i]["prediction"] == forest.decision(read[i])
                                        for i in first),
        "sklearn_predict_is_ours": int(sum(
            trained.model.classes_[forest.decision(x)] == p for x, p in zip(instances, sklearn))),
        "pyxai_reads_our_states": sum(read[i] == instances[i] for i in first),
        "instances_answered": len(first),
    }
    doc = {"dataset": args.dataset, "trees": args.trees, "depth": args.depth,
           "seed": args.seed, "pick": args.pick, "instances": len(instances), "pyxai": version,
           "theory": not args.no_theory, "ties": "first", "timeout": args.timeout,
           "agreement": agree, "kinds": {k: r.to_json() for k, r in results.items()}}
    print(json.dumps(doc, ensure_ascii=False) if args.json else _text(doc, len(forest.classes)))
    broken = any(r.promise_broken for r in results.values())
    return 1 if broken or agree["pyxai_prediction_is_ours"] != len(first) else 0


_PICKED = {"random": "drawn at random", "margin": "closest to a vote tie"}


def _text(doc: dict[str, Any], n_classes: int) -> str:
    a = doc["agreement"]
    n = doc["instances"]
    out = [f"verify-pyxai: {doc['dataset']}, {doc['trees']} trees, depth {doc['depth']}, "
           f"seed {doc['seed']}, {n} instances {_PICKED[doc['pick']]}; PyXAI {doc['pyxai']} "
           f"{'with' if doc['theory'] else 'without'} its domain theory; graded with ties first",
           f"PyXAI's prediction = our hard-majority decision: {a['pyxai_prediction_is_ours']}/"
           f"{a['instances_answered']}; sklearn predict = ours: {a['sklearn_predict_is_ours']}/{n}"
           f"; PyXAI reads the instance in our (scikit-learn's float32) states: "
           f"{a['pyxai_reads_our_states']}/{a['instances_answered']} (reasons are graded at "
           "PyXAI's reading)"]
    for kind, r in doc["kinds"].items():
        calls = ", ".join(f"{k} {v}" for k, v in sorted(r["calls"].items()))
        out.append(f"{kind} → {r['field']}: calls {calls}"
                   + (f" ({r['approximate']} approximate: PyXAI's time limit hit)"
                      if r["approximate"] else "") + f"; {r['seconds']:.1f} s")
        for name, per in r["verdicts"].items():
            what = "as stated" if name == r["field"] else "projected to features"
            counts = "; ".join(f"{k} " + ", ".join(f"{c} {w}" for w, c in sorted(v.items()))
                               for k, v in per.items())
            out.append(f"  {name} ({what}): {counts}")
        if r["not_prime"]:
            out.append("  why not prime: " + ", ".join(
                f"{WHY[k]} {v}" for k, v in sorted(r["not_prime"].items())))
        for name, c in r["statuses"].items():
            out.append(f"  {name}: {c.get('ok', 0)} of {sum(c.values())} are {SHORT[name]} by "
                       "definition (every verdict holds)")
        for e in r["errors"]:
            out.append(f"  error: {e}")
    if n_classes != 2:
        out.append("minimal_contrastive_reason: not run (PyXAI supports it for two classes only)")
    return "\n".join(out)


if __name__ == "__main__":
    _worker_main(sys.argv[1])
