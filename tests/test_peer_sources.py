"""The forests and rows a peer is graded on (:mod:`rfcircuits.crosscheck.peers.grading`): the user's
forest file through a scikit-learn model built from it
(:mod:`rfcircuits.crosscheck.peers.sklearn_model`), the three routes of ``verify-peer`` and ``fuzz
--adapter`` and their errors, and :func:`~rfcircuits.crosscheck.peers.grading.grade_peer`. The model
is checked against the forest's own votes on every world, row origins against the files."""

from __future__ import annotations

import json
import random
from itertools import product

import joblib
import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier

from rfcircuits.cli.main import main
from rfcircuits.errors import InputError
from rfcircuits.forest import Feature, Forest, forest_from_json, instance_to_json
from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values
from rfcircuits.crosscheck.peers import fuzz as pf
from rfcircuits.crosscheck.peers.grading import grade_peer, load_forest_data
from rfcircuits.crosscheck.peers.sklearn_model import sklearn_from_forest
from rfcircuits.crosscheck.differential.strategies import Limits, random_forest, world_values

PEER = "tests.test_unreachable:Float64Peer"  # our engine, as a float64 reader would answer
# x1 is tested on a set of states that is no interval ({0, 2}), and a subtree is shared
FOREST = {
    "format": "rfcircuits.forest/1",
    "classes": ["no", "yes"],
    "features": [{"name": "x1", "thresholds": [0.5, 2.5, 4.0]}, {"name": "x2",
                                                                  "thresholds": [1.0]}],
    "trees": [
        {"nodes": [{"feature": "x1", "branches": [[[0, 2], 1], [[1, 3], 2]]},
                   {"feature": "x2", "branches": [[[0], 3], [[1], 4]]}, {"class": "no"},
                   {"class": "yes"}, {"class": "no"}]},
        {"nodes": [{"feature": "x2", "branches": [[[0], 1], [[1], 2]]}, {"class": "yes"},
                   {"class": "no"}]},
        {"nodes": [{"feature": "x1", "branches": [[[0, 1], 1], [[2, 3], 2]]}, {"class": "no"},
                   {"class": "yes"}]},
    ],
}


def _numeric(forest: Forest) -> Forest:
    """The forest with every categorical feature made numeric (thresholds 1.5, 2.5, ...): the
    same trees, whose branches on it are then sets of states that need not be intervals."""
    features = tuple(f if f.is_numeric else
                     Feature.numeric(f.name, [k + 1.5 for k in range(f.n_states - 1)])
                     for f in forest.features)
    return Forest(features, forest.classes, forest.trees)


def test_the_model_built_from_a_forest_decides_as_it_does_on_every_world():
    rng = random.Random(3)
    worlds = 0
    for _ in range(40):
        forest = _numeric(random_forest(rng, Limits(max_features=3, max_states=4,
                                                    max_trees=5, max_classes=3)))
        model = sklearn_from_forest(forest)
        every = list(product(*(range(f.n_states) for f in forest.features)))
        X = np.array([world_values(forest, w) for w in every])
        assert model.predict(X).tolist() == [forest.decision(w) for w in every]
        # read back (thresholds no tree tests are gone), it decides alike everywhere
        again = forest_from_sklearn(model, [f.name for f in forest.features],
                                    list(forest.classes))
        assert [again.decision(x) for x in instances_from_values(again, X)] == \
            [forest.decision(w) for w in every]
        worlds += len(every)
    assert worlds > 500


