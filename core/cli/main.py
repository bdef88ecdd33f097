"""The ``rfcircuits`` console script: the native engine's commands and the oracles' ones.

The native commands (train, import, compile, explain, demo, bench) come from
:mod:`rfcircuits.cli.engine`; this module adds the commands that need the oracles
(crosscheck, fuzz, verify, corpus, mutate) and :func:`main`.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from rfcircuits import __version__
from rfcircuits.atomicio import PARTIAL
from rfcircuits.cli.engine import (Parser, add_commands, add_engine, add_instances, add_limits,
                                   add_max_nodes, add_no_progress, add_resume, limits,
                                   max_nodes, positive_int, positive_seconds, run)
from rfcircuits.errors import InputError
from rfcircuits.explanation import ALL_WHAT, parse_what
from rfcircuits.forest import (TIES, forest_from_json, instance_to_json, load_forest,
                               load_json_file, parse_instance)
from rfcircuits.inputs import read_instances
from rfcircuits.interrupts import exit_status
from rfcircuits.progress import Progress


class _Version(argparse.Action):
    """``--version``: the version and the decision-graph store in use, unwrapped."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 help: str | None = None) -> None:
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from rfcircuits.dgraph import backend_text

        print(f"rfcircuits {__version__} (decision-graph store: {backend_text()})")
        parser.exit()


def add_backend(p: argparse.ArgumentParser) -> None:
    """``--jobs J`` (local worker processes) or ``--dask ADDRESS`` (a Dask cluster)."""
    p.add_argument("--jobs", type=positive_int, default=1,
                   help="worker processes on this machine (default 1)")
    p.add_argument("--dask", metavar="ADDRESS",
                   help="run on the Dask cluster whose scheduler is at ADDRESS "
                        "(tcp://host:8786), or on a local cluster of N worker processes "
                        "started for the run (local:N); needs pip install 'rfcircuits[dask]'")


def backend(args: argparse.Namespace) -> str | None:
    """The ``--dask`` address, refused beside ``--jobs``."""
    if args.dask is not None and args.jobs != 1:
        raise InputError("--jobs and --dask: choose one (with --dask the cluster's workers "
                         "run the tasks)")
    return args.dask


