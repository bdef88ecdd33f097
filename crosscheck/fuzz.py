"""``rfcircuits fuzz``: random small forests through the harness, failures shrunk and saved.

Case ``k`` of seed ``s`` is drawn from ``random.Random(f"{s}/{k}")`` (:mod:`rfcircuits.crosscheck.strategies`),
so the same seed replays the same cases, whatever the number of processes. Each case is a
forest and three instances, checked under both tie policies against every oracle that fits
(:mod:`rfcircuits.crosscheck.harness`), followed — when the BDD oracle is chosen — by a *general-reason
case* from ``random.Random(f"{s}/{k}/general")``: a forest with more features and states
(:data:`rfcircuits.crosscheck.strategies.GENERAL`) whose GSRs, GNRs, robustness and shortest flips
are compared with the BDD oracle's. The small forests rarely have more than one
GSR per SR set or GNRs on three features, which the large ones often do, and the brute force
could not enumerate their candidate terms. A failing case is shrunk (:mod:`rfcircuits.crosscheck.shrink`)
while the same check still fails, and written at once, atomically, to
``DIR/case-<seed>-<k>[-general]-<ties>.json`` (``rfcircuits.repro/1``: the forest, the
instances, the tie policy, the disagreements; replay it with ``rfcircuits crosscheck --replay
FILE``). Workers run until the time budget is spent; progress goes to stderr, a summary to
stdout.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import random
import signal
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from rfcircuits.atomicio import output_dir, write_json
from rfcircuits.explanation import ALL_WHAT
from rfcircuits.forest import TIES, Forest, Instance, instance_to_json
from rfcircuits.interrupts import SIGNALS
from rfcircuits.progress import Progress
from rfcircuits.crosscheck.harness import ORACLES, crosscheck
from rfcircuits.crosscheck.shrink import shrink
from rfcircuits.crosscheck.strategies import GENERAL, Limits, random_forest, random_instance

REPRO_FORMAT = "rfcircuits.repro/1"
INSTANCES_PER_CASE = 3
#: The fields a general-reason case checks (those computed by :mod:`rfcircuits.general`).
GENERAL_WHAT = ("robust", "gsr", "gnr", "flips")


@dataclass
class Summary:
    cases: int = 0
    checks: int = 0
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False


def make_case(seed: int, k: int, limits: Limits,
              stream: str = "") -> tuple[Forest, list[Instance]]:
    """Case ``k`` of a fuzz run with ``seed`` (of the named ``stream``, if any)."""
    rng = random.Random(f"{seed}/{k}/{stream}" if stream else f"{seed}/{k}")
    forest = random_forest(rng, limits)
    return forest, [random_instance(rng, forest) for _ in range(INSTANCES_PER_CASE)]


def run_case(seed: int, k: int, limits: Limits, oracles: tuple[str, ...],
             out_dir: str) -> tuple[int, list[str]]:
    """Check case ``k``, and its general-reason case when the BDD oracle is chosen, under
    both tie policies; returns (checks, saved repro paths)."""
    plans = [("", limits, oracles, ALL_WHAT, True)]
    if "bdd" in oracles:
        plans.append(("general", GENERAL, ("bdd",), GENERAL_WHAT, False))
    checks, saved = 0, []
    for stream, case_limits, used, what, formulas in plans:
        forest, instances = make_case(seed, k, case_limits, stream)
        for ties in TIES:
            def check(f: Forest, xs: list[Instance], ties: str = ties) -> Any:
                report = crosscheck(f, xs, ties, used, what, formulas, seed=k)
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
            name = "-".join(str(part) for part in (seed, k, stream, ties) if part != "")
            path = os.path.join(out_dir, f"case-{name}.json")
            write_json(path, repro(small, xs, ties, check(small, xs).disagreements, seed, k,
                                   original=(len(forest.trees), len(forest.features))))
            saved.append(path)
    return checks, saved


def repro(forest: Forest, instances: list[Instance], ties: str, disagreements: list[Any],
          seed: int | None = None, case: int | None = None,
          original: tuple[int, int] | None = None) -> dict[str, Any]:
    """A ``rfcircuits.repro/1`` document (replayable with ``crosscheck --replay``)."""
    doc: dict[str, Any] = {
        "format": REPRO_FORMAT, "ties": ties, "forest": forest.to_json(),
        "instances": [instance_to_json(forest, x) for x in instances],
        "disagreements": [d.to_json() for d in disagreements]}
    if seed is not None:
        doc.update(seed=seed, case=case)
    if original is not None:
        doc["shrunk_from"] = {"trees": original[0], "features": original[1]}
    return doc


def _worker(wid: int, jobs: int, seed: int, deadline: float, limits: Limits,
            oracles: tuple[str, ...], out_dir: str, results: Any) -> None:
    k = wid
    parent = os.getppid()
    for s in SIGNALS:
        signal.signal(s, _stop)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)  # blocked by the parent until now
    try:
        while not _STOPPED and time.monotonic() < deadline and os.getppid() == parent:
            checks, saved = run_case(seed, k, limits, oracles, out_dir)
            results.put((k, checks, saved))
            k += jobs
    except OSError as exc:  # a failure file that cannot be written: the parent reports it
        results.put(exc)
    results.put(None)


#: Set in a worker by a signal: it stops after its case (or its parent kills it first).
_STOPPED: list[int] = []


def _stop(signum: int, frame: Any) -> None:
    """A worker's signal handler only takes note: a KeyboardInterrupt raised in the middle of
    a solver's cleanup would be swallowed there with a traceback on stderr. The parent, which
    stops on the same signal, kills its workers; their failure files are written whole or
    not at all."""
    _STOPPED.append(signum)


def fuzz(seconds: float, seed: int, jobs: int, limits: Limits, out_dir: str,
         oracles: tuple[str, ...] = ORACLES, progress: bool = True) -> Summary:
    """Run cases for ``seconds`` on ``jobs`` processes; failures land in ``out_dir``. A
    signal stops the workers at once; the failures already saved are complete files. A
    failure file that cannot be written (a full disk) stops the run with its OSError."""
    output_dir(out_dir)
    summary = Summary()
    start = time.monotonic()
    deadline = start + seconds
    ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    results = ctx.Queue()
    workers = [ctx.Process(target=_worker, args=(w, jobs, seed, deadline, limits, oracles,
                                                  out_dir, results), daemon=True)
               for w in range(jobs)]
    # Workers start with the signals blocked, until they have their own handlers.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    started = 0
    bar = Progress("fuzz seconds", enabled=progress)
    try:
        for w in workers:
            w.start()
            started += 1
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # a pending signal: stop below
        running = started
        while running:
            try:
                item = results.get(timeout=1.0)
            except queue.Empty:
                if not any(w.is_alive() for w in workers):
                    break
                continue
            if item is None:
                running -= 1
                continue
            if isinstance(item, OSError):
                raise item
            _, checks, saved = item
            summary.cases += 1
            summary.checks += checks
            summary.failures.extend(saved)
            for path in saved:
                bar.write(f"[fuzz] FAILURE saved to {path}")
            # the seconds spent out of the budget: tqdm's remaining time is then the budget's
            bar.note(f"{summary.cases} cases, {summary.checks} checks, "
                     f"{len(summary.failures)} failures")
            bar(min(round(time.monotonic() - start), round(seconds)), round(seconds))
    except (KeyboardInterrupt, OSError) as exc:
        summary.interrupted = isinstance(exc, KeyboardInterrupt)
        for w in workers:  # the case in progress is lost; every saved failure is whole
            if w.is_alive():
                w.kill()
        if not summary.interrupted:
            raise
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for w in workers[:started]:
            w.join(timeout=5)
            if w.is_alive():
                w.kill()
        bar.close()
        summary.seconds = time.monotonic() - start
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
