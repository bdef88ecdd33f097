"""The native engine's commands of the ``rfcircuits`` CLI: train, import, compile, explain,
demo, bench.

:func:`add_commands` registers them on an argparse sub-parser; :func:`run` executes a parsed
command with the CLI's error policy: bad input → one message on stderr and exit 2, never a
traceback; Ctrl-C, SIGTERM, SIGHUP → exit 128 + signal, finished results kept. The console script lives
in :mod:`rfcircuits.cli.main`, which adds the oracle commands.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rfcircuits.atomicio import (PARTIAL, atomic_open, check_output, output_dir,
                                 record_output, write_json)
from rfcircuits.interrupts import exit_status, raised_by_signal, signals_as_interrupts
from rfcircuits.errors import BudgetExceeded, InputError
from rfcircuits.explanation import FORMATS, TEXT_LIMIT
from rfcircuits.forest import TIES, VOTES, Forest, load_forest, save_forest
from rfcircuits.formats import circuit_stem
from rfcircuits.progress import Progress

if TYPE_CHECKING:
    from rfcircuits.datasets import Scored

Handler = Callable[[argparse.Namespace], int]


class DefaultsFormatter(argparse.HelpFormatter):
    """Help that shows every option's default: ``(default: X)`` is appended to an option's help
    unless the default is None, False or suppressed (nothing to show: the help says what
    absence means) or the help already speaks of its default."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (action.option_strings and not (default is None or default is False
                                           or default == argparse.SUPPRESS)
                and not re.search(r"\bdefault\b", text, re.IGNORECASE)):
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """The CLI's parsers: help through :class:`DefaultsFormatter`; sub-command parsers are of
    this class too (argparse makes them of their parent's class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)


def add_no_progress(p: argparse.ArgumentParser) -> None:
    """``-q/--quiet`` (alias ``--no-progress``, the older name): no progress on stderr, which
    then holds only errors and warnings; the flag is ``args.no_progress``."""
    p.add_argument("-q", "--quiet", "--no-progress", dest="no_progress", action="store_true",
                   help="print no progress on stderr (only errors and warnings)")


def add_commands(sub: Any, bench_extra: dict[str, tuple[Handler, str]] | None = None,
                 without_data: Sequence[str] = ()) -> None:
    """Register train, import, compile, explain, demo and bench; ``bench_extra`` adds
    benchmarks (``rfcircuits bench NAME``: its handler and what it measures) that need the
    oracles (:mod:`rfcircuits.cli.main` adds the oracle comparisons and the campaign
    backends); those in ``without_data`` need no ``--data-dir``."""
    p = sub.add_parser("train", help="train a scikit-learn random forest on a CSV file")
    p.add_argument("--data", required=True, help="CSV file with a header row")
    p.add_argument("--target", help="label column (default: the last column)")
    p.add_argument("--trees", type=int, default=10, help="number of trees")
    p.add_argument("--depth", type=int, default=4, help="maximum depth of a tree")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the 85/15 split and of scikit-learn's random forest")
    p.add_argument("--out", required=True, help="forest file to write (rfcircuits.forest/1)")
    p.add_argument("--test-out", help="also write the 15%% test rows as instances (JSON Lines; "
                                      "absent: not written)")
    p.set_defaults(handler=cmd_train)

    p = sub.add_parser(
        "import", help="a trained scikit-learn, XGBoost or LightGBM model file as a forest "
                       "file",
        description="Convert a fitted scikit-learn RandomForestClassifier, "
                    "ExtraTreesClassifier, DecisionTreeClassifier or "
                    "GradientBoostingClassifier, saved with pickle or joblib, or an XGBoost or "
                    "LightGBM classifier (its sklearn-API model pickled, or the library's own "
                    "model file: XGBoost's JSON or UBJSON, LightGBM's text model or "
                    "dump_model() JSON), into a forest file (rfcircuits.forest/1). A Pipeline "
                    "is not accepted: save its final estimator, if its other steps leave the "
                    "features unchanged. Raw numbers are read as float32, as scikit-learn and "
                    "XGBoost do (LightGBM: float64). "
                    "WARNING: loading a pickle or joblib file runs code the file names; load "
                    "only files you trust.")
    p.add_argument("--model", required=True,
                   help="the model file (pickle or joblib, which runs code when loaded: trusted "
                        "files only; or an XGBoost or LightGBM model file)")
    p.add_argument("--out", required=True, help="forest file to write (rfcircuits.forest/1)")
    p.add_argument("--data", help="CSV file of rows to report on, as train does: accuracy of "
                                  "the hard-majority vote (with labels) and agreement with the "
                                  "model's predict (absent: no report); columns are matched "
                                  "to the model's feature names, else by position")
    p.add_argument("--target", help="label column of --data (default: the one column that is "
                                    "not a feature; by position, the last column when there "
                                    "is one column more than features; else no labels)")
    p.add_argument("--class-names", metavar="A,B,...",
                   help="names for the model's classes, in the order of its classes_ (default: "
                        "classes_ as text, e.g. 0,1,2); --data's labels stay those of classes_")
    p.add_argument("--votes", choices=VOTES,
                   help="soft (the default): the leaves' class probabilities, or a boosted "
                        "model's scores (its only meaning: GradientBoosting, XGBoost, "
                        "LightGBM), summed exactly: the decision the model's predict makes; "
                        "hard: each tree votes for its leaf's class (the paper's majority "
                        "vote, what PyXAI and RFxpl explain)")
    p.set_defaults(handler=cmd_import)

    p = sub.add_parser("compile", help="compile class formulas into circuits")
    p.add_argument("--forest", required=True, help="forest file (rfcircuits.forest/1)")
    p.add_argument("--form", choices=("nnf", "dg", "dg-conj"), default="nnf",
                   help="nnf: Alg. 3 (the SAT engine's); dg-conj: Alg. 3B (the decision "
                        "graphs'); dg: Alg. 3A")
    add_ties(p)
    p.add_argument("--out", help="directory for one circuit file per class and circuits.json, "
                                 "which explain --circuits DIR reads instead of compiling "
                                 "(absent: print the sizes only)")
    p.add_argument("--dot", action="store_true", help="with --out, also write Graphviz files")
    add_counter(p)
    add_max_nodes(p)
    p.add_argument("--timeout", type=positive_seconds,
                   help="stop a decision-graph compile after S seconds (absent: no limit)")
    add_no_progress(p)
    p.set_defaults(handler=cmd_compile)

    p = sub.add_parser("explain", help="explain decisions (one JSON line per instance, or "
                                       "the readable text)")
    p.add_argument("--forest", required=True, help="forest file (rfcircuits.forest/1)")
    add_instances(p)
    p.add_argument("--what", default="all", help="all, or a comma list of "
                   "sr,nr,gsr,gnr,ce,robust,flips (an instance can have tens of thousands of "
                   "GSRs on large forests: see the README)")
    add_ties(p)
    p.add_argument("--out", help="write the explanations to this file (default: stdout; - is "
                                 "stdout too)")
    p.add_argument("--format", choices=FORMATS, default="jsonl",
                   help="jsonl: one canonical JSON line per instance (docs/formats.md); text: "
                        "the readable form, as print(explanation) shows it, at most "
                        f"{TEXT_LIMIT} items per list")
    p.add_argument("--circuits", metavar="DIR",
                   help="the class formulas compile --out DIR saved (or a file "
                        "Explainer.save wrote), read instead of compiled; they must be of "
                        "--forest and --ties, and answer with the engine they were compiled "
                        "for (absent: compile)")
    add_resume(p, "explanations")
    add_engine(p)
    add_limits(p)
    add_max_nodes(p)
    add_no_progress(p)
    p.set_defaults(handler=cmd_explain)

    p = sub.add_parser("demo", help="train, compile and explain a forest on bundled data")
    p.set_defaults(handler=cmd_demo)

    p = sub.add_parser("bench", help="reproduce the paper's tables beside its figures")
    extra = bench_extra or {}
    p.add_argument("what", choices=("compile", "explain", "engines", "predict", *extra),
                   help="the table: compile (Tables 1, 2 and 4, by --form), explain (Tables 3 "
                        "and 4's counterfactuals), engines (decision graphs, the SAT engine "
                        "and auto on Table 2's forests, side by side), predict (the imported "
                        "soft forest decides as the model's predict on every test row; where "
                        "the hard vote differs)" + "".join(
                            f", {name} ({text})" for name, (_, text) in extra.items()))
    p.add_argument("--data-dir", help="directory with the datasets' CSV files (every table "
                                      "but campaigns)")
    p.add_argument("--datasets", help="comma list (default: all of the table; predict: "
                                      "each model's own)")
    p.add_argument("--models", help="predict: comma list of rf, et, gb (default: all)")
    p.add_argument("--out", metavar="FILE",
                   help="predict: also write its rows to FILE as JSON Lines (through "
                        "FILE.partial, renamed when complete)")
    p.add_argument("--form", choices=("nnf", "dg", "dg-conj"), default="nnf",
                   help="compile: nnf for Table 1, dg-conj for Table 2, dg for Table 4")
    p.add_argument("--trees", metavar="N[,N...]",
                   help="override the tables' number of trees (absent: the paper's; predict: 100 "
                        "estimators); compile, explain, engines and oracles take a comma list, "
                        "each dataset trained with each number in turn")
    p.add_argument("--seed", type=int, default=0, help="seed of the training runs")
    p.add_argument("--expand", type=int, default=10, metavar="N",
                   help="explain: time SR expansion on the first N instances (0: skip)")
    p.add_argument("--json", action="store_true", help="one JSON object per dataset")
    p.add_argument("--rows", type=positive_int,
                   help="explain, engines, pyxai: test rows explained per forest (default: "
                        "explain 100, as the paper; engines and pyxai 20)")
    p.add_argument("--what", dest="fields", default="sr,nr,ce,robust,flips",
                   help="engines: the fields explained (all, or a comma list)")
    p.add_argument("--ties", choices=(*TIES, "both"), default="both",
                   help="engines: the tie policies run")
    p.add_argument("--pyxai-timeout", type=positive_seconds, default=60.0, metavar="S",
                   help="pyxai: seconds a PyXAI call, and our shortest SR, may take")
    p.add_argument("--engine", choices=("both", "graphs"), default="both",
                   help="explain, oracles: time the SAT engine beside the decision graphs "
                        "(both), or the decision graphs alone")
    p.add_argument("--timeout", type=positive_seconds,
                   help="compile --form dg|dg-conj, explain: stop a decision-graph compile "
                        "after S seconds, as --max-nodes stops it (absent: no limit)")
    p.add_argument("--votes", choices=("hard", "soft", "both"),
                   help="compile, explain: the trained forest's votes: hard (default, the "
                        "paper's), soft (its leaves' probabilities, as predict decides), or "
                        "both, the soft row after the hard row of the same model with their "
                        "ratios soft/hard")
    p.add_argument("--plot", metavar="DIR",
                   help="compile, explain, engines, pyxai, campaigns: also draw the rows as "
                        "figures in DIR, as SVG and PNG (compile-size, explain-time, "
                        "engines-time, pyxai-time, fuzz-timeline; needs pip install "
                        "'rfcircuits[plot]')")
    add_limits(p)
    if bench_extra:
        p.add_argument("--suite", choices=("paper", "trained"), default="paper",
                       help="oracles: Table 3's forests (depth 4; SRs and robustness), or the "
                            "100-tree forests of docs/benchmarks.md at their depths, every "
                            "check kind crosscheck runs (default: paper)")
    add_counter(p)
    add_max_nodes(p)
    add_no_progress(p)
    p.set_defaults(handler=cmd_bench, bench_extra={k: h for k, (h, _) in extra.items()},
                   bench_without_data=frozenset(without_data))


def add_instances(p: argparse.ArgumentParser, required: bool = True, also: str = "") -> None:
    """``--instances FILE`` (JSON Lines or CSV: :func:`rfcircuits.inputs.read_instances`) and
    ``--target COLUMN``, the CSV's label column to leave out."""
    p.add_argument("--instances", required=required, metavar="FILE",
                   help="instances: JSON Lines (one object per line) or CSV (a header row naming "
                        "the features; a file ending in .csv)" + also)
    p.add_argument("--target", metavar="COLUMN",
                   help="a column of the CSV instances to leave out (the labels)")


