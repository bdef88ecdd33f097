"""``rfcircuits bench oracles``: the native engine's speed beside the SAT oracle's, one run.

``--suite paper``: for each Table 3 configuration (dataset, #trees, depth 4, seed; see
``rfcircuits.cli.bench``), both engines explain the same test instances: robustness, and
enumeration of all SRs. ``--suite trained``: the 100-tree forests people train, at the depths
of :data:`TRAINED`, with every check kind ``crosscheck`` runs against the SAT oracle, timed as
``crosscheck`` runs it: the native SRs and NRs by the oracle's certificate, CEs and robustness by
its own answers, GSRs, GNRs and shortest flips item by item. ``--suite paper`` times the SAT
engine too (``SATe``: robustness, and all SRs, with its default limits), beside the decision
graphs and the oracle. Native times are per instance
*after* compiling the class formulas (compile time reported apart), SAT times per instance after
building its CNF; answers are compared too, the ratios SAT/native are printed, and the peak
memory of the run so far. A row is printed as soon as its dataset is done.
"""

from __future__ import annotations

import argparse
import time

import sys
from collections.abc import Callable
from typing import Any

from rfcircuits.cli import paper
from rfcircuits.cli.bench import Table, configurations, selected, stopped, train
from rfcircuits.budget import peak_mb, reset_peak
from rfcircuits.errors import BudgetExceeded
from rfcircuits.explain import Explainer
from rfcircuits.explanation import ALL_WHAT
from rfcircuits.forest import Instance
from rfcircuits.crosscheck.oracles.sat import SatOracle

INSTANCES = 20
#: ``--suite trained``: dataset -> depth of its 100-tree forest (issue 30's forests).
TRAINED = {"iris": 6, "banknote": 5, "new-thyroid": 5, "ecoli": 5, "shuttle": 3,
           "mofn-3-7-10": 6, "threeOf9": 3}
#: The check kinds of ``--suite trained``, in the order they are timed, with the fields the
#: native engine computes for each.
NATIVE_FIELDS = {"sr+nr": ("sr", "nr"), "ce": ("ce",), "robust": ("robust",), "gsr": ("gsr",),
                 "gnr": ("gnr",), "flips": ("robust", "flips")}
KINDS = tuple(NATIVE_FIELDS)


def bench_oracles(args: argparse.Namespace) -> int:
    if args.suite == "trained":
        return _bench_trained(args)
    table = Table([("dataset", "dataset", 13), ("t", "#T", 4), ("n", "#I", 4),
                   ("t_compile", "T_comp", 8), ("t_cnf", "T_cnf", 7),
                   ("t_robust_native", "T_r nat", 9), ("t_robust_sat", "T_r SAT", 9),
                   ("robust_ratio", "SAT/nat", 8),
                   ("t_sr_native", "T_SR nat", 9), ("t_sr_sat", "T_SR SAT", 9),
                   ("sr_ratio", "SAT/nat", 8), ("t_robust_engine", "T_r SATe", 9),
                   ("t_sr_engine", "T_SR SATe", 10), ("agree", "agree", 6)], args.json)
    disagreements = 0
    for name, _, trees, trained in configurations(paper.TABLE3, args):
        forest = trained.forest
        instances = trained.test_instances[:INSTANCES]
        start = time.perf_counter()
        explainer = Explainer(forest, engine="graphs", max_nodes=args.node_budget)
        try:
            explainer.compile()
        except BudgetExceeded as exc:
            stopped(table, {"dataset": name, "t": trees}, exc)
            continue
        t_compile = time.perf_counter() - start
        start = time.perf_counter()
        sat = SatOracle(forest)
        t_cnf = time.perf_counter() - start
        # the SAT engine beside them: the native engine for forests the graphs do not fit
        engine = Explainer(forest, engine="sat", limit_seconds=args.limit_seconds or None,
                           limit_items=args.limit_items or None) if args.engine == "both" else None
        if engine is not None:
            engine.compile()
        clocks = {"rn": 0.0, "rs": 0.0, "sn": 0.0, "ss": 0.0, "re": 0.0, "se": 0.0}
        agree = True
        try:
            for x in instances:
                if engine is not None:
                    t0 = time.perf_counter()
                    engine_r = engine.explain_states(x, ("robust",))
                    t1 = time.perf_counter()
                    engine_sr = engine.explain_states(x, ("sr",))
                    t2 = time.perf_counter()
                    clocks["re"] += t1 - t0
                    clocks["se"] += t2 - t1
                t0 = time.perf_counter()
                native_r = explainer.explain_states(x, ("robust",)).robustness
                t1 = time.perf_counter()
                sat_r = sat.robustness(x)
                t2 = time.perf_counter()
                native_sr = explainer.explain_states(x, ("sr",)).sufficient_reasons
                t3 = time.perf_counter()
                sat_sr = sat.sufficient_reasons(x)
                t4 = time.perf_counter()
                clocks["rn"] += t1 - t0
                clocks["rs"] += t2 - t1
                clocks["sn"] += t3 - t2
                clocks["ss"] += t4 - t3
                agree = agree and native_r == sat_r and native_sr == sat_sr
                if engine is not None:  # after the oracle's timed calls (it caches answers)
                    agree = agree and ("robust" in engine_r.incomplete or
                                       engine_r.robustness == sat_r) and (
                        "sr" in engine_sr.incomplete or engine_sr.sufficient_reasons == sat_sr)
        finally:
            sat.close()
        disagreements += not agree
        n = max(1, len(instances))
        table.row({"dataset": name, "t": trees, "n": len(instances),
                   "t_compile": round(t_compile, 3), "t_cnf": round(t_cnf, 3),
                   "t_robust_native": round(clocks["rn"] / n, 5),
                   "t_robust_sat": round(clocks["rs"] / n, 5),
                   "robust_ratio": round(clocks["rs"] / max(clocks["rn"], 1e-9), 1),
                   "t_sr_native": round(clocks["sn"] / n, 5),
                   "t_sr_sat": round(clocks["ss"] / n, 5),
                   "sr_ratio": round(clocks["ss"] / max(clocks["sn"], 1e-9), 1),
                   **({"t_robust_engine": round(clocks["re"] / n, 5),
                       "t_sr_engine": round(clocks["se"] / n, 5)} if engine else {}),
                   "agree": "yes" if agree else "NO"})
    return 1 if disagreements else 0


