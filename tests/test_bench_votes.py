"""``rfcircuits bench compile|explain --votes`` (issue 43): the soft row beside the hard row of
the same trained model. On scikit-learn's bundled iris and wine written as two of the tables'
datasets (no external data); the expected figures come from forests imported here from a
model trained here with the benches' settings, not from the bench's own forests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rfcircuits.classformula import compile_nnf
from rfcircuits.cli.main import main
from rfcircuits.cnf import CircuitCNF
from rfcircuits.dgcompile import compile_dg
from rfcircuits.explain import Explainer
from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values
from tests.test_formats import assert_valid, jsonl

TREES = 3


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """iris (a Table 2 dataset) and wine-recog (also Table 4's: explain adds CEs)."""
    from sklearn.datasets import load_iris, load_wine

    path = tmp_path_factory.mktemp("data")
    for name, data in (("iris", load_iris()), ("wine-recog", load_wine())):
        header = ",".join([f"f{i}" for i in range(data.data.shape[1])] + ["target"])
        body = [",".join(map(str, [*r, t])) for r, t in zip(data.data, data.target)]
        (path / f"{name}.csv").write_text("\n".join([header, *body]) + "\n")
    return path


def forests(path: Path) -> dict[str, Any]:
    """The benches' model for the CSV (85/15 split, seed 0, depth 4, ``TREES`` trees) trained
    with scikit-learn, imported with each vote; and each vote's test accuracy in percent."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import train_test_split

    table = np.loadtxt(path, delimiter=",", skiprows=1)
    X, y = table[:, :-1], table[:, -1].astype(int)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.15, random_state=0)
    model = RandomForestClassifier(n_estimators=TREES, max_depth=4, random_state=0)
    model.fit(X_train, y_train)
    hard_votes = np.zeros((len(X_test), len(model.classes_)), dtype=int)
    for tree in model.estimators_:
        hard_votes[np.arange(len(X_test)), tree.predict(X_test).astype(int)] += 1
    out: dict[str, Any] = {
        vote: forest_from_sklearn(model, votes=vote) for vote in ("hard", "soft")}
    out["X_test"] = X_test
    out["a"] = {"hard": round(100 * float(np.mean(hard_votes.argmax(axis=1) == y_test)), 2),
                "soft": round(100 * float(np.mean(model.predict(X_test) == y_test)), 2)}
    return out


def per_class(comp: Any, k: int) -> float:
    return round(sum(comp.nodes(c) for c in range(k)) / k, 1)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    assert main(["bench", *argv, "--trees", str(TREES), "--json", "-q"]) == 0
    rows = jsonl(capsys.readouterr().out)
    for row in rows:
        assert_valid("bench", row, f"bench {' '.join(argv)}")
    return rows


def test_compile_puts_the_soft_row_beside_the_hard_one(data_dir, capsys):
    rows = run(capsys, "compile", "--form", "dg-conj", "--data-dir", str(data_dir),
               "--datasets", "iris", "--votes", "both")
    assert [(r["dataset"], r["votes"]) for r in rows] == [("iris", "hard"), ("iris", "soft")]
    expected = forests(data_dir / "iris.csv")
    k = 3
    for row in rows:
        forest = expected[row["votes"]]
        assert row["n_rf"] == forest.n_nodes
        assert row["a"] == expected["a"][row["votes"]]
        assert row["n_3b"] == per_class(compile_dg(forest), k)
        assert row["n_3"] == per_class(compile_nnf(forest), k)
    hard, soft = rows
    # the soft row is the soft forest's: its graphs and circuits differ from the hard one's
    assert soft["n_3b"] != hard["n_3b"] and soft["n_3"] > hard["n_3"]
    assert "vs_hard" not in hard
    assert soft["vs_hard"]["n_3b"] == round(soft["n_3b"] / hard["n_3b"], 3)
    assert soft["vs_hard"]["n_3"] == round(soft["n_3"] / hard["n_3"], 3)
    assert set(soft["vs_hard"]) == {"n_3", "t_3", "n_3b", "t_3b", "peak_mb"}
    # the paper's figures are of hard votes: none beside the soft row
    assert all(soft[k] is None for k in soft if k.startswith("paper_"))


def test_compile_forms_with_soft_votes_only(data_dir, capsys):
    expected = forests(data_dir / "wine-recog.csv")
    (row,) = run(capsys, "compile", "--form", "dg", "--data-dir", str(data_dir),
                 "--datasets", "wine-recog", "--votes", "soft")
    comp = compile_dg(expected["soft"], form="dg")
    assert row["votes"] == "soft" and "vs_hard" not in row
    assert row["n_3a"] == per_class(comp, 3)
    (row,) = run(capsys, "compile", "--form", "nnf", "--data-dir", str(data_dir),
                 "--datasets", "wine-recog", "--votes", "soft")
    assert row["n_nnf"] == compile_nnf(expected["soft"]).total_nodes()


def test_explain_puts_both_engines_soft_rows_beside_the_hard_ones(data_dir, capsys):
    rows = run(capsys, "explain", "--data-dir", str(data_dir), "--datasets",
               "iris,wine-recog", "--votes", "both", "--expand", "0", "--rows", "5")
    assert [(r["dataset"], r["votes"]) for r in rows] == [
        (d, v) for d in ("iris", "wine-recog") for v in ("hard", "soft")]
    for row in rows:
        expected = forests(data_dir / f"{row['dataset']}.csv")
        forest = expected[row["votes"]]
        assert row["n_3b"] == per_class(compile_dg(forest), len(forest.classes))
        assert row["n_sat"] == CircuitCNF(forest).nnf_nodes
        assert row["sat_differ"] == 0 and row["peak_mb"] > 0 and row["sat_mb"] > 0
        # the first --rows test rows, explained by this forest
        explainer = Explainer(forest, engine="graphs")
        nrs = [explainer.explain_states(x, ("nr",)).necessary_reasons
               for x in instances_from_values(forest, expected["X_test"][:5])]
        assert row["c_nr"] == round(sum(map(len, nrs)) / 5, 2)
    for hard, soft in (rows[:2], rows[2:]):
        assert soft["n_sat"] > hard["n_sat"]
        assert soft["vs_hard"]["n_sat"] == round(soft["n_sat"] / hard["n_sat"], 3)
    assert "t_ce" in rows[3]["vs_hard"]  # wine-recog is a Table 4 dataset


def test_soft_rows_stopped_by_the_budgets_are_results(data_dir, capsys):
    # A compile beyond --timeout or --max-nodes gets a row saying so and the run goes on;
    # bench explain still measures the SAT engine on the forest.
    rows = run(capsys, "compile", "--form", "dg-conj", "--data-dir", str(data_dir),
               "--datasets", "iris,wine-recog", "--votes", "soft", "--timeout", "1e-9")
    assert [(r["dataset"], r["stopped"]) for r in rows] == [
        (d, "compilation exceeds --timeout 1e-09 s") for d in ("iris", "wine-recog")]
    for row in rows:  # the forest's figures and its NNF circuits' still measured
        forest = forests(data_dir / f"{row['dataset']}.csv")["soft"]
        assert row["n_rf"] == forest.n_nodes and "n_3b" not in row and row["peak_mb"] > 0
        assert row["n_3"] == per_class(compile_nnf(forest), len(forest.classes))
    assert main(["bench", "explain", "--data-dir", str(data_dir), "--datasets", "iris",
                 "--votes", "both", "--trees", str(TREES), "--json", "-q",
                 "--max-nodes", "3"]) == 0
    captured = capsys.readouterr()
    hard, soft = jsonl(captured.out)
    assert "iris (soft votes): decision graphs exceed --max-nodes 3" in captured.err
    forest = forests(data_dir / "iris.csv")["soft"]
    assert soft["stopped"] and soft["n_sat"] == CircuitCNF(forest).nnf_nodes
    assert "sat_differ" not in soft  # no graphs' answers to compare with
    assert soft["vs_hard"]["t_compile"] is None and soft["peak_mb"] > 0
    assert soft["vs_hard"]["n_sat"] == round(soft["n_sat"] / hard["n_sat"], 3)
    for row in (hard, soft):
        assert_valid("bench", row, "stopped explain row")


def test_text_tables(data_dir, capsys):
    # default: the paper's columns as they were; --votes both: a votes column and a ratio line
    argv = ["bench", "compile", "--form", "dg-conj", "--data-dir", str(data_dir),
            "--datasets", "iris", "--trees", str(TREES), "-q"]
    assert main(argv) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split()[:3] == ["dataset", "#T", "#N_RF"] and row.split()[:2] == ["iris", "3"]
    assert main([*argv, "--votes", "both"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["dataset", "#T", "votes"]
    assert [line.split()[:3] for line in lines[1:]] == [
        ["iris", "3", "hard"], ["iris", "3", "soft"], ["iris", "-", "soft/hard"]]


@pytest.mark.parametrize("argv, message", [
    (["engines", "--votes", "soft"], "bench engines: --votes is bench compile's and explain's"),
    (["predict", "--votes", "hard"], "bench predict: --votes is bench compile's and explain's"),
    (["compile", "--form", "nnf", "--timeout", "5"],
     "bench compile: --timeout limits decision-graph compiles"),
    (["oracles", "--timeout", "5"], "bench oracles: --timeout limits decision-graph compiles"),
])
def test_options_of_other_tables(data_dir, capsys, argv, message):
    assert main(["bench", *argv, "--data-dir", str(data_dir)]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["compile", "--votes", "mixed"], "argument --votes: invalid choice: 'mixed'"),
    (["explain", "--timeout", "0"], "argument --timeout: must be a positive"),
])
def test_bad_values(data_dir, capsys, argv, message):
    with pytest.raises(SystemExit) as stop:
        main(["bench", *argv, "--data-dir", str(data_dir)])
    assert stop.value.code == 2 and message in capsys.readouterr().err
