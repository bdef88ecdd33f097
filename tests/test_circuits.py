"""Compile once, explain many (core/circuits.py): circuits saved and read back answer as the
explainer that compiled them, and as the brute force, on either store; ``explain --circuits``
writes the bytes a compile does and compiles nothing; circuits of another forest, tie policy,
engine or format, and damaged files, are refused with the file and what is at fault named;
a Dask cluster's workers load the client's circuits instead of compiling."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import zlib
from array import array
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rfcircuits
from rfcircuits import dgraph, graphengine, projections
from rfcircuits.circuits import MANIFEST, forest_digest
from rfcircuits.cli.main import main
from rfcircuits.crosscheck.oracles.brute import BruteForce
from rfcircuits.crosscheck.differential.strategies import (GENERAL, Limits, all_worlds,
                                                           forest_and_instance, random_forest,
                                                           random_instance)
from rfcircuits.errors import InputError
from rfcircuits.explain import Explainer, load_explainer
from rfcircuits.forest import TIES, Forest, instance_to_json, save_forest

LIMITS = Limits(max_features=4, max_states=4, max_trees=6, max_classes=3)
STORES = sorted(dgraph.STORES)


@contextlib.contextmanager
def store(backend: str) -> Iterator[None]:
    """New decision-graph managers use the ``backend`` store inside the block."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dgraph, "BACKEND", backend)
        yield


# ---------------------------------------------------------------------------------------------
# Saved and loaded


@settings(max_examples=60, deadline=None)
@given(forest_and_instance(LIMITS), st.sampled_from(TIES), st.sampled_from(STORES),
       st.sampled_from(STORES))
def test_loaded_circuits_answer_as_the_compiled_ones_and_the_brute_force(case, ties, saver,
                                                                         loader):
    f, x = case
    with store(saver):
        original = Explainer(f, ties, engine="graphs")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "c.json")
            original.save(path)
            with store(loader):
                loaded = load_explainer(path, f, ties=ties)
    assert loaded.graphs.compiled.dg.backend == loader
    assert loaded.choice == f"graphs: decision graphs, loaded from {path}"
    mine = loaded.explain_states(x)
    assert mine.to_line() == original.explain_states(x).to_line()
    assert mine.to_json(engine=False) == BruteForce(f, ties).explain(x).to_json()
    # saved again, the loaded circuits give the same file
    assert loaded.dumps() == original.dumps()


