"""Grading a peer against its promises (:mod:`rfcircuits.crosscheck.peers.promises`) and the
``verify-peer`` command, with in-test adapters built on our engine and planted faults. Every
expectation comes from enumerating the forest's worlds, not from the grader."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from itertools import product

import pytest

from rfcircuits.cli.main import main
from rfcircuits.explain import Explainer
from rfcircuits.forest import Forest, Instance
from rfcircuits.terms import term_json
from rfcircuits.crosscheck.peers.adapters.base import (Answer, Promise, Task, check_adapter,
                                                       load_adapter)
from rfcircuits.crosscheck.peers.minimality import condition_minimal
from rfcircuits.crosscheck.peers.promises import grade_answers
from rfcircuits.crosscheck.oracles.sat import SatOracle
from rfcircuits.crosscheck.differential.strategies import Limits, random_forest, random_instance


def _implies(forest: Forest, term, c: int) -> bool:
    """Every world of the term decides ``c`` (enumeration)."""
    masks = dict(term)
    choices = [[s for s in range(f.n_states) if masks.get(k, f.full) >> s & 1]
               for k, f in enumerate(forest.features)]
    return all(forest.decision(w) == c for w in product(*choices))


def _condition_drops(forest: Forest, term):
    """Each threshold condition of the term dropped: a numeric literal on states a..b is
    ``x > t_a`` and ``x <= t_{b+1}``; a categorical one is a single condition."""
    out = []
    for k, (f, mask) in enumerate(term):
        feature = forest.features[f]
        rest = dict(term[:k] + term[k + 1:])
        states = [s for s in range(feature.n_states) if mask >> s & 1]
        run = states == list(range(states[0], states[-1] + 1))
        if feature.thresholds is None or not run:
            out.append(rest)
            continue
        for wide in (range(0, states[-1] + 1), range(states[0], feature.n_states)):
            if len(wide) == len(states):
                continue
            variant = dict(rest)
            if len(wide) < feature.n_states:
                variant[f] = sum(1 << s for s in wide)
            out.append(variant)
    return [tuple(sorted(v.items())) for v in out]


def test_condition_minimality_agrees_with_enumeration():
    rng = random.Random(5)
    checked = {True: 0, False: 0}
    for _ in range(60):
        forest = random_forest(rng, Limits())
        x = random_instance(rng, forest)
        c = forest.decision(x)
        # a random term holding x: per feature, omitted or a run of states around x's
        term = []
        for f, feature in enumerate(forest.features):
            if rng.random() < 0.3:
                continue
            lo = rng.randint(0, x[f])
            hi = rng.randint(x[f], feature.n_states - 1)
            mask = sum(1 << s for s in range(lo, hi + 1))
            if mask != feature.full:
                term.append((f, mask))
        term = tuple(term)
        if not _implies(forest, term, c):
            continue
        expected = not any(_implies(forest, t, c) for t in _condition_drops(forest, term))
        with SatOracle(forest, "first") as sat:
            minimal, smaller, _ = condition_minimal(sat, forest, x, term)
        assert minimal == expected, (forest, x, term)
        if not minimal:
            assert smaller in _condition_drops(forest, term) and _implies(forest, smaller, c)
        checked[minimal] += 1
    assert checked[True] > 3 and checked[False] > 3


class EngineSRs:
    """A peer that answers with our own SRs, optionally with a planted fault."""

    name = "engine"
    ties = "first"

    def __init__(self, fault: str = "", minimal: str = "features", answers: str = "all",
                 guarantee: str = "formal") -> None:
        self.fault = fault
        self.promises = {"sufficient_reasons": Promise(guarantee, minimal, answers)}

    def version(self) -> str:
        return "test"

    def explain(self, task: Task) -> Iterator[Answer]:
        forest = task.forest
        explainer = Explainer(forest, "first")
        for i, x in enumerate(task.instances):
            srs = list(explainer.explain_states(x, ("sr",)).sufficient_reasons)
            if self.fault == "crash" and i == 1:
                yield Answer(i, "error", error="ValueError: planted")
                continue
            if self.fault == "garbage" and i == 1:
                yield Answer(i, "ok", {"sufficient_reasons": [[{"feature": "nope"}]]})
                continue
            if self.fault == "drop-literal":
                srs = [sr[1:] if len(sr) > 1 else sr for sr in srs]
            elif self.fault == "add-literal":
                srs = [sr + tuple((f, 1 << x[f]) for f in range(len(x))
                                  if f not in dict(sr))[:1] for sr in srs]
            elif self.fault == "omit" and len(srs) > 1:
                srs = srs[1:]
            yield Answer(i, "ok", {"sufficient_reasons": [term_json(forest, t) for t in srs],
                                   "decision": forest.classes[forest.decision(x)]}, 0.001)


def _task(seed: int) -> Task:
    rng = random.Random(seed)
    forest = random_forest(rng, Limits())
    xs = [random_instance(rng, forest) for _ in range(4)]
    return Task(forest, None, None, None, None, xs)


def _grade(peer, task: Task):
    answers = list(peer.explain(task))
    return grade_answers(task.forest, task.instances, answers, peer.name, peer.version(),
                         peer.ties, peer.promises)


def _sufficient(forest: Forest, x: Instance, term) -> bool:
    return _implies(forest, term, forest.decision(x))


def test_a_correct_peer_keeps_every_promise():
    for seed in range(10):
        report = _grade(EngineSRs(), _task(seed))
        tally = report.fields["sufficient_reasons"]
        assert report.ok and tally.items == tally.holds > 0 and not report.findings
        assert tally.completeness == "checked"
        assert [i["outcome"] for i in report.items] == ["keeps"] * tally.items


def test_planted_faults_are_broken_promises_or_differences_by_what_is_promised():
    seen = {"invalid": 0, "not minimal": 0, "missing": 0}
    for seed in range(30):
        task = _task(seed)
        forest = task.forest
        # dropping a literal: invalid exactly when enumeration says so
        report = _grade(EngineSRs("drop-literal"), task)
        explainer = Explainer(forest, "first")
        invalid = sum(not _sufficient(forest, x, t) for x in task.instances
                      for t in {sr[1:] for sr in explainer.explain_states(
                          x, ("sr",)).sufficient_reasons if len(sr) > 1})
        broken = [f for f in report.broken if f.promise == "sufficient"]
        assert len(broken) == invalid
        assert all(f.confirmed and f.evidence_world is not None for f in broken)
        seen["invalid"] += invalid
        # a literal too many: promised minimal → broken; not promised → a difference
        strict = _grade(EngineSRs("add-literal", answers="one"), task)
        loose = _grade(EngineSRs("add-literal", minimal="none", answers="one"), task)
        grown = [f for f in strict.broken if f.promise == "minimal"]
        assert all(f.confirmed and _sufficient(forest, f.instance, f.evidence_item)
                   for f in grown)
        assert loose.ok and not loose.broken
        assert loose.fields["sufficient_reasons"].differences.get(
            "not minimal over features", 0) == len(grown)
        assert sum("not minimal over features" in i["differences"] for i in loose.items) \
            == len(grown)
        assert sum(i["outcome"] == "broken" for i in strict.items) == len(strict.broken)
        seen["not minimal"] += len(grown)
        # an SR left out: missing when all are promised, nothing when one is
        all_promised = _grade(EngineSRs("omit"), task)
        one = _grade(EngineSRs("omit", answers="one"), task)
        missing = [f for f in all_promised.findings if f.kind == "missing"]
        assert len(missing) == all_promised.fields["sufficient_reasons"].missing
        assert one.ok and one.fields["sufficient_reasons"].completeness == "not promised"
        seen["missing"] += len(missing)
    assert all(n > 3 for n in seen.values()), seen


def test_heuristic_claims_that_fail_are_counted_not_broken():
    for seed in range(30):
        task = _task(seed)
        report = _grade(EngineSRs("drop-literal", minimal="none", answers="one",
                                  guarantee="heuristic"), task)
        assert report.ok and not report.broken
        formal = _grade(EngineSRs("drop-literal", minimal="none", answers="one"), task)
        assert report.fields["sufficient_reasons"].claims_failing == len(formal.broken)


def test_peer_failures_are_listed_and_do_not_fail_the_run():
    task = _task(3)
    for fault, status in (("crash", "error"), ("garbage", "unreadable")):
        report = _grade(EngineSRs(fault, answers="one"), task)
        assert report.ok
        assert [f["row"] for f in report.failures] == [2]
        assert report.failures[0]["status"] == status
        assert "the peer failed on 1 of 4 rows" in report.result() or status == "unreadable"
        json.dumps(report.to_json())


def test_adapters_are_checked_when_loaded():
    with pytest.raises(TypeError, match="lacks"):
        check_adapter(object())
    bad = EngineSRs()
    bad.promises = {"decision": Promise()}
    with pytest.raises(TypeError, match="not a field"):
        check_adapter(bad)
    with pytest.raises(ValueError, match="minimal must be one of"):
        Promise(minimal="subset")
    with pytest.raises(Exception, match="unknown adapter"):
        load_adapter("nosuchpeer")
    with pytest.raises(Exception, match="cannot import"):
        load_adapter("no_such_module_xyz:Peer")
    assert load_adapter("tests.test_promises:EngineSRs", fault="omit").fault == "omit"


def test_verify_peer_runs_a_user_adapter_and_keeps_its_outputs(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["verify-peer", "--adapter", "tests.test_promises:EngineSRs", "--dataset",
                 "iris", "--trees", "3", "--depth", "2", "--instances", "4", "--pick",
                 "margin", "--out", str(out), "--json", "-q"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["peers"]["tests.test_promises:EngineSRs"]["ok"]
    names = sorted(p.name for p in out.iterdir())
    assert names == ["tests.test_promises_EngineSRs.answers.jsonl",
                     "tests.test_promises_EngineSRs.report.json"]
    lines = (out / names[0]).read_text().splitlines()
    assert [json.loads(line)["row"] for line in lines] == [1, 2, 3, 4]
    code = main(["verify-peer", "--adapter", "tests.test_promises:EngineSRs",
                 "--adapter-option", "fault=add-literal", "--dataset", "iris", "--trees", "3",
                 "--depth", "2", "--instances", "4", "-q"])
    text = capsys.readouterr().out
    assert code == 1 and "broken promises" in text and "minimal fails" in text
    assert main(["verify-peer", "--adapter", "nosuchpeer", "--dataset", "iris"]) == 2
    assert "unknown adapter" in capsys.readouterr().err


def test_beyond_enumeration_a_smaller_item_is_confirmed_by_another_encoding(monkeypatch):
    import rfcircuits.crosscheck.peers.promises as promises

    monkeypatch.setattr(promises, "CONFIRM_WORLDS", 0)  # every evidence too big to enumerate
    found = 0
    for seed in range(10):
        task = _task(seed)
        report = _grade(EngineSRs("add-literal", answers="one"), task)
        for f in report.broken:
            assert f.confirmed and "sortnetwrk" in f.confirmed_by
            assert _sufficient(task.forest, f.instance, f.evidence_item)  # by enumeration
            assert f.to_json(task.forest)["confirmed_by"] == f.confirmed_by
            found += 1
    assert found > 3


class StuckNRs:
    """Claims, as a necessary reason, the features outside the instance's first SR: fixing
    that SR keeps the decision, so changing only them never leaves it."""

    name = "stuck"
    ties = "first"
    promises = {"necessary_reasons": Promise("formal", "none", "one")}

    def version(self) -> str:
        return "test"

    def explain(self, task: Task) -> Iterator[Answer]:
        explainer = Explainer(task.forest, "first")
        for i, x in enumerate(task.instances):
            sr = dict(explainer.explain_states(x, ("sr",)).sufficient_reasons[0])
            rest = tuple((f, 1 << x[f]) for f in range(len(x)) if f not in sr)
            yield Answer(i, "ok", {"necessary_reasons": [term_json(task.forest, rest)]
                                   if rest else []})


def test_beyond_enumeration_a_stuck_clause_is_confirmed_by_another_encoding(monkeypatch):
    import rfcircuits.crosscheck.peers.promises as promises

    monkeypatch.setattr(promises, "CONFIRM_WORLDS", 0)  # every evidence too big to enumerate
    found = 0
    for seed in range(10):
        task = _task(seed)
        report = _grade(StuckNRs(), task)
        for f in report.broken:
            assert (f.field, f.promise) == ("necessary_reasons", "necessary")
            assert f.confirmed and "sortnetwrk" in f.confirmed_by
            free = dict(f.item)  # by enumeration: no change of those features leaves x's class
            worlds = product(*([s for s in range(g.n_states)] if k in free else [f.instance[k]]
                               for k, g in enumerate(task.forest.features)))
            c = task.forest.decision(f.instance)
            assert all(task.forest.decision(w) == c for w in worlds)
            found += 1
        assert "not confirmed" not in report.text()
    assert found > 3


def test_a_general_term_under_sufficient_reasons_is_broken_by_its_form_and_says_where_it_goes():
    found = 0
    for seed in range(20):
        task = _task(seed)
        explainer = Explainer(task.forest, "first")
        answers = []
        for i, x in enumerate(task.instances):
            gsrs = [t for t in explainer.explain_states(x, ("gsr",)).general_sufficient_reasons
                    if any(m != 1 << x[f] for f, m in t)]
            answers.append(Answer(i, "ok", {"sufficient_reasons":
                                            [term_json(task.forest, t) for t in gsrs[:1]]}))
        report = grade_answers(task.forest, task.instances, answers, "p", "1", "first",
                               {"sufficient_reasons": Promise("formal", "none", "one")})
        for f in report.broken:
            assert f.promise == "sufficient" and f.confirmed
            assert f.confirmed_by == "its literals (not all of the instance's states)"
            assert "list it under general_sufficient_reasons" in f.note
            found += 1
    assert found > 3
