"""The command-line adapter: a small Python script stands for a tool in any language (it is
run as a command, with this interpreter). Its answers are graded against its promises: our own
engine's SRs keep every promise, SRs with a literal dropped break one; a tool that fails,
writes garbage or overruns gets error / error / timeout answers; bad promise specs and run
templates are bad input.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_iris

from rfcircuits.datasets import Dataset, train_forest
from rfcircuits.errors import InputError
from rfcircuits.forest import parse_instance
from rfcircuits.sklearn_import import instances_from_values
from rfcircuits.crosscheck.peers.adapters import command
from rfcircuits.crosscheck.peers.adapters.base import (PeerUnavailable, Promise, Task,
                                                       check_adapter, load_adapter)
from rfcircuits.crosscheck.peers.promises import grade_answers

SR_PROMISE = "sufficient_reasons=formal,features,all"

# The stand-in tool: MODE FOREST INSTANCES OUT [PIDFILE].
TOOL = r'''
import json, subprocess, sys, time
mode, forest_path, instances_path, out_path = sys.argv[1:5]
if mode == "fail":
    print("starting", file=sys.stderr)
    print("boom: no licence", file=sys.stderr)
    sys.exit(1)
if mode == "garbage":
    with open(out_path, "w") as out:
        out.write("this is not JSON\n")
    sys.exit(0)
if mode == "sleep":  # a line and a half, a child in the same process group, then overrun
    with open(out_path, "w") as out:
        out.write('{"tag": 0}\n{"tag": 1')
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    with open(sys.argv[5], "w") as handle:
        handle.write(str(child.pid))
    time.sleep(300)
from rfcircuits.explain import Explainer
from rfcircuits.forest import load_forest
from rfcircuits.inputs import read_instances
forest = load_forest(forest_path)
explainer = Explainer(forest)
records = [explainer.explain_states(x, ["sr"]).to_json()
           for x in read_instances(instances_path, forest)]
if mode == "faulty":  # every SR of two literals or more loses its last one
    for r in records:
        r["sufficient_reasons"] = [t[:-1] if len(t) > 1 else t for t in r["sufficient_reasons"]]
if mode == "order":  # no instance: the k-th line answers the k-th row
    for r in records:
        del r["instance"]
else:  # matched by instance, so the order must not matter
    records.reverse()
if mode == "partial":  # one line, then a failure
    records = records[:1]
with open(out_path, "w") as out:
    for r in records:
        out.write(json.dumps(r) + "\n")
sys.exit(3 if mode == "partial" else 0)
'''


def iris_task(trees: int = 5, depth: int = 3, rows: int = 5, timeout: float = 60.0,
              seed: int = 0) -> Task:
    """A task on a forest trained on iris (bundled with scikit-learn): ``rows`` rows spread
    over the dataset (so over its three classes)."""
    iris = load_iris()
    X, y = np.asarray(iris.data, float), np.asarray(iris.target)
    data = Dataset("iris", [str(n) for n in iris.feature_names], X, y,
                   [str(c) for c in iris.target_names])
    trained = train_forest(data, trees, depth, seed)
    picked = X[np.linspace(0, len(X) - 1, rows).astype(int)]
    return Task(trained.forest, trained.model, X, y, picked,
                instances_from_values(trained.forest, picked), seed, timeout)


@pytest.fixture(scope="module")
def task() -> Task:
    return iris_task()


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tool") / "tool.py"
    path.write_text(TOOL)
    return path


def adapter(tool: Path, mode: str, extra: str = "",
            promises: str = SR_PROMISE) -> command.CommandAdapter:
    run = (f"{shlex.quote(sys.executable)} {shlex.quote(str(tool))} {mode} {{forest}} "
           f"{{instances}} {{out}} {extra}")
    return command.CommandAdapter(run, promises, name=f"tool-{mode}")


def grade(a: command.CommandAdapter, task: Task):
    answers = sorted(a.explain(task), key=lambda ans: ans.index)
    return answers, grade_answers(task.forest, task.instances, answers, a.name, a.version(),
                                  a.ties, a.promises)


@pytest.mark.parametrize("mode", ["instance", "order"])
def test_correct_tool_keeps_every_promise(tool, task, mode):
    answers, report = grade(adapter(tool, mode), task)
    assert [a.status for a in answers] == ["ok"] * len(task.instances)
    assert [a.index for a in answers] == list(range(len(task.instances)))
    # each record reached its own row, whatever the order of the lines
    for a, x in zip(answers, task.instances):
        if "instance" in a.record:
            assert parse_instance(task.forest, a.record["instance"]) == x
    assert report.ok and report.findings == [], report.text()
    tally = report.fields["sufficient_reasons"]
    assert tally.items >= len(task.instances) and tally.holds == tally.items
    assert tally.completeness == "checked"


def test_faulty_tool_breaks_its_promise(tool, task):
    correct, _ = grade(adapter(tool, "instance"), task)
    answers, report = grade(adapter(tool, "faulty"), task)
    assert all(a.status == "ok" for a in answers)
    # An SR is minimal: one literal short, it no longer implies the decision. Distinct
    # shortened terms of each row (two SRs may shorten to one term):
    shortened = sum(len({json.dumps(t[:-1], sort_keys=True)
                         for t in a.record["sufficient_reasons"] if len(t) > 1})
                    for a in correct)
    assert shortened > 0  # the forest has SRs of two literals, or the test proves nothing
    broken = report.broken
    assert len(broken) == shortened and not report.ok, report.text()
    for finding in broken:
        assert finding.field == "sufficient_reasons" and finding.promise == "sufficient"
        assert finding.confirmed is True
        decided = task.forest.decision(task.instances[finding.row - 1])
        assert task.forest.decision(finding.evidence_world) != decided


def test_failing_tool_gives_errors_with_its_last_stderr_line(tool, task):
    answers = list(adapter(tool, "fail").explain(task))
    assert [a.status for a in answers] == ["error"] * len(task.instances)
    assert {a.error for a in answers} == {"exit code 1: boom: no licence"}


def test_lines_written_before_a_failure_are_kept(tool, task):
    answers = sorted(adapter(tool, "partial").explain(task), key=lambda a: a.index)
    # the tool wrote the last row's line (its lines are reversed), then exited 3
    assert [a.status for a in answers] == ["error"] * (len(task.instances) - 1) + ["ok"]
    assert answers[0].error.startswith("exit code 3")
    report = grade_answers(task.forest, task.instances, answers, "partial", "test", "first",
                           {"sufficient_reasons": Promise("formal", "features", "all")})
    assert report.answers["error"] == len(task.instances) - 1 and report.ok


def test_garbage_output_is_an_error_naming_the_line(tool, task):
    answers = list(adapter(tool, "garbage").explain(task))
    assert [a.status for a in answers] == ["error"] * len(task.instances)
    assert answers[0].error.startswith("unreadable output: {out}, line 1")


def test_overrun_kills_the_tool_and_its_children(tool, task, tmp_path):
    small = iris_task(rows=2, timeout=1.0)
    pidfile = tmp_path / "child.pid"
    answers = sorted(adapter(tool, "sleep", str(pidfile)).explain(small),
                     key=lambda a: a.index)
    # the line it finished answers the first row (by order); the half line is dropped
    assert [a.status for a in answers] == ["ok", "timeout"]
    assert answers[0].record == {"tag": 0}
    assert answers[1].error == "overran 2 s (1 s × 2 rows) and was killed"
    child = int(pidfile.read_text())
    try:  # gone, or a zombie waiting for init to reap it
        state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z")


def test_a_missing_program_is_unavailable_and_its_rows_errors(task):
    a = command.CommandAdapter("no-such-program-rfc {forest} {instances} {out}", SR_PROMISE)
    with pytest.raises(PeerUnavailable, match="no-such-program-rfc"):
        a.version()
    answers = list(a.explain(task))
    assert {x.status for x in answers} == {"error"}
    assert answers[0].error.startswith("cannot run 'no-such-program-rfc'")


def _write(path: Path, lines: list[str]) -> str:
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def test_lines_are_matched_by_instance_as_verify_matches_them(task, tmp_path):
    forest, xs = task.forest, task.instances
    assert xs[0] == xs[1] and len(set(xs)) == len(xs) - 1  # rows 0 and 1 share their states
    named = [json.dumps({"instance": {f.name: f.states[s] for f, s in zip(forest.features, x)},
                         "tag": k}) for k, x in enumerate(xs)]
    # one line for both rows in the same states: they share it; another instance is ignored
    other = list(xs[4])
    other[0] = (other[0] + 1) % forest.features[0].n_states
    stray = json.dumps({"instance": {f.name: f.states[s] for f, s in
                                     zip(forest.features, other)}, "tag": 9})
    records, why = command.match_output(forest, xs, _write(tmp_path / "a", [
        named[4], named[0], stray, named[2]]))
    assert {i: r["tag"] for i, r in records.items()} == {0: 0, 1: 0, 2: 2, 4: 4}
    assert why == ("no line of the output names this row's instance (1 line name other "
                   "instances)")
    # two lines for the two rows: taken in order; three: neither row is answered
    records, _ = command.match_output(forest, xs, _write(tmp_path / "b", [named[1], named[0]]))
    assert {i: r["tag"] for i, r in records.items()} == {0: 1, 1: 0}
    records, why = command.match_output(forest, xs, _write(tmp_path / "c", [named[0]] * 3))
    assert records == {} and "3 lines name the instance of 2 rows (lines 1, 2, 3)" in why
    # by order, records are passed on whole, unparsed beyond the instance
    records, _ = command.match_output(forest, xs, _write(tmp_path / "d", [
        '{"sufficient_reasons": "not yet parsed"}']))
    assert records == {0: {"sufficient_reasons": "not yet parsed"}}


@pytest.mark.parametrize("lines, message", [
    (['{"tag": 1}', '{"tag": 2}', '{"tag": 3}', '{"tag": 4}', '{"tag": 5}', '{"tag": 6}'],
     "line 6: lines are matched by order"),
    (['{"instance": {}}', '{"tag": 2}'], "line 2, field 'instance': missing"),
    (['[1, 2]'], "line 1: expected a JSON object"),
    (['{"instance": {"petal": 1}}'], "unknown feature 'petal'"),
])
def test_lines_that_break_the_matching_rules_are_bad_input(task, tmp_path, lines, message):
    with pytest.raises(InputError, match=message):
        command.match_output(task.forest, task.instances, _write(tmp_path / "e", lines))


@pytest.mark.parametrize("spec, message", [
    ("", "none given"),
    ("sufficient_reasons", "part 'sufficient_reasons': expected FIELD=GUARANTEE"),
    ("reasons=formal,features,all", "part 'reasons=formal,features,all': 'reasons' is not"),
    ("sr=formal,features", "part 'sr=formal,features': expected 3 values"),
    ("sr=formal,features,all,more", "expected 3 values .*got 4"),
    ("sr=proven,features,all", "part 'sr=proven,features,all': guarantee must be one of"),
    ("nr=formal,subset,all", "minimal must be one of 'none', 'conditions'"),
    ("ce=formal,none,some", "answers must be one of 'one', 'all', not 'some'"),
    ("sr=formal,none,one;sufficient_reasons=formal,none,all", "promised twice"),
])
def test_bad_promise_specs_name_the_part(spec, message):
    with pytest.raises(InputError, match=message):
        command.parse_promises(spec)


def test_promise_specs_in_both_vocabularies():
    assert command.parse_promises(
        " sr = formal, features, all ;contrastive=heuristic,none,one;") == {
        "sufficient_reasons": Promise("formal", "features", "all"),
        "contrastive": Promise("heuristic", "none", "one")}
    assert command.parse_promises({"nr": Promise("formal", "features", "all"),
                                   "robustness": "formal,none,one"}) == {
        "necessary_reasons": Promise("formal", "features", "all"),
        "robustness": Promise("formal", "none", "one")}
    with pytest.raises(InputError, match="promises of 'votes'"):
        command.parse_promises({"votes": Promise()})
    with pytest.raises(InputError, match="expected a Promise"):
        command.parse_promises({"sr": ("formal", "none", "one")})


@pytest.mark.parametrize("run, message", [
    ("tool {forest} {instances}", "must name {out}"),
    ("tool {model} {out}", "unknown placeholder {model}"),
    ("tool {out", "expected '}'"),
    ("tool '{out}", "No closing quotation"),
    ("{out}", None),
])
def test_run_templates_are_checked(run, message):
    if message is None:
        assert command.CommandAdapter(run, SR_PROMISE).words == ["OUT"]
    else:
        with pytest.raises(InputError, match=message):
            command.CommandAdapter(run, SR_PROMISE)


def test_paths_are_quoted_into_single_words():
    assert command._fill("t --in {forest} {out} x", {"forest": "/a b/f.json",
                                                  "out": "/o'd/out"}) \
        == ["t", "--in", "/a b/f.json", "/o'd/out", "x"]


def test_registered_and_checked_as_an_adapter(tool):
    run = f"{shlex.quote(sys.executable)} {shlex.quote(str(tool))} instance {{forest}} " \
          "{instances} {out}"
    a = load_adapter("command", run=run, promises=SR_PROMISE, ties="all", name="mytool")
    assert isinstance(a, command.CommandAdapter) and check_adapter(a) is a
    assert (a.name, a.ties, a.version()) == ("mytool", "all", run)
    with pytest.raises(InputError, match="ties must be one of"):
        command.CommandAdapter(run, SR_PROMISE, ties="strictest")
