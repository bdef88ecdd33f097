"""Checking from Python (docs/api.md#checking): ``rfcircuits.verify`` and
``rfcircuits.crosscheck`` give the reports the commands give, fail where the commands fail,
and load the oracles only when called."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import rfcircuits
import rfcircuits.crosscheck.differential.harness as harness_module
from rfcircuits.cli.main import main
from rfcircuits.crosscheck.differential.spec_examples import SUSAN, SUSAN_ANSWERS, SUSAN_FOREST
from rfcircuits.explain import Explainer
from rfcircuits.forest import forest_from_json, instance_to_json


def _literals(term: dict[str, list[str]]) -> list[dict]:
    return [{"feature": name, "states": states} for name, states in term.items()]


@pytest.fixture
def susan(tmp_path):
    """The paper's Susan example (SPEC), its published answers as another tool's record, and
    the same as files."""
    forest = forest_from_json(SUSAN_FOREST)
    record = {"instance": SUSAN, "decision": SUSAN_ANSWERS["decision"],
              "sufficient_reasons": [_literals(t) for t in SUSAN_ANSWERS["sufficient_reasons"]],
              "necessary_reasons": [_literals(t) for t in SUSAN_ANSWERS["necessary_reasons"]],
              "robustness": SUSAN_ANSWERS["robustness"]}
    files = {name: tmp_path / name for name in ("forest.json", "rows.jsonl", "theirs.jsonl")}
    files["forest.json"].write_text(json.dumps(SUSAN_FOREST))
    files["rows.jsonl"].write_text(json.dumps(SUSAN) + "\n")
    files["theirs.jsonl"].write_text(json.dumps(record) + "\n")
    return forest, record, files


def test_the_papers_answers_pass_and_the_report_is_the_commands(susan, capsys):
    forest, record, files = susan
    report = rfcircuits.verify(forest, [SUSAN], [record])
    assert report.ok and report.result() == "everything correct and complete"
    from_files = rfcircuits.verify(files["forest.json"], files["rows.jsonl"],
                                   files["theirs.jsonl"])
    assert main(["verify", "--forest", str(files["forest.json"]), "--instances",
                 str(files["rows.jsonl"]), "--explanations", str(files["theirs.jsonl"]),
                 "--json", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out) == from_files.to_json()
    assert main(["verify", "--forest", str(files["forest.json"]), "--instances",
                 str(files["rows.jsonl"]), "--explanations", str(files["theirs.jsonl"]),
                 "--no-progress"]) == 0
    assert capsys.readouterr().out == str(from_files) + "\n"
    # in memory, the records are graded alike (only the source's name differs)
    assert {**report.to_json(), "source": None} == {**from_files.to_json(), "source": None}


def test_a_wrong_reason_fails_with_a_world_that_refutes_it(susan):
    forest, record, _ = susan
    # {Age >= 55} alone is not sufficient: the paper's two SRs each need a second feature
    wrong = {**record, "sufficient_reasons": [_literals({"Age": [">=55"]})]}
    report = rfcircuits.verify(forest, [SUSAN], [wrong])
    assert not report.ok
    items = [i for f in report.lines[0].fields if f.field == "sufficient_reasons"
             for i in f.items]
    bad = [i for i in items if i.status == "wrong"]
    assert len(bad) == 1 and bad[0].evidence is not None
    world = bad[0].evidence
    age = forest.feature_index["Age"]
    assert forest.features[age].states[world[age]] == ">=55"
    assert forest.classes[forest.decision(world)] != SUSAN_ANSWERS["decision"]
    # the paper's SRs left out are missing
    assert sum(i.status == "missing" for i in items) == 2


def test_explanations_objects_are_graded_as_their_json(susan):
    forest, _, _ = susan
    ours = Explainer(forest).explain(SUSAN)
    assert rfcircuits.verify(forest, [SUSAN], [ours]).to_json() == \
        rfcircuits.verify(forest, [SUSAN], [ours.to_json()]).to_json()


def test_crosscheck_is_the_commands_and_fails_on_a_wrong_engine(susan, capsys, monkeypatch):
    forest, _, files = susan
    report = rfcircuits.crosscheck(forest, [SUSAN], what=["sr", "nr", "robust"],
                                   engine="graphs")
    assert report.ok and report.checks() > 0 and report.ties == "first"
    assert report.to_json()["outcomes"] and report.to_json()["disagreements"] == []
    assert main(["crosscheck", "--forest", str(files["forest.json"]), "--instances",
                 str(files["rows.jsonl"]), "--what", "sr,nr,robust", "--engine", "graphs",
                 "--no-progress", "--repro", str(files["forest.json"].parent / "r.json")]) == 0
    assert capsys.readouterr().out == str(report) + "\n"

    class Forgetful(Explainer):
        """A native engine that loses one SR: every oracle must contradict it."""

        def explain_states(self, x, what=(), **methods):  # type: ignore[override]
            full = super().explain_states(x, what, **methods)
            return type(full)(**{**full.__dict__,
                                 "sufficient_reasons": full.sufficient_reasons[1:]})

    monkeypatch.setattr(harness_module, "Explainer", Forgetful)
    broken = rfcircuits.crosscheck(forest, [SUSAN], what=["sr"], engine="graphs",
                                   formulas=False)
    assert not broken.ok
    found = broken.to_json()["disagreements"]
    assert {d["check"] for d in found} == {"sufficient_reasons"}
    assert all(d["instance"] == instance_to_json(forest, tuple(
        forest.features[i].states.index(SUSAN[f.name]) for i, f in enumerate(forest.features)))
        for d in found)
    assert "DISAGREE sufficient_reasons" in broken.text()


def test_the_library_loads_the_oracles_only_for_checking(tmp_path):
    (tmp_path / "forest.json").write_text(json.dumps(SUSAN_FOREST))
    code = ("import sys, rfcircuits\n"
            "f = rfcircuits.load_forest(sys.argv[1])\n"
            "rfcircuits.Explainer(f).explain_many([[g.states[0] for g in f.features]])\n"
            "print(any(m.startswith('rfcircuits.crosscheck') for m in sys.modules))\n"
            "check = rfcircuits.verify\n"
            "print(rfcircuits.crosscheck is sys.modules['rfcircuits.crosscheck'], "
            "callable(rfcircuits.crosscheck))\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "forest.json")],
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True", "True"]
