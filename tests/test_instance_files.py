"""Instances from CSV files, ``explain --format text`` and ``import --class-names``: what a
user with their own model and rows reaches first (docs/formats.md#instances)."""

from __future__ import annotations

import json

import joblib
import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.ensemble import RandomForestClassifier

from rfcircuits import Explainer, from_sklearn
from rfcircuits.cli.main import main
from rfcircuits.crosscheck.differential.spec_examples import SUSAN_FOREST
from rfcircuits.errors import InputError
from rfcircuits.forest import forest_from_json, instance_to_json, load_forest
from rfcircuits.inputs import read_instances
from tests.test_cli import _write_csv

NAMES = ["sepal_length", "sepal_width", "petal_length", "petal_width"]


@pytest.fixture(scope="module")
def iris_model():
    iris = load_iris()
    return RandomForestClassifier(n_estimators=7, max_depth=3, random_state=0).fit(
        iris.data, iris.target), iris


def test_a_csv_gives_the_instances_its_rows_give_as_json_lines(iris_model, tmp_path):
    model, iris = iris_model
    forest = from_sklearn(model, feature_names=NAMES)
    rows = iris.data[::15]
    # the CSV's columns in another order, with the labels in the middle: matched by name
    order = [2, 0, 3, 1]
    header = [NAMES[k] for k in order[:2]] + ["species"] + [NAMES[k] for k in order[2:]]
    body = [[*(repr(float(r[k])) for k in order[:2]), str(y), *(repr(float(r[k]))
                                                              for k in order[2:])]
            for r, y in zip(rows, iris.target[::15])]
    path = _write_csv(tmp_path / "rows.csv", header, body)
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text("".join(json.dumps(dict(zip(NAMES, map(float, r)))) + "\n" for r in rows))
    assert read_instances(path, forest, target="species") == read_instances(jsonl, forest)
    # the states are where scikit-learn's trees put the values: the same hard-vote decisions
    votes = np.zeros((len(rows), 3), dtype=int)
    for tree in model.estimators_:
        votes[np.arange(len(rows)), tree.predict(rows).astype(int)] += 1
    assert [forest.decision(x) for x in read_instances(path, forest, "species")] == \
        votes.argmax(axis=1).tolist()


def test_a_csv_of_state_names_and_a_file_named_otherwise(tmp_path):
    forest = forest_from_json(SUSAN_FOREST)
    names = [f.name for f in forest.features]
    states = [[f.states[-1] for f in forest.features], [f.states[0] for f in forest.features]]
    expected = [tuple(f.n_states - 1 for f in forest.features), (0,) * len(names)]
    assert read_instances(_write_csv(tmp_path / "a.csv", names, states), forest) == expected
    # no suffix: read by its first character, as CSV since it is not "{"
    assert read_instances(_write_csv(tmp_path / "rows", names, states), forest) == expected


@pytest.mark.parametrize("header, body, target, message", [
    (["sl", "sepal_width", "petal_length", "petal_width"], ["1", "2", "3", "4"], None,
     "line 1: the header does not name the forest's features: unknown 'sl'; missing "
     "'sepal_length'"),
    ([*NAMES, "species"], ["1", "2", "3", "4", "0"], None,
     "unknown 'species'; a label column is left out with --target COLUMN"),
    ([*NAMES, "species"], ["1", "2", "3", "4", "0"], "label",
     "no column named 'label' to leave out"),
    (NAMES, ["1", "", "3", "4"], None, "line 2, column 'sepal_width': missing value"),
    (NAMES, ["1", "wide", "3", "4"], None, "line 2, feature 'sepal_width': 'wide' is not an "
     "interval state name or a number"),
    (NAMES, ["1", "nan", "3", "4"], None, "line 2, feature 'sepal_width': NaN is not a value"),
    ([*NAMES[:3], "sepal_length"], ["1", "2", "3", "4"], None, "duplicate column names"),
])
def test_a_bad_csv_is_an_error_naming_line_and_column(iris_model, tmp_path, header, body, target,
                                                      message):
    forest = from_sklearn(iris_model[0], feature_names=NAMES)
    path = _write_csv(tmp_path / "bad.csv", header, [body])
    with pytest.raises(InputError, match="^" + str(path).replace(".", r"\.")) as caught:
        read_instances(path, forest, target)
    assert message in str(caught.value)


