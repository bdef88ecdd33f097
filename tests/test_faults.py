"""Fault injection: the real command line, stopped by signals at random moments and run
against a full disk, a read-only directory, devices and FIFOs.

Each fault runs a command in its own process group and directory, where a previous complete
output waits at the target (distinct bytes), and then checks the output rules: the previous
output is intact unless the run finished, in which case the target equals an uninterrupted
reference run byte for byte; a partial file holds whole reference lines (a partial corpus
build, valid JSON cases) and ``--resume`` completes it to the reference bytes; no temporary
file is left, not even after SIGKILL; devices and FIFOs stay what they are.

Signals start once the command has installed its handlers (the wrapper that runs it says so
on a pipe): the interpreter's own start-up, before any product code runs, is not the
product's, and a signal there would only test Python. From then on a handled signal must end
the run with ``128 + signal``; a signal may still land after the command has restored the
handlers (the work done, the interpreter exiting), where the process dies of it (status
``-signal``), accepted only when its outputs are settled (the previous output or the complete
reference one, no partial output). The children's signal dispositions are set by the wrapper,
so the result does not depend on how the test run was started (``nohup`` ignores SIGHUP, a
shell's background job SIGINT).

The delays are drawn over the commands' working time measured under the same concurrency as
the faults (four at a time), and each signal test checks that some of its signals did stop
the work: a plan whose signals all land after the exit would prove nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests import interactive

#: The environment variables that tell the wrapper which pipe to report readiness on, and the
#: file size limit that stands for a full disk.
READY_ENV = "RFCIRCUITS_TEST_READY_FD"
FSIZE_ENV = "RFCIRCUITS_TEST_FSIZE"

#: Runs the CLI in a fresh interpreter, after the patches its first argument names: ``mini``
#: shrinks the corpus to three cases (as tests/test_corpus.py's ``mini`` fixture), ``wrong``
#: also plants a fault in the native engine so that fuzz has failures to save. It sets the
#: signal dispositions of an interactive run (:mod:`tests.interactive`) and the file size
#: limit :data:`FSIZE_ENV` gives (writes past it fail with EFBIG, as they would with ENOSPC on
#: a full disk), and writes ``ready`` to the pipe :data:`READY_ENV` names once the command's
#: handlers are installed.
WRAPPER = interactive.SIGNALS + f"""
import contextlib, dataclasses, faulthandler, os, resource, sys
faulthandler.enable()  # a crash (exit -11) shows where
limit = os.environ.pop("{FSIZE_ENV}", None)
if limit is not None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), int(limit)))
mode = sys.argv.pop(1)
if mode in ("mini", "wrong"):
    from rfcircuits.crosscheck import corpus
    from rfcircuits.crosscheck.differential.strategies import Limits
    corpus.EXAMPLE_CASES = {{"spec-flip": corpus.EXAMPLE_CASES["spec-flip"]}}
    corpus.STREAMS = (corpus.Stream("tie", "tie", 2, Limits(3, 3, 3, 2, 2), 601),)
    corpus.TRAINED = ()
if mode == "wrong":
    from rfcircuits.explain import Explainer
    original = Explainer.explain_states
    def wrong(self, x, what=None, *args, **kwargs):
        e = original(self, x, what) if what is not None else original(self, x)
        return dataclasses.replace(e, robustness=(e.robustness or 0) + 1)
    Explainer.explain_states = wrong
from rfcircuits.cli import engine
installing = engine.signals_as_interrupts
@contextlib.contextmanager
def announced():
    with installing():
        ready = os.environ.pop("{READY_ENV}", None)
        if ready is not None:
            os.write(int(ready), b"ready")
            os.close(int(ready))
        yield
