"""Findings that rest only on states no float32 input reaches
(:mod:`rfcircuits.crosscheck.peers.unreachable`), told apart from broken promises, on three trees
fitted by scikit-learn so that two thresholds of ``x0`` enclose no float32 value. A peer that
reads inputs as float64 (our engine on the forest imported without merging, as RFxpl cuts)
answers right for its reading and wrong for the model scikit-learn runs; every expectation
here is worked out from the trees' tests on float64 values (:func:`votes64`), not from the
grader."""

from __future__ import annotations

import json
from collections.abc import Iterator

import joblib
import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

from rfcircuits.cli.main import main
from rfcircuits.errors import InputError
from rfcircuits.explain import Explainer
from rfcircuits.formats import validator
from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values
from rfcircuits.crosscheck.peers import fuzz as pf
from rfcircuits.crosscheck.peers.adapters.base import Answer, Promise, Task
from rfcircuits.crosscheck.peers.adapters.rfxpl import literals
from rfcircuits.crosscheck.peers.grading import grade_peer, load_model_data
from rfcircuits.crosscheck.peers.unreachable import Float64View

HIGH = float(np.float32(0.52))
HIGHER = float(np.nextafter(np.float32(HIGH), np.float32(1)))  # the next float32
A = 0.5 / 2 + HIGH / 2  # a tree's threshold between 0.5 and HIGH (a float32 value)
MIDDLE = 0.5 / 2 + HIGHER / 2  # another's, between 0.5 and HIGHER
ABOVE = float(np.nextafter(np.float32(A), np.float32(1)))  # the float32 value after A
ROWS = np.array([[0.3, 0.0], [0.9, 0.0]])
PEERS = "tests.test_unreachable"


def gap_model() -> RandomForestClassifier:
    """T1: ``x0 <= A`` votes 0, else 1; T2: ``x0 <= MIDDLE`` votes 1, else 0; T3: ``x1 <=
    0.5`` votes 0, else 1 (each fitted by scikit-learn on two rows)."""
    t1 = DecisionTreeClassifier(random_state=0).fit([[0.5, 0], [HIGH, 0]], [0, 1])
    t2 = DecisionTreeClassifier(random_state=0).fit([[0.5, 0], [HIGHER, 0]], [1, 0])
    t3 = DecisionTreeClassifier(random_state=0).fit([[0.3, 0], [0.3, 1]], [0, 1])
    model = RandomForestClassifier(n_estimators=3).fit([[0.3, 0], [0.3, 1]], [0, 1])
    model.estimators_ = [t1, t2, t3]
    return model


def votes64(x0: float, x1: float) -> list[int]:
    """The three trees' votes on float64 values, read off their tests."""
    ballots = [0 if x0 <= A else 1, 1 if x0 <= MIDDLE else 0, 0 if x1 <= 0.5 else 1]
    return [ballots.count(0), ballots.count(1)]


def test_the_model_is_as_described():
    model = gap_model()
    assert [t.tree_.threshold[0] for t in model.estimators_] == [A, MIDDLE, 0.5]
    assert float(np.float32(A)) == A and A < MIDDLE < ABOVE  # no float32 in (A, MIDDLE]
    # scikit-learn reads float32: no input lands between A and MIDDLE, so x0 never matters
    grid = np.array([[v, u] for v in (0.0, A, MIDDLE, ABOVE, 1.0) for u in (0.0, 1.0)])
    assert model.predict(grid).tolist() == [int(u > 0.5) for _, u in grid]
    assert votes64(MIDDLE, 0.0) == [1, 2]  # but read as float64, the gap is a flip


class Float64Peer:
    """Every SR and NR of the forest as a float64 reader cuts it, named in our states."""

    name = "float64-peer"
    ties = "first"
    promises = {"sufficient_reasons": Promise("formal", "features", "all"),
                "necessary_reasons": Promise("formal", "features", "all")}

    def version(self) -> str:
        return "test"

    def sets(self, task: Task) -> Iterator[tuple[int, list, list]]:
        wide = forest_from_sklearn(task.model, merge=False, votes="hard")
        explainer = Explainer(wide, "first")
        for i, x in enumerate(instances_from_values(wide, task.rows)):
            e = explainer.explain_states(x, ("sr", "nr"))
            yield i, [[f for f, _ in t] for t in e.sufficient_reasons], \
                [[f for f, _ in c] for c in e.necessary_reasons]

    def explain(self, task: Task) -> Iterator[Answer]:
        for i, srs, nrs in self.sets(task):
            x = task.instances[i]
            yield Answer(i, "ok", {
                "sufficient_reasons": [literals(task.forest, x, s) for s in srs],
                "necessary_reasons": [literals(task.forest, x, c) for c in nrs]})


