"""The differential harness finds planted errors; shrinking and fuzz runs behave."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from rfcircuits.errors import InputError
from rfcircuits.explain import Explainer
from rfcircuits.forest import TIES, forest_from_json, instance_to_json
from rfcircuits.cli.main import main
from rfcircuits.crosscheck.differential.fuzz import make_case, repro, run_case
from rfcircuits.crosscheck.differential.harness import crosscheck
from rfcircuits.crosscheck.differential.shrink import shrink
from rfcircuits.crosscheck.differential.spec_examples import SUSAN, SUSAN_FOREST, forest, instance
from rfcircuits.crosscheck.differential.strategies import Limits, random_forest, random_instance

ORIGINAL = Explainer.explain_states


def planted(change):
    """An Explainer.explain_states that returns a corrupted explanation."""
    def explain(self, x, what=None, timings=None, sr_method=None, robust_method=None, nr_method=None):
        e = ORIGINAL(self, x, what) if what is not None else ORIGINAL(self, x)
        return change(e)
    return explain


def susan_case():
    f = forest(SUSAN_FOREST)
    return f, [instance(f, SUSAN)]


@pytest.mark.parametrize("change, field", [
    (lambda e: dataclasses.replace(e, sufficient_reasons=(e.sufficient_reasons[0][1:],)
                                   + e.sufficient_reasons[1:]), "sufficient_reasons"),
    (lambda e: dataclasses.replace(e, robustness=e.robustness + 1), "robustness"),
    (lambda e: dataclasses.replace(e, general_necessary_reasons=e.general_necessary_reasons[1:]),
     "general_necessary_reasons"),
    (lambda e: dataclasses.replace(e, shortest_flips=tuple(
        tuple((f, m | 1) for f, m in c) for c in e.shortest_flips)), "shortest_flips"),
])
def test_planted_explanation_errors_are_found(monkeypatch, change, field):
    monkeypatch.setattr(Explainer, "explain_states", planted(change))
    f, xs = susan_case()
    report = crosscheck(f, xs, formulas=False)
    engines = {d.engines[1] for d in report.disagreements if d.check.startswith(field)}
    assert engines == {"brute", "bdd", "sat"}, report.table()


def test_redirected_branch_in_a_circuit_file_is_found():
    from rfcircuits.dgcompile import compile_dg
    from rfcircuits.crosscheck.oracles.bdd import BddOracle

    f, _ = susan_case()
    comp = compile_dg(f, "first", "dg")
    doc = comp.dg.to_json(comp.roots[1], f, "yes", "first")
    assert BddOracle(f).check_circuit(doc).equivalent
    leaf = {n["leaf"]: i for i, n in enumerate(doc["nodes"]) if "leaf" in n}
    node = next(n for n in doc["nodes"] if "branches" in n
                and any(c in leaf.values() for _, c in n["branches"]))
    branch = next(b for b in node["branches"] if b[1] in leaf.values())
    branch[1] = leaf[not doc["nodes"][branch[1]]["leaf"]]
    verdict = BddOracle(f).check_circuit(doc)
    assert not verdict.equivalent and verdict.counterexample is not None


def test_clean_cases_agree_everywhere():
    for seed in range(6):
        f, xs = make_case(7, seed, Limits())
        for ties in ("first", "all"):
            report = crosscheck(f, xs, ties)
            assert report.ok, report.table()
            assert {o.engine for o in report.outcomes} >= {"brute", "bdd", "sat"}


def test_shrinking_keeps_the_failure_and_reduces_the_case(monkeypatch):
    # Plant a bug that shows only when the forest has a tree testing feature 0 twice in a
    # row of trees... simpler: robustness off by one whenever it is 2 or more.
    monkeypatch.setattr(Explainer, "explain_states", planted(
        lambda e: dataclasses.replace(e, robustness=e.robustness + 1)
        if e.robustness is not None and e.robustness >= 2 else e))
    rng = random.Random(3)
    for _ in range(200):
        f = random_forest(rng, Limits(max_trees=7, max_features=4))
        xs = [random_instance(rng, f) for _ in range(3)]
        report = crosscheck(f, xs, formulas=False, oracles=("brute",))
        if not report.ok:
            break
    else:
        pytest.skip("no case with robustness >= 2 found")

    def fails(g, ys):
        return any(d.check == "robustness"
                   for d in crosscheck(g, ys, formulas=False, oracles=("brute",)).disagreements)

    small, ys = shrink(f, xs, fails)
    assert fails(small, ys)
    assert len(ys) == 1
    assert len(small.trees) <= len(f.trees) and small.n_nodes <= f.n_nodes


def test_shrinking_and_repro_files_keep_the_input_dtype(tmp_path, capsys):
    f = dataclasses.replace(random_forest(random.Random(5), Limits(max_trees=4)),
                            input_dtype="float32")
    xs = [random_instance(random.Random(6), f) for _ in range(3)]
    small, ys = shrink(f, xs, lambda g, zs: True)
    assert small.n_nodes < f.n_nodes and small.input_dtype == "float32"
    doc = repro(small, ys, "first", [])
    assert doc["forest"]["input_dtype"] == "float32"
    (tmp_path / "r.json").write_text(json.dumps(doc))
    assert main(["crosscheck", "--replay", str(tmp_path / "r.json"), "--no-progress"]) == 0
    assert forest_from_json(doc["forest"]) == small


def test_a_repro_replays_the_comparison_of_soft_votes_it_was_found_with(tmp_path, monkeypatch,
                                                                        capsys):
    import rfcircuits.classformula as classformula
    from rfcircuits.crosscheck.differential.strategies import soften

    f = soften(random_forest(random.Random(5), Limits(max_trees=3)), random.Random(6))
    xs = [random_instance(random.Random(7), f)]
    doc = repro(f, xs, "first", [], engine="sat", comparison="binary")
    assert doc["comparison"] == "binary" and "comparison" not in repro(f, xs, "first", [])
    (tmp_path / "r.json").write_text(json.dumps(doc))
    used = []
    real = classformula.at_least_binary
    monkeypatch.setattr(classformula, "at_least_binary",
                        lambda *a, **k: used.append(1) or real(*a, **k))
    assert main(["crosscheck", "--replay", str(tmp_path / "r.json"), "--no-progress"]) == 0
    assert used  # the tiny forest's comparisons would be diagrams, unforced
    (tmp_path / "r.json").write_text(json.dumps({**doc, "comparison": "abacus"}))
    assert main(["crosscheck", "--replay", str(tmp_path / "r.json"), "--no-progress"]) == 2
    assert "comparison 'abacus' is not one of auto, unary, diagram, binary" in \
        capsys.readouterr().err


@pytest.mark.parametrize("shipped", [False, True], ids=["compiled-there", "circuits-sent"])
def test_a_cluster_worker_compares_soft_votes_as_the_run_asks(shipped, monkeypatch):
    """``crosscheck --dask``: the worker's checks use the run's ``comparison`` (whether it
    compiles the circuits or loads the client's, whose SAT file holds none)."""
    import rfcircuits.classformula as classformula
    from rfcircuits.crosscheck.differential import harness
    from rfcircuits.crosscheck.differential.strategies import soften
    from rfcircuits.explanation import ALL_WHAT

    f = soften(random_forest(random.Random(5), Limits(max_trees=3)), random.Random(6))
    xs = [random_instance(random.Random(7), f)]
    limits = {"limit_seconds": None, "limit_items": None}
    circuits = Explainer(f, engine="sat", **limits).dumps() if shipped else None
    used = []
    real = classformula.at_least_binary
    monkeypatch.setattr(classformula, "at_least_binary",
                        lambda *a, **k: used.append(1) or real(*a, **k))
    try:
        outcomes, found = harness._explain_remote(
            "token", circuits, None, f, "first", ("brute",), 0, None, "sat", limits, "binary",
            xs, [harness.DEFAULT_METHODS], ALL_WHAT, 0)
    finally:
        harness._REMOTE[1].close()
        harness._REMOTE = None
    assert outcomes and not found
    assert used  # the tiny forest's comparisons would be diagrams, unforced


def test_crosscheck_cli_and_replay(tmp_path, monkeypatch, capsys):
    f, xs = susan_case()
    (tmp_path / "f.json").write_text(json.dumps(f.to_json()))
    (tmp_path / "i.jsonl").write_text(json.dumps(instance_to_json(f, xs[0])) + "\n")
    args = ["crosscheck", "--forest", str(tmp_path / "f.json"), "--instances",
            str(tmp_path / "i.jsonl"), "--repro", str(tmp_path / "r.json")]
    assert main(args) == 0
    assert "agree" in capsys.readouterr().out
    monkeypatch.setattr(Explainer, "explain_states", planted(
        lambda e: dataclasses.replace(e, necessary_reasons=e.necessary_reasons[:1])))
    assert main(args) == 1
    assert "DISAGREE necessary_reasons" in capsys.readouterr().out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["format"] == "rfcircuits.repro/1" and doc["disagreements"]
    assert main(["crosscheck", "--replay", str(tmp_path / "r.json")]) == 1
    monkeypatch.setattr(Explainer, "explain_states", ORIGINAL)
    assert main(["crosscheck", "--replay", str(tmp_path / "r.json")]) == 0
    capsys.readouterr()


def test_fuzz_cli_short_run(tmp_path, capsys):
    assert main(["fuzz", "--seconds", "3", "--seed", "5", "--out", str(tmp_path / "out"),
                 "--json", "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["cases"] >= 1 and summary["checks"] > 0 and summary["failures"] == []


def test_same_seed_same_cases():
    assert make_case(11, 4, Limits()) == make_case(11, 4, Limits())
    assert make_case(11, 4, Limits()) != make_case(11, 5, Limits())


def test_wrong_flip_worlds_are_found(monkeypatch):
    import rfcircuits.crosscheck.differential.harness as harness

    real = harness.flips
    monkeypatch.setattr(harness, "flips", lambda x, clauses, full: list(real(x, clauses, full))[1:])
    f, xs = susan_case()
    report = crosscheck(f, xs, formulas=False)
    assert {d.check for d in report.disagreements} == {"shortest flip worlds"}, report.table()


def test_alg_3a_must_give_one_graph_per_class(monkeypatch):
    import rfcircuits.crosscheck.differential.harness as harness

    f, xs = next((f, xs) for seed in range(50) for f, xs in [make_case(11, seed, Limits())]
                 if len(f.classes) >= 3)
    assert crosscheck(f, xs[:1], what=("robust",)).ok
    real = harness.compile_dg

    def unfolded(forest, ties, form, **kw):
        comp = real(forest, ties, form, **kw)
        return dataclasses.replace(comp, roots=comp.roots_3b) if form == "dg" else comp

    monkeypatch.setattr(harness, "compile_dg", unfolded)
    report = crosscheck(f, xs[:1], what=("robust",))
    assert {d.check for d in report.disagreements} == {"formula dg is one graph per class"}


def test_one_compile_serves_both_forms_and_the_explanations(monkeypatch):
    """A large forest's graphs are compiled once per crosscheck, not once per use."""
    import rfcircuits.graphengine
    import rfcircuits.crosscheck.differential.harness as harness

    f, xs = make_case(5, 3, Limits())
    real = harness.compile_dg
    ordered = []

    def counted(forest, ties, form, **kw):
        ordered.append(kw.get("apply", "ordered") == "ordered")
        return real(forest, ties, form, **kw)

    def again(*args, **kw):
        raise AssertionError("the explainer compiled the class formulas again")

    monkeypatch.setattr(harness, "compile_dg", counted)
    monkeypatch.setattr(rfcircuits.graphengine, "compile_dg", again)
    report = crosscheck(f, xs, oracles=("brute",))
    assert report.ok, report.table()
    assert ordered.count(True) == 1


def test_both_tie_policies_share_one_compile(tmp_path, monkeypatch, capsys):
    """`crosscheck --ties both` compiles the class formulas of both policies in one run of the
    networks (a forest that sifts: the trigger lowered), and the policy checked second is
    checked on the formulas handed over, against the SAT oracle."""
    import rfcircuits.dgcompile as dgcompile

    f, xs = make_case(5, 3, Limits())
    (tmp_path / "f.json").write_text(json.dumps(f.to_json()))
    (tmp_path / "i.jsonl").write_text(json.dumps(instance_to_json(f, xs[0])) + "\n")
    real = dgcompile._compile
    policies = []

    def recorded(forest, ties, form, apply, ranks, max_nodes, *args):
        if apply == "ordered" and max_nodes != 1:  # not Alg. 4's nor a trial before sifting
            policies.append(ties)
        return real(forest, ties, form, apply, ranks, max_nodes, *args)

    monkeypatch.setattr(dgcompile, "SIFT_TRIGGER", 1)
    monkeypatch.setattr(dgcompile, "_compile", recorded)
    assert main(["crosscheck", "--forest", str(tmp_path / "f.json"), "--instances",
                 str(tmp_path / "i.jsonl"), "--oracles", "sat", "--ties", "both",
                 "--what", "sr", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "ties all: " in out and "formula dg " in out
    assert [p for p in policies if "all" in p] == [("first", "all")], policies


def test_broken_graph_invariants_are_reported(monkeypatch):
    from rfcircuits.dgraph import DG

    def broken(self, roots):
        raise AssertionError("node 7: wrong ordered flag")

    monkeypatch.setattr(DG, "check_invariants", broken)
    f, xs = susan_case()
    report = crosscheck(f, xs, what=("robust",))
    assert {d.check for d in report.disagreements} == {
        "formula dg-conj invariants", "formula dg invariants", "formula dg-conj alg4 invariants"}


def test_fuzz_checks_a_general_reason_case(monkeypatch):
    # A GSR dropped is found in the general-reason case too, whose repro is saved apart.
    monkeypatch.setattr(Explainer, "explain_states", planted(
        lambda e: dataclasses.replace(
            e, general_sufficient_reasons=e.general_sufficient_reasons[1:])))
    checks, found = run_case(3, 0, Limits(), ("bdd",))
    assert checks > 0
    general = [doc for name, doc in found if "-general-" in name]
    assert general, [name for name, _ in found]
    assert {d["check"] for d in general[0]["disagreements"]} == {"general_sufficient_reasons"}


def test_native_node_budget_skips_its_checks_and_keeps_the_oracles(tmp_path, capsys):
    f, xs = susan_case()
    report = crosscheck(f, xs * 2, oracles=("brute",), max_nodes=3)
    assert report.ok and report.checks() > 0
    by_check = {}
    for o in report.outcomes:
        by_check.setdefault((o.check, o.engine), set()).add(o.status)
    assert by_check[("formula nnf", "brute")] == {"agree"}  # the NNF needs no graph budget
    for check in ("formula dg-conj", "formula dg", "explain"):
        assert by_check[(check, "native")] == {"skipped"}
    assert all(o.detail == "stopped: decision graphs exceed --max-nodes 3"
               for o in report.outcomes if o.engine == "native")
    assert not any(o.check == "explain" and o.engine == "brute" for o in report.outcomes)
    assert sum(o.check == "explain" for o in report.outcomes) == 2  # each instance, no retry
    (tmp_path / "f.json").write_text(json.dumps(f.to_json()))
    (tmp_path / "i.jsonl").write_text(json.dumps(instance_to_json(f, xs[0])) + "\n")
    args = ["crosscheck", "--forest", str(tmp_path / "f.json"), "--instances",
            str(tmp_path / "i.jsonl"), "--oracles", "brute", "--engine", "graphs", "--max-nodes"]
    assert main(args + ["3"]) == 0
    assert "native: stopped: decision graphs exceed --max-nodes 3" in capsys.readouterr().out
    assert main(args + ["-1"]) == 2
    assert "--max-nodes must be 0" in capsys.readouterr().err


def test_crosscheck_warns_when_nothing_was_compared(tmp_path, capsys):
    """No disagreement, so exit 0, but a run whose every check was skipped says so."""
    f, xs = susan_case()
    (tmp_path / "f.json").write_text(json.dumps(f.to_json()))
    (tmp_path / "i.jsonl").write_text(json.dumps(instance_to_json(f, xs[0])) + "\n")
    args = ["crosscheck", "--forest", str(tmp_path / "f.json"), "--instances",
            str(tmp_path / "i.jsonl"), "--oracles", "sat", "--no-formulas", "--no-progress",
            "--engine", "graphs"]
    assert main(args + ["--max-nodes", "3"]) == 0
    captured = capsys.readouterr()
    assert "ties first: 0 checks, 0 disagreements" in captured.out
    assert "nothing was compared under ties first" in captured.err
    assert main(args) == 0  # the same run with a budget that fits compares, and is quiet
    captured = capsys.readouterr()
    assert "0 checks" not in captured.out
    assert "nothing was compared" not in captured.err


def test_interrupted_crosscheck_keeps_the_finished_checks(tmp_path, monkeypatch, capsys):
    f, xs = susan_case()
    calls = []

    def explain(self, x, what=None, timings=None, sr_method=None, robust_method=None, nr_method=None):
        calls.append(x)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return ORIGINAL(self, x, what)

    monkeypatch.setattr(Explainer, "explain_states", explain)
    (tmp_path / "f.json").write_text(json.dumps(f.to_json()))
    (tmp_path / "i.jsonl").write_text((json.dumps(instance_to_json(f, xs[0])) + "\n") * 3)
    assert main(["crosscheck", "--forest", str(tmp_path / "f.json"), "--instances",
                 str(tmp_path / "i.jsonl"), "--oracles", "brute", "--ties", "both",
                 "--no-formulas", "--no-progress"]) == 130
    out = capsys.readouterr().out
    assert "interrupted (ties first) after 1 of 3 instances" in out
    assert "ties all" not in out  # the run stops at the interruption
    assert "agree" in out and "sufficient_reasons" in out  # the first instance's checks


def _table(report):
    return [(o.check, o.engine, o.status, o.detail) for o in report.outcomes]


def test_jobs_give_the_serial_report(monkeypatch):
    rng = random.Random(5)
    f = random_forest(rng, Limits(max_features=3, max_states=3, max_trees=4, max_classes=3))
    xs = [random_instance(rng, f) for _ in range(5)]
    serial = crosscheck(f, xs, formulas=False)
    parallel = crosscheck(f, xs, formulas=False, jobs=2)
    assert serial.ok and parallel.explained == 5
    assert _table(parallel) == _table(serial)
    # A planted error is found by the workers as by a serial run, instance by instance.
    monkeypatch.setattr(Explainer, "explain_states", planted(
        lambda e: dataclasses.replace(e, robustness=(e.robustness or 0) + 1)))
    serial = crosscheck(f, xs, formulas=False)
    parallel = crosscheck(f, xs, formulas=False, jobs=3)
    assert not serial.ok and _table(parallel) == _table(serial)
    assert [d.to_json() for d in parallel.disagreements] == \
        [d.to_json() for d in serial.disagreements]


def test_jobs_share_the_budget_stop_and_keep_finished_checks_on_interrupt(monkeypatch):
    import rfcircuits.graphengine

    f, xs = susan_case()
    serial = crosscheck(f, xs * 3, oracles=("brute",), max_nodes=3, formulas=False)
    parallel = crosscheck(f, xs * 3, oracles=("brute",), max_nodes=3, formulas=False, jobs=2)
    assert _table(parallel) == _table(serial)
    assert sum(o.check == "explain" for o in parallel.outcomes) == 3
    # Stopped by the class-formula checks, the explainer is not compiled again to be shared.
    compiles = []
    real = rfcircuits.graphengine.compile_dg
    monkeypatch.setattr(rfcircuits.graphengine, "compile_dg",
                        lambda *a, **k: compiles.append(1) or real(*a, **k))
    serial = crosscheck(f, xs * 3, oracles=("brute",), max_nodes=3)
    parallel = crosscheck(f, xs * 3, oracles=("brute",), max_nodes=3, jobs=2)
    assert compiles == [] and _table(parallel) == _table(serial)

    def stop(done, total):
        raise KeyboardInterrupt

    report = crosscheck(f, xs * 3, oracles=("brute",), formulas=False, jobs=2, progress=stop)
    assert report.interrupted and report.explained == 1
    assert _table(report) == _table(crosscheck(f, xs, oracles=("brute",), formulas=False))


def test_jobs_must_be_positive(tmp_path, capsys):
    f, xs = susan_case()
    (tmp_path / "f.json").write_text(json.dumps(f.to_json()))
    (tmp_path / "i.jsonl").write_text(json.dumps(instance_to_json(f, xs[0])) + "\n")
    with pytest.raises(SystemExit) as exit_:
        main(["crosscheck", "--forest", str(tmp_path / "f.json"), "--instances",
              str(tmp_path / "i.jsonl"), "--jobs", "0"])
    assert exit_.value.code == 2
    assert "argument --jobs: must be positive" in capsys.readouterr().err


def test_ctrl_c_inside_the_sat_oracle_interrupts_the_crosscheck(monkeypatch):
    from rfcircuits.crosscheck.oracles.sat import SatOracle

    def robustness(self, x):
        # what rfcircuits.crosscheck.oracles.sat raises for Ctrl-C inside PySAT
        raise KeyboardInterrupt

    monkeypatch.setattr(SatOracle, "robustness", robustness)
    f, xs = susan_case()
    for jobs in (1, 2):
        report = crosscheck(f, xs * 2, oracles=("sat",), formulas=False, jobs=jobs)
        assert report.interrupted and report.ok and report.explained == 0  # not a crash


def test_fuzz_stops_at_an_interrupted_report(monkeypatch):
    import rfcircuits.crosscheck.differential.fuzz as fuzz

    real = fuzz.crosscheck

    def interrupted(*args, **kwargs):
        report = real(*args, **kwargs)
        report.interrupted = True
        return report

    monkeypatch.setattr(fuzz, "crosscheck", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_case(3, 0, Limits(), ("brute",))


def test_large_forests_check_srs_and_nrs_by_the_certificate(monkeypatch):
    import rfcircuits.crosscheck.differential.harness as harness
    from rfcircuits.crosscheck.oracles.sat import SatOracle

    f, xs = susan_case()
    small = crosscheck(f, xs, oracles=("sat",), formulas=False, what=("sr", "nr"))
    assert small.ok and [(o.status, o.detail) for o in small.outcomes
                         if o.check == "sufficient_reasons"] == [("agree", ""),
                                                                  ("agree", "certified")]
    monkeypatch.setattr(harness, "SAT_ENUMERATION_WORLDS", 1)  # the certificate path, alone

    def enumerated(self, x, goal):
        raise AssertionError("SRs and NRs enumerated")

    with monkeypatch.context() as patch:
        patch.setattr(SatOracle, "_freers", enumerated)
        report = crosscheck(f, xs, oracles=("sat",), formulas=False,
                            what=("sr", "nr", "gsr", "gnr", "robust"))
        assert report.ok, report.table()
        status = {(o.check, o.status, o.detail) for o in report.outcomes}
        assert {("sufficient_reasons", "agree", "certified"),
                ("necessary_reasons", "agree", "certified"),
                ("general_sufficient_reasons (feature sets)", "agree", ""),
                ("general_necessary_reasons (feature sets)", "agree", "")} <= status
        only = crosscheck(f, xs, oracles=("sat",), formulas=False, what=("nr",))
        assert only.ok and {o.check for o in only.outcomes} == {
            "votes", "decision", "classes", "necessary_reasons"}
    monkeypatch.setattr(Explainer, "explain_states", planted(
        lambda e: dataclasses.replace(e, necessary_reasons=e.necessary_reasons[1:])))
    report = crosscheck(f, xs, oracles=("sat",), formulas=False, what=("sr", "nr"))
    found = {d.check: d for d in report.disagreements}
    assert set(found) == {"sufficient_reasons", "necessary_reasons"}, report.table()
    nr = found["necessary_reasons"]
    assert nr.engines == ("native", "sat")
    assert "is missing" in nr.counterexample["certificate"]["sr_transversals"]
    assert nr.counterexample["only_theirs"] == nr.theirs[:1]  # SAT's own NRs, enumerated


def test_brute_force_leaves_general_fields_past_its_candidate_bound(monkeypatch):
    import rfcircuits.crosscheck.oracles.brute as brute

    f, xs = susan_case()
    assert brute.BruteForce(f).general_too_big() is None
    monkeypatch.setattr(brute, "MAX_GENERAL_CANDIDATES", 2)
    oracle = brute.BruteForce(f)
    assert "exceed the brute force's 2^1" in oracle.general_too_big()
    with pytest.raises(InputError, match="leave out gsr, gnr, flips"):
        oracle.explain(xs[0], ("sr", "gsr"))
    assert oracle.explain(xs[0], ("sr", "nr")).sufficient_reasons
    report = crosscheck(f, xs, formulas=False)
    assert report.ok
    status = {(o.check, o.engine): o.status for o in report.outcomes}
    for field in ("general_sufficient_reasons", "general_necessary_reasons", "shortest_flips"):
        assert status[(field, "brute")] == "skipped" and status[(field, "bdd")] == "agree"
    for field in ("sufficient_reasons", "necessary_reasons", "robustness", "shortest flip worlds"):
        assert status[(field, "brute")] == "agree"


@pytest.mark.parametrize("seed", range(8))
def test_circuit_worlds_are_the_worlds_each_circuit_accepts(seed):
    from rfcircuits.classformula import compile_nnf
    from rfcircuits.dgcompile import compile_dg
    from rfcircuits.crosscheck.oracles.brute import BruteForce, WorldSet
    from rfcircuits.crosscheck.differential.harness import circuit_worlds

    f, _ = make_case(seed, 0, Limits())
    brute = BruteForce(f)
    rng = random.Random(seed)
    sample = WorldSet(f, [random_instance(rng, f) for _ in range(20)])
    forms = {"nnf": compile_nnf(f), "dg-conj": compile_dg(f), "dg": compile_dg(f, form="dg"),
             "alg4": compile_dg(f, apply="generic")}
    classes = range(len(f.classes))
    for form, comp in forms.items():
        def accepts(c, w):
            return comp.nnf.evaluate(comp.roots[c], w) if form == "nnf" else comp.evaluate(c, w)
        for worlds in (brute, sample):
            expected = [sum(1 << i for i, w in enumerate(worlds.worlds) if accepts(c, w))
                        for c in classes]
            assert circuit_worlds(form, comp, classes, worlds) == expected, form
            assert [circuit_worlds(form, comp, [c], worlds)[0] for c in classes] == expected


def test_a_wrong_class_formula_is_found_by_brute_force_and_sat(monkeypatch):
    import rfcircuits.crosscheck.differential.harness as harness

    real = harness.compile_nnf

    def swapped(forest, ties, **kw):  # each class gets the other's formula (two classes)
        comp = real(forest, ties, **kw)
        return dataclasses.replace(comp, roots=comp.roots[::-1])

    monkeypatch.setattr(harness, "compile_nnf", swapped)
    f, xs = susan_case()
    report = crosscheck(f, xs, oracles=("brute", "sat"), what=("robust",))
    found = {(d.check, d.engines[1]) for d in report.disagreements}
    assert found == {("formula nnf", "brute"), ("formula nnf", "sat")}, report.table()


def test_crosscheck_checks_the_sat_engine_and_its_cnf():
    rng = random.Random(12)
    for ties in TIES:
        f = random_forest(rng, Limits(max_features=4, max_states=4, max_trees=7, max_classes=3))
        xs = [random_instance(rng, f) for _ in range(3)]
        report = crosscheck(f, xs, ties, engine="sat")
        assert report.ok and report.engine == "sat", report.table()
        statuses = {(o.check, o.engine): o.status for o in report.outcomes}
        assert statuses[("formula cnf", "brute")] == "agree"
        assert statuses[("formula dg", "native")] == "skipped"
        assert statuses[("general_sufficient_reasons", "native")] == "skipped"
        assert statuses[("sufficient_reasons", "brute")] == "agree"


def test_auto_checks_the_sat_engine_past_the_budget():
    f, xs = susan_case()
    report = crosscheck(f, xs, engine="auto", max_nodes=3)
    assert report.ok and report.engine == "sat"
    assert crosscheck(f, xs, engine="auto").engine == "graphs"


def test_incomplete_fields_are_checked_item_by_item():
    from rfcircuits.satengine import SatEngine

    rng = random.Random(11)
    f = random_forest(rng, Limits(max_features=6, max_states=5, max_trees=15, max_classes=3))
    limits = {"limit_seconds": None, "limit_items": 1}
    xs = [x for x in (random_instance(rng, f) for _ in range(30))
          if SatEngine(f, **limits).explain_states(x).incomplete][:3]
    assert xs
    report = crosscheck(f, xs, engine="sat", limits=limits, formulas=False)
    assert report.ok, report.table()
    checks = {o.check for o in report.outcomes}
    assert "sufficient_reasons (incomplete: items)" in checks