engine.signals_as_interrupts = announced
from rfcircuits.cli.main import entry
entry()  # as the rfcircuits program does
"""

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL)
PAGE = os.sysconf("SC_PAGE_SIZE")
PREVIOUS = b'{"previous": "the complete output of an earlier run"}\n'
#: Faults run at once, by the faults and by the reference runs whose times scale the delays.
CONCURRENCY = 4


# ----------------------------------------------------------------------------- the commands


@dataclass
class Command:
    """A command under test: its arguments (``{in}`` is the inputs directory), its output
    (a file or a directory, relative to the run's directory) and how it records."""

    name: str
    mode: str
    argv: list[str]
    target: str
    kind: str  # records, corpus, fuzz or compile
    ok: int = 0  # exit status of an uninterrupted run
    faults: int = 0  # signal faults on a regular target
    streams: int = 0  # signal faults on a FIFO and a device target (records only)
    ref: Reference | None = None

    def args(self, inputs: Path, *extra: str, out: str | None = None) -> list[str]:
        argv = [a.replace("{in}", str(inputs)) for a in self.argv]
        if out is not None:
            argv[argv.index("--out") + 1] = out
        return [sys.executable, "-c", WRAPPER, self.mode, *argv, *extra]

    @property
    def resumable(self) -> bool:
        return self.kind in ("records", "corpus")

    @property
    def partial(self) -> str:
        return self.target + ".partial"


@dataclass
class Reference:
    seconds: float  # working time of an uninterrupted run, among CONCURRENCY at once
    output: Any  # bytes of a file, or {relative path: bytes} of a directory
    stdout: bytes

    @property
    def lines(self) -> list[bytes]:
        return self.output.splitlines(keepends=True)


COMMANDS = [
    Command("explain", "plain", ["explain", "--forest", "{in}/forest.json", "--instances",
                                 "{in}/instances.jsonl", "--out", "e.jsonl", "--no-progress"],
            "e.jsonl", "records", faults=64, streams=20),
    Command("crosscheck", "plain", ["crosscheck", "--forest", "{in}/small.json", "--instances",
                                    "{in}/small.jsonl", "--out", "r.jsonl", "--no-progress"],
            "r.jsonl", "records", faults=40, streams=8),
    Command("fuzz", "wrong", ["fuzz", "--seconds", "1", "--out", "fz", "--no-progress"],
            "fz", "fuzz", ok=1, faults=24),
    Command("corpus", "mini", ["corpus", "build", "--out", "cor", "--no-progress"],
            "cor", "corpus", faults=32),
    Command("compile", "plain", ["compile", "--forest", "{in}/big.json", "--form", "nnf",
                                 "--out", "circ", "--dot", "--no-progress"],
            "circ", "compile", faults=24),
]
BY_NAME = {c.name: c for c in COMMANDS}


def snapshot(path: Path) -> Any:
    """The bytes of a file, or of every file under a directory (None: nothing there) but the
    temporary files of the output rules, which :func:`leftovers` judges."""
    if path.is_dir():
        return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
                if p.is_file() and not p.name.startswith(".tmp-")}
    return path.read_bytes() if path.exists() else None


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """Small random forests (never the datasets): one for explain, one every oracle checks
    quickly for crosscheck, one for compile; and each command's reference run."""
    from rfcircuits.crosscheck.differential.fuzz import make_case
    from rfcircuits.crosscheck.differential.strategies import GENERAL, Limits, random_instance
    from rfcircuits.forest import instance_to_json, save_forest

    root = tmp_path_factory.mktemp("inputs")
    rng = random.Random(5)
    for name, limits, stream, n in (("forest", GENERAL, "general", 500),
                                    ("small", Limits(), "", 20),
                                    ("big", Limits(10, 10, 25, 4, 8), "compile", 0)):
        forest, _ = make_case(0, 1, limits, stream)
        save_forest(forest, root / f"{name}.json")
        lines = [json.dumps(instance_to_json(forest, random_instance(rng, forest))) + "\n"
                 for _ in range(n)]
        (root / f"{'instances' if name == 'forest' else name}.jsonl").write_text(
            "".join(lines), encoding="utf-8")
    for command in COMMANDS:
        command.ref = reference(command, root, tmp_path_factory.mktemp("ref-" + command.name))
    return root


def reference(command: Command, inputs: Path, where: Path) -> Reference:
    """:data:`CONCURRENCY` uninterrupted runs at once, as the faults run: they must agree (a
    time-bound fuzz run on the failure files they share), and their mean working time, from
    the handlers' installation to the exit, scales the faults' delays."""
    dirs = [where / str(i) for i in range(CONCURRENCY)]
    for d in dirs:
        (d / "logs").mkdir(parents=True)
    runs = run_all([lambda d=d: launch(command.args(inputs), d, d / "logs", timeout=120)
                    for d in dirs])
    for run in runs:
        assert run.status == command.ok and run.ready, run.stderr
    outputs = [snapshot(d / command.target) for d in dirs]
    assert all(outputs), command.name
    if command.kind == "fuzz":  # every failure file of a run, and the same in the others
        shared = set.intersection(*map(set, outputs))
        assert shared and all(o[n] == outputs[0][n] for o in outputs for n in shared)
    else:
        assert all(o == outputs[0] for o in outputs), f"{command.name} is not deterministic"
    if command.name == "crosscheck":  # its table, which a resumed run must print again
        assert all(run.stdout == runs[0].stdout for run in runs)
    return Reference(sum(run.seconds for run in runs) / len(runs), outputs[0], runs[0].stdout)


# ----------------------------------------------------------------------------- running a fault


@dataclass
class Run:
    status: int
    stdout: bytes
    stderr: str
    ready: bool  # the command reported its handlers installed
    seconds: float  # from then (or from its start) to its exit
    pid: int


def launch(argv: list[str], cwd: Path, logs: Path, sig: int | None = None, delay: float = 0.0,
           group: bool = False, timeout: float = 60.0, env: dict[str, str] | None = None) -> Run:
    """Run ``argv`` (the wrapper, perhaps behind a prefix) in its own session; once it reports
    its handlers installed, wait ``delay`` seconds and send ``sig`` (to the process or to its
    whole group); wait for it and for every process it left (orphaned workers)."""
    out, err = logs / "stdout", logs / "stderr"
    ready_read, ready_write = os.pipe()
    environ = {**os.environ, **(env or {}), READY_ENV: str(ready_write)}
    try:
        with open(out, "wb") as o, open(err, "wb") as e:
            proc = subprocess.Popen(argv, cwd=cwd, stdout=o, stderr=e, stdin=subprocess.DEVNULL,
                                    start_new_session=True, env=environ,
                                    pass_fds=(ready_write,))
        os.close(ready_write)
        ready_write = -1
        try:
            # "ready", or the end of the pipe when the command exits before (bad input)
            readable, _, _ = select.select([ready_read], [], [], timeout)
            assert readable, f"{argv[4:]} did not start within {timeout} s"
            ready = os.read(ready_read, 16) == b"ready"
            start = time.monotonic()
            if sig is not None and ready:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(delay)
                if proc.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        (os.killpg if group else os.kill)(proc.pid, sig)
            status = proc.wait(timeout)
            seconds = time.monotonic() - start
            deadline = time.monotonic() + timeout
            while True:  # the group is gone once its last process is
                try:
                    os.killpg(proc.pid, 0)
                except ProcessLookupError:
                    break
                assert time.monotonic() < deadline, f"processes of {argv[4:]} still running"
                time.sleep(0.02)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    finally:
        os.close(ready_read)
        if ready_write >= 0:
            os.close(ready_write)
    return Run(status, out.read_bytes(), err.read_text("utf-8", "replace"), ready, seconds,
               proc.pid)


