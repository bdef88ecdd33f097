"""The Python API on ``import rfcircuits``: the documented examples run against the installed
package, every input form gives the explanation of the same instance, names and options are
checked, the votes are the scikit-learn trees' own, and the readable forms show names.

pandas is needed by these tests only (the ``test`` extra); the library never imports it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import get_args

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_iris
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
from sklearn.tree import DecisionTreeClassifier

import rfcircuits
from rfcircuits import Explainer, InputError
from rfcircuits.crosscheck.differential.spec_examples import SUSAN, SUSAN_FOREST, forest
from rfcircuits.explain import NR_METHODS, ROBUST_METHODS, SR_METHODS, Order, Ties
from rfcircuits.explanation import ALL_WHAT, WhatKey
from rfcircuits.featureorder import ORDERS
from rfcircuits.forest import TIES

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "docs" / "api.md", ROOT / "README.md"]
NAMES = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
IRIS = load_iris()


def python_blocks(path: Path) -> list[str]:
    """The ```python blocks of a Markdown file, in order."""
    return re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"),
                      flags=re.S | re.M)


#: Runs the blocks named in a JSON file in one namespace; with ``--no-pandas`` first makes
#: ``import pandas`` fail, as after a plain ``pip install .``.
RUNNER = """
import json, os, sys


class NoPandas:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "pandas":
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)


blocks, no_pandas = json.load(open(sys.argv[1], encoding="utf-8")), "--no-pandas" in sys.argv
if no_pandas:
    sys.meta_path.insert(0, NoPandas())
namespace = {"__name__": "__main__"}
for name, code in blocks:
    exec(compile(code, name, "exec"), namespace)
import rfcircuits
assert not os.path.abspath(rfcircuits.__file__).startswith(os.getcwd() + os.sep)
assert not no_pandas or "pandas" not in sys.modules
"""


def run_blocks(tmp_path: Path, blocks: list[tuple[str, str]], *flags: str) -> None:
    """Run ``blocks`` in a fresh interpreter whose working directory holds a ``core/``
    package that refuses to be imported: the examples must use the installed package."""
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "__init__.py").write_text(
        "raise ImportError('the working directory core/ was imported, not rfcircuits')\n")
    (tmp_path / "blocks.json").write_text(json.dumps(blocks), encoding="utf-8")
    (tmp_path / "run_blocks.py").write_text(RUNNER, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "run_blocks.py", "blocks.json", *flags],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_python_block_of_the_docs_runs_in_order(doc, tmp_path):
    blocks = python_blocks(doc)
    if not blocks:
        pytest.skip(f"{doc.name} has no python blocks")
    run_blocks(tmp_path, [(f"{doc.name} block {i + 1}", b) for i, b in enumerate(blocks)])


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_the_quick_start_needs_no_pandas(doc, tmp_path):
    blocks = python_blocks(doc)
    if not blocks:
        pytest.skip(f"{doc.name} has no python blocks")
    assert "from_sklearn" in blocks[0] and "print(" in blocks[0]
    run_blocks(tmp_path, [(f"{doc.name} block 1", blocks[0])], "--no-pandas")


def test_import_is_cheap_and_the_names_resolve():
    code = ("import sys, rfcircuits\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('numpy', 'sklearn', 'pandas') or m == 'rfcircuits.explain'))\n"
            "from rfcircuits import *\n"
            "print(BACKEND)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    loaded, backend = done.stdout.splitlines()
    assert loaded == "[]"
    assert backend in ("c", "python")
    for name in rfcircuits.__all__:
        assert getattr(rfcircuits, name) is not None
    assert set(rfcircuits.__all__) <= set(dir(rfcircuits))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rfcircuits.nope  # noqa: B018
    assert (Path(rfcircuits.__file__).parent / "py.typed").exists()


# ---------------------------------------------------------------------------------------------
# Inputs


@pytest.fixture(scope="module")
def iris_model():
    model = RandomForestClassifier(n_estimators=15, max_depth=4, random_state=0)
    return model.fit(IRIS.data, IRIS.target)


@pytest.fixture(scope="module")
def explainer(iris_model):
    return Explainer(rfcircuits.from_sklearn(iris_model, NAMES, IRIS.target_names))


def test_every_input_form_gives_the_same_explanation(explainer):
    row = IRIS.data[77]
    frame = pd.DataFrame(IRIS.data[70:80], columns=NAMES)
    expected = explainer.explain(row).to_line()
    forms = [row, row.astype(np.float32), row.tolist(), tuple(row), dict(zip(NAMES, row)),
             dict(reversed(list(zip(NAMES, row)))), pd.Series(row, index=NAMES),
             pd.Series(row, index=NAMES)[::-1], frame.iloc[7],
             {n: np.float64(v) for n, v in zip(NAMES, row)}]
    for x in forms:
        assert explainer.explain(x).to_line() == expected, type(x)
    every = [explainer.explain(x).to_line() for x in IRIS.data[70:80]]
    tables = [frame, IRIS.data[70:80], IRIS.data[70:80].tolist(),
              [dict(zip(NAMES, r)) for r in IRIS.data[70:80]],
              [frame.iloc[i] for i in range(10)]]
    for table in tables:
        assert [e.to_line() for e in explainer.explain_many(table)] == every, type(table)
    assert explainer.explain_many(frame[:0]) == [] and explainer.explain_many([]) == []


def test_values_are_placed_in_their_states_by_the_goes_left_rule(explainer):
    # A value at most a threshold is in the interval the threshold closes, one above it in
    # the next (the values are float32 numbers, which scikit-learn compares unchanged); a
    # state name is that state; NumPy integers are numbers.
    f = explainer.forest
    j = 2
    t = f.features[j].thresholds
    base = dict(zip(NAMES, IRIS.data[0].tolist()))
    for k, threshold in enumerate(t):
        below = float(np.float32(threshold))  # compared as Python floats, not in float32
        if below > threshold:
            below = float(np.nextafter(np.float32(below), np.float32(-np.inf)))
        above = float(np.nextafter(np.float32(below), np.float32(np.inf)))
        assert below <= threshold < above
        assert explainer.explain({**base, NAMES[j]: below}, []).instance[j] == k
        assert explainer.explain({**base, NAMES[j]: above}, []).instance[j] == k + 1
        name = f.features[j].states[k + 1]
        assert explainer.explain({**base, NAMES[j]: name}, []).instance[j] == k + 1
    big = {**base, NAMES[j]: np.int64(100)}
    assert explainer.explain(big, []).instance[j] == len(t)


def test_state_names_of_a_categorical_forest():
    f = forest(SUSAN_FOREST)
    e = Explainer(f).explain(SUSAN)
    assert f.classes[e.decision] == "yes"
    assert Explainer(f).explain([">=55", "over", "A"]).to_line() == e.to_line()
    with pytest.raises(InputError, match="feature 'Age': expected a state name, not 3"):
        Explainer(f).explain({**SUSAN, "Age": 3})


@pytest.mark.parametrize("x, message", [
    ({"sepal_length": 5.0, "sepal_width": 3.0, "petal_length": 1.0},
     r"missing 'petal_width'"),
    ({"sepal_length": 5.0, "sepal_width": 3.0, "petal_length": 1.0, "petal_width": 0.2,
      "colour": "red"}, r"unknown 'colour'"),
    ({"sepal length (cm)": 5.0, "sepal_width": 3.0, "petal_length": 1.0, "petal_width": 0.2},
     r"unknown 'sepal length \(cm\)'; missing 'sepal_length'"),
    (pd.Series([5.0, 3.0, 1.0, 0.2, 0.3], index=NAMES + ["petal_width"]),
     r"repeated 'petal_width'"),
    (pd.Series([5.0, 3.0, 1.0, 0.2]), r"unknown 0, 1, 2, 3; missing 'sepal_length'"),
])
def test_names_must_be_the_forests(explainer, x, message):
    with pytest.raises(InputError, match=r"^instance: feature names do not match the forest's: "
                       + message):
        explainer.explain(x)


def test_a_dataframe_has_the_forests_columns_in_order(explainer):
    frame = pd.DataFrame(IRIS.data[:3], columns=NAMES)
    cases = [
        (frame[["sepal_width", "sepal_length", "petal_length", "petal_width"]],
         "columns in a different order than the forest's features: 'sepal_width', "
         "'sepal_length', 'petal_length', 'petal_width'"),
        (frame.drop(columns="petal_length"), "missing 'petal_length'"),
        (frame.assign(colour="red"), "unknown 'colour'"),
        (pd.DataFrame(IRIS.data[:3]), "unknown 0, 1, 2, 3; missing 'sepal_length', "
                                      "'sepal_width', 'petal_length', 'petal_width'"),
        (pd.concat([frame, frame[["petal_width"]]], axis=1), "repeated 'petal_width'"),
    ]
    for table, problem in cases:
        with pytest.raises(InputError) as caught:
            explainer.explain_many(table)
        assert str(caught.value) == (f"DataFrame: {problem} (the forest's features, in order: "
                                     "'sepal_length', 'sepal_width', 'petal_length', "
                                     "'petal_width')")


@pytest.mark.parametrize("value, message", [
    (True, r"not True \(bool\)"), (np.bool_(False), r"not False \(bool\)"),
    (None, r"not None \(NoneType\)"), (float("nan"), "NaN is not a value"),
    (np.float32("nan"), "NaN is not a value"), ("5.0", r"'5.0' is not an interval state name"),
    (pd.NA, r"\(NAType\)"), ([1.0], r"not \[1.0\] \(list\)"),
])
def test_values_that_are_not_numbers_or_state_names_are_refused(explainer, value, message):
    row: list = IRIS.data[0].tolist()
    row[3] = value
    with pytest.raises(InputError, match=r"^instance, feature 'petal_width': .*" + message):
        explainer.explain(row)
    with pytest.raises(InputError, match=r"^row 1, feature 'petal_width': .*" + message):
        explainer.explain_many([IRIS.data[0], row])


@pytest.mark.parametrize("call, message", [
    (lambda e: e.explain(IRIS.data[0][:3]), "^instance: 3 values for the forest's 4 features"),
    (lambda e: e.explain(IRIS.data[:2]), "not a 2-D array; explain_many takes a table"),
    (lambda e: e.explain(pd.DataFrame(IRIS.data[:2], columns=NAMES)), "not a table"),
    (lambda e: e.explain("sepal_length"), "not str"),
    (lambda e: e.explain(5.0), "not float"),
    (lambda e: e.explain_many(IRIS.data[0]), "not a 1-D array; explain takes one instance"),
    (lambda e: e.explain_many(dict(zip(NAMES, IRIS.data[0]))), "not one instance"),
    (lambda e: e.explain_many(pd.Series(IRIS.data[0], index=NAMES)), "not one instance"),
    (lambda e: e.explain_many([IRIS.data[0], IRIS.data[1][:2]]), "^row 1: 2 values"),
    (lambda e: e.explain_many(IRIS.data[:2, :3]), "^row 0: 3 values"),
])
def test_shapes_are_checked(explainer, call, message):
    with pytest.raises(InputError, match=message):
        call(explainer)


# ---------------------------------------------------------------------------------------------
# Options


def test_the_literal_types_list_the_valid_values():
    assert get_args(Ties) == TIES
    assert get_args(Order) == ORDERS
    assert get_args(WhatKey) == ALL_WHAT
    assert (SR_METHODS, ROBUST_METHODS, NR_METHODS) == (
        ("expand", "dual"), ("alg5", "search"), ("auto", "search", "project"))


@pytest.mark.parametrize("option, valid", [
    ("ties", "'first', 'all'"), ("sr_method", "'expand', 'dual'"),
    ("robust_method", "'alg5', 'search'"), ("nr_method", "'auto', 'search', 'project'"),
    ("order", "'auto', 'depth', 'usage', 'force', 'index'"),
])
def test_options_are_validated(explainer, option, valid):
    with pytest.raises(InputError, match=f"^{option} must be one of {valid}, not 'bogus'$"):
        Explainer(explainer.forest, **{option: "bogus"})


def test_what_is_validated_and_put_in_order(explainer):
    x = IRIS.data[0]
    assert explainer.explain(x, ["robust", "sr"]).what == ("sr", "robust")
    assert explainer.explain(x, "nr").what == ("nr",)
    assert explainer.explain(x, ()).what == ()
    assert explainer.explain(x).what == ALL_WHAT
    for wrong, shown in (("bogus", "'bogus'"), (["sr", "srs"], "'srs'"), ("sr,nr", "'sr,nr'"),
                         (5, "5"), (["all"], "'all'")):
        with pytest.raises(InputError, match=f"^what: unknown key {shown}: expected 'all', "
                           "one of 'sr', 'nr', 'gsr', 'gnr', 'ce', 'robust', 'flips'"):
            explainer.explain(x, wrong)  # type: ignore[arg-type]


def test_explainer_takes_a_forest(iris_model):
    with pytest.raises(InputError, match="takes a Forest, not a RandomForestClassifier"):
        Explainer(iris_model)


# ---------------------------------------------------------------------------------------------
# scikit-learn


@pytest.mark.parametrize("model", [
    RandomForestClassifier(n_estimators=25, max_depth=3, random_state=1),
    ExtraTreesClassifier(n_estimators=25, max_depth=4, random_state=2),
    DecisionTreeClassifier(max_depth=3, random_state=3),
], ids=lambda m: type(m).__name__)
def test_decision_and_votes_are_the_sklearn_trees_hard_majority(model):
    model.fit(IRIS.data, IRIS.target)
    trees = getattr(model, "estimators_", [model])
    # each tree's vote: the class of highest probability at its leaf (first on ties)
    votes = np.zeros((len(IRIS.data), 3), dtype=int)
    for tree in trees:
        votes[np.arange(len(IRIS.data)), np.argmax(tree.predict_proba(IRIS.data), axis=1)] += 1
    explainer = Explainer(rfcircuits.from_sklearn(model, votes="hard"))
    for x, expected in zip(IRIS.data, votes):
        e = explainer.explain(x, what=[])
        assert e.votes == tuple(expected)
        assert e.decision == int(np.argmax(expected))
    frame = pd.DataFrame(IRIS.data, columns=[f"x{i}" for i in range(4)])
    assert [e.votes for e in explainer.explain_many(frame, what=[])] == \
        [tuple(v) for v in votes]


def test_from_sklearn_names_and_refusals(iris_model):
    frame = pd.DataFrame(IRIS.data, columns=NAMES)
    named = RandomForestClassifier(n_estimators=3, random_state=0).fit(frame, IRIS.target)
    f = rfcircuits.from_sklearn(named)
    assert [ft.name for ft in f.features] == NAMES and f.classes == ("0", "1", "2")
    assert [ft.name for ft in rfcircuits.from_sklearn(iris_model).features] == \
        ["x0", "x1", "x2", "x3"]
    assert rfcircuits.from_sklearn(iris_model, class_names=IRIS.target_names).classes == \
        ("setosa", "versicolor", "virginica")
    for call, message in [
        (lambda: rfcircuits.from_sklearn(RandomForestClassifier()), "unfitted"),
        (lambda: rfcircuits.from_sklearn(DecisionTreeClassifier()), "unfitted"),
        (lambda: rfcircuits.from_sklearn(object()), "cannot import a object"),
        (lambda: rfcircuits.from_sklearn(iris_model, ["a"]), "1 feature names for 4"),
        (lambda: rfcircuits.from_sklearn(iris_model, class_names=["a"]), "1 class names for 3"),
    ]:
        with pytest.raises(InputError, match=message):
            call()


# ---------------------------------------------------------------------------------------------
# Readable forms

#: A literal as the engine holds it, ``(feature index, state bitmask)``: never shown to users.
BITMASKS = re.compile(r"\(\d+, \d+\)")


def test_text_of_the_worked_example_names_features_and_states():
    # The readable form of SUSAN's answers (SR {Age, BType} and {Age, Weight}, NR {Age} and
    # {Weight, BType}, GSR BType in {A, B}, robustness 1 by flipping Age).
    f = forest(SUSAN_FOREST)
    e = Explainer(f).explain(SUSAN)
    text = str(e)
    lines = text.splitlines()
    assert lines[:2] == ["instance: Age=>=55, Weight=over, BType=A",
                         "decision: yes (votes: no 0, yes 1)"]
    for line in ("  Age=>=55 ∧ Weight=over", "  Age=>=55 ∧ BType=A", "  Age=>=55",
                 "  Weight=over ∨ BType=A", "  Age=>=55 ∧ BType∈{A,B}",
                 "robustness: 1 (the fewest features whose change can flip the decision)",
                 "  e.g. set Age=<55 → no", "  to no:"):
        assert line in lines, line
    assert text == e.to_text() and not BITMASKS.search(text)
    assert repr(e) == ("<Explanation: decision 'yes', votes {'no': 0, 'yes': 1}; "
                       "sufficient reasons: 2, necessary reasons: 2, general sufficient "
                       "reasons: 2, general necessary reasons: 3, contrastive: {'no': 2}, "
                       "robustness: 1, shortest flips: 1>")


def test_text_and_repr_of_an_imported_forest(explainer):
    e = explainer.explain(IRIS.data[100])
    text, short = str(e), repr(e)
    assert not BITMASKS.search(text) and not BITMASKS.search(short)
    assert "decision: virginica (sums: setosa " in text and "petal_length" in text
    assert "\n" not in short and len(short) < 300 and "'virginica'" in short
    assert "… and" not in e.to_text(limit=None)
    sized = explainer.explain(IRIS.data[100], ["gsr"])
    n = len(sized.general_sufficient_reasons)
    if n > 1:
        assert f"  … and {n - 1} more (to_text(limit=None) shows all)" in sized.to_text(limit=1)
    assert ";" not in repr(explainer.explain(IRIS.data[100], []))

    class Printer:  # IPython's pretty printer, as far as it is used
        def __init__(self):
            self.out = []

        def text(self, s):
            self.out.append(s)

    printer = Printer()
    e._repr_pretty_(printer, False)
    assert printer.out == [text]


def test_a_feature_no_tree_tests_is_shown_as_untested():
    model = DecisionTreeClassifier(max_depth=1, random_state=0).fit(IRIS.data, IRIS.target)
    e = Explainer(rfcircuits.from_sklearn(model, NAMES)).explain(IRIS.data[0], ["sr"])
    assert "sepal_length (untested)" in str(e).splitlines()[0]


def test_text_of_a_decision_no_change_flips_and_of_a_tie():
    doc = {"format": "rfcircuits.forest/1", "classes": ["a", "b"],
           "features": [{"name": "x", "states": ["p", "q"]}],
           "trees": [{"nodes": [{"class": "b"}]}]}
    lines = str(Explainer(forest(doc)).explain({"x": "p"})).splitlines()
    assert lines[lines.index("sufficient reasons (each alone keeps the decision, whatever the "
                             "other features):") + 1] == "  true (whatever the features)"
    assert "robustness: none (no change of features flips the decision)" in lines
    doc["trees"].append({"nodes": [{"feature": "x", "branches": [[[0], 1], [[1], 2]]},
                                   {"class": "a"}, {"class": "b"}]})
    lines = str(Explainer(forest(doc), "all").explain(["p"])).splitlines()
    assert lines[1:3] == ["decision: a (votes: a 1, b 1)", "classes (ties 'all'): a, b"]
    assert "  (none: the instance is in every class)" in lines
    assert "  e.g. set x=q → b" in lines
