"""XGBoost and LightGBM classifiers imported as forests of soft votes (issue 43): the exact
decision is the library's ``predict`` on every row, near ties are flagged where the library's
float rounding decides, and what is not modelled is refused by name."""

from __future__ import annotations

import json
import math

import joblib
import numpy as np
import pytest
import sklearn.datasets

from rfcircuits.errors import InputError
from rfcircuits.forest import forest_from_json
from rfcircuits.sklearn_import import instances_from_values

XGBOOST = pytest.mark.needs("xgboost")
LIGHTGBM = pytest.mark.needs("lightgbm")


def data(load):
    return getattr(sklearn.datasets, f"load_{load}")(return_X_y=True)


def decisions(forest, X):
    """The forest's exact decisions on raw rows, as class indices, and its near ties."""
    rows = instances_from_values(forest, X)
    return [forest.decision(x) for x in rows], [forest.near_tie(x) for x in rows]


def assert_round_trip(forest):
    from tests.test_formats import assert_valid

    doc = json.loads(json.dumps(forest.to_json()))
    assert_valid("forest", doc)
    assert forest_from_json(doc) == forest


@XGBOOST
@pytest.mark.parametrize("load, objective", [
    ("breast_cancer", "binary:logistic"), ("breast_cancer", "binary:hinge"),
    ("wine", "multi:softprob"), ("iris", "multi:softprob"), ("wine", "multi:softmax")])
def test_xgboost_decides_as_predict(load, objective):
    """Every row, binary and multi-class: the exact decision is ``predict``'s; the forest
    reads inputs as float32, says it sums in float32, and survives its file."""
    import xgboost

    from rfcircuits.boosted_import import forest_from_xgboost

    X, y = data(load)
    model = xgboost.XGBClassifier(n_estimators=20, max_depth=3, random_state=0,
                                  objective=objective).fit(X, y)
    forest = forest_from_xgboost(model)
    assert (forest.input_dtype, forest.sum_dtype, forest.voting) == ("float32", "float32", "soft")
    assert len(forest.trees) == 20 * (1 if objective.startswith("binary") else len(set(y)))
    decided, near = decisions(forest, X)
    assert decided == model.predict(X).tolist()
    assert not any(near)
    assert_round_trip(forest)
    # The same from the model's JSON document, and from its booster.
    document = json.loads(model.get_booster().save_raw("json"))
    assert forest_from_xgboost(document) == forest_from_xgboost(model.get_booster()) == forest


@XGBOOST
@LIGHTGBM
def test_the_api_imports_boosted_classifiers_as_predict_decides():
    import lightgbm
    import xgboost

    import rfcircuits

    X, y = data("iris")
    names = [f"f{i}" for i in range(X.shape[1])]
    for model, make in ((xgboost.XGBClassifier(n_estimators=5, max_depth=2, random_state=0),
                         rfcircuits.from_xgboost),
                        (lightgbm.LGBMClassifier(n_estimators=5, max_depth=2, random_state=0,
                                                 verbose=-1), rfcircuits.from_lightgbm)):
        model.fit(X, y)
        forest = make(model, feature_names=names, class_names=["a", "b", "c"])
        assert forest.voting == "soft" and [f.name for f in forest.features] == names
        assert forest.classes == ("a", "b", "c")
        explainer = rfcircuits.Explainer(forest)
        assert [e.decision for e in explainer.explain_many(X[::10], what=[])] == \
            model.predict(X[::10]).tolist()


@XGBOOST
def test_xgboost_margins_are_its_float32_sums_in_tree_order():
    """The leaves and the initial margin are XGBoost's own float32 numbers: added in float32,
    tree by tree, they give its ``output_margin`` bit for bit (so the near-tie bound is about
    the summation alone)."""
    import xgboost

    from rfcircuits.boosted_import import forest_from_xgboost

    X, y = data("wine")
    model = xgboost.XGBClassifier(n_estimators=20, max_depth=3, random_state=0).fit(X, y)
    forest = forest_from_xgboost(model)
    margins = model.predict(X, output_margin=True)
    for x, expected in zip(instances_from_values(forest, X), margins):
        sums = np.asarray(forest.init, dtype=np.float32)
        for tree in forest.trees:
            sums = sums + np.asarray(tree.nodes[tree.leaf(x)].weights, dtype=np.float32)
        assert sums.tolist() == expected.tolist()


