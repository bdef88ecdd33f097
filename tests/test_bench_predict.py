"""``rfcircuits bench predict`` (issue 43): the imported soft forest decides as ``predict``, and
the rows where the hard vote differs. On small synthetic datasets (no external data); the
expected figures are recomputed here from scikit-learn's own trees, not from the product's
forests."""

from __future__ import annotations

from decimal import Decimal, localcontext
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rfcircuits.cli import predictbench
from rfcircuits.cli.main import main
from tests.test_formats import assert_valid, jsonl

TREES = 5


def write_dataset(path: Path, n_classes: int, seed: int) -> None:
    """200 rows of 3 features whose label is a noisy threshold of their sum: small forests
    of such data disagree among their trees, so hard and soft votes differ on some rows."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 1, size=(200, 3))
    y = np.clip(np.floor((X.sum(axis=1) + rng.normal(0, 0.8, 200) + 1.5) * n_classes / 3),
                0, n_classes - 1).astype(int)
    lines = ["a,b,c,target"] + [",".join([*map(repr, r.tolist()), str(t)])
                                for r, t in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """Two of the paper's dataset names: xd6 binary, ecoli with 3 classes here."""
    write_dataset(tmp_path / "xd6.csv", 2, 1)
    write_dataset(tmp_path / "ecoli.csv", 3, 2)
    return tmp_path


def hard_votes_by_sklearn(path: Path, estimator: Any) -> dict[str, Any]:
    """What the bench must find for ``estimator`` (a scikit-learn forest, unfitted) on the
    CSV: from the 85/15 split and scikit-learn's trees themselves, each tree's ``predict``
    counted as one vote, the first class of most votes taken."""
    from sklearn.model_selection import train_test_split

    table = np.loadtxt(path, delimiter=",", skiprows=1)
    X, y = table[:, :-1], table[:, -1].astype(int)
    X_train, X_test, y_train, _, _, lines = train_test_split(
        X, y, np.arange(len(y)) + 2, test_size=0.15, random_state=0)
    model = estimator.fit(X_train, y_train)
    k = len(model.classes_)
    counts = np.zeros((len(X_test), k), dtype=int)
    for tree in model.estimators_:
        counts[np.arange(len(X_test)), tree.predict(X_test).astype(int)] += 1
    predicted = model.predict(X_test)
    differ = [i for i in range(len(X_test))
              if model.classes_[int(np.argmax(counts[i]))] != predicted[i]]
    return {"rows": len(X_test), "differ": differ, "lines": [int(lines[i]) for i in differ],
            "votes": [counts[i].tolist() for i in differ],
            "proba": model.predict_proba(X_test[differ]).tolist()}


