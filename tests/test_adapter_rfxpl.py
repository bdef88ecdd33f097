"""The RFxpl adapter. Without RFxpl: configuration errors, the checkout's version, the mapping
of AXps / CXps to records, and the worker machinery (answers, errors, a crash, an overrun) on
a stand-in ``xrf`` package. With a checkout in ``$RFCIRCUITS_RFXPL`` (and anytree and
namedlist installed): RFxpl's answers on iris keep every promise, and on a forest where it
misses an AXp the grader's missing items are the ones brute force finds.
"""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
import sys
from decimal import Decimal

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier

from rfcircuits.cli.main import main
from rfcircuits.errors import InputError
from rfcircuits.forest import Leaf, forest_from_json
from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values
from rfcircuits.crosscheck.peers.adapters import rfxpl
from rfcircuits.crosscheck.peers.adapters.base import PeerUnavailable, Task, check_adapter, \
    load_adapter
from rfcircuits.crosscheck.peers.grading import grade_peer
from rfcircuits.crosscheck.peers.promises import grade_answers
from rfcircuits.crosscheck.peers.sklearn_model import sklearn_from_forest
from tests.test_adapter_command import iris_task



# A stand-in for RFxpl's xrf package: its answer depends on the row's petal length.
FAKE_XRF = r'''
import os, sys, time
import numpy as np

class XRF:
    def __init__(self, model, features, classes, verb=0):
        self.enc = type("Encoding", (), {"target": 0})()

    def enumerate(self, inst, xtype, etype="maxsat", smallest=True, xnum=100):
        if any(float(np.float32(v)) != v for v in inst):
            raise ValueError("not read as the model reads it (float32)")
        petal = inst[2]
        if petal < 2:
            return iter([[3, 2]] if xtype == "abd" else [[2], [3]])
        if petal < 4:
            raise RuntimeError("no model for this row")
        if petal < 5:
            print("fake crash", file=sys.stderr, flush=True)
            os._exit(3)
        time.sleep(60)
'''


def fake_checkout(root, xforest: str = FAKE_XRF) -> str:
    (root / "xrf").mkdir()
    (root / "xrf" / "__init__.py").write_text("from .xforest import *\n")
    (root / "xrf" / "xforest.py").write_text(xforest)
    return str(root)


def test_unconfigured_rfxpl_is_unavailable(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv(rfxpl.ENV, raising=False)
    with pytest.raises(PeerUnavailable, match=f"--adapter-option path=DIR .* or in the "
                                              f"environment variable {rfxpl.ENV}"):
        rfxpl.RfxplAdapter().version()
    with pytest.raises(PeerUnavailable, match=f"{rfxpl.ENV}"):
        next(rfxpl.RfxplAdapter().explain(iris_task(rows=1)))
    monkeypatch.setenv(rfxpl.ENV, str(tmp_path))
    with pytest.raises(PeerUnavailable, match=f"{tmp_path} \\(the RFxpl {rfxpl.ENV}\\): not an "
                                              "RFxpl checkout"):
        rfxpl.RfxplAdapter().version()
    with pytest.raises(PeerUnavailable, match="the RFxpl --adapter-option path"):
        rfxpl.RfxplAdapter(str(tmp_path / "nowhere")).version()
    # the option the message names is the one both commands take, and fuzz --help says so
    for command in (["verify-peer", "--dataset", "iris"], ["fuzz", "--seconds", "1"]):
        assert main([*command, "--adapter", "rfxpl", "--adapter-option",
                     f"path={tmp_path / 'nowhere'}", "--out", str(tmp_path / "out")]) == 2
        assert "the RFxpl --adapter-option path" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fuzz", "--help"])
    assert "--adapter-option KEY=VALUE" in capsys.readouterr().out


def test_importing_the_adapter_does_not_import_rfxpl():
    code = ("import sys, rfcircuits.crosscheck.peers.adapters.rfxpl; "
            "print(sorted(m for m in ('xrf', 'anytree', 'namedlist') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_version_is_the_checkouts_commit_or_source(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert rfxpl.source_version(str(plain)) == "source"
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / "sub" / "f").write_text("x")

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c",
                               "user.email=t@t", *args], capture_output=True, text=True,
                              check=True).stdout.strip()

    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "one")
    assert rfxpl.source_version(str(repo)) == git("log", "-1", "--format=%H")
    # a directory inside someone else's repository is no checkout of its own
    assert rfxpl.source_version(str(repo / "sub")) == "source"


