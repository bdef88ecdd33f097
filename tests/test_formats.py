"""The interchange formats' JSON Schemas (docs/formats.md, core/schemas/): every file of the
golden corpus and the output of every command validate, the schemas name the constants the
code uses, and they reject real mistakes."""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import random
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from rfcircuits.circuits import CIRCUITS_FORMAT, FORMS
from rfcircuits.cli.main import build_parser, main
from rfcircuits.crosscheck.differential.spec_examples import SUSAN, SUSAN_FOREST
from rfcircuits.explain import Explainer
from rfcircuits.explanation import WHAT_FIELDS
from rfcircuits.forest import FOREST_FORMAT, TIES, Branching, Feature, Forest, Leaf, Tree
from rfcircuits.formats import SCHEMAS, schema, validator

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ORIGINAL_EXPLAIN = Explainer.explain_states


@functools.cache
def checker(name: str) -> Any:
    return validator(name)


def problems(name: str, doc: Any) -> list[str]:
    """Why ``doc`` is not a valid ``name`` document (the first few reasons)."""
    v = checker(name)
    if v.is_valid(doc):
        return []
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}"
            for e in list(v.iter_errors(doc))[:3]]


def assert_valid(name: str, doc: Any, where: str = "") -> None:
    found = problems(name, doc)
    assert not found, f"{where} is not a valid {name} document: {found}"


