"""``rfcircuits bench``: reproduce the paper's tables beside its figures.

Each row trains the table's configuration (dataset, #trees, depth 4, 85/15 split, fixed
seed) with scikit-learn, measures ours, and prints the paper's value of every measured column
next to it, with the ratio ours/paper for times. ``--json`` prints one object per dataset
(JSON Lines) with snake_case keys and ``paper_<key>`` for the paper's values. Rows are printed
as they finish, so an interrupted run keeps them. Times are the minimum over repeated runs
when a run is short (see :func:`measure`).

``compile`` and ``explain`` take ``--votes``: the paper's hard votes (default), the model's
soft votes, or both, the soft row after the hard row of the same model with the ratios
soft/hard of what they measure (:func:`beside`: the price of the weights).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from rfcircuits.cli import paper
from rfcircuits.errors import BudgetExceeded, InputError
from rfcircuits.progress import Progress
from rfcircuits.budget import peak_mb, reset_peak
from rfcircuits.datasets import Dataset, Trained, load_csv, train_forest, train_forests

if TYPE_CHECKING:
    from rfcircuits.explanation import Explanation

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


def load(data_dir: str, name: str) -> Dataset:
    """The dataset ``name`` of ``--data-dir`` (its file ``NAME.csv``)."""
    path = os.path.join(data_dir, f"{name}.csv")
    if not os.path.exists(path):
        raise InputError(f"--data-dir: no dataset file {path}")
    return load_csv(path)


def train(data_dir: str, name: str, trees: int, seed: int, depth: int = DEPTH) -> Trained:
    return train_forest(load(data_dir, name), trees, depth, seed)


def selected(table: dict[str, Any], text: str | None, option: str = "--datasets") -> list[str]:
    """The keys of ``table`` that ``option``'s comma list ``text`` names (absent: all)."""
    if not text:
        return list(table)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in table]
    if unknown:
        raise InputError(f"{option}: {unknown[0]!r} is not in the table "
                         f"(choose from {', '.join(table)})")
    return names


#: ``--votes``: the votes each configuration's model is imported with, in row order.
VOTES = {"hard": ("hard",), "soft": ("soft",), "both": ("hard", "soft")}


def configurations(table: dict[str, dict[str, float]], args: argparse.Namespace
                   ) -> Iterator[tuple[str, dict[str, float], int, Trained]]:
    """Each dataset of ``table`` that ``--datasets`` selects: its name, the paper's row, the
    number of trees (``--trees`` or the paper's) and the forest trained for it (hard votes)."""
    for name, ref, trees, (trained,) in voted(table, args, ("hard",)):
        yield name, ref, trees, trained


def voted(table: dict[str, dict[str, float]], args: argparse.Namespace,
          votes: Sequence[str] | None = None
          ) -> Iterator[tuple[str, dict[str, float], int, list[Trained]]]:
    """As :func:`configurations`, with one model trained per dataset and imported once per
    entry of ``votes`` (default: as ``--votes`` asks): the forests of the same model. Training
    is announced on stderr first: a large forest takes a while."""
    votes = votes or VOTES[getattr(args, "votes", None) or "hard"]
    for name in selected(table, args.datasets):
        ref = table[name]
        for trees in args.trees or (int(ref["T"]),):
            if not args.no_progress:
                print(f"[bench] {name}: training {trees} trees", file=sys.stderr, flush=True)
            yield name, ref, trees, train_forests(load(args.data_dir, name), trees, DEPTH,
                                                  args.seed, votes)


def tree_counts(text: str | None) -> tuple[int, ...]:
    """``--trees``: one number of trees, or a comma list (each dataset trained with each, in
    turn: ``bench compile --plot`` draws them as a line); empty when absent."""
    if text is None:
        return ()
    try:
        counts = tuple(int(n) for n in text.split(","))
    except ValueError:
        raise InputError(f"--trees: expected a number or a comma list of numbers, not "
                         f"{text!r}") from None
    if min(counts) < 1:
        raise InputError("--trees must be at least 1")
    return counts


