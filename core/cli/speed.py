"""``rfcircuits bench oracles``: the native engine's speed beside the SAT oracle's, one run.

For each Table 3 configuration (dataset, #trees, depth 4, seed; see ``rfcircuits.cli.bench``), both
engines explain the same test instances: robustness, and enumeration of all SRs. Native times
are per instance *after* compiling the class formulas (compile time reported apart), SAT times
per instance after building its CNF; answers are compared too, and the ratios SAT/native are
printed. A row is printed as soon as its dataset is done.
"""

from __future__ import annotations

import argparse
import time

from rfcircuits.cli import paper
from rfcircuits.cli.bench import Table, configurations, stopped
from rfcircuits.errors import BudgetExceeded
from rfcircuits.explain import Explainer
from rfcircuits.crosscheck.sat import SatOracle

INSTANCES = 20


def bench_oracles(args: argparse.Namespace) -> int:
    table = Table([("dataset", "dataset", 13), ("t", "#T", 4), ("n", "#I", 4),
                   ("t_compile", "T_comp", 8), ("t_cnf", "T_cnf", 7),
                   ("t_robust_native", "T_r nat", 9), ("t_robust_sat", "T_r SAT", 9),
                   ("robust_ratio", "SAT/nat", 8),
                   ("t_sr_native", "T_SR nat", 9), ("t_sr_sat", "T_SR SAT", 9),
                   ("sr_ratio", "SAT/nat", 8), ("agree", "agree", 6)], args.json)
    disagreements = 0
    for name, _, trees, trained in configurations(paper.TABLE3, args):
        forest = trained.forest
        instances = trained.test_instances[:INSTANCES]
        start = time.perf_counter()
        explainer = Explainer(forest, max_nodes=args.node_budget)
        try:
            explainer.compile()
        except BudgetExceeded as exc:
            stopped(table, {"dataset": name, "t": trees}, exc)
            continue
        t_compile = time.perf_counter() - start
        start = time.perf_counter()
        sat = SatOracle(forest)
        t_cnf = time.perf_counter() - start
        clocks = {"rn": 0.0, "rs": 0.0, "sn": 0.0, "ss": 0.0}
        agree = True
        try:
            for x in instances:
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
                   "agree": "yes" if agree else "NO"})
    return 1 if disagreements else 0
