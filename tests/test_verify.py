"""``rfcircuits verify``: every planted error is flagged, correct files pass.

Correct answers come from the native engine on the worked examples, a small numeric +
categorical forest and small random forests (both tie policies); each kind of
corruption is planted in one line and must make ``verify`` fail on that field. Literal
forms (state names, indices, intervals), matching by order, partial files and the
malformed-input policy (exit 2 naming line and field) are checked through the CLI too.
"""

from __future__ import annotations

import copy
import math
import json
import random
from pathlib import Path

import numpy as np
import pytest

import rfcircuits.crosscheck.oracles.sat as sat_module
import rfcircuits.crosscheck.verify as verify_module
from rfcircuits.explain import Explainer
from rfcircuits.inputs import read_instances
from rfcircuits.forest import (Forest, Instance, classes_from_votes, forest_from_json,
                               instance_to_json, parse_instance)
from rfcircuits.cli.main import main
from rfcircuits.crosscheck.differential.spec_examples import (FIGURE1_FOREST, FLIP, FLIP_FOREST,
                                                              SUSAN, SUSAN_FOREST, forest, instance)
from rfcircuits.crosscheck.differential.strategies import Limits, random_forest, random_instance
from rfcircuits.crosscheck.oracles.brute import BruteForce
from rfcircuits.crosscheck.verify import verify

NUMERIC_FOREST = {
    "format": "rfcircuits.forest/1",
    "classes": ["a", "b", "c"],
    "features": [{"name": "x1", "thresholds": [0.5, 2.5, 4.0]},
                 {"name": "col", "states": ["red", "green", "blue"]},
                 {"name": "x2", "thresholds": [1.0]}],
    "trees": [
        {"nodes": [{"feature": "x1", "branches": [[[0], 1], [[1, 2, 3], 2]]}, {"class": "a"},
                   {"feature": "col", "branches": [[[0, 2], 3], [[1], 4]]},
                   {"class": "b"}, {"class": "c"}]},
        {"nodes": [{"feature": "x1", "branches": [[[0, 1], 1], [[2, 3], 2]]}, {"class": "b"},
                   {"feature": "x2", "branches": [[[0], 3], [[1], 4]]},
                   {"class": "a"}, {"class": "c"}]},
        {"nodes": [{"feature": "col", "branches": [[[0], 1], [[1, 2], 2]]}, {"class": "b"},
                   {"feature": "x1", "branches": [[[0, 1, 2], 3], [[3], 4]]},
                   {"class": "c"}, {"class": "a"}]},
    ],
}
SET_FIELDS = ("sufficient_reasons", "necessary_reasons", "general_sufficient_reasons",
              "general_necessary_reasons", "shortest_flips")
GENERAL = ("general_sufficient_reasons", "general_necessary_reasons", "shortest_flips")


def _cases() -> list[tuple[str, Forest, list[Instance], str]]:
    susan = forest(SUSAN_FOREST)
    flip = forest(FLIP_FOREST)
    fig1 = forest(FIGURE1_FOREST)
    numeric = forest_from_json(NUMERIC_FOREST)
    cases = [
        ("susan", susan, [instance(susan, SUSAN),
                          instance(susan, {"Age": "<55", "Weight": "normal", "BType": "O"})],
         "first"),
        ("flip", flip, [instance(flip, FLIP), instance(flip, {"X": "3", "Y": "3"})], "first"),
        ("figure1", fig1, [(0, 0, 0), (1, 1, 2), (2, 1, 0)], "first"),
        ("numeric", numeric, [(1, 1, 0), (3, 0, 1), (0, 2, 1)], "first"),
        ("numeric-all", numeric, [(1, 1, 0), (2, 2, 1)], "all"),
    ]
    limits = Limits(max_features=4, max_states=4, max_trees=5, max_classes=3, max_depth=3)
    for seed in range(8):
        rng = random.Random(seed)
        f = random_forest(rng, limits)
        cases.append((f"random-{seed}", f, [random_instance(rng, f) for _ in range(2)],
                      "all" if seed % 4 == 3 else "first"))
    return cases


CASES = _cases()