class Table:
    """Prints rows as text columns or JSON Lines, flushing each row; ``kept`` (a list)
    collects the rows printed, as JSON would give them, for ``--plot``."""

    def __init__(self, columns: Sequence[tuple[str, str, int]], as_json: bool,
                 kept: list[dict[str, Any]] | None = None) -> None:
        self.columns = columns  # (key, header, width)
        self.as_json = as_json
        self.kept = kept
        if not as_json:
            print("  ".join(h.rjust(w) if i else h.ljust(w)
                            for i, (_, h, w) in enumerate(columns)), flush=True)

    def row(self, values: dict[str, Any], keep: bool = True) -> None:
        """Print one row; ``keep=False``: a line of the text table that is no row of its
        own (the ratios under a soft row)."""
        if self.kept is not None and keep:
            self.kept.append(values)
        if self.as_json:
            print(json.dumps(values), flush=True)
            return
        cells = []
        for i, (key, _, width) in enumerate(self.columns):
            v = values.get(key)
            text = "-" if v is None else _fmt(v)
            cells.append(text.ljust(width) if i == 0 else text.rjust(width))
        print("  ".join(cells), flush=True)


def stopped(table: Table, row: dict[str, Any], exc: BudgetExceeded) -> None:
    """Print :func:`stop`'s row."""
    table.row(stop(row, exc))


def stop(row: dict[str, Any], exc: BudgetExceeded) -> dict[str, Any]:
    """The row of a dataset whose compile exceeded the node budget (or ``--timeout``): its
    name, #T, votes and (JSON) why; the message also on stderr."""
    label = row["dataset"] + (" (soft votes)" if row.get("votes") == "soft" else "")
    print(f"[bench] {label}: {exc.for_cli()}", file=sys.stderr, flush=True)
    return {**row, "stopped": exc.for_cli()}


def with_votes(columns: list[tuple[str, str, int]], args: argparse.Namespace
               ) -> list[tuple[str, str, int]]:
    """The text table's ``columns`` with a votes column after #T unless every row is hard
    (the paper's tables keep their columns)."""
    if (args.votes or "hard") == "hard":
        return columns
    at = [key for key, _, _ in columns].index("t") + 1
    return [*columns[:at], ("votes", "votes", 9), *columns[at:]]


def beside(out: Table, row: dict[str, Any], hard: dict[str, Any] | None,
           keys: Sequence[str]) -> dict[str, float | None] | None:
    """Print ``row``. A soft row after the hard row ``hard`` of the same model (``--votes
    both``) also gets each measured column of ``keys`` as soft over hard (the price of the
    weights; null where either is missing, a stopped row's peak being up to its stop): in
    JSON its ``vs_hard``, in text a
    line of its own under the row (when any is known). Returns those ratios."""
    if hard is None or row.get("votes") != "soft":
        out.row(row)
        return None
    ratios = {k: None if (r := ratio(row.get(k), hard.get(k))) is None else round(r, 3)
              for k in keys}
    if out.as_json:
        out.row({**row, "vs_hard": ratios})
    else:
        out.row(row)
        if any(v is not None for v in ratios.values()):
            out.row({"dataset": row["dataset"], "votes": "soft/hard", **ratios}, keep=False)
    return ratios


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


def compare(graphs: list[Explanation], sat: list[Explanation]) -> tuple[int, int, int]:
    """``(complete, agree, differ)``: the SAT engine's complete fields, and how many of them
    equal the decision graphs' answer."""
    complete = agree = 0
    for g, s in zip(graphs, sat):
        for key in s.what:
            if key in s.incomplete:
                continue
            complete += 1
            agree += s.field_json(key) == g.field_json(key)
    return complete, agree, complete - agree


def run_bench(args: argparse.Namespace) -> int:
    if args.what == "compile":
        if args.form == "nnf":
            return bench_nnf(args)
        return bench_dg(args)
    return bench_explain(args)


#: The measured columns a soft row compares with its hard row's (``vs_hard``), per table.
VS_HARD = {"table1": ("n_nnf", "t_nnf"),
           "table2": ("n_3", "t_3", "n_3b", "t_3b", "peak_mb"),
           "table4": ("n_3b", "n_3a", "t_3b", "t_3a_3b", "peak_mb"),
           "explain": ("t_compile", "n_3b", "peak_mb", "t_sr", "t_nr", "t_sgnr", "t_ce",
                       "t_sat_compile", "t_sat", "n_sat", "sat_mb")}


def per_class_nodes(comp: Any) -> float:
    """Decision-graph nodes of a compilation's class formulas, per class (#N_3B)."""
    k = len(comp.roots)
    return round(sum(comp.nodes(c) for c in range(k)) / k, 1)


