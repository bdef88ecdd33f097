"""``rfcircuits bench engines``: the two engines and ``auto`` side by side on the same
forests and rows.

For each Table 2 configuration (the paper's forests: dataset, #trees, depth 4, 85/15 split,
fixed seed) and tie policy, the same test rows are explained three times in one process,
with ``--what`` (default ``sr,nr,ce,robust,flips``): by the decision graphs (within
:data:`GRAPH_NODES` nodes, about 2 GB, or ``--max-nodes``), by the SAT engine (its default
limits, or ``--limit-seconds``/``--limit-items``), and by ``engine="auto"`` (told the rows
and fields, as ``explain`` tells it). A row gives each
one's seconds (compile and explanations) and peak memory, which engine ``auto`` chose, its
time against the better forced engine (``auto ≤ 1.5 × best + 10 s`` is the target), how many
of the SAT engine's fields were complete, and how many of those equal the graphs' answer
(``differ`` must be 0). Compiles cached between runs (sifted feature orders, hand-offs of
other tie policies) are dropped before each, so that every run starts cold.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from rfcircuits.cli import paper
from rfcircuits.cli.bench import Table, compare, configurations
from rfcircuits.budget import peak_mb, reset_peak
from rfcircuits.errors import BudgetExceeded
from rfcircuits.explain import Explainer
from rfcircuits.explanation import WHAT_FIELDS, Explanation, parse_what
from rfcircuits.forest import TIES, Forest, Instance

#: The decision graphs' node budget in this benchmark (≈ 2 GB at 200 bytes a node).
GRAPH_NODES = 10_000_000
#: ``auto`` meets its target when it takes at most this factor of the better forced engine's
#: seconds, plus :data:`AUTO_SLACK`.
AUTO_FACTOR, AUTO_SLACK = 1.5, 10.0


def _fresh() -> None:
    """Forget what earlier compiles left for later ones (each run starts cold)."""
    from rfcircuits import dgcompile

    dgcompile._SIFTED.clear()
    dgcompile._HANDED.clear()


def run_engine(forest: Forest, ties: str, rows: Sequence[Instance], what: Sequence[str],
               engine: str, options: dict[str, Any]
               ) -> tuple[float, float, list[Explanation] | None, str]:
    """``(seconds, peak MB, explanations or None when stopped, the engine that answered or
    why it stopped)`` of one engine on the rows, compile included."""
    _fresh()
    reset_peak()
    start = time.perf_counter()
    explainer = Explainer(forest, ties, engine=engine, **options)  # type: ignore[arg-type]
    try:
        explainer.compile(rows=rows, what=what)
        answers = [explainer.explain_states(x, what) for x in rows]
    except BudgetExceeded as exc:
        return time.perf_counter() - start, peak_mb(), None, exc.for_cli()
    return time.perf_counter() - start, peak_mb(), answers, explainer.engine.name


def bench_engines(args: argparse.Namespace) -> int:
    """One row per configuration and tie policy; exit 1 when a complete field differs."""
    what = parse_what(args.fields)
    policies = list(TIES) if args.ties == "both" else [args.ties]
    budget = GRAPH_NODES if args.max_nodes is None else (args.max_nodes or None)
    limits = {"limit_seconds": args.limit_seconds or None,
              "limit_items": args.limit_items or None}
    table = Table([("dataset", "dataset", 12), ("t", "#T", 4), ("ties", "ties", 5),
                   ("rows", "rows", 4), ("t_graphs", "T graphs", 9), ("mb_graphs", "MB", 6),
                   ("t_sat", "T sat", 8), ("mb_sat", "MB", 6), ("t_auto", "T auto", 8),
                   ("auto", "auto", 6), ("auto_ratio", "auto/best", 9), ("auto_ok", "ok", 4),
                   ("complete", "complete", 8), ("agree", "agree", 6), ("differ", "differ", 6)],
                  args.json, args.plot_rows)
    differ = 0
    for name, _, trees, trained in configurations(paper.TABLE2, args):
        rows = trained.test_instances[:args.rows]
        for ties in policies:
            t_g, mb_g, graphs, by_g = run_engine(trained.forest, ties, rows, what, "graphs",
                                                 {"max_nodes": budget})
            t_s, mb_s, sat, _ = run_engine(trained.forest, ties, rows, what, "sat", limits)
            t_a, _, _, by_a = run_engine(trained.forest, ties, rows, what, "auto",
                                         {"max_nodes": args.node_budget, **limits})
            assert sat is not None
            best = t_s if graphs is None else min(t_g, t_s)
            row: dict[str, Any] = {
                "dataset": name, "t": trees, "ties": ties, "rows": len(rows),
                "t_graphs": round(t_g, 3) if graphs is not None else None,
                "mb_graphs": round(mb_g), "t_sat": round(t_s, 3), "mb_sat": round(mb_s),
                "t_auto": round(t_a, 3), "auto": by_a,
                "auto_ratio": round(t_a / best, 2) if best else None,
                "auto_ok": "yes" if t_a <= AUTO_FACTOR * best + AUTO_SLACK else "no"}
            if graphs is None:
                row["graphs_stopped"] = by_g
            else:
                row["complete"], row["agree"], row["differ"] = compare(graphs, sat)
                differ += row["differ"]
            row["fields"] = [WHAT_FIELDS[k] for k in what]
            table.row(row)
    return 1 if differ else 0