class Liar(Float64Peer):
    """Also claims that x0 alone is sufficient: false on real inputs (x1 flips)."""

    name = "liar"

    def sets(self, task: Task) -> Iterator[tuple[int, list, list]]:
        for i, srs, nrs in super().sets(task):
            yield i, srs + [[0]], nrs


def test_the_float64_view_finds_the_state_no_float32_reaches():
    model = gap_model()
    forest = forest_from_sklearn(model, votes="hard")
    assert forest.features[0].thresholds == (A,)  # merged by the importer
    view = Float64View.of(forest, model, "first")
    assert view is not None and view.wide.features[0].thresholds == (A, MIDDLE)
    assert [g.to_json() for g in view.gaps((1, 0))] == [
        {"feature": "x0", "state": f"({A!r},{MIDDLE!r}]", "thresholds": [A, MIDDLE],
         "float32_below": A, "float32_above": ABOVE}]
    assert view.gaps((0, 0)) == view.gaps((2, 1)) == []
    # our states are the reachable ones; a literal on values keeps the gap inside it
    assert view.instance((1, 1)) == (2, 1)
    assert view.item("general_sufficient_reasons", (1, 1), ((0, 0b10),)) == ((0, 0b110),)
    assert view.item("sufficient_reasons", (1, 1), ((0, 0b10),)) == ((0, 0b100),)
    # a model whose thresholds float32 tells apart has nothing to grade again
    plain = RandomForestClassifier(n_estimators=2, random_state=0).fit(
        [[0, 0], [1, 1], [2, 0]], [0, 1, 0])
    assert Float64View.of(forest_from_sklearn(plain, votes="hard"), plain, "first") is None


def test_a_float64_reading_peer_shows_findings_that_rest_on_the_gap_not_broken_promises():
    report = grade_peer(Float64Peer(), model=gap_model(), rows=ROWS)
    assert report.ok, report.text()
    # per row (by hand, x0 only flips through the gap): the peer's SR {x0, x1} is not minimal
    # for float32 inputs, its NR {x0} not necessary, and our SR {x1} is missing from it
    expected = {("sufficient_reasons", "minimal"), ("necessary_reasons", "necessary"),
                ("sufficient_reasons", "completeness")}
    for row, values in ((1, {"x0": 0.3, "x1": 0.0}), (2, {"x0": 0.9, "x1": 0.0})):
        mine = [f for f in report.findings if f.row == row]
        assert {(f.field, f.promise) for f in mine} == expected
        for f in mine:
            assert f.kind == "unreachable" and (f.data_row, f.values) == (row - 1, values)
            w = f.witness
            gap = w.gaps[0]
            assert (gap.feature, gap.low, gap.high, gap.below, gap.above) == \
                ("x0", A, MIDDLE, A, ABOVE)
            v = w.values["x0"]
            assert A < v <= MIDDLE and w.float32["x0"] in (A, ABOVE)
            x1 = w.values.get("x1", 0.0)
            assert list(w.votes.values()) == votes64(v, x1) and w.decision == "1"
            assert w.confirmed
    fields = report.fields
    assert (fields["sufficient_reasons"].unreachable, fields["necessary_reasons"].unreachable,
            fields["sufficient_reasons"].broken, fields["sufficient_reasons"].missing) == \
        (4, 2, 0, 0)
    text = report.text()
    assert "result: every promise kept — 6 findings rest only on states no float32 input " \
           "reaches (not broken promises" in text
    assert f"thresholds {A!r} and {MIDDLE!r} of x0 enclose no float32 value (adjacent " \
           f"float32 values {A!r} and {ABOVE!r})" in text
    assert "data row 1 (rows[1]; row 2 explained)" in text and "values: x0 0.9, x1 0.0" in text
    doc = report.to_json()
    check = validator("peer-report")
    assert check.is_valid(doc), [e.message for e in check.iter_errors(doc)][:3]
    assert {f["kind"] for f in doc["findings"]} == {"unreachable"}


def test_a_real_broken_promise_beside_them_stays_broken():
    report = grade_peer(Liar(), model=gap_model(), rows=ROWS)
    assert not report.ok
    broken = report.broken
    assert [(f.row, f.field, f.promise) for f in broken] == \
        [(1, "sufficient_reasons", "sufficient"), (2, "sufficient_reasons", "sufficient")]
    for f in broken:  # a real input's world: x1 moved, and the trees' votes flip
        world = f.evidence_world
        assert f.confirmed and f.witness is None and world[1] == 1
        assert report.forest.decision(world) == 1 != report.forest.decision(f.instance)
    assert sum(f.kind == "unreachable" for f in report.findings) == 6
    assert report.result().startswith("2 broken promises — 6 findings rest only on states")