def test_forests_no_scikit_learn_model_can_follow_are_refused():
    categorical = forest_from_json({**FOREST, "features": [
        {"name": "x1", "states": ["a", "b", "c", "d"]}, {"name": "x2", "thresholds": [1.0]}]})
    with pytest.raises(InputError, match="feature .x1. is categorical: .*--model M --data D"
                                         ".*rfcircuits verify"):
        sklearn_from_forest(categorical)
    close = forest_from_json({**FOREST, "features": [
        {"name": "x1", "thresholds": [0.5, 0.5 + 1e-12, 4.0]},
        {"name": "x2", "thresholds": [1.0]}]})
    with pytest.raises(InputError, match="thresholds 0.5 and 0.500000000001 enclose no "
                                         "float32 value"):
        sklearn_from_forest(close)


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "forest.json").write_text(json.dumps(FOREST))
    forest = forest_from_json(FOREST)
    # numbers, and a state name (a value inside it is given to the peer)
    lines = [{"x1": 0.2, "x2": 0.5}, {"x1": "(0.5,2.5]", "x2": 3.0}, {"x1": 5.0, "x2": 0.0}]
    (tmp_path / "i.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    (tmp_path / "i.csv").write_text("x2,label,x1\n0.5,no,0.2\n3.0,yes,1.0\n")
    return tmp_path, forest


def test_a_forest_file_and_its_instances_are_what_the_peer_gets(files):
    path, forest = files
    data = load_forest_data(str(path / "forest.json"), str(path / "i.jsonl"))
    assert data.X[0].tolist() == [0.2, 0.5] and 0.5 < data.X[1][0] <= 2.5
    states = [(0, 0), (1, 1), (3, 0)]
    assert instances_from_values(data.forest, data.X) == states
    assert data.model.predict(data.X).tolist() == [forest.decision(x) for x in states]
    assert data.y_train.tolist() == [forest.decision(x) for x in states]  # labelled so
    assert [(o.index, o.where) for o in data.origins] == \
        [(i, f"{path / 'i.jsonl'}, line {i + 1}") for i in range(3)]
    csv = load_forest_data(str(path / "forest.json"), str(path / "i.csv"), "label")
    assert csv.X.tolist() == [[0.2, 0.5], [1.0, 3.0]]  # columns in the forest's order
    assert csv.origins[1].where == f"{path / 'i.csv'}, line 3"


def test_a_value_scikit_learn_reads_in_another_state_is_refused(files):
    path, _ = files
    # 0.1 as float32 is 0.10000000149: above a float64 threshold 0.1, below it as given
    doc = {**FOREST, "features": [{"name": "x1", "thresholds": [0.1, 2.5, 4.0]},
                                  {"name": "x2", "thresholds": [1.0]}]}
    (path / "forest.json").write_text(json.dumps(doc))
    (path / "i.jsonl").write_text('{"x1": 0.2, "x2": 0}\n{"x1": 0.1, "x2": 0}\n')
    with pytest.raises(InputError, match=r"i.jsonl, line 2, feature 'x1': 0.1 is in state "
                                         r"\(-inf,0.1\] as the forest reads it \(float64\) but "
                                         r"not as scikit-learn reads it"):
        load_forest_data(str(path / "forest.json"), str(path / "i.jsonl"))


def test_verify_peer_on_a_forest_file_explains_every_instance(files, capsys):
    path, forest = files
    args = ["verify-peer", "--adapter", PEER, "--forest", str(path / "forest.json"),
            "--instances", str(path / "i.jsonl"), "--no-progress"]
    assert main([*args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"] == 3 and doc["forest"] == str(path / "forest.json")
    report = doc["peers"][PEER]
    assert report["ok"] and {i["data_row"] for i in report["items"]} == {0, 1, 2}
    assert main([*args, "--pick", "margin", "--rows", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    votes = [sorted(forest.votes(x), reverse=True) for x in ((0, 0), (1, 1), (3, 0))]
    closest = min(range(3), key=lambda i: votes[i][0] - votes[i][1])
    assert doc["rows"] == 1 and {i["data_row"] for i in doc["peers"][PEER]["items"]} == \
        {closest}


@pytest.mark.parametrize("args, message", [
    ([], "give one of --dataset NAME, --model M --data D, or --forest F --instances I"),
    (["--dataset", "iris", "--forest", "f.json"], "(not --dataset and --forest)"),
    (["--model", "m.joblib"], "--model needs --data"),
    (["--forest", "f.json", "--data", "d.csv", "--instances", "i.jsonl"],
     "--data: not with --forest"),
    (["--forest", "f.json", "--instances", "i.jsonl", "--trees", "3"],
     "--trees/--depth: not with --forest"),
    (["--dataset", "iris", "--target", "y"], "--target: not with --dataset"),
    (["--dataset", "iris", "--instances", "3", "--rows", "3"], "--instances K is --rows K"),
])
def test_the_routes_are_checked(args, message, capsys):
    assert main(["verify-peer", "--adapter", PEER, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_fuzz_takes_the_users_forest_only_with_an_adapter(files, tmp_path, capsys):
    path, forest = files
    assert main(["fuzz", "--forest", str(path / "forest.json"), "--seconds", "1"]) == 2
    assert "--forest: only with --adapter NAME" in capsys.readouterr().err
    data = load_forest_data(str(path / "forest.json"), str(path / "i.jsonl"))
    summary = pf.peer_fuzz(pf_peer(), np.inf, 1, str(tmp_path / "out"), progress=False,
                           cases=4, data=data)
    assert summary.cases == 4 and pf.exit_code(summary) == 0 and not summary.failures
    # every case: data rows (near a tie, at random) and a world that is no data row
    source = pf.UserSource(data)
    for k in range(4):
        case = pf.make_user_case(source, 1, k)
        task = pf.build(case, pf.full_shape(case), 1.0)
        assert task.origins[0] == data.origins[source.near[k % len(source.near)]]
        worlds = [o for o in task.origins if o.index is None]
        assert worlds and worlds[0].where.startswith("a world near ")
        assert instances_from_values(forest, task.rows) == task.instances  # in their states
        assert case.rows[-1].tolist() != data.X.tolist()[source.near[k % len(source.near)]]


def pf_peer():
    from tests.test_unreachable import Float64Peer

    return Float64Peer()


def test_grade_peer_takes_each_route(files, tmp_path):
    path, forest = files
    by_file = grade_peer(PEER, forest=str(path / "forest.json"), rows=str(path / "i.jsonl"))
    by_object = grade_peer(pf_peer(), forest=forest,
                           rows=[{"x1": 0.2, "x2": 0.5}, {"x1": "(0.5,2.5]", "x2": 3.0},
                                 {"x1": 5.0, "x2": 0.0}])
    assert by_file.ok and by_object.ok and by_file.rows == by_object.rows == 3
    assert [i["item"] for i in by_file.items] == [i["item"] for i in by_object.items]
    model = RandomForestClassifier(n_estimators=3, random_state=0).fit(
        [[0, 0], [1, 1], [2, 0], [3, 1]], [0, 1, 1, 0])
    joblib.dump(model, tmp_path / "m.joblib")
    (tmp_path / "d.csv").write_text("x0,x1\n0,0\n3,1\n")
    array = grade_peer(PEER, model=model, rows=np.array([[0.0, 0.0], [3.0, 1.0]]))
    saved = grade_peer(PEER, model=str(tmp_path / "m.joblib"), rows=str(tmp_path / "d.csv"))
    assert array.to_json()["items"] == [{**i, "data_row": i["data_row"]} for i in
                                        saved.to_json()["items"]]
    dataset = grade_peer(PEER, dataset="iris", trees=2, depth=2, count=2, pick="margin")
    assert dataset.rows == 2
    with pytest.raises(InputError, match="give one of model=, forest= or dataset="):
        grade_peer(PEER, model=model, forest=forest, rows=[])
    with pytest.raises(InputError, match="model= needs rows="):
        grade_peer(PEER, model=model)
    assert [instance_to_json(forest, f.instance) for f in by_file.findings] == []


def test_a_value_beyond_float32_is_refused_with_its_place(files):
    path, _ = files
    (path / "i.jsonl").write_text('{"x1": 0.2, "x2": 1e39}\n')
    with pytest.raises(InputError, match=r"i.jsonl, line 1, feature 'x2': 1e\+39 is beyond "
                                         "the finite float32 range"):
        load_forest_data(str(path / "forest.json"), str(path / "i.jsonl"))


def test_an_adapter_option_goes_to_every_adapter_or_to_the_one_it_names(capsys):
    planted = "tests.test_promises:EngineSRs"
    args = ["verify-peer", "--dataset", "iris", "--trees", "3", "--depth", "2", "--rows", "3",
            "--adapter", f"{planted},{PEER}", "--json", "--no-progress"]
    assert main([*args, "--adapter-option", f"{planted}.fault=add-literal"]) == 1
    reports = json.loads(capsys.readouterr().out)["peers"]
    assert not reports[planted]["ok"] and reports[PEER]["ok"]  # the fault is EngineSRs' only
    assert main([*args, "--adapter-option", "fault=add-literal"]) == 2  # Float64Peer has none
    assert f"--adapter {PEER}: Float64Peer() takes no arguments" in capsys.readouterr().err
    assert main([*args, "--adapter-option", "rfxpl.path=/src"]) == 2
    assert "NAME.KEY=VALUE with NAME one of the adapters given (tests.test_promises:EngineSRs, " \
           f"{PEER}), not 'rfxpl.path=/src'" in capsys.readouterr().err