def refuse_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, compiling a class formula, a projection or a negated class fails."""
    def refuse(*args, **kwargs):
        raise AssertionError("compiled after loading")

    negated_class = graphengine.GraphEngine.negated_class

    def only_loaded(self, t):
        assert t in self._negated, "a negated class compiled after loading"
        return negated_class(self, t)

    monkeypatch.setattr(graphengine, "compile_dg", refuse)
    monkeypatch.setattr(projections.Projections, "__init__", refuse)
    monkeypatch.setattr(graphengine.GraphEngine, "negated_class", only_loaded)


def test_loading_compiles_nothing(monkeypatch):
    rng = random.Random(5)
    forests = [random_forest(rng, LIMITS) for _ in range(8)]
    saved = [(f, Explainer(f, "all", engine="graphs")) for f in forests]
    files = []
    for f, e in saved:
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
            files.append(handle.name)
        e.save(files[-1])

    refuse_compiling(monkeypatch)
    for (f, e), path in zip(saved, files):
        loaded = load_explainer(path)
        assert loaded.forest == f and loaded.ties == "all"
        assert loaded.graphs.projected() == e.graphs.projected()
        for x in all_worlds(f)[:20]:
            assert loaded.explain_states(x).to_line() == e.explain_states(x).to_line()
        os.unlink(path)


@pytest.mark.parametrize("nr_method", ["search", "project"])
def test_an_explainer_saves_what_it_has_compiled_and_loads_with_its_own_methods(nr_method):
    f = random_forest(random.Random(11), LIMITS)
    e = Explainer(f, engine="graphs", nr_method=nr_method)
    assert e.graphs.prepared()[0] == {}  # no CE asked yet: no negated class
    bare = json.loads(e.dumps())
    assert bare["negated"] == [None] * len(f.classes)
    # a load with other methods gives the same answers; missing graphs compile on first use
    loaded = load_explainer(e.dumps(), nr_method="auto")
    for x in all_worlds(f)[:10]:
        assert loaded.explain_states(x).to_line() == e.explain_states(x).to_line()
    assert None not in json.loads(loaded.dumps())["negated"]


def test_the_sat_engine_saves_its_choice_and_compiles_on_loading(tmp_path):
    f = random_forest(random.Random(2), LIMITS)
    e = Explainer(f, "all", engine="sat", limit_seconds=None, limit_items=None)
    e.save(tmp_path / "c.json")
    doc = json.loads((tmp_path / "c.json").read_text())
    assert (doc["engine"], doc["form"], doc["ties"]) == ("sat", "nnf", "all")
    assert "code" not in doc and doc["forest_digest"] == forest_digest(f)
    loaded = rfcircuits.load_explainer(tmp_path / "c.json", limit_seconds=None,
                                       limit_items=None)
    assert loaded.engine.name == "sat" and loaded.choice.startswith("sat: ")
    for x in all_worlds(f)[:10]:
        assert loaded.explain_states(x).to_line() == e.explain_states(x).to_line()


def test_auto_saves_the_engine_it_chose(monkeypatch):
    f = random_forest(random.Random(4), LIMITS)
    assert load_explainer(Explainer(f).dumps()).engine.name == "graphs"
    # graphs that do not compile in time: auto answers by SAT, and so does the load
    monkeypatch.setattr(Explainer, "_attempt", lambda self, graphs, seconds: MemoryError())
    chosen = Explainer(f)
    assert chosen.engine.name == "sat"
    assert load_explainer(chosen.dumps()).engine.name == "sat"


# ---------------------------------------------------------------------------------------------
# The command line


ROWS = 25


def write_case(tmp: Path, f: Forest) -> tuple[Path, Path]:
    """A file of the forest and one of :data:`ROWS` random instances of it."""
    forest, rows = tmp / "f.json", tmp / "rows.jsonl"
    save_forest(f, forest)
    rng = random.Random(0)
    rows.write_text("".join(json.dumps(instance_to_json(f, random_instance(rng, f))) + "\n"
                            for _ in range(ROWS)), encoding="utf-8")
    return forest, rows


@pytest.mark.parametrize("form, engine", [("dg-conj", "auto"), ("dg", "graphs"),
                                          ("nnf", "sat")])
@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("seed, limits", [(0, LIMITS), (1, LIMITS), (6, GENERAL)])
def test_explain_circuits_writes_the_bytes_a_compile_does(tmp_path, capsys, form, engine, ties,
                                                          seed, limits):
    f = random_forest(random.Random(seed), limits)
    forest, rows = write_case(tmp_path, f)
    assert main(["compile", "--forest", str(forest), "--form", form, "--ties", ties,
                 "--out", str(tmp_path / "c"), "-q"]) == 0
    common = ["explain", "--forest", str(forest), "--instances", str(rows), "--ties", ties,
              "-q", "--limit-seconds", "0", "--limit-items", "0"]
    assert main(common + ["--engine", "sat" if form == "nnf" else "graphs",
                          "--out", str(tmp_path / "fresh.jsonl")]) == 0
    assert main(common + ["--engine", engine, "--circuits", str(tmp_path / "c"),
                          "--out", str(tmp_path / "loaded.jsonl")]) == 0
    fresh = (tmp_path / "fresh.jsonl").read_bytes()
    assert fresh.count(b"\n") == ROWS
    assert (tmp_path / "loaded.jsonl").read_bytes() == fresh


def test_explain_circuits_skips_the_compile(tmp_path, capsys, monkeypatch):
    f = random_forest(random.Random(8), LIMITS)
    forest, rows = write_case(tmp_path, f)
    assert main(["compile", "--forest", str(forest), "--form", "dg-conj", "--out",
                 str(tmp_path / "c"), "-q"]) == 0
    capsys.readouterr()
    refuse_compiling(monkeypatch)
    assert main(["explain", "--forest", str(forest), "--instances", str(rows), "--circuits",
                 str(tmp_path / "c"), "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == ROWS
    assert {json.loads(line)["engine"] for line in lines} == {"graphs"}


# ---------------------------------------------------------------------------------------------
# Refused circuits


@pytest.fixture(scope="module")
def saved() -> tuple[Forest, dict]:
    """A forest of three features and three classes, and its circuits with projections."""
    rng = random.Random(3)
    while True:
        f = random_forest(rng, Limits(max_features=3, max_states=3, max_trees=4,
                                      max_classes=3))
        if (len(f.features), len(f.classes)) != (3, 3):
            continue
        e = Explainer(f, engine="graphs")
        e.compile(negated=True)
        doc = json.loads(e.dumps())
        if doc["nodes"] > 1 and any(p["rows"] for p in doc["projections"]):
            return f, doc


def refusal(doc: dict, **kwargs) -> str:
    with pytest.raises(InputError) as info:
        load_explainer(json.dumps(doc).encode(), **kwargs)
    return str(info.value)


def words_of(doc: dict) -> array:
    words = array("i", zlib.decompress(base64.b64decode(doc["code"])))
    assert sys.byteorder == "little"  # (the file's order; a big-endian store swaps them)
    return words


def with_words(doc: dict, words: array) -> dict:
    return {**doc, "code": base64.b64encode(zlib.compress(words.tobytes())).decode()}


def test_circuits_of_another_forest_are_refused_naming_both_digests(saved):
    f, doc = saved
    other = random_forest(random.Random(99), LIMITS)
    text = refusal(doc, forest=other)
    assert text.startswith("saved circuits: circuits of another forest")
    assert doc["forest_digest"] in text and forest_digest(other) in text
    assert "rfcircuits compile --forest F --form dg-conj --out DIR" in text
    # the same forest from a file laid out otherwise is the same forest
    again = Forest(f.features, f.classes, f.trees)
    assert load_explainer(json.dumps(doc).encode(), again).forest is again


def test_circuits_of_another_tie_policy_or_engine_are_refused(saved):
    _, doc = saved
    text = refusal(doc, ties="all")
    assert "circuits of tie policy 'first', not 'all'" in text and "--ties first" in text
    text = refusal(doc, engine="sat")
    assert "circuits of engine 'graphs', not 'sat'" in text and "--form nnf" in text


@pytest.mark.parametrize("change, message", [
    ({"format": "rfcircuits.circuits/2"}, "format rfcircuits.circuits/2 is of a later "
                                          "rfcircuits than this one"),
    ({"format": "rfcircuits.dg/1"}, "field 'format' must be 'rfcircuits.circuits/1'"),
    ({"engine": "bdd"}, "field 'engine' must be one of 'graphs', 'sat'"),
    ({"form": "dg"}, "field 'form' must be 'dg-conj' for engine 'graphs'"),
    ({"extra": 1}, "unknown field 'extra'"),
    ({"forest_digest": "sha256:" + "0" * 64}, "the forest it holds does not have its digest"),
    ({"order": [0, 0, 1]}, "order: must list the features 0 to 2 once each"),
    ({"classes": [[2]]}, "classes: 1 items, where the forest has 3 classes"),
    ({"negated": [None, True, None]}, "negated: must be a list of node numbers"),
    ({"projections": [{"roots": [2], "rows": [2, 3]}]}, "projections[0]: 2 rows, where 3 "
                                                          "features have 8"),
    ({"code": "not base64!"}, "code: damaged or cut short"),
    ({"nodes": 1}, "distinct nodes, where field 'nodes' says 1"),
])
def test_bad_fields_are_refused_naming_the_field(saved, change, message):
    _, doc = saved
    assert message in refusal({**doc, **change})


def test_a_damaged_or_cut_file_is_refused_naming_the_node(saved, tmp_path):
    _, doc = saved
    packed = bytearray(base64.b64decode(doc["code"]))
    packed[len(packed) // 2] ^= 0x10  # the zlib stream's checksum catches it
    assert "code: damaged or cut short" in refusal(
        {**doc, "code": base64.b64encode(bytes(packed)).decode()})
    words = words_of(doc)
    last = len(words) - 1
    for at, value in ((0, 7), (last, last + 2)):
        bad = array("i", words)
        bad[at] = value
        text = refusal(with_words(doc, bad))
        assert text.startswith("saved circuits: code: node ")
    assert refusal(with_words(doc, words_of(doc)[:0]))  # no nodes: the roots are missing
    cut = json.dumps(doc)[:-1000]
    (tmp_path / "c.json").write_text(cut)
    with pytest.raises(InputError, match=r"c\.json: invalid JSON at line 1"):
        load_explainer(tmp_path / "c.json")


def test_the_command_line_refuses_without_a_traceback(saved, tmp_path, capsys):
    f, doc = saved
    other = random_forest(random.Random(7), LIMITS)
    forest, rows = write_case(tmp_path, other)
    (tmp_path / "c.json").write_text(json.dumps(doc))
    assert main(["explain", "--forest", str(forest), "--instances", str(rows),
                 "--circuits", str(tmp_path / "c.json"), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rfcircuits explain: error: {tmp_path / 'c.json'}: circuits of "
                          "another forest") and "Traceback" not in err
    assert main(["explain", "--forest", str(forest), "--instances", str(rows),
                 "--circuits", str(tmp_path), "-q"]) == 2
    assert f"{tmp_path}: no {MANIFEST} in this directory" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# Dask: the client compiles, the workers load

needs_dask = pytest.mark.skipif(
    subprocess.run([sys.executable, "-c", "import distributed"],
                   capture_output=True).returncode != 0,
    reason="Dask distributed is not installed (pip install 'rfcircuits[dask]')")

#: Planted in the cluster's worker processes (fresh interpreters, which a monkeypatch here
#: would not reach): compiling a class formula, a projection or a negated class fails there.
NO_COMPILING = """
from rfcircuits import graphengine, projections