def place_previous(command: Command, work: Path) -> Any:
    """Put a previous complete output at the target; returns its snapshot."""
    target = work / command.target
    if command.kind == "records":
        target.write_bytes(PREVIOUS)
    else:
        target.mkdir()
        names = {"fuzz": ["case-0-0-first.json"], "corpus": ["MANIFEST.json", "README.md"],
                 "compile": list(command.ref.output)}[command.kind]
        for name in names:
            (target / name).write_bytes(PREVIOUS)
    return snapshot(target)


def check_partial(command: Command, work: Path, problems: list[str]) -> bool:
    """Whether a partial output is there; its contents must be finished reference work."""
    partial = work / command.partial
    if not partial.exists():
        return False
    if command.kind == "corpus":
        for case in partial.iterdir():
            try:
                json.loads(case.read_bytes())
            except ValueError:
                problems.append(f"partial case {case.name} is not valid JSON")
        return True
    data = partial.read_bytes()
    lines = data.splitlines(keepends=True)
    ref = command.ref.lines
    whole = lines if data.endswith(b"\n") else lines[:-1]
    if whole != ref[:len(whole)]:
        problems.append("the partial file's lines are not a prefix of the reference lines")
    if not data.endswith(b"\n") and data:
        # SIGKILL can stop a write between two pages of the file: only a record whose write
        # crosses a page boundary can be cut (--resume drops it).
        nxt = ref[len(whole)] if len(whole) < len(ref) else b""
        start = len(data) - len(lines[-1])
        crosses = start // PAGE != (start + len(nxt) - 1) // PAGE
        if not (crosses and nxt.startswith(lines[-1])):
            problems.append("the partial file ends with a cut line")
    return True


def leftovers(command: Command, work: Path) -> list[str]:
    """Whatever lies in the run's directory besides the target and its partial output, and
    hidden files anywhere (temporary files have hidden names)."""
    allowed = {command.target, command.partial}
    found = [p.name for p in work.iterdir() if p.name not in allowed]
    found += [str(p.relative_to(work)) for p in work.rglob(".*")]
    if command.kind == "fuzz" and (work / "fz").is_dir():
        found += [p.name for p in (work / "fz").iterdir()
                  if not (p.name.startswith("case-") and p.name.endswith(".json"))]
    return found


def expected_status(command: Command, sig: int, run: Run, settled: bool) -> bool:
    """0 (fuzz: 1) for a finished run, 128 + signal for a handled one, -9 after SIGKILL; a
    signal after the command restored its handlers (the work done, the interpreter exiting)
    kills it (-signal), accepted only when the outputs are ``settled``: the previous output or
    the complete reference one, no partial output."""
    if run.status in (command.ok, 128 + sig):
        return True
    return run.status == -sig and (sig == signal.SIGKILL or settled)


@dataclass
class Outcome:
    """A fault's problems (each line names the fault), and whether its signal stopped the
    work (exit 128 + signal)."""

    problems: list[str]
    interrupted: bool = False


def fault(command: Command, inputs: Path, root: Path, sig: int, delay: float, group: bool,
          extra: tuple[str, ...] = ()) -> Outcome:
    """One signal fault on a regular target (and the resume after it)."""
    work, logs = root / "work", root / "logs"
    work.mkdir(parents=True)
    logs.mkdir()
    previous = place_previous(command, work)
    run = launch(command.args(inputs, *extra), work, logs, sig=sig, delay=delay, group=group)
    problems = []
    out = snapshot(work / command.target)
    finished = out == command.ref.output
    if command.kind == "fuzz":  # time-bound: the failure files are some of the reference's
        finished = isinstance(out, dict) and all(
            out[n] == command.ref.output.get(n, out[n]) or (out[n] == PREVIOUS and n in previous)
            for n in out)
        for name, data in (out or {}).items():
            try:
                json.loads(data)
            except ValueError:
                problems.append(f"failure file {name} is not a complete JSON document")
        if not finished:
            problems.append("a failure file is neither the previous one nor the reference's")
    elif command.kind == "compile":  # one target per file: each is the previous or the new
        mixed = [n for n in set(out or {}) | set(previous)
                 if (out or {}).get(n) not in (previous.get(n), command.ref.output.get(n))]
        if mixed:
            problems.append(f"circuit files neither previous nor the reference's: {mixed}")
    elif not finished and out != previous:
        problems.append("the target is neither the previous output nor the reference's")
    if run.status == command.ok and not finished:
        problems.append("exit 0 but the target is not the reference output: " + (
            str(sorted(n for n in set(out) | set(command.ref.output)
                       if out.get(n) != command.ref.output.get(n)))
            if isinstance(out, dict) else f"{len(out or b'')} bytes"))
    settled = (finished or out == previous) and not (work / command.partial).exists()
    if not run.ready:
        problems.append("the command exited before installing its handlers")
    if not expected_status(command, sig, run, settled):
        problems.append(f"exit status {run.status}")
    if run.status in (command.ok, 128 + sig) and "Traceback" in run.stderr:
        problems.append("a traceback on stderr")
    if run.status == 128 + sig and command.resumable and (work / command.partial).exists() \
            and command.partial not in run.stderr:
        problems.append("the message does not name the partial output")
    has_partial = check_partial(command, work, problems)
    if run.status == command.ok and has_partial:
        problems.append("a partial output after a finished run")
    left = leftovers(command, work)
    # A killed corpus build leaves the corpus it was assembling (or swapping out) beside the
    # target, and SIGKILL between naming a temporary file and renaming it leaves that file,
    # as documented: the next run removes them (checked below).
    killed = [n for n in left if run.status == -signal.SIGKILL and (
        Path(n).name.startswith(f".tmp-{run.pid}.") or command.kind == "corpus"
        and Path(n).name.startswith((f".{command.target}.building-",
                                     f".{command.target}.old-")))]
    problems += [f"left behind: {name}" for name in left if name not in killed]
    resume = has_partial and command.resumable and not problems
    if resume or killed and not problems:
        again = launch(command.args(inputs, *(["--resume"] if resume else []), *extra), work,
                       logs)
        run_name = "--resume" if resume else "the next run"
        if again.status != command.ok or snapshot(work / command.target) != command.ref.output:
            problems.append(f"{run_name}: exit {again.status}, target not the reference "
                            f"({again.stderr[-300:]})")
        if command.name == "crosscheck" and again.stdout != command.ref.stdout:
            problems.append(f"{run_name}: not the reference table on stdout")
        if (work / command.partial).exists():
            problems.append(f"{run_name} left the partial output")
        problems += [f"left behind after {run_name}: {n}" for n in leftovers(command, work)]
    if problems:
        problems = [f"{command.name} {signal.Signals(sig).name} {'group' if group else 'pid'} "
                    f"after {delay:.3f} s {' '.join(extra)} (exit {run.status}): {p}"
                    for p in problems] + [run.stderr[-2000:]]
    return Outcome(problems, run.status == 128 + sig)