def test_axps_and_cxps_become_records_at_the_instances_states():
    forest = forest_from_json({
        "format": "rfcircuits.forest/1", "classes": ["a", "b"],
        "features": [{"name": "u", "thresholds": [1.0, 2.0]}, {"name": "v", "thresholds": [0.5]}],
        "trees": [{"nodes": [{"feature": "u", "branches": [[[0], 1], [[1, 2], 2]]},
                             {"class": "a"}, {"class": "b"}]}]})
    assert rfxpl.record(forest, (2, 0), 1, [[1, 0]], [[0], [1]]) == {
        "decision": "b",
        "sufficient_reasons": [[{"feature": "u", "states": ["(2.0,+inf)"]},
                                {"feature": "v", "states": ["(-inf,0.5]"]}]],
        "necessary_reasons": [[{"feature": "u", "states": ["(2.0,+inf)"]}],
                              [{"feature": "v", "states": ["(-inf,0.5]"]}]]}
    assert rfxpl.record(forest, (0, 1), 0, [], [])["sufficient_reasons"] == []


def _task_on(rows: list[list[float]], timeout: float) -> Task:
    base = iris_task()
    X = np.array(rows)
    return Task(base.forest, base.model, base.X_train, base.y_train, X,
                instances_from_values(base.forest, X), 0, timeout)


def test_worker_answers_errors_crashes_and_overruns(tmp_path):
    # petal lengths: answer, RuntimeError, crash, answer (a fresh worker), overrun
    task = _task_on([[5.1, 3.5, 1.4, 0.2], [5.5, 2.4, 3.7, 1.0], [6.4, 3.2, 4.5, 1.5],
                     [4.9, 3.0, 1.4, 0.2], [6.3, 3.3, 6.0, 2.5]], 1.0)
    adapter = rfxpl.RfxplAdapter(fake_checkout(tmp_path))
    answers = list(adapter.explain(task))
    assert [a.index for a in answers] == list(range(5))
    assert [a.status for a in answers] == ["ok", "error", "error", "ok", "timeout"]
    # the peer's error names the frame that raised it: RFxpl's (the stand-in's), not ours
    assert re.fullmatch(r"RuntimeError: no model for this row \(at xrf/xforest\.py:\d+ in "
                        r"enumerate\)", answers[1].error), answers[1].error
    assert answers[2].error == "RFxpl died: fake crash"
    assert answers[4].error == "overran 1 s"
    forest, x = task.forest, task.instances[0]

    def literal(f: int) -> dict:
        return {"feature": forest.features[f].name, "states": [forest.features[f].states[x[f]]]}

    assert answers[0].record == {"decision": forest.classes[0],
                                 "sufficient_reasons": [[literal(2), literal(3)]],
                                 "necessary_reasons": [[literal(2)], [literal(3)]]}


def test_a_worker_that_cannot_import_rfxpl_is_unavailable(tmp_path):
    adapter = rfxpl.RfxplAdapter(fake_checkout(tmp_path, "import anytree_missing_module\n"))
    with pytest.raises(PeerUnavailable, match="did not start: ModuleNotFoundError: No module "
                                              "named 'anytree_missing_module'"):
        list(adapter.explain(iris_task(rows=1)))


def test_registered_as_rfxpl(tmp_path):
    adapter = load_adapter("rfxpl", path=fake_checkout(tmp_path))
    assert isinstance(adapter, rfxpl.RfxplAdapter) and check_adapter(adapter) is adapter
    assert adapter.ties == "first" and set(adapter.promises) == {"sufficient_reasons",
                                                                 "necessary_reasons"}