def _answers(f: Forest, xs: list[Instance], ties: str) -> list[dict]:
    explainer = Explainer(f, ties)
    return [explainer.explain_states(x).to_json() for x in xs]


@pytest.fixture(scope="module")
def answered() -> list[tuple[str, Forest, list[Instance], str, list[dict]]]:
    return [(name, f, xs, ties, _answers(f, xs, ties)) for name, f, xs, ties in CASES]


def _rows(lines: list[dict]) -> list[tuple[int, dict]]:
    return list(enumerate(lines, start=1))


def test_every_uncorrupted_file_is_accepted(answered):
    for name, f, xs, ties, lines in answered:
        report = verify(f, xs, _rows(lines), ties, name)
        assert report.ok, (name, report.text())
        assert report.matched_by == "instance"
        summary = report.summary()
        assert summary["items"]["wrong"] == summary["items"]["missing"] == 0
        assert summary["items"]["disputed"] == 0
        # Matched by order when no line names its instance.
        bare = [{k: v for k, v in line.items() if k != "instance"} for line in lines]
        report = verify(f, xs, _rows(bare), ties, name)
        assert report.ok and report.matched_by == "order", name


# --- corruptions ------------------------------------------------------------------------------


def _literal(f: Forest, x: Instance, feature: int) -> dict:
    return {"feature": f.features[feature].name, "states": [f.features[feature].states[x[feature]]]}


def _corruptions(f: Forest, x: Instance, line: dict):
    """(kind, description, field that must fail, corrupted line) for every applicable
    corruption."""
    index = f.feature_index
    for name in SET_FIELDS:
        items = line[name]
        if items:
            yield "drop", f"drop an item of {name}", name, {**line, name: items[1:]}
        for k, item in enumerate(items):
            used = {index[lit["feature"]] for lit in item}
            free = [g for g in range(len(f.features)) if g not in used
                    and f.features[g].n_states > 1]
            if free:
                added = item + [_literal(f, x, free[0])]
                yield "add literal", f"add a literal to {name}[{k}]", name, \
                    {**line, name: items[:k] + [added] + items[k + 1:]}
            if item:
                yield "remove literal", f"remove a literal from {name}[{k}]", name, \
                    {**line, name: items[:k] + [item[1:]] + items[k + 1:]}
            if name in GENERAL:
                for j, lit in enumerate(item):
                    feature = f.features[index[lit["feature"]]]
                    outside = [s for s in feature.states if s not in lit["states"]]
                    if len(outside) >= 2:  # the widened literal stays proper
                        wide = copy.deepcopy(item)
                        wide[j]["states"] = lit["states"] + [outside[0]]
                        yield "add state", f"add a state to {name}[{k}][{j}]", name, \
                            {**line, name: items[:k] + [wide] + items[k + 1:]}
                        break
    r = line["robustness"]
    if r is not None:
        for wrong in (r - 1, r + 1):
            yield "robustness", f"robustness {wrong} for {r}", "robustness", \
                {**line, "robustness": wrong}
    targets = line["contrastive"]
    for t, ces in targets.items():
        for other in f.classes:
            if other != t and ces:
                moved = {**targets, t: ces[1:], other: targets.get(other, []) + ces[:1]}
                yield "wrong target", f"a CE of {t} given for {other}", "contrastive", \
                    {**line, "contrastive": moved}
        if ces:
            yield "drop", f"drop a CE of {t}", "contrastive", \
                {**line, "contrastive": {**targets, t: ces[1:]}}


def _check_evidence(f: Forest, x: Instance, ties: str, report) -> int:
    """Every evidence world of the report refutes its item by the trees' votes (not by the
    oracle); the number of them."""
    decided = f.decision(x)
    checked = 0
    for line in report.lines:
        for fr in line.fields:
            for i in fr.items or ():
                if i.evidence is None:
                    continue
                w, checked = i.evidence, checked + 1
                classes = classes_from_votes(f.votes(w), ties)
                changed = {g for g in range(len(f.features)) if w[g] != x[g]}
                features = {g for g, _ in i.item}
                assert i.status in ("wrong", "disputed", "missing")
                if fr.field in ("sufficient_reasons", "general_sufficient_reasons"):
                    # a world of the term (widened by x's states: GR's implicants) leaving Δ
                    assert all((m | 1 << x[g]) >> w[g] & 1 for g, m in i.item)
                    assert decided not in classes
                elif i.refuted == "valid":  # a violation of the clause that keeps Δ
                    assert not any(m >> w[g] & 1 for g, m in i.item) and decided in classes
                else:  # fewer features than the clause already leave Δ / reach the target
                    assert changed < features
                    assert (fr.target in classes) if fr.field == "contrastive" \
                        else decided not in classes
    return checked


