"""``rfcircuits bench pyxai``: the SAT engine beside PyXAI on the same forests and rows.

Two scikit-learn forests on breast-cancer (scikit-learn's copy; 85/15 split and forest seeded
by ``--seed``): 100 trees of depth 4, and the default forest (100 trees, unlimited depth).
On the first ``--rows`` test rows, one process times our answers (after compiling the CNF,
reported apart) and PyXAI's worker times its calls (:func:`rfcircuits.crosscheck.peers.adapters.
pyxai.run_pyxai`, its model imported before the clock). Rows pair like with like:

- ``one SR``: :meth:`rfcircuits.satengine.SatEngine.one_sr` beside ``sufficient_reason``;
- ``shortest SR``: :meth:`rfcircuits.satengine.SatEngine.shortest_sr` beside
  ``minimal_sufficient_reason``;
- ``SRs + NRs`` (all of them, within the engine's limits) and ``robustness``, beside
  ``minimal_contrastive_reason`` (two classes: the smallest change of the prediction, a
  question like robustness).

Each row gives the median and the largest per-row seconds of both sides, for the SR pairs the
median number of features of the SRs found (PyXAI's counted over the features its conditions
test; at a time limit, each side's best by then), the ratio of the
medians (ours/PyXAI: at most 1 is the goal for the two like-for-like pairs), how many rows
each side answered (PyXAI: ``ok`` within its time limit, not its best at the limit; ours:
complete, a shortest SR proved shortest within the same limit), and the peak memory of our
process and of PyXAI's worker (``--pyxai-timeout`` is both sides' limit). PyXAI reasons over
its binary conditions and ties to the first class while its reasons make the class win
strictly; ours over the forest's interval states (docs/peers.md): the pairs answer the same
questions about the same forest, not the same sets.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from rfcircuits.cli.bench import Table, selected
from rfcircuits.budget import peak_mb, reset_peak
from rfcircuits.errors import InputError
from rfcircuits.satengine import SatEngine

#: The forests (``--datasets`` picks among them): number of trees, maximum depth (None:
#: scikit-learn's default).
FORESTS = {"breast-cancer-100x4": (100, 4), "breast-cancer-default": (100, None)}
#: Our question beside each PyXAI call.
PAIRS = (("one SR", "sufficient_reason"), ("shortest SR", "minimal_sufficient_reason"),
         ("SRs + NRs", None), ("robustness", "minimal_contrastive_reason"))


def _data(seed: int) -> tuple[Any, Any, Any, list[str]]:
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    from rfcircuits.datasets import TEST_FRACTION

    data = load_breast_cancer()
    X_train, X_test, y_train, _ = train_test_split(data.data, data.target,
                                                   test_size=TEST_FRACTION, random_state=seed)
    names = [n.replace(" ", "_") for n in data.feature_names]
    return X_train, X_test, y_train, names


def _ours(engine: SatEngine, instances: list[Any], seconds: float
          ) -> tuple[dict[str, list[tuple[float, bool]]], dict[str, list[int]]]:
    """Per pair, each row's (seconds, complete), and per SR pair each row's number of
    features; a shortest SR gets ``seconds``, as PyXAI's calls do (complete: proved
    shortest)."""
    out: dict[str, list[tuple[float, bool]]] = {name: [] for name, _ in PAIRS}
    sizes: dict[str, list[int]] = {"one SR": [], "shortest SR": []}
    for x in instances:
        start = time.perf_counter()
        term = engine.one_sr(x)
        out["one SR"].append((time.perf_counter() - start, True))
        sizes["one SR"].append(len(term))
        start = time.perf_counter()
        term, proved = engine.shortest_sr(x, seconds)
        out["shortest SR"].append((time.perf_counter() - start, proved))
        sizes["shortest SR"].append(len(term))
        for name, what in (("SRs + NRs", ("sr", "nr")), ("robustness", ("robust",))):
            start = time.perf_counter()
            e = engine.explain_states(x, what)
            out[name].append((time.perf_counter() - start, not e.incomplete))
    return out, sizes


def bench_pyxai(args: argparse.Namespace) -> int:
    from sklearn.ensemble import RandomForestClassifier

    from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values
    from rfcircuits.crosscheck.peers.adapters.pyxai import pyxai_version, run_pyxai

    if pyxai_version() is None:
        raise InputError("bench pyxai: PyXAI is not installed (pip install 'rfcircuits[pyxai]')")
    X_train, X_test, y_train, names = _data(args.seed)
    rows = X_test[:args.rows]
    table = Table([("forest", "forest", 21), ("pair", "ours / PyXAI", 40),
                   ("ours_median", "ours med", 9), ("ours_max", "max", 8),
                   ("pyxai_median", "PyXAI med", 9), ("pyxai_max", "max", 8),
                   ("ratio", "ratio", 7), ("ours_done", "ours ok", 7),
                   ("pyxai_done", "PyXAI ok", 8), ("ours_mb", "MB", 6),
                   ("pyxai_mb", "MB", 6)], args.json, args.plot_rows)
    for label in selected(FORESTS, args.datasets):
        trees, depth = FORESTS[label]
        model = RandomForestClassifier(n_estimators=trees, max_depth=depth,
                                       random_state=args.seed)
        import pandas as pd

        model.fit(pd.DataFrame(X_train, columns=names), y_train)
        forest = forest_from_sklearn(model, votes="hard")  # what the peers explain
        instances = instances_from_values(forest, rows)
        reset_peak()
        start = time.perf_counter()
        engine = SatEngine(forest, limit_seconds=args.limit_seconds or None,
                           limit_items=args.limit_items or None)
        engine.compile()
        compile_seconds = time.perf_counter() - start
        ours, our_sizes = _ours(engine, instances, args.pyxai_timeout)
        ours_mb = peak_mb()
        theirs: dict[str, list[tuple[float, bool]]] = {}
        their_sizes: dict[str, list[int]] = {}
        worker_mb = 0.0
        kinds = [kind for _, kind in PAIRS if kind]
        for answer in run_pyxai(model, rows, kinds, args.pyxai_timeout):
            theirs.setdefault(answer["kind"], []).append(
                (answer.get("seconds", args.pyxai_timeout),
                 answer["status"] == "ok" and not answer.get("approximate")))
            if answer.get("reason") is not None:  # its best at the limit counts here too
                their_sizes.setdefault(answer["kind"], []).append(
                    len({feature for feature, _, _ in answer["reason"]}))
            worker_mb = max(worker_mb, answer.get("peak_mb", 0.0))
        for name, kind in PAIRS:
            mine = [s for s, _ in ours[name]]
            row: dict[str, Any] = {
                "forest": label, "pair": f"{name} / {kind or '-'}",
                "ours_median": round(statistics.median(mine), 4),
                "ours_max": round(max(mine), 4),
                "ours_done": sum(done for _, done in ours[name]), "rows": len(rows),
                "ours_compile": round(compile_seconds, 3), "ours_mb": round(ours_mb),
                "pyxai_mb": round(worker_mb)}
            if kind:
                times = [s for s, _ in theirs.get(kind, [])]
                row.update(pyxai_median=round(statistics.median(times), 4) if times else None,
                           pyxai_max=round(max(times), 4) if times else None,
                           pyxai_done=sum(ok for _, ok in theirs.get(kind, [])))
                if times:
                    row["ratio"] = round(row["ours_median"] / max(row["pyxai_median"], 1e-9), 2)
            if name in our_sizes:
                row["ours_features"] = statistics.median(our_sizes[name])
                if their_sizes.get(kind or ""):
                    row["pyxai_features"] = statistics.median(their_sizes[kind or ""])
            table.row(row)
    return 0