def _grade(task: Task):
    adapter = rfxpl.RfxplAdapter()
    answers = list(adapter.explain(task))
    return answers, grade_answers(task.forest, task.instances, answers, adapter.name,
                                  adapter.version(), adapter.ties, adapter.promises)


@pytest.mark.needs("rfxpl")
def test_rfxpl_on_iris_keeps_every_promise(record_property):
    task = iris_task(trees=5, depth=3, rows=5)
    answers, report = _grade(task)
    assert [a.status for a in answers] == ["ok"] * 5
    _keeps_every_promise(report, "RFxpl on iris (5 trees, depth 3, 5 rows)", record_property)


def _keeps_every_promise(report, what: str, record_property) -> None:
    assert report.ok and not report.findings, report.text()
    for name in ("sufficient_reasons", "necessary_reasons"):
        tally = report.fields[name]
        # SRs and NRs promised complete together: the oracle's certificate proves both
        assert tally.completeness == "certified" and tally.items == tally.holds >= 5
    seconds = report.to_json()["seconds"]
    record_property("summary", f"{what}: median seconds per row: RFxpl "
                    f"{seconds['peer_median']}, our grading {seconds['ours_median']}")


def _brute_srs(forest, x) -> set[frozenset[int]]:
    """Subset-minimal sets of features that, fixed at x's states, keep x's decision in every
    world (enumerated)."""
    worlds = list(itertools.product(*(range(f.n_states) for f in forest.features)))
    d = forest.decision(x)
    keep = [frozenset(s) for k in range(len(x) + 1)
            for s in itertools.combinations(range(len(x)), k)
            if all(forest.decision(w) == d for w in worlds if all(w[f] == x[f] for f in s))]
    return {s for s in keep if not any(t < s for t in keep)}


@pytest.mark.needs("rfxpl")
def test_rfxpl_missing_axps_are_the_ones_brute_force_finds(record_property):
    # x0 OR x1: at (0, 0) changing either feature changes the class, so both are CXps and
    # the one AXp is {x0, x1}; RFxpl b07883d returns no AXp there (its enumeration blocks
    # every singleton CXp in its hitting-set solver and stops before trying all features)
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], float)
    y = np.array([0, 1, 1, 1])
    model = RandomForestClassifier(n_estimators=1, bootstrap=False, random_state=0).fit(X, y)
    forest = forest_from_sklearn(model, votes="hard")
    task = Task(forest, model, X, y, X, instances_from_values(forest, X), 0, 60.0)
    answers, report = _grade(task)
    assert not report.broken, report.text()
    index = {f.name: k for k, f in enumerate(forest.features)}
    expected = set()
    for a, x in zip(answers, task.instances):
        listed = {frozenset(index[lit["feature"]] for lit in t)
                  for t in a.record["sufficient_reasons"]}
        expected |= {(a.index + 1, s) for s in _brute_srs(forest, x) - listed}
    found = {(f.row, frozenset(v for v, _ in f.item)) for f in report.findings
             if f.kind == "missing"}
    assert found == expected and all(f.field == "sufficient_reasons" for f in report.findings)
    record_property("summary", f"RFxpl on x0 OR x1: {len(found)} AXp(s) missing "
                    "(confirmed by brute force)")


# ---------------------------------------------------------------------------------------------
# The weighted-vote (MaxSAT) mode.

# A stand-in for its encoding and explainer: the target is the row's second value (as a class
# index), AXps and CXps fixed.
FAKE_MAXSAT = r'''
class XRF:
    def __init__(self, model, features, classes, verb=0):
        self.ffnames = features

    def encode(self, inst, etype="maxsat"):
        assert etype == "maxsat"
        self.enc = type("Encoding", (), {"target": int(inst[1])})()
'''
FAKE_EXPLAINER = r'''
class MXExplainer:
    def __init__(self, enc, inps, preamble, target_name, verb=1):
        pass

    def enumerate(self, sample, xtype="con", smallest=False, xnum=100):
        return ([[0, 1]], [[0]]) if xtype == "abd" else ([[0, 1]], [[0], [1]])
'''