def test_every_planted_error_is_flagged(answered):
    planted = 0
    kinds = set()
    evidence = 0
    for name, f, xs, ties, lines in answered:
        for x, line in zip(xs, lines):
            for kind, what, field, bad in _corruptions(f, x, line):
                report = verify(f, [x], [(1, bad)], ties, name)
                assert not report.ok, (name, what)
                evidence += _check_evidence(f, x, ties, report)
                failing = {r.field for r in report.lines[0].fields if r.status != "ok"}
                assert field in failing, (name, what, report.text())
                statuses = {r.status for r in report.lines[0].fields}
                assert "disputed" not in statuses, (name, what, report.text())
                planted += 1
                kinds.add(kind)
    assert planted > 300 and evidence > 100
    assert kinds == {"drop", "add literal", "remove literal", "add state", "robustness",
                     "wrong target"}


CORPUS = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.mark.skipif(not (CORPUS / "MANIFEST.json").exists(), reason="no golden corpus")
def test_corpus_answers_pass_and_planted_errors_are_flagged():
    """The acceptance test on a sample of the golden corpus (fixtures/)."""
    manifest = json.loads((CORPUS / "MANIFEST.json").read_text())
    sample = [c["id"] for c in manifest["cases"][::30] if c["forest"]["worlds"] <= 10 ** 5]
    assert sample
    for case in sample:
        directory = CORPUS / "cases" / case
        f = forest_from_json(json.loads((directory / "forest.json").read_text()))
        xs = read_instances(directory / "instances.jsonl", f)[:2]
        for ties in ("first", "all"):
            lines = [json.loads(line) for line in
                     (directory / f"expected-{ties}.jsonl").read_text().splitlines()[:2]]
            assert verify(f, xs, _rows(lines), ties, case).ok, (case, ties)
            for kind, what, field, bad in _corruptions(f, xs[0], lines[0]):
                report = verify(f, xs[:1], [(1, bad)], ties, case)
                assert field in {r.field for r in report.lines[0].fields if r.status != "ok"}, \
                    (case, ties, what)


def test_missing_instances_and_partial_files(answered):
    name, f, xs, ties, lines = next(c for c in answered if c[0] == "numeric")
    report = verify(f, xs, _rows(lines[:2]), ties)
    assert not report.ok and [p for p, _ in report.missing_instances] == [3]
    only = [{"instance": line["instance"], "robustness": line["robustness"],
             "decision": line["decision"]} for line in lines]
    assert verify(f, xs, _rows(only), ties).ok
    wrong = copy.deepcopy(only)
    wrong[0]["decision"] = next(c for c in f.classes if c != wrong[0]["decision"])
    report = verify(f, xs, _rows(wrong), ties)
    assert not report.ok and report.lines[0].fields[0].status == "wrong"


def test_contrastive_entry_for_a_class_of_the_instance_is_wrong(answered):
    name, f, xs, ties, lines = next(c for c in answered if c[0] == "susan")
    line = copy.deepcopy(lines[0])
    line["contrastive"]["yes"] = [[{"feature": "Age", "states": [">=55"]}]]  # x is a yes
    report = verify(f, xs[:1], [(1, line)], ties)
    bad = [r for r in report.lines[0].fields if r.status != "ok"]
    assert len(bad) == 1 and bad[0].target == 1 and "is in class yes" in bad[0].note


# --- literal forms ----------------------------------------------------------------------------