def add_peer_source(p: argparse.ArgumentParser, fuzz: bool = False) -> None:
    """The user's forest for a peer: ``--model M --data D`` or ``--forest F --instances I``,
    and ``--target`` (:func:`rfcircuits.crosscheck.peers.grading.peer_data`); ``fuzz``: for ``fuzz
    --adapter``, which has no ``--rows``."""
    with_adapter = "with --adapter: " if fuzz else ""
    options = (
        ("--model", "M", f"{with_adapter}your fitted scikit-learn forest (joblib or pickle; "
                         "loading runs code the file names: load only files you trust), with "
                         "--data"),
        ("--data", "D.csv", "with --model: its rows (CSV with a header; columns matched to the "
                            "model's feature names when it has them)"),
        ("--forest", "F", f"{with_adapter}your forest file (rfcircuits.forest/1, numeric "
                          "features), with --instances; the peers get a scikit-learn model "
                          "built from it"),
        ("--instances", "I", "with --forest: its instances (JSON Lines or CSV)"
                             + ("" if fuzz else "; a number instead is --rows' old spelling")),
        ("--target", "COLUMN", "the label column of --data or of CSV --instances (not "
                               "explained; default for --data: the one column that is not a "
                               "feature)"))
    for option, metavar, text in options:
        p.add_argument(option, metavar=metavar, help=text)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="rfcircuits",
        description="Random forests as circuits, formal explanations, independent oracles.")
    parser.add_argument("--version", action=_Version,
                        help="show the version and the decision-graph store in use, and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    add_commands(sub, bench_extra={
        "oracles": (_bench_oracles, "the oracles against the native engine"),
        "campaigns": (_bench_campaigns, "fuzz and mutate on each campaign backend; no "
                                        "--data-dir"),
        "pyxai": (_bench_pyxai, "the SAT engine beside PyXAI on breast-cancer forests; no "
                                "--data-dir")}, without_data=("campaigns", "pyxai"))
    from rfcircuits.cli.campaigns import add_options

    add_options(sub.choices["bench"])
    add_backend(sub.choices["explain"])
    sub.choices["explain"].set_defaults(rows_on=_rows_on)

    p = sub.add_parser("crosscheck", help="compare the native engine with independent oracles")
    p.add_argument("--forest", help="forest file (rfcircuits.forest/1); with --instances, "
                                    "unless --replay")
    add_instances(p, required=False, also="; with --forest, unless --replay")
    p.add_argument("--replay", help="a repro file written by crosscheck or fuzz, instead of "
                                    "--forest and --instances")
    p.add_argument("--oracles", default=",".join(ORACLE_NAMES),
                   help="comma list of brute,bdd,sat (default: all; each skips cases beyond "
                        "its limits)")
    p.add_argument("--ties", choices=TIES + ("both",), default="first",
                   help="tie policy to check: first, all, or both in turn (with --replay, "
                        "first means the repro file's)")
    p.add_argument("--what", default="all", help="all, or a comma list of "
                                                 "sr,nr,gsr,gnr,ce,robust,flips")
    p.add_argument("--no-formulas", action="store_true", help="skip the class-formula checks")
    add_backend(p)
    add_engine(p)
    add_limits(p)
    add_max_nodes(p)
    p.add_argument("--repro", default="rfcircuits-repro.json",
                   help="where to write the repro file on a disagreement")
    p.add_argument("--out", help="also keep each finished unit's checks (class formulas, each "
                                 "instance) in this JSON Lines file, so that an interrupted "
                                 "run can be resumed")
    add_resume(p, "units")
    add_no_progress(p)
    p.set_defaults(handler=cmd_crosscheck)

    p = sub.add_parser("fuzz", help="random small forests through every oracle")
    p.add_argument("--seconds", type=positive_seconds,
                   help="how long to generate and check cases (default: 60 without --cases)")
    p.add_argument("--cases", type=positive_int,
                   help="stop after cases 0 to N-1 (the same seed and N give the same summary "
                        "and failure files on any backend)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random cases")
    add_backend(p)
    p.add_argument("--max-features", type=int, default=4, help="most features in a case")
    p.add_argument("--max-states", type=int, default=4,
                   help="most states of a feature (at least 2)")
    p.add_argument("--max-trees", type=int, default=7, help="most trees in a case")
    p.add_argument("--max-classes", type=int, default=3, help="most classes (at least 2)")
    p.add_argument("--max-depth", type=int, default=4, help="deepest tree in a case")
    p.add_argument("--votes", choices=("mixed", "hard", "soft"), default="mixed",
                   help="what the trees vote: mixed (default: odd cases soft), hard (one vote "
                        "per tree), soft (weighted leaves, sums exact)")
    p.add_argument("--oracles", default=",".join(ORACLE_NAMES),
                   help="comma list of the oracles to compare with")
    p.add_argument("--engine", choices=("graphs", "sat", "both"), default="both",
                   help="the native engines each case runs through (the SAT engine without "
                        "limits)")
    p.add_argument("--out", default="fuzz-failures", help="directory for shrunk failing cases")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--plot", metavar="DIR",
                   help="also draw the run's cases, checks and failures against the seconds in "
                        "DIR/fuzz-timeline.svg and .png (needs pip install 'rfcircuits[plot]')")
    p.add_argument("--adapter", metavar="NAME",
                   help="fuzz another explainer instead: an adapter (pyxai, anchors, rfxpl, "
                        "rfxpl-maxsat, solbert... "
                        "or module:Class) on random scikit-learn forests, or on yours "
                        "(--model/--data or --forest/--instances), graded against its "
                        "promises (one process; --jobs, --max-* and --oracles do not apply)")
    p.add_argument("--adapter-option", action="append", metavar="KEY=VALUE",
                   help="with --adapter: an option passed to the adapter's constructor (a JSON "
                        "value or text), e.g. path=/src/RFxpl for RFxpl's checkout or "
                        "theory=false for PyXAI")
    p.add_argument("--adapter-timeout", type=positive_seconds, default=60.0, metavar="SECONDS",
                   help="with --adapter: seconds the peer may take per row (default 60)")
    add_peer_source(p, fuzz=True)
    add_no_progress(p)
    p.set_defaults(handler=cmd_fuzz)

    p = sub.add_parser("mutate", help="seed faults into the native engine; count what fuzz kills")
    p.add_argument("--modules", help="comma list of module paths such as rfcircuits/apply.py "
                                     "(default: every module of the native engine that "
                                     "compiles or explains)")
    p.add_argument("--sample", type=positive_int,
                   help="judge a seeded sample of N mutants (absent: every mutant)")
    p.add_argument("--budget", type=positive_seconds, default=20.0,
                   help="fuzz seconds per mutant")
    add_backend(p)
    p.add_argument("--seed", type=int, default=0, help="seed of --sample")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(handler=_mutate)

    p = sub.add_parser("verify", help="grade another tool's explanations item by item")
    p.add_argument("--forest", required=True, help="forest file (rfcircuits.forest/1)")
    add_instances(p)
    p.add_argument("--explanations", required=True,
                   help="the tool's explanations (JSON Lines, any subset of the fields "
                        "explain writes)")
    p.add_argument("--ties", choices=TIES, default="first",
                   help="tie policy the explanations were made under")
    p.add_argument("--gnr-limit", type=int, default=None,
                   help="largest GNR / shortest-flip validity check decided, in enumerated "
                        "assignments (default: GNR_LIMIT of crosscheck/verify.py); beyond it "
                        "the verdict is unknown")
    p.add_argument("--oracle-only", default="",
                   help="comma list of fields (sr,nr,... as for explain --what, or their "
                        "names in explanations; or all) graded by the SAT oracle alone, "
                        "without enumerating our complete answer: completeness is certified "
                        "for SRs and NRs listed together, not checked otherwise (for forests "
                        "whose class formulas exceed --max-nodes; default: none)")
    add_max_nodes(p)
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    add_no_progress(p)
    p.set_defaults(handler=cmd_verify)

    for name in ("verify-peer", "verify-pyxai"):
        if name == "verify-peer":
            p = sub.add_parser(name, help="run other explainers (adapters) on a scikit-learn "
                                          "forest and grade their answers against what each "
                                          "promises")
            p.add_argument("--adapter", action="append", required=True, metavar="NAME",
                           help="an adapter: pyxai, pyxai-minimal, pyxai-majoritary, "
                                "pyxai-minimal-majoritary, pyxai-contrastive, pyxai-bt, "
                                "pyxai-bt-direct, pyxai-bt-contrastive, anchors, rfxpl, "
                                "rfxpl-maxsat, solbert, command, or module:Class; repeat or "
                                "give a comma list")
            p.add_argument("--adapter-option", action="append", metavar="KEY=VALUE",
                           help="an option passed to every adapter's constructor (a JSON value "
                                "or text), e.g. path=/src/RFxpl or theory=false; NAME.KEY=VALUE "
                                "for the adapter NAME only (rfxpl.path=/src/RFxpl)")
        else:
            p = sub.add_parser(name, help="verify-peer with PyXAI's five reason kinds "
                                          "(optional dependency: pip install pyxai)")
            p.add_argument("--no-theory", action="store_true",
                           help="run PyXAI without its domain theory (thresholds as free "
                                "Booleans)")
        p.add_argument("--dataset", choices=("iris", "wine", "breast-cancer"),
                       help="a dataset bundled with scikit-learn, to train a forest on")
        p.add_argument("--trees", type=int, help="with --dataset: number of trees (default 11)")
        p.add_argument("--depth", type=int,
                       help="with --dataset: maximum depth of a tree (default 4)")
        add_peer_source(p)
        p.add_argument("--rows", type=positive_int, metavar="K",
                       help="number of rows explained, chosen by --pick (default: 20 of the "
                            "dataset or of --data; every instance of --forest's --instances)")
        p.add_argument("--seed", type=int, default=0,
                       help="seed of the training run and of the rows drawn")
        p.add_argument("--pick", choices=("random", "margin"), default="random",
                       help="which rows to explain: drawn at random with the seed (default), "
                            "or those closest to a vote tie of the forest (one row per "
                            "instance, exact ties first)")
        p.add_argument("--timeout", type=positive_seconds, default=60.0,
                       help="seconds the peer may take per row")
        p.add_argument("--out", metavar="DIR",
                       help="keep each peer's report, answers and repro files in DIR")
        p.add_argument("--json", action="store_true", help="print the reports as one JSON object")
        p.add_argument("--html", metavar="FILE",
                       help="also write the reports as one self-contained HTML page (summary, "
                            "findings with their witness worlds and votes, differences of "
                            "definition) to FILE")
        add_no_progress(p)
        p.set_defaults(handler=cmd_verify_peer)

    p = sub.add_parser("corpus", help="build or re-verify the golden corpus (fixtures/)")
    corpus = p.add_subparsers(dest="corpus_command", required=True, metavar="build|check")
    q = corpus.add_parser("build", help="regenerate the corpus deterministically; every answer "
                                        "confirmed by every oracle that fits")
    q.add_argument("--out", default="fixtures", help="corpus directory (replaced at the end)")
    add_resume(q, "cases")
    add_backend(q)
    q.add_argument("--failures", default="corpus-failures",
                   help="where repro files go when an oracle disagrees")
    q.add_argument("--keep", action="store_true",
                   help="keep the cases the corpus in --out already has (same id and origin) "
                        "byte for byte, and build only the new ones")
    add_no_progress(q)
    q = corpus.add_parser("check", help="re-verify a corpus with the native engine (and oracles)")
    q.add_argument("--dir", default="fixtures", help="corpus directory")
    q.add_argument("--jobs", type=positive_int, default=1, help="worker processes")
    q.add_argument("--oracles", nargs="?", const=",".join(ORACLE_NAMES),
                   help="also re-confirm with these oracles (comma list; alone: all; absent: "
                        "the native engine only)")
    add_engine(q)
    add_no_progress(q)
    p.set_defaults(handler=cmd_corpus)
    return parser


