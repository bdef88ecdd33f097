"""Anchors adapter: the rules of anchor-exp's ``AnchorTabularExplainer`` (Ribeiro et al.,
"Anchors: High-Precision Model-Agnostic Explanations"), graded as claims of sufficiency.

An anchor is a conjunction of conditions on features (``petal width (cm) <= 0.30``,
``1.20 < x <= 3.40``) that holds on the instance and under which the model's prediction is
*claimed* to stay the same with high precision (``threshold``, 0.95 by default), estimated by
sampling. It is a box around the instance, so it is answered as one
``general_sufficient_reasons`` item of ``{"feature", "range"}`` literals (verify's form for
bounds that need not be the forest's thresholds: the box holds the states some value in it
falls in); Anchors proves nothing, so the promise is ``heuristic`` (a rule that is not
formally sufficient is counted as a failing claim, not a broken promise), with no minimality
and one answer per row.

**The model explained** is the forest's *hard-majority* decision, as our forest decides
(:meth:`rfcircuits.forest.Forest.decision` on the states :func:`instances_from_values` puts
the sampled values in: first class on a tie, hence ``ties`` ``first``), not scikit-learn's
``predict``, which averages the trees' probabilities and can pick another class. Decisions
are memoised per tuple of states (Anchors samples from the training rows, whose states
repeat).

**Conditions** come from anchor-exp's internal structures, not its printed names (which round
bounds to two decimals): anchor-exp discretises each feature at the quartiles ``q`` of the
training data (lime's ``QuartileDiscretizer``: bin ``b`` is ``q[b-1] < x <= q[b]``), and an
anchor is a list of predicates ``(feature, 'leq', v)`` — bin ``<= v``, i.e. ``x <= q[v]`` —
and ``(feature, 'geq', v)`` — despite its name bin ``> v``, i.e. ``x > q[v]``. They are read
from the arguments of ``add_names_to_exp``, the one method that receives them with the
anchor's predicate indices (the explanation it returns keeps only feature indices).
:func:`condition_range` turns any of ``>``, ``>=``, ``<``, ``<=`` into the range form
``(low, high]`` exactly on doubles: ``x >= a`` is ``x > nextafter(a, -inf)`` (the largest
double below ``a``), ``x < b`` is ``x <= nextafter(b, -inf)``; the conditions on one feature
are intersected (:func:`range_literals`).

**Time limit.** anchor-exp runs in-process, in Python, with no time limit of its own, and
cannot be interrupted from outside without signals or threads, which an adapter must not
take over. The adapter's model function checks the task's ``timeout`` (seconds per row) each
time Anchors asks it to label samples and aborts the row there with an exception (status
``timeout``). A row therefore overruns by the work between two such calls: one batch of
samples and anchor-exp's bookkeeping, whose largest step preallocates room for a million
samples (``batch_size`` × 10,000 rows of its predicates and of the raw values: about 1 GB
and 1–4 s on breast-cancer's 30 features, measured on 2 busy cores). No thread is started.

**Randomness.** anchor-exp draws from NumPy's global generator; each row is explained with
it seeded from ``(task.seed, row index)``, so a row's answer does not depend on the other
rows, and the generator's previous state is restored afterwards.

anchor-exp is optional: it is imported only when a task is explained (``pip install
anchor-exp``; it needs lime).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from rfcircuits.forest import Forest, Instance
from rfcircuits.sklearn_import import instances_from_values
from rfcircuits.crosscheck.peers.adapters.base import (Answer, PeerUnavailable, Promise, Task,
                                                       error_text)

INSTALL = "pip install anchor-exp"
OPERATORS = (">", ">=", "<", "<=")
#: anchor-exp's predicate operators, as conditions on the raw value against ``q[v]``.
ANCHOR_OPERATORS = {"geq": ">", "leq": "<="}

Condition = tuple[int, str, float]  # (feature index, operator, bound)


def condition_range(op: str, value: float) -> tuple[float | None, float | None]:
    """The bounds ``(low, high)`` of the range ``low < x <= high`` (None: unbounded) that
    holds exactly the doubles ``x`` with ``x op value`` (module docstring). ValueError for an
    unknown operator or a bound that is not a finite number."""
    if op not in OPERATORS:
        raise ValueError(f"unknown operator {op!r} (expected one of {', '.join(OPERATORS)})")
    if not math.isfinite(value):
        raise ValueError(f"the bound of a condition must be a finite number, not {value!r}")
    if op in (">", ">="):
        return (value if op == ">" else math.nextafter(value, -math.inf)), None
    return None, (value if op == "<=" else math.nextafter(value, -math.inf))


def range_literals(feature_names: Sequence[str],
                   conditions: Sequence[Condition]) -> list[dict[str, Any]]:
    """One ``{"feature", "range"}`` literal per feature the conditions mention (in feature
    order): the intersection of their ranges (the largest low bound, the smallest high one)."""
    bounds: dict[int, list[float | None]] = {}
    for f, op, value in conditions:
        low, high = condition_range(op, value)
        box = bounds.setdefault(f, [None, None])
        if low is not None:
            box[0] = low if box[0] is None else max(box[0], low)
        if high is not None:
            box[1] = high if box[1] is None else min(box[1], high)
    return [{"feature": feature_names[f], "range": bounds[f]} for f in sorted(bounds)]


def anchor_conditions(predicates: Sequence[int], mapping: dict[int, tuple[int, str, Any]],
                      quartiles: dict[int, Sequence[float]]) -> list[Condition]:
    """The conditions of an anchor, given as anchor-exp's predicate indices into ``mapping``
    (index → ``(feature, 'leq' | 'geq', bin)``), on the raw values: bin ``v`` of feature
    ``f`` ends at ``quartiles[f][v]`` (module docstring). ValueError for any other predicate
    (an ``eq`` one belongs to a categorical feature, which this adapter never declares)."""
    out = []
    for p in predicates:
        f, op, v = mapping[p]
        if op not in ANCHOR_OPERATORS:
            raise ValueError(f"unexpected anchor-exp predicate {mapping[p]!r}")
        out.append((int(f), ANCHOR_OPERATORS[op], float(quartiles[f][int(v)])))
    return out


class _Overrun(Exception):
    """The row's time limit passed while Anchors was sampling."""