def _rewrite(f: Forest, lines: list[dict], form: str) -> list[dict]:
    """Every literal as state indices, or as an interval where it is a run of a numeric
    feature's states."""
    def literal(lit: dict) -> dict:
        feature = f.features[f.feature_index[lit["feature"]]]
        states = [feature.states.index(s) for s in lit["states"]]
        if form == "indices":
            return {"feature": lit["feature"], "states": states}
        ts = feature.thresholds
        if ts is None or states != list(range(states[0], states[-1] + 1)):
            return lit
        low = None if states[0] == 0 else ts[states[0] - 1]
        high = None if states[-1] == len(ts) else ts[states[-1]]
        return {"feature": lit["feature"], "interval": [low, high]}

    out = []
    for line in lines:
        line = copy.deepcopy(line)
        for name in SET_FIELDS:
            line[name] = [[literal(lit) for lit in item] for item in line[name]]
        line["contrastive"] = {t: [[literal(lit) for lit in c] for c in ces]
                               for t, ces in line["contrastive"].items()}
        out.append(line)
    return out


def test_literal_forms_are_all_accepted(answered):
    intervals = 0
    for name, f, xs, ties, lines in answered:
        for form in ("indices", "intervals"):
            rewritten = _rewrite(f, lines, form)
            assert verify(f, xs, _rows(rewritten), ties, name).ok, (name, form)
            intervals += json.dumps(rewritten).count('"interval"') if form == "intervals" else 0
    assert intervals > 20


def test_a_general_term_listed_as_a_sufficient_reason_points_to_its_field(answered):
    # graded as what it is listed as (not an SR: its literals hold more than x's states),
    # with a pointer when it is a GSR (the native engine's list says which) or a valid term
    hinted = {"gsr": 0, "valid": 0}
    for name, f, xs, ties, lines in answered:
        for x, line in zip(xs, lines):
            wide = [t for t in line["general_sufficient_reasons"]
                    if any(len(lit["states"]) > 1 for lit in t)]
            if not wide:
                continue
            longer = [lit for lit in wide[0]] + [
                {"feature": g.name, "states": [g.states[x[k]]]} for k, g in
                enumerate(f.features) if g.name not in {lit["feature"] for lit in wide[0]}][:1]
            for term, kind in ((wide[0], "gsr"), (longer, "valid")):
                if kind == "valid" and len(longer) == len(wide[0]):
                    continue
                claim = {"instance": line["instance"], "sufficient_reasons": [term]}
                report = verify(f, xs, _rows([claim]), ties, name)
                (item,) = [i for i in report.lines[0].fields[0].items if i.listed]
                assert item.status == "wrong" and item.verdict == {"sufficient": False,
                                                                   "minimal": False}
                hint = "list it under general_sufficient_reasons" if kind == "gsr" else \
                    "it implies the decision as a general term (not one of the instance's"
                assert hint in item.note, (name, kind, item.note)
                hinted[kind] += 1
                assert hint in report.text()
    assert hinted["gsr"] > 3 and hinted["valid"] > 3


def test_raw_numbers_match_instances(answered):
    name, f, xs, ties, lines = next(c for c in answered if c[0] == "numeric")
    raw = copy.deepcopy(lines)
    for line, x in zip(raw, xs):
        ts = f.features[0].thresholds
        line["instance"]["x1"] = ts[x[0]] if x[0] < len(ts) else ts[-1] + 1.0  # in the state
    report = verify(f, xs, _rows(raw), ties)
    assert report.ok and [r.positions for r in report.lines] == [[1], [2], [3]]


def test_interval_maps_to_exactly_the_covered_states():
    f = forest_from_json(NUMERIC_FOREST)
    x1 = f.features[0]
    assert verify_module.interval_mask(x1, 0.5, 4.0, "w") == 0b0110
    assert verify_module.interval_mask(x1, None, 0.5, "w") == 0b0001
    assert verify_module.interval_mask(x1, 2.5, None, "w") == 0b1100
    assert verify_module.interval_mask(x1, 0.5 * (1 + 1e-12), 4.0, "w") == 0b0110  # printing
    with pytest.raises(Exception, match="cuts one of its states"):
        verify_module.interval_mask(x1, 1.0, 4.0, "w")