def plan(command: Command, n: int, seed: str) -> list[tuple[int, float, bool]]:
    """``n`` faults: signals in turn, delays uniform over 1.1 times the reference's working
    time (so that most land during the work, some after it), to the process or its group."""
    rng = random.Random(seed)
    span = command.ref.seconds * 1.1
    return [(SIGNALS[i % len(SIGNALS)], rng.uniform(0, span), rng.random() < 0.5)
            for i in range(n)]


T = TypeVar("T")


def run_all(jobs: list[Callable[[], T]]) -> list[T]:
    """The jobs' results, :data:`CONCURRENCY` jobs at a time."""
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        return list(pool.map(lambda job: job(), jobs))


def signal_jobs(command: Command, inputs: Path, root: Path) -> list[Callable[[], Outcome]]:
    """The signal faults of ``command`` on a regular target (fuzz and corpus with one local
    worker and with two)."""
    jobs = []
    for i, (sig, delay, group) in enumerate(plan(command, command.faults, command.name)):
        extra = ("--jobs", str(1 + i % 2)) if command.name in ("fuzz", "corpus") else ()
        jobs.append(lambda i=i, sig=sig, delay=delay, group=group, extra=extra: fault(
            command, inputs, root / str(i), sig, delay, group, extra))
    return jobs


class Faults:
    """Every kind of fault of this module (:func:`kinds`), each run once, when first asked
    for: by the test of that kind, or by :func:`test_fault_count` for the kinds no test ran
    before it (so that it also holds when run alone)."""

    def __init__(self, inputs: Path, root: Path) -> None:
        self.inputs = inputs
        self.root = root
        self.outcomes: dict[str, list[Outcome]] = {}

    def __call__(self, kind: str) -> list[Outcome]:
        if kind not in self.outcomes:
            self.outcomes[kind] = run_all(kinds()[kind](self.inputs, self.root / kind))
        return self.outcomes[kind]


@pytest.fixture(scope="module")
def faults(inputs, tmp_path_factory) -> Faults:
    return Faults(inputs, tmp_path_factory.mktemp("faults"))


def problems_of(outcomes: list[Outcome]) -> str:
    return "\n".join(p for o in outcomes for p in o.problems)


@pytest.mark.parametrize("name", [c.name for c in COMMANDS])
def test_signals_never_lose_or_clobber_an_output(name, faults):
    outcomes = faults(f"signals {name}")
    assert not problems_of(outcomes), problems_of(outcomes)
    # A plan whose signals all came after the work would prove nothing.
    assert any(o.interrupted for o in outcomes), f"no signal stopped {name} at work"


# ----------------------------------------------------------------------------- streams


def make_stream(kind: str, path: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    else:  # a device node like /dev/null (major 1, minor 3), made here to be watched
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))


def stream_fault(command: Command, inputs: Path, root: Path, kind: str, sig: int,
                 delay: float, group: bool) -> Outcome:
    """One signal fault with a device or a FIFO as the target: it stays what it is, nothing
    is written beside it, and a FIFO's reader gets the reference bytes (a prefix of them when
    the run was stopped)."""
    work, logs = root / "work", root / "logs"
    work.mkdir(parents=True)
    logs.mkdir()
    target = work / command.target
    make_stream(kind, target)
    received = bytearray()
    done = threading.Event()

    def read() -> None:  # keeps the FIFO drained; EOF only counts once the run is over
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
        try:
            while True:
                ready, _, _ = select.select([fd], [], [], 0.05)
                data = os.read(fd, 1 << 16) if ready else b""
                received.extend(data)
                if not data and done.is_set():
                    break
        finally:
            os.close(fd)

    reader = threading.Thread(target=read) if kind == "fifo" else None
    if reader:
        reader.start()
    try:
        run = launch(command.args(inputs), work, logs, sig=sig, delay=delay, group=group)
    finally:
        done.set()
        if reader:
            reader.join()
    problems = []
    mode = os.lstat(target).st_mode
    if not (stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISCHR(mode)):
        problems.append(f"the {kind} was replaced")
    if kind == "fifo":
        ref = command.ref.output
        # a finished run, or one a signal killed after the handlers (the output written)
        if (run.status == command.ok or run.status == -sig != -signal.SIGKILL) \
                and bytes(received) != ref:
            problems.append("the run ended after its output, but the FIFO's reader did not get "
                            "the reference bytes")
        if ref[:len(received)] != bytes(received):
            problems.append("the FIFO's reader got bytes that are not the reference's")
    if not run.ready:
        problems.append("the command exited before installing its handlers")
    if run.status not in (command.ok, 128 + sig, -sig):
        problems.append(f"exit status {run.status}")
    if run.status in (command.ok, 128 + sig) and "Traceback" in run.stderr:
        problems.append("a traceback on stderr")
    problems += [f"left behind: {name}" for name in leftovers(command, work)
                 if name != command.partial] + \
        ([f"a partial file beside the {kind}"] if (work / command.partial).exists() else [])
    return Outcome([f"{command.name} {kind} {signal.Signals(sig).name} after {delay:.3f} s "
                    f"(exit {run.status}): {p}" for p in problems]
                   + ([run.stderr[-2000:]] if problems else []), run.status == 128 + sig)


