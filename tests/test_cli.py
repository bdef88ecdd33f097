"""The CLI: train, import, compile, demo and bench, --help, and the bad-input policy (exit 2,
no traceback)."""

from __future__ import annotations

import argparse
import csv
import json
import pickle

import joblib
import numpy as np
import pytest
from sklearn.datasets import load_iris, make_classification
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from rfcircuits.cli.main import main
from rfcircuits.crosscheck.differential.spec_examples import SUSAN, SUSAN_FOREST


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
    assert files == ["R0-0.nnf.json", "R1-1.nnf.json", "R2-2.nnf.json", "circuits.json"]
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
    # The trained suite: every check kind, native beside SAT, answers agreeing.
    assert main(["bench", "oracles", "--suite", "trained", "--data-dir", str(tmp_path),
                 "--datasets", "iris", "--trees", "3", "--json", "-q"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["dataset"] == "iris" and row["depth"] == 6 and row["agree"] == "yes"
    for kind in ("sr+nr", "ce", "robust", "gsr", "gnr", "flips"):
        assert row[f"t_{kind}_native"] >= 0 and row[f"t_{kind}_sat"] >= 0
        assert f"{kind}_ratio" in row
    assert row["mb"] > 0
    # A dataset beyond the node budget gets a row saying so; the run goes on.
    for what in (["compile", "--form", "dg-conj"], ["explain"], ["oracles"]):
        assert main(["bench", *what, "--data-dir", str(tmp_path), "--datasets",
                     "iris,wine-recog", "--trees", "3", "--json", "--max-nodes", "3"]) == 0
        captured = capsys.readouterr()
        rows = [json.loads(line) for line in captured.out.splitlines()]
        assert [r["dataset"] for r in rows] == ["iris", "wine-recog"]
        said = {r["stopped"] for r in rows}
        assert said <= {"decision graphs exceed --max-nodes 3", BUDGET_HINT}, said
        assert "wine-recog: decision graphs exceed --max-nodes 3" in captured.err


#: What the command line says when the decision graphs exceed ``--max-nodes 3``.
BUDGET_HINT = ("decision graphs exceed --max-nodes 3: --engine sat explains any forest "
               "(--engine auto, the default, turns to it by itself), or --max-nodes 0 lifts the "
               "budget")


def test_explain_stops_at_the_node_budget(tmp_path, capsys):
    from rfcircuits.budget import default_max_nodes
    from rfcircuits.crosscheck.differential.spec_examples import SUSAN

    assert default_max_nodes() > 10 ** 6  # this machine's memory is known and large
    (tmp_path / "f.json").write_text(json.dumps(SUSAN_FOREST))
    (tmp_path / "i.jsonl").write_text(json.dumps(SUSAN) + "\n")
    args = ["explain", "--forest", str(tmp_path / "f.json"), "--instances",
            str(tmp_path / "i.jsonl"), "--what", "nr", "--no-progress", "--max-nodes"]
    assert main(args + ["3", "--engine", "graphs"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "stopped: decision graphs exceed --max-nodes 3: --engine sat explains any forest" \
        in captured.err
    assert "Traceback" not in captured.err
    assert main(args + ["0", "--engine", "graphs"]) == 0  # no limit
    assert json.loads(capsys.readouterr().out)["necessary_reasons"]
    assert main(args + ["3"]) == 0  # auto, the default: the SAT engine answers
    line = json.loads(capsys.readouterr().out)
    assert line["engine"] == "sat" and line["necessary_reasons"]


def test_explain_out_of_memory_is_a_message(tmp_path, capsys, monkeypatch):
    # Memory can run out before the node budget does (a ulimit, --max-nodes 0): a message,
    # exit 1, and the explanations already written are kept, as at the budget.
    from rfcircuits import graphengine
    from rfcircuits.crosscheck.differential.spec_examples import SUSAN

    (tmp_path / "f.json").write_text(json.dumps(SUSAN_FOREST))
    (tmp_path / "i.jsonl").write_text(json.dumps(SUSAN) + "\n")

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(graphengine, "compile_dg", no_memory)
    args = ["explain", "--forest", str(tmp_path / "f.json"), "--instances",
            str(tmp_path / "i.jsonl"), "--what", "nr", "--no-progress"]
    assert main(args + ["--engine", "graphs"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "rfcircuits explain: stopped: out of memory" in captured.err
    assert "Traceback" not in captured.err
    assert main(args) == 0  # auto leaves the graphs for the SAT engine
    assert json.loads(capsys.readouterr().out)["engine"] == "sat"


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
    assert f"{tmp_path}: is a directory" in err and "Traceback" not in err
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


# --- rfcircuits import ------------------------------------------------------------------------


def _hard_vote_figures(model, X, labels):
    """Accuracy of the hard-majority vote of scikit-learn's own trees (first class on ties),
    and its agreement with the model's predict, as ``train`` prints them."""
    trees = getattr(model, "estimators_", [model])
    votes = np.array([np.searchsorted(t.classes_, t.predict(X)) for t in trees])
    n_classes = len(model.classes_)
    hard = model.classes_[[int(np.argmax(np.bincount(votes[:, i], minlength=n_classes)))
                           for i in range(len(X))]]
    accuracy = None if labels is None else f"{100 * np.mean(hard == labels):.2f}%"
    return accuracy, f"{100 * np.mean(hard == model.predict(X)):.2f}%"


def _write_csv(path, header, rows):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.mark.parametrize("saver", ["joblib", "pickle"])
def test_import_a_model_file_and_report_on_rows(tmp_path, capsys, saver):
    X, y = make_classification(n_samples=200, n_features=5, n_informative=3, n_classes=3,
                               random_state=1)
    X = np.round(X, 3)
    model = RandomForestClassifier(n_estimators=7, max_depth=4, random_state=0).fit(X, y)
    path = tmp_path / "model.bin"
    if saver == "joblib":
        joblib.dump(model, path)
    else:
        path.write_bytes(pickle.dumps(model))
    out = tmp_path / "m.forest.json"
    # Fitted without names: columns by position, the last one the labels.
    data = _write_csv(tmp_path / "rows.csv", ["a", "b", "c", "d", "e", "label"],
                      [[*row, label] for row, label in zip(X, y)])
    assert main(["import", "--model", str(path), "--out", str(out), "--data", str(data),
                 "--votes", "hard"]) == 0
    accuracy, agreement = _hard_vote_figures(model, X, y)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("model.bin (RandomForestClassifier): 7 trees, depth 4, ")
    assert lines[0].endswith("nodes; 200 rows")
    assert lines[1:] == [f"accuracy (hard-majority vote): {accuracy}",
                         f"vote agrees with sklearn predict: {agreement} of rows",
                         f"wrote {out}"]
    doc = json.loads(out.read_text())
    assert doc["input_dtype"] == "float32" and len(doc["trees"]) == 7
    assert doc["classes"] == ["0", "1", "2"]
    assert [f["name"] for f in doc["features"]] == ["x0", "x1", "x2", "x3", "x4"]
    # Without the label column there is no accuracy to report.
    bare = _write_csv(tmp_path / "bare.csv", ["a", "b", "c", "d", "e"], X)
    assert main(["import", "--model", str(path), "--out", str(out), "--data", str(bare),
                 "--votes", "hard"]) == 0
    printed = capsys.readouterr().out
    assert "accuracy" not in printed and f"agrees with sklearn predict: {agreement}" in printed
    # Soft votes by default: the decision predict makes, on every row.
    assert main(["import", "--model", str(path), "--out", str(out), "--data", str(bare)]) == 0
    assert "vote agrees with sklearn predict: 100.00% of rows" in capsys.readouterr().out


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_import_matches_named_columns_by_name(tmp_path, capsys):
    bunch = load_iris()
    names = ["sl", "sw", "pl", "pw"]
    labels = np.array(["setosa", "versicolor", "virginica"])[bunch.target]
    model = DecisionTreeClassifier(max_depth=3, random_state=0).fit(bunch.data, labels)
    model.feature_names_in_ = np.array(names, dtype=object)  # as fitting on a DataFrame sets
    path = tmp_path / "tree.pkl"
    path.write_bytes(pickle.dumps(model))
    # Columns in another order, the labels in the middle: matched by name, labels left over.
    data = _write_csv(tmp_path / "rows.csv", ["pw", "sl", "species", "pl", "sw"],
                      [[row[3], row[0], label, row[2], row[1]]
                       for row, label in zip(bunch.data, labels)])
    out = tmp_path / "t.forest.json"
    assert main(["import", "--model", str(path), "--out", str(out), "--data", str(data),
                 "--votes", "hard"]) == 0
    accuracy, agreement = _hard_vote_figures(model, bunch.data, labels)
    printed = capsys.readouterr().out
    assert "tree.pkl (DecisionTreeClassifier): 1 trees, depth 3" in printed
    assert f"accuracy (hard-majority vote): {accuracy}\n" in printed
    assert f"vote agrees with sklearn predict: {agreement} of rows" in printed
    doc = json.loads(out.read_text())
    assert [f["name"] for f in doc["features"]] == names
    assert doc["classes"] == ["setosa", "versicolor", "virginica"]
    # An extra column is neither a feature nor the labels once --target names them.
    assert main(["import", "--model", str(path), "--out", str(out), "--data", str(data),
                 "--target", "pw"]) == 2
    assert "--target 'pw' is a feature of the model" in capsys.readouterr().err
    missing = _write_csv(tmp_path / "missing.csv", ["sl", "pw", "species"], [[1, 2, "setosa"]])
    assert main(["import", "--model", str(path), "--out", str(out), "--data",
                 str(missing)]) == 2
    assert "no column for the model's feature(s) 'sw', 'pl'" in capsys.readouterr().err


def _model_file(tmp_path, name, obj):
    path = tmp_path / name
    joblib.dump(obj, path)
    return path


def _text_file(tmp_path, name):
    path = tmp_path / name
    path.write_text("hello")
    return path


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "absent.joblib", "absent.joblib: no such file"),
    (lambda p: p, "is a directory"),
    (lambda p: _text_file(p, "text.pkl"), "text.pkl: not a pickle or joblib file of a model"),
    (lambda p: _model_file(p, "lr.joblib", LogisticRegression().fit([[0], [1]], [0, 1])),
     "cannot import a LogisticRegression: expected a fitted RandomForestClassifier, "
     "ExtraTreesClassifier, DecisionTreeClassifier or GradientBoostingClassifier"),
    (lambda p: _model_file(p, "unfitted.joblib", ExtraTreesClassifier()),
     "cannot import an unfitted ExtraTreesClassifier: fit it first"),
    (lambda p: _model_file(p, "pipe.joblib", make_pipeline(
        StandardScaler(), DecisionTreeClassifier()).fit([[0], [1]], [0, 1])),
     "cannot import a Pipeline"),
])
def test_import_errors_exit_2_with_one_message(tmp_path, capsys, make, message):
    path = make(tmp_path)
    out = tmp_path / "f.forest.json"
    assert main(["import", "--model", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_import_checks_rows_by_position_and_range(tmp_path, capsys):
    model = DecisionTreeClassifier(random_state=0).fit([[0, 0], [1, 1], [2, 0]], [0, 1, 1])
    path = _model_file(tmp_path, "m.joblib", model)
    out = tmp_path / "f.forest.json"
    wide = _write_csv(tmp_path / "wide.csv", ["a", "b", "c", "d"], [[1, 2, 3, 4]])
    assert main(["import", "--model", str(path), "--out", str(out), "--data", str(wide)]) == 2
    assert "4 feature columns for a model of 2 features" in capsys.readouterr().err
    big = _write_csv(tmp_path / "big.csv", ["a", "b", "y"], [[1, 0, 1], [1e39, 0, 0]])
    assert main(["import", "--model", str(path), "--out", str(out), "--data", str(big)]) == 2
    assert "big.csv, line 3, column 'a': 1e+39 is beyond the finite float32 range" in \
        capsys.readouterr().err
    strange = _write_csv(tmp_path / "strange.csv", ["a", "b", "y"], [[1, 0, "p"], [2, 0, "q"]])
    assert main(["import", "--model", str(path), "--out", str(out), "--data",
                 str(strange)]) == 2
    assert "no label is a class of the model (0, 1); is it the label column?" in \
        capsys.readouterr().err
    floats = _write_csv(tmp_path / "floats.csv", ["a", "b", "y"], [[0, 0, "0.0"], [2, 0, "1.0"]])
    assert main(["import", "--model", str(path), "--out", str(out), "--data",
                 str(floats)]) == 0
    assert "accuracy (exact soft vote): 100.00%" in capsys.readouterr().out


def test_train_rejects_values_beyond_float32(tmp_path, capsys):
    path = _write_csv(tmp_path / "d.csv", ["a", "target"],
                      [[1, 0], [2, 1], [3, 0], ["-inf", 1]])
    assert main(["train", "--data", str(path), "--out", str(tmp_path / "f.json")]) == 2
    assert "d.csv, line 5, column 'a': -inf is beyond the finite float32 range" in \
        capsys.readouterr().err


# --- --help -----------------------------------------------------------------------------------


def _parsers(parser, prefix=()):
    """Every parser of the command line with its command words."""
    yield prefix, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*prefix, name))


def test_help_gives_every_option_a_meaning_and_its_default():
    from rfcircuits.cli.main import build_parser

    seen = set()
    for words, parser in _parsers(build_parser()):
        seen.add(" ".join(words))
        shown = "".join(parser.format_help().split())
        for action in parser._actions:
            if not action.option_strings:
                continue
            name = f"{' '.join(words)} {action.option_strings[-1]}"
            assert action.help and action.help.strip(), f"{name}: no help"
            text = parser._get_formatter()._expand_help(action)
            assert "".join(text.split()) in shown, name
            default = action.default
            if default is None or default is False or default == argparse.SUPPRESS:
                continue
            if "default" in action.help.lower():  # stated in words
                continue
            assert text.endswith(f"(default: {default})"), name
    assert {"train", "import", "compile", "explain", "demo", "bench", "crosscheck", "fuzz",
            "mutate", "verify", "verify-pyxai", "corpus build", "corpus check"} <= seen