def test_range_maps_to_the_states_some_value_in_it_falls_in():
    """Checked against the states of a dense grid of values: the states of the values v with
    low < v <= high, as the forest reads them."""
    for dtype in ("float64", "float32"):
        x1 = forest_from_json({**NUMERIC_FOREST, "input_dtype": dtype}).features[0]
        ts = x1.thresholds
        # bounds at and around the thresholds; values at the bounds and at the next double
        # above each (which float32 may read as the bound itself)
        coarse = sorted({*ts, *(t + d for t in ts for d in (-1e-7, 1e-7)), -9.0, 0.0, 1.0, 3.0,
                         9.0, *(float(v) for v in np.nextafter(np.float32(ts), np.float32(9)))})
        points = sorted({*coarse, *(math.nextafter(b, math.inf) for b in coarse)})
        bounds = [None, *coarse]
        for low in bounds:
            for high in bounds:
                values = [v for v in points if (low is None or v > low)
                          and (high is None or v <= high)]
                if not values or low is not None and high is not None and low >= high:
                    continue
                states = {x1.state_of_value(v, dtype) for v in values}
                mask = verify_module.range_mask(x1, low, high, "w", dtype)
                # every state a grid value reaches is in, and nothing outside [min, max] is
                assert all(mask >> s & 1 for s in states), (dtype, low, high)
                assert mask >> min(states) << min(states) == mask and mask < 2 << max(states), \
                    (dtype, low, high)
    with pytest.raises(Exception, match="holds no value"):
        verify_module.range_mask(x1, 2.0, 1.0, "w")


def test_range_literals_grade_like_the_states_they_meet():
    f = forest_from_json(NUMERIC_FOREST)
    x = (1, 0, 0)
    line = {"instance": instance_to_json(f, x), "decision": f.classes[f.decision(x)]}
    ex = Explainer(f, "first").explain_states(x, ("sr",))
    ts = f.features[0].thresholds
    for sr in ex.sufficient_reasons:
        ranged = []
        for g, m in sr:
            feature = f.features[g]
            if feature.thresholds is None:
                ranged.append({"feature": feature.name, "states": [x[g]]})
            else:  # a range strictly inside the instance's state, not at its thresholds
                low = feature.thresholds[x[g] - 1] if x[g] else -1e9
                high = feature.thresholds[x[g]] if x[g] < len(feature.thresholds) else 1e9
                ranged.append({"feature": feature.name,
                               "range": [low + (high - low) / 3, high - (high - low) / 3]})
        report = verify(f, [x], [(1, {**line, "sufficient_reasons": [ranged]})], "first",
                        oracle_only=["sr"])
        assert report.ok, report.text()
    assert ts  # the forest has a numeric feature to range over
    full = {"feature": f.features[0].name, "range": [None, 1e9]}
    report = verify(f, [x], [(1, {**line, "sufficient_reasons": [[full]]})], "first",
                    oracle_only=["sr"])
    item = report.lines[0].fields[-1].items[0]
    assert item.item == ()  # a range meeting every state constrains nothing


def test_float32_forests_accept_bounds_no_float32_separates_from_a_threshold():
    doc = {**NUMERIC_FOREST, "input_dtype": "float32"}
    x1 = forest_from_json(doc).features[0]
    merged = 2.5 + 2.0 ** -28  # no float32 in (2.5, merged]: a threshold the importer merges
    assert verify_module.interval_mask(x1, merged, None, "w", "float32") == 0b1100
    assert verify_module.interval_mask(x1, None, merged, "w", "float32") == 0b0011
    with pytest.raises(Exception, match="cuts one of its states"):
        verify_module.interval_mask(x1, merged, None, "w")  # beyond the printing tolerance
    with pytest.raises(Exception, match="cuts one of its states"):
        verify_module.interval_mask(x1, 2.5 + 2.0 ** -21, None, "w", "float32")  # a float32


# --- the SAT-check size limit and disputes ----------------------------------------------------


