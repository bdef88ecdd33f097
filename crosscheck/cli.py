"""The ``rfcircuits`` console script: the native engine's commands plus the oracles' ones.

Native commands (train, compile, explain, demo, bench) come from :mod:`core.cli`; this layer
adds the commands that need the oracles (crosscheck, fuzz, verify, corpus, mutate). It lives
in ``crosscheck`` because ``core`` never imports ``crosscheck``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from core import __version__
from core.cli import add_commands, run
from core.errors import InputError
from core.explanation import ALL_WHAT, parse_what
from core.forest import TIES, forest_from_json, load_forest, load_instances, load_json_file, \
    parse_instance


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rfcircuits",
        description="Random forests as circuits, formal explanations, independent oracles.")
    parser.add_argument("--version", action="version", version=f"rfcircuits {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    add_commands(sub, bench_extra={"oracles": _bench_oracles})

    p = sub.add_parser("crosscheck", help="compare the native engine with independent oracles")
    p.add_argument("--forest", help="forest file (rfcircuits.forest/1)")
    p.add_argument("--instances", help="instances (JSON Lines)")
    p.add_argument("--replay", help="a repro file written by crosscheck or fuzz")
    p.add_argument("--oracles", default=",".join(ORACLE_NAMES),
                   help="comma list of brute,bdd,sat (default: all; each skips cases beyond "
                        "its limits)")
    p.add_argument("--ties", choices=TIES + ("both",), default="first")
    p.add_argument("--what", default="all")
    p.add_argument("--no-formulas", action="store_true", help="skip the class-formula checks")
    p.add_argument("--repro", default="rfcircuits-repro.json",
                   help="where to write the repro file on a disagreement")
    p.set_defaults(handler=cmd_crosscheck)

    p = sub.add_parser("fuzz", help="random small forests through every oracle")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--max-features", type=int, default=4)
    p.add_argument("--max-states", type=int, default=4)
    p.add_argument("--max-trees", type=int, default=7)
    p.add_argument("--max-classes", type=int, default=3)
    p.add_argument("--max-depth", type=int, default=4)
    p.add_argument("--oracles", default=",".join(ORACLE_NAMES))
    p.add_argument("--out", default="fuzz-failures", help="directory for shrunk failing cases")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=cmd_fuzz)

    p = sub.add_parser("mutate", help="seed faults into the native engine; count what fuzz kills")
    p.add_argument("--modules", help="comma list of module paths (default: sorting network, "
                                     "class formulas, Apply, reasons, primes, robustness)")
    p.add_argument("--sample", type=int, help="judge a seeded sample of N mutants")
    p.add_argument("--budget", type=float, default=20.0, help="fuzz seconds per mutant")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_mutate)
    return parser


def _mutate(args: argparse.Namespace) -> int:
    from crosscheck.mutate import cmd_mutate

    return cmd_mutate(args)


ORACLE_NAMES = ("brute", "bdd", "sat")


def _bench_oracles(args: argparse.Namespace) -> int:
    from crosscheck.speed import bench_oracles

    return bench_oracles(args)


def _oracles(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in ORACLE_NAMES]
    if unknown or not names:
        raise InputError(f"--oracles: unknown oracle {unknown[0]!r}" if unknown else
                         "--oracles: give at least one of " + ",".join(ORACLE_NAMES))
    return names


def cmd_crosscheck(args: argparse.Namespace) -> int:
    """Check × engine table; exit 1 and a repro file on any disagreement (SPEC §6)."""
    from core.atomicio import write_json
    from crosscheck.fuzz import repro
    from crosscheck.harness import crosscheck

    if args.replay:
        doc = load_json_file(args.replay)
        if not isinstance(doc, dict) or "forest" not in doc or "instances" not in doc:
            raise InputError(f"{args.replay}: not a repro file (needs 'forest' and 'instances')")
        forest = forest_from_json(doc["forest"], source=f"{args.replay}: forest")
        instances = [parse_instance(forest, x, f"{args.replay}: instances[{i}]")
                     for i, x in enumerate(doc["instances"])]
        ties_list = [doc.get("ties", "first")] if args.ties == "first" else \
            (list(TIES) if args.ties == "both" else [args.ties])
    else:
        if not args.forest or not args.instances:
            raise InputError("give --forest and --instances, or --replay")
        forest = load_forest(args.forest)
        instances = load_instances(args.instances, forest)
        ties_list = list(TIES) if args.ties == "both" else [args.ties]
    what = parse_what(args.what) if args.what != "all" else ALL_WHAT
    oracles = _oracles(args.oracles)
    failed = []
    for ties in ties_list:
        report = crosscheck(forest, instances, ties, oracles, what, formulas=not args.no_formulas)
        print(f"ties {ties}: {report.checks()} checks, {len(report.disagreements)} disagreements")
        print(report.table())
        if not report.ok:
            failed.extend((ties, d) for d in report.disagreements)
            for d in report.disagreements[:5]:
                print(f"  DISAGREE {d.check} ({' vs '.join(d.engines)})"
                      f"{' at ' + json.dumps(d.instance) if d.instance else ''}: "
                      f"{json.dumps(d.counterexample, ensure_ascii=False)[:300]}")
    if failed:
        ties = failed[0][0]
        write_json(args.repro, repro(forest, instances, ties, [d for t, d in failed if t == ties]))
        print(f"repro written to {os.path.abspath(args.repro)}")
        return 1
    return 0


def cmd_fuzz(args: argparse.Namespace) -> int:
    from crosscheck.fuzz import fuzz, summary_json, summary_text
    from crosscheck.strategies import Limits

    for name in ("seconds", "jobs", "max_features", "max_states", "max_trees", "max_classes",
                 "max_depth"):
        if getattr(args, name) < 1 and not (name == "seconds" and getattr(args, name) > 0):
            raise InputError(f"--{name.replace('_', '-')} must be positive")
    limits = Limits(args.max_features, max(2, args.max_states), args.max_trees,
                    max(2, args.max_classes), args.max_depth)
    summary = fuzz(args.seconds, args.seed, args.jobs, limits, args.out,
                   _oracles(args.oracles), progress=not args.no_progress)
    print(summary_json(summary) if args.json else summary_text(summary))
    if summary.interrupted:
        return 130
    return 1 if summary.failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (SPEC §6: 0 ok, 1 disagreement, 2 bad input)."""
    args = build_parser().parse_args(argv)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