def _mutate(args: argparse.Namespace) -> int:
    from rfcircuits.crosscheck.differential.mutate import cmd_mutate

    backend(args)  # --jobs beside --dask is refused before the packages are copied
    return cmd_mutate(args)


ORACLE_NAMES = ("brute", "bdd", "sat")


def _rows_on(args: argparse.Namespace, explainer: Any, instances: Sequence[Any],
             what: Sequence[str], start: int, options: dict[str, Any], fmt: str
             ) -> Iterator[tuple[int, str]]:
    """``explain``'s records (in ``--format`` ``fmt``) from row ``start`` on, in order: on
    this process, ``--jobs`` workers or a ``--dask`` cluster
    (:mod:`rfcircuits.crosscheck.campaigns.explain_rows`)."""
    from rfcircuits.crosscheck.campaigns.explain_rows import explain_rows

    return explain_rows(explainer, instances, what, start, args.jobs, backend(args), options,
                        fmt)


def _bench_oracles(args: argparse.Namespace) -> int:
    from rfcircuits.cli.speed import bench_oracles

    return bench_oracles(args)


def _bench_pyxai(args: argparse.Namespace) -> int:
    from rfcircuits.cli.peerbench import bench_pyxai

    return bench_pyxai(args)


def _bench_campaigns(args: argparse.Namespace) -> int:
    from rfcircuits.cli.campaigns import bench_campaigns

    return bench_campaigns(args)