def test_gnr_checks_beyond_the_limit_are_unknown(answered, monkeypatch):
    name, f, xs, ties, lines = next(c for c in answered if c[0] == "susan")
    report = verify(f, xs, _rows(lines), ties, gnr_limit=0)
    assert report.ok and report.summary()["items"].get("unknown", 0) == 0  # tabled slices
    monkeypatch.setattr(sat_module, "MAX_CELLS", 0)  # no slice tabled: the search's limit
    report = verify(f, xs, _rows(lines), ties, gnr_limit=0)
    assert report.ok  # unknown verdicts on items the native engine lists are not failures
    items = [i for r in report.lines for fr in r.fields if fr.field == "general_necessary_reasons"
             for i in fr.items]
    assert items and all(i.verdict["valid"] is None and "limit 0" in i.note for i in items)
    line = copy.deepcopy(lines[0])
    line["general_necessary_reasons"][0].append({"feature": "BType", "states": ["A"]})
    report = verify(f, xs[:1], [(1, line)], ties, gnr_limit=0)
    assert not report.ok  # not among ours, and the oracle cannot vouch for it


def test_oracle_only_grades_listed_items_and_certifies_srs_with_nrs(answered):
    fields = list(verify_module.WHAT_OF)
    name, f, xs, ties, lines = next(c for c in answered if c[0] == "figure1")
    report = verify(f, xs, _rows(lines), ties, oracle_only=fields)
    assert report.ok
    assert report.completeness()["sufficient_reasons"] == "certified"
    assert report.completeness()["necessary_reasons"] == "certified"
    assert report.completeness()["general_sufficient_reasons"] == "not checked"
    assert report.completeness()["contrastive"] == "certified"
    assert report.result() == ("every item correct; completeness not checked for gsr, gnr, "
                               "flips (--oracle-only)")
    # A dropped CE: the certificate finds exactly that CE missing, a CE by brute force.
    fewer = [{**line, "contrastive": {t: ces[1:] for t, ces in line["contrastive"].items()}}
             for line in lines]
    report = verify(f, xs, _rows(fewer), ties, oracle_only=fields)
    assert not report.ok
    for x, line, r in zip(xs, lines, report.lines):
        brute = dict(BruteForce(f, ties).explain(x, ("ce",)).contrastive)
        for fr in r.fields:
            if fr.field == "contrastive":
                missing = [i.item for i in fr.items if i.status == "missing"]
                assert fr.certified and len(missing) == min(1, len(brute[fr.target]))
                assert set(missing) <= set(brute[fr.target])
    # A dropped SR, with the NRs listed too: the certificate finds exactly that SR missing,
    # an SR by brute force.
    dropped = [{**line, "sufficient_reasons": line["sufficient_reasons"][1:]} for line in lines]
    report = verify(f, xs, _rows(dropped), ties, oracle_only=fields)
    assert not report.ok
    for x, line, r in zip(xs, lines, report.lines):
        (sr,) = [fr for fr in r.fields if fr.field == "sufficient_reasons"]
        missing = [i.item for i in sr.items if i.status == "missing"]
        gone = verify_module.parse_items(f, line["sufficient_reasons"][:1], "test", "sr")
        assert missing == list(gone)
        assert set(gone) <= set(BruteForce(f, ties).explain(x, ("sr",)).sufficient_reasons)
        assert sr.certified and sr.equal is None and not any(i.ours for i in sr.items)
    # Only SRs listed: nothing to certify them with, so correct but never called complete.
    only = [{"instance": line["instance"], "sufficient_reasons": line["sufficient_reasons"][1:]}
            for line in lines]
    report = verify(f, xs, _rows(only), ties, oracle_only=["sr"])
    assert report.ok and report.completeness() == {"sufficient_reasons": "not checked"}
    assert "complete" not in report.result().replace("completeness not checked", "")
    assert "completeness not checked for sr (--oracle-only)" in report.text()
    assert report.to_json()["completeness"] == {"sufficient_reasons": "not checked"}
    assert all(fr.equal is None for r in report.lines for fr in r.fields if fr.items is not None)
    for kind, what, field, bad in _corruptions(f, xs[0], lines[0]):
        if kind != "drop":
            report = verify(f, xs[:1], [(1, bad)], ties, oracle_only=fields)
            assert not report.ok, what
            _check_evidence(f, xs[0], ties, report)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sat_module, "MAX_CELLS", 0)  # no slice tabled: the search's limit
        report = verify(f, xs, _rows(lines), ties, gnr_limit=0, oracle_only=fields)
    assert not report.ok and report.summary()["items"]["unknown"] > 0
    with pytest.raises(Exception, match="'votes' is not an explanation field"):
        verify(f, xs, _rows(lines), ties, oracle_only=["votes"])
    assert verify_module.parse_fields("sr, necessary_reasons,flips") == {
        "sufficient_reasons", "necessary_reasons", "shortest_flips"}