def stream_jobs(command: Command, inputs: Path, root: Path) -> list[Callable[[], Outcome]]:
    """The signal faults of ``command`` with a FIFO, and a device node (root only), as its
    target."""
    streams = ("fifo", "device") if os.geteuid() == 0 else ("fifo",)  # mknod needs root
    return [lambda i=i, sig=sig, delay=delay, group=group: stream_fault(
                command, inputs, root / str(i), streams[i % len(streams)], sig, delay, group)
            for i, (sig, delay, group) in enumerate(plan(command, command.streams,
                                                          command.name + "-streams"))]


@pytest.mark.parametrize("name", [c.name for c in COMMANDS if c.streams])
def test_devices_and_fifos_are_written_to_never_replaced(name, faults):
    outcomes = faults(f"streams {name}")
    assert not problems_of(outcomes), problems_of(outcomes)


# ----------------------------------------------------------------------------- the cases


def explain_argv(inputs: Path, out: str) -> list[str]:
    return BY_NAME["explain"].args(inputs, out=out)


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")
def test_a_device_node_target_stays_a_device(inputs, tmp_path):
    """``explain --out ./fakenull`` used to rename a regular file over the device."""
    make_stream("device", tmp_path / "fakenull")
    done = subprocess.run(explain_argv(inputs, "./fakenull"), cwd=tmp_path, capture_output=True)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISCHR(os.lstat(tmp_path / "fakenull").st_mode)
    assert sorted(os.listdir(tmp_path)) == ["fakenull"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_keeps_the_previous_output_and_the_finished_lines(sig, inputs, tmp_path):
    """Ctrl-C used to rename the partial file over the previous complete ``e.jsonl``, and
    SIGTERM to leave only a hidden temporary file."""
    ref = BY_NAME["explain"].ref
    partial = tmp_path / "e.jsonl.partial"
    for _ in range(5):  # the run can end before the signal reaches it: run again
        (tmp_path / "e.jsonl").write_bytes(PREVIOUS)
        proc = subprocess.Popen(explain_argv(inputs, "e.jsonl"), cwd=tmp_path,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while proc.poll() is None and not (
                partial.exists() and partial.read_bytes().count(b"\n") >= 2):
            assert time.monotonic() < deadline, "no lines written"
            time.sleep(0.005)
        if proc.poll() is None:
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        if proc.returncode != 0:
            break
        assert not partial.exists()  # finished first, with a complete output
    assert proc.returncode == 128 + sig, err
    assert (tmp_path / "e.jsonl").read_bytes() == PREVIOUS
    kept = partial.read_bytes()
    assert kept.endswith(b"\n") and ref.output.startswith(kept)
    lines = kept.count(b"\n")
    assert f"{lines} finished explanations kept in {partial}" in err
    assert "Traceback" not in err
    assert sorted(os.listdir(tmp_path)) == ["e.jsonl", "e.jsonl.partial"]


def test_a_missing_output_directory_is_an_error_naming_it(inputs, tmp_path):
    done = subprocess.run(explain_argv(inputs, str(tmp_path / "nonexistent/dir/x.jsonl")),
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2
    assert f"directory {tmp_path / 'nonexistent/dir'} does not exist" in done.stderr
    assert "Traceback" not in done.stderr and os.listdir(tmp_path) == []


# ----------------------------------------------------------------------------- environment


def env_fault(command: Command, inputs: Path, root: Path, prefix: list[str],
              limit: int | None) -> Outcome:
    """One run in a hostile environment: behind ``prefix`` (a read-only directory, where it
    must fail), or with a file size limit standing for a full disk. It finishes with the
    reference output, or fails with one error message (exit 2) and keeps the previous one."""
    work, logs = root / "work", root / "logs"
    work.mkdir(parents=True)
    logs.mkdir()
    previous = place_previous(command, work)
    run = launch(prefix + command.args(inputs), work, logs,
                 env={FSIZE_ENV: str(limit)} if limit is not None else None)
    problems = []
    out = snapshot(work / command.target)
    if run.status == command.ok:
        if prefix:
            problems.append("exit 0 in a read-only directory")
        if out != command.ref.output and command.kind != "fuzz":
            problems.append("exit 0 but not the reference output")
    elif run.status != 2 or "Traceback" in run.stderr or "error: " not in run.stderr:
        problems.append(f"exit {run.status}, not one error message")
    elif command.kind != "fuzz" and out != previous:
        problems.append("the previous output was not kept")
    check_partial(command, work, problems)
    problems += [f"left behind: {n}" for n in leftovers(command, work)]
    return Outcome([f"{command.name} {'read-only' if prefix else f'full disk at {limit} bytes'}"
                    f": {p} ({run.stderr[-300:]})" for p in problems])


LIMITS = [600, 5000, 60000, 10 ** 9]


@pytest.mark.parametrize("limit", LIMITS)
def test_a_full_disk_keeps_the_previous_output(limit, faults):
    outcomes = faults(f"full disk {limit}")
    assert not problems_of(outcomes), problems_of(outcomes)


READ_ONLY = ["unshare", "-m", "sh", "-c", 'mount --bind . . && mount -o remount,bind,ro . . '
             '&& cd "$PWD" && exec "$@"', "sh"]


def read_only_possible() -> str | None:
    """Why a read-only bind mount cannot be made here, or None."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return "a read-only bind mount needs root and unshare"
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode:
        return "unshare -m is not permitted here"
    return None


def test_a_read_only_directory_keeps_the_previous_output(faults):
    why = read_only_possible()
    if why:
        pytest.skip(why)
    outcomes = faults("read-only")
    assert not problems_of(outcomes), problems_of(outcomes)


def kinds() -> dict[str, Callable[[Path, Path], list[Callable[[], Outcome]]]]:
    """Every kind of fault: its jobs, from the inputs directory and a directory of its own."""
    out: dict[str, Callable[[Path, Path], list[Callable[[], Outcome]]]] = {}
    for c in COMMANDS:
        out[f"signals {c.name}"] = lambda inputs, root, c=c: signal_jobs(c, inputs, root)
        if c.streams:
            out[f"streams {c.name}"] = lambda inputs, root, c=c: stream_jobs(c, inputs, root)
    for limit in LIMITS:
        out[f"full disk {limit}"] = lambda inputs, root, limit=limit: [
            lambda c=c: env_fault(c, inputs, root / c.name, [], limit) for c in COMMANDS]
    if read_only_possible() is None:
        out["read-only"] = lambda inputs, root: [
            lambda c=c: env_fault(c, inputs, root / c.name, READ_ONLY, None) for c in COMMANDS]
    return out


def test_fault_count(faults, record_property):
    """The number of faults this module injects, each kind run once: by its own test, or
    here (run alone, this test runs them all)."""
    outcomes = [o for kind in kinds() for o in faults(kind)]
    lost = sum(bool(o.problems) for o in outcomes)
    summary = f"fault injection: {len(outcomes)} faults, {lost} outputs lost or clobbered"
    record_property("summary", summary)
    assert len(outcomes) >= 200 and not lost, summary + "\n" + problems_of(outcomes)


def test_signals_wait_out_code_another_module_runs_from_a_string():
    """A signal in code run from a string in another module's namespace (Cython's import-time
    patch of ``collections.abc``, whose exceptions are reported as ignored) comes again later;
    in ``python -c``'s own code (the main module, as this file's WRAPPER runs) it interrupts."""
    from rfcircuits.interrupts import _in_callback

    code = compile("import sys\nframe = sys._getframe()", "<string>", "exec")
    patched: dict[str, Any] = {"__name__": "collections.abc"}
    main: dict[str, Any] = {"__name__": "__main__"}
    exec(code, patched)
    exec(code, main)
    assert _in_callback(patched["frame"])
    assert not _in_callback(main["frame"])


def test_a_signal_that_other_machinery_wraps_still_ends_the_run_as_interrupted(capsys):
    """Python 3.11 re-raises an exception from a descriptor's ``__set_name__`` (a dataclass
    field's, while a module imported by a command builds its class) as RuntimeError: the
    signal's KeyboardInterrupt inside it is still an interruption, exit 128 + signal."""
    import argparse
    import signal

    from rfcircuits.cli.engine import run

    class SignalOnSetName:
        def __set_name__(self, owner: type, name: str) -> None:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10_000):  # the handler runs between bytecodes
                pass

    def handler(args: argparse.Namespace) -> int:
        type("Built", (), {"field": SignalOnSetName()})
        return 0

    def failing(args: argparse.Namespace) -> int:
        raise RuntimeError("not a signal")

    assert run(argparse.Namespace(command="explain", handler=handler)) == 128 + signal.SIGTERM
    assert "rfcircuits explain: interrupted" in capsys.readouterr().err
    with pytest.raises(RuntimeError, match="not a signal"):
        run(argparse.Namespace(command="explain", handler=failing))


