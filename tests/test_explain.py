"""Reasons and explanations (docs/semantics.md; paper Alg. 5–7) against the worked examples and the
brute-force oracle."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rfcircuits.explain import NR_METHODS, ROBUST_METHODS, SR_METHODS, Explainer
from rfcircuits.explanation import ALL_WHAT, Explanation
from rfcircuits.nnf import NNF
from rfcircuits.dgcompile import compile_dg
from rfcircuits.reasons import complete_reason, general_reason
from rfcircuits.robustness import flips
from rfcircuits.forest import mask_states
from rfcircuits.terms import Canonical, _table_terms, canonical, simple, simple_terms
from rfcircuits.crosscheck.oracles.brute import BruteForce
from rfcircuits.cli.main import main
from rfcircuits.crosscheck.differential.harness import nnf_worlds
from rfcircuits.crosscheck.differential.spec_examples import (FLIP, FLIP_ANSWERS, FLIP_FOREST,
                                                              FLIP_WORLDS, SUSAN, SUSAN_ANSWERS,
                                                              SUSAN_FOREST, expected, forest,
                                                              instance)
from rfcircuits.crosscheck.differential.strategies import Limits, forest_and_instance

LIMITS = Limits(max_features=4, max_states=4, max_trees=7, max_classes=3)


def check_answers(doc, inst, answers):
    f = forest(doc)
    x = instance(f, inst)
    for method, robust, nr in itertools.product(SR_METHODS, ROBUST_METHODS, NR_METHODS):
        e = Explainer(f, sr_method=method, robust_method=robust, nr_method=nr).explain_states(x)
        assert f.classes[e.decision] == answers["decision"]
        for key, value in answers.items():
            if key == "decision":
                continue
            got = getattr(e, key)
            assert got == (value if key == "robustness" else expected(f, value)), key


def test_susan_example():
    check_answers(SUSAN_FOREST, SUSAN, SUSAN_ANSWERS)


def test_flip_example():
    check_answers(FLIP_FOREST, FLIP, FLIP_ANSWERS)
    f = forest(FLIP_FOREST)
    x = instance(f, FLIP)
    e = Explainer(f).explain_states(x)
    worlds = list(flips(x, e.shortest_flips, [ft.full for ft in f.features]))
    assert worlds == [instance(f, w) for w in FLIP_WORLDS]


@settings(max_examples=200, deadline=None)
@given(forest_and_instance(LIMITS), st.sampled_from(["first", "all"]),
       st.sampled_from(SR_METHODS), st.sampled_from(ROBUST_METHODS))
def test_every_field_equals_brute_force(case, ties, method, robust):
    f, x = case
    explainer = Explainer(f, ties, sr_method=method, robust_method=robust)
    brute = BruteForce(f, ties)
    assert explainer.explain_states(x).to_json(engine=False) == brute.explain(x).to_json()
    # Without GSRs, GR is built only where its clauses fit an NR's (GNRs) or a shortest NR's
    # (flips) features; robustness without NRs is Alg. 5's or the NR search's alone.
    for what in (("nr", "gnr", "robust", "flips"), ("robust", "flips"), ("robust",)):
        assert explainer.explain_states(x, what).to_json(engine=False) == \
            brute.explain(x, what).to_json()


@settings(max_examples=60, deadline=None)
@given(forest_and_instance(LIMITS), st.sampled_from(["first", "all"]),
       st.sampled_from(["ordered", "generic"]))
def test_reasons_and_flips_semantics(case, ties, apply):
    # The closed forms hold on weak test-once graphs (Alg. 4), not only on ordered ones.
    f, x = case
    brute = BruteForce(f, ties)
    explainer = Explainer(f, ties)
    comp = compile_dg(f, ties, "dg-conj", apply=apply)
    delta = brute.class_worlds(f.decision(x))
    nnf = NNF(f.features)
    roots = comp.roots[f.decision(x)]
    cr = complete_reason(comp.dg, roots, x, nnf)
    gr = general_reason(comp.dg, roots, x, nnf)
    nnf.check_invariants()
    assert nnf.is_or_decomposable([cr])
    # GR is or-decomposable on test-once graphs (what the explainer compiles); on weak test-once
    # graphs a re-test puts X-literals on both sides of an ∨ (docs/decisions.md).
    assert apply == "generic" or nnf.is_or_decomposable([gr])
    got_cr, got_gr = nnf_worlds(nnf, [cr, gr], brute)
    assert got_cr == brute.complete_reason(x, delta)
    assert got_gr == brute.general_reason(x, delta)
    # NRs and CEs as the graphs' minimal deviation sets (re-tests on Alg. 4 graphs: a
    # feature already deviating, or x's state infeasible, costs nothing).
    truth = brute.explain(x, ("nr", "ce"))
    assert Explanation.sets(simple(x, v) for v in comp.dg.min_deviations(roots, x)) == \
        truth.necessary_reasons
    folded = compile_dg(f, ties, "dg", apply=apply)
    ces = tuple((t, Explanation.sets(simple(x, v) for v in folded.dg.min_deviations(
        [folded.dg.negate(folded.roots[t][0])], x))) for t, _ in truth.contrastive)
    assert ces == truth.contrastive
    # Shortest flips: exactly the worlds at distance r outside the class (paper §4).
    e = explainer.explain_states(x, ("robust", "flips"))
    full = [ft.full for ft in f.features]
    outside = {w for i, w in enumerate(brute.worlds) if not delta >> i & 1}
    nearest = {w for w in outside if sum(a != b for a, b in zip(w, x)) == e.robustness}
    assert set(flips(x, e.shortest_flips, full)) == nearest


def test_what_selects_fields():
    f = forest(SUSAN_FOREST)
    x = instance(f, SUSAN)
    doc = Explainer(f).explain_states(x, ("robust", "sr")).to_json()
    assert list(doc) == ["instance", "ties", "votes", "decision", "classes", "engine",
                         "sufficient_reasons", "robustness"]
    assert list(Explainer(f).explain_states(x).to_json())[6:] == [
        "sufficient_reasons", "necessary_reasons", "general_sufficient_reasons",
        "general_necessary_reasons", "contrastive", "robustness", "shortest_flips"]
    assert len(ALL_WHAT) == 7


def test_valid_class_edge_case():
    doc = {"format": "rfcircuits.forest/1", "classes": ["a", "b"],
           "features": [{"name": "x", "states": ["p", "q"]}],
           "trees": [{"nodes": [{"class": "b"}]}]}
    f = forest(doc)
    e = Explainer(f).explain_states((0,)).to_json()
    assert e["sufficient_reasons"] == [[]] and e["necessary_reasons"] == []
    assert e["general_sufficient_reasons"] == [[]] and e["general_necessary_reasons"] == []
    assert e["robustness"] is None and e["shortest_flips"] == []
    assert e["contrastive"] == {"a": []}


@pytest.mark.parametrize("ties", ["first", "all"])
def test_cli_output_is_byte_identical_to_brute_force(tmp_path, capsys, ties):
    import random

    from rfcircuits.crosscheck.differential.strategies import random_forest, random_instance

    for seed in range(8):
        rng = random.Random(seed)
        f = random_forest(rng, LIMITS)
        xs = [random_instance(rng, f) for _ in range(4)]
        (tmp_path / "f.json").write_text(json.dumps(f.to_json()))
        from rfcircuits.forest import instance_to_json

        (tmp_path / "i.jsonl").write_text(
            "".join(json.dumps(instance_to_json(f, x)) + "\n" for x in xs))
        out = tmp_path / "e.jsonl"
        assert main(["explain", "--forest", str(tmp_path / "f.json"), "--instances",
                     str(tmp_path / "i.jsonl"), "--ties", ties, "--out", str(out),
                     "--no-progress"]) == 0
        brute = BruteForce(f, ties)
        lines = out.read_text().splitlines()
        assert [json.loads(line)["engine"] for line in lines] == ["graphs"] * len(xs)
        # the same bytes, but for the engine's name (after the header)
        assert [line.replace(', "engine": "graphs"', "", 1) for line in lines] == \
            [brute.explain(x).to_line() for x in xs]
    capsys.readouterr()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(st.integers(0, 5), st.integers(1, 15), max_size=4), max_size=8),
       st.booleans())
def test_canonical_order_is_specs(raw, one_state):
    # docs/formats.md: sorted by [[feature, [states]], …] compared as lists; the fast path for
    # one-state literals (sorting the terms themselves) must give the same order.
    terms = [tuple(sorted((f, 1 << (m % 4) if one_state else m) for f, m in d.items()))
             for d in raw]
    spec = sorted({t: None for t in terms},
                  key=lambda t: [[f, mask_states(m)] for f, m in t])
    assert canonical(terms) == tuple(spec)
    x = tuple(range(6))
    assert simple(x, 0b101001) == ((0, 1 << 0), (3, 1 << 3), (5, 1 << 5))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 5), min_size=n, max_size=n),
    st.lists(st.integers(0, (1 << n) - 1), max_size=12))))
def test_simple_terms_are_the_canonical_simple_terms(case):
    # The byte tables (one, several and a partial last byte) against term-by-term building.
    x, sets = case
    made = simple_terms(x, sets)
    assert made == canonical(simple(x, v) for v in sets)
    assert type(made) is Canonical and canonical(made) is made
    assert _table_terms(x, sets) == [simple(x, v) for v in sets]
