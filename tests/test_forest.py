"""Forest model: JSON round trip, validation messages, instances, votes and tie policies."""

from __future__ import annotations

import copy
import json
import math
import random

import pytest

from rfcircuits.errors import InputError
from rfcircuits.forest import (Feature, Forest, forest_from_json, instance_to_json,
                               interval_names, load_forest, parse_instance,
                               read_value, save_forest)
from rfcircuits.inputs import read_instances
from rfcircuits.crosscheck.differential.spec_examples import SUSAN, SUSAN_FOREST
from rfcircuits.crosscheck.differential.strategies import random_forest


def susan() -> dict:
    return copy.deepcopy(SUSAN_FOREST)


def test_round_trip_random_forests(tmp_path):
    for seed in range(200):
        forest = random_forest(random.Random(seed))
        path = tmp_path / "f.forest.json"
        save_forest(forest, path)
        assert load_forest(path) == forest
        assert forest_from_json(json.loads(path.read_text())).to_json() == forest.to_json()


def test_interval_state_names():
    assert interval_names([0.5, 2.5]) == ("(-inf,0.5]", "(0.5,2.5]", "(2.5,+inf)")
    assert interval_names([]) == ("(-inf,+inf)",)
    f = Feature.numeric("x", [2.5, 0.5])
    # goes-left rule: t_i < v <= t_{i+1}
    assert [f.state_of_value(v) for v in (-3, 0.5, 0.50001, 2.5, 2.6)] == [0, 0, 1, 1, 2]


def bad(doc: dict, message: str) -> None:
    with pytest.raises(InputError) as info:
        forest_from_json(doc, source="f.json")
    assert message in str(info.value), str(info.value)
    assert str(info.value).startswith("f.json: ")


def test_validation_messages():
    doc = susan()
    doc["trees"][0]["nodes"][2]["feature"] = "Height"
    bad(doc, "tree 0, node 2: unknown feature 'Height'")
    doc = susan()
    doc["trees"][0]["nodes"][4]["branches"][1][0] = [4]
    bad(doc, "tree 0, node 4, branch 1: state index 4 out of range for feature 'BType'")
    doc = susan()
    doc["trees"][0]["nodes"][5]["branches"][1][0] = [1, 2, 3]
    bad(doc, "tree 0, node 5, branch 1: states {B} of 'BType' appear in more than one branch")
    doc = susan()
    doc["trees"][0]["nodes"][5]["branches"][1][0] = [2]
    bad(doc, "tree 0, node 5: branches on 'BType' cover {A, B, AB} but the states feasible "
             "there are {A, B, AB, O}")
    doc = susan()
    doc["trees"][0]["nodes"][4]["branches"][1][1] = 2
    bad(doc, "tree 0, node 4: branch 1 closes a cycle")
    doc = susan()
    doc["trees"][0]["nodes"][1] = {"class": "maybe"}
    bad(doc, "tree 0, node 1: unknown class 'maybe'")
    doc = susan()
    del doc["trees"][0]["nodes"][0]["branches"]
    bad(doc, "tree 0, node 0: missing field 'branches'")
    doc = susan()
    doc["features"][0]["states"] = "young"
    bad(doc, "feature 'Age': field 'states' must be a list, not str")
    doc = susan()
    doc["trees"][0]["nodes"][0]["branches"][0][1] = 9
    bad(doc, "tree 0, node 0, branch 0: child 9 is not a node of the tree")
    doc = susan()
    doc["trees"][0]["nodes"].append({"class": "no"})
    bad(doc, "tree 0, node 6: not reachable from the root")
    doc = susan()
    doc["format"] = "other/1"
    bad(doc, "field 'format' must be 'rfcircuits.forest/1'")
    doc = susan()
    doc["features"][1]["name"] = "Age"
    bad(doc, "features: name 'Age' appears twice")
    doc = susan()
    doc["trees"][0]["nodes"][0]["branches"][0][0] = [True]
    bad(doc, "state indices must be integers, found True")
    doc = susan()
    states = doc["trees"][0]["nodes"][4]["branches"][1][0]
    states.append(states[0])
    bad(doc, f"tree 0, node 4, branch 1: state index {states[0]} listed twice")


def test_retest_must_use_feasible_states_only():
    doc = {"format": "rfcircuits.forest/1", "classes": ["a", "b"],
           "features": [{"name": "x", "thresholds": [1.0, 2.0]}],
           "trees": [{"nodes": [{"feature": "x", "branches": [[[0, 1], 1], [[2], 2]]},
                                {"feature": "x", "branches": [[[0], 2], [[1, 2], 3]]},
                                {"class": "a"}, {"class": "b"}]}]}
    bad(doc, "tree 0, node 1: branches on 'x' cover {(-inf,1.0], (1.0,2.0], (2.0,+inf)} but the "
             "states feasible there are {(-inf,1.0], (1.0,2.0]}")
    doc["trees"][0]["nodes"][1]["branches"][1][0] = [1]
    assert forest_from_json(doc).trees[0].vote((1,)) == 1


def test_dag_with_different_feasible_sets_is_rejected():
    # Node 2 tests x and is reached with x ∈ {0} and with x ∈ {1, 2}.
    doc = {"format": "rfcircuits.forest/1", "classes": ["a", "b"],
           "features": [{"name": "x", "states": ["p", "q", "r"]}],
           "trees": [{"nodes": [{"feature": "x", "branches": [[[0], 1], [[1, 2], 1]]},
                                {"feature": "x", "branches": [[[0], 2], [[1, 2], 3]]},
                                {"class": "a"}, {"class": "b"}]}]}
    bad(doc, "tree 0, node 1: branches on 'x' cover {p, q, r} but the states feasible there are")