def tie_forest():
    """Two trees whose leaf probabilities RFxpl rounds to a tie: exactly, (u, v) = (0, 0) is
    B by 0.0002 and (1, 1) is A by as much; rounded half to even to three decimals, both tie
    at 1.000 (0.3335 → 0.334, 0.6665 → 0.666, 0.6664 → 0.666, 0.3336 → 0.334)."""
    def leaf(a: float, b: float) -> dict:
        return {"weights": [a, b]}

    return forest_from_json({
        "format": "rfcircuits.forest/1", "votes": "soft", "classes": ["A", "B"],
        "features": [{"name": "u", "thresholds": [0.5]}, {"name": "v", "thresholds": [0.5]}],
        "trees": [{"nodes": [{"feature": "u", "branches": [[[0], 1], [[1], 2]]},
                             leaf(0.3335, 0.6665), leaf(0.6665, 0.3335)]},
                  {"nodes": [{"feature": "v", "branches": [[[0], 1], [[1], 2]]},
                             leaf(0.6664, 0.3336), leaf(0.3336, 0.6664)]}]})


def tie_task() -> Task:
    forest = tie_forest()
    model = sklearn_from_forest(forest)
    soft = forest_from_sklearn(model, ["u", "v"], ["A", "B"])
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], float)
    return Task(soft, model, X, np.array([1, 1, 0, 0]), X, instances_from_values(soft, X))


def test_rfxpl_rounds_the_shortest_decimal_half_to_even():
    tree = type("Tree", (), {"value": np.array([[[0.0625, 0.9375]], [[0.0635, 0.9365]],
                                                [[1.0, 2.0]], [[0.0, 0.0]]])})()
    # 0.0625 -> 0.062 and 0.0635 -> 0.064 (even last digits); 1/3 and 2/3 from value / sum;
    # a zero sum stays zero
    assert rfxpl.rounded_probabilities(tree).tolist() == [[62, 938], [64, 936], [333, 667],
                                                          [0, 0]]
    assert rfxpl.thousandths([1000, 62, 2333]) == ["1.000", "0.062", "2.333"]


def test_the_maxsat_modes_model_is_the_forest_with_rfxpls_rounded_probabilities():
    base = iris_task(trees=3, depth=2)
    soft = forest_from_sklearn(base.model, [f.name for f in base.forest.features],
                               list(base.forest.classes))
    task = Task(soft, base.model, base.X_train, base.y_train, base.rows,
                instances_from_values(soft, base.rows))
    adapter = load_adapter("rfxpl-maxsat", path="/nowhere")
    assert (adapter.name, adapter.ties, adapter.votes) == ("rfxpl-maxsat", "strict", "soft")
    model = adapter.peer_model(task)
    assert model.ties == "strict" and model.forest.features == soft.features
    for est, tree in zip(base.model.estimators_, model.forest.trees):
        value = est.tree_.value[:, 0, :]
        for node in tree.nodes:
            if isinstance(node, Leaf):  # our leaves are sklearn's, in another numbering
                assert any(list(node.weights) == [float(round(Decimal(str(p / row.sum())), 3)
                                                        * 1000) for p in row] for row in value)
    for x in task.instances:  # the rounded sums stay within 0.0005 a tree of the exact ones
        exact = soft.readable_votes(soft.votes(x))
        assert all(abs(r / 1000 - e) <= 0.0005 * 3 for r, e in zip(model.forest.votes(x), exact))
    assert rfxpl.RfxplAdapter("/nowhere").peer_model(task) is None  # the majority vote's own
    hard = Task(base.forest, base.model, base.X_train, base.y_train, base.rows, base.instances)
    assert adapter.peer_model(hard) is None
    with pytest.raises(InputError, match="RFxpl mode 'mx'"):
        rfxpl.RfxplAdapter(mode="mx")