@pytest.fixture()
def project(tmp_path):
    """A user's scratch project: model.joblib and rows.csv (with a label column)."""
    joblib.dump(gap_model(), tmp_path / "model.joblib")
    (tmp_path / "rows.csv").write_text("x0,x1,label\n0.3,0,0\n0.9,0,0\n0.5,1,1\n")
    return tmp_path


def test_verify_peer_on_the_users_model_and_csv(project, capsys):
    model, rows, out = (str(project / n) for n in ("model.joblib", "rows.csv", "out"))
    args = ["verify-peer", "--model", model, "--data", rows, "--no-progress"]
    assert main([*args, "--adapter", f"{PEERS}:Float64Peer", "--out", out]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"verify-peer: {model} (RandomForestClassifier, 3 trees) on {rows}, "
                           "seed 0, 3 rows drawn at random; float64-peer test")
    assert f"data row 1 ({rows}, line 3; row 2 explained)" in text
    # the third row (x1 high) is decided by x1 alone, float32 or float64: no finding
    assert "result: every promise kept — 6 findings rest only" in text
    stem = f"{project / 'out' / PEERS}_Float64Peer"  # files are named as --adapter names it
    report = json.loads(open(f"{stem}.report.json", encoding="utf-8").read())
    assert validator("peer-report").is_valid(report)
    repro = json.loads(open(f"{stem}.repro.json", encoding="utf-8").read())
    assert validator("repro").is_valid(repro)
    assert [r["where"] for r in repro["peer"]["rows"]] == \
        [f"{rows}, line {n}" for n in (2, 3)]  # the rows with findings
    assert {d["theirs"]["kind"] for d in repro["disagreements"]} == {"unreachable"}
    answers = [json.loads(line) for line in
               open(f"{stem}.answers.jsonl", encoding="utf-8").read().splitlines()]
    assert [(a["row"], a["data_row"]) for a in answers] == [(1, 0), (2, 1), (3, 2)]

    assert main([*args, "--adapter", f"{PEERS}:Liar", "--json", "--rows", "2"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert validator("verify-peer").is_valid(doc)
    assert (doc["model"], doc["data"], doc["target"], doc["rows"]) == (model, rows, None, 2)
    assert not doc["peers"][f"{PEERS}:Liar"]["ok"]


def test_the_label_column_trains_nothing_but_labels_the_rows(project):
    data = load_model_data(str(project / "model.joblib"), str(project / "rows.csv"), "label")
    assert data.y_train.tolist() == [0, 0, 1] and data.X.tolist() == [[0.3, 0], [0.9, 0],
                                                                      [0.5, 1]]
    (project / "rows.csv").write_text("x0,x1\n0.3,0\n0.5,1\n")  # no labels: the predictions
    data = load_model_data(str(project / "model.joblib"), str(project / "rows.csv"))
    assert data.y_train.tolist() == [0, 1]


def test_fuzz_on_the_users_model_keeps_the_kinds_apart(project, tmp_path):
    data = load_model_data(str(project / "model.joblib"), str(project / "rows.csv"), "label")
    summary = pf.peer_fuzz(Float64Peer(), np.inf, 0, str(tmp_path / "ok"), progress=False,
                           cases=3, data=data)
    assert summary.findings["unreachable"] > 0 and not summary.failures
    assert pf.exit_code(summary) == 0 and summary.source.endswith("rows.csv")
    assert "resting only on states no float32 input reaches" in pf.summary_text(summary)

    summary = pf.peer_fuzz(Liar(), np.inf, 0, str(tmp_path / "bad"), progress=False,
                           cases=1, data=data)
    assert pf.exit_code(summary) == 1 and summary.failures
    doc = json.loads(open(summary.failures[0], encoding="utf-8").read())
    check = validator("repro")
    assert check.is_valid(doc), [e.message for e in check.iter_errors(doc)][:3]
    source = doc["peer"]["case"]["source"]
    assert source["model"]["path"] == str(project / "model.joblib") and source["target"] == \
        "label"
    assert len(doc["instances"]) == 1 and doc["peer"]["rows"][0]["values"]
    task = pf.task_from_repro(doc)  # the user's files, read again and checked
    assert task.rows.tolist() == doc["peer"]["case"]["rows"]
    assert task.forest.to_json() == doc["forest"]
    (project / "rows.csv").write_text("x0,x1,label\n0.3,0,0\n")
    with pytest.raises(InputError, match="rows.csv: changed since the repro file was written"):
        pf.task_from_repro(doc)