class HardMajority:
    """The forest's hard-majority decision on raw rows (class indices), as Anchors' model
    function; it raises :class:`_Overrun` once ``deadline`` (``time.perf_counter``) passed.
    Decisions are memoised per instance (O(trees × depth) for each new one)."""

    def __init__(self, forest: Forest) -> None:
        self.forest = forest
        self.deadline = math.inf
        self._decided: dict[Instance, int] = {}

    def __call__(self, X: np.ndarray) -> np.ndarray:
        if time.perf_counter() > self.deadline:
            raise _Overrun()
        out = np.empty(len(X), dtype=int)
        for k, x in enumerate(instances_from_values(self.forest, X)):
            c = self._decided.get(x)
            if c is None:
                c = self._decided[x] = self.forest.decision(x)
            out[k] = c
        return out


class AnchorsAdapter:
    """anchor-exp's ``AnchorTabularExplainer`` as a peer (module docstring). ``threshold`` is
    the precision Anchors aims at (its ``explain_instance`` default, 0.95); ``discretizer``
    ``quartile`` (its default) or ``decile``."""

    name = "anchors"
    ties = "first"
    promises = {"general_sufficient_reasons": Promise(guarantee="heuristic", minimal="none",
                                                      answers="one")}

    def __init__(self, threshold: float = 0.95, discretizer: str = "quartile") -> None:
        if not 0.0 < threshold <= 1.0:
            raise TypeError(f"threshold must lie in (0, 1], not {threshold!r}")
        if discretizer not in ("quartile", "decile"):
            raise TypeError(f"discretizer must be quartile or decile, not {discretizer!r}")
        self.threshold = threshold
        self.discretizer = discretizer

    def version(self) -> str:
        """anchor-exp's installed version; :class:`PeerUnavailable` when it is missing."""
        import importlib.util
        from importlib.metadata import PackageNotFoundError, version

        if importlib.util.find_spec("anchor") is not None:
            try:
                return version("anchor-exp")
            except PackageNotFoundError:
                pass  # a module named anchor from another distribution
        raise PeerUnavailable(f"Anchors (anchor-exp) is not installed: {INSTALL}")

    def explain(self, task: Task) -> Iterator[Answer]:
        """One answer per row of ``task``, in order (module docstring)."""
        self.version()
        from anchor.anchor_tabular import AnchorTabularExplainer

        try:
            explainer = AnchorTabularExplainer(
                list(task.forest.classes), list(task.feature_names),
                np.asarray(task.X_train, dtype=np.float64), discretizer=self.discretizer)
        except Exception as exc:  # e.g. training data it cannot discretise: every row fails
            for i in range(len(task.rows)):
                yield Answer(i, "error", error=error_text(exc))
            return
        caught: dict[str, Any] = {}
        naming = explainer.add_names_to_exp

        def add_names(data_row: Any, exp: dict[str, Any], mapping: dict[int, Any]) -> None:
            caught.update(predicates=list(exp["feature"]), mapping=mapping)
            naming(data_row, exp, mapping)

        explainer.add_names_to_exp = add_names  # type: ignore[method-assign]
        model = HardMajority(task.forest)
        for i, row in enumerate(np.asarray(task.rows, dtype=np.float64)):
            caught.clear()
            saved = np.random.get_state()
            np.random.seed([task.seed % 2**32, i])
            start = time.perf_counter()
            model.deadline = start + task.timeout
            try:
                exp = explainer.explain_instance(row, model, threshold=self.threshold)
                seconds = time.perf_counter() - start
                conditions = anchor_conditions(caught["predicates"], caught["mapping"],
                                               explainer.disc.maxs)
                record = {"general_sufficient_reasons":
                          [range_literals(task.feature_names, conditions)],
                          "decision": task.forest.classes[int(exp.exp_map["prediction"])]}
            except _Overrun:
                yield Answer(i, "timeout", seconds=time.perf_counter() - start,
                             error=f"Anchors ran past the time limit of {task.timeout} s")
                continue
            except Exception as exc:  # the peer's failure is an answer, not ours
                yield Answer(i, "error", seconds=time.perf_counter() - start,
                             error=error_text(exc))
                continue
            finally:
                np.random.set_state(saved)
            yield Answer(i, "ok", record, seconds=seconds)