@XGBOOST
def test_xgboost_splits_as_x_below_its_float32_condition():
    """Rows placed exactly on every split condition, one float32 either side, and float64
    values that round onto the condition: ``x < c`` in float32 decides, as in XGBoost."""
    import xgboost

    from rfcircuits.boosted_import import forest_from_xgboost

    X, y = data("breast_cancer")
    model = xgboost.XGBClassifier(n_estimators=5, max_depth=2, random_state=0).fit(X, y)
    forest = forest_from_xgboost(model)
    doc = json.loads(model.get_booster().save_raw("json"))
    rows = []
    for tree in doc["learner"]["gradient_booster"]["model"]["trees"]:
        for f, c, left in zip(tree["split_indices"], tree["split_conditions"],
                              tree["left_children"]):
            if left < 0:
                continue
            c32 = np.float32(c)
            for v in (c32, np.nextafter(c32, np.float32(-np.inf)),
                      np.nextafter(c32, np.float32(np.inf))):
                for nudge in (0.0, 1e-9 * abs(float(v))):  # still rounds to v in float32
                    row = X[0].copy()
                    row[f] = float(v) - nudge
                    rows.append(row)
    rows = np.asarray(rows)
    assert decisions(forest, rows)[0] == model.predict(rows).tolist()


def _xgboost_document(n_trees, leaves, base_score="[5E-1]"):
    """A one-feature binary:logistic model document of ``n_trees`` one-leaf trees (fitted,
    then rewritten): tree ``t``'s leaf is ``leaves[t]``, the base score 1/2 (margin 0)."""
    import xgboost

    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    model = xgboost.XGBClassifier(n_estimators=n_trees, max_depth=1, min_child_weight=100,
                                  random_state=0).fit(X, [0, 1, 0, 1])
    doc = json.loads(model.get_booster().save_raw("json"))
    trees = doc["learner"]["gradient_booster"]["model"]["trees"]
    assert all(t["left_children"] == [-1] for t in trees)
    for tree, value in zip(trees, leaves):
        tree["split_conditions"] = tree["base_weights"] = [value]
    doc["learner"]["learner_model_param"]["base_score"] = base_score
    booster = xgboost.Booster()
    booster.load_model(bytearray(json.dumps(doc).encode()))
    return doc, booster


@XGBOOST
@pytest.mark.parametrize("leaves", [
    [2.0 ** -25],  # an exact margin > 0: its float32 sigmoid is 1/2, class 0
    [1024.0, 2.0 ** -14, 2.0 ** -14, -1024.0],  # float32 loses both halves of an ulp: 0
])
def test_xgboost_near_ties_are_where_its_rounding_decides(leaves):
    """Two exact margins above 0 (class 1) that XGBoost decides as class 0: by its sigmoid's
    rounding, and by its float32 sum; both are flagged, the exact decision kept."""
    import xgboost

    from rfcircuits.boosted_import import forest_from_xgboost

    doc, booster = _xgboost_document(len(leaves), leaves)
    forest = forest_from_xgboost(doc)
    assert forest.init == (0.0, 0.0)
    X = np.array([[1.5]])
    assert booster.predict(xgboost.DMatrix(X)).tolist() == [0.5]  # class 0 by predict's > 0.5
    decided, near = decisions(forest, X)
    assert decided == [1] and near == [True]
    # Away from the tie, the same trees decide as XGBoost and are not flagged.
    doc, booster = _xgboost_document(len(leaves), [v + 0.25 for v in leaves])
    forest = forest_from_xgboost(doc)
    assert decisions(forest, X) == ([1], [False]) and booster.predict(xgboost.DMatrix(X)) > 0.5


