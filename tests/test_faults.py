"""Fault injection: the real command line, stopped by signals at random moments and run
against a full disk, a read-only directory, devices and FIFOs.

Each fault runs a command in its own process group and directory, where a previous complete
output waits at the target (distinct bytes), and then checks the output rules: the previous
output is intact unless the run finished, in which case the target equals an uninterrupted
reference run byte for byte; a partial file holds whole reference lines (a partial corpus
build, valid JSON cases) and ``--resume`` completes it to the reference bytes; no temporary
file is left, not even after SIGKILL; devices and FIFOs stay what they are.

A signal can land before the command has installed its handlers (during start-up) or after
it has restored them (the work done, the interpreter exiting): the process then dies of the
signal (status ``-signal``), which is accepted only when nothing was written or the target is
already the complete reference output.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

#: Runs the CLI in a fresh interpreter, after the patches its first argument names: ``mini``
#: shrinks the corpus to three cases (as tests/test_corpus.py's ``mini`` fixture), ``wrong``
#: also plants a fault in the native engine so that fuzz has failures to save.
WRAPPER = """
import dataclasses, sys
mode = sys.argv.pop(1)
if mode in ("mini", "wrong"):
    from rfcircuits.crosscheck import corpus
    from rfcircuits.crosscheck.strategies import Limits
    corpus.EXAMPLE_CASES = {"spec-flip": corpus.EXAMPLE_CASES["spec-flip"]}
    corpus.STREAMS = (corpus.Stream("tie", "tie", 2, Limits(3, 3, 3, 2, 2), 601),)
    corpus.TRAINED = ()
if mode == "wrong":
    from rfcircuits.explain import Explainer
    original = Explainer.explain_states
    def wrong(self, x, what=None, *args, **kwargs):
        e = original(self, x, what) if what is not None else original(self, x)
        return dataclasses.replace(e, robustness=(e.robustness or 0) + 1)
    Explainer.explain_states = wrong
from rfcircuits.cli.main import main
sys.exit(main(sys.argv[1:]))
"""

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL)
PAGE = os.sysconf("SC_PAGE_SIZE")
PREVIOUS = b'{"previous": "the complete output of an earlier run"}\n'
FAULTS = {"count": 0, "lost": 0}
_count_lock = threading.Lock()


def counted(n: int = 1) -> None:
    with _count_lock:
        FAULTS["count"] += n


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
    seconds: float
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
    """The bytes of a file, or of every file under a directory (None: nothing there)."""
    if path.is_dir():
        return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
                if p.is_file()}
    return path.read_bytes() if path.exists() else None


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """Small random forests (never the datasets): one for explain, one every oracle checks
    quickly for crosscheck, one for compile."""
    from rfcircuits.crosscheck.fuzz import make_case
    from rfcircuits.crosscheck.strategies import GENERAL, Limits, random_instance
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
    start = time.monotonic()
    done = subprocess.run(command.args(inputs), cwd=where, capture_output=True, timeout=120)
    seconds = time.monotonic() - start
    assert done.returncode == command.ok, done.stderr.decode()
    output = snapshot(where / command.target)
    assert output, command.name
    if command.kind == "fuzz":  # every failure file of the run, and the same ones again
        again = where / "again"
        again.mkdir()
        subprocess.run(command.args(inputs), cwd=again, capture_output=True, timeout=120)
        shared = set(output) & set(snapshot(again / command.target))
        assert shared and all(output[n] == snapshot(again / command.target)[n] for n in shared)
    return Reference(seconds, output, done.stdout)


# ----------------------------------------------------------------------------- running a fault


@dataclass
class Run:
    status: int
    stdout: bytes
    stderr: str
    leftovers: list[str] = field(default_factory=list)


def launch(argv: list[str], cwd: Path, logs: Path, preexec: Callable[[], None] | None = None,
           sig: int | None = None, delay: float = 0.0, group: bool = False,
           timeout: float = 60.0) -> Run:
    """Run ``argv`` in its own session; after ``delay`` seconds send ``sig`` (to the process
    or to its whole group); wait for it and for every process it left (orphaned workers)."""
    out, err = logs / "stdout", logs / "stderr"
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=o, stderr=e, stdin=subprocess.DEVNULL,
                                start_new_session=True, preexec_fn=preexec)
    try:
        if sig is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(delay)
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    (os.killpg if group else os.kill)(proc.pid, sig)
        status = proc.wait(timeout)
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
    return Run(status, out.read_bytes(), err.read_text("utf-8", "replace"))


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
    signal outside the command's handlers (start-up, exit) may also kill it (-signal, or exit
    1 for the KeyboardInterrupt of a SIGINT during the imports), but only when the outputs
    are ``settled``: the previous output or the complete reference one, no partial output."""
    if run.status in (command.ok, 128 + sig, -sig):
        return run.status != -sig or sig == signal.SIGKILL or settled
    # the interpreter's own start-up (site import) ends with a fatal error for SIGINT, and a
    # class body being defined at import wraps it in a RuntimeError from __set_name__
    return sig == signal.SIGINT and run.status == 1 and settled and \
        (run.stderr.rstrip().endswith("KeyboardInterrupt") or
         "KeyboardInterrupt" in run.stderr and ("Fatal Python error" in run.stderr or
                                               "Error calling __set_name__" in run.stderr))