def test_malformed_files(tmp_path):
    path = tmp_path / "f.json"
    path.write_text("{not json")
    with pytest.raises(InputError, match=r"f.json: invalid JSON at line 1, column 2"):
        load_forest(path)
    with pytest.raises(InputError, match="no such file"):
        load_forest(tmp_path / "missing.json")


def test_instances():
    forest = forest_from_json(susan())
    x = parse_instance(forest, SUSAN)
    assert x == (1, 0, 0)
    assert instance_to_json(forest, x) == {"Age": ">=55", "Weight": "over", "BType": "A"}
    with pytest.raises(InputError, match="missing feature 'Weight'"):
        parse_instance(forest, {"Age": ">=55", "BType": "A"})
    with pytest.raises(InputError, match="unknown feature 'Height'"):
        parse_instance(forest, {**SUSAN, "Height": "tall"})
    with pytest.raises(InputError, match="'C' is not a state name"):
        parse_instance(forest, {**SUSAN, "BType": "C"})
    with pytest.raises(InputError, match="expected a state name, not 3"):
        parse_instance(forest, {**SUSAN, "BType": 3})
    numeric = forest_from_json({"format": "rfcircuits.forest/1", "classes": ["a", "b"],
                                "features": [{"name": "x", "thresholds": [0.5, 2.5]}],
                                "trees": [{"nodes": [{"class": "a"}]}]})
    assert parse_instance(numeric, {"x": 1.7}) == (1,)
    assert parse_instance(numeric, {"x": "(2.5,+inf)"}) == (2,)
    with pytest.raises(InputError, match="NaN is not a value"):
        parse_instance(numeric, {"x": float("nan")})
    with pytest.raises(InputError, match="expected a number or an interval state name, not true"):
        parse_instance(numeric, {"x": True})
    with pytest.raises(InputError, match="'big' is not an interval state name or a number"):
        parse_instance(numeric, {"x": "big"})


NUMERIC = {"format": "rfcircuits.forest/1", "classes": ["a", "b"],
           "features": [{"name": "x", "thresholds": [0.1, 2.5]}],
           "trees": [{"nodes": [{"class": "a"}]}]}


def test_input_dtype_is_written_only_for_float32(tmp_path):
    plain = forest_from_json(NUMERIC)
    assert plain.input_dtype == "float64" and "input_dtype" not in plain.to_json()
    assert forest_from_json({**NUMERIC, "input_dtype": "float64"}) == plain
    f32 = forest_from_json({**NUMERIC, "input_dtype": "float32"})
    assert f32.input_dtype == "float32" and f32 != plain
    path = tmp_path / "f.forest.json"
    save_forest(f32, path)
    assert json.loads(path.read_text())["input_dtype"] == "float32"
    assert load_forest(path) == f32
    for value, problem in (("float16", "field 'input_dtype' must be one of 'float64', "
                                       "'float32', not 'float16'"),
                           (32, "field 'input_dtype' must be a string, not int")):
        bad({**NUMERIC, "input_dtype": value}, f"forest: {problem}")
    with pytest.raises(InputError, match="input_dtype: 'float16' is not one of"):
        Forest(plain.features, plain.classes, plain.trees, "float16")


def test_float32_forests_round_raw_numbers_first():
    plain = forest_from_json(NUMERIC)
    f32 = forest_from_json({**NUMERIC, "input_dtype": "float32"})
    # float32(0.1) = 0.10000000149... lies above the threshold 0.1; 0.09999999 rounds below it.
    assert parse_instance(plain, {"x": 0.1}) == (0,)
    assert parse_instance(f32, {"x": 0.1}) == (1,)
    assert parse_instance(plain, {"x": 0.09999999}) == parse_instance(f32, {"x": 0.09999999})
    assert parse_instance(plain, {"x": 1e39}) == parse_instance(plain, {"x": math.inf}) == (2,)
    for value in (1e39, -1e39, math.inf, -math.inf):
        with pytest.raises(InputError, match=r"line 4, feature 'x': .* beyond the finite "
                                             r"float32 range"):
            parse_instance(f32, {"x": value}, "i.jsonl, line 4")
    for forest in (plain, f32):
        with pytest.raises(InputError, match="feature 'x': NaN is not a value"):
            parse_instance(forest, {"x": math.nan})
        with pytest.raises(InputError, match="feature 'x': int too large"):
            parse_instance(forest, {"x": 10 ** 400})
    assert read_value(3.4028235e38 * (1 + 2 ** -26), "float32") == 3.4028234663852886e38


def test_load_instances_names_the_line(tmp_path):
    forest = forest_from_json(susan())
    path = tmp_path / "i.jsonl"
    path.write_text(json.dumps(SUSAN) + "\n\n" + '{"Age": "old"}\n')
    with pytest.raises(InputError, match=r"i.jsonl, line 3: unknown feature|i.jsonl, line 3: missing"):
        read_instances(path, forest)


def test_tie_policies():
    doc = {"format": "rfcircuits.forest/1", "classes": ["a", "b", "c"],
           "features": [{"name": "x", "states": ["p", "q"]}],
           "trees": [{"nodes": [{"class": "b"}]}, {"nodes": [{"class": "c"}]},
                     {"nodes": [{"feature": "x", "branches": [[[0], 1], [[1], 2]]},
                                {"class": "a"}, {"class": "c"}]}]}
    forest = forest_from_json(doc)
    assert forest.votes((0,)) == [1, 1, 1]
    assert forest.classes_of((0,), "first") == [0]
    assert forest.classes_of((0,), "all") == [0, 1, 2]
    assert forest.decision((0,)) == 0
    assert forest.votes((1,)) == [0, 1, 2]
    assert forest.classes_of((1,), "all") == [2] == forest.classes_of((1,), "first")