def _oracles(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in ORACLE_NAMES]
    if unknown or not names:
        raise InputError(f"--oracles: unknown oracle {unknown[0]!r}" if unknown else
                         "--oracles: give at least one of " + ",".join(ORACLE_NAMES))
    return names


def cmd_crosscheck(args: argparse.Namespace) -> int:
    """Check × engine table; exit 1 and a repro file on any disagreement. ``--out`` keeps
    each finished unit's checks (the class formulas, then each instance) as a JSON line, so
    that an interrupted run (finished units kept, exit 128 + signal) can be resumed."""
    from rfcircuits.atomicio import check_output, record_output, write_json
    from rfcircuits.crosscheck.differential.fuzz import repro
    from rfcircuits.classformula import COMPARISONS
    from rfcircuits.crosscheck.differential.harness import Disagreement, Outcome, Report, crosscheck

    if args.replay:
        doc = load_json_file(args.replay)
        if not isinstance(doc, dict) or "forest" not in doc or "instances" not in doc:
            raise InputError(f"{args.replay}: not a repro file (needs 'forest' and 'instances')")
        forest = forest_from_json(doc["forest"], source=f"{args.replay}: forest")
        instances = [parse_instance(forest, x, f"{args.replay}: instances[{i}]")
                     for i, x in enumerate(doc["instances"])]
        ties_list = [doc.get("ties", "first")] if args.ties == "first" else \
            (list(TIES) if args.ties == "both" else [args.ties])
        if args.engine == "auto":  # the engine that disagreed, unless --engine says which
            args.engine = doc.get("engine", "graphs")
            if args.engine not in ("graphs", "sat"):
                raise InputError(f"{args.replay}: engine {args.engine!r} is not graphs or sat")
        comparison = doc.get("comparison", "auto")
        if comparison not in COMPARISONS:
            raise InputError(f"{args.replay}: comparison {comparison!r} is not one of "
                             f"{', '.join(COMPARISONS)}")
    else:
        if not args.forest or not args.instances:
            raise InputError("give --forest and --instances, or --replay")
        forest = load_forest(args.forest)
        instances = read_instances(args.instances, forest, args.target)
        ties_list = list(TIES) if args.ties == "both" else [args.ties]
        comparison = "auto"
    what = parse_what(args.what) if args.what != "all" else ALL_WHAT
    oracles = _oracles(args.oracles)
    budget = max_nodes(args)
    dask = backend(args)
    if args.resume and not args.out:
        raise InputError("--resume needs --out FILE, where the interrupted run kept its checks")
    check_output(args.repro)  # now, not after the whole run
    units = [(t, u) for t in ties_list
             for u in (([] if args.no_formulas else ["formulas"]) + list(range(len(instances))))]
    prior = {t: Report(ties=t) for t in ties_list}

    def accept(lines: list[str]) -> None:  # the units of this very run, in order
        for n, line in enumerate(lines, start=1):
            try:
                obj = json.loads(line)
                expected = units[n - 1] if n <= len(units) else None
                ok = expected is not None and (obj["ties"], obj["unit"]) == expected and (
                    obj["unit"] == "formulas" or
                    obj["instance"] == instance_to_json(forest, instances[obj["unit"]]))
                report = prior[obj["ties"]] if ok else None
                if report is not None:
                    report.outcomes.extend(Outcome(*o) for o in obj["outcomes"])
                    report.disagreements.extend(Disagreement.from_json(d)
                                                for d in obj["disagreements"])
            except (ValueError, KeyError, TypeError, IndexError):
                ok = False
            if not ok:
                raise InputError(f"{args.out}{PARTIAL}, line {n}: not the checks of unit "
                                 f"{n} of this run (same inputs and options); remove the file "
                                 "or run without --resume")

    def keep(ties: str, unit: Any, outcomes: Sequence[Any], found: Sequence[Any]) -> None:
        line = {"ties": ties, "unit": unit}
        if unit != "formulas":
            line["instance"] = instance_to_json(forest, instances[unit])
        line.update(outcomes=[[o.check, o.engine, o.status, o.detail] for o in outcomes],
                    disagreements=[d.to_json() for d in found])
        out.write(json.dumps(line, ensure_ascii=False) + "\n")

    failed = []
    with (record_output(args.out, args.resume, accept, "checked units") if args.out
          else contextlib.nullcontext()) as out:
        resumed = len(out.resumed) if out else 0
        for ties in ties_list:
            done = [u for t, u in units[:resumed] if t == ties]
            todo = [u for t, u in units[resumed:] if t == ties]
            report = prior[ties]
            # The later policies' class formulas come from this compile's networks too.
            later = [t for t in ties_list[ties_list.index(ties) + 1:]
                     if (t, "formulas") in units[resumed:]]
            if todo:
                with Progress(f"ties {ties}", enabled=not args.no_progress) as bar:
                    new = crosscheck(
                        forest, instances, ties, oracles, what,
                        formulas="formulas" in todo, max_nodes=budget, progress=bar,
                        jobs=args.jobs, start=len(done) - ("formulas" in done),
                        on_unit=functools.partial(keep, ties) if out else None,
                        also_ties=later, dask=dask, engine=args.engine, limits=limits(args),
                        comparison=comparison)
                report.outcomes.extend(new.outcomes)
                report.disagreements.extend(new.disagreements)
                report.explained, report.interrupted = new.explained, new.interrupted
                report.engine = new.engine
            print(report.text())
            if not report.checks() and not report.interrupted:
                # exit 0 (no disagreement), but a run that verified nothing must not read as a
                # pass
                print(f"crosscheck: warning: nothing was compared under ties {ties}: every "
                      "check was skipped (the table gives the reasons)", file=sys.stderr)
            failed.extend((ties, d) for d in report.disagreements)
            if report.interrupted:
                print(f"interrupted (ties {ties}) after {report.explained} of "
                      f"{len(instances)} instances: the table holds the checks made so far")
                break
        if failed:
            ties = failed[0][0]
            write_json(args.repro, repro(forest, instances, ties,
                                         [d for t, d in failed if t == ties],
                                         engine=prior[ties].engine))
            print(f"repro written to {os.path.abspath(args.repro)}")
        if report.interrupted:
            raise KeyboardInterrupt  # the finished units stay in the partial file
    return 1 if failed else 0