@XGBOOST
def test_xgboost_initial_margin_is_the_float32_logit_of_base_score():
    import xgboost

    from rfcircuits.boosted_import import forest_from_xgboost

    X, y = data("breast_cancer")
    for base_score in (0.3, 0.5, 0.62741, 1e-9):
        model = xgboost.XGBClassifier(n_estimators=2, max_depth=1, base_score=base_score)
        forest = forest_from_xgboost(model.fit(X, y))
        p = min(max(np.float32(base_score), np.float32(1e-6)), np.float32(1 - 1e-6))
        assert forest.init[0] == 0.0
        assert math.isclose(forest.init[1], math.log(p / (1 - p)), rel_tol=1e-6)
        assert forest.init[1] == float(np.float32(forest.init[1]))
    model = xgboost.XGBClassifier(n_estimators=2, max_depth=1, objective="binary:hinge")
    doc = json.loads(model.fit(X, y).get_booster().save_raw("json"))
    stored = json.loads(doc["learner"]["learner_model_param"]["base_score"])[0]
    assert forest_from_xgboost(doc).init == (0.0, float(np.float32(stored)))  # as it is


@XGBOOST
def test_xgboost_early_stopping_imports_the_iterations_predict_uses():
    import xgboost

    from rfcircuits.boosted_import import forest_from_xgboost

    X, y = data("wine")
    model = xgboost.XGBClassifier(n_estimators=200, max_depth=3, learning_rate=0.5,
                                  early_stopping_rounds=3, random_state=0)
    model.fit(X[::2], y[::2], eval_set=[(X[1::2], y[1::2])], verbose=False)
    assert model.best_iteration + 1 < model.get_booster().num_boosted_rounds()
    forest = forest_from_xgboost(model)
    assert len(forest.trees) == 3 * (model.best_iteration + 1)
    assert decisions(forest, X)[0] == model.predict(X).tolist()


@XGBOOST
def test_xgboost_refusals_name_what_is_not_modelled():
    import pandas as pd
    import xgboost

    from rfcircuits.boosted_import import forest_from_xgboost

    X, y = data("breast_cancer")
    cases = [
        (xgboost.XGBClassifier(n_estimators=2, objective="binary:logitraw"), y,
         "objective 'binary:logitraw': expected one of binary:logistic"),
        (xgboost.XGBRegressor(n_estimators=2), y, "objective 'reg:squarederror'"),
        (xgboost.XGBClassifier(n_estimators=2, booster="dart"), y, "'dart' booster"),
        (xgboost.XGBClassifier(n_estimators=2, booster="gblinear"), y, "'gblinear' booster"),
        (xgboost.XGBClassifier(n_estimators=2, multi_strategy="multi_output_tree"),
         y + (X[:, 0] > 15), "vector leaves"),
    ]
    for model, target, message in cases:
        with pytest.raises(InputError, match=message):
            forest_from_xgboost(model.fit(X, target))
    frame = pd.DataFrame({"c": pd.Categorical(np.arange(len(y)) % 3), "x": X[:, 0]})
    target = (frame["c"].cat.codes == 1).to_numpy() ^ (X[:, 0] > 14)
    model = xgboost.XGBClassifier(n_estimators=2, enable_categorical=True, max_cat_to_onehot=1)
    with pytest.raises(InputError, match="node \\d+: a categorical split cannot be imported"):
        forest_from_xgboost(model.fit(frame, target))
    with pytest.raises(InputError, match="unfitted XGBClassifier"):
        forest_from_xgboost(xgboost.XGBClassifier())