def bench_dg(args: argparse.Namespace) -> int:
    """Table 2 (Alg. 3 vs 3B per class) or, with ``--form dg``, Table 4 (3A vs 3B); with
    ``--votes``, of the model's soft votes too (:func:`beside`)."""
    table4 = args.form == "dg"
    ref_table = paper.TABLE4 if table4 else paper.TABLE2
    if table4:
        columns = [("dataset", "dataset", 13), ("t", "#T", 4), ("n_3b", "#N_3B", 9),
                   ("paper_n_3b", "paper", 10), ("n_3a", "#N_3A", 9), ("paper_n_3a", "paper", 10),
                   ("t_3b", "T_3B", 8), ("paper_t_3b", "paper", 7),
                   ("t_3a_3b", "T_3A-3B", 8), ("paper_t_3a_3b", "paper", 7)]
    else:
        columns = [("dataset", "dataset", 13), ("t", "#T", 4), ("n_rf", "#N_RF", 6),
                   ("a", "%A", 6), ("n_3", "#N_3", 8), ("paper_n_3", "paper", 8),
                   ("t_3", "T_3", 7), ("paper_t_3", "paper", 6), ("n_3b", "#N_3B", 9),
                   ("paper_n_3b", "paper", 10), ("t_3b", "T_3B", 8), ("paper_t_3b", "paper", 7),
                   ("t_ratio", "ratio", 7)]
    columns += [("peak_mb", "peak MB", 8), ("node_bytes", "B/node", 6)]
    out = Table(with_votes(columns, args), args.json, args.plot_rows)
    for name, ref, trees, forests in voted(ref_table, args):
        hard = None
        for trained in forests:
            row = _dg_row(name, ref, trees, trained, table4, args)
            beside(out, row, hard, VS_HARD["table4" if table4 else "table2"])
            hard = row
    return 0


def _dg_row(name: str, ref: dict[str, float], trees: int, trained: Trained, table4: bool,
            args: argparse.Namespace) -> dict[str, Any]:
    """One forest's Table 2 (or 4) row; the paper's figures only beside hard votes in the
    paper's configuration (the paper's are of hard votes). A Table 2 row whose decision
    graphs stopped at a budget still has the forest's figures and its NNF circuits' (what the
    SAT engine compiles)."""
    from rfcircuits.classformula import compile_nnf
    from rfcircuits.dgcompile import compile_dg

    forest = trained.forest
    k = len(forest.classes)
    same = trees == ref["T"] and forest.voting == "hard"
    row: dict[str, Any] = {"dataset": name, "t": trees, "votes": forest.voting}
    gc.collect()
    reset_peak()
    try:
        comp = compile_dg(forest, form="dg" if table4 else "dg-conj",
                          max_nodes=args.node_budget, timeout=args.timeout,
                          counter=args.counter)
    except BudgetExceeded as exc:  # its peak up to the stop
        row, comp = stop({**row, "peak_mb": round(peak_mb())}, exc), None
    if comp is not None:
        # The compile's peak (the NNF compile below is far smaller), and what the graphs
        # hold per node at the end: every node in the store, intermediates not yet collected.
        row["peak_mb"] = round(peak_mb())
        row["node_bytes"] = round(comp.dg.store.node_bytes() / len(comp.dg), 1)
        t_3b = (sum(comp.seconds) - sum(comp.extra_3a_seconds)) / k
        if table4:
            row.update(n_3b=round(sum(comp.dg.size(rs) for rs in comp.roots_3b) / k, 1),
                       n_3a=per_class_nodes(comp), t_3b=round(t_3b, 4),
                       t_3a_3b=round(sum(comp.extra_3a_seconds) / k, 4))
        else:
            t_ratio = ratio(t_3b, ref["T_3B"]) if same else None
            row.update(n_3b=per_class_nodes(comp), t_3b=round(t_3b, 4),
                       t_ratio=None if t_ratio is None else round(t_ratio, 4))
        del comp  # freed before the NNF compile
    if not table4:
        t3, nnf = measure(lambda: compile_nnf(forest))
        row.update(n_rf=forest.n_nodes, a=round(100 * trained.accuracy, 2),
                   n_3=round(sum(nnf.nodes(c) for c in range(k)) / k, 1), t_3=round(t3 / k, 4))
    for key in list(row) if "stopped" not in row else ():
        ref_key = {"n_3": "N_3", "t_3": "T_3", "n_3b": "N_3B", "t_3b": "T_3B",
                   "n_3a": "N_3A", "t_3a_3b": "T_3A_3B"}.get(key)
        if ref_key and ref_key in ref:
            row["paper_" + key] = ref[ref_key] if same else None
    return row


