"""``fuzz --adapter`` (crosscheck/peers/fuzz.py) with adapters written here (no PyXAI): a
correct peer keeps every promise on cases that cover ties and every class; a planted fault is
found, shrunk and saved as a repro that validates and still fails when graded again; crashes
and hangs are counted apart; cases are a function of the seed and the case number."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from rfcircuits.cli.main import main
from rfcircuits.explain import Explainer
from rfcircuits.forest import forest_from_json, parse_instance
from rfcircuits.formats import validator
from rfcircuits.crosscheck.peers import fuzz as pf
from rfcircuits.crosscheck.peers.adapters.base import Answer, Promise
from rfcircuits.crosscheck.peers.promises import grade_answers

ADAPTERS = "tests.test_peer_fuzz"


class Ours:
    """A correct peer: every SR of our engine."""

    name = "ours"
    ties = "first"
    promises = {"sufficient_reasons": Promise("formal", "features", "all")}

    def version(self) -> str:
        return "test"

    def records(self, task):
        explainer = Explainer(task.forest, "first")
        for i, x in enumerate(task.instances):
            yield i, x, explainer.explain_states(x, ("sr",)).to_json()

    def explain(self, task):
        for i, _, record in self.records(task):
            yield Answer(i, "ok", record)


def votes_tied(forest, x) -> bool:
    votes = sorted(forest.votes(x), reverse=True)
    return votes[0] == votes[1]


class TieFault(Ours):
    """On an instance with tied votes, its first SR loses its first literal."""

    name = "tie-fault"

    def explain(self, task):
        for i, x, record in self.records(task):
            srs = record["sufficient_reasons"]
            if votes_tied(task.forest, x) and srs and srs[0]:
                srs[0] = srs[0][1:]
            yield Answer(i, "ok", record)


class Crash(Ours):
    name = "crash"

    def explain(self, task):
        raise RuntimeError("planted crash")
        yield  # a generator, as adapters are


class HalfCrash(Ours):
    """Answers the first row, then its process dies (as of a segfault)."""

    name = "half-crash"

    def explain(self, task):
        for i, _, record in self.records(task):
            yield Answer(i, "ok", record)
            os.kill(os.getpid(), signal.SIGKILL)


class Slow(Ours):
    name = "slow"

    def explain(self, task):
        time.sleep(60)
        yield from super().explain(task)


class Stopping(Slow):
    """Sends the command running it a SIGTERM (the peer runs in a child forked by the
    command: here, this test process), then waits to be stopped."""

    name = "stopping"

    def explain(self, task):
        os.kill(os.getppid(), signal.SIGTERM)
        yield from super().explain(task)


def regrade(doc):
    """The answers a repro file keeps, graded again against the promises it records."""
    forest = forest_from_json(doc["forest"])
    peer = doc["peer"]
    return grade_answers(forest, [parse_instance(forest, x) for x in doc["instances"]],
                         [Answer(k, "ok", record) for k, record in enumerate(peer["answers"])],
                         peer["name"], peer["version"], peer["ties"],
                         {name: Promise(**p) for name, p in peer["promises"].items()})


def run(adapter, tmp_path, cases, timeout=30.0):
    return pf.peer_fuzz(adapter, math.inf, 5, str(tmp_path / "out"), timeout, progress=False,
                        cases=cases)


def test_a_correct_peer_keeps_its_promises_on_cases_with_ties_and_every_class(tmp_path):
    summary = run(Ours(), tmp_path, 12)
    assert summary.cases == 12 and summary.failures == [] and pf.exit_code(summary) == 0
    assert not any(summary.findings.values())
    # what the cases cover, counted again from the forests' votes
    rows = exact = near = not_data = 0
    decided: dict[str, int] = {}
    for k in range(12):
        case = pf.make_case(5, k)
        task = pf.build(case, pf.full_shape(case), 1.0)
        data = {tuple(r) for r in case.X.tolist()}
        for row, x in zip(task.rows.tolist(), task.instances):
            votes = sorted(task.forest.votes(x), reverse=True)
            exact += votes[0] == votes[1]
            near += votes[0] == votes[1] + 1
            not_data += tuple(row) not in data
            c = task.forest.classes[int(np.argmax(task.forest.votes(x)))]
            decided[c] = decided.get(c, 0) + 1
        rows += len(task.instances)
    assert (summary.rows, summary.ties, summary.classes) == (
        rows, {"exact": exact, "margin_1": near, "close": 0}, decided)
    assert exact > 0 and near > 0 and not_data > 0 and len(decided) == 4
    assert summary.checks >= rows  # every instance has at least one SR


def test_a_planted_fault_is_found_shrunk_and_saved_as_a_repro_that_fails_again(tmp_path):
    summary = run(TieFault(), tmp_path, 6)
    assert summary.findings["broken"] > 0 and pf.exit_code(summary) == 1
    assert summary.failures
    check = validator("repro")
    for path in summary.failures:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        assert check.is_valid(doc), [e.message for e in check.iter_errors(doc)][:3]
        assert Path(path).name == f"peer-tie-fault-5-{doc['case']}.json"
        original = pf.make_case(5, doc["case"])
        assert len(doc["forest"]["trees"]) <= doc["shrunk_from"]["trees"] \
            == len(original.model.estimators_)
        assert len(doc["instances"]) == 1
        again = regrade(doc)
        assert not again.ok
        assert [(f.kind, f.field, f.promise) for f in again.findings] == \
            [(d["theirs"]["kind"], d["check"], d["theirs"]["promise"])
             for d in doc["disagreements"]]
        # the model the peer was given is rebuilt from the seed: the same forest and rows
        task = pf.task_from_repro(doc)
        assert task.forest.to_json() == doc["forest"]
        assert task.rows.tolist() == doc["peer"]["case"]["rows"]
        assert pf.failures(grade_answers(
            task.forest, task.instances, list(TieFault().explain(task)), "tie-fault", "test",
            "first", TieFault.promises))
        for finding in again.broken:  # the evidence, checked by the trees' votes alone
            world = finding.evidence_world
            assert all(mask >> world[f] & 1 for f, mask in finding.item)
            votes = again.forest.votes(world)
            assert votes.index(max(votes)) != again.forest.decision(finding.instance)
    assert any(d["theirs"]["kind"] == "broken" for path in summary.failures for d in
               json.loads(Path(path).read_text())["disagreements"])


def test_crashes_and_timeouts_are_counted_apart_and_saved(tmp_path, capsys, monkeypatch):
    out = str(tmp_path / "out")
    assert main(["fuzz", "--adapter", f"{ADAPTERS}:Crash", "--seconds", "0.1", "--out", out,
                 "--json", "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert validator("fuzz-summary").is_valid(summary)
    assert summary["findings"] == {"broken": 0, "missing": 0, "disputed": 0, "unreachable": 0,
                                   "definition": 0, "errors": summary["rows"], "timeouts": 0}
    doc = json.loads(Path(summary["failures"][0]).read_text())
    assert "RuntimeError: planted crash" in doc["disagreements"][0]["counterexample"]
    assert len(doc["forest"]["features"]) == 1  # shrunk: the crash needs no feature

    monkeypatch.setattr(pf, "START_SECONDS", 0.0)  # the backstop on a peer's time: short
    monkeypatch.setattr(pf, "ROW_SLACK", 0.0)
    assert main(["fuzz", "--adapter", f"{ADAPTERS}:Slow", "--adapter-timeout", "0.05",
                 "--seconds", "0.1", "--out", out, "--no-progress"]) == 0
    assert "result: every promise kept; 5 timeouts" in capsys.readouterr().out
    doc = json.loads(Path(out, "peer-slow-0-0.json").read_text())
    assert {d["check"] for d in doc["disagreements"]} == {"timeout"}
    assert len(doc["instances"]) == len(pf.make_case(0, 0).rows)  # a timeout is not shrunk

    summary = run(HalfCrash(), tmp_path, 2)
    assert summary.findings["errors"] == summary.rows - 2 and summary.findings["timeouts"] == 0
    doc = json.loads(Path(summary.failures[0]).read_text())
    assert "killed by SIGKILL" in doc["disagreements"][0]["counterexample"]


def interrupt_at(monkeypatch: pytest.MonkeyPatch, stop: int) -> None:
    """Ctrl-C as ``fuzz --adapter`` makes its case ``stop``: a deterministic end of a run
    that is otherwise timed (``--seconds``)."""
    made = pf.make_case

    def interrupted(seed, k, *kinds):
        if k == stop:
            raise KeyboardInterrupt
        return made(seed, k, *kinds)

    monkeypatch.setattr(pf, "make_case", interrupted)


def test_a_signal_keeps_the_finished_cases_and_stops_the_peer(tmp_path, monkeypatch, capsys):
    interrupt_at(monkeypatch, 3)
    out = tmp_path / "out"
    assert main(["fuzz", "--adapter", f"{ADAPTERS}:TieFault", "--seed", "5", "--out",
                 str(out), "--json", "--no-progress"]) == 128 + signal.SIGINT
    summary = json.loads(capsys.readouterr().out)
    assert summary["interrupted"] and summary["cases"] == 3
    assert summary["failures"]
    assert sorted(os.listdir(out)) == sorted(Path(p).name for p in summary["failures"])
    assert all(json.loads(Path(p).read_text())["peer"] for p in summary["failures"])
    # a signal while a failure is shrunk: the failure is saved as found
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(pf, "shrink", interrupted)
    (tmp_path / "stopped").mkdir()
    summary = run(TieFault(), tmp_path / "stopped", None)
    assert summary.interrupted and len(summary.failures) == 1
    doc = json.loads(Path(summary.failures[0]).read_text())
    assert len(doc["forest"]["trees"]) == doc["shrunk_from"]["trees"]
    # a signal while the peer runs: it is stopped, the run ends as interrupted
    assert main(["fuzz", "--adapter", f"{ADAPTERS}:Stopping", "--out", str(out),
                 "--no-progress"]) == 128 + signal.SIGTERM
    assert "0 cases" in capsys.readouterr().out
    assert multiprocessing.active_children() == []


def test_cases_are_a_function_of_the_seed_and_the_case_number(monkeypatch):
    def parts(case):
        task = pf.build(case, pf.full_shape(case), 1.0)
        return (case.X.tolist(), case.y.tolist(), case.rows.tolist(), task.forest.to_json(),
                task.instances)

    assert parts(pf.make_case(7, 3)) == parts(pf.make_case(7, 3))
    assert parts(pf.make_case(7, 3)) != parts(pf.make_case(7, 4))
    assert parts(pf.make_case(7, 3)) != parts(pf.make_case(8, 3))
    monkeypatch.setattr(pf, "WORLD_POOL", 4)  # edge worlds looked for among a random sample
    for k in range(6):
        case = pf.make_case(7, k)
        task = pf.build(case, pf.full_shape(case), 1.0)
        for row, x in zip(task.rows.tolist(), task.instances):
            for value, feature, s in zip(row, task.forest.features, x):
                bounds = (-math.inf, *feature.thresholds, math.inf)
                assert bounds[s] < float(np.float32(value)) <= bounds[s + 1]

