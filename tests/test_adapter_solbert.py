"""The solbert adapter. Without solbert: its case distinctions read exactly on our states, the
implicants that contain a row, the optional-peer policy, and the worker (answers, a failure,
an overrun) on stand-in ``solbert`` and ``polars`` packages. With solbert (here or in the
environment ``$RFCIRCUITS_SOLBERT_PYTHON`` names): its tree mode on iris misses a prime
implicant, and its forest mode claims implicants that worlds refute, each finding confirmed
by the trees.
"""

from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from rfcircuits.forest import forest_from_json
from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values
from rfcircuits.crosscheck.peers.adapters import solbert, worker
from rfcircuits.crosscheck.peers.adapters.base import (PeerUnavailable, Task, check_adapter,
                                                       load_adapter)
from rfcircuits.crosscheck.peers.grading import grade_peer

FOREST = forest_from_json({
    "format": "rfcircuits.forest/1", "classes": ["a", "b"],
    "features": [{"name": "u", "thresholds": [1.0, 2.0]}, {"name": "v", "thresholds": [0.5]}],
    "trees": [{"nodes": [{"feature": "u", "branches": [[[0], 1], [[1, 2], 2]]},
                         {"class": "a"}, {"class": "b"}]}]})


def test_case_distinctions_are_decodes_read_with_exact_thresholds():
    cuts = [1.0, 2.0, float("inf")]  # cells (-inf,1], (1,2], (2,inf)
    assert solbert.conditions(cuts, [0]) == [(True, 1.0)]  # u > 1
    assert solbert.conditions(cuts, [2]) == [(False, 2.0)]  # u <= 2
    assert solbert.conditions(cuts, [0, 2]) == [(True, 1.0), (False, 2.0)]
    assert solbert.conditions(cuts, [0, 1, 2]) == []  # all excluded: decode leaves it out
    assert solbert.conditions(cuts, [1]) == [(False, 1.0), (True, 2.0)]  # no value meets both
    # on our states: a literal per feature, none when it allows every state
    assert solbert.term_of(FOREST, [cuts, [0.5, float("inf")]], {"0": [0]}) == ((0, 0b110),)
    assert solbert.term_of(FOREST, [cuts, [0.5, float("inf")]],
                           {"0": [0, 2], "1": [1]}) == ((0, 0b010), (1, 0b01))
    assert solbert.term_of(FOREST, [cuts, [0.5, float("inf")]], {"0": [0, 1, 2]}) == ()
    assert solbert.term_of(FOREST, [cuts, [0.5, float("inf")]], {"0": [1]}) is None
    # an unsorted list (solbert's forest mode) is read as decode reads it, position by position
    assert solbert.term_of(FOREST, [[float("inf"), 1.0, float("inf")], [0.5]],
                           {"0": [2]}) == ((0, 0b001),)


def test_a_row_gets_the_implicants_that_contain_it_and_their_class():
    terms = [(0, ((0, 0b001),)), (1, ((0, 0b110),)), (1, ((0, 0b100), (1, 0b10)))]
    out = solbert.record(FOREST, (2, 1), terms, 1)
    assert out == {"general_sufficient_reasons": [
        [{"feature": "u", "states": ["(1.0,2.0]", "(2.0,+inf)"]}],
        [{"feature": "u", "states": ["(2.0,+inf)"]}, {"feature": "v", "states": ["(0.5,+inf)"]}]],
        "solbert": {"implicants": 3, "empty": 1}, "decision": "b"}
    both = solbert.record(FOREST, (0, 0), [(0, ()), (1, ((1, 0b01),))], 0)
    assert "decision" not in both and len(both["general_sufficient_reasons"]) == 2
    assert solbert.record(FOREST, (0, 1), terms[1:], 0)["general_sufficient_reasons"] == []


def test_registered_and_unavailable_without_solbert(monkeypatch):
    monkeypatch.setattr(worker, "installed_version", lambda *args: None)
    adapter = load_adapter("solbert")
    assert check_adapter(adapter) is adapter
    assert (adapter.ties, adapter.votes) == ("first", "soft")
    with pytest.raises(PeerUnavailable, match="solbert is not installed .* pip install "
                                              "solbert==1.0.2 'polars<2'"):
        adapter.version()


# Stand-ins for solbert and polars: the implicants depend on the model's number of trees
# (1: one per class; 2: solbert raises; 3: it hangs).
FAKE_POLARS = '''
def DataFrame(data):
    return type("DataFrame", (), {"columns": list(data)})()
def Series(name, values, dtype=None):
    return dtype
def Enum(categories):
    return list(categories)
'''
FAKE_ENCODER = '''
multiprocessing = None
'''
FAKE_FOREST = '''
import time
class RandomForestWrapper:
    def __init__(self, clf, lhs, rhs):
        self.clf, self.classes = clf, rhs
        print("Total Combinations: 2")  # solbert prints; the protocol skips it
    def feature_values(self, f):
        return [0.5, float("inf")]
class RandomForestEncoder:
    def __init__(self, wrapper):
        from solbert.forest import encoder
        assert encoder.multiprocessing.Pool(processes=5) is None  # replaced by the worker
        self.w = wrapper
        n = len(wrapper.clf.estimators_)
        if n == 2:
            raise RuntimeError("no model for this forest")
        if n == 3:
            time.sleep(60)
        self.vintervals = [[1, 2], [3, 4]]
    def explain_incremental(self):
        return {"0": [[-2]], "1": [[-1, -4]]}
'''