def bench_nnf(args: argparse.Namespace) -> int:
    """Table 1 (NNF, Alg. 3), or the scaling run with ``--trees``; with ``--votes``, of the
    model's soft votes too (:func:`beside`)."""
    from rfcircuits.classformula import compile_nnf

    table = Table(with_votes([
        ("dataset", "dataset", 13), ("f", "#F", 3), ("c", "#C", 3), ("t", "#T", 5),
        ("n_rf", "#N_RF", 6), ("a", "%A", 6), ("n_nnf", "#N_NNF", 8), ("paper_n_nnf", "paper", 8),
        ("t_nnf", "T_NNF", 8), ("paper_t_nnf", "paper", 7), ("t_ratio", "ratio", 7)], args),
        args.json, args.plot_rows)
    for name, ref, trees, forests in voted(paper.TABLE1, args):
        hard = None
        for trained in forests:
            forest = trained.forest
            seconds, comp = measure(lambda: compile_nnf(forest))
            paper_n = paper_t = None
            if forest.voting == "hard":  # the paper's figures are of hard votes
                scaling = paper.SCALING_1000.get(name, {}) if trees == 1000 else {}
                paper_n = ref["N_NNF"] if trees == ref["T"] else scaling.get("N_NNF")
                paper_t = ref["T_NNF"] if trees == ref["T"] else scaling.get("T_NNF")
            t_ratio = ratio(seconds, paper_t)
            row = {"dataset": name, "f": len(forest.features), "c": len(forest.classes),
                   "t": trees, "votes": forest.voting, "n_rf": forest.n_nodes,
                   "a": round(100 * trained.accuracy, 2), "n_nnf": comp.total_nodes(),
                   "paper_n_nnf": paper_n, "t_nnf": round(seconds, 4), "paper_t_nnf": paper_t,
                   "t_ratio": None if t_ratio is None else round(t_ratio, 4)}
            beside(table, row, hard, VS_HARD["table1"])
            hard = row
    return 0


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Time without the cyclic garbage collector, then collect untimed (as :mod:`timeit`
    does): a reason is an NNF of up to millions of objects, and a full collection that one
    of them triggers would be charged to whichever stage happened to allocate next."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()


@contextlib.contextmanager
def _frozen() -> Iterator[Callable[[], None]]:
    """Keep the cyclic garbage collector off the objects alive now (the compiled forest and
    graphs) while explanations are timed, and give a function that does the same for those
    alive later (call it after each explanation's collection: the explainer's caches grow).
    :func:`_no_gc` collects after each explanation, and a full collection walks every
    container of the compiled graphs and caches, streaming them through the CPU caches and
    evicting what the next explanation's first stage reads (docs/decisions.md, "`bench
    explain` times as the paper does, with the heap frozen"). Frozen objects that become
    garbage meanwhile are collected once unfrozen."""
    gc.freeze()
    try:
        yield gc.freeze
    finally:
        gc.unfreeze()


def _beside_sat(forest: Any, instances: Sequence[Any], what: Sequence[str],
                answers: Sequence[Any] | None, args: argparse.Namespace) -> dict[str, Any]:
    """The SAT engine on the same instances (its default limits, or ``--limit-*``): seconds
    per instance (its compile apart, ``t_sat_compile``), its circuit's NNF nodes, its peak
    memory (compile and instances), the share of its fields complete, and how many complete
    fields differ from the decision graphs' ``answers`` (must be 0; absent when the graphs
    stopped at the node budget, ``answers`` None)."""
    from rfcircuits.explain import Explainer

    gc.collect()
    reset_peak()
    start = time.perf_counter()
    sat = Explainer(forest, engine="sat", limit_seconds=args.limit_seconds or None,
                    limit_items=args.limit_items or None)
    sat.compile()
    compiled = time.perf_counter()
    theirs = [sat.explain_states(x, what) for x in instances]
    seconds = time.perf_counter() - compiled
    # Without the graphs' answers, the SAT engine's against themselves: only the count.
    complete, _, differ = compare(answers if answers is not None else theirs, theirs)
    n = max(1, len(instances))
    row = {"t_sat_compile": round(compiled - start, 3), "t_sat": round(seconds / n, 6),
           "n_sat": sat.engine.cnf.nnf_nodes, "sat_mb": round(peak_mb()),
           "sat_complete": round(complete / max(1, n * len(what)), 3)}
    if answers is not None:
        row["sat_differ"] = differ
    return row


#: Table 4's contrastive columns of an explain row, which the text output prints in a table
#: of their own.
CE_KEYS = ("t_ce", "paper_t_ce", "c_ce", "paper_c_ce")


