"""The SAT engine (docs/algorithms.md, "The SAT engine") against the worked examples, the
brute-force oracle and the decision graphs; its limits, its single questions, and the
facade's choice of engine."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rfcircuits.cli.main import main
from rfcircuits.dualize import BLOCKER, FREER, dualize
from rfcircuits.errors import BudgetExceeded, InputError
from rfcircuits.explain import Explainer
from rfcircuits.explanation import ALL_WHAT
from rfcircuits.forest import TIES, instance_to_json
from rfcircuits.robustness import flips
from rfcircuits.primes import hitting_sets, minimal
from rfcircuits.satengine import NOT_COMPUTED, SatEngine
from rfcircuits.terms import variables
from rfcircuits.crosscheck.oracles.brute import BruteForce
from rfcircuits.crosscheck.differential.spec_examples import (FLIP, FLIP_ANSWERS, FLIP_FOREST,
                                                              SUSAN, SUSAN_ANSWERS, SUSAN_FOREST,
                                                              expected, forest, instance)
from rfcircuits.crosscheck.differential.strategies import (Limits, forest_and_instance,
                                                           random_forest, random_instance)

LIMITS = Limits(max_features=4, max_states=4, max_trees=7, max_classes=3)
#: What the SAT engine computes.
COMPUTED = tuple(k for k in ALL_WHAT if k not in NOT_COMPUTED)


def unlimited(f, ties="first"):
    return SatEngine(f, ties, limit_seconds=None, limit_items=None)


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("doc, inst, answers", [(SUSAN_FOREST, SUSAN, SUSAN_ANSWERS),
                                                (FLIP_FOREST, FLIP, FLIP_ANSWERS)])
def test_worked_examples(doc, inst, answers, ties):
    f = forest(doc)
    x = instance(f, inst)
    e = unlimited(f, ties).explain_states(x)
    assert f.classes[e.decision] == answers["decision"]
    assert e.engine == "sat" and not e.incomplete and e.not_computed == NOT_COMPUTED
    for key, value in answers.items():
        if key in ("decision", "general_sufficient_reasons", "general_necessary_reasons"):
            continue
        assert getattr(e, key) == (value if key == "robustness" else expected(f, value)), key


@settings(max_examples=250, deadline=None)
@given(forest_and_instance(LIMITS), st.sampled_from(TIES))
def test_every_field_equals_brute_force(case, ties):
    f, x = case
    ours = unlimited(f, ties).explain_states(x).to_json(engine=False)
    truth = BruteForce(f, ties).explain(x, COMPUTED).to_json()
    assert ours.pop("not_computed") == ["general_sufficient_reasons", "general_necessary_reasons"]
    assert ours == truth


@settings(max_examples=60, deadline=None)
@given(forest_and_instance(Limits(max_features=6, max_states=6, max_trees=12, max_classes=4)),
       st.sampled_from(TIES))
def test_every_field_equals_the_decision_graphs(case, ties):
    f, x = case
    sat = unlimited(f, ties).explain_states(x, COMPUTED)
    graphs = Explainer(f, ties, engine="graphs").explain_states(x, COMPUTED)
    assert sat.to_json(engine=False) == graphs.to_json(engine=False)


@settings(max_examples=30, deadline=None)
@given(forest_and_instance(LIMITS))
def test_shortest_sr_out_of_time_is_still_a_sufficient_reason(case):
    f, x = case
    truth = BruteForce(f).explain(x, ("sr",)).sufficient_reasons
    term, proved = unlimited(f).shortest_sr(x, seconds=0)
    assert not proved and term in truth


def test_one_engine_serves_many_instances_and_both_goals():
    # The solvers are kept across instances: answers must not depend on what came before.
    rng = random.Random(4)
    f = random_forest(rng, Limits(max_features=5, max_states=5, max_trees=9, max_classes=4))
    xs = [random_instance(rng, f) for _ in range(25)]
    for ties in TIES:
        shared = unlimited(f, ties)
        for x in xs + xs[::-1]:
            assert shared.explain_states(x).to_json() == unlimited(f, ties).explain_states(
                x).to_json()


@settings(max_examples=100, deadline=None)
@given(forest_and_instance(LIMITS))
def test_single_questions(case):
    f, x = case
    engine = unlimited(f)
    truth = BruteForce(f).explain(x, ("sr",)).sufficient_reasons
    assert engine.one_sr(x) in truth
    shortest, proved = engine.shortest_sr(x)
    assert proved and shortest in truth
    assert len(shortest) == min(len(t) for t in truth)
    assert sorted(engine.sufficient_reasons(x)) == sorted(truth)
    full = BruteForce(f).explain(x, ("nr", "ce"))
    assert sorted(engine.necessary_reasons(x)) == sorted(full.necessary_reasons)
    for t, ces in full.contrastive:
        assert sorted(engine.contrastive(x, t)) == sorted(ces)
    for c in range(len(f.classes)):
        member = c in f.classes_of(x, "first")
        assert engine.holds(c, x) == member and engine.holds(c, x, positive=False) != member


def test_dualize_gives_both_families_of_a_set_system():
    # A monotone predicate given by its minimal freers: a set blocks iff it meets them all.
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 7)
        universe = (1 << n) - 1
        freers = minimal(rng.randint(1, universe) for _ in range(rng.randint(0, 6)))

        def oracle(fixed, freers=freers, universe=universe):
            free = universe & ~fixed
            inside = [d for d in freers if d & free == d]
            return min(inside) if inside else None

        found = list(dualize(universe, oracle))
        assert sorted(s for kind, s in found if kind == FREER) == sorted(freers)
        blockers = sorted(s for kind, s in found if kind == BLOCKER)
        assert blockers == (sorted(hitting_sets(freers)) if freers else [0])


def test_limits_leave_exact_but_incomplete_fields():
    rng = random.Random(11)
    f = random_forest(rng, Limits(max_features=6, max_states=5, max_trees=15, max_classes=3))
    brute = BruteForce(f)
    seen = set()
    for x in (random_instance(rng, f) for _ in range(30)):
        truth = brute.explain(x, COMPUTED)
        e = SatEngine(f, limit_items=1, limit_seconds=None).explain_states(x, COMPUTED)
        for key in e.incomplete:
            seen.add(key)
        for name in ("sufficient_reasons", "necessary_reasons", "shortest_flips"):
            assert set(getattr(e, name)) <= set(getattr(truth, name))
            assert len(getattr(e, name)) <= 1
        assert {t: set(c) <= set(dict(truth.contrastive)[t]) for t, c in e.contrastive}
        assert ("sr" in e.incomplete) == (len(truth.sufficient_reasons) > 1 or
                                          len(truth.necessary_reasons) > 1)
        if "robust" not in e.incomplete:
            assert e.robustness == truth.robustness
    assert {"sr", "nr"} <= seen


def test_a_time_limit_stops_the_enumerations(monkeypatch):
    # Every call after the first finds its time up: what came back is still exact.
    import rfcircuits.satengine as satengine

    rng = random.Random(3)
    f = random_forest(rng, Limits(max_features=6, max_states=5, max_trees=15, max_classes=3))
    x = random_instance(rng, f)
    calls = {"n": 0}
    real = satengine._Goal.solve

    def budget(self, assumptions):
        calls["n"] += 1
        if calls["n"] > 3:
            raise satengine.OutOfTime
        return real(self, assumptions)

    monkeypatch.setattr(satengine._Goal, "solve", budget)
    e = unlimited(f).explain_states(x, COMPUTED)
    truth = BruteForce(f).explain(x, COMPUTED)
    assert e.incomplete
    for name in ("sufficient_reasons", "necessary_reasons", "shortest_flips"):
        assert set(getattr(e, name)) <= set(getattr(truth, name))
    line = e.to_json()
    assert line["incomplete"] == [f for f in ("sufficient_reasons", "necessary_reasons",
                                              "contrastive", "robustness", "shortest_flips")
                                  if f in line["incomplete"]]


def test_a_real_deadline_interrupts_a_call():
    # A limit far below one call's time: the instance still gets its decision and votes.
    rng = random.Random(5)
    f = random_forest(rng, Limits(max_features=8, max_states=6, max_trees=40, max_classes=4))
    engine = SatEngine(f, limit_seconds=1e-4)
    engine.compile()
    e = engine.explain_states(random_instance(rng, f))
    assert e.votes == tuple(f.votes(e.instance))
    assert set(e.incomplete) <= set(COMPUTED)


def test_options_are_checked():
    f = forest(SUSAN_FOREST)
    with pytest.raises(InputError, match="limit_seconds"):
        SatEngine(f, limit_seconds=0)
    with pytest.raises(InputError, match="limit_items"):
        SatEngine(f, limit_items=0)
    with pytest.raises(InputError, match="engine must be one of"):
        Explainer(f, engine="bdd")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="max_nodes"):
        Explainer(f, max_nodes=0)


def test_auto_chooses_the_graphs_where_they_fit_and_sat_beyond():
    f = forest(SUSAN_FOREST)
    x = instance(f, SUSAN)
    fits = Explainer(f)
    assert fits.explain_states(x).engine == "graphs" and fits.choice.startswith("graphs")
    beyond = Explainer(f, max_nodes=1)
    e = beyond.explain_states(x)
    assert e.engine == "sat" and "exceed 1 nodes" in beyond.choice
    assert e.to_json(engine=False)["sufficient_reasons"] == \
        fits.explain_states(x).to_json(engine=False)["sufficient_reasons"]
    with pytest.raises(BudgetExceeded) as raised:
        Explainer(f, engine="graphs", max_nodes=1).explain_states(x)
    assert "max_nodes=1" in str(raised.value) and "engine='sat'" in str(raised.value)
    assert "--max-nodes 1" in raised.value.for_cli() and "--engine sat" in raised.value.for_cli()
    with pytest.raises(InputError, match="do not answer"):
        beyond.graphs


def test_auto_gives_the_graphs_the_sat_engines_time_for_the_rows(monkeypatch):
    # Rows known, auto answers the first by SAT and caps the graphs' attempt at what SAT
    # would take for all rows (the floor here: the SAT engine takes milliseconds a row).
    from rfcircuits import explain
    from rfcircuits.graphengine import GraphEngine

    rng = random.Random(5)
    f = random_forest(rng, Limits(max_features=5, max_states=5, max_trees=9, max_classes=3))
    xs = [random_instance(rng, f) for _ in range(3)]
    caps = []
    compile_graphs = GraphEngine.compile

    def record(self, *args, **kwargs):
        caps.append(self.timeout)
        return compile_graphs(self, *args, **kwargs)

    monkeypatch.setattr(GraphEngine, "compile", record)
    what = ("sr", "nr", "robust")
    for rows, asked, cap in ((xs, what, explain.AUTO_FLOOR), ((), what, explain.AUTO_SECONDS),
                             (xs, ("sr", "gsr"), explain.AUTO_SECONDS)):
        caps.clear()
        explainer = Explainer(f)
        explainer.compile(rows=rows, what=asked)
        assert caps[0] == cap and explainer.engine.name == "graphs"
    rows = [instance_to_json(f, x) for x in xs]  # as a user holds them: state names
    assert [e.engine for e in Explainer(f).explain_many(rows, what)] == ["graphs"] * 3

    def too_slow(self, *args, **kwargs):
        raise BudgetExceeded("decision graphs exceed --timeout")

    monkeypatch.setattr(GraphEngine, "compile", too_slow)
    sat_answers = []
    sat_explain = SatEngine.explain_states

    def count(self, x, *args, **kwargs):
        sat_answers.append(x)
        return sat_explain(self, x, *args, **kwargs)

    monkeypatch.setattr(SatEngine, "explain_states", count)
    explainer = Explainer(f)
    answers = explainer.explain_many(rows, what)
    assert "did not compile within 1 s (the SAT engine's time for 3 rows" in explainer.choice
    assert sat_answers == xs  # the first row's answer was kept, not asked again
    assert [e.to_json() for e in answers] == [unlimited(f).explain_states(x, what).to_json()
                                              for x in xs]


def test_auto_gives_the_graphs_their_attempt_when_sat_is_slower_than_its_pace(monkeypatch):
    # Cut short by the SAT engine's pace on the first row, the graphs get their full attempt
    # once the SAT engine has taken longer than auto_seconds (0 here, after the choice).
    from rfcircuits.graphengine import GraphEngine

    rng = random.Random(6)
    f = random_forest(rng, Limits(max_features=5, max_states=5, max_trees=9, max_classes=3))
    xs = [random_instance(rng, f) for _ in range(3)]
    compile_graphs = GraphEngine.compile
    attempts = []

    def first_too_slow(self, *args, **kwargs):
        attempts.append(self.timeout)
        if len(attempts) == 1:
            raise BudgetExceeded("decision graphs exceed --timeout")
        self.timeout = None
        return compile_graphs(self, *args, **kwargs)

    monkeypatch.setattr(GraphEngine, "compile", first_too_slow)
    what = ("sr", "nr", "robust")
    explainer = Explainer(f)
    explainer.compile(rows=xs, what=what)
    assert explainer.engine.name == "sat" and "at its pace on the first" in explainer.choice
    explainer.auto_seconds = 0
    answers = [explainer.explain_states(x, what) for x in xs]
    assert [e.engine for e in answers] == ["sat", "sat", "graphs"]
    assert "once the SAT engine had taken" in explainer.choice
    assert attempts[1] > 0  # half the SAT engine's projected time, auto_seconds being 0
    assert [e.to_json(engine=False) for e in answers] == [
        unlimited(f).explain_states(x, what).to_json(engine=False) for x in xs]


def test_the_api_has_the_machines_node_budget_by_default():
    from rfcircuits.budget import default_max_nodes

    assert Explainer(forest(SUSAN_FOREST)).max_nodes == default_max_nodes()
    assert Explainer(forest(SUSAN_FOREST), max_nodes=None).max_nodes is None


def test_text_says_the_engine_and_what_is_missing():
    f = forest(SUSAN_FOREST)
    text = str(Explainer(f, engine="sat").explain(instance_values(f)))
    assert "engine: SAT on the NNF circuits" in text
    assert "general sufficient reasons: not computed by the sat engine" in text


def instance_values(f):
    x = instance(f, SUSAN)
    return {feat.name: feat.states[s] for feat, s in zip(f.features, x)}


def test_cli_engine_jobs_and_lines(tmp_path, capsys):
    rng = random.Random(2)
    f = random_forest(rng, Limits(max_features=5, max_states=5, max_trees=9, max_classes=3))
    xs = [random_instance(rng, f) for _ in range(6)]
    (tmp_path / "f.json").write_text(json.dumps(f.to_json()))
    (tmp_path / "i.jsonl").write_text("".join(json.dumps(instance_to_json(f, x)) + "\n"
                                              for x in xs))
    base = ["explain", "--forest", str(tmp_path / "f.json"), "--instances",
            str(tmp_path / "i.jsonl"), "-q", "--what", "sr,nr,ce,robust,flips"]
    outputs = {}
    for extra in ([], ["--engine", "sat"], ["--engine", "sat", "--jobs", "2"],
                  ["--engine", "graphs", "--jobs", "2"]):
        assert main(base + extra) == 0
        outputs[tuple(extra)] = capsys.readouterr().out.splitlines()
    assert outputs[("--engine", "sat")] == outputs[("--engine", "sat", "--jobs", "2")]
    assert outputs[()] == outputs[("--engine", "graphs", "--jobs", "2")]
    for ours, theirs in zip(outputs[()], outputs[("--engine", "sat")]):
        a, b = json.loads(ours), json.loads(theirs)
        assert (a.pop("engine"), b.pop("engine")) == ("graphs", "sat")
        assert a == b
    assert main(base + ["--limit-seconds", "-1"]) == 2
    assert "--limit-seconds must be 0" in capsys.readouterr().err


def test_shortest_flips_are_the_nearest_worlds_outside():
    rng = random.Random(9)
    for _ in range(20):
        f = random_forest(rng, LIMITS)
        x = random_instance(rng, f)
        brute = BruteForce(f)
        e = unlimited(f).explain_states(x, ("robust", "flips"))
        mine = set(flips(x, e.shortest_flips, [ft.full for ft in f.features]))
        delta = brute.class_worlds(e.decision)
        outside = [w for i, w in enumerate(brute.worlds) if not delta >> i & 1]
        least = min((brute.diff(x, w).bit_count() for w in outside), default=None)
        assert mine == {w for w in outside if brute.diff(x, w).bit_count() == least}
        assert e.robustness == least
        assert all(len(c) == least for c in e.shortest_flips)
        assert all(variables(c) for c in e.shortest_flips)


def test_flips_of_grids_too_large_to_table_are_listed_by_sat(monkeypatch):
    # With no grid small enough, every shortest NR set's flips are enumerated cell by cell.
    from rfcircuits import flipgrid

    monkeypatch.setattr(flipgrid.shortest_gnrs, "__defaults__", (1, None))
    rng = random.Random(21)
    checked = 0
    for _ in range(40):
        f = random_forest(rng, LIMITS)
        x = random_instance(rng, f)
        for ties in TIES:
            e = unlimited(f, ties).explain_states(x, ("robust", "flips"))
            truth = BruteForce(f, ties).explain(x, ("robust", "flips"))
            assert not e.incomplete
            assert e.shortest_flips == truth.shortest_flips
            checked += bool(truth.shortest_flips)
    assert checked > 20
    # a cap on the cells (items) leaves the field incomplete, never wrong
    f = random_forest(random.Random(3), Limits(max_features=4, max_states=6, max_trees=9))
    for x in (random_instance(random.Random(k), f) for k in range(10)):
        e = SatEngine(f, limit_items=1, limit_seconds=None).explain_states(x, ("flips",))
        truth = BruteForce(f).explain(x, ("flips",))
        assert set(e.shortest_flips) <= set(truth.shortest_flips)


def test_flip_grids_evaluated_by_blocks_give_the_same_flips(monkeypatch):
    # One atom of the first feature per block: the blocks' cells must line up.
    from rfcircuits import flipgrid

    monkeypatch.setattr(flipgrid, "MAX_WORK", 1)
    rng = random.Random(8)
    for _ in range(30):
        f = random_forest(rng, LIMITS)
        x = random_instance(rng, f)
        e = unlimited(f).explain_states(x, ("flips",))
        assert e.shortest_flips == BruteForce(f).explain(x, ("flips",)).shortest_flips


def test_wide_masks_sort_as_their_state_lists():
    # Terms over features with hundreds of states sort without building state lists.
    from rfcircuits.terms import canonical, sort_key

    rng = random.Random(1)
    terms = [tuple((f, rng.getrandbits(rng.choice([3, 70, 300])) | 1 << 400)
                   for f in sorted(rng.sample(range(4), rng.randint(1, 3))))
             for _ in range(400)]
    terms += [t[:1] for t in terms[:50]]
    assert list(canonical(terms)) == sorted(set(terms), key=sort_key)
