"""``rfcircuits bench``: reproduce the paper's tables beside its figures (SPEC §6).

Each row trains the table's configuration (dataset, #trees, depth 4, 85/15 split, fixed
seed) with scikit-learn, measures ours, and prints the paper's value of every measured column
next to it, with the ratio ours/paper for times. ``--json`` prints one object per dataset
(JSON Lines) with snake_case keys and ``paper_<key>`` for the paper's values. Rows are printed
as they finish, so an interrupted run keeps them. Times are the minimum over repeated runs
when a run is short (see :func:`measure`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from core import paper
from core.errors import InputError
from core.train import Trained, load_csv, train_forest

T = TypeVar("T")
DEPTH = 4


def measure(fn: Callable[[], T], budget: float = 0.5, runs: int = 5) -> tuple[float, T]:
    """Minimum wall time of ``fn`` over up to ``runs`` runs while the total stays < ``budget``."""
    best = math.inf
    result: T
    total = 0.0
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        took = time.perf_counter() - start
        best = min(best, took)
        total += took
        if total >= budget:
            break
    return best, result


def train(data_dir: str, name: str, trees: int, seed: int) -> Trained:
    path = os.path.join(data_dir, f"{name}.csv")
    if not os.path.exists(path):
        raise InputError(f"--data-dir: no dataset file {path}")
    return train_forest(load_csv(path), trees, DEPTH, seed)


def selected(table: dict[str, Any], text: str | None) -> list[str]:
    if not text:
        return list(table)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in table]
    if unknown:
        raise InputError(f"--datasets: {unknown[0]!r} is not in the table "
                         f"(choose from {', '.join(table)})")
    return names


class Table:
    """Prints rows as text columns or JSON Lines, flushing each row."""

    def __init__(self, columns: Sequence[tuple[str, str, int]], as_json: bool) -> None:
        self.columns = columns  # (key, header, width)
        self.as_json = as_json
        if not as_json:
            print("  ".join(h.rjust(w) if i else h.ljust(w)
                            for i, (_, h, w) in enumerate(columns)), flush=True)

    def row(self, values: dict[str, Any]) -> None:
        if self.as_json:
            print(json.dumps(values), flush=True)
            return
        cells = []
        for i, (key, _, width) in enumerate(self.columns):
            v = values.get(key)
            text = "-" if v is None else _fmt(v)
            cells.append(text.ljust(width) if i == 0 else text.rjust(width))
        print("  ".join(cells), flush=True)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v.is_integer() and abs(v) >= 100:
            return str(int(v))
        if v == 0 or abs(v) >= 100:
            return f"{v:.1f}"
        return f"{v:.4f}" if abs(v) < 0.1 else f"{v:.3f}" if abs(v) < 10 else f"{v:.2f}"
    return str(v)


def ratio(ours: float | None, theirs: float | None) -> float | None:
    if ours is None or not theirs:
        return None
    return ours / theirs


def run_bench(args: argparse.Namespace) -> int:
    if args.what == "compile":
        if args.form == "nnf":
            return bench_nnf(args)
        from core.dgcompile import bench_dg

        return bench_dg(args)
    from core.explain import bench_explain

    return bench_explain(args)


def bench_nnf(args: argparse.Namespace) -> int:
    """Table 1 (NNF, Alg. 3), or the scaling run with ``--trees``."""
    from core.classformula import compile_nnf

    table = Table([("dataset", "dataset", 13), ("f", "#F", 3), ("c", "#C", 3), ("t", "#T", 5),
                   ("n_rf", "#N_RF", 6), ("a", "%A", 6), ("n_nnf", "#N_NNF", 8),
                   ("paper_n_nnf", "paper", 8), ("t_nnf", "T_NNF", 8),
                   ("paper_t_nnf", "paper", 7), ("t_ratio", "ratio", 7)], args.json)
    for name in selected(paper.TABLE1, args.datasets):
        ref = paper.TABLE1[name]
        trees = args.trees or int(ref["T"])
        print(f"[bench] {name}: training {trees} trees", file=sys.stderr, flush=True)
        trained = train(args.data_dir, name, trees, args.seed)
        forest = trained.forest
        seconds, comp = measure(lambda: compile_nnf(forest))
        same = trees == ref["T"]
        scaling = paper.SCALING_1000.get(name, {}) if trees == 1000 else {}
        paper_n = ref["N_NNF"] if same else scaling.get("N_NNF")
        paper_t = ref["T_NNF"] if same else scaling.get("T_NNF")
        table.row({"dataset": name, "f": len(forest.features), "c": len(forest.classes),
                   "t": trees, "n_rf": forest.n_nodes, "a": round(100 * trained.accuracy, 2),
                   "n_nnf": comp.total_nodes(), "paper_n_nnf": paper_n,
                   "t_nnf": round(seconds, 4), "paper_t_nnf": paper_t,
                   "t_ratio": None if ratio(seconds, paper_t) is None
                   else round(ratio(seconds, paper_t), 4)})
    return 0
