"""``rfcircuits bench campaigns``: fuzz and mutate on every campaign backend, side by side in
one run.

Fuzz runs the same ``--cases`` cases (seed ``--seed``) on local processes and on a Dask
cluster started for the row (``local:N``), with one worker and with ``--workers``; mutate
then judges the same seeded sample of ``--mutants`` mutants (``--budget`` fuzz seconds each)
the same four ways. A row gives tasks per second — fuzz times its cases from the first
submission, so a cluster's start and its workers' imports are left out (shown apart as the
start); mutate is timed whole, start included — the
speed-up of N workers over one on the same backend, Dask's time per task over the local
backend's with as many workers, whether the answers equal the first row's (fuzz: cases,
checks and failure files; mutate: every verdict, which can differ when a mutant is killed
only near the end of its time box), and the peak memory of this process (the client, and
for Dask the scheduler) beside the largest worker's so far.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from typing import Any

from rfcircuits.cli.bench import Table, ratio
from rfcircuits.budget import peak_mb, reset_peak
from rfcircuits.errors import InputError


def add_options(p: argparse.ArgumentParser) -> None:
    """The options of ``bench campaigns`` on the bench parser (this module imports the
    campaigns only when the benchmark runs: every command builds the parser)."""
    p.add_argument("--cases", type=int, default=400,
                   help="campaigns: fuzz cases per row (default 400)")
    p.add_argument("--mutants", type=int, default=24,
                   help="campaigns: mutants judged per row (default 24; 0 skips mutate)")
    p.add_argument("--budget", type=float, default=5.0,
                   help="campaigns: fuzz seconds per mutant (default 5)")
    p.add_argument("--workers", type=int, default=2,
                   help="campaigns: workers of the second row of each backend (default 2)")


def _children_mb() -> float:
    """The largest resident set of a finished child process so far, in MB."""
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def _fuzz_row(seed: int, cases: int, jobs: int, dask: str | None
              ) -> tuple[float, float | None, Any, dict[str, Any]]:
    """Seconds of the cases, of the start (the cluster, and its workers' imports), answers,
    and the row's timeline (what ``--plot`` draws)."""
    from rfcircuits.crosscheck.differential.fuzz import fuzz
    from rfcircuits.crosscheck.differential.strategies import Limits

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rfcircuits-bench-") as out:
        summary = fuzz(None, seed, jobs, Limits(), out, progress=False, cases=cases,
                       dask=dask)
        answers = (summary.cases, summary.checks,
                   [os.path.basename(p) for p in summary.failures])
    if summary.interrupted:
        raise KeyboardInterrupt
    return (summary.seconds, time.perf_counter() - start - summary.seconds, answers,
            {"timeline": summary.timeline})


def _mutate_row(seed: int, sample: int, budget: float, jobs: int, dask: str | None
                ) -> tuple[float, float | None, Any, dict[str, Any]]:
    """Seconds of the campaign (its start included), None, answers, nothing more."""
    from rfcircuits.crosscheck.differential import mutate

    start = time.perf_counter()
    verdicts = mutate.campaign(list(mutate.DEFAULT_MODULES), sample, budget, jobs, seed, dask)
    return time.perf_counter() - start, None, [(v.mutant, v.status) for v in verdicts], {}


def bench_campaigns(args: argparse.Namespace) -> int:
    """One table: fuzz rows, then mutate rows, each backend with 1 and ``--workers``."""
    n = max(2, args.workers)
    table = Table([("job", "job", 6), ("backend", "backend", 7), ("workers", "W", 3),
                   ("tasks", "tasks", 6), ("seconds", "seconds", 8), ("start", "start s", 7),
                   ("rate", "tasks/s", 8),
                   ("speedup", "×1 W", 6), ("dask_local", "dask/loc", 8),
                   ("same", "same", 5), ("peak_mb", "peak MB", 8),
                   ("workers_mb", "W MB", 7)], args.json, args.plot_rows)
    jobs: list[tuple[str, int, Any]] = [
        ("fuzz", args.cases, lambda jobs, dask: _fuzz_row(args.seed, args.cases, jobs, dask))]
    if args.mutants > 0:
        jobs.append(("mutate", args.mutants, lambda jobs, dask: _mutate_row(
            args.seed, args.mutants, args.budget, jobs, dask)))
    for job, tasks, run in jobs:
        seconds: dict[tuple[str, int], float] = {}
        first = None
        for backend, workers in (("local", 1), ("local", n), ("dask", 1), ("dask", n)):
            reset_peak()
            dask = f"local:{workers}" if backend == "dask" else None
            try:
                took, started, answers, more = run(1 if dask else workers, dask)
            except InputError as exc:  # Dask is not installed: its rows say so
                table.row({"job": job, "backend": backend, "workers": workers,
                           "stopped": str(exc)})
                print(f"[bench] {job} on {backend}: {exc}", file=sys.stderr, flush=True)
                continue
            seconds[(backend, workers)] = took
            first = answers if first is None else first
            table.row({"job": job, "backend": backend, "workers": workers, "tasks": tasks,
                       "seconds": round(took, 2), "start": started, "rate": tasks / took,
                       "speedup": ratio(seconds[(backend, 1)], took),
                       "dask_local": ratio(took, seconds[("local", workers)])
                       if backend == "dask" else None,
                       "same": "yes" if answers == first else "NO",
                       "peak_mb": round(peak_mb(), 1), "workers_mb": round(_children_mb(), 1),
                       **more})
    return 0