def fault(command: Command, inputs: Path, root: Path, sig: int, delay: float, group: bool,
          extra: tuple[str, ...] = ()) -> list[str]:
    """One signal fault on a regular target (and the resume after it); its problems."""
    work, logs = root / "work", root / "logs"
    work.mkdir(parents=True)
    logs.mkdir()
    previous = place_previous(command, work)
    run = launch(command.args(inputs, *extra), work, logs, sig=sig, delay=delay, group=group)
    counted()
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
    if not expected_status(command, sig, run, settled):
        problems.append(f"exit status {run.status}")
    # a SIGINT in the imports: KeyboardInterrupt from start-up, or one the import of a Cython
    # module swallows ("Exception ignored in"), after which the run goes on and finishes
    startup = sig == signal.SIGINT and (run.stderr.rstrip().endswith("KeyboardInterrupt") or
                                        "Exception ignored in" in run.stderr and finished)
    if run.status in (0, 128 + sig, command.ok) and "Traceback" in run.stderr and not startup:
        problems.append("a traceback on stderr")
    if run.status == 128 + sig and command.resumable and (work / command.partial).exists() \
            and command.partial not in run.stderr:
        problems.append("the message does not name the partial output")
    has_partial = check_partial(command, work, problems)
    if run.status == command.ok and has_partial:
        problems.append("a partial output after a finished run")
    problems += [f"left behind: {name}" for name in leftovers(command, work)]
    if has_partial and command.resumable and not problems:
        again = launch(command.args(inputs, "--resume", *extra), work, logs)
        if again.status != command.ok or snapshot(work / command.target) != command.ref.output:
            problems.append(f"--resume: exit {again.status}, target not the reference "
                            f"({again.stderr[-300:]})")
        if command.name == "crosscheck" and again.stdout != command.ref.stdout:
            problems.append("--resume: not the reference table on stdout")
        if (work / command.partial).exists():
            problems.append("--resume left the partial output")
        problems += [f"left behind after --resume: {n}" for n in leftovers(command, work)]
    if problems:
        FAULTS["lost"] += 1
        return [f"{command.name} {signal.Signals(sig).name} {'group' if group else 'pid'} "
                f"after {delay:.3f} s {' '.join(extra)} (exit {run.status}): {p}"
                for p in problems] + [run.stderr[-500:]]
    return []


def plan(command: Command, n: int, seed: str) -> list[tuple[int, float, bool]]:
    """``n`` faults: signals in turn, delays uniform over the reference duration (so that some
    land before the work, some during and some after it), to the process or its group."""
    rng = random.Random(seed)
    span = command.ref.seconds * 1.1
    return [(SIGNALS[i % len(SIGNALS)], rng.uniform(0, span), rng.random() < 0.5)
            for i in range(n)]


def run_all(jobs: list[Callable[[], list[str]]]) -> list[str]:
    with ThreadPoolExecutor(4) as pool:
        return [p for problems in pool.map(lambda job: job(), jobs) for p in problems]


@pytest.mark.parametrize("name", [c.name for c in COMMANDS])
def test_signals_never_lose_or_clobber_an_output(name, inputs, tmp_path):
    command = BY_NAME[name]
    jobs = []
    for i, (sig, delay, group) in enumerate(plan(command, command.faults, name)):
        extra = ("--jobs", str(1 + i % 2)) if name in ("fuzz", "corpus") else ()
        jobs.append(lambda i=i, sig=sig, delay=delay, group=group, extra=extra: fault(
            command, inputs, tmp_path / str(i), sig, delay, group, extra))
    problems = run_all(jobs)
    assert not problems, "\n".join(problems)


# ----------------------------------------------------------------------------- streams


def make_stream(kind: str, path: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    else:  # a device node like /dev/null (major 1, minor 3), made here to be watched
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))


def stream_fault(command: Command, inputs: Path, root: Path, kind: str, sig: int,
                 delay: float, group: bool) -> list[str]:
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
    counted()
    problems = []
    mode = os.lstat(target).st_mode
    if not (stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISCHR(mode)):
        problems.append(f"the {kind} was replaced")
    if kind == "fifo":
        ref = command.ref.output
        if run.status == command.ok and bytes(received) != ref:
            problems.append("exit 0 but the FIFO's reader did not get the reference bytes")
        if ref[:len(received)] != bytes(received):
            problems.append("the FIFO's reader got bytes that are not the reference's")
    if run.status not in (command.ok, 128 + sig, -sig, 1):
        problems.append(f"exit status {run.status}")
    startup = sig == signal.SIGINT and "Exception ignored in" in run.stderr  # see fault()
    if run.status in (command.ok, 128 + sig) and "Traceback" in run.stderr and not startup:
        problems.append("a traceback on stderr")
    problems += [f"left behind: {name}" for name in leftovers(command, work)
                 if name != command.partial] + \
        ([f"a partial file beside the {kind}"] if (work / command.partial).exists() else [])
    if problems:
        FAULTS["lost"] += 1
    return [f"{command.name} {kind} {signal.Signals(sig).name} after {delay:.3f} s "
            f"(exit {run.status}): {p}" for p in problems]