@LIGHTGBM
@pytest.mark.parametrize("load", ["breast_cancer", "wine", "iris"])
def test_lightgbm_decides_as_predict(load):
    import lightgbm

    from rfcircuits.boosted_import import LightGBMFile, forest_from_lightgbm

    X, y = data(load)
    labels = np.array(["p", "q", "r"])[y]  # the classifier's own labels name the classes
    model = lightgbm.LGBMClassifier(n_estimators=20, max_depth=3, num_leaves=8,
                                    random_state=0, verbose=-1).fit(X, labels)
    forest = forest_from_lightgbm(model)
    assert forest.classes == tuple(model.classes_)
    assert (forest.input_dtype, forest.sum_dtype) == ("float64", "float64")
    decided, near = decisions(forest, X)
    assert [forest.classes[c] for c in decided] == model.predict(X).tolist()
    assert not any(near)
    assert_round_trip(forest)
    booster = model.booster_
    assert forest_from_lightgbm(booster.dump_model(), class_names=model.classes_) == forest
    # A booster read from its model file decides as the classifier.
    read = LightGBMFile(lightgbm.Booster(model_str=booster.model_to_string()))
    assert model.classes_[read.predict(X)].tolist() == model.predict(X).tolist()


@LIGHTGBM
def test_lightgbm_raw_scores_are_its_float64_sums():
    """``boost_from_average``'s initial score is in the first trees' leaves: summed in tree
    order from 0, the leaves give LightGBM's raw scores bit for bit."""
    import lightgbm

    from rfcircuits.boosted_import import forest_from_lightgbm

    X, y = data("breast_cancer")
    model = lightgbm.LGBMClassifier(n_estimators=20, max_depth=3, random_state=0,
                                    verbose=-1).fit(X, y)
    forest = forest_from_lightgbm(model)
    assert forest.init is None
    for x, expected in zip(instances_from_values(forest, X), model.predict(X, raw_score=True)):
        total = 0.0
        for tree in forest.trees:
            total += tree.nodes[tree.leaf(x)].weights[1]
        assert total == expected


def _lightgbm_model_text(lines):
    """A LightGBM binary model (one feature, as many one-split trees as ``lines``) whose
    tree ``t`` has the ``threshold=`` and ``leaf_value=`` lines ``lines[t]``."""
    import lightgbm

    X = np.repeat([[-2.0], [-1.0], [1.0], [2.0]], 10, axis=0)
    y = np.repeat([0, 1, 0, 1], 10)
    model = lightgbm.LGBMClassifier(n_estimators=len(lines), num_leaves=2, min_child_samples=1,
                                    learning_rate=1.0, verbose=-1).fit(X, y)
    out, t = [], -1
    for line in model.booster_.model_to_string().splitlines():
        if line.startswith("tree_sizes="):
            continue  # sizes of the trees as written; read without them
        t += line.startswith("Tree=")
        key = line.split("=", 1)[0]
        if key in ("threshold", "leaf_value"):
            line = f"{key}={lines[t][key]}"
        out.append(line)
    return "\n".join(out) + "\n"


@LIGHTGBM
def test_lightgbm_reads_inputs_within_1e_35_of_zero_as_zero():
    """Thresholds in LightGBM's zero band (at 0, below it, at its edges): every value around
    and inside the band decides as ``predict``, which reads those values as 0."""
    import lightgbm

    from rfcircuits.boosted_import import LIGHTGBM_ZERO, LightGBMFile, forest_from_lightgbm

    z = LIGHTGBM_ZERO
    thresholds = [0.0, 5e-36, -5e-36, z, -z, math.nextafter(z, 0), 1e-30]
    text = _lightgbm_model_text([{"threshold": repr(t), "leaf_value": "-1 1"}
                                 for t in thresholds])
    model = LightGBMFile(lightgbm.Booster(model_str=text))
    forest = forest_from_lightgbm(model)
    values = sorted({s * v for v in (0.0, 1e-36, 5e-36, z, math.nextafter(z, 1), 2e-35, 1e-30,
                                     1.0) for s in (1, -1)})
    X = np.array([[v] for v in values])
    expected = model.booster_.predict(X, raw_score=True)
    margins = [forest.votes(x)[1] / 2 ** forest.scale for x in instances_from_values(forest, X)]
    assert margins == expected.tolist()
    assert decisions(forest, X)[0] == model.predict(X).tolist()


