"""``rfcircuits fuzz``: random small forests through the harness, failures shrunk and saved.

Case ``k`` of seed ``s`` is drawn from ``random.Random(f"{s}/{k}")``
(:mod:`rfcircuits.crosscheck.differential.strategies`), and checking it is a pure function of ``(s,
k)``: the same seed replays the same cases, and ``--cases N`` the same summary (but for its seconds
and timeline) and failure files, whatever the number of processes or the backend (local processes or
a Dask cluster: :mod:`rfcircuits.crosscheck.campaigns.parallel`). Each case is a forest and three
instances, checked under both tie policies against every oracle that fits
(:mod:`rfcircuits.crosscheck.differential.harness`), followed — when the BDD oracle is chosen — by a
*general-reason case* from ``random.Random(f"{s}/{k}/general")``: a forest with more features and
states (:data:`rfcircuits.crosscheck.differential.strategies.GENERAL`) whose GSRs, GNRs, robustness
and shortest flips are compared with the BDD oracle's. The small forests rarely have more than one
GSR per SR set or GNRs on three features, which the large ones often do, and the brute force could
not enumerate their candidate terms. A failing case is shrunk
(:mod:`rfcircuits.crosscheck.differential.shrink`) where its case ran while the same check still
fails, and written by the client as soon as the case is back, atomically, to
``DIR/case-<seed>-<k>[-general]-<ties>.json`` (``rfcircuits.repro/1``: the forest, the instances,
the tie policy, the disagreements; replay it with ``rfcircuits crosscheck --replay FILE``). Cases
run until the time budget or their count is spent; progress (cases per second, failures, workers
alive) goes to stderr, a summary to stdout, whose timeline (cases, checks and failures against the
seconds) ``--plot DIR`` draws (:func:`rfcircuits.plots.fuzz_timeline`).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from rfcircuits.atomicio import output_dir, write_json
from rfcircuits.explanation import ALL_WHAT
from rfcircuits.forest import TIES, Forest, Instance, instance_to_json
from rfcircuits.progress import Progress
from rfcircuits.crosscheck.differential.harness import ORACLES, crosscheck
from rfcircuits.crosscheck.campaigns.parallel import open_backend, run_tasks
from rfcircuits.crosscheck.differential.shrink import shrink
from rfcircuits.crosscheck.differential.strategies import (COARSE_WEIGHTS, GENERAL, SOFT_WEIGHTS,
                                                           Limits, random_forest, random_instance,
                                                           soften)

REPRO_FORMAT = "rfcircuits.repro/1"
INSTANCES_PER_CASE = 3
#: The fields a general-reason case checks (those computed by :mod:`rfcircuits.general`).
GENERAL_WHAT = ("robust", "gsr", "gnr", "flips")
#: The native engines every case runs through (the SAT engine with no limits: complete).
ENGINES = ("graphs", "sat")
#: Soft cases take these weights and ways of comparing soft votes in turn, so that each of
#: the NNF circuits' comparisons (:func:`rfcircuits.classformula.soft_comparison`) meets the
#: oracles: on tiny forests ``auto`` makes a decision diagram of fine weights and a unary
#: network of coarse ones, and binary adders only when forced; forcing each also checks what
#: ``auto`` would not choose (a unary network where ``auto`` finds no units to count).
SOFT_PLAN = ((SOFT_WEIGHTS, "auto"), (COARSE_WEIGHTS, "auto"), (SOFT_WEIGHTS, "binary"),
             (COARSE_WEIGHTS, "diagram"), (COARSE_WEIGHTS, "unary"), (COARSE_WEIGHTS, "binary"))


#: Points a summary's timeline keeps about, and the fewest seconds between two
#: (:func:`timeline_point`).
TIMELINE_POINTS, TIMELINE_GAP = 200, 0.1


@dataclass
class Summary:
    cases: int = 0
    checks: int = 0
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False
    #: ``[seconds, cases, checks, failures]`` as the run went (:func:`timeline_point`).
    timeline: list[list[float]] = field(default_factory=list)


def timeline_point(timeline: list[list[float]], seconds: float, cases: int, checks: int,
                   failures: int, last: bool = False) -> None:
    """Add ``[seconds, cases, checks, failures]`` to a fuzz summary's ``timeline`` (what
    ``--plot`` draws) when a failure was found since its last point, when ``seconds`` is
    :data:`TIMELINE_GAP` and a :data:`TIMELINE_POINTS`-th of the run past that point, or at the
    ``last`` point of the run. Past twice :data:`TIMELINE_POINTS` points every other one is
    dropped, but for those where failures grew and the last: a long campaign's summary stays
    a few kilobytes (and a point per failure file, which is written anyway)."""
    if timeline and not last and failures == timeline[-1][3] and \
            seconds - timeline[-1][0] < max(TIMELINE_GAP, seconds / TIMELINE_POINTS):
        return
    timeline.append([round(seconds, 3), cases, checks, failures])
    if len(timeline) > 2 * TIMELINE_POINTS:
        timeline[:] = [p for i, p in enumerate(timeline)
                       if i % 2 == 0 or i == len(timeline) - 1 or p[3] > timeline[i - 1][3]]


def make_case(seed: int, k: int, limits: Limits, stream: str = "",
              weights: tuple[float, ...] = SOFT_WEIGHTS) -> tuple[Forest, list[Instance]]:
    """Case ``k`` of a fuzz run with ``seed`` (of the named ``stream``, if any). Soft cases
    (:func:`soft_case`) are the hard case's forest and instances with ``weights`` drawn from
    a stream of their own, so that hard cases stay what they were."""
    name = f"{seed}/{k}/{stream}" if stream else f"{seed}/{k}"
    rng = random.Random(name)
    forest = random_forest(rng, limits)
    instances = [random_instance(rng, forest) for _ in range(INSTANCES_PER_CASE)]
    if soft_case(k, limits) is not None:
        forest = soften(forest, random.Random(name + "/soft"), weights)
    return forest, instances


def soft_case(k: int, limits: Limits) -> int | None:
    """Which soft case of its run case ``k`` is (0, 1, …), or None for a hard case."""
    if limits.votes == "soft":
        return k
    return k // 2 if limits.votes == "mixed" and k % 2 else None


def run_case(seed: int, k: int, limits: Limits, oracles: tuple[str, ...],
             engines: tuple[str, ...] = ENGINES) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
    """Check case ``k``, and its general-reason case when the BDD oracle is chosen, under
    both tie policies, with each native engine of ``engines``; returns the checks made and
    each failure's repro file name and document (a pure function of its arguments: the
    client writes the files)."""
    plans = [("", limits, oracles, ALL_WHAT, True)]
    if "bdd" in oracles:
        plans.append(("general", GENERAL, ("bdd",), GENERAL_WHAT, False))
    checks, found = 0, []
    for stream, case_limits, used, what, formulas in plans:
        j = soft_case(k, case_limits)
        weights, comparison = SOFT_PLAN[j % len(SOFT_PLAN)] if j is not None else SOFT_PLAN[0]
        forest, instances = make_case(seed, k, case_limits, stream, weights)
        made, failed = _check_case(forest, instances, seed, k, stream, used, what, formulas,
                                   engines, comparison)
        checks += made
        found.extend(failed)
    return checks, found


def _check_case(forest: Forest, instances: list[Instance], seed: int, k: int, stream: str,
                used: tuple[str, ...], what: tuple[str, ...], formulas: bool,
                engines: tuple[str, ...], comparison: str = "auto",
                ) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
    """One forest's checks under both tie policies and each engine (the NNF circuits'
    soft votes compared by ``comparison``): their number, and the failures shrunk, as repro
    file names and documents."""
    checks, found = 0, []
    for ties, engine in itertools.product(TIES, engines):
        def check(f: Forest, xs: list[Instance], ties: str = ties,
                  engine: str = engine) -> Any:
            report = crosscheck(f, xs, ties, used, what, formulas, seed=k, engine=engine,
                                comparison=comparison)
            if report.interrupted:  # Ctrl-C: a partial report is no case (nor a shrink step)
                raise KeyboardInterrupt
            return report

        report = check(forest, instances)
        checks += report.checks()
        if report.ok:
            continue
        first = report.disagreements[0].check

        def fails(f: Forest, xs: list[Instance]) -> bool:
            return any(d.check == first for d in check(f, xs).disagreements)

        small, xs = shrink(forest, instances, fails)
        name = "-".join(str(part) for part in (seed, k, stream, ties, engine) if part != "")
        found.append((f"case-{name}.json",
                      repro(small, xs, ties, check(small, xs).disagreements, seed, k,
                            original=(len(forest.trees), len(forest.features)),
                            engine=engine, comparison=comparison)))
    return checks, found


def repro(forest: Forest, instances: list[Instance], ties: str, disagreements: list[Any],
          seed: int | None = None, case: int | None = None,
          original: tuple[int, int] | None = None, engine: str = "graphs",
          comparison: str = "auto") -> dict[str, Any]:
    """A ``rfcircuits.repro/1`` document (replayable with ``crosscheck --replay``)."""
    doc: dict[str, Any] = {
        "format": REPRO_FORMAT, "ties": ties, "engine": engine, "forest": forest.to_json(),
        "instances": [instance_to_json(forest, x) for x in instances],
        "disagreements": [d.to_json() for d in disagreements]}
    if seed is not None:
        doc.update(seed=seed, case=case)
    if original is not None:
        doc["shrunk_from"] = {"trees": original[0], "features": original[1]}
    if comparison != "auto":
        doc["comparison"] = comparison
    return doc


def fuzz(seconds: float | None, seed: int, jobs: int, limits: Limits, out_dir: str,
         oracles: tuple[str, ...] = ORACLES, progress: bool = True, cases: int | None = None,
         dask: str | None = None, engines: tuple[str, ...] = ENGINES) -> Summary:
    """Run cases 0, 1, 2… for ``seconds`` (None: no time limit) or until ``cases`` are checked, on
    ``jobs`` local processes or the Dask cluster at ``dask``; failures land in ``out_dir``, each
    written by this process as soon as its case is back. The summary lists them in case order, so
    the same seed and ``cases`` give the same summary (apart from the seconds and the timeline) and
    the same files on any backend. A signal stops the run: the cases not finished are dropped, the
    failures already saved are complete files. A failure file that cannot be written (a full disk)
    stops the run with its OSError."""
    output_dir(out_dir)
    summary = Summary()
    start = time.monotonic()
    found: dict[int, list[str]] = {}
    more = None if seconds is None else (lambda: time.monotonic() < start + seconds)
    keys = range(cases) if cases is not None else itertools.count()
    bar = Progress("fuzz cases" if cases is not None else "fuzz seconds", enabled=progress)
    try:
        with open_backend(jobs, dask) as backend:
            backend.prepare(run_case)
            start = time.monotonic()  # the budget and the rate leave out a cluster's start
            for k, (checks, failures) in run_tasks(
                    backend, run_case, ((k, (seed, k, limits, oracles, engines)) for k in keys),
                    more,
                    short=True):
                summary.cases += 1
                summary.checks += checks
                for name, doc in failures:
                    path = os.path.join(out_dir, name)
                    write_json(path, doc)
                    found.setdefault(k, []).append(path)
                    bar.write(f"[fuzz] FAILURE saved to {path}")
                timeline_point(summary.timeline, time.monotonic() - start, summary.cases,
                               summary.checks, sum(map(len, found.values())))
                rate = summary.cases / max(1e-9, time.monotonic() - start)
                bar.note(f"{summary.cases} cases ({rate:.1f}/s), {summary.checks} checks, "
                         f"{sum(map(len, found.values()))} failures, {backend.workers()} "
                         f"workers ({backend.name})")
                if cases is not None:
                    bar(summary.cases, cases)
                else:  # the seconds spent: tqdm's remaining time is then the budget's
                    bar(min(round(time.monotonic() - start), round(seconds or 0)),
                        round(seconds or 0))
    except KeyboardInterrupt:
        summary.interrupted = True
    finally:
        bar.close()
        summary.failures = [path for k in sorted(found) for path in found[k]]
        summary.seconds = time.monotonic() - start
        timeline_point(summary.timeline, summary.seconds, summary.cases, summary.checks,
                       len(summary.failures), last=True)
    return summary


def summary_text(summary: Summary) -> str:
    rate = summary.cases / max(1e-9, summary.seconds)
    lines = [f"fuzz: {summary.cases} cases ({rate:.1f}/s), {summary.checks} checks, "
             f"{len(summary.failures)} failures in {summary.seconds:.0f} s"
             + (" (interrupted)" if summary.interrupted else "")]
    lines.extend(f"  {path}" for path in summary.failures)
    return "\n".join(lines)


def summary_json(summary: Summary) -> str:
    return json.dumps(asdict(summary))
