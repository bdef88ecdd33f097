"""solbert as an adapter (:mod:`rfcircuits.crosscheck.peers.adapters.base`): the prime implicants
solbert 1.0.2 (Iser, "Calculating Sufficient Reasons for Random Forest Classifiers"; MIT, on
the package index) computes for a scikit-learn forest or tree, graded against what it
promises.

**What solbert computes** (read in its source, ``solbert/forest`` and ``solbert/tree``): not
an explanation of an instance but, per class, *every prime implicant of the class's decision
function*: "inclusion-minimal sets of feature conditions that are enough to force a
classification result" (its README). A forest's decision is modelled as ``predict`` makes it:
every consistent choice of one leaf per tree (``enumerate_valid_combinations``) goes to the
argmax (first on ties) of the sum of the leaves' ``value / sum(value)`` in tree order
(``get_class``), so the task's forest has soft votes, ties ``first``; a tree's, as its leaf's
argmax. The adapter runs it once per model and gives each row the implicants that contain it:

- an implicant excludes *cells* of each feature's list of thresholds (``feature_values``:
  the thresholds its trees test, ``inf`` last; a literal ``-v`` excludes the cell of ``v`` in
  ``enc.vintervals``), and solbert gives it to its user as "case distinctions"
  (``RandomForestEncoder.decode``): wherever cell ``i`` is excluded and cell ``i + 1`` is not,
  ``x > s[i]``; the other way round, ``x <= s[i]``. The adapter reads that conjunction with the
  list's exact numbers (:func:`conditions`; ``decode`` prints them to six decimals), each of our
  states by one float32 value inside it (every value of a state compares alike with every
  threshold). On a sorted list whose allowed cells are a run, that is the run's interval;
  a feature whose cells are all excluded has no condition, as ``decode`` leaves it out;
- the implicants that contain the row are its ``general_sufficient_reasons`` (each allowed
  state set a literal), promised formal, ``prime`` and complete (every prime implicant of the
  class is computed, so every GSR of ours — a prime implicant containing the row on the
  fewest features — is among them); the class whose implicants contain the row is passed on
  as ``decision``. An implicant whose conditions no value meets (``x > 1.75`` and ``x <=
  0.8``) contains no row: the adapter counts such implicants in each answer
  (``solbert.empty``, in ``NAME.answers.jsonl``), not graded.

**Known defect** (its forest mode; the tree mode is sound): ``RandomForestWrapper`` means to
sort each feature's thresholds (``for values in self.feature_splits: values =
sorted(set(values))``), but that rebinds the loop variable, so the list stays unsorted with
duplicates (``[inf] +`` each tree's sorted thresholds ``+ [inf]``): cells of that list are no
intervals, the encoding's order constraints relate the wrong cells, and implicants come out
wrong — broken promises, which the grading shows with their worlds.

**Running it.** solbert needs polars (with its runtime, about 190 MB; polars 2 removed an API
it uses: ``pip install solbert==1.0.2 'polars<2'``); it runs in a worker subprocess
(``python -m rfcircuits.crosscheck.peers.adapters.solbert WORKDIR``), in another environment when
:data:`PYTHON_ENV` (or the adapter's ``python`` option) names its Python — rfcircuits at this
version must be installed there too, as for PyXAI. The forest encoder opens a pool of five
processes it does not need for the sequential enumeration (``explain_incremental``): the
worker replaces the pool by nothing. solbert enumerates every consistent combination of
leaves, exponential in the number of trees, and takes no time limit: the whole run has
``task.timeout`` seconds per row, and when it overruns, every row is a ``timeout``. Its time
is the run's, divided among the rows.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from rfcircuits.forest import Forest, Instance
from rfcircuits.crosscheck.peers.adapters.base import (Answer, PeerUnavailable, Promise, Task,
                                                       error_text)
from rfcircuits.crosscheck.peers.adapters.worker import (Worker, other_python, reply,
                                                         required_version)
from rfcircuits.crosscheck.differential.strategies import state_value

#: The environment variable naming the Python of another environment, where solbert is
#: installed, for the worker (the adapter's ``python`` option takes precedence).
PYTHON_ENV = "RFCIRCUITS_SOLBERT_PYTHON"
#: This module, run as the worker.
WORKER_MODULE = "rfcircuits.crosscheck.peers.adapters.solbert"
#: Seconds a worker may take to import solbert and polars.
STARTUP_SECONDS = 300.0
#: An implicant as the worker sends it: per feature index (as text, JSON keys), the cells it
#: excludes.
Implicant = dict[str, list[int]]


def conditions(cuts: Sequence[float], excluded: Sequence[int]) -> list[tuple[bool, float]]:
    """solbert's case distinctions on one feature (``decode``, module docstring): ``(True,
    t)`` for ``x > t``, ``(False, t)`` for ``x <= t``, from its threshold list ``cuts`` and the
    cells an implicant excludes."""
    out = []
    for i in range(len(cuts) - 1):
        if (i in excluded) != (i + 1 in excluded):
            out.append((i in excluded, float(cuts[i])))
    return out


def term_of(forest: Forest, cuts: Sequence[Sequence[float]],
            implicant: Implicant) -> tuple[tuple[int, int], ...] | None:
    """An implicant as a term of the forest (feature, state mask): per feature, the states
    whose values meet its case distinctions (:func:`conditions`), each state read by a float32
    value inside it; None when no state of some feature does (no world satisfies it)."""
    term = []
    for key, excluded in implicant.items():
        f = int(key)
        feature = forest.features[f]
        tests = conditions(cuts[f], excluded)
        mask = 0
        for s in range(feature.n_states):
            value = float(np.float32(state_value(feature, s, "float32")))
            if all((value > t) == greater for greater, t in tests):
                mask |= 1 << s
        if mask == 0:
            return None
        if mask != feature.full:
            term.append((f, mask))
    return tuple(sorted(term))


def record(forest: Forest, x: Instance, terms: Sequence[tuple[int, Any]],
           empty: int) -> dict[str, Any]:
    """The answer for the row in states ``x``: the implicants (``(class index, term)``) that
    contain it, as general sufficient reasons; their class as the decision when they agree
    (module docstring); how many implicants have no world."""
    def holds(term: Any) -> bool:
        return all(mask >> x[f] & 1 for f, mask in term)

    kept = [(c, term) for c, term in terms if holds(term)]
    out: dict[str, Any] = {"general_sufficient_reasons": [
        [{"feature": forest.features[f].name,
          "states": [forest.features[f].states[s] for s in range(forest.features[f].n_states)
                     if mask >> s & 1]} for f, mask in term] for _, term in kept],
        "solbert": {"implicants": len(terms), "empty": empty}}
    decided = {c for c, _ in kept}
    if len(decided) == 1:
        out["decision"] = forest.classes[decided.pop()]
    return out


class SolbertAdapter:
    """solbert's prime implicants containing each row (module docstring). ``python``: the
    Python of another environment where solbert is installed (default :data:`PYTHON_ENV`'s,
    else this one)."""

    name = "solbert"
    ties = "first"
    votes = "soft"
    promises = {"general_sufficient_reasons": Promise("formal", "prime", "all")}

    def __init__(self, python: str | None = None) -> None:
        self.python = python

    def version(self) -> str:
        return required_version("solbert", "solbert", self.python, PYTHON_ENV,
                                "pip install solbert==1.0.2 'polars<2'")

    def explain(self, task: Task) -> Iterator[Answer]:
        """One answer per row, in row order, from one solbert run on the model (module
        docstring)."""
        n = len(task.instances)
        budget = task.timeout * max(n, 1)
        with tempfile.TemporaryDirectory(prefix="rfcircuits-solbert-") as workdir:
            with open(os.path.join(workdir, "job.pickle"), "wb") as handle:
                pickle.dump({"model": task.model, "classes": len(task.forest.classes)}, handle)
            worker = Worker(WORKER_MODULE, workdir, other_python(self.python, PYTHON_ENV))
            try:
                if worker.ask(None, STARTUP_SECONDS) is None:
                    raise PeerUnavailable(f"solbert did not start: {worker.error()}")
                start = time.perf_counter()
                answer = worker.ask({"run": True}, budget)
                seconds = time.perf_counter() - start
                if answer is None:
                    status, why = ("error", f"solbert died: {worker.error()}") if worker.dead \
                        else ("timeout", f"overran {budget:g} s ({task.timeout:g} s a row)")
                    for i in range(n):
                        yield Answer(i, status, None, seconds / max(n, 1), why)
                    return
            finally:
                worker.stop()
        if answer["status"] != "ok":
            for i in range(n):
                yield Answer(i, "error", None, answer["seconds"] / max(n, 1), answer["error"])
            return
        forest = task.forest
        terms, empty = [], 0
        for c, implicants in enumerate(answer["implicants"]):
            for implicant in implicants:
                term = term_of(forest, answer["cuts"], implicant)
                if term is None:
                    empty += 1
                else:
                    terms.append((c, term))
        for i, x in enumerate(task.instances):
            yield Answer(i, "ok", record(forest, x, terms, empty), answer["seconds"] / max(n, 1))


# ---------------------------------------------------------------------------------------------
# The worker (runs in a subprocess; the only code that imports solbert).


def _worker_main(workdir: str) -> None:
    """Answer one request ``{"run": true}``: every prime implicant of every class."""
    import types

    with open(os.path.join(workdir, "job.pickle"), "rb") as handle:
        job = pickle.load(handle)
    import polars as pl
    from sklearn.tree import DecisionTreeClassifier

    import solbert.forest.encoder as forest_encoder
    from solbert.forest import RandomForestEncoder, RandomForestWrapper
    from solbert.tree import DecisionTreeEncoder, DecisionTreeWrapper

    # the forest encoder opens a pool of 5 processes that the sequential enumeration never uses
    forest_encoder.multiprocessing = types.SimpleNamespace(Pool=lambda processes: None)
    model = job["model"]
    names = [f"f{j}" for j in range(int(model.n_features_in_))]
    classes = [str(c) for c in range(job["classes"])]
    lhs = pl.DataFrame({name: [0.0] for name in names})  # solbert reads its columns only
    rhs = pl.Series("class", [], dtype=pl.Enum(classes))  # and the class names, in order
    reply({"ready": True})
    for line in sys.stdin:
        json.loads(line)
        answer: dict[str, Any] = {"status": "ok"}
        start = time.perf_counter()
        try:
            if isinstance(model, DecisionTreeClassifier):
                wrapper: Any = DecisionTreeWrapper(model, lhs, rhs)
                encoder: Any = DecisionTreeEncoder(wrapper)
                found = encoder.explain()
            else:
                wrapper = RandomForestWrapper(model, lhs, rhs)
                encoder = RandomForestEncoder(wrapper)
                found = encoder.explain_incremental()
            where = {v: (f, i) for f, vs in enumerate(encoder.vintervals)
                     for i, v in enumerate(vs)}
            implicants = []
            for c in classes:
                listed = []
                for implicant in found[c]:
                    excluded: dict[str, list[int]] = {}
                    for lit in implicant:
                        if lit > 0:
                            raise ValueError(f"a positive literal {lit} in an implicant")
                        f, i = where[-lit]
                        excluded.setdefault(str(f), []).append(i)
                    listed.append(excluded)
                implicants.append(listed)
            answer["implicants"] = implicants
            answer["cuts"] = [[float(v) for v in wrapper.feature_values(f)]
                              for f in range(len(names))]
        except Exception as exc:  # solbert's failure is a finding about the run
            answer = {"status": "error", "error": error_text(exc)}
        answer["seconds"] = time.perf_counter() - start
        reply(answer)


if __name__ == "__main__":
    _worker_main(sys.argv[1])