def jsonl(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# ---------------------------------------------------------------------------------------------
# The schemas themselves


def test_every_schema_is_packaged_valid_and_named():
    folder = resources.files("rfcircuits") / "schemas"
    files = sorted(p.name for p in folder.iterdir() if p.name.endswith(".schema.json"))
    assert files == sorted(f"{n}.schema.json" for n in SCHEMAS)
    for name in SCHEMAS:
        doc = schema(name)
        Draft202012Validator.check_schema(doc)
        Draft202012Validator.check_schema(checker(name).schema)  # with references resolved
        assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert doc["$id"] == f"https://rfcircuits.invalid/schemas/{name}.schema.json"
        assert doc["title"] and doc["description"]
        assert "$ref" not in json.dumps(checker(name).schema)
    with pytest.raises(ValueError, match="unknown schema 'nope'"):
        schema("nope")


def test_validator_without_jsonschema_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # import jsonschema → ImportError
    with pytest.raises(ImportError, match=r"jsonschema package \(4\.18 or later\).*\[test\]"):
        validator("forest")


def test_schemas_name_the_constants_the_code_uses():
    from rfcircuits.crosscheck import verify
    from rfcircuits.crosscheck.differential import mutate
    from rfcircuits.crosscheck.oracles.bdd import DG_FORMAT, NNF_FORMAT
    from rfcircuits.crosscheck.corpus import CORPUS_FORMAT
    from rfcircuits.crosscheck.differential.fuzz import REPRO_FORMAT

    formats = {"forest": FOREST_FORMAT, "nnf": NNF_FORMAT, "dg": DG_FORMAT,
               "repro": REPRO_FORMAT, "corpus-manifest": CORPUS_FORMAT,
               "circuits": CIRCUITS_FORMAT}
    for name, constant in formats.items():
        assert schema(name)["properties"]["format"] == {"const": constant}
    assert tuple(schema("common")["$defs"]["ties"]["enum"]) == TIES
    saved = schema("circuits")["properties"]
    assert saved["engine"]["enum"] == list(FORMS) and set(saved["form"]["enum"]) == \
        set(FORMS.values())
    compile_parser = build_parser()._subparsers._group_actions[0].choices["compile"]
    form = next(a for a in compile_parser._actions if a.dest == "form")
    assert set(schema("compile-summary")["properties"]["form"]["enum"]) == set(form.choices)
    explanation = schema("explanation")["properties"]
    assert list(explanation) == ["instance", "ties", "votes", "decision", "classes", "near_tie",
                                 "engine", *WHAT_FIELDS.values(), "incomplete", "not_computed"]
    report = schema("verify-report")["$defs"]
    assert tuple(report["status"]["enum"]) == verify.STATUSES
    assert set(report["verdictName"]["enum"]) == {v for vs in verify.VERDICTS.values() for v in vs}
    assert set(report["setField"]["enum"]) == set(verify.VERDICTS)
    operators = {m.operator for module in mutate.DEFAULT_MODULES for m in mutate.mutants(module)}
    assert operators <= set(schema("mutate-summary")["$defs"]["operator"]["enum"])


# ---------------------------------------------------------------------------------------------
# The golden corpus


def canonical_order_problems(forest: dict[str, Any], line: dict[str, Any]) -> list[str]:
    """Where an explanation line's sets break the documented order: literals by feature index
    (one per feature), states in state order, sets sorted by [[feature index, [state
    indices]], ...] without repeats. Derived from the forest file alone."""
    index = {f["name"]: i for i, f in enumerate(forest["features"])}
    states = []
    for f in forest["features"]:
        if "states" in f:
            states.append(f["states"])
        else:
            bounds = ["-inf", *map(repr, map(float, f["thresholds"])), "+inf"]
            states.append([f"({a},{b}]" for a, b in zip(bounds, bounds[1:-1])]
                          + [f"({bounds[-2]},+inf)"])
    found = []
    sets = {k: line[k] for k in WHAT_FIELDS.values() if k in line and k not in
            ("contrastive", "robustness")}
    sets.update({f"contrastive.{t}": v for t, v in line.get("contrastive", {}).items()})
    for key, items in sets.items():
        keys = []
        for item in items:
            term = [(index[lit["feature"]],
                     [states[index[lit["feature"]]].index(s) for s in lit["states"]])
                    for lit in item]
            if any(a[0] >= b[0] for a, b in zip(term, term[1:])):
                found.append(f"{key}: literals not in feature order: {item}")
            if any(s != sorted(set(s)) for _, s in term):
                found.append(f"{key}: states not in state order: {item}")
            keys.append(term)
        if any(a >= b for a, b in zip(keys, keys[1:])):
            found.append(f"{key}: not sorted by the canonical key, or repeated")
    return found


def test_the_golden_corpus_validates():
    manifest = json.loads((FIXTURES / "MANIFEST.json").read_text(encoding="utf-8"))
    failures = [f"MANIFEST.json: {p}" for p in problems("corpus-manifest", manifest)]
    checked = {"forest": 0, "instance": 0, "explanation": 0, "nnf": 0, "dg": 0}
    for entry in manifest["cases"]:
        case = FIXTURES / "cases" / entry["id"]
        forest = json.loads((case / "forest.json").read_text(encoding="utf-8"))
        docs = [("forest", "forest.json", forest)]
        docs += [("instance", f"instances.jsonl:{n}", x) for n, x in
                 enumerate(jsonl((case / "instances.jsonl").read_text(encoding="utf-8")), 1)]
        for ties in TIES:
            name = f"expected-{ties}.jsonl"
            for n, line in enumerate(jsonl((case / name).read_text(encoding="utf-8")), 1):
                docs.append(("explanation", f"{name}:{n}", line))
                failures += [f"{case.name}/{name}:{n}: {p}"
                             for p in canonical_order_problems(forest, line)]
        for rel in entry["circuits"].get("files", []):
            kind = "nnf" if rel.endswith(".nnf.json") else "dg"
            docs.append((kind, rel, json.loads((case / rel).read_text(encoding="utf-8"))))
        for kind, where, doc in docs:
            checked[kind] += 1
            failures += [f"{case.name}/{where}: {p}" for p in problems(kind, doc)]
    assert not failures, failures[:10]
    # the corpus really has every kind of document (and its README's numbers of them)
    assert checked["forest"] == manifest["summary"]["cases"]
    assert checked["instance"] == manifest["summary"]["instances"]
    assert checked["explanation"] == 2 * manifest["summary"]["instances"]
    assert checked["nnf"] > 0 and checked["dg"] > 0


def test_the_complete_examples_of_the_format_guide_validate():
    # Examples abridged with "..." are left out; the others are documents of their section's
    # format (JSON Lines for instances; circuits by their "format"; the literal is checked as
    # a one-literal term set).
    schema_of = {"Forest files": "forest", "Instances": "instance",
                 "Literals, terms and clauses": "terms", "Circuit files": "circuit",
                 "Explanations": "explanation", "Compile summary": "compile-summary",
                 "Fuzz summary": "fuzz-summary", "Crosscheck units": "crosscheck-units",
                 "Saved circuits": "circuits", "Peer reports": "peer-report"}
    text = (FIXTURES.parent / "docs" / "formats.md").read_text(encoding="utf-8")
    section, checked = "", set()
    for k, part in enumerate(text.split("```")):
        if k % 2 == 0:
            headings = [line[3:] for line in part.splitlines() if line.startswith("## ")]
            section = headings[-1] if headings else section
            continue
        kind, _, body = part.partition("\n")
        if kind != "json" or "..." in body:
            continue
        try:
            docs = [json.loads(body)]
        except json.JSONDecodeError:
            docs = jsonl(body)
        for doc in docs:
            name = schema_of[section]
            if name == "circuit":
                name = {"rfcircuits.nnf/1": "nnf", "rfcircuits.dg/1": "dg"}[doc["format"]]
            assert_valid(name, [[doc]] if name == "terms" else doc, f"formats.md, {section}")
            checked.add(name)
    assert checked == {*schema_of.values(), "nnf", "dg"} - {"circuit"}


# ---------------------------------------------------------------------------------------------
# The commands' outputs, on inputs made here


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """``rfcircuits train`` on a small CSV: (directory, forest path, test instances path)."""
    tmp = tmp_path_factory.mktemp("formats")
    rng = random.Random(0)
    rows = ["width,height,weight,kind"]
    for _ in range(90):
        w, h, g = rng.uniform(0, 10), rng.uniform(0, 5), rng.choice([1, 2, 3, 4])
        kind = "big" if w + h > 9 else "odd" if g == 3 else "small"
        rows.append(f"{w:.3f},{h:.3f},{g},{kind}")
    (tmp / "shapes.csv").write_text("\n".join(rows) + "\n")
    forest, tests = tmp / "shapes.forest.json", tmp / "test.jsonl"
    assert main(["train", "--data", str(tmp / "shapes.csv"), "--trees", "4", "--depth", "3",
                 "--seed", "1", "--out", str(forest), "--test-out", str(tests)]) == 0
    return tmp, forest, tests


def test_train_writes_a_forest_and_instances(trained, capsys):
    _, forest, tests = trained
    doc = json.loads(forest.read_text())
    assert_valid("forest", doc, "train --out")
    assert (doc["classes"], doc["input_dtype"]) == (["big", "odd", "small"], "float32")
    lines = jsonl(tests.read_text())
    assert len(lines) == 14  # 15 % of 90 rows
    for n, x in enumerate(lines, 1):
        assert_valid("instance", x, f"train --test-out, line {n}")


def test_import_writes_a_forest(tmp_path, capsys):
    import joblib
    import numpy as np
    from sklearn.ensemble import ExtraTreesClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    model = ExtraTreesClassifier(n_estimators=3, max_depth=3, random_state=0)
    joblib.dump(model.fit(X, (X[:, 0] > 0).astype(int)), tmp_path / "m.joblib")
    assert main(["import", "--model", str(tmp_path / "m.joblib"),
                 "--out", str(tmp_path / "m.forest.json")]) == 0
    capsys.readouterr()
    doc = json.loads((tmp_path / "m.forest.json").read_text())
    assert_valid("forest", doc, "import --out")
    assert (doc["classes"], doc["input_dtype"], len(doc["trees"])) == (["0", "1"], "float32", 3)


def test_a_forest_with_runs_of_states_validates():
    # a branch on 40 states of a 50-state feature is written as the run [first, last]
    forest = Forest((Feature.numeric("x", [k + 0.5 for k in range(49)]),), ("a", "b"),
                    (Tree((Branching(0, ((2 ** 40 - 1, 1), (2 ** 50 - 2 ** 40, 2))),
                           Leaf(0), Leaf(1))),))
    doc = forest.to_json()
    assert doc["trees"][0]["nodes"][0]["branches"][0][0] == [[0, 39]]
    assert_valid("forest", doc, "a forest with runs")
    assert problems("forest", {**doc, "trees": [{"nodes": [  # a run is two indices
        {"feature": "x", "branches": [[[[0]], 1], [[1], 2]]}, {"class": "a"}, {"class": "b"}]}]})


@pytest.mark.parametrize("form", ["nnf", "dg-conj", "dg"])
@pytest.mark.parametrize("ties", TIES)
def test_compile_summary_and_circuit_files(trained, form, ties, capsys):
    tmp, forest, _ = trained
    out = tmp / f"circuits-{form}-{ties}"
    assert main(["compile", "--forest", str(forest), "--form", form, "--ties", ties,
                 "--out", str(out), "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert_valid("compile-summary", summary, f"compile --form {form}")
    assert (summary["form"], summary["ties"], list(summary["classes"])) == \
        (form, ties, ["big", "odd", "small"])
    kind = "nnf" if form == "nnf" else "dg"
    files = sorted(out.iterdir())
    assert [p.name for p in files] == [f"R{c}-{name}.{kind}.json" for c, name in
                                       enumerate(summary["classes"])] + ["circuits.json"]
    for path in files[:-1]:
        doc = json.loads(path.read_text())
        assert_valid(kind, doc, path.name)
        assert doc["features"] == json.loads(forest.read_text())["features"]
    saved = json.loads(files[-1].read_text())
    assert_valid("circuits", saved, "compile --out DIR: circuits.json")
    assert (saved["engine"], saved["ties"]) == ("sat" if form == "nnf" else "graphs", ties)
    assert saved["forest"] == json.loads(forest.read_text())


@pytest.mark.parametrize("ties", TIES)
def test_explain_lines(trained, ties, capsys):
    _, forest, tests = trained
    forest_doc = json.loads(forest.read_text())
    for what in ("all", "nr,robust,ce"):
        assert main(["explain", "--forest", str(forest), "--instances", str(tests),
                     "--ties", ties, "--what", what, "--no-progress"]) == 0
        lines = jsonl(capsys.readouterr().out)
        assert len(lines) == 14
        for n, line in enumerate(lines, 1):
            assert_valid("explanation", line, f"explain --ties {ties} --what {what}, line {n}")
            assert not canonical_order_problems(forest_doc, line)
            assert line["ties"] == ties and line["decision"] in line["classes"]
        if what != "all":
            assert set(lines[0]) == {"instance", "ties", "votes", "decision", "classes",
                                     "engine", "necessary_reasons", "contrastive", "robustness"}


def test_explain_raw_numbers_and_a_valid_class_formula(tmp_path, capsys):
    # Every leaf says "yes": no change of the instance can leave the decision's class formula.
    doc = {"format": FOREST_FORMAT, "classes": ["no", "yes"],
           "features": [{"name": "x", "thresholds": [0.5]}, {"name": "c", "states": ["a", "b"]}],
           "trees": [{"nodes": [{"feature": "x", "branches": [[[0], 1], [[1], 1]]},
                                {"class": "yes"}]}]}
    assert_valid("forest", {**doc, "input_dtype": "float32"})
    (tmp_path / "f.json").write_text(json.dumps(doc))
    (tmp_path / "i.jsonl").write_text('{"x": 0.25, "c": "b"}\n{"x": "(0.5,+inf)", "c": "a"}\n')
    for x in jsonl((tmp_path / "i.jsonl").read_text()):
        assert_valid("instance", x)
    assert main(["explain", "--forest", str(tmp_path / "f.json"), "--instances",
                 str(tmp_path / "i.jsonl"), "--no-progress"]) == 0
    lines = jsonl(capsys.readouterr().out)
    assert lines[0]["instance"] == {"x": "(-inf,0.5]", "c": "b"}
    for line in lines:
        assert_valid("explanation", line)
        assert (line["sufficient_reasons"], line["necessary_reasons"],
                line["general_sufficient_reasons"], line["general_necessary_reasons"],
                line["robustness"], line["shortest_flips"], line["contrastive"]) == \
            ([[]], [], [[]], [], None, [], {"no": []})


def planted_nr_drop(self, x, what=None, *args, **kwargs):  # type: ignore[no-untyped-def]
    """Explainer.explain_states with every necessary reason but the first dropped."""
    e = ORIGINAL_EXPLAIN(self, x) if what is None else ORIGINAL_EXPLAIN(self, x, what)
    return dataclasses.replace(e, necessary_reasons=e.necessary_reasons[:1])


def susan_files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "susan.json").write_text(json.dumps(SUSAN_FOREST))
    (tmp_path / "susan.jsonl").write_text(json.dumps(SUSAN) + "\n")
    return tmp_path / "susan.json", tmp_path / "susan.jsonl"


def test_crosscheck_repro_file(tmp_path, monkeypatch, capsys):
    forest, instances = susan_files(tmp_path)
    monkeypatch.setattr(Explainer, "explain_states", planted_nr_drop)
    assert main(["crosscheck", "--forest", str(forest), "--instances", str(instances),
                 "--repro", str(tmp_path / "r.json"), "--no-progress", "--ties", "both",
                 "--out", str(tmp_path / "units.jsonl")]) == 1
    capsys.readouterr()
    doc = json.loads((tmp_path / "r.json").read_text())
    assert_valid("repro", doc, "crosscheck --repro")
    units = jsonl((tmp_path / "units.jsonl").read_text())
    assert [(u["ties"], u["unit"]) for u in units] == [
        ("first", "formulas"), ("first", 0), ("all", "formulas"), ("all", 0)]
    for unit in units:
        assert_valid("crosscheck-units", unit, "crosscheck --out")
    assert any(d["check"] == "necessary_reasons" for d in units[1]["disagreements"])
    assert problems("crosscheck-units", dict(units[0], instance=units[1]["instance"]))
    assert problems("crosscheck-units", {k: v for k, v in units[1].items() if k != "instance"})
    assert {d["check"] for d in doc["disagreements"]} >= {"necessary_reasons"}
    for path, value in ((("disagreements",), KeyError), (("ties",), "both"),
                        (("disagreements", 0, "engines"), ["native"]),
                        (("seed",), 3), (("forest", "trees"), [])):
        assert problems("repro", set_path(doc, path, value)), path


def test_fuzz_summary_and_failure_files(tmp_path, monkeypatch, capsys):
    # the workers are forked: they inherit the planted fault
    monkeypatch.setattr(Explainer, "explain_states", planted_nr_drop)
    assert main(["fuzz", "--seconds", "0.5", "--seed", "3", "--oracles", "brute",
                 "--out", str(tmp_path / "out"), "--json", "--no-progress"]) == 1
    summary = json.loads(capsys.readouterr().out)
    assert_valid("fuzz-summary", summary, "fuzz --json")
    assert summary["failures"]
    for path in summary["failures"]:
        doc = json.loads(Path(path).read_text())
        assert_valid("repro", doc, path)
        assert {"seed", "case", "shrunk_from"} <= set(doc)
    monkeypatch.setattr(Explainer, "explain_states", ORIGINAL_EXPLAIN)
    assert main(["fuzz", "--seconds", "0.5", "--seed", "3", "--out", str(tmp_path / "ok"),
                 "--json", "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert_valid("fuzz-summary", summary, "fuzz --json")
    assert summary["failures"] == [] and summary["cases"] >= 1


def test_verify_report(trained, capsys):
    tmp, forest, tests = trained
    assert main(["explain", "--forest", str(forest), "--instances", str(tests),
                 "--no-progress"]) == 0
    lines = jsonl(capsys.readouterr().out)
    graded = tmp / "graded.jsonl"
    graded.write_text("".join(json.dumps(line) + "\n" for line in lines))
    args = ["verify", "--forest", str(forest), "--instances", str(tests), "--explanations",
            str(graded), "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert_valid("verify-report", report, "verify --json (a correct file)")
    assert report["ok"] and report["matched_by"] == "instance"
    assert report["lines"][0]["fields"][3]["field"] == "sufficient_reasons"
    for path, value in ((("lines", 0, "fields", 0, "status"), "fine"),
                        (("matched_by",), "luck"),
                        (("summary", "items", "ok"), KeyError),
                        (("lines", 0, "fields", 3, "items", 0, "verdict", "sufficient"), "yes"),
                        (("lines", 0, "fields", 3, "target"), "big")):
        assert problems("verify-report", set_path(report, path, value)), path

    # Another tool's file, with mistakes of every kind and the other literal forms.
    first, second = copy.deepcopy(lines[0]), copy.deepcopy(lines[1])
    first["robustness"] = (first["robustness"] or 0) + 1
    first["sufficient_reasons"] = first["sufficient_reasons"][1:]  # one missing
    first["contrastive"][first["decision"]] = []  # for the instance's own class
    first["tool"] = "elsewhere"  # ignored
    first["votes"] = {c: v + 1 for c, v in first["votes"].items()}
    feature = json.loads(forest.read_text())["features"][0]
    state = first["instance"][feature["name"]]
    first["necessary_reasons"].append([{"feature": feature["name"], "states": [state]}])
    second["general_necessary_reasons"] = [
        [{"feature": feature["name"], "interval": [None, feature["thresholds"][-1]]}]]
    second["sufficient_reasons"] = [[{"feature": feature["name"], "states": [0]}]]
    for n, line in enumerate((first, second), 1):
        assert_valid("verify-input", line, f"graded line {n}")
    graded.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    assert main(args) == 1
    report = json.loads(capsys.readouterr().out)
    assert_valid("verify-report", report, "verify --json (a file with mistakes)")
    assert report["ignored_fields"] == ["tool"] and report["instances_without_line"]
    statuses = report["summary"]["items"]
    assert statuses["missing"] and statuses["wrong"]
    assert report["summary"]["scalars"]["contrastive targets"] == {"wrong": 1}
    assert any("evidence" in i for r in report["lines"] for f in r["fields"]
               for i in f.get("items", ()))  # validated above with the rest


def test_mutate_summary(monkeypatch, capsys):
    from rfcircuits.crosscheck.differential import mutate

    statuses = iter(["killed", "survived", "equivalent"])

    def judge(m, budget, snapshot):  # type: ignore[no-untyped-def]
        status = next(statuses)
        shrunk = [{"trees": 2, "features": 3}] if status == "survived" else []
        # a planted id: never one of the equivalent mutants' listed ids
        return mutate.Verdict(f"{m.ident} (planted)", m.module, m.operator, status, "", 0.5,
                              "--- a\n+++ b\n", shrunk)

    monkeypatch.setattr(mutate, "judge", judge)
    assert main(["mutate", "--modules", "rfcircuits/robustness.py", "--sample", "3",
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert_valid("mutate-summary", summary, "mutate --json")
    assert (summary["total"], len(summary["survivors"])) == (3, 1)
    assert summary["shrunk"]["repros"] == 1


def test_bench_rows(tmp_path, capsys):
    # Rows of every table from scikit-learn's bundled iris and wine, written as the tables'
    # datasets (wine-recog is also a Table 4 dataset: its explain rows have the CE columns).
    from sklearn.datasets import load_iris, load_wine

    for name, data in (("iris", load_iris()), ("wine-recog", load_wine())):
        header = ",".join([f"f{i}" for i in range(data.data.shape[1])] + ["target"])
        body = [",".join(map(str, [*r, t])) for r, t in zip(data.data, data.target)]
        (tmp_path / f"{name}.csv").write_text("\n".join([header, *body]) + "\n")
    common = ["--data-dir", str(tmp_path), "--trees", "2", "--json"]
    runs = [(["compile", "--form", "nnf", "--datasets", "iris"], "table1"),
            (["compile", "--form", "dg-conj", "--datasets", "iris"], "table2"),
            (["compile", "--form", "dg", "--datasets", "wine-recog"], "table4"),
            (["explain", "--datasets", "iris,wine-recog", "--expand", "1"], "explain"),
            (["oracles", "--datasets", "iris"], "oracles"),
            (["engines", "--datasets", "iris", "--rows", "3"], "engines"),
            (["explain", "--datasets", "iris", "--max-nodes", "3"], "stopped"),
            (["campaigns", "--cases", "3", "--mutants", "0"], "campaigns")]
    tables = [ref["$ref"].rsplit("/", 1)[1] for ref in schema("bench")["oneOf"]]
    for argv, table in runs:
        assert main(["bench", *argv, *common]) == 0
        rows = jsonl(capsys.readouterr().out)
        assert rows
        for row in rows:
            assert_valid("bench", row, f"bench {' '.join(argv)}")
            # the row is of the table it should be (the inlined schema keeps the order)
            shape = checker("bench").schema["oneOf"][tables.index(
                "campaignsStopped" if table == "campaigns" and "stopped" in row else table)]
            assert Draft202012Validator(shape).is_valid(row), (table, row)
        if table == "explain":
            assert ["c_ce" in row for row in rows] == [False, True]
            assert all(row["sat_differ"] == 0 for row in rows)
        if table == "engines":  # both tie policies; the graphs fit, so auto takes them
            assert [(r["ties"], r["auto"], r["differ"]) for r in rows] == \
                [("first", "graphs", 0), ("all", "graphs", 0)]
        if table == "campaigns":  # the same cases on every backend that could run
            assert [(r["backend"], r["workers"]) for r in rows] == \
                [("local", 1), ("local", 2), ("dask", 1), ("dask", 2)]
            assert all(r.get("same", "yes") == "yes" for r in rows)


# ---------------------------------------------------------------------------------------------
# The schemas reject real mistakes


@functools.cache
def susan_text() -> str:
    from rfcircuits.crosscheck.differential.spec_examples import forest, instance

    f = forest(SUSAN_FOREST)
    return Explainer(f).explain_states(instance(f, SUSAN)).to_line()


def susan_line() -> dict[str, Any]:
    """The explanation of the Susan example (a new copy)."""
    return json.loads(susan_text())


def set_path(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    doc = copy.deepcopy(doc)
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


NNF = {"format": "rfcircuits.nnf/1", "class": "yes", "ties": "first",
       "features": SUSAN_FOREST["features"],
       "nodes": [{"lit": [0, [1]]}, {"lit": [1, [0]]}, {"or": [0, 1]}]}
DG = {"format": "rfcircuits.dg/1", "class": "yes", "ties": "all",
      "features": SUSAN_FOREST["features"],
      "nodes": [{"leaf": False}, {"leaf": True}, {"feature": 0, "branches": [[[0], 0], [[1], 1]]}],
      "roots": [2]}
SUMMARY = {"form": "nnf", "ties": "first", "classes": {"no": {"nodes": 3, "seconds": 0.1}},
           "total_nodes": 3, "total_seconds": 0.1}
EXAMPLES = {"forest": lambda: SUSAN_FOREST, "instance": lambda: SUSAN, "explanation": susan_line,
            "nnf": lambda: NNF, "dg": lambda: DG, "compile-summary": lambda: SUMMARY,
            "circuits": lambda: susan_circuits()}


def susan_circuits() -> dict[str, Any]:
    """The saved circuits of the Susan example's forest (a new copy)."""
    from rfcircuits.crosscheck.differential.spec_examples import forest

    return json.loads(Explainer(forest(SUSAN_FOREST), engine="graphs").dumps())


@pytest.mark.parametrize("name, path, value", [
    ("forest", ("format",), "rfcircuits.forest/2"),
    ("forest", ("trees",), KeyError),
    ("forest", ("trees", 0, "nodes", 0, "branches", 0, 1), "1"),
    ("forest", ("trees", 0, "nodes", 0, "branches", 0, 1), 1.5),
    ("forest", ("trees", 0, "nodes", 0, "branches", 0, 0), []),
    ("forest", ("trees", 0, "nodes", 0, "branches", 0), [[0], 1, 2]),
    ("forest", ("trees", 0, "nodes", 1, "feature"), "Age"),
    ("forest", ("trees", 0, "nodes", 0, "class"), "no"),
    ("forest", ("features", 0, "thresholds"), [1.0]),
    ("forest", ("features", 1, "states"), ["over", "over"]),
    ("forest", ("classes",), []),
    ("forest", ("input_dtype",), "float16"),
    ("forest", ("maximum_depth",), 4),
    ("instance", ("Age",), True),
    ("instance", ("Age",), [">=55"]),
    ("explanation", ("reasons",), []),
    ("explanation", ("decision",), KeyError),
    ("explanation", ("ties",), "some"),
    ("explanation", ("robustness",), 0),
    ("explanation", ("robustness",), None),  # null only for a valid formula
    ("explanation", ("sufficient_reasons",), [[]]),
    ("explanation", ("sufficient_reasons", 0, 0, "states"), [">=55", "<55"]),
    ("explanation", ("necessary_reasons", 0, 0, "state"), "x"),
    ("explanation", ("votes", "yes"), "many"),  # counts, or soft votes' sums (maybe < 0)
    ("explanation", ("near_tie",), False),  # present only when true
    ("nnf", ("nodes", 2, "and"), [0, 1]),
    ("nnf", ("nodes", 0, "lit"), [0, [1], 2]),
    ("nnf", ("nodes",), []),
    ("nnf", ("roots",), [2]),
    ("dg", ("roots",), KeyError),
    ("dg", ("nodes", 2, "branches", 1, 1), "1"),
    ("dg", ("nodes", 2, "leaf"), True),
    ("dg", ("nodes", 0), {"feature": 0}),
    ("circuits", ("format",), "rfcircuits.circuits/2"),
    ("circuits", ("engine",), "bdd"),
    ("circuits", ("form",), "nnf"),  # not the decision graphs' form
    ("circuits", ("forest_digest",), "md5:0f"),
    ("circuits", ("code",), KeyError),  # the decision graphs' nodes are missing
    ("circuits", ("negated", 0), "8"),
    ("circuits", ("projections", 0, "rows"), [8]),
    ("circuits", ("forest", "trees"), KeyError),
    ("compile-summary", ("form",), "sdd"),
    ("compile-summary", ("classes", "no", "size"), 3),
    ("compile-summary", ("total_nodes",), KeyError),
])
def test_schemas_reject_mistakes(name, path, value):
    doc = EXAMPLES[name]()
    assert problems(name, doc) == []
    assert problems(name, set_path(doc, path, value)), (name, path, value)


def test_the_valid_formula_values_go_together():
    line = susan_line()
    valid = {**line, "sufficient_reasons": [[]], "necessary_reasons": [],
             "general_sufficient_reasons": [[]], "general_necessary_reasons": [],
             "robustness": None, "shortest_flips": []}
    assert problems("explanation", valid) == []
    for key in ("necessary_reasons", "robustness", "shortest_flips"):
        assert problems("explanation", {**valid, key: line[key]}), key
    assert problems("explanation", {k: v for k, v in valid.items() if k != "robustness"}) == []


def test_the_corpus_manifest_rejects_mistakes():
    manifest = json.loads((FIXTURES / "MANIFEST.json").read_text(encoding="utf-8"))
    manifest["cases"] = manifest["cases"][:2]
    assert problems("corpus-manifest", manifest) == []
    for path, value in ((("cases", 0, "circuits", "files", 0), "../../etc/passwd.nnf.json"),
                        (("cases", 0, "oracles", "first", "sat", "status"), "maybe"),
                        (("format",), "rfcircuits.corpus/2"),
                        (("cases", 0, "categories", 0), "several-classes"),
                        (("cases", 0, "forest", "trees"), KeyError)):
        assert problems("corpus-manifest", set_path(manifest, path, value)), path