def bench_explain(args: argparse.Namespace) -> int:
    """Table 3 (SRs, NRs, robustness, shortest GNRs) and Table 4 (CEs) per test instance
    (:func:`_explain_row`); with ``--votes``, of the model's soft votes too
    (:func:`beside`)."""
    table3 = Table(with_votes([
        ("dataset", "dataset", 13), ("t", "#T", 4), ("n_rf", "#N_RF", 6), ("a", "%A", 6),
        ("t_compile", "T_comp", 7), ("n_3b", "#N_3B", 9), ("peak_mb", "peak MB", 8),
        ("t_cr", "T_CR", 7), ("t_gr", "T_GR", 7), ("t_sr", "T_SR", 8),
        ("paper_t_sr", "paper", 7), ("t_sr_expand", "T_SRexp", 8), ("c_sr", "#C_SR", 7),
        ("paper_c_sr", "paper", 7), ("t_nr", "T_NR", 8), ("paper_t_nr", "paper", 7),
        ("c_nr", "#C_NR", 7), ("paper_c_nr", "paper", 7), ("r", "r", 5), ("paper_r", "paper", 5),
        ("nr_by", "NRs by", 7), ("t_sgnr", "T_sGNR", 8), ("paper_t_sgnr", "paper", 7),
        ("c_sgnr", "#C_sGNR", 7), ("paper_c_sgnr", "paper", 7), ("t_sat", "T SAT", 8),
        ("n_sat", "#N SAT", 8), ("sat_mb", "SAT MB", 7), ("sat_complete", "SAT cmpl", 8),
        ("sat_differ", "differ", 6)], args), args.json, args.plot_rows)
    rows4 = []
    for name, ref, trees, forests in voted(paper.TABLE3, args):
        hard = None
        for trained in forests:
            row = _explain_row(name, ref, trees, trained, args)
            ratios = beside(table3, row, hard, VS_HARD["explain"])
            if not args.json and "t_ce" in row:  # text: the CE columns in a table of their own
                rows4.append({k: row.get(k) for k in ("dataset", "t", "votes", *CE_KEYS)})
                if ratios and ratios["t_ce"] is not None:
                    rows4.append({"dataset": name, "votes": "soft/hard", "t_ce": ratios["t_ce"]})
            hard = row
    if rows4:
        print()
        table4 = Table(with_votes([("dataset", "dataset", 13), ("t", "#T", 4),
                                   ("t_ce", "T_CE", 8), ("paper_t_ce", "paper", 7),
                                   ("c_ce", "#C_CE", 7), ("paper_c_ce", "paper", 7)], args),
                       False)
        for r4 in rows4:
            table4.row(r4)
    return 0


