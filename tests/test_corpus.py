"""The golden corpus in ``fixtures/``.

The native engine must reproduce every committed answer byte for byte, and the SAT oracle (the one
oracle that fits every case) must agree with it on every field of every case, both tie policies, so
that each committed answer is confirmed by an oracle on every run, not only compared with the
engine's own earlier output (docs/decisions.md, "Every corpus case is confirmed by an oracle on
every test run"); every committed circuit file must still be equivalent to the BDD oracle's class
formula; ``corpus check`` must catch a corrupted answer (exit 1) and a malformed file (exit 2);
``corpus build`` must be deterministic, refuse to write a case an oracle disagrees with, and with
``--keep`` leave the cases it keeps byte for byte. The soft-vote cases must hit the edge cases of
exact weighted sums, and the edge-case categories must mean what they say.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from rfcircuits.explain import Explainer
from rfcircuits.forest import forest_from_json
from rfcircuits.crosscheck import corpus
from rfcircuits.cli.main import main
from rfcircuits.crosscheck.differential.strategies import Limits

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MANIFEST = corpus.load_manifest(str(FIXTURES))
CASES = MANIFEST["cases"]


@pytest.mark.parametrize("entry", CASES, ids=[e["id"] for e in CASES])
def test_native_engine_reproduces_the_corpus_and_the_sat_oracle_confirms_it(entry):
    result = corpus.check_case(str(FIXTURES), entry, oracles=("sat",))
    assert not result.mismatches, "\n".join(result.mismatches)
    assert result.lines == 2 * entry["instances"]
    assert result.circuits == len(entry["circuits"].get("files", []))
    assert result.oracle_checks >= sum(o["sat"]["checks"] for o in entry["oracles"].values())


def test_manifest_covers_every_kind_of_case():
    assert len(CASES) >= 300
    assert MANIFEST["format"] == corpus.CORPUS_FORMAT
    assert {"python", "numpy", "scikit-learn", "dd", "python-sat"} <= set(MANIFEST["versions"])
    hit = MANIFEST["summary"]["categories"]
    for category in ("tie", "valid-class", "unsat-class", "single-state-retest",
                     "mixed-features", "one-tree", "classes-2", "classes-3", "classes-4",
                     "classes-5"):
        assert hit.get(category, 0) >= 10, category
    kinds = {e["origin"]["kind"] for e in CASES}
    assert kinds == {"spec", "random", "trained"}
    trained = [e["origin"] for e in CASES if e["origin"]["kind"] == "trained"]
    datasets = {o["dataset"] for o in trained}
    assert datasets == {"iris", "wine", "breast_cancer", "digits"}
    trees = [o["n_estimators"] for o in trained if "votes" not in o]
    assert min(trees) == 5 and max(trees) == 50
    for category in ("soft-tie", "near-tie", "negative-sum", "init-decides", "soft-not-hard"):
        assert hit.get(category, 0) >= 5, category
    assert sum(o.get("votes") == "soft" and "model" not in o for o in trained) >= 3
    boosted = [e for e in CASES if e["origin"].get("model") == "gb"]
    assert {e["forest"]["classes"] for e in boosted} >= {2, 3}
    for e in CASES:
        assert e["confirmed_by"], e["id"]
        assert set(e["oracles"]) == {"first", "all"}
    assert sum(bool(e["circuits"].get("files")) for e in CASES) >= 250


def test_the_plan_keeps_the_ids_and_origins_of_the_committed_cases():
    # Cases are added with --keep: a changed id or origin would rebuild a committed case.
    by_id = {e["id"]: e["origin"] for e in CASES}
    specs = [corpus.trained_case(t) for t in corpus.TRAINED]
    streams = {s.name: s for s in corpus.STREAMS}
    specs += [corpus.random_case(streams[o["stream"]], o["case"])
              for o in by_id.values() if o["kind"] == "random"]
    assert {s.id for s in specs} | {i for i in by_id if i.startswith("spec-")} == set(by_id)
    assert all(s.origin == by_id[s.id] for s in specs)


def test_a_random_forest_of_soft_votes_decides_otherwise_than_its_hard_vote_somewhere():
    for entry in CASES:
        if entry["origin"].get("votes") == "soft" and "model" not in entry["origin"]:
            forest, instances = corpus.load_case(str(FIXTURES), entry["id"])
            assert forest.voting == "soft", entry["id"]
            assert any(corpus.hard_vote(forest, x) != forest.decision(x) for x in instances), \
                entry["id"]


def soft_forest(leaves: list[list[float]], init: list[float] | None = None):
    """One tree per leaf list, each a single leaf (every world reaches them all), over a
    feature ``x`` of two states and the classes a, b, c (as many as a leaf has weights)."""
    doc = {"format": "rfcircuits.forest/1", "votes": "soft",
           "classes": ["a", "b", "c"][:len(leaves[0])],
           "features": [{"name": "x", "thresholds": [0.5]}],
           "trees": [{"nodes": [{"weights": w}]} for w in leaves]}
    if init is not None:
        doc["init"] = init
    return forest_from_json(doc)


@pytest.mark.parametrize("leaves, init, hits, misses", [
    # 0.5 + 0.5 = 1.0 exactly: a tie, decided by the policy
    ([[0.5, 0.0], [0.5, 1.0]], None, {"soft-tie", "soft-votes"},
     {"near-tie", "tie", "negative-weight", "init"}),
    # fl(1/3) + fl(2/3) = 1 - 2**-54 exactly, 1.0 in float64: not tied, but a near tie
    ([[1 / 3, 1.0], [2 / 3, 0.0]], None, {"near-tie", "soft-not-hard"}, {"soft-tie"}),
    # the tree's weights choose b; the initial scores choose a, as the trees' labels do not
    ([[0.0, 0.5]], [1.0, 0.0], {"init", "init-decides", "soft-not-hard"}, {"negative-sum"}),
    ([[-0.25, -0.5]], None, {"negative-weight", "negative-sum"}, {"init", "soft-not-hard"}),
    ([[-0.25, 0.1]], None, {"negative-weight"}, {"negative-sum"}),
    ([[0.5, 0.7]], [-0.25, 0.0], {"negative-weight", "init"}, {"negative-sum", "init-decides"}),
])
def test_soft_categories_mean_what_they_say(leaves, init, hits, misses):
    forest = soft_forest(leaves, init)
    found = set(corpus.categories(forest, [(0,), (1,)], {"first": [], "all": []}))
    assert hits <= found and not misses & found, found
    assert all(corpus.category_meaning(c) for c in found)


def small_corpus(tmp_path: Path, ids: list[str]) -> Path:
    """A copy of some cases of the committed corpus, with their own manifest."""
    root = tmp_path / "corpus"
    for case_id in ids:
        shutil.copytree(FIXTURES / corpus.CASES / case_id, root / corpus.CASES / case_id)
    manifest = dict(MANIFEST, cases=[e for e in CASES if e["id"] in ids])
    (root / corpus.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    return root


def first_with_circuits() -> str:
    return next(e["id"] for e in CASES if e["origin"]["kind"] == "random"
                and e["circuits"].get("files"))


@pytest.mark.parametrize("entry", CASES, ids=[e["id"] for e in CASES])
def test_the_sat_engine_reproduces_the_corpus(entry):
    # Every field it computes, field by field; the general reasons are not compared.
    result = corpus.check_case(str(FIXTURES), entry, engine="sat")
    assert not result.mismatches, "\n".join(result.mismatches)
    assert result.not_compared == {"general_sufficient_reasons": 2 * entry["instances"],
                                   "general_necessary_reasons": 2 * entry["instances"]}


def test_check_with_the_sat_engine_says_what_it_did_not_compare(tmp_path, capsys):
    root = small_corpus(tmp_path, ["spec-susan"])
    assert main(["corpus", "check", "--dir", str(root), "--no-progress", "--engine",
                 "sat"]) == 0
    out = capsys.readouterr().out
    assert "on every field but general_sufficient_reasons" in out and "0 mismatches" in out


def test_check_passes_on_a_clean_copy(tmp_path, capsys):
    root = small_corpus(tmp_path, ["spec-susan", first_with_circuits()])
    assert main(["corpus", "check", "--dir", str(root), "--no-progress"]) == 0
    assert "0 mismatches" in capsys.readouterr().out


def test_check_flags_a_corrupted_expected_line(tmp_path, capsys):
    root = small_corpus(tmp_path, ["spec-susan", first_with_circuits()])
    path = root / corpus.CASES / "spec-susan" / "expected-all.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    line = json.loads(lines[0])
    line["robustness"] += 1
    lines[0] = json.dumps(line, ensure_ascii=False)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["corpus", "check", "--dir", str(root), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH spec-susan, expected-all.jsonl line 1" in out
    assert "field robustness: expected 2, native 1" in out


def test_check_flags_a_wrong_circuit_file(tmp_path, capsys):
    root = small_corpus(tmp_path, ["spec-susan"])
    rel = "circuits/nnf/first/R1-yes.nnf.json"  # Susan's "yes": some worlds, not all
    path = root / corpus.CASES / "spec-susan" / rel
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["nodes"].append({"const": False})  # the last node is the root: now false
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["corpus", "check", "--dir", str(root), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert f"spec-susan/{rel}" in out and "NOT equivalent" in out


@pytest.mark.parametrize("damage, named", [
    (lambda case: (case / "expected-first.jsonl").write_text("{\"votes\": \n", "utf-8"),
     "expected-first.jsonl, line 1: invalid JSON"),
    (lambda case: (case / "forest.json").unlink(), "forest.json: no such file"),
    (lambda case: (case / "instances.jsonl").write_text("[1, 2]\n", "utf-8"),
     "instances.jsonl, line 1"),
    (lambda case: (case / "expected-all.jsonl").write_text("", "utf-8"),
     "expected-all.jsonl: 0 lines for"),
    (lambda case: (case.parent.parent / corpus.MANIFEST).write_text("{", "utf-8"),
     "MANIFEST.json: invalid JSON"),
    (lambda case: shutil.rmtree(case), "no such case directory"),
])
def test_check_rejects_a_malformed_corpus(tmp_path, capsys, damage, named):
    root = small_corpus(tmp_path, ["spec-flip"])
    damage(root / corpus.CASES / "spec-flip")
    assert main(["corpus", "check", "--dir", str(root), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err


@pytest.fixture
def mini(monkeypatch):
    """A corpus of one worked example and two tiny random cases."""
    monkeypatch.setattr(corpus, "EXAMPLE_CASES", {"spec-flip": corpus.EXAMPLE_CASES["spec-flip"]})
    monkeypatch.setattr(corpus, "STREAMS", (corpus.Stream("tie", "tie", 2, Limits(3, 3, 3, 2, 2),
                                                          601),))
    monkeypatch.setattr(corpus, "TRAINED", ())


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_build_is_deterministic_and_checks_clean(mini, tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["corpus", "build", "--out", str(a), "--no-progress"]) == 0
    assert main(["corpus", "build", "--out", str(b), "--no-progress", "--jobs", "2"]) == 0
    assert tree_bytes(a) == tree_bytes(b)
    assert main(["corpus", "build", "--out", str(a), "--no-progress"]) == 0  # replaces a
    assert tree_bytes(a) == tree_bytes(b)
    assert main(["corpus", "check", "--dir", str(a), "--no-progress", "--oracles"]) == 0
    assert "0 mismatches" in capsys.readouterr().out


@pytest.mark.needs("dask")
def test_a_build_on_dask_is_the_same_corpus(mini, tmp_path):
    # The cases are built on the cluster's workers from the specs the client chose.
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["corpus", "build", "--out", str(a), "--no-progress"]) == 0
    assert main(["corpus", "build", "--out", str(b), "--no-progress", "--dask", "local:2"]) == 0
    assert tree_bytes(a) == tree_bytes(b)


def test_build_writes_nothing_when_an_oracle_disagrees(mini, monkeypatch, tmp_path, capsys):
    original = Explainer.explain_states

    def wrong(self, x, what=None, *args, **kwargs):
        e = original(self, x, what) if what is not None else original(self, x)
        return dataclasses.replace(e, robustness=(e.robustness or 0) + 1)

    monkeypatch.setattr(Explainer, "explain_states", wrong)
    out = tmp_path / "corpus"
    assert main(["corpus", "build", "--out", str(out), "--no-progress",
                 "--failures", str(tmp_path / "failures")]) == 1
    text = capsys.readouterr().out
    assert "corpus build FAILED" in text and "robustness" in text
    assert not out.exists()
    assert sorted(p.name for p in (tmp_path / "failures").iterdir())
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_keep_adds_cases_and_leaves_the_kept_ones_byte_for_byte(mini, monkeypatch, tmp_path,
                                                               capsys):
    out = tmp_path / "corpus"
    assert main(["corpus", "build", "--out", str(out), "--no-progress"]) == 0
    before = tree_bytes(out / corpus.CASES)
    old = json.loads((out / corpus.MANIFEST).read_text("utf-8"))
    # Rebuilding a kept case now would write other files: --keep must not rebuild it.
    built = []
    original = corpus.build_case

    def changed(spec):
        built.append(spec.id)
        result = original(spec)
        result.files[corpus.FOREST_FILE] = " " + result.files[corpus.FOREST_FILE]
        return result

    monkeypatch.setattr(corpus, "build_case", changed)
    monkeypatch.setattr(corpus, "versions", lambda: {**old["versions"], "rfcircuits": "9.9"})
    monkeypatch.setattr(corpus, "STREAMS", corpus.STREAMS + (
        corpus.Stream("valid", "valid-class", 1, Limits(3, 3, 3, 2, 2), 602),))
    assert main(["corpus", "build", "--out", str(out), "--no-progress", "--keep"]) == 0
    after = tree_bytes(out / corpus.CASES)
    assert {k: v for k, v in after.items() if k in before} == before
    new = json.loads((out / corpus.MANIFEST).read_text("utf-8"))
    assert new["versions"] == old["versions"] and new["cases"][:-1] == old["cases"]
    assert built == [new["cases"][-1]["id"]] and built[0].startswith("random-valid-")
    assert new["cases"][-1]["versions"]["rfcircuits"] == "9.9"
    assert "| valid-class | 3 |" in (out / corpus.README).read_text("utf-8")
    shutil.rmtree(out / corpus.CASES / built[0])
    assert main(["corpus", "build", "--out", str(out), "--no-progress", "--keep"]) == 2
    assert f"{built[0]}: no such case directory" in capsys.readouterr().err


def test_build_refuses_to_replace_a_directory_that_is_not_a_corpus(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine", "utf-8")
    assert main(["corpus", "build", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "refusing to replace it" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text("utf-8") == "mine"
