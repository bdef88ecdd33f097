"""The PyXAI adapter: conversion of threshold conditions to our literals, the
optional-dependency policy, the rows ``verify-peer`` picks, and (only when PyXAI is installed,
here or in the environment ``$RFCIRCUITS_PYXAI_PYTHON`` names, as in CI) real runs whose
reasons are graded against PyXAI's promises. PyXAI is never imported in the test process (it
parses ``sys.argv`` and imports shap/matplotlib); the adapter runs it in a worker subprocess.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import rfcircuits.crosscheck.peers.adapters.pyxai as adapter
import rfcircuits.crosscheck.peers.adapters.worker as worker
import rfcircuits.crosscheck.peers.grading as peers
from rfcircuits.datasets import Dataset, train_forest
from rfcircuits.errors import InputError
from rfcircuits.forest import Leaf, forest_from_json
from rfcircuits.sklearn_import import instances_from_values
from rfcircuits.cli.main import build_parser, main
from rfcircuits.crosscheck.peers.adapters.base import Answer, PeerUnavailable, Task
from rfcircuits.crosscheck.peers.promises import grade_answers

FOREST = {
    "format": "rfcircuits.forest/1",
    "classes": ["a", "b"],
    "features": [{"name": "x1", "thresholds": [0.5, 2.5, 4.0]},
                 {"name": "x2", "thresholds": [1.0]},
                 {"name": "x3", "thresholds": [0.0]}],
    "trees": [{"nodes": [{"feature": "x1", "branches": [[[0, 1], 1], [[2, 3], 2]]},
                         {"class": "a"},
                         {"feature": "x2", "branches": [[[0], 1], [[1], 3]]},
                         {"class": "b"}]}],
}


def test_conditions_become_interval_literals_on_our_states():
    forest = forest_from_json(FOREST)
    x = (2, 1, 0)  # x1 in (2.5,4.0], x2 in (1.0,+inf), x3 in (-inf,0.0]
    conditions = [(0, True, 0.5), (0, True, 2.5), (0, False, 4.0), (1, True, 1.0)]
    literals = adapter.interval_literals(forest, conditions)
    assert literals == [{"feature": "x1", "interval": [2.5, 4.0]},
                        {"feature": "x2", "interval": [1.0, None]}]
    assert adapter.instance_literals(forest, x, conditions) == [
        {"feature": "x1", "states": [2]}, {"feature": "x2", "states": [1]}]
    representation = conditions + [(2, False, 0.0)]  # every condition of the forest, as read
    assert adapter.pyxai_reading(forest, x, representation) == x
    float64_side = [(0, True, 0.5), (0, True, 2.5), (0, True, 4.0), (1, True, 1.0)]
    assert adapter.pyxai_reading(forest, x, float64_side) == (3, 1, 0)
    # The converted reason is graded against PyXAI's promises: 2.5 < x1 <= 4.0 ∧ x2 > 1.0
    # forces class b, and so does x1 > 2.5 ∧ x2 > 1.0: dropping the bound 4.0 is dropping a
    # condition, a broken promise of subset-minimality, confirmed on every world. The same
    # reason without that bound keeps every promise; it is variable-minimal (x1 in (2.5,inf)
    # alone allows x2 <= 1.0, class a) and prime, so no difference is counted.
    line = {"instance": {"x1": 3.0, "x2": 2.0, "x3": -1}, "decision": "b",
            "general_sufficient_reasons": [literals]}
    loose = dict(line, general_sufficient_reasons=[[{"feature": "x1", "interval": [2.5, None]},
                                                    literals[1]]])
    promises = adapter.PyxaiAdapter().promises
    report = grade_answers(forest, [x, x], [Answer(0, "ok", line), Answer(1, "ok", loose)],
                           "pyxai", "test", "strict", promises)
    tally = report.fields["general_sufficient_reasons"]
    assert (tally.items, tally.holds, tally.broken) == (2, 1, 1)
    assert not tally.differences
    [broken] = report.broken
    assert broken.row == 1 and broken.promise == "conditions" and broken.confirmed
    assert broken.evidence_item == ((0, 0b1100), (1, 0b10))
    assert not report.ok


def test_importing_the_adapter_does_not_import_pyxai():
    assert "pyxai" not in sys.modules


def test_missing_pyxai_is_bad_input(monkeypatch, capsys):
    monkeypatch.setattr(worker, "installed_version", lambda *args: None)
    assert main(["verify-pyxai", "--dataset", "iris"]) == 2
    err = capsys.readouterr().err
    assert "pip install pyxai" in err and "Traceback" not in err


def test_pyxai_in_another_environment_needs_rfcircuits_at_this_version_there(tmp_path,
                                                                            monkeypatch):
    """The worker may run in an environment of its own ($RFCIRCUITS_PYXAI_PYTHON): the
    PyXAI version is that environment's, and rfcircuits must be importable there at this
    version (the worker runs its module)."""
    from rfcircuits import __version__

    def environment(name: str, pyxai: str | None, ours: str | None) -> str:
        python = tmp_path / name  # stands for that environment's Python: its versions
        python.write_text(f"#!/bin/sh\necho '{json.dumps([pyxai, ours])}'\n")
        python.chmod(0o755)
        return str(python)

    monkeypatch.setenv(adapter.PYTHON_ENV, environment("ready", "2.0.1", __version__))
    assert adapter.PyxaiAdapter().version() == "2.0.1"
    monkeypatch.setenv(adapter.PYTHON_ENV, environment("no-pyxai", None, __version__))
    with pytest.raises(PeerUnavailable, match="not installed in the environment of .*no-pyxai"):
        adapter.PyxaiAdapter().version()
    for name, ours in (("no-rfcircuits", None), ("old", "0.0.1")):
        python = environment(name, "2.0.1", ours)
        with pytest.raises(PeerUnavailable, match=f"has rfcircuits {ours or 'not installed'}, "
                                                  f"this one {__version__}"):
            adapter.PyxaiAdapter(python=python).version()  # the option before the variable
    monkeypatch.delenv(adapter.PYTHON_ENV)
    assert adapter.pyxai_python() is None and adapter.pyxai_python(sys.executable) is None


def test_random_pick_draws_the_same_rows_as_before():
    X = np.arange(40.0).reshape(20, 2)
    forest = train_forest(_dataset(X), 3, 2, 0).forest
    expected = np.sort(np.random.default_rng(7).choice(20, size=5, replace=False))
    assert list(peers.pick_rows(forest, X, 5, "random", 7)) == list(expected)
    assert sorted(peers.pick_rows(forest, X, 50, "random", 7)) == list(range(20))


def _dataset(X):
    y = (X[:, 0] + X[:, 1] > 40).astype(int)
    return Dataset("toy", ["u", "v"], X, y, ["no", "yes"])


def _brute_margin(votes):
    top, second = sorted(votes, reverse=True)[:2]
    return top - second


@pytest.mark.parametrize("trees", [2, 4, 11])
def test_margin_pick_takes_one_row_per_instance_closest_to_a_tie(trees):
    data = peers.load_dataset("iris")
    forest = train_forest(data, trees, 3, 0).forest
    instances = instances_from_values(forest, data.X)
    first_row = {}
    for i, x in enumerate(instances):
        first_row.setdefault(x, i)
    # Brute force: the first row of each distinct instance, by (margin of its votes, row).
    ranked = sorted(first_row.values(),
                    key=lambda i: (_brute_margin(forest.votes(instances[i])), i))
    for k in (1, 5, 20, 1000):
        picked = list(peers.pick_rows(forest, data.X, k, "margin", 0))
        assert picked == sorted(ranked[:k])
    if trees == 2:  # two trees disagree somewhere on iris: the closest row is an exact tie
        assert _brute_margin(forest.votes(instances[ranked[0]])) == 0


def test_pick_option_is_checked_by_the_parser(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["verify-pyxai", "--dataset", "iris", "--pick", "bogus"])
    assert stop.value.code == 2
    assert "invalid choice: 'bogus'" in capsys.readouterr().err
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    pick = next(a for a in sub.choices["verify-pyxai"]._actions if a.dest == "pick")
    assert tuple(pick.choices) == peers.PICKS and pick.default == "random"
    with pytest.raises(InputError, match="--pick must be one of random, margin"):
        peers.pick_rows(None, np.zeros((1, 1)), 1, "bogus", 0)


@pytest.mark.needs("pyxai")
def test_pyxai_reasons_on_iris_keep_their_promises():
    task = peers.make_task("iris", 3, 2, 0, 3, "random", 20.0)
    for kind in ("sufficient_reason", "majoritary_reason"):
        pyxai = adapter.PyxaiAdapter(kind)
        answers = list(pyxai.explain(task))
        assert [a.status for a in answers] == ["ok"] * 3
        report = grade_answers(task.forest, task.instances, answers, pyxai.name,
                               pyxai.version(), pyxai.ties, pyxai.promises)
        assert report.ok, report.text()
        assert report.fields["general_sufficient_reasons"].items == 3


@pytest.mark.needs("pyxai")
def test_verify_pyxai_command_on_a_binary_dataset(capsys):
    code = main(["verify-pyxai", "--dataset", "breast-cancer", "--trees", "3", "--depth", "2",
                 "--instances", "3", "--timeout", "20", "--json", "-q"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    ce = doc["peers"]["pyxai-contrastive"]
    assert ce["answers"] == {"ok": 3} and ce["fields"]["contrastive"]["holds"] == 3


def test_a_row_pyxai_reads_in_no_state_of_the_forest_is_not_graded(monkeypatch):
    """PyXAI compares float64 values: 2.58 lies between the thresholds 2.5799999237 and
    2.5800000429, which float32 inputs cannot tell apart (the importer merged them), so the
    row is reported as not graded instead of stopping the run."""
    forest = forest_from_json({
        "format": "rfcircuits.forest/1", "input_dtype": "float32", "classes": ["a", "b"],
        "features": [{"name": "x1", "thresholds": [2.5799999237060547]}],
        "trees": [{"nodes": [{"feature": "x1", "branches": [[[0], 1], [[1], 2]]},
                             {"class": "a"}, {"class": "b"}]}]})
    between = [(0, True, 2.5799999237060547), (0, False, 2.5800000429153442)]
    with pytest.raises(InputError, match="holds no state"):
        adapter.pyxai_reading(forest, (0,), between)

    def fake_run(model, rows, kinds, timeout, theory, seed, python=None):
        yield {"i": 0, "kind": kinds[0], "status": "ok", "prediction": 0, "seconds": 0.1,
               "representation": between, "reason": [between[1]]}

    monkeypatch.setattr(adapter, "run_pyxai", fake_run)
    task = Task(forest, None, None, None, np.array([[2.58]]), [(0,)])
    [answer] = adapter.PyxaiAdapter().explain(task)
    assert answer.status == "none" and "not graded" in answer.error
    report = grade_answers(forest, [(0,)], [answer], "pyxai", "test", "strict",
                           adapter.PyxaiAdapter().promises)
    assert report.ok and report.failures[0]["status"] == "none"
    assert "no answer on row 1: not graded" in report.text()


@pytest.mark.needs("pyxai")
def test_bench_pyxai_rows(monkeypatch, capsys):
    # A small forest stands for the bench's: every pair gets a row valid under the schema.
    from rfcircuits.cli import peerbench
    from rfcircuits.cli.main import main
    from rfcircuits.formats import validator

    monkeypatch.setattr(peerbench, "FORESTS", {"small": (3, 2)})
    assert main(["bench", "pyxai", "--rows", "2", "--json", "--pyxai-timeout", "20"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["pair"].split(" / ")[0] for r in rows] == [p for p, _ in peerbench.PAIRS]
    for row in rows:
        assert validator("bench").is_valid(row), row
        assert row["ours_done"] == 2 and "pyxai_median" in row or row["pair"].endswith(" / -")
        assert ("ours_features" in row) == row["pair"].startswith(("one SR", "shortest SR"))


# ---------------------------------------------------------------------------------------------
# PyXAI's explainers of boosted trees (XGBoost).


def _xgboost_task(n_classes: int = 2, rounds: int = 5, rows: int = 10) -> Task:
    """An XGBoost model on breast-cancer (binary: its base score, 0.627, moves the margin by
    +0.52) or iris, and the rows nearest a tie of its exact sums."""
    from sklearn.datasets import load_breast_cancer, load_iris
    from xgboost import XGBClassifier

    from rfcircuits.boosted_import import forest_from_xgboost
    from rfcircuits.crosscheck.differential.strategies import pick_by_margin

    X, y = (load_breast_cancer if n_classes == 2 else load_iris)(return_X_y=True)
    model = XGBClassifier(n_estimators=rounds, max_depth=2, random_state=0, n_jobs=1).fit(X, y)
    forest = forest_from_xgboost(model)
    xs = instances_from_values(forest, X)
    picked = sorted(pick_by_margin(forest, xs, rows))
    return Task(forest, model, X, y, X[picked], [xs[i] for i in picked], 0, 60.0)


@pytest.mark.needs("xgboost")
def test_pyxais_reading_of_an_xgboost_model():
    task = _xgboost_task()
    reading = adapter.boosted_reading(task.forest, task.model)
    ours, theirs = task.forest, reading.forest
    assert reading.ties == "first" and theirs.features == ours.features
    # its leaves are the float64 numbers of XGBoost's printed float32 ones: within a float32
    # rounding of them, and its base score's logit in float64
    for t_ours, t_theirs in zip(ours.trees, theirs.trees):
        for a, b in zip(t_ours.nodes, t_theirs.nodes):
            if type(a) is Leaf:
                assert a.weights[0] == b.weights[0] == 0.0
                assert float(np.float32(b.weights[1])) == a.weights[1]
    from rfcircuits.boosted_import import xgboost_document

    printed = xgboost_document(task.model)["learner"]["learner_model_param"]["base_score"]
    base = float(printed.strip("[]"))  # "[6.274165E-1]"
    assert theirs.init[1] == -np.log(1 / base - 1)
    assert abs(theirs.init[1] - ours.init[1]) < 1e-6 and theirs.init[1] != ours.init[1]
    assert [theirs.decision(x) for x in task.instances] == \
        [ours.decision(x) for x in task.instances]  # no near tie among these rows
    assert adapter.boosted_reading(task.forest, None) is None


@pytest.mark.needs("xgboost")
def test_boosted_adapters_decline_what_pyxai_cannot_explain():
    binary, multi = _xgboost_task(rows=2), _xgboost_task(3, rows=2)
    iris = peers.make_task("iris", 3, 2, 0, 2, "random", 20.0)
    tree_specific = peers.load_adapter("pyxai-bt")
    assert (tree_specific.name, tree_specific.votes, tree_specific.library,
            tree_specific.ties) == ("pyxai-bt", "soft", "xgboost", "first")
    for task, why in ((iris, "explains boosted trees of XGBoost only"),
                      (multi, "need two classes")):
        answers = list(tree_specific.explain(task))
        assert [a.status for a in answers] == ["none"] * 2 and why in answers[0].error
    assert peers.load_adapter("pyxai-bt-direct").max_classes is None
    assert peers.load_adapter("pyxai-bt-contrastive").field == "contrastive"
    with pytest.raises(InputError, match="boosted-tree reason kind 'sufficient_reason'"):
        adapter.PyxaiBoostedAdapter("sufficient_reason")
    assert binary.forest.voting == "soft"


def _grade_boosted(name: str, task: Task):
    peer = peers.load_adapter(name)
    answers = list(peer.explain(task))
    return answers, grade_answers(task.forest, task.instances, answers, peer.name,
                                  peer.version(), peer.ties, peer.promises, task=task,
                                  peer_model=peer.peer_model(task))


@pytest.mark.needs("pyxai")
@pytest.mark.needs("xgboost")
def test_tree_specific_and_direct_reasons_keep_their_promises_near_ties(record_property):
    task = _xgboost_task()
    for name in ("pyxai-bt", "pyxai-bt-direct"):
        answers, report = _grade_boosted(name, task)
        assert [a.status for a in answers] == ["ok"] * 10
        assert report.ok and not report.findings, report.text()
    record_property("summary", "PyXAI's tree-specific and direct reasons of an XGBoost model "
                    "(breast-cancer, 5 rounds, 10 rows nearest a tie): every promise kept")


@pytest.mark.needs("pyxai")
@pytest.mark.needs("xgboost")
def test_contrastive_reasons_of_boosted_trees_forget_the_base_score():
    """PyXAI's MIP for a contrastive reason of boosted trees asks the leaves alone to change
    sign, without the base score's margin (+0.52 here): on rows whose leaves sum to at most
    0 but whose margin is positive it answers nothing to change — a broken promise, shown
    by the instance itself."""
    task = _xgboost_task()
    answers, report = _grade_boosted("pyxai-bt-contrastive", task)
    forest = task.forest
    assert report.broken, report.text()
    for f in report.broken:
        assert f.item == () and f.promise == "reaches" and f.confirmed
        assert f.evidence_world == f.instance
        leaves = forest.votes(f.instance)[1] - forest.int_init[1]
        assert leaves <= 0 < forest.votes(f.instance)[1]  # class 1 by the base score alone
    kept = {f.row for f in report.broken}
    for a in answers:
        if a.index + 1 not in kept:
            x = task.instances[a.index]
            assert forest.votes(x)[1] - forest.int_init[1] > 0 or forest.decision(x) == 0
