"""The Anchors adapter: conversion of anchor-exp's conditions to range literals (pure, always
run), the hard-majority model it explains, and (only when anchor-exp is installed) real runs
whose rules the promise grader counts as claims.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

import rfcircuits.crosscheck.peers.adapters.anchors as anchors
from rfcircuits.errors import InputError
from rfcircuits.forest import forest_from_json
from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values
from rfcircuits.crosscheck.peers.adapters.base import PeerUnavailable, Task, load_adapter
from rfcircuits.crosscheck.peers.grading import load_dataset
from rfcircuits.crosscheck.peers.promises import confirm, grade_answers
from rfcircuits.crosscheck.verify import parse_items, range_mask

FEATURE = forest_from_json({
    "format": "rfcircuits.forest/1", "classes": ["a", "b"],
    "features": [{"name": "x", "thresholds": [1.0, 2.0, 3.0]}],
    "trees": [{"nodes": [{"feature": "x", "branches": [[[0, 1], 1], [[2, 3], 2]]},
                         {"class": "a"}, {"class": "b"}]}]}).features[0]
UP = math.nextafter(1.0, math.inf)  # the double just above the threshold 1.0


def _holds(v: float, op: str, a: float) -> bool:
    return {">": v > a, ">=": v >= a, "<": v < a, "<=": v <= a}[op]


def test_each_operator_becomes_the_range_of_the_same_doubles():
    for a in (-2.5, 0.0, 1.0, 0.30000000000000004, 1e300, -5e-324):
        grid = {a, -1e308, 1e308}
        for _ in range(3):
            grid |= {math.nextafter(v, d) for v in grid for d in (-math.inf, math.inf)}
        for op in anchors.OPERATORS:
            low, high = anchors.condition_range(op, a)
            for v in grid:
                inside = (low is None or low < v) and (high is None or v <= high)
                assert inside == _holds(v, op, a), (op, a, v)


@pytest.mark.parametrize("op, bound, states", [
    # thresholds 1, 2, 3: states (-inf,1], (1,2], (2,3], (3,inf)
    (">", 2.0, [2, 3]),
    (">=", 2.0, [1, 2, 3]),  # 2.0 itself lies in (1,2]
    ("<=", 2.0, [0, 1]),
    ("<", 2.0, [0, 1]),  # values just below 2 lie in (1,2]
    ("<=", UP, [0, 1]),  # UP lies in (1,2]
    ("<", UP, [0]),  # only values <= 1.0
    (">=", UP, [1, 2, 3]),
    (">", 1.0, [1, 2, 3]),
    (">=", 1.0, [0, 1, 2, 3]),  # 1.0 lies in (-inf,1]
    ("<", 1.0, [0]),
])
def test_each_operator_meets_the_states_derived_by_hand(op, bound, states):
    low, high = anchors.condition_range(op, bound)
    assert range_mask(FEATURE, low, high, "test") == sum(1 << s for s in states)


def test_bad_conditions_are_refused():
    with pytest.raises(ValueError, match="unknown operator"):
        anchors.condition_range("==", 1.0)
    for bound in (math.inf, -math.inf, math.nan):
        with pytest.raises(ValueError, match="finite"):
            anchors.condition_range(">", bound)


def test_conditions_on_one_feature_are_intersected():
    conditions = [(2, "<=", 0.0), (0, ">", 1.0), (0, ">=", 1.5), (0, "<=", 3.0), (0, "<", 2.5),
                  (0, ">", -4.0)]
    assert anchors.range_literals(["a", "b", "c"], conditions) == [
        {"feature": "a", "range": [math.nextafter(1.5, -math.inf),
                                   math.nextafter(2.5, -math.inf)]},
        {"feature": "c", "range": [None, 0.0]}]


def test_anchor_predicates_become_conditions_on_the_quartiles():
    # feature 0: bins end at 1, 2, 3 (and the maximum 9); 'leq' 1 is bin <= 1, i.e. x <= 2;
    # 'geq' 0 is bin > 0, i.e. x > 1
    mapping = {0: (0, "leq", 1), 1: (0, "geq", 0), 2: (1, "geq", 2), 3: (1, "eq", 0)}
    quartiles = {0: [1.0, 2.0, 3.0, 9.0], 1: [-1.0, 0.5, 0.75, 4.0]}
    assert anchors.anchor_conditions([2, 0, 1], mapping, quartiles) == [
        (1, ">", 0.75), (0, "<=", 2.0), (0, ">", 1.0)]
    with pytest.raises(ValueError, match="unexpected anchor-exp predicate"):
        anchors.anchor_conditions([3], mapping, quartiles)


def _task(name: str, trees: int, depth: int, n_rows: int, seed: int = 0,
          timeout: float = 60.0) -> Task:
    """A forest trained on all rows of a bundled dataset but ``n_rows`` drawn ones, which are
    the rows to explain."""
    from sklearn.ensemble import RandomForestClassifier

    data = load_dataset(name)
    order = np.random.default_rng(seed).permutation(len(data.y))
    rows, train = order[:n_rows], order[n_rows:]
    model = RandomForestClassifier(n_estimators=trees, max_depth=depth, random_state=seed)
    model.fit(data.X[train], data.y[train])
    forest = forest_from_sklearn(model, data.feature_names,
                                 [data.classes[int(c)] for c in model.classes_], votes="hard")
    return Task(forest, model, data.X[train], data.y[train], data.X[rows],
                instances_from_values(forest, data.X[rows]), seed=seed, timeout=timeout)


def test_the_model_explained_is_the_hard_majority_vote():
    task = _task("iris", 10, 3, 0)
    points = np.random.default_rng(3).uniform(task.X_train.min(0), task.X_train.max(0),
                                              size=(3000, 4))
    votes = np.zeros((len(points), 3), dtype=int)
    for tree in task.model.estimators_:  # each tree's own vote, counted
        votes[np.arange(len(points)), tree.predict(points).astype(int)] += 1
    hard = votes.argmax(axis=1)  # the first class among the tied ones
    soft = task.model.predict(points)
    assert (hard != soft).any()  # the points tell the two rules apart
    model = anchors.HardMajority(task.forest)
    assert list(model(points)) == list(hard)
    assert list(model(points[:5])) == list(hard[:5])  # memoised answers are the same
    model.deadline = 0.0
    with pytest.raises(anchors._Overrun):
        model(points[:1])


def test_the_registry_builds_it_without_importing_anchor_exp():
    adapter = load_adapter("anchors")
    assert isinstance(adapter, anchors.AnchorsAdapter) and adapter.ties == "first"
    with pytest.raises(InputError, match="threshold"):
        load_adapter("anchors", threshold=1.5)
    code = ("import sys, rfcircuits.crosscheck.peers.adapters.base as b; "
            "b.load_adapter('anchors'); "
            "print(sorted({'anchor', 'lime'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_missing_anchor_exp_says_how_to_install_it(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "anchor" else real(name, *a))
    adapter = anchors.AnchorsAdapter()
    with pytest.raises(PeerUnavailable, match="pip install anchor-exp"):
        adapter.version()
    with pytest.raises(PeerUnavailable, match="pip install anchor-exp"):
        next(adapter.explain(_task("iris", 2, 2, 1)))


# ---------------------------------------------------------------------------------------------
# Real runs of anchor-exp.


@pytest.fixture(scope="module")
def iris_run() -> tuple[Task, list[anchors.Answer]]:
    task = _task("iris", 10, 3, 5)
    return task, list(anchors.AnchorsAdapter().explain(task))


@pytest.mark.needs("anchors")
def test_every_anchor_box_contains_its_row_and_states_the_forest_decision(iris_run):
    task, answers = iris_run
    assert [a.index for a in answers] == list(range(len(task.rows)))
    for answer in answers:
        assert answer.status == "ok", answer.error
        [literals] = answer.record["general_sufficient_reasons"]
        row = task.rows[answer.index]
        for literal in literals:
            low, high = literal["range"]
            value = row[task.feature_names.index(literal["feature"])]
            assert (low is None or low < value) and (high is None or value <= high), literal
        x = task.instances[answer.index]
        assert answer.record["decision"] == task.forest.classes[task.forest.decision(x)]


@pytest.mark.needs("anchors")
def test_grading_counts_anchors_rules_as_claims(iris_run):
    task, answers = iris_run
    adapter = anchors.AnchorsAdapter()
    report = grade_answers(task.forest, task.instances, answers, adapter.name,
                           adapter.version(), adapter.ties, adapter.promises)
    assert report.ok and not report.broken and not report.failures
    tally = report.fields["general_sufficient_reasons"]
    assert tally.items == len(answers) == tally.holds + tally.claims_failing + tally.unknown
    assert tally.unknown == 0
    # each verdict agrees with enumerating every world of the rule's box (4 features: few)
    failing = 0
    for answer in answers:
        x = task.instances[answer.index]
        [term] = parse_items(task.forest, answer.record["general_sufficient_reasons"], "t", "g")
        failing += not confirm(task.forest, "first", x, "implies", term,
                               task.forest.decision(x))
    assert failing == tally.claims_failing


@pytest.mark.needs("anchors")
def test_runs_are_reproducible_row_by_row_and_leave_numpy_alone():
    task = _task("iris", 10, 3, 4, seed=4)  # rows 0, 2 and 3 get other rules with other seeds
    np.random.seed(1)
    before = np.random.get_state()[1].copy()
    first = [a.record for a in anchors.AnchorsAdapter().explain(task)]
    assert (np.random.get_state()[1] == before).all()
    np.random.seed(2)  # a row's answer depends on neither the global generator nor other rows
    later = _task("iris", 10, 3, 4, seed=4)
    later.rows = later.rows.copy()
    later.rows[0] = later.rows[3]
    assert [a.record for a in anchors.AnchorsAdapter().explain(later)][1:] == first[1:]
    task.seed = 5  # and the seed is used: another one gives another rule to row 2
    assert [a.record for a in anchors.AnchorsAdapter().explain(task)] != first


@pytest.mark.needs("anchors")
def test_overruns_and_failures_are_answers():
    task = _task("iris", 5, 2, 2, timeout=0.0)
    assert [a.status for a in anchors.AnchorsAdapter().explain(task)] == ["timeout"] * 2
    task = _task("iris", 5, 2, 2)
    task.rows = task.rows.copy()
    task.rows[0, 1] = np.nan  # the model refuses NaN
    answers = list(anchors.AnchorsAdapter().explain(task))
    assert [a.status for a in answers] == ["error", "ok"]
    assert "NaN" in answers[0].error


@pytest.mark.needs("anchors")
def test_anchor_exp_predicates_mean_what_the_conversion_says():
    """Against lime's own discretisation: a predicate ('leq', v) holds where the bin is <= v,
    ('geq', v) where it is > v; the converted range must hold exactly the same values."""
    from anchor.anchor_tabular import AnchorTabularExplainer

    train = np.random.default_rng(0).normal(size=(40, 2))
    explainer = AnchorTabularExplainer(["a", "b"], ["u", "w"], train)
    quartiles = explainer.disc.maxs
    probes = sorted({v for f in (0, 1) for q in quartiles[f] for v in
                     (math.nextafter(q, -math.inf), q, math.nextafter(q, math.inf))})
    for row in train[:3]:
        _, mapping = explainer.get_sample_fn(row, lambda X: np.zeros(len(X), dtype=int))
        for p, (f, op, v) in mapping.items():
            [(_, cop, bound)] = anchors.anchor_conditions([p], mapping, quartiles)
            low, high = anchors.condition_range(cop, bound)
            grid = np.zeros((len(probes), 2))
            grid[:, f] = probes
            bins = explainer.disc.discretize(grid)[:, f]
            expected = bins <= v if op == "leq" else bins > v
            got = [(low is None or low < t) and (high is None or t <= high) for t in probes]
            assert got == list(expected), (f, op, v)
