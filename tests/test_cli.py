"""The CLI: train, compile, demo and bench, and the bad-input policy (exit 2, no traceback)."""

from __future__ import annotations

import csv
import json

import pytest
from sklearn.datasets import load_iris

from rfcircuits.cli.main import main
from rfcircuits.crosscheck.spec_examples import SUSAN, SUSAN_FOREST


@pytest.fixture
def iris_csv(tmp_path):
    bunch = load_iris()
    path = tmp_path / "iris.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["sl", "sw", "pl", "pw", "target"])
        for row, label in zip(bunch.data, bunch.target):
            writer.writerow([*row, label])
    return path


def test_train_then_compile(tmp_path, iris_csv, capsys):
    forest = tmp_path / "iris.forest.json"
    tests = tmp_path / "test.jsonl"
    assert main(["train", "--data", str(iris_csv), "--trees", "5", "--depth", "3", "--seed", "1",
                 "--out", str(forest), "--test-out", str(tests)]) == 0
    out = capsys.readouterr().out
    assert "accuracy (hard-majority vote)" in out and "vote agrees with sklearn predict" in out
    assert len(tests.read_text().splitlines()) == 23
    outdir = tmp_path / "circuits"
    assert main(["compile", "--forest", str(forest), "--form", "nnf", "--out", str(outdir),
                 "--no-progress"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["form"] == "nnf" and result["ties"] == "first"
    assert set(result["classes"]) == {"0", "1", "2"}
    assert result["total_nodes"] <= sum(c["nodes"] for c in result["classes"].values())
    files = sorted(p.name for p in outdir.iterdir())
    assert files == ["R0-0.nnf.json", "R1-1.nnf.json", "R2-2.nnf.json"]
    doc = json.loads((outdir / files[0]).read_text())
    assert doc["format"] == "rfcircuits.nnf/1" and doc["class"] == "0"


def test_both_vote_counters_compile_the_same_graphs(tmp_path, iris_csv, capsys):
    from rfcircuits.dgcompile import COUNTERS
    from rfcircuits.cli.main import build_parser

    forest = tmp_path / "iris.forest.json"
    assert main(["train", "--data", str(iris_csv), "--trees", "9", "--depth", "3", "--seed", "2",
                 "--out", str(forest)]) == 0
    capsys.readouterr()
    nodes = {}
    for counter in COUNTERS:
        outdir = tmp_path / counter
        assert main(["compile", "--forest", str(forest), "--form", "dg-conj", "--counter",
                     counter, "--out", str(outdir), "--no-progress"]) == 0
        result = json.loads(capsys.readouterr().out)
        nodes[counter] = {c: v["nodes"] for c, v in result["classes"].items()}
    # canonical graphs under one feature order
    assert nodes["totalizer"] == nodes["oddeven"] == nodes["topdown"]
    # the CLI offers exactly the library's counters
    parser = build_parser()
    args = parser.parse_args(["compile", "--forest", "f", "--counter", "oddeven"])
    assert args.counter == "oddeven"
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(["compile", "--forest", "f", "--counter", "nope"])
    assert stop.value.code == 2
    action = next(a for a in parser._subparsers._group_actions[0].choices["compile"]._actions
                  if a.dest == "counter")
    assert tuple(action.choices) == COUNTERS


def test_bad_forest_exits_2_with_a_message(tmp_path, capsys):
    doc = json.loads(json.dumps(SUSAN_FOREST))
    doc["trees"][0]["nodes"][5]["branches"][1][0] = [3]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    assert main(["compile", "--forest", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "tree 0, node 5" in err and "Traceback" not in err
    path.write_text("[1, 2")
    assert main(["compile", "--forest", str(path), "--no-progress"]) == 2
    assert "invalid JSON" in capsys.readouterr().err


def test_train_rejects_non_numeric_csv(tmp_path, capsys):
    path = tmp_path / "d.csv"
    path.write_text("a,b,target\n1,x,0\n2,3,1\n")
    assert main(["train", "--data", str(path), "--out", str(tmp_path / "f.json")]) == 2
    assert "line 2, column 'b': 'x' is not a number" in capsys.readouterr().err
    assert not (tmp_path / "f.json").exists()


def test_bench_reports_missing_data(tmp_path, capsys):
    assert main(["bench", "compile", "--data-dir", str(tmp_path), "--datasets", "iris"]) == 2
    assert "no dataset file" in capsys.readouterr().err
    assert main(["bench", "compile", "--data-dir", str(tmp_path), "--datasets", "nope"]) == 2


def test_demo_runs(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "iris" in out and "NNF" in out


def test_bench_explain_rows(tmp_path, capsys):
    # Table 3/4 rows from scikit-learn's bundled iris and wine, written as the tables' CSVs.
    from sklearn.datasets import load_iris, load_wine

    for name, data in (("iris", load_iris()), ("wine-recog", load_wine())):
        rows = [list(map(str, r)) + [str(t)] for r, t in zip(data.data, data.target)]
        lines = [",".join([f"f{i}" for i in range(data.data.shape[1])] + ["target"])]
        (tmp_path / f"{name}.csv").write_text("\n".join(lines + [",".join(r) for r in rows]))
    assert main(["bench", "explain", "--data-dir", str(tmp_path), "--datasets",
                 "iris,wine-recog", "--trees", "3", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["dataset"] for r in rows] == ["iris", "wine-recog"]
    for r in rows:
        assert r["t"] == 3 and r["c_nr"] > 0 and r["c_sr"] > 0 and r["r"] >= 1
        assert r["paper_t_nr"] is None  # not the paper's configuration (#T differs)
        assert r["t_sr_expand"] >= 0 and r["t_nr"] >= 0
    assert "c_ce" not in rows[0] and rows[1]["c_ce"] > 0
    # A dataset beyond the node budget gets a row saying so; the run goes on.
    for what in (["compile", "--form", "dg-conj"], ["explain"], ["oracles"]):
        assert main(["bench", *what, "--data-dir", str(tmp_path), "--datasets",
                     "iris,wine-recog", "--trees", "3", "--json", "--max-nodes", "3"]) == 0
        captured = capsys.readouterr()
        rows = [json.loads(line) for line in captured.out.splitlines()]
        assert [r["dataset"] for r in rows] == ["iris", "wine-recog"]
        assert all(r["stopped"] == "decision graphs exceed --max-nodes 3" for r in rows)
        assert "wine-recog: decision graphs exceed --max-nodes 3" in captured.err


def test_explain_stops_at_the_node_budget(tmp_path, capsys):
    from rfcircuits.budget import default_max_nodes
    from rfcircuits.crosscheck.spec_examples import SUSAN

    assert default_max_nodes() > 10 ** 6  # this machine's memory is known and large
    (tmp_path / "f.json").write_text(json.dumps(SUSAN_FOREST))
    (tmp_path / "i.jsonl").write_text(json.dumps(SUSAN) + "\n")
    args = ["explain", "--forest", str(tmp_path / "f.json"), "--instances",
            str(tmp_path / "i.jsonl"), "--what", "nr", "--no-progress", "--max-nodes"]
    assert main(args + ["3"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "stopped: decision graphs exceed --max-nodes 3" in captured.err
    assert "Traceback" not in captured.err
    assert main(args + ["0"]) == 0  # no limit
    assert json.loads(capsys.readouterr().out)["necessary_reasons"]


def test_outputs_get_the_permissions_of_a_plain_write(tmp_path, capsys):
    import os

    from rfcircuits.atomicio import write_json

    forest = tmp_path / "susan.forest.json"
    write_json(forest, SUSAN_FOREST)
    instances = tmp_path / "i.jsonl"
    instances.write_text(json.dumps(SUSAN) + "\n")
    previous = os.umask(0o022)
    try:
        assert main(["explain", "--forest", str(forest), "--instances", str(instances),
                     "--out", str(tmp_path / "new.jsonl"), "--no-progress"]) == 0
        assert os.stat(tmp_path / "new.jsonl").st_mode & 0o777 == 0o644  # not mkstemp's 0o600
        os.umask(0o077)
        write_json(tmp_path / "private.json", {})
        assert os.stat(tmp_path / "private.json").st_mode & 0o777 == 0o600
        os.chmod(forest, 0o640)  # an existing file keeps its own
        write_json(forest, SUSAN_FOREST)
        assert os.stat(forest).st_mode & 0o777 == 0o640
    finally:
        os.umask(previous)


def test_the_umask_is_read_with_and_without_proc(monkeypatch):
    import builtins
    import os

    from rfcircuits import atomicio

    previous = os.umask(0o027)
    try:
        assert atomicio.current_umask() == 0o027  # from /proc/self/status on Linux
        assert os.umask(0o027) == 0o027  # and left as it was

        def no_proc(*args, **kwargs):  # type: ignore[no-untyped-def]
            raise OSError("no /proc here")

        monkeypatch.setattr(builtins, "open", no_proc)
        os.umask(0o002)
        assert atomicio.current_umask() == 0o002  # set and put back
        assert os.umask(0o002) == 0o002
    finally:
        os.umask(previous)


def test_an_unwritable_output_exits_2_naming_it(tmp_path, capsys):
    import os
    import subprocess
    import sys

    forest = tmp_path / "susan.forest.json"
    forest.write_text(json.dumps(SUSAN_FOREST))
    instances = tmp_path / "i.jsonl"
    instances.write_text(json.dumps(SUSAN) + "\n")
    explain = ["explain", "--forest", str(forest), "--instances", str(instances), "--no-progress"]
    # a directory is refused before any work, not at the final rename
    assert main(explain + ["--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}: Is a directory" in err and "Traceback" not in err
    assert not [p for p in os.listdir(tmp_path.parent) if p.startswith(".tmp-")]
    if os.path.exists("/dev/full"):  # stdout on a full disk
        with open("/dev/full", "w") as full:
            done = subprocess.run([sys.executable, "-c", "import sys; from rfcircuits.cli.main import "
                                   "main; sys.exit(main(sys.argv[1:]))", *explain],
                                  stdout=full, stderr=subprocess.PIPE, text=True)
        assert done.returncode == 2
        assert "No space left on device" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("argv, argument", [
    (["fuzz", "--seconds", "nan"], "--seconds"),  # nan passed the old "<= 0" check: 0 cases
    (["fuzz", "--seconds", "0"], "--seconds"),
    (["mutate", "--budget", "nan"], "--budget"),  # was a ValueError traceback
    (["mutate", "--sample", "0"], "--sample"),
    (["compile", "--forest", "f.json", "--timeout", "-1"], "--timeout"),  # was "stopped", exit 1
    (["compile", "--forest", "f.json", "--timeout", "inf"], "--timeout"),
    (["compile", "--forest", "f.json", "--timeout", "soon"], "--timeout"),
])
def test_durations_and_counts_must_be_positive(argv, argument, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {argument}:" in err and "Traceback" not in err