def _sat_checks(sat: SatOracle, x: Instance, ours: Any) -> dict[str, Callable[[], bool]]:
    """Per check kind, the SAT oracle's check of the native answer ``ours``, as crosscheck
    makes it; each returns whether the answers agree."""
    member = set(ours.classes)
    return {
        "sr+nr": lambda: sat.certify_reasons(x, ours.sufficient_reasons,
                                             ours.necessary_reasons).holds,
        "ce": lambda: all(sat.contrastive(x, t) == ces for t, ces in ours.contrastive
                          if t not in member),
        "robust": lambda: sat.robustness(x) == ours.robustness,
        "gsr": lambda: all(all(v.values()) for v in sat.check_gsrs(
            x, ours.general_sufficient_reasons)),
        "gnr": lambda: all(all(sat.check_gnr(x, c).values())
                           for c in ours.general_necessary_reasons),
        "flips": lambda: all(all(sat.check_flip(x, c, ours.robustness).values())
                             for c in ours.shortest_flips)}


def _bench_trained(args: argparse.Namespace) -> int:
    columns = [("dataset", "dataset", 12), ("depth", "d", 2), ("t", "#T", 4), ("n", "#I", 3),
               ("t_compile", "T_comp", 7), ("t_cnf", "T_cnf", 6)]
    for kind in KINDS:
        columns += [(f"t_{kind}_sat", f"{kind} SAT", len(kind) + 4),
                    (f"{kind}_ratio", "SAT/nat", 7)]
    table = Table(columns + [("mb", "MB", 6), ("agree", "agree", 5)], args.json)
    disagreements = 0
    for name, trees in ((n, t) for n in selected(TRAINED, args.datasets)
                        for t in args.trees or (100,)):
        if not args.no_progress:
            print(f"[bench] {name}: training {trees} trees", file=sys.stderr, flush=True)
        trained = train(args.data_dir, name, trees, args.seed, TRAINED[name])
        row: dict[str, Any] = {"dataset": name, "depth": TRAINED[name], "t": trees}
        reset_peak()
        start = time.perf_counter()
        explainer = Explainer(trained.forest, engine="graphs", max_nodes=args.node_budget)
        try:
            explainer.compile(negated=True)
        except BudgetExceeded as exc:
            stopped(table, row, exc)
            continue
        row["t_compile"] = round(time.perf_counter() - start, 3)
        start = time.perf_counter()
        sat = SatOracle(trained.forest)
        row["t_cnf"] = round(time.perf_counter() - start, 3)
        native = dict.fromkeys(KINDS, 0.0)
        oracle = dict.fromkeys(KINDS, 0.0)
        agree = True
        instances = trained.test_instances[:INSTANCES]
        try:
            for x in instances:
                for kind, what in NATIVE_FIELDS.items():
                    t0 = time.perf_counter()
                    explainer.explain_states(x, what)
                    native[kind] += time.perf_counter() - t0
                ours = explainer.explain_states(x, ALL_WHAT)
                for kind, check in _sat_checks(sat, x, ours).items():
                    t0 = time.perf_counter()
                    agree = check() and agree
                    oracle[kind] += time.perf_counter() - t0
        finally:
            sat.close()
        disagreements += not agree
        n = max(1, len(instances))
        row["n"] = len(instances)
        for kind in KINDS:
            row[f"t_{kind}_native"] = round(native[kind] / n, 5)
            row[f"t_{kind}_sat"] = round(oracle[kind] / n, 4)
            row[f"{kind}_ratio"] = round(oracle[kind] / max(native[kind], 1e-9), 1)
        table.row({**row, "mb": round(peak_mb()), "agree": "yes" if agree else "NO"})
    return 1 if disagreements else 0
