"""The PyXAI adapter: conversion of threshold conditions to our literals, the
optional-dependency policy, and (only when PyXAI is installed) a real run whose reasons the
verifier grades. PyXAI is never imported in the test process (it parses ``sys.argv`` and
imports shap/matplotlib); the adapter runs it in a worker subprocess.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import rfcircuits.crosscheck.adapters.pyxai as adapter
from rfcircuits.forest import forest_from_json
from rfcircuits.cli.main import build_parser, main
from rfcircuits.crosscheck.verify import verify

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
needs_pyxai = pytest.mark.skipif(adapter.pyxai_version() is None, reason="PyXAI not installed")


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
    # The converted reason is graded by verify: 2.5 < x1 <= 4.0 ∧ x2 > 1.0 forces class b,
    # and so does x1 > 2.5 ∧ x2 > 1.0: a threshold can be relaxed, the term is not prime. It is
    # variable-minimal: x1 in (2.5,4.0] alone allows x2 <= 1.0 (class a), x2 > 1.0 alone
    # allows x1 <= 2.5 (class a), so no implicant lies on fewer features.
    line = {"instance": {"x1": 3.0, "x2": 2.0, "x3": -1}, "decision": "b",
            "general_sufficient_reasons": [literals]}
    report = verify(forest, [x], [(1, line)], "first", oracle_only=adapter.GRADED)
    item = report.lines[0].fields[1].items[0]
    assert item.verdict == {"valid": True, "prime": False, "variable_minimal": True}
    with adapter.SatOracle(forest, "first") as sat:
        assert adapter.why_not_prime(sat, forest, item.item, x) == "relax"
        redundant = ((0, 0b1100), (1, 0b10), (2, 0b1))  # x3 is never tested
        assert adapter.why_not_prime(sat, forest, redundant, x) == "drop"


def test_importing_the_adapter_does_not_import_pyxai():
    assert "pyxai" not in sys.modules


def test_missing_pyxai_is_bad_input(monkeypatch, capsys):
    monkeypatch.setattr(adapter, "pyxai_version", lambda: None)
    assert main(["verify-pyxai", "--dataset", "iris"]) == 2
    err = capsys.readouterr().err
    assert "pip install pyxai" in err and "Traceback" not in err


def test_random_pick_draws_the_same_rows_as_before():
    X = np.arange(40.0).reshape(20, 2)
    forest = adapter.train_forest(_dataset(X), 3, 2, 0).forest
    expected = np.sort(np.random.default_rng(7).choice(20, size=5, replace=False))
    assert list(adapter.pick_rows(forest, X, 5, "random", 7)) == list(expected)
    assert sorted(adapter.pick_rows(forest, X, 50, "random", 7)) == list(range(20))


def _dataset(X):
    y = (X[:, 0] + X[:, 1] > 40).astype(int)
    return adapter.Dataset("toy", ["u", "v"], X, y, ["no", "yes"])


def _brute_margin(votes):
    top, second = sorted(votes, reverse=True)[:2]
    return top - second


@pytest.mark.parametrize("trees", [2, 4, 11])
def test_margin_pick_takes_one_row_per_instance_closest_to_a_tie(trees):
    data = adapter.load_dataset("iris")
    forest = adapter.train_forest(data, trees, 3, 0).forest
    instances = adapter.instances_from_values(forest, data.X)
    first_row = {}
    for i, x in enumerate(instances):
        first_row.setdefault(x, i)
    # Brute force: the first row of each distinct instance, by (margin of its votes, row).
    ranked = sorted(first_row.values(),
                    key=lambda i: (_brute_margin(forest.votes(instances[i])), i))
    for k in (1, 5, 20, 1000):
        picked = list(adapter.pick_rows(forest, data.X, k, "margin", 0))
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
    assert tuple(pick.choices) == adapter.PICKS and pick.default == "random"
    with pytest.raises(adapter.InputError, match="--pick must be one of random, margin"):
        adapter.pick_rows(None, np.zeros((1, 1)), 1, "bogus", 0)


@needs_pyxai
def test_pyxai_reasons_on_iris_are_valid_and_graded():
    data = adapter.load_dataset("iris")
    trained = adapter.train_forest(data, 3, 2, 0)
    rows = data.X[[0, 60, 120]]
    instances = adapter.instances_from_values(trained.forest, rows)
    kinds = ["sufficient_reason", "majoritary_reason"]
    answers = adapter.run_pyxai(trained.model, rows, kinds, timeout=20.0)
    assert [a["status"] for a in answers] == ["ok"] * 6
    results = adapter.grade(trained.forest, instances, answers, kinds)
    for r in results.values():
        assert not r.promise_broken
        assert r.verdicts()["general_sufficient_reasons"]["valid"] == {"holds": 3}
        assert r.verdicts()["sufficient_reasons"]["sufficient"] == {"holds": 3}


@needs_pyxai
def test_verify_pyxai_command_on_a_binary_dataset(capsys):
    code = main(["verify-pyxai", "--dataset", "breast-cancer", "--trees", "3", "--depth", "2",
                 "--instances", "3", "--timeout", "20", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["agreement"]["pyxai_prediction_is_ours"] == 3
    ce = doc["kinds"]["minimal_contrastive_reason"]
    assert ce["field"] == "contrastive" and ce["calls"] == {"ok": 3}
    assert ce["verdicts"]["contrastive"]["reaches"] == {"holds": 3}