@pytest.mark.parametrize("name", [c.name for c in COMMANDS if c.streams])
def test_devices_and_fifos_are_written_to_never_replaced(name, inputs, tmp_path):
    command = BY_NAME[name]
    kinds = ("fifo", "device") if os.geteuid() == 0 else ("fifo",)  # mknod needs root
    jobs = [lambda i=i, sig=sig, delay=delay, group=group: stream_fault(
                command, inputs, tmp_path / str(i), kinds[i % len(kinds)], sig, delay, group)
            for i, (sig, delay, group) in enumerate(plan(command, command.streams,
                                                          name + "-streams"))]
    problems = run_all(jobs)
    assert not problems, "\n".join(problems)


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


def full_disk(limit: int) -> Callable[[], None]:
    """A file size limit standing for a full disk: writes past it fail (EFBIG)."""
    def pre() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return pre


def env_fault(command: Command, inputs: Path, root: Path, prefix: list[str],
              preexec: Callable[[], None] | None) -> tuple[Run, list[str]]:
    work, logs = root / "work", root / "logs"
    work.mkdir(parents=True)
    logs.mkdir()
    previous = place_previous(command, work)
    run = launch(prefix + command.args(inputs), work, logs, preexec=preexec)
    counted()
    problems = []
    out = snapshot(work / command.target)
    if run.status == command.ok:
        if out != command.ref.output and command.kind != "fuzz":
            problems.append("exit 0 but not the reference output")
    elif run.status != 2 or "Traceback" in run.stderr or "error: " not in run.stderr:
        problems.append(f"exit {run.status}, not one error message")
    elif command.kind != "fuzz" and out != previous:
        problems.append("the previous output was not kept")
    check_partial(command, work, problems)
    problems += [f"left behind: {n}" for n in leftovers(command, work)]
    return run, [f"{command.name} {prefix or 'full disk'}: {p} ({run.stderr[-300:]})"
                 for p in problems]


@pytest.mark.parametrize("limit", [600, 5000, 60000, 10 ** 9])
def test_a_full_disk_keeps_the_previous_output(limit, inputs, tmp_path):
    problems = run_all([lambda c=c: env_fault(c, inputs, tmp_path / c.name, [],
                                              full_disk(limit))[1] for c in COMMANDS])
    assert not problems, "\n".join(problems)


READ_ONLY = ["unshare", "-m", "sh", "-c", 'mount --bind . . && mount -o remount,bind,ro . . '
             '&& cd "$PWD" && exec "$@"', "sh"]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="a read-only bind mount needs root and unshare")
def test_a_read_only_directory_keeps_the_previous_output(inputs, tmp_path):
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode:
        pytest.skip("unshare -m is not permitted here")
    commands = COMMANDS
    results = [env_fault(c, inputs, tmp_path / c.name, READ_ONLY, None) for c in commands]
    problems = [p for _, ps in results for p in ps]
    problems += [f"{c.name}: exit {run.status}" for c, (run, _) in zip(commands, results)
                 if run.status != 2]
    assert not problems, "\n".join(problems)


def test_fault_count(request, record_property):
    """Runs last: the number of faults injected by this module."""
    n = FAULTS["count"]
    summary = f"fault injection: {n} faults, {FAULTS['lost']} outputs lost or clobbered"
    record_property("summary", summary)
    assert n >= 200 and not FAULTS["lost"], summary


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


def test_a_signal_waits_out_the_constructor_of_an_object_with_a_finalizer(capsys, monkeypatch):
    """Interrupted inside ``__init__``, a half-built object's ``__del__`` fails on what was not
    set yet and Python prints "Exception ignored" (PySAT's Cadical195 under a corpus run): the
    signal comes again once the constructor is done, and ends the run as interrupted."""
    import argparse
    import signal
    import time

    from rfcircuits.cli.engine import run

    class Solver:
        def __init__(self) -> None:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(100_000):  # the handler runs between bytecodes, here
                pass
            self.handle = 1

        def __del__(self) -> None:
            self.handle  # fails on a half-built object

    def handler(args: argparse.Namespace) -> int:
        Solver()
        time.sleep(2.0)  # the deferred signal arrives here
        return 0

    ignored: list[Any] = []  # what Python would print as "Exception ignored"
    monkeypatch.setattr(sys, "unraisablehook", ignored.append)
    assert run(argparse.Namespace(command="corpus", handler=handler)) == 128 + signal.SIGTERM
    assert "rfcircuits corpus: interrupted" in capsys.readouterr().err
    assert not ignored