def test_maxsat_worker_answers_and_says_why_it_explains_nothing(tmp_path):
    root = fake_checkout(tmp_path, FAKE_MAXSAT)
    (tmp_path / "xrf" / "explain.py").write_text(FAKE_EXPLAINER)
    task = tie_task()
    answers = list(rfxpl.RfxplAdapter(root, "maxsat").explain(task))
    # the fake's target is v's value, the exact decision but on rows 1 and 4, which tie when
    # rounded: no answer there
    assert [a.status for a in answers] == ["none", "ok", "ok", "none"]
    assert answers[0].error.startswith("RFxpl's rounded sums (A 1.000, B 1.000) do not make "
                                       "its class A beat every other strictly")
    assert "its class B" in answers[3].error
    assert "exact sums A 0.9999, B 1.0001" in answers[0].error
    assert answers[1].record["decision"] == "B" and answers[2].record["decision"] == "A"
    assert [[lit["feature"] for lit in c] for c in answers[1].record["necessary_reasons"]] == \
        [["u"], ["v"]]
    assert [[lit["feature"] for lit in t] for t in answers[1].record["sufficient_reasons"]] == \
        [["u", "v"]]


def test_a_soft_forest_of_probabilities_reaches_the_peers_as_its_model():
    forest = tie_forest()
    model = sklearn_from_forest(forest)
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], float)
    assert model.predict(X).tolist() == [1, 1, 0, 0]
    assert model.predict_proba(X)[0].tolist() == [(0.3335 + 0.6664) / 2, (0.6665 + 0.3336) / 2]
    scores = forest_from_json({**forest.to_json(), "init": [0.0, 0.5]})
    with pytest.raises(InputError, match="initial scores"):
        sklearn_from_forest(scores)
    negative = forest.to_json()
    negative["trees"][0]["nodes"][1]["weights"] = [-0.25, 1.25]
    with pytest.raises(InputError, match="no class probabilities"):
        sklearn_from_forest(forest_from_json(negative))


@pytest.mark.needs("rfxpl")
def test_rfxpl_maxsat_on_iris_keeps_every_promise(record_property):
    report = grade_peer("rfxpl-maxsat", dataset="iris", trees=5, depth=3, count=5,
                        pick="margin")
    _keeps_every_promise(report, "RFxpl (MaxSAT) on iris (5 trees, depth 3, 5 rows nearest a "
                         "tie)", record_property)


@pytest.mark.needs("rfxpl")
def test_rfxpl_maxsat_rounding_shows_as_differences_of_definition_with_worlds():
    task = tie_task()
    adapter = rfxpl.RfxplAdapter(mode="maxsat")
    answers = list(adapter.explain(task))
    assert [a.status for a in answers] == ["none", "ok", "ok", "none"]
    report = grade_answers(task.forest, task.instances, answers, adapter.name,
                           adapter.version(), adapter.ties, adapter.promises, task=task,
                           peer_model=adapter.peer_model(task))
    assert report.ok and not report.failures, report.text()
    found = {(f.row, f.field, f.promise) for f in report.findings}
    assert {f.kind for f in report.findings} == {"definition"}
    # rows 1 and 4 tie when rounded; at (0, 1) RFxpl's AXp keeps v, which the exact sums do
    # not need, and its CXp v flips only to a rounded tie; (1, 0) alike
    assert found == {(1, "decision", "an answer"), (4, "decision", "an answer"),
                     *((r, "sufficient_reasons", p) for r in (2, 3)
                       for p in ("minimal", "completeness")),
                     (2, "necessary_reasons", "necessary"), (3, "necessary_reasons", "necessary")}
    for f in report.findings:
        w = f.model_witness
        assert w.confirmed and set(w.peer.values()) == {"1.000"}
        assert sorted(w.exact.values()) == [0.9999, 1.0001]