class SignalledInConstruction:
    """An object with a finalizer whose ``__init__`` a SIGTERM interrupts: the half-built
    object's ``__del__`` would fail on what was not set yet, and Python would print
    "Exception ignored" (PySAT's Cadical195 under a corpus run)."""

    def __init__(self) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100_000):  # the handler runs between bytecodes, here
            pass
        self.handle = 1

    def __del__(self) -> None:
        self.handle  # fails on a half-built object


def test_a_signal_waits_out_the_constructor_of_an_object_with_a_finalizer(capsys, monkeypatch):
    """Interrupted inside the constructor, the signal comes again once it is done, and ends
    the run as interrupted."""
    import argparse

    from rfcircuits.cli.engine import run

    def handler(args: argparse.Namespace) -> int:
        SignalledInConstruction()
        time.sleep(60)  # the deferred signal ends it (10 ms later)
        return 0

    ignored: list[Any] = []  # what Python would print as "Exception ignored"
    monkeypatch.setattr(sys, "unraisablehook", ignored.append)
    assert run(argparse.Namespace(command="corpus", handler=handler)) == 128 + signal.SIGTERM
    assert "rfcircuits corpus: interrupted" in capsys.readouterr().err
    assert not ignored


def test_a_signal_deferred_out_of_a_constructor_still_ends_a_run_that_ends_first(capsys):
    """A run that ended within the 10 ms left the timer behind, whose signal came once the
    handlers were gone: Python reported the KeyboardInterrupt as ignored in threading's
    shutdown, and the run exited 0 (seen in the fault suite). The run ends as interrupted,
    and nothing is left to come later."""
    import argparse

    from rfcircuits.cli.engine import run

    def handler(args: argparse.Namespace) -> int:
        SignalledInConstruction()
        return 0

    assert run(argparse.Namespace(command="corpus", handler=handler)) == 128 + signal.SIGTERM
    assert "rfcircuits corpus: interrupted" in capsys.readouterr().err
    assert not [t for t in threading.enumerate() if isinstance(t, threading.Timer)]