def cmd_fuzz(args: argparse.Namespace) -> int:
    from rfcircuits.crosscheck.differential.fuzz import fuzz, summary_json, summary_text
    from rfcircuits.crosscheck.differential.strategies import Limits

    seconds = args.seconds if args.seconds or args.cases else 60.0
    peer_options = [o for o in ("model", "data", "forest", "instances", "target",
                                "adapter_option") if getattr(args, o) is not None]
    if args.plot is not None:
        from rfcircuits.plots import require

        require(args.plot)
    if args.adapter:  # another explainer: exit 1 also for its crashes
        from rfcircuits.crosscheck.peers import fuzz as pf
        from rfcircuits.crosscheck.peers.adapters.base import load_adapter
        from rfcircuits.crosscheck.peers.grading import adapter_options, peer_data

        if args.jobs != 1 or args.dask or args.cases:
            raise InputError("--jobs, --dask, --cases: fuzz --adapter runs in one process, "
                             "for --seconds")
        adapter = load_adapter(args.adapter, **adapter_options(args.adapter_option or (),
                                                                [args.adapter])[args.adapter])
        adapter.version()  # an unavailable peer stops the run before the data is read
        data = peer_data(args) if set(peer_options) - {"adapter_option"} else None
        peer = pf.peer_fuzz(adapter, seconds, args.seed, args.out, args.adapter_timeout,
                            progress=not args.no_progress, data=data)
        print(pf.summary_json(peer) if args.json else pf.summary_text(peer))
        _plot_fuzz(args, peer.timeline, f"fuzz --adapter {args.adapter} --seed {args.seed}")
        return exit_status() if peer.interrupted else pf.exit_code(peer)
    if peer_options:
        raise InputError(f"--{peer_options[0].replace('_', '-')}: only with --adapter NAME")
    for name in ("max_features", "max_states", "max_trees", "max_classes", "max_depth"):
        if getattr(args, name) < 1:
            raise InputError(f"--{name.replace('_', '-')} must be positive")
    limits = Limits(args.max_features, max(2, args.max_states), args.max_trees,
                    max(2, args.max_classes), args.max_depth, args.votes)
    summary = fuzz(seconds, args.seed, args.jobs, limits, args.out, _oracles(args.oracles),
                   progress=not args.no_progress, cases=args.cases, dask=backend(args),
                   engines=("graphs", "sat") if args.engine == "both" else (args.engine,))
    print(summary_json(summary) if args.json else summary_text(summary))
    _plot_fuzz(args, summary.timeline, f"fuzz --seed {args.seed}")
    if summary.interrupted:
        return exit_status()
    return 1 if summary.failures else 0