@LIGHTGBM
def test_lightgbm_near_tie_where_its_float64_sum_decides():
    """1 + 2^-53 + 2^-53 - 1 is 2^-52 exactly (class 1), 0 in float64 (p = 1/2, class 0):
    flagged."""
    import lightgbm

    from rfcircuits.boosted_import import LightGBMFile, forest_from_lightgbm

    leaves = [1.0, 2.0 ** -53, 2.0 ** -53, -1.0]
    text = _lightgbm_model_text([{"threshold": "10", "leaf_value": f"{v!r} {v!r}"}
                                 for v in leaves])
    model = LightGBMFile(lightgbm.Booster(model_str=text))
    forest = forest_from_lightgbm(model)
    X = np.array([[0.0]])
    assert model.predict(X).tolist() == [0]
    assert decisions(forest, X) == ([1], [True])


@LIGHTGBM
def test_lightgbm_early_stopping_imports_the_iterations_predict_uses():
    """A booster kept whole after early stopping predicts with its best iteration, and
    ``dump_model()`` dumps that far."""
    import lightgbm

    from rfcircuits.boosted_import import LightGBMFile, forest_from_lightgbm

    X, y = data("wine")
    params = {"objective": "multiclass", "num_class": 3, "max_depth": 3, "learning_rate": 0.5,
              "seed": 0, "verbose": -1}
    booster = lightgbm.train(params, lightgbm.Dataset(X[::2], y[::2]), num_boost_round=200,
                             valid_sets=[lightgbm.Dataset(X[1::2], y[1::2])],
                             callbacks=[lightgbm.early_stopping(3, verbose=False)],
                             keep_training_booster=True)
    assert booster.best_iteration < booster.current_iteration()
    forest = forest_from_lightgbm(booster)
    assert len(forest.trees) == 3 * booster.best_iteration
    assert decisions(forest, X)[0] == LightGBMFile(booster).predict(X).tolist()


@LIGHTGBM
def test_lightgbm_refusals_name_what_is_not_modelled():
    import lightgbm
    import pandas as pd

    from rfcircuits.boosted_import import forest_from_lightgbm

    X, y = data("breast_cancer")
    three = y + (X[:, 0] > 15)
    small = {"n_estimators": 2, "num_leaves": 4, "verbose": -1}
    cases = [
        (lightgbm.LGBMClassifier(objective="multiclassova", **small), three,
         "objective 'multiclassova'"),
        (lightgbm.LGBMRegressor(**small), y, "objective 'regression'"),
        (lightgbm.LGBMClassifier(boosting_type="rf", bagging_freq=1, bagging_fraction=0.5,
                                 **small), y, "random forest"),
        (lightgbm.LGBMClassifier(linear_tree=True, **small), y, "linear trees"),
        (lightgbm.LGBMClassifier(zero_as_missing=True, **small), y, "zero_as_missing"),
        (lightgbm.LGBMClassifier(sigmoid=0.2, **small), y, "sigmoid 0.2 < 0.25"),
    ]
    for model, target, message in cases:
        with pytest.raises(InputError, match=message):
            forest_from_lightgbm(model.fit(np.where(X > 1, X, 0.0), target))
    frame = pd.DataFrame({"c": pd.Categorical(np.arange(len(y)) % 5), "x": X[:, 0]})
    target = np.isin(frame["c"].cat.codes, [1, 3]) ^ (X[:, 0] > 14)
    model = lightgbm.LGBMClassifier(min_data_per_group=5, cat_smooth=1, **small)
    with pytest.raises(InputError, match="categorical split \\('=='\\)"):
        forest_from_lightgbm(model.fit(frame, target))
    with pytest.raises(InputError, match="unfitted LGBMClassifier"):
        forest_from_lightgbm(lightgbm.LGBMClassifier())