def _fake_solbert(root) -> None:
    (root / "polars.py").write_text(FAKE_POLARS)
    package = root / "solbert"
    (package / "forest").mkdir(parents=True)
    (package / "tree").mkdir()
    (package / "__init__.py").write_text("")
    (package / "tree" / "__init__.py").write_text(
        "DecisionTreeWrapper = DecisionTreeEncoder = None\n")
    (package / "forest" / "__init__.py").write_text(FAKE_FOREST)
    (package / "forest" / "encoder.py").write_text(FAKE_ENCODER)


def _task(trees: int, timeout: float = 60.0) -> Task:
    X = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = np.array([0, 0, 1, 1])
    model = RandomForestClassifier(n_estimators=trees, max_depth=1, bootstrap=False,
                                   random_state=0).fit(X, y)
    forest = forest_from_sklearn(model, ["u", "v"], ["a", "b"])
    return Task(forest, model, X, y, X, instances_from_values(forest, X), 0, timeout)


def test_worker_answers_fails_and_overruns_on_stand_ins(tmp_path, monkeypatch):
    _fake_solbert(tmp_path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *sys.path]))
    monkeypatch.delenv(solbert.PYTHON_ENV, raising=False)
    adapter = solbert.SolbertAdapter()
    answers = list(adapter.explain(_task(1)))
    assert [a.status for a in answers] == ["ok"] * 4
    # class a: u <= 0.5 (cell 1 excluded); class b: u > 0.5 and v <= 0.5 (cells 0 and 3),
    # where v, which the stump never tests, has one state: its literal allows it, and goes
    assert [a.record.get("decision") for a in answers] == ["a", "a", "b", "b"]
    assert answers[3].record["general_sufficient_reasons"] == [
        [{"feature": "u", "states": ["(0.5,+inf)"]}]]
    assert answers[0].record["solbert"] == {"implicants": 2, "empty": 0}
    failed = list(adapter.explain(_task(2)))
    assert [a.status for a in failed] == ["error"] * 4
    assert re.fullmatch(r"RuntimeError: no model for this forest \(at forest/__init__\.py:\d+ "
                        r"in __init__\)", failed[0].error), failed[0].error
    slow = list(adapter.explain(_task(3, timeout=0.5)))
    assert [a.status for a in slow] == ["timeout"] * 4
    assert slow[0].error == "overran 2 s (0.5 s a row)"


def _iris_rows():
    X, y = load_iris(return_X_y=True)
    return X, y, X[::15]


@pytest.mark.needs("solbert")
def test_solbert_tree_mode_misses_a_prime_implicant_on_iris(record_property):
    X, y, rows = _iris_rows()
    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    report = grade_peer("solbert", model=model, rows=rows)
    tally = report.fields["general_sufficient_reasons"]
    # every implicant is valid; for class 2 it gives 4.85 < petal length ∧ 1.75 < petal width
    # and petal length <= 4.85 ∧ 1.75 < petal width, but not 1.75 < petal width, which both
    # branches below it decide for class 2
    assert (tally.items, tally.holds, tally.broken, tally.missing) == (10, 7, 3, 3)
    for f in report.broken:
        assert f.promise == "prime" and f.confirmed
        assert f.evidence_item == ((3, 0b100),)  # x3 > 1.75: still valid
    assert {f.item for f in report.findings if f.kind == "missing"} == {((3, 0b100),)}
    record_property("summary", f"solbert (tree mode) on iris, depth 3: {tally.broken} broken "
                    f"promises (prime), {tally.missing} missing")


@pytest.mark.needs("solbert")
def test_solbert_forest_mode_claims_implicants_that_worlds_refute():
    X, y, rows = _iris_rows()
    model = RandomForestClassifier(n_estimators=1, max_depth=2, random_state=0).fit(X, y)
    report = grade_peer("solbert", model=model, rows=rows)
    invalid = [f for f in report.broken if f.promise == "valid"]
    assert invalid and all(f.confirmed and f.evidence_world is not None for f in invalid)
    # one tree: petal width <= 0.75 is setosa, else petal length <= 4.85 versicolor, else
    # virginica; solbert's implicants "petal length <= 4.85" (class 1) and "4.85 < petal
    # length" (class 2) leave petal width out, so setosa worlds escape both
    assert {f.item for f in invalid} == {((2, 0b01),), ((2, 0b10),)}
    assert invalid[0].row == 1 and invalid[0].item == ((2, 0b01),)  # a setosa row itself