def _plot_fuzz(args: argparse.Namespace, timeline: list[list[float]], command: str) -> None:
    """``fuzz --plot DIR``: the run's timeline, also of an interrupted run (up to its stop)."""
    if args.plot is not None:
        from rfcircuits.plots import fuzz_timeline

        fuzz_timeline([(f"seed {args.seed}", timeline)], args.plot, command)


def cmd_verify(args: argparse.Namespace) -> int:
    """Grade an explanations file: exit 0 correct (and complete where completeness was
    checked), 1 some item wrong or missing, 2 malformed input."""
    from rfcircuits.crosscheck.verify import GNR_LIMIT, parse_fields, read_lines, verify

    forest = load_forest(args.forest)
    instances = read_instances(args.instances, forest, args.target)
    rows = read_lines(args.explanations)
    limit = GNR_LIMIT if args.gnr_limit is None else args.gnr_limit
    if limit < 0:
        raise InputError("--gnr-limit must be non-negative")
    oracle_only = parse_fields(args.oracle_only)
    with Progress("grading lines", enabled=not args.no_progress) as progress:
        report = verify(forest, instances, rows, args.ties, args.explanations, limit,
                        oracle_only, max_nodes(args), progress)
    print(json.dumps(report.to_json(), ensure_ascii=False) if args.json else report.text())
    return 0 if report.ok else 1