def test_native_and_oracle_disagreement_is_disputed(answered, monkeypatch):
    name, f, xs, ties, lines = next(c for c in answered if c[0] == "susan")

    class Forgetful(Explainer):
        """A native engine that loses one SR: the oracle must contradict it."""

        def explain_states(self, x, what=()):  # type: ignore[override]
            full = super().explain_states(x, what)
            return type(full)(**{**full.__dict__,
                                 "sufficient_reasons": full.sufficient_reasons[1:]})

    monkeypatch.setattr(verify_module, "Explainer", Forgetful)
    report = verify(f, xs[:1], [(1, lines[0])], ties)
    statuses = [i.status for fr in report.lines[0].fields if fr.field == "sufficient_reasons"
                for i in fr.items]
    assert "disputed" in statuses and not report.ok


# --- the command line -------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path, answered):
    name, f, xs, ties, lines = next(c for c in answered if c[0] == "numeric")
    paths = {k: tmp_path / k for k in ("forest.json", "i.jsonl", "e.jsonl")}
    paths["forest.json"].write_text(json.dumps(NUMERIC_FOREST))
    paths["i.jsonl"].write_text("".join(json.dumps(instance_to_json(f, x)) + "\n" for x in xs))
    paths["e.jsonl"].write_text("".join(json.dumps(line) + "\n" for line in lines))
    return paths, lines


def _run(paths, *extra: str) -> int:
    return main(["verify", "--forest", str(paths["forest.json"]), "--instances",
                 str(paths["i.jsonl"]), "--explanations", str(paths["e.jsonl"]), *extra])