def test_target_names_a_csv_column_only(tmp_path):
    forest = forest_from_json(SUSAN_FOREST)
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(instance_to_json(forest, (0,) * len(forest.features))) + "\n")
    with pytest.raises(InputError, match="read as JSON Lines"):
        read_instances(path, forest, target="label")


@pytest.fixture
def user_project(iris_model, tmp_path):
    """What a data scientist has: a joblib model fitted on named columns and a CSV of rows
    with their labels."""
    import pandas as pd

    model, iris = iris_model
    frame = pd.DataFrame(iris.data, columns=NAMES)
    named = RandomForestClassifier(n_estimators=7, max_depth=3, random_state=0).fit(
        frame, iris.target)
    joblib.dump(named, tmp_path / "model.joblib")
    picked = [0, 50, 100, 120]
    _write_csv(tmp_path / "rows.csv", [*NAMES, "species"],
               [[*map(repr, iris.data[i].tolist()), iris.target[i]] for i in picked])
    return tmp_path, named, frame.iloc[picked]


def test_import_class_names_and_explain_a_csv_as_text(user_project, capsys):
    path, model, frame = user_project
    forest_file = path / "forest.json"
    assert main(["import", "--model", str(path / "model.joblib"), "--out", str(forest_file),
                 "--class-names", "setosa, versicolor,virginica", "--data",
                 str(path / "rows.csv"), "--target", "species"]) == 0
    out = capsys.readouterr().out
    assert "accuracy (exact soft vote): 100.00%" in out  # the labels 0/1/2 mapped to names
    assert "classes: 0 as 'setosa', 1 as 'versicolor', 2 as 'virginica'" in out
    forest = load_forest(forest_file)
    assert forest.classes == ("setosa", "versicolor", "virginica")
    assert main(["explain", "--forest", str(forest_file), "--instances", str(path / "rows.csv"),
                 "--target", "species", "--format", "text", "--what", "sr,robust,ce",
                 "--no-progress"]) == 0
    text = capsys.readouterr().out
    explainer = Explainer(forest)
    expected = [explainer.explain(row, what=("sr", "ce", "robust")) for _, row in
                frame.iterrows()]
    assert [e.decision for e in expected] == [int(c) for c in model.predict(frame)]
    blocks = [f"row {i + 1} of {len(expected)}\n{e.to_text(more='--format jsonl lists all')}"
              for i, e in enumerate(expected)]
    assert text == "\n\n".join(blocks) + "\n"
    assert "decision: virginica" in text and "to_text(" not in text


def _explain_command(path, capsys):
    """``explain`` of the project's rows.csv with its model imported as forest.json."""
    forest_file = path / "forest.json"
    assert main(["import", "--model", str(path / "model.joblib"), "--out", str(forest_file)]) == 0
    capsys.readouterr()
    return ["explain", "--forest", str(forest_file), "--instances", str(path / "rows.csv"),
            "--target", "species", "--no-progress"]


def test_explain_reads_the_csv_and_resume_needs_jsonl(user_project, capsys):
    path = user_project[0]
    common = _explain_command(path, capsys)
    assert main(common) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["decision"] for line in lines] == ["0", "1", "2", "2"]
    out = path / "out.txt"
    assert main([*common, "--format", "text", "--out", str(out), "--resume"]) == 2
    assert "--resume reads back the JSON lines" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("names", ["a,b", "a,a,b", "a,,b"])
def test_class_names_must_name_each_class_once(user_project, names, capsys):
    path, _, _ = user_project
    out = path / "f.json"
    assert main(["import", "--model", str(path / "model.joblib"), "--out", str(out),
                 "--class-names", names]) == 2
    assert "--class-names: expected 3 distinct names" in capsys.readouterr().err
    assert not out.exists()


def test_text_from_workers_is_the_serial_text(user_project, capsys):
    common = [*_explain_command(user_project[0], capsys), "--format", "text"]
    assert main(common) == 0
    serial = capsys.readouterr().out
    assert main([*common, "--jobs", "2"]) == 0
    assert capsys.readouterr().out == serial and serial.count("row ") == 4