def add_ties(p: argparse.ArgumentParser) -> None:
    """``--ties``: the tie policy of the class formulas (docs/semantics.md)."""
    p.add_argument("--ties", choices=TIES, default="first",
                   help="tie policy: first (a tie goes to the first tied class) or all (to "
                        "every tied class)")


def add_engine(p: argparse.ArgumentParser) -> None:
    """``--engine``: which engine answers (:class:`rfcircuits.Explainer`'s ``engine``)."""
    p.add_argument("--engine", choices=("auto", "graphs", "sat"), default="auto",
                   help="graphs: decision graphs (every field, complete; large forests may not "
                        "fit); sat: SAT calls on the NNF circuits (any forest; enumerations stop "
                        "at --limit-seconds/--limit-items; no GSRs or GNRs); auto: the graphs "
                        "when they compile within 10 s and the node budget, else sat")


def add_limits(p: argparse.ArgumentParser) -> None:
    """The SAT engine's per-instance limits (``limit_seconds``, ``limit_items``)."""
    from rfcircuits.satengine import LIMIT_ITEMS, LIMIT_SECONDS

    p.add_argument("--limit-seconds", type=float, default=LIMIT_SECONDS, metavar="S",
                   help="SAT engine: seconds an instance's enumerations may take in all (0: no "
                        "limit); a field cut short is listed in the line's 'incomplete'")
    p.add_argument("--limit-items", type=int, default=LIMIT_ITEMS, metavar="N",
                   help="SAT engine: items an enumerated field may hold (0: no limit)")