@XGBOOST
@LIGHTGBM
def test_import_boosted_model_files_from_the_command_line(tmp_path, capsys):
    """XGBoost's JSON and UBJSON model files, LightGBM's text model file and its pickled
    classifier: 100% agreement with the library's predict, no near tie; LightGBM's
    dump_model() JSON imports but cannot predict."""
    import lightgbm
    import xgboost

    from rfcircuits.cli.main import main
    from rfcircuits.forest import load_forest

    bunch = sklearn.datasets.load_wine(as_frame=True)
    bunch.frame.to_csv(tmp_path / "rows.csv", index=False)
    xgb = xgboost.XGBClassifier(n_estimators=10, max_depth=2, random_state=0)
    xgb.fit(bunch.data, bunch.target)
    lgb = lightgbm.LGBMClassifier(n_estimators=10, max_depth=2, random_state=0, verbose=-1)
    lgb.fit(bunch.data, bunch.target)
    xgb.save_model(tmp_path / "m.json")
    xgb.save_model(tmp_path / "m.ubj")
    lgb.booster_.save_model(tmp_path / "m.txt")
    joblib.dump(lgb, tmp_path / "m.joblib")
    (tmp_path / "dump.json").write_text(json.dumps(lgb.booster_.dump_model()))
    for name, kind, library in [("m.json", "XGBClassifier", "xgboost"),
                                ("m.ubj", "XGBClassifier", "xgboost"),
                                ("m.txt", "LightGBM Booster", "lightgbm"),
                                ("m.joblib", "LGBMClassifier", "lightgbm")]:
        out = tmp_path / f"{name}.forest.json"
        assert main(["import", "--model", str(tmp_path / name), "--out", str(out), "--data",
                     str(tmp_path / "rows.csv"), "--target", "target"]) == 0
        printed = capsys.readouterr().out
        assert f"{name} ({kind}): 30 trees, depth 2" in printed
        assert f"vote agrees with {library} predict: 100.00% of rows" in printed
        assert "could decide them): 0 rows" in printed
        forest = load_forest(out)
        assert forest.voting == "soft"
        assert [f.name for f in forest.features] == list(bunch.data.columns)
    out = tmp_path / "dump.forest.json"
    assert main(["import", "--model", str(tmp_path / "dump.json"), "--out", str(out)]) == 0
    assert load_forest(out) == load_forest(tmp_path / "m.txt.forest.json")
    capsys.readouterr()
    for args, message in [
        (["--model", str(tmp_path / "dump.json"), "--data", str(tmp_path / "rows.csv")],
         "dump_model() file cannot predict"),
        (["--model", str(tmp_path / "m.json"), "--votes", "hard"],
         "the XGBClassifier decides by summed scores: import it with soft votes"),
        (["--model", str(tmp_path / "rows.csv")], "not a pickle or joblib file"),
    ]:
        assert main(["import", *args, "--out", str(tmp_path / "x.json")]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err


def test_a_model_file_of_a_missing_library_says_which(tmp_path, capsys, monkeypatch):
    import sys

    from rfcircuits.cli.main import main

    (tmp_path / "m.ubj").write_bytes(b"{}")
    (tmp_path / "m.txt").write_text("tree\nversion=v4\n")
    monkeypatch.setitem(sys.modules, "xgboost", None)  # import fails
    monkeypatch.setitem(sys.modules, "lightgbm", None)
    for name, library in [("m.ubj", "xgboost"), ("m.txt", "lightgbm")]:
        assert main(["import", "--model", str(tmp_path / name), "--out",
                     str(tmp_path / "f.json")]) == 2
        assert f"needs the {library} package (pip install 'rfcircuits[boost]')" in \
            capsys.readouterr().err


def hand_xgboost(objective="binary:logistic", num_class="0", **tree_fields):
    """An XGBoost JSON document written by hand: one tree on feature ``x``, left (-0.25)
    when ``x < 0.5``, else right (0.75); ``tree_fields`` replace the tree's fields."""
    tree = {"tree_param": {"size_leaf_vector": "1"}, "left_children": [1, -1, -1],
            "right_children": [2, -1, -1], "split_indices": [0, 0, 0],
            "split_conditions": [0.5, -0.25, 0.75], "split_type": [0, 0, 0], **tree_fields}
    return {"learner": {
        "objective": {"name": objective}, "attributes": {}, "feature_names": ["x"],
        "learner_model_param": {"num_feature": "1", "num_class": num_class,
                                "base_score": "[5E-1]"},
        "gradient_booster": {"name": "gbtree", "model": {
            "trees": [tree], "tree_info": [0], "iteration_indptr": [0, 1]}}}}


def hand_lightgbm(objective="binary sigmoid:1", **root_fields):
    """A LightGBM ``dump_model()`` dictionary written by hand: one tree on ``x``, left (-1)
    when ``x <= 0``, else right (1); ``root_fields`` replace the root's fields."""
    root = {"split_feature": 0, "threshold": 0.0, "decision_type": "<=",
            "missing_type": "None", "left_child": {"leaf_value": -1.0},
            "right_child": {"leaf_value": 1.0}, **root_fields}
    return {"objective": objective, "num_tree_per_iteration": 1, "feature_names": ["x"],
            "tree_info": [{"tree_structure": root}]}


def test_hand_written_documents_import_without_the_libraries():
    """The importers read the documents alone: XGBoost's ``x < 0.5`` is ``x <= `` the float32
    below 0.5, on float32 inputs (0.49999999999 rounds to 0.5: right); LightGBM's ``x <= 0``
    is ``x <= 1e-35`` (its API reads tiny values as 0)."""
    from rfcircuits.boosted_import import LIGHTGBM_ZERO, forest_from_lightgbm, forest_from_xgboost

    forest = forest_from_xgboost(hand_xgboost())
    below = float(np.nextafter(np.float32(0.5), np.float32(0)))
    assert forest.features[0].thresholds == (below,) and forest.init == (0.0, 0.0)
    X = np.array([[0.5], [below], [0.49999999999], [0.4999999]])
    assert decisions(forest, X) == ([1, 0, 1, 0], [False] * 4)
    assert_round_trip(forest)
    forest = forest_from_lightgbm(hand_lightgbm())
    assert forest.features[0].thresholds == (LIGHTGBM_ZERO,) and forest.input_dtype == "float64"
    assert decisions(forest, np.array([[1e-36], [2e-35], [-1.0]]))[0] == [0, 1, 0]


@pytest.mark.parametrize("make, message", [
    (lambda: {"learner": {}}, "missing field 'objective'"),
    (lambda: {**hand_xgboost(), "learner": {**hand_xgboost()["learner"], "learner_model_param": {
        "num_feature": "1", "num_class": "0", "base_score": "[x]"}}},
     "field 'base_score' must hold float numbers, not '\\[x\\]'"),
    (lambda: hand_xgboost(left_children=[1, 0, -1], right_children=[2, 2, -1]),
     "reached twice: not a tree"),
    (lambda: hand_xgboost(left_children=[1, -1]), "lists of integers"),
    (lambda: hand_xgboost(split_indices=[3, 0, 0]), "feature index 3 out of range"),
    (lambda: hand_xgboost(split_type=[1, 0, 0]), "node 0: a categorical split"),
    (lambda: hand_xgboost("multi:softprob", num_class="0"), "tree_info must give each"),
    (lambda: hand_xgboost("reg:squarederror"), "objective 'reg:squarederror'"),
    (lambda: {**hand_xgboost(), "learner": {**hand_xgboost()["learner"],
                                            "attributes": {"best_iteration": "7"}}},
     "best_iteration '7' is not an iteration"),
    (lambda: hand_lightgbm("binary sigmoid:x"), "sigmoid is no number"),
    (lambda: hand_lightgbm("lambdarank"), "objective 'lambdarank'"),
    (lambda: hand_lightgbm(decision_type="=="), "categorical split \\('=='\\)"),
    (lambda: hand_lightgbm(split_feature=2), "feature index 2 out of range"),
    (lambda: hand_lightgbm(left_child={"leaf_count": 3}), "missing field 'leaf_value'"),
    (lambda: hand_lightgbm(missing_type="Zero"), "zero_as_missing"),
])
def test_malformed_or_unmodelled_documents_are_refused_by_name(make, message):
    from rfcircuits.boosted_import import forest_from_model

    with pytest.raises(InputError, match=message):
        forest_from_model(make())