def test_cli_exit_codes_and_json(files, capsys):
    paths, lines = files
    assert _run(paths) == 0
    out = capsys.readouterr().out
    assert "everything correct and complete" in out and "[sufficient ✓ minimal ✓]" in out
    bad = copy.deepcopy(lines)
    bad[1]["robustness"] += 1
    bad[2]["sufficient_reasons"] = bad[2]["sufficient_reasons"][1:]
    paths["e.jsonl"].write_text("".join(json.dumps(line) + "\n" for line in bad))
    assert _run(paths) == 1
    out = capsys.readouterr().out
    assert "too high" in out and "missing" in out
    assert _run(paths, "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["summary"]["items"]["missing"] == 1
    assert doc["summary"]["scalars"]["robustness"] == {"ok": 2, "wrong": 1}
    assert _run(paths, "--oracle-only", "sufficient_reasons") == 1  # robustness still wrong
    assert "completeness not checked" in capsys.readouterr().out
    # SRs and NRs both graded by the oracle alone: the dropped SR is certified missing.
    assert _run(paths, "--oracle-only", "sr,nr", "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["items"]["missing"] == 1
    assert doc["completeness"]["sufficient_reasons"] == "certified"
    assert doc["completeness"]["general_sufficient_reasons"] == "checked"
    assert _run(paths, "--oracle-only", "all", "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["items"]["missing"] == 1
    assert "completeness not checked for gsr, gnr, flips (--oracle-only)" in doc["result"]
    for bad_value in ("bogus", "sr,votes"):
        assert _run(paths, "--oracle-only", bad_value) == 2
        err = capsys.readouterr().err
        assert "--oracle-only" in err and repr(bad_value.split(",")[-1]) in err
        assert "Traceback" not in err


def test_cli_evidence_is_a_world_with_the_forests_votes(files, capsys):
    paths, lines = files
    f = forest_from_json(NUMERIC_FOREST)
    xs = read_instances(paths["i.jsonl"], f)
    bad = copy.deepcopy(lines)
    k = next(k for k, line in enumerate(bad) if line["sufficient_reasons"][0])
    bad[k]["sufficient_reasons"][0] = bad[k]["sufficient_reasons"][0][1:]  # no longer sufficient
    paths["e.jsonl"].write_text("".join(json.dumps(line) + "\n" for line in bad))
    assert _run(paths, "--json") == 1
    doc = json.loads(capsys.readouterr().out)
    (wrong,) = [i for r in doc["lines"] for fr in r["fields"] for i in fr.get("items", ())
                if i["status"] == "wrong"]
    world = parse_instance(f, wrong["evidence"]["world"], "evidence")
    assert wrong["evidence"]["votes"] == dict(zip(f.classes, f.votes(world)))
    assert wrong["evidence"]["refutes"] == "sufficient"
    x = xs[k]
    assert f.decision(world) != f.decision(x)  # ties first: the world leaves Δ
    term = verify_module.parse_items(f, [wrong["item"]], "test", "sr")[0]
    assert all(m >> world[g] & 1 for g, m in term)
    assert _run(paths) == 1
    assert "evidence against sufficient: {" in capsys.readouterr().out


MALFORMED = [
    # (what, edit of the first line or a whole-file text, expected fragments)
    ("interval cutting a state",
     lambda l: l.update(general_sufficient_reasons=[[{"feature": "x1", "interval": [1.0, 4.0]}]]),
     ["line 1", "'general_sufficient_reasons[0][0]'", "cuts one of its states"]),
    ("interval on a categorical feature",
     lambda l: l.update(sufficient_reasons=[[{"feature": "col", "interval": [0, 1]}]]),
     ["line 1", "'sufficient_reasons[0][0]'", "categorical"]),
    ("unknown feature",
     lambda l: l.update(necessary_reasons=[[{"feature": "zz", "states": [0]}]]),
     ["line 1", "'necessary_reasons[0][0]'", "unknown feature 'zz'"]),
    ("unknown state",
     lambda l: l.update(necessary_reasons=[[{"feature": "col", "states": ["pink"]}]]),
     ["line 1", "'necessary_reasons[0][0]'", "\"pink\""]),
    ("state index out of range",
     lambda l: l.update(necessary_reasons=[[{"feature": "col", "states": [7]}]]),
     ["line 1", "'necessary_reasons[0][0]'", "7"]),
    ("full literal",
     lambda l: l.update(shortest_flips=[[{"feature": "x2", "states": [0, 1]}]]),
     ["line 1", "'shortest_flips[0][0]'", "every state"]),
    ("two literals on one feature",
     lambda l: l.update(sufficient_reasons=[[{"feature": "col", "states": [0]},
                                             {"feature": "col", "states": [1]}]]),
     ["line 1", "'sufficient_reasons[0]'", "two literals on feature 'col'"]),
    ("robustness of the wrong type", lambda l: l.update(robustness="two"),
     ["line 1", "'robustness'"]),
    ("unknown contrastive target", lambda l: l.update(contrastive={"zzz": []}),
     ["line 1", "'contrastive.zzz'", "not a class"]),
    ("tie policy differs", lambda l: l.update(ties="all"), ["line 1", "'ties'", "--ties"]),
    ("instance on some lines only", lambda l: l.pop("instance"), ["line 1", "'instance'"]),
    ("bad instance", lambda l: l["instance"].update(col="pink"), ["line 1", "'instance'", "col"]),
]


@pytest.mark.parametrize("what,edit,fragments", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_input_exits_2_naming_line_and_field(files, capsys, what, edit, fragments):
    paths, lines = files
    bad = copy.deepcopy(lines)
    edit(bad[0])
    paths["e.jsonl"].write_text("".join(json.dumps(line) + "\n" for line in bad))
    assert _run(paths) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, (what, err)


def test_malformed_files_exit_2(files, capsys):
    paths, lines = files
    paths["e.jsonl"].write_text(json.dumps(lines[0]) + "\n{not json\n")
    assert _run(paths) == 2
    assert "line 2: invalid JSON" in capsys.readouterr().err
    bare = [{k: v for k, v in line.items() if k != "instance"} for line in lines]
    paths["e.jsonl"].write_text("".join(json.dumps(line) + "\n" for line in bare + bare[:1]))
    assert _run(paths) == 2
    assert "line 4" in capsys.readouterr().err
    paths["e.jsonl"].write_text("[1, 2]\n")
    assert _run(paths) == 2
    assert "line 1: expected a JSON object" in capsys.readouterr().err