def _refuse(*args, **kwargs):
    raise AssertionError("a worker compiled")

_negated_class = graphengine.GraphEngine.negated_class

def _only_loaded(self, t):
    if t not in self._negated:
        _refuse()
    return _negated_class(self, t)

graphengine.compile_dg = _refuse
projections.Projections.__init__ = _refuse
graphengine.GraphEngine.negated_class = _only_loaded
"""


@needs_dask
def test_dask_workers_load_the_clients_circuits_instead_of_compiling(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    import dask

    from rfcircuits.crosscheck.campaigns.dask_backend import WORKER_CONFIG
    from rfcircuits.crosscheck.differential.harness import crosscheck

    (tmp_path / "sitecustomize.py").write_text(NO_COMPILING, encoding="utf-8")
    f = random_forest(random.Random(6), LIMITS)
    instances = all_worlds(f)[:8]
    serial = crosscheck(f, instances, oracles=("brute",), engine="graphs", formulas=False)
    environ = dict(os.environ)  # Dask's nanny sets its workers' variables in this process
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(tmp_path)] + [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    try:
        with dask.config.set(WORKER_CONFIG), distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True,
                dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            # the trap is set: a worker that compiles fails
            with pytest.raises(AssertionError, match="a worker compiled"):
                client.submit(lambda: Explainer(f, engine="graphs").compile()).result()
            remote = crosscheck(f, instances, oracles=("brute",), engine="graphs",
                                formulas=False, dask=cluster.scheduler_address)

            def loaded_runs() -> int:  # (pickled by value: the workers cannot import tests)
                from rfcircuits.crosscheck.differential import harness

                run = harness._REMOTE
                return int(run is not None and run[2].choice.startswith(
                    "graphs: decision graphs, loaded from"))

            loaded = sum(client.run(loaded_runs).values())
    finally:
        os.environ.clear()
        os.environ.update(environ)
    assert remote.ok and remote.disagreements == [] and serial.checks() > 0
    assert [(o.check, o.engine, o.status) for o in remote.outcomes] == \
        [(o.check, o.engine, o.status) for o in serial.outcomes]
    assert loaded >= 1  # the workers that explained hold runs of loaded circuits


def test_the_format_guides_example_loads_and_answers_as_a_compile():
    from rfcircuits.crosscheck.differential.spec_examples import (SUSAN, SUSAN_FOREST, forest,
                                                                  instance)

    text = (Path(__file__).resolve().parent.parent / "docs" / "formats.md").read_text(
        encoding="utf-8")
    section = text.split("## Saved circuits", 1)[1].split("\n## ", 1)[0]
    example = section.split("```json\n", 1)[1].split("```", 1)[0]
    f = forest(SUSAN_FOREST)
    loaded = load_explainer(example.encode(), f)
    x = instance(f, SUSAN)
    assert loaded.explain_states(x).to_line() == Explainer(f).explain_states(x).to_line()
    assert json.loads(loaded.dumps()) == json.loads(example)