def limits(args: argparse.Namespace) -> dict[str, Any]:
    """``limit_seconds`` and ``limit_items`` as ``--limit-seconds``/``--limit-items`` ask."""
    if not (args.limit_seconds >= 0 and math.isfinite(args.limit_seconds)):
        raise InputError("--limit-seconds must be 0 (no limit) or a positive number")
    if args.limit_items < 0:
        raise InputError("--limit-items must be 0 (no limit) or positive")
    return {"limit_seconds": args.limit_seconds or None, "limit_items": args.limit_items or None}


def add_counter(p: argparse.ArgumentParser) -> None:
    """``--counter``: how decision-graph compiles count votes (:mod:`rfcircuits.dgcompile`)."""
    p.add_argument("--counter", choices=("topdown", "totalizer", "oddeven"), default="topdown",
                   help="dg forms: count votes by top-down expansion (default), a totalizer or "
                        "the paper's odd-even network (same graphs; the networks are slower "
                        "and hold more memory)")


def positive_int(text: str) -> int:
    """argparse type of counts such as ``--jobs``: a positive integer (argparse exits 2 with
    the message)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def positive_seconds(text: str) -> float:
    """argparse type of durations such as ``--timeout``: a finite number above 0 (``nan``
    would otherwise pass every ``<= 0`` check and disable the limit)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (0 < value < math.inf):
        raise argparse.ArgumentTypeError("must be a positive, finite number of seconds")
    return value