# ----------------------------------------------------------------------------- PySAT's own handler


def pysat_caught_sigint(module: Any) -> Callable[..., Any]:
    """What a call into PySAT's C code raises when SIGINT comes during it: PySAT's handler
    catches the signal (Python's never runs) and the call fails with PySAT's own error."""
    def call(*args: Any) -> Any:
        raise module.error("Caught keyboard interrupt")
    return call


def test_a_sigint_pysat_catches_while_an_oracle_is_built_ends_a_corpus_build_as_interrupted(
        monkeypatch, tmp_path, capsys):
    """The SAT oracle's vote counts are encoded by PySAT's C code, which catches SIGINT: the
    corpus build took PySAT's error for the oracle's crash, a disagreement, and exited 1
    ("corpus build FAILED", CI's unexplained exit 1 under SIGINT). It is Ctrl-C: exit 130."""
    from pysat import card

    from rfcircuits.cli.main import main
    from rfcircuits.crosscheck import corpus

    monkeypatch.setattr(corpus, "EXAMPLE_CASES",
                        {"spec-flip": corpus.EXAMPLE_CASES["spec-flip"]})
    monkeypatch.setattr(corpus, "STREAMS", ())
    monkeypatch.setattr(corpus, "TRAINED", ())
    for name in ("encode_atleast", "encode_atmost"):
        monkeypatch.setattr(card.pycard, name, pysat_caught_sigint(card.pycard))
    monkeypatch.chdir(tmp_path)
    assert main(["corpus", "build", "--out", "cor", "--no-progress"]) == 128 + signal.SIGINT
    out, err = capsys.readouterr()
    assert "FAILED" not in out and "rfcircuits corpus: interrupted" in err
    assert sorted(os.listdir(tmp_path)) == ["cor.partial"]  # no repro files, no corpus


def test_a_sigint_pysat_catches_where_no_caller_expects_it_is_not_an_oracle_crash(monkeypatch):
    """The harness turns an oracle's exception into a disagreement; PySAT's error for a SIGINT,
    raised by a call nothing wrapped, stops the run as Ctrl-C does instead."""
    import pysolvers

    from rfcircuits.crosscheck.oracles import sat
    from rfcircuits.crosscheck.differential.harness import crosscheck
    from rfcircuits.crosscheck.differential.spec_examples import (SUSAN, SUSAN_FOREST, forest,
                                                                  instance)
    from rfcircuits.interrupts import raised_by_signal

    error = pysolvers.error("Caught keyboard interrupt")
    assert raised_by_signal(error) and not raised_by_signal(pysolvers.error("other"))
    monkeypatch.setattr(sat.SatOracle, "__init__", pysat_caught_sigint(pysolvers))
    f = forest(SUSAN_FOREST)
    report = crosscheck(f, [instance(f, SUSAN)], oracles=("sat",))
    assert report.interrupted and not report.disagreements


def test_a_sigint_pysat_catches_in_the_sat_engine_keeps_the_finished_explanations(
        monkeypatch, tmp_path, capsys):
    """The SAT engine's SRs and NRs come from PySAT calls (dualize's map solver): PySAT's error
    for a SIGINT there ended ``explain`` with a traceback and exit 1. It is Ctrl-C: exit 130,
    the explanations finished before it kept in the partial file."""
    from pysat import solvers

    from rfcircuits.cli.main import main
    from rfcircuits.crosscheck.differential.fuzz import make_case
    from rfcircuits.crosscheck.differential.strategies import Limits
    from rfcircuits.forest import instance_to_json, save_forest

    forest, instances = make_case(3, 1, Limits(5, 3, 5, 3, 3))
    save_forest(forest, tmp_path / "f.json")
    lines = [json.dumps(instance_to_json(forest, x)) + "\n" for x in instances * 4]
    (tmp_path / "i.jsonl").write_text("".join(lines), encoding="utf-8")
    (tmp_path / "one.jsonl").write_text(lines[0], encoding="utf-8")

    def argv(instances: str, out: str) -> list[str]:
        return ["explain", "--forest", str(tmp_path / "f.json"), "--instances",
                str(tmp_path / instances), "--engine", "sat", "--what", "sr,nr", "-q", "--out",
                str(tmp_path / out)]

    assert main(argv("i.jsonl", "ref.jsonl")) == 0
    reference = (tmp_path / "ref.jsonl").read_bytes()
    real, calls, limit = solvers.pysolvers.minisat22_solve, [], [None]

    def solve(*args: Any) -> Any:  # past the limit, the call meets a SIGINT
        calls.append(args)
        if limit[0] is not None and len(calls) > limit[0]:
            return pysat_caught_sigint(solvers.pysolvers)()
        return real(*args)

    monkeypatch.setattr(solvers.pysolvers, "minisat22_solve", solve)
    assert main(argv("one.jsonl", "one-out.jsonl")) == 0  # the first explanation's calls
    limit[0] = len(calls)
    assert limit[0] > 0
    calls.clear()
    capsys.readouterr()
    assert main(argv("i.jsonl", "e.jsonl")) == 128 + signal.SIGINT
    err = capsys.readouterr().err
    kept = (tmp_path / "e.jsonl.partial").read_bytes()
    assert "Traceback" not in err and "rfcircuits explain: interrupted" in err
    assert kept.endswith(b"\n") and reference.startswith(kept)
    assert f"{len(kept.splitlines())} finished explanations kept" in err
    assert not (tmp_path / "e.jsonl").exists()