def test_bench_predict_counts_what_sklearn_decides(data_dir, tmp_path, capsys):
    from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier

    out = tmp_path / "rows.jsonl"
    assert main(["bench", "predict", "--data-dir", str(data_dir), "--datasets", "xd6,ecoli",
                 "--trees", str(TREES), "--json", "-q", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = jsonl(printed)
    assert out.read_text() == printed  # --out holds the rows --json prints
    assert [(r["dataset"], r["model"]) for r in rows] == [
        (d, m) for d in ("xd6", "ecoli") for m in ("rf", "et", "gb")]
    found_differ = 0
    for r in rows:
        assert_valid("bench", r, f"bench predict {r['dataset']} {r['model']}")
        assert r["agree"] == r["rows"] and "disagreements" not in r
        if r["model"] == "gb":  # a tree per stage, per class beyond binary; no hard vote
            assert r["t"] == TREES * (1 if r["dataset"] == "xd6" else 3)
            assert r["hard_differ"] is None and "hard_examples" not in r
            continue
        estimator = {"rf": RandomForestClassifier, "et": ExtraTreesClassifier}[r["model"]]
        want = hard_votes_by_sklearn(data_dir / f"{r['dataset']}.csv",
                                     estimator(n_estimators=TREES, max_depth=4, random_state=0))
        assert (r["t"], r["rows"], r["hard_differ"]) == (TREES, want["rows"], len(want["differ"]))
        shown = r["hard_examples"]
        assert [e["line"] for e in shown] == want["lines"][:predictbench.EXAMPLES]
        for e, votes, proba in zip(shown, want["votes"], want["proba"]):
            assert list(e["votes"].values()) == votes and list(e["scores"].values()) == proba
            assert e["hard"] != e["predict"]
        found_differ += len(want["differ"])
    assert found_differ > 0  # the data make hard and soft differ: the check above bites


def test_bench_predict_text_table_lists_the_differing_rows(data_dir, capsys):
    from sklearn.ensemble import RandomForestClassifier

    want = hard_votes_by_sklearn(data_dir / "ecoli.csv", RandomForestClassifier(
        n_estimators=TREES, max_depth=4, random_state=0))
    assert want["differ"]
    assert main(["bench", "predict", "--data-dir", str(data_dir), "--datasets", "ecoli",
                 "--models", "rf", "--trees", str(TREES), "-q"]) == 0
    table, examples = capsys.readouterr().out.split("\nrows whose hard vote differs")
    cells = table.splitlines()[1].split()
    assert cells[:8] == ["ecoli", "rf", str(TREES), "3", str(want["rows"]), str(want["rows"]),
                         "0", str(len(want["differ"]))]
    lines = [int(line.split()[2]) for line in examples.splitlines()[2:]]
    assert lines == want["lines"][:predictbench.EXAMPLES]


def test_a_forest_deciding_otherwise_is_reported_in_full(data_dir, capsys, monkeypatch):
    """A model whose "soft" import is really the hard vote: every row where that differs from
    predict is a disagreement, with its line, exact sums and scikit-learn's probabilities,
    and the exit status is 1."""
    from sklearn.ensemble import RandomForestClassifier

    rf = predictbench.MODELS["rf"]
    wrong = predictbench.Model("hard as soft", rf.fit,
                               lambda m, f, c, votes: rf.to_forest(m, f, c, "hard"),
                               rf.scores, hard=False)
    monkeypatch.setitem(predictbench.MODELS, "wrong", wrong)
    assert main(["bench", "predict", "--data-dir", str(data_dir), "--datasets", "ecoli",
                 "--models", "wrong", "--trees", str(TREES), "--json", "-q"]) == 1
    captured = capsys.readouterr()
    (row,) = jsonl(captured.out)
    assert_valid("bench", row)
    want = hard_votes_by_sklearn(data_dir / "ecoli.csv", RandomForestClassifier(
        n_estimators=TREES, max_depth=4, random_state=0))
    assert row["agree"] == row["rows"] - len(want["differ"])
    found = row["disagreements"]
    assert [d["line"] for d in found] == want["lines"]
    for d, votes, proba in zip(found, want["votes"], want["proba"]):
        assert [int(s) for s in d["exact_sums"].values()] == votes  # hard: sums are counts
        assert list(d["scores"].values()) == proba and d["near_tie"] is False
        assert f"wrong on ecoli, line {d['line']}: the forest decides {d['decision']}, " \
               f"predict {d['predict']}" in captured.err


@settings(max_examples=100, derandomize=True, deadline=None)
@given(st.integers(-10 ** 30, 10 ** 30), st.integers(0, 200))
def test_exact_decimal_is_exact(numerator, scale):
    text = predictbench.exact_decimal(numerator, scale)
    with localcontext() as ctx:
        ctx.prec = 400
        assert Decimal(text) == Decimal(numerator) / Decimal(2) ** scale
    assert not ("." in text and text.endswith(("0", ".")))  # no trailing zeros


def test_bad_options_are_named(data_dir, capsys):
    assert main(["bench", "predict", "--data-dir", str(data_dir), "--models", "rf,xgb"]) == 2
    assert "--models: 'xgb' is not in the table (choose from rf, et, gb)" in \
        capsys.readouterr().err
    assert main(["bench", "compile", "--data-dir", str(data_dir), "--out", "x.jsonl"]) == 2
    assert "--out is bench predict's" in capsys.readouterr().err
    assert main(["bench", "predict", "--data-dir", str(data_dir), "--datasets", "xd6",
                 "--trees", "-1"]) == 2
    assert "--trees must be at least 1" in capsys.readouterr().err
    assert main(["bench", "predict", "--data-dir", str(data_dir), "--datasets", "xd6",
                 "--out", str(data_dir / "no" / "rows.jsonl")]) == 2
    captured = capsys.readouterr()  # refused before the table's first line
    assert captured.out == "" and "does not exist" in captured.err


def test_each_model_runs_on_its_own_datasets():
    """Without --datasets, a model with its own list runs on those only."""
    import argparse

    plan = predictbench._plan(argparse.Namespace(models=None, datasets=None))
    assert len(plan) == 19 and all(kinds[:2] == ["rf", "et"] for _, kinds in plan)
    assert [name for name, kinds in plan if "gb" in kinds] == \
        sorted(predictbench.MODELS["gb"].datasets, key=[n for n, _ in plan].index)