def run(args: argparse.Namespace) -> int:
    """Run a parsed command under the CLI's error policy; SIGTERM and SIGHUP end it as Ctrl-C
    does, with exit status 128 + signal (:mod:`rfcircuits.interrupts`)."""
    try:
        with signals_as_interrupts():
            return int(args.handler(args))
    except InputError as exc:
        print(f"rfcircuits {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BudgetExceeded as exc:
        print(f"rfcircuits {args.command}: stopped: {exc.for_cli()}", file=sys.stderr)
        return 1
    except MemoryError:  # the machine's or a ulimit's memory ran out before --max-nodes did
        print(f"rfcircuits {args.command}: stopped: out of memory (--max-nodes N stops the "
              "decision graphs at N nodes)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return _interrupted(args)
    except BrokenPipeError:
        return 0
    except OSError as exc:  # an output that cannot be written: full disk, no permission...
        if raised_by_signal(exc):
            return _interrupted(args)
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"rfcircuits {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        _drop_stdout()
        return 2
    except Exception as exc:
        if raised_by_signal(exc):
            return _interrupted(args)
        raise


def _interrupted(args: argparse.Namespace) -> int:
    print(f"rfcircuits {args.command}: interrupted", file=sys.stderr)
    return exit_status()


def _drop_stdout() -> None:
    """Point the process's stdout at the null device: what is still buffered for a failed
    stdout would otherwise fail again, with a traceback, when the interpreter flushes it at
    exit. A replaced ``sys.stdout`` (a caller capturing output) is left alone."""
    if sys.stdout is sys.__stdout__:
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


# ---------------------------------------------------------------------------------------------


def cmd_train(args: argparse.Namespace) -> int:
    from rfcircuits.forest import instance_to_json
    from rfcircuits.datasets import Scored, load_csv, train_forest

    for path in (args.out, args.test_out):
        if path:
            check_output(path)
    data = load_csv(args.data, args.target)
    trained = train_forest(data, args.trees, args.depth, args.seed)
    save_forest(trained.forest, args.out)
    if args.test_out:
        with atomic_open(args.test_out) as handle:
            for x in trained.test_instances:
                handle.write(json.dumps(instance_to_json(trained.forest, x),
                                        ensure_ascii=False) + "\n")
    report(f"{data.name}: {args.trees} trees, depth {args.depth}", trained.forest,
           Scored(trained.test_instances, trained.accuracy, trained.vote_agreement), "test rows")
    print(f"wrote {args.out}")
    return 0


def report(head: str, forest: Forest, scored: Scored | None, rows: str,
           library: str = "sklearn") -> None:
    """What ``train`` and ``import`` print about a forest: its size and, for ``scored`` rows,
    how its vote (hard or soft) fares against their labels (when they have some) and against
    the model's ``predict`` (``library``'s)."""
    print(f"{head}, {forest.n_nodes} nodes" +
          (f"; {len(scored.instances)} {rows}" if scored else ""))
    if scored is None:
        return
    if scored.accuracy is not None:
        vote = "hard-majority vote" if forest.voting == "hard" else "exact soft vote"
        print(f"accuracy ({vote}): {100 * scored.accuracy:.2f}%")
    print(f"vote agrees with {library} predict: {100 * scored.vote_agreement:.2f}% of {rows}")
    if forest.voting == "soft":
        print(f"near ties (flagged: the library's float rounding could decide them): "
              f"{scored.near_ties} {rows}")


def cmd_import(args: argparse.Namespace) -> int:
    """``rfcircuits import``: a pickled scikit-learn model, or an XGBoost or LightGBM model
    (:func:`rfcircuits.boosted_import.load_model_file`), as a forest file; with ``--data``,
    what ``train`` reports, on every row of the CSV, and a soft forest's near ties."""
    import numpy as np

    from rfcircuits.boosted_import import (forest_from_model, library_of, load_model_file,
                                           model_name)
    from rfcircuits.datasets import as_class_names, load_rows, score

    check_output(args.out)
    model = load_model_file(args.model)
    forest = forest_from_model(model, votes=args.votes)  # checks the model first
    given = list(forest.classes)
    if args.class_names is not None:
        forest = dataclasses.replace(forest, classes=class_names(args.class_names, len(given)))
    names = list(forest.classes)
    scored = None
    if args.data:
        if not hasattr(model, "predict"):
            raise InputError(f"{args.model}: a LightGBM dump_model() file cannot predict: for "
                             "--data, import the text model file (Booster.save_model)")
        features = getattr(model, "feature_names_in_", None)
        rows = load_rows(args.data, None if features is None else [str(n) for n in features],
                         len(forest.features), args.target)
        renamed = dict(zip(given, names))
        labels = None if rows.labels is None else \
            [renamed.get(y, y) for y in as_class_names(rows.labels, given, args.data)]
        scored = score(model, forest, rows.X, labels, rows.where)
    if library_of(model) is None:
        estimators = np.ravel(getattr(model, "estimators_", [model]))  # stages × classes
        depth = max(int(e.tree_.max_depth) for e in estimators)
    else:  # the imported trees' (a test the path decides is skipped)
        depth = max(tree.depth for tree in forest.trees)
    save_forest(forest, args.out)
    report(f"{os.path.basename(args.model)} ({model_name(model)}): {len(forest.trees)} "
           f"trees, depth {depth}", forest, scored, "rows", library_of(model) or "sklearn")
    if args.class_names is not None:
        print("classes: " + ", ".join(f"{g} as {n!r}" for g, n in zip(given, names)))
    print(f"wrote {args.out}")
    return 0


def class_names(text: str, n: int) -> list[str]:
    """``--class-names``: ``n`` distinct, non-empty names, comma separated."""
    names = [name.strip() for name in text.split(",")]
    if len(names) != n or not all(names) or len(set(names)) != n:
        raise InputError(f"--class-names: expected {n} distinct names separated by commas, one "
                         f"per class of the model, not {text!r}")
    return names


def cmd_compile(args: argparse.Namespace) -> int:
    """``rfcircuits compile --form nnf|dg-conj|dg``: per-class sizes and seconds as
    JSON; ``--out DIR`` writes one circuit file (and with ``--dot`` a DOT file) per class, and
    the engine's circuits file (:data:`rfcircuits.circuits.MANIFEST`, written last) that
    ``explain --circuits DIR`` reads: the decision graphs' with their negated classes and
    projections compiled too (the dg forms), or the SAT engine's choice (nnf)."""
    from rfcircuits import circuits

    forest = load_forest(args.forest)
    if args.out:
        output_dir(args.out)
    if args.form == "nnf":
        from rfcircuits.classformula import compile_nnf
        from rfcircuits.satengine import SatEngine

        with Progress("networks", enabled=not args.no_progress) as progress:
            comp = compile_nnf(forest, args.ties, progress=progress)
        manager, suffix = comp.nnf, ".nnf"
        dot = lambda c: comp.nnf.to_dot([comp.roots[c]])  # noqa: E731
        engine: Any = SatEngine(forest, args.ties)
    else:
        from rfcircuits.dgcompile import compile_dg
        from rfcircuits.graphengine import GraphEngine

        budget = max_nodes(args)
        with Progress("pair networks", enabled=not args.no_progress) as progress:
            comp = compile_dg(forest, args.ties, args.form, max_nodes=budget,
                              timeout=args.timeout, progress=progress, counter=args.counter)
            if args.out:  # what explanations would compile next: CEs' graphs, projections
                progress.stage("negated classes and projections")
                engine = GraphEngine(forest, args.ties, max_nodes=budget, compiled=replace(
                    comp, form="dg-conj", roots=comp.roots_3b))
                engine.compile(negated=True)
        manager, suffix = comp.dg, ".dg"
        dot = lambda c: comp.dg.to_dot(comp.roots[c])  # noqa: E731
    result = {
        "form": args.form, "ties": args.ties,
        "classes": {name: {"nodes": comp.nodes(c), "seconds": round(comp.seconds[c], 6)}
                    for c, name in enumerate(forest.classes)},
        "total_nodes": comp.total_nodes(),
        "total_seconds": round(sum(comp.seconds), 6),
    }
    if args.out:
        for c, name in enumerate(forest.classes):
            path = os.path.join(args.out, circuit_stem(c, name) + suffix + ".json")
            write_json(path, manager.to_json(comp.roots[c], forest, name, args.ties))
            if args.dot:
                with atomic_open(path[:-len(".json")] + ".dot") as handle:
                    handle.write(dot(c))
        write_json(os.path.join(args.out, circuits.MANIFEST),
                   circuits.document(engine))
    print(json.dumps(result, ensure_ascii=False))
    return 0


def add_resume(p: argparse.ArgumentParser, records: str) -> None:
    """``--resume``: continue from the partial file an interrupted run left beside ``--out``."""
    p.add_argument("--resume", action="store_true",
                   help=f"continue from OUT{PARTIAL}, the finished {records} of an interrupted "
                        "run with the same inputs and options, instead of starting over")


def add_max_nodes(p: argparse.ArgumentParser) -> None:
    """``--max-nodes``: the decision-graph node budget (see :func:`max_nodes`)."""
    p.add_argument("--max-nodes", type=int, metavar="N",
                   help="stop the decision graphs past N nodes (default: as many as 60%% of this "
                        "machine's memory holds; 0: no limit); where --engine auto, the SAT "
                        "engine then answers")


def max_nodes(args: argparse.Namespace) -> int | None:
    """The node budget ``--max-nodes`` asks for: by default what the machine's memory holds
    (:func:`rfcircuits.budget.default_max_nodes`), 0 for none."""
    from rfcircuits.budget import default_max_nodes

    if args.max_nodes is None:
        return default_max_nodes()
    if args.max_nodes < 0:
        raise InputError("--max-nodes must be 0 (no limit) or positive")
    return args.max_nodes or None


def cmd_explain(args: argparse.Namespace) -> int:
    """Explanations in canonical JSON Lines (or ``--format text``, the readable form),
    flushed per instance (docs/formats.md#explanations)."""
    from rfcircuits.explain import Explainer, load_explainer
    from rfcircuits.explanation import HEADER_KEYS, WHAT_FIELDS, parse_what
    from rfcircuits.forest import instance_to_json
    from rfcircuits.inputs import read_instances

    if args.resume and args.format != "jsonl":
        raise InputError("--resume reads back the JSON lines of an interrupted run: it needs "
                         "--format jsonl")
    forest = load_forest(args.forest)
    instances = read_instances(args.instances, forest, args.target)
    what = parse_what(args.what)
    budget = max_nodes(args)
    keys = {*HEADER_KEYS, *(WHAT_FIELDS[k] for k in what)}

    def accept(lines: list[str]) -> None:  # a partial file of this very run, or refuse it
        for n, line in enumerate(lines, start=1):
            where = f"{args.out}{PARTIAL}, line {n}"
            try:
                obj = json.loads(line)
            except ValueError:
                raise InputError(f"{where}: not an explanation; remove the file or run "
                                 "without --resume") from None
            if n > len(instances) or not isinstance(obj, dict) or _fields(obj) != keys or \
                    obj["ties"] != args.ties or \
                    obj["instance"] != instance_to_json(forest, instances[n - 1]):
                raise InputError(f"{where}: not an explanation of instance {n} of "
                                 f"{args.instances} with these options (--ties, --what); "
                                 "remove the file or run without --resume")

    with record_output(args.out, args.resume, accept, "explanations") as out, \
            Progress("compiling", enabled=not args.no_progress) as progress:
        options = {"max_nodes": budget, **limits(args)}
        if args.circuits:
            progress.stage("loading circuits")
            explainer = load_explainer(args.circuits, forest, ties=args.ties,
                                       engine=args.engine, progress=progress, **options)
        else:
            explainer = Explainer(forest, args.ties, engine=args.engine, progress=progress,
                                  **options)
        if len(instances) > len(out.resumed):  # up front: the bar shows the compile apart
            explainer.compile(rows=instances[len(out.resumed):], what=what)
        progress.stage("instances", len(instances))
        if explainer.choice:
            progress.note(f"engine {explainer.choice}")
        rows_on = getattr(args, "rows_on", None)  # --jobs/--dask: the campaign backends
        if rows_on is None:
            records = ((i, explainer.explain_states(x, what).render(args.format))
                       for i, x in enumerate(instances) if i >= len(out.resumed))
        else:
            records = rows_on(args, explainer, instances, what, len(out.resumed), options,
                              args.format)
        for i, record in records:
            if args.format == "text":  # records apart, each under its row's number
                record = ("\n" if i else "") + f"row {i + 1} of {len(instances)}\n{record}"
            out.write(record + "\n")
            progress(i + 1, len(instances))
    return 0


def _fields(line: dict[str, Any]) -> set[str]:
    """The header and field names an explanation line answers for: its keys without the
    engine's notes, with the fields it names as not computed."""
    skipped = line.get("not_computed", [])
    return (set(line) - {"engine", "incomplete", "not_computed"}) | \
        (set(skipped) if isinstance(skipped, list) and all(isinstance(k, str) for k in skipped)
         else set())


def cmd_demo(args: argparse.Namespace) -> int:
    from rfcircuits.cli.demo import run_demo

    return run_demo()


def cmd_bench(args: argparse.Namespace) -> int:
    """A dataset whose graphs exceed the node budget (``args.node_budget``) gets an empty row
    and the run goes on with the next."""
    if args.data_dir is None and args.what not in args.bench_without_data:
        raise InputError(f"bench {args.what}: --data-dir DIR is required (the datasets' CSV "
                         "files)")
    if args.out is not None and args.what != "predict":
        raise InputError(f"bench {args.what}: --out is bench predict's; the other tables print "
                         "their rows (--json: as JSON Lines)")
    if args.timeout is not None and not (args.what == "explain" or args.what == "compile"
                                         and args.form != "nnf"):
        raise InputError(f"bench {args.what}: --timeout limits decision-graph compiles: bench "
                         "compile --form dg|dg-conj and bench explain")
    if args.votes is not None and args.what not in ("compile", "explain"):
        raise InputError(f"bench {args.what}: --votes is bench compile's and explain's; the "
                         "other tables are of hard votes (bench predict: of both)")
    from rfcircuits.cli.bench import run_bench, tree_counts

    args.trees = tree_counts(args.trees)
    if len(args.trees) > 1 and args.what in ("predict", "pyxai", "campaigns"):
        raise InputError(f"bench {args.what}: --trees takes one number (a list is for compile, "
                         "explain, engines and oracles)")
    args.plot_rows = None
    if args.plot is not None:
        if args.what not in PLOTTED:
            raise InputError(f"bench {args.what}: --plot draws bench {', '.join(PLOTTED)}")
        from rfcircuits.plots import require

        require(args.plot)
        args.plot_rows = []
    args.node_budget = max_nodes(args)
    if args.rows is None:
        args.rows = 100 if args.what == "explain" else 20
    if args.what in args.bench_extra:
        code = args.bench_extra[args.what](args)
    elif args.what == "engines":
        from rfcircuits.cli.enginebench import bench_engines

        code = bench_engines(args)
    elif args.what == "predict":
        from rfcircuits.cli.predictbench import bench_predict

        code = bench_predict(args)
    else:
        code = run_bench(args)
    if args.plot_rows is not None:
        from rfcircuits.plots import bench_figures

        bench_figures(args.what, args.plot_rows, args.plot, _command_line(args))
    return code


#: The benches ``--plot`` draws (:func:`rfcircuits.plots.bench_figures`).
PLOTTED = ("compile", "explain", "engines", "pyxai", "campaigns")


def _command_line(args: argparse.Namespace) -> str:
    """The bench as a figure's title names it: its table, and the form and votes asked."""
    words = ["bench", args.what]
    if args.what == "compile":
        words += ["--form", args.form]
    if args.votes:
        words += ["--votes", args.votes]
    return " ".join(words)

