"""The pytest plugin (crosscheck/pytest_plugin.py), run by pytest itself on scratch projects
(``pytester``) holding adapters written here: our own engine passes every test, planted
faults fail readably with a repro file that validates, a slow adapter times out per case, and
a project that configures nothing sees nothing new.

Each run takes a few small cases of the corpus installed with the package
(``rfcircuits_cases``); what a planted fault must produce is derived from the case's files and
the trees' votes, not from the grader.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from rfcircuits.forest import forest_from_json, instance_to_json, load_forest, parse_instance
from rfcircuits.formats import validator
from rfcircuits.crosscheck import corpus
from rfcircuits.crosscheck.peers.adapters.base import Answer, Promise
from rfcircuits.crosscheck.peers.repro import peer_repro
from rfcircuits.crosscheck.peers.promises import grade_answers
from rfcircuits.crosscheck.pytest_plugin import raw_rows

pytest_plugins = ["pytester"]

#: The adapters of the scratch projects (module ``peers``).
PEERS = '''
import json
import time

from rfcircuits.explain import Explainer
from rfcircuits.crosscheck.peers.adapters.base import Answer, Promise


class Correct:
    """Our own engine: every sufficient and necessary reason, minimal over features."""

    name = "ours"
    ties = "first"
    promises = {"sufficient_reasons": Promise("formal", "features", "all"),
                "necessary_reasons": Promise("formal", "features", "all")}

    def version(self):
        return "1.0"

    def explain(self, task):
        explainer = Explainer(task.forest, self.ties)
        for i, x in enumerate(task.instances):
            yield Answer(i, "ok", explainer.explain_states(x, what=("sr", "nr")).to_json())


class SoftCorrect(Correct):
    """Our own engine, saying that it explains soft votes too."""

    votes = "soft"


class Planted(Correct):
    """One fault in the first row that allows it, recorded in planted.json: drop the last
    literal of its first sufficient reason of two literals or more (``drop``) or leave out its
    first sufficient reason (``omit``)."""

    name = "planted"
    promises = {"sufficient_reasons": Promise("formal", "features", "all")}
    fault = "drop"

    def explain(self, task):
        planted = None
        for answer in super().explain(task):
            reasons = answer.record["sufficient_reasons"]
            long = [t for t in reasons if len(t) > 1]
            if planted is None and long:
                planted = {"row": answer.index, "item": long[0][:-1], "whole": list(long[0])}
                if self.fault == "drop":
                    long[0].pop()
                else:
                    reasons.remove(long[0])
            yield answer
        with open("planted.json", "w") as out:
            json.dump(planted, out)


class Omitting(Planted):
    fault = "omit"


class Crashing(Correct):
    def explain(self, task):
        yield from list(super().explain(task))[:1]
        raise ValueError("the peer's own bug")


class Sloppy(Correct):
    """A wrong decision on row 1, no answer for row 2, and a dict among the answers."""

    def explain(self, task):
        for answer in super().explain(task):
            if answer.index == 0:
                record = answer.record
                record["decision"] = next(c for c in record["votes"] if c != record["decision"])
            if answer.index != 1:
                yield answer
        yield {"index": 1}


class Slow(Correct):
    def explain(self, task):
        time.sleep(3)
        return
        yield
'''
#: Small cases: every world of the Susan example (categorical features), a tiny random forest
#: with numeric and categorical features, a trained forest (numeric only).
CASES = ["spec-susan", "random-mixed-0001", "trained-iris-x2_3-5t-d3-s0"]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """pytest in the scratch project, in this process, without the plugins that would be
    imported anew at each run (hypothesis's takes seconds)."""
    return pytester.runpytest("-p", "no:hypothesispytest", "-p", "no:cacheprovider", *args)


def project(pytester: pytest.Pytester, adapter: str, cases: list[str], form: str = "ini",
            **more: str) -> None:
    """A scratch project with the adapters and a configuration naming ``peers:<adapter>``
    (pytest.ini, pyproject.toml or setup.cfg)."""
    pytester.makepyfile(peers=PEERS)
    options = {"rfcircuits_adapter": f"peers:{adapter}", "rfcircuits_cases": " ".join(cases),
               **more}
    lines = "".join(f"{k} = {v}\n" for k, v in options.items())
    if form == "pyproject":
        pytester.makepyprojecttoml("[tool.pytest.ini_options]\n" + "".join(
            f"{k} = {json.dumps(v)}\n" for k, v in options.items()))
    elif form == "setup.cfg":
        pytester.makefile(".cfg", setup="[tool:pytest]\n" + lines)
    else:
        pytester.makeini("[pytest]\n" + lines)


def failures(result: pytest.RunResult) -> dict[str, str]:
    """The failure section of each failed test, by node id."""
    sections: dict[str, str] = {}
    name = None
    for line in result.outlines:
        if line.startswith("_" * 5) and line.endswith("_" * 5):
            name = line.strip("_ ")
            sections[name] = ""
        elif line.startswith("=") and name:
            name = None
        elif name:
            sections[name] += line + "\n"
    return sections


def test_our_engine_keeps_every_promise(pytester):
    project(pytester, "Correct", CASES)
    collected = run(pytester, "--collect-only", "-q")
    ids = [f"rfcircuits-corpus::{case}::{name}" for case in CASES
           for name in ("sufficient_reasons", "necessary_reasons")]
    assert [line for line in collected.outlines if line.startswith("rfcircuits")] == ids
    stale = pytester.path / ".rfcircuits-repro" / f"{CASES[0]}.json"
    stale.parent.mkdir()
    stale.write_text("{}")
    result = run(pytester)
    result.assert_outcomes(passed=len(ids))
    assert not stale.exists()  # a repro file is of the case's last failure


def holds(forest, item: list[dict], world) -> bool:
    """Whether a world satisfies a term given as literals naming states."""
    return all(forest.features[forest.feature_index[lit["feature"]]].states[
        world[forest.feature_index[lit["feature"]]]] in lit["states"] for lit in item)


@pytest.mark.parametrize("adapter,form", [("Planted", "pyproject"), ("Omitting", "setup.cfg")])
def test_a_planted_fault_fails_readably_with_a_repro_file(pytester, adapter, form):
    case = "random-mixed-0001"
    project(pytester, adapter, [case], form)
    result = run(pytester)
    result.assert_outcomes(failed=1)
    planted = json.loads((pytester.path / "planted.json").read_text())
    root = Path(corpus.installed_root())
    forest = load_forest(root / "cases" / case / "forest.json")
    lines = (root / "cases" / case / "instances.jsonl").read_text().splitlines()
    x = parse_instance(forest, json.loads(lines[planted["row"]]))
    (text,) = failures(result).values()
    row = planted["row"] + 1
    assert f"case {case}" in text and "field sufficient_reasons" in text
    assert f"row {row} (task.rows[{row - 1}] = [" in text
    assert "1 item missing" in text and f"row {row}: sufficient_reasons" in text
    assert "completeness fails" in text
    if adapter == "Planted":  # a minimal reason less a literal implies the class no more
        assert "1 broken promise" in text and "— sufficient fails" in text
        assert "confirmed by evaluating the trees" in text
    else:
        assert "broken" not in text
    assert "pytest_plugin.py" not in text  # no traceback into the plugin
    path = pytester.path / ".rfcircuits-repro" / f"{case}.json"
    assert f"repro file: {path}" in text
    doc = json.loads(path.read_text())
    assert not list(validator("repro").iter_errors(doc))
    assert doc["instances"] == [json.loads(lines[planted["row"]])]
    assert doc["peer"]["name"] == "planted" and len(doc["peer"]["answers"]) == 1
    by_kind = {d["theirs"]["kind"]: d for d in doc["disagreements"]}
    assert by_kind["missing"]["theirs"]["item"] == planted["whole"]
    if adapter == "Planted":
        broken = by_kind["broken"]
        assert broken["ours"] == planted["item"] and broken["engines"] == ["planted", "sat"]
        world = parse_instance(forest, broken["counterexample"]["world"])
        assert holds(forest, planted["item"], world)
        assert forest.decision(world) != forest.decision(x)
    else:
        assert set(by_kind) == {"missing"}


def test_a_crash_fails_every_field_of_the_case_with_the_peers_traceback(pytester):
    project(pytester, "Crashing", ["random-mixed-0001"])
    result = run(pytester)
    result.assert_outcomes(failed=2)
    texts = failures(result)
    assert set(texts) == {"rfcircuits-corpus::random-mixed-0001::sufficient_reasons",
                          "rfcircuits-corpus::random-mixed-0001::necessary_reasons"}
    for text in texts.values():
        assert "the peer failed on the case (error)" in text
        assert "ValueError: the peer's own bug" in text and "peers.py" in text
        assert "pytest_plugin.py" not in text
    doc = json.loads((pytester.path / ".rfcircuits-repro" / "random-mixed-0001.json")
                     .read_text())
    assert not list(validator("repro").iter_errors(doc))
    (crash,) = doc["disagreements"]
    assert crash["check"] == "error" and crash["instance"] is None
    assert "the peer's own bug" in crash["counterexample"]


def test_a_wrong_decision_and_answers_out_of_protocol_fail_every_field(pytester):
    project(pytester, "Sloppy", ["random-mixed-0001"])
    result = run(pytester)
    result.assert_outcomes(failed=2)
    for text in failures(result).values():
        assert "row 1: decision" in text and "the correct value fails" in text
        assert "the peer failed on row 2 (error): no answer for this row" in text
        assert "the peer failed on the case (error): explain yielded a dict, not an Answer" \
            in text
    doc = json.loads((pytester.path / ".rfcircuits-repro" / "random-mixed-0001.json")
                     .read_text())
    assert not list(validator("repro").iter_errors(doc))
    assert len(doc["instances"]) == 4  # a failure of no one row keeps every instance


def test_a_slow_adapter_times_out_per_case(pytester):
    cases = ["spec-susan", "random-mixed-0001"]
    project(pytester, "Slow", cases, rfcircuits_timeout="0.2")
    result = run(pytester)
    result.assert_outcomes(failed=4)
    texts = failures(result)
    assert {name.split("::")[1] for name in texts} == set(cases)
    for text in texts.values():
        assert "the peer failed on the case (timeout): timed out after 0.2 s" in text


def soft_cases() -> list[str]:
    """The first random case of soft votes and the first boosted one."""
    cases = corpus.load_manifest(corpus.installed_root())["cases"]
    return [next(e["id"] for e in cases if e["forest"].get("votes") == "soft"),
            next(e["id"] for e in cases if e["origin"].get("model") == "gb")]


def test_a_case_of_soft_votes_is_skipped_for_a_peer_of_hard_votes(pytester):
    soft = soft_cases()[0]
    project(pytester, "Crashing", [soft, "random-mixed-0001"])  # a hard-vote peer
    result = run(pytester, "-rs")
    result.assert_outcomes(skipped=2, failed=2)
    assert "a forest of soft votes; the adapter explains hard votes" in result.stdout.str()
    assert {name.split("::")[1] for name in failures(result)} == {"random-mixed-0001"}


def test_a_peer_of_soft_votes_is_graded_on_them(pytester):
    project(pytester, "SoftCorrect", soft_cases())
    run(pytester).assert_outcomes(passed=4)


def test_without_configuration_the_plugin_adds_nothing(pytester):
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    result = run(pytester, "-W", "error", "-q")
    result.assert_outcomes(passed=1)
    assert "rfcircuits" not in result.stdout.str() + result.stderr.str()
    assert "--rfcircuits-adapter" in run(pytester, "--help").stdout.str()  # it is loaded


def test_paths_on_the_command_line_leave_the_corpus_out(pytester):
    project(pytester, "Correct", ["random-mixed-0001"])
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    run(pytester, "test_one.py").assert_outcomes(passed=1)
    run(pytester, "test_one.py", "--rfcircuits-timeout=30").assert_outcomes(passed=3)
    run(pytester, "-k", "not rfcircuits-corpus").assert_outcomes(passed=1)


@pytest.mark.parametrize("option,message", [
    ("--rfcircuits-adapter=nosuchmodule:Peer", "cannot import 'nosuchmodule'"),
    ("--rfcircuits-cases=nosuchcase-*", "nosuchcase-* matches no case"),
    ("--rfcircuits-timeout=soon", "rfcircuits_timeout: 'soon' is not a positive number"),
    ("--rfcircuits-corpus=nowhere", "nowhere/MANIFEST.json: no such file"),
])
def test_a_wrong_option_is_a_usage_error(pytester, option, message):
    project(pytester, "Correct", ["random-mixed-0001"])
    result = run(pytester, option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str() and "Traceback" not in result.stderr.str()


def test_importing_the_plugin_imports_nothing_else():
    code = ("import sys, rfcircuits.crosscheck.pytest_plugin; print(sorted(m for m in "
            "sys.modules if m.startswith(('rfcircuits', 'numpy', 'sklearn'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == str(["rfcircuits", "rfcircuits.crosscheck",
                               "rfcircuits.crosscheck.pytest_plugin"])


def test_raw_rows_stand_for_each_state():
    forest = forest_from_json({
        "format": "rfcircuits.forest/1", "classes": ["a", "b"],
        "features": [{"name": "x", "thresholds": [1.0, 2.0]}, {"name": "c", "states": ["u", "v"]},
                     {"name": "y", "thresholds": []}],
        "trees": [{"nodes": [{"class": "a"}]}]})
    rows = raw_rows(forest, [(0, 1, 0), (1, 0, 0), (2, 1, 0)])
    assert rows[:, 0].tolist() == [0.5, 1.5, 2.5]  # the middles; outer states one unit wide
    assert all(math.isnan(v) for v in rows[:, 1]) and rows[:, 2].tolist() == [0.0] * 3
    # float32 reads each value in the state it stands for
    f32 = forest_from_json({
        "format": "rfcircuits.forest/1", "input_dtype": "float32", "classes": ["a", "b"],
        "features": [{"name": "x", "thresholds": [0.1, 0.3]}],
        "trees": [{"nodes": [{"class": "a"}]}]})
    rows = raw_rows(f32, [(0,), (1,), (2,)])
    feature = f32.features[0]
    assert [feature.state_of_value(v, "float32") for v in rows[:, 0]] == [0, 1, 2]
    assert 0.1 < rows[1, 0] < 0.3


@pytest.mark.parametrize("ties,graded", [("first", "first"), ("strict", "first"), ("all", "all")])
def test_peer_repro_keeps_the_rows_of_findings_under_the_policy_graded(ties, graded):
    forest, instances = corpus.load_case(corpus.installed_root(), "random-mixed-0001")
    promises = {"sufficient_reasons": Promise("formal", "none", "one")}
    # row 3 claims the empty term, which implies no class of a forest whose votes vary
    answers = [Answer(k, "ok", {"sufficient_reasons": [[]] if k == 2 else []})
               for k in range(len(instances))]
    assert len({forest.decision(x) for x in instances}) > 1
    report = grade_answers(forest, instances, answers, "p", "1", ties, promises)
    doc = peer_repro(report, forest, instances, answers)
    assert not list(validator("repro").iter_errors(doc))
    assert doc["ties"] == graded and doc["peer"]["ties"] == ties
    assert doc["instances"] == [instance_to_json(forest, instances[2])]
    assert doc["peer"]["answers"] == [{"sufficient_reasons": [[]]}]
    (broken,) = doc["disagreements"]
    assert broken["ours"] == [] and broken["theirs"]["promise"] == "sufficient"