def cmd_verify_peer(args: argparse.Namespace) -> int:
    """Other explainers graded against their promises (``verify-pyxai``: PyXAI's kinds);
    ``--instances K``, a number, is ``--rows K``."""
    from rfcircuits.crosscheck.peers.grading import run_verify_peer

    if args.instances is not None and args.forest is None and args.instances.isdigit():
        if args.rows is not None:
            raise InputError("--instances K is --rows K: give one")
        args.rows, args.instances = positive_int(args.instances), None

    if args.command == "verify-pyxai":
        args.adapter = ["pyxai,pyxai-minimal,pyxai-majoritary,pyxai-minimal-majoritary"
                        + (",pyxai-contrastive" if args.dataset == "breast-cancer" else "")]
        args.adapter_option = ["theory=false"] if args.no_theory else []
    return run_verify_peer(args)


def cmd_corpus(args: argparse.Namespace) -> int:
    """``corpus build`` / ``corpus check``: exit 1 on a disagreement or mismatch."""
    from rfcircuits.crosscheck.corpus import build, check

    if args.corpus_command == "build":
        summary = build(args.out, args.jobs, progress=not args.no_progress,
                        failures_dir=args.failures, resume=args.resume, dask=backend(args),
                        keep=args.keep)
    else:
        oracles = _oracles(args.oracles) if args.oracles is not None else ()
        summary = check(args.dir, args.jobs, oracles, progress=not args.no_progress,
                        engine=args.engine)
    print(summary.text())
    return 0 if summary.ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (0 ok, 1 disagreement, 2 bad input)."""
    args = build_parser().parse_args(argv)
    return run(args)


def entry() -> NoReturn:
    """The ``rfcircuits`` program (its console script, ``python -m rfcircuits``): exits with
    :func:`main`'s code. Outside the command's own handlers, SIGINT takes its default action,
    ending the process quietly: Python's handler would raise KeyboardInterrupt in whatever
    runs then, such as multiprocessing's exit function once the work is done, and print a
    traceback ("Exception ignored in atexit callback", seen in the fault suite). An inherited
    "ignored" stays ignored."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(main())