def _explain_row(name: str, ref: dict[str, float], trees: int, trained: Trained,
                 args: argparse.Namespace) -> dict[str, Any]:
    """One forest's Table 3 row, with Table 4's contrastive columns for its datasets.

    Times are per explained instance (up to ``--rows``, 100 test rows by default) and
    exclude compiling the class
    formulas (reported as ``t_compile``, with their decision-graph nodes per class ``n_3b``;
    ``peak_mb`` is the peak of the compile and the explanations), as in the paper; ``t_nr``
    and ``t_ce`` (per target
    class) are all of the NRs' and CEs' work, read off the graphs' existential projections
    where the explainer's default ``nr_method="auto"`` compiles them (their build is part of
    ``t_compile``; ``nr_by`` says for how many graphs), else searched on the graphs; ``t_sr`` is
    the default SR method, the minimal hitting sets of the NRs (which it needs: add
    ``t_nr``); robustness and ``V`` are read off the NRs. ``t_sgnr`` is Alg. 6–7 on GR,
    excluding building GR as the paper does; ``t_gr`` is building the part of GR they need
    (its clauses on the shortest NRs' features). ``t_sr_expand`` is bottom-up
    expansion of CR and ``t_cr`` building CR for it, over the first ``--expand`` instances
    only (the slow method on large graphs, where it would dominate the run). Each
    explanation is timed with the garbage collector off (:func:`_no_gc`), the objects alive
    before it frozen (:func:`_frozen`). The SAT engine's columns beside them are
    :func:`_beside_sat`'s, on the same instances, after the graphs are freed; they are
    measured also when the graphs exceed the node budget (a stopped row). The paper's figures
    stand only beside hard votes in the paper's configuration."""
    from rfcircuits.dgcompile import compile_dg
    from rfcircuits.explain import Explainer, Timings

    forest = trained.forest
    multi = name in paper.TABLE4
    instances = trained.test_instances[:args.rows]
    what = ("sr", "nr", "robust", "flips") + (("ce",) if multi else ())
    gc.collect()
    reset_peak()
    start = time.perf_counter()
    try:
        with Progress(f"{name}: compiling", enabled=not args.no_progress) as progress:
            # compiled here, as the explainer would, to give the compile --timeout: its
            # deadline stays on the graphs while the explainer compiles what it needs next
            comp = compile_dg(forest, max_nodes=args.node_budget, timeout=args.timeout,
                              progress=progress)
            explainer = Explainer(forest, engine="graphs", max_nodes=args.node_budget,
                                  compiled=comp, progress=progress)
            explainer.compile(negated=multi)
            comp.lift_caps(args.node_budget)  # explanations run to the end
    except BudgetExceeded as exc:
        row = stop({"dataset": name, "t": trees, "votes": forest.voting,
                    "n_rf": forest.n_nodes, "a": round(100 * trained.accuracy, 2),
                    "peak_mb": round(peak_mb())}, exc)
        if args.engine == "both":
            row.update(_beside_sat(forest, instances, what, None, args))
        return row
    compile_seconds = time.perf_counter() - start
    timing, expand = Timings(), Timings()
    counts = {"sr": 0, "nr": 0, "sgnr": 0, "ce": 0, "r": 0, "robust": 0}
    answers = []
    with _frozen() as freeze, Progress(f"{name}: instances",
                                       enabled=not args.no_progress) as progress:
        for i, x in enumerate(instances):
            progress(i, len(instances))
            with _no_gc():
                e = explainer.explain_states(x, what, timing)
            answers.append(e)
            if i < args.expand:
                with _no_gc():
                    explainer.explain_states(x, ("sr",), expand, sr_method="expand")
            freeze()
            counts["sr"] += len(e.sufficient_reasons)
            counts["nr"] += len(e.necessary_reasons)
            counts["sgnr"] += len(e.shortest_flips)
            counts["ce"] += sum(len(ces) for _, ces in e.contrastive)
            if e.robustness is not None:
                counts["r"] += e.robustness
                counts["robust"] += 1
    n = max(1, len(instances))
    same = trees == ref["T"] and forest.voting == "hard"

    def expanded(seconds: float) -> float | None:
        done = min(len(instances), args.expand)
        return round(seconds / done, 6) if done else None

    def pair(key: str, value: float, ref_key: str, table: dict[str, float] = ref
             ) -> dict[str, float | None]:
        return {key: value, f"paper_{key}": table[ref_key] if same else None}

    row: dict[str, Any] = {"dataset": name, "t": trees, "votes": forest.voting,
                           "n_rf": forest.n_nodes, "a": round(100 * trained.accuracy, 2),
                           "t_compile": round(compile_seconds, 3),
                           "n_3b": per_class_nodes(explainer.graphs.compiled),
                           "peak_mb": round(peak_mb()), "t_cr": expanded(expand.reasons),
                           "t_sr_expand": expanded(expand.sr)}
    row.update(pair("t_sr", round(timing.sr / n, 6), "T_SR"))
    row.update(pair("c_sr", round(counts["sr"] / n, 2), "C_SR"))
    row.update(pair("t_nr", round(timing.nr / n, 6), "T_NR"))
    row.update(pair("c_nr", round(counts["nr"] / n, 2), "C_NR"))
    row.update(pair("r", round(counts["r"] / max(1, counts["robust"]), 2), "r"))
    projected, graphs = explainer.graphs.projected()
    row["nr_by"] = ("proj" if projected == graphs else "search" if not projected
                    else f"proj {projected}/{graphs}")
    row["t_gr"] = round(timing.reasons / n, 6)
    row.update(pair("t_sgnr", round(timing.flips / n, 6), "T_sGNR"))
    row.update(pair("c_sgnr", round(counts["sgnr"] / n, 2), "C_sGNR"))
    if multi:
        targets = max(1, timing.ce_targets)
        row.update(pair("t_ce", round(timing.ce / targets, 6), "T_CE", paper.TABLE4[name]))
        row.update(pair("c_ce", round(counts["ce"] / targets, 2), "C_CE", paper.TABLE4[name]))
    del explainer  # the SAT engine's peak memory is its own
    if args.engine == "both":
        row.update(_beside_sat(forest, instances, what, answers, args))
    return row