class FreedTwiceIfInterrupted:
    """An explicit destructor as PySAT's solvers have (``delete``: free the native object, then
    forget it) with a finalizer that calls it: a SIGTERM between the two steps left the
    object to be freed again by ``__del__`` (``crosscheck``'s exit -11 under SIGHUP)."""

    freed = 0

    def __init__(self) -> None:
        self.handle: int | None = 1

    def delete(self) -> None:
        if self.handle:
            FreedTwiceIfInterrupted.freed += 1
            if FreedTwiceIfInterrupted.freed == 1:
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(100_000):  # the handler runs between bytecodes, here
                    pass
            self.handle = None

    def __del__(self) -> None:
        self.delete()


def test_a_signal_waits_out_the_explicit_destructor_of_an_object_with_a_finalizer(capsys):
    """Interrupted inside ``delete``, the signal comes again once it is done: the object is
    freed once, and the run ends as interrupted."""
    import argparse

    from rfcircuits.cli.engine import run

    def handler(args: argparse.Namespace) -> int:
        FreedTwiceIfInterrupted().delete()
        time.sleep(60)  # the deferred signal ends it (10 ms later)
        return 0

    assert run(argparse.Namespace(command="crosscheck", handler=handler)) == 128 + signal.SIGTERM
    assert "rfcircuits crosscheck: interrupted" in capsys.readouterr().err
    assert FreedTwiceIfInterrupted.freed == 1


def sigint_disposition() -> int:
    """The address of the SIGINT handler the kernel runs (not Python's record of it)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    action = ctypes.create_string_buffer(256)  # struct sigaction; its first field, the handler
    assert libc.sigaction(signal.SIGINT, None, action) == 0
    return int.from_bytes(action.raw[:ctypes.sizeof(ctypes.c_void_p)], sys.byteorder)


def pigeonhole(holes: int) -> list[list[int]]:
    """``holes + 1`` pigeons in ``holes`` holes: unsatisfiable, and exponentially hard for
    MiniSat, so that a solver call runs until a signal stops it."""
    var = {(p, h): p * holes + h + 1 for p in range(holes + 1) for h in range(holes)}
    clauses = [[var[p, h] for h in range(holes)] for p in range(holes + 1)]
    clauses += [[-var[p, h], -var[q, h]] for h in range(holes)
                for p in range(holes + 1) for q in range(p)]
    return clauses


@pytest.mark.skipif(sys.platform != "linux", reason="reads the disposition with sigaction")
def test_the_run_s_sigint_handler_is_back_after_pysat_caught_one():
    """PySAT's C code catches a SIGINT during a call with a handler of its own and does not put
    the previous one back: a second SIGINT jumped into a call that had returned. After
    :func:`interruptible` turned the first into KeyboardInterrupt, the kernel runs Python's
    handler again."""
    from pysat.solvers import Solver

    from rfcircuits.interrupts import interruptible, signals_as_interrupts

    with signals_as_interrupts():
        pythons = sigint_disposition()
        with Solver(name="minisat22", bootstrap_with=pigeonhole(12)) as solver:
            solver.conf_budget(20_000_000)  # minutes: the signal comes first, or the test fails
            # from another process: the call holds the GIL, a thread of ours would wait
            sender = subprocess.Popen(["sh", "-c", f"sleep 0.3; kill -INT {os.getpid()}"])
            with pytest.raises(KeyboardInterrupt) as caught, interruptible():
                solver.solve_limited()
            sender.wait()
        assert "Caught keyboard interrupt" in str(caught.value.__cause__)  # PySAT caught it
        assert sigint_disposition() == pythons


def test_pysat_leaves_an_ignored_sigint_ignored(monkeypatch):
    """A run that ignores SIGINT (a background job) was interrupted by one during PySAT's
    calls, which install their handler whenever they run in the main thread; under
    :func:`interruptible` they are told otherwise while SIGINT is ignored."""
    from pysat.solvers import Solver, pysolvers

    from rfcircuits.interrupts import interruptible

    flags: list[int] = []
    real = pysolvers.minisat22_solve

    def solve(*args: Any) -> Any:
        flags.append(args[-1])  # PySAT's "called in the main thread": install the handler
        return real(*args)

    monkeypatch.setattr(pysolvers, "minisat22_solve", solve)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with Solver(name="minisat22", bootstrap_with=[[1, 2]]) as solver:
            with interruptible():
                assert solver.solve()
            signal.signal(signal.SIGINT, signal.default_int_handler)
            with interruptible():
                assert solver.solve()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert flags == [0, 1]


@pytest.mark.parametrize("inherited", ["interactive", "ignored"])
def test_a_sigint_once_the_command_is_over_ends_the_program_quietly(inherited, tmp_path):
    """A SIGINT while the interpreter exits (multiprocessing's exit function, in the fault
    suite) raised KeyboardInterrupt there and printed "Exception ignored in atexit
    callback" with a traceback. The program now ends as SIGINT's default action does; one
    that inherited SIGINT ignored ignores it."""
    program = interactive.SIGNALS + (
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n" if inherited == "ignored" else "") + """
import atexit, os, signal, time
def late():  # a Ctrl-C once the work is done, while the interpreter exits
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(100):
        time.sleep(0.001)
atexit.register(late)
from rfcircuits.cli.main import entry
entry()
"""
    done = subprocess.run([sys.executable, "-c", program, "--version"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.stderr == ""
    assert done.returncode == (0 if inherited == "ignored" else -signal.SIGINT)
