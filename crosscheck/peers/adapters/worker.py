"""Running a peer out of process, with deadlines: the machinery the PyXAI, RFxpl and
command-line adapters share.

A peer is run in a subprocess of its own *process group* (its own session), so that ending it
on an overrun also ends whatever it started (external solvers, shells): the group is killed
with SIGKILL, never a broad name.

- :func:`run_command` runs one command to its end or to a deadline (the command-line adapter);
- :class:`Worker` keeps a Python worker module alive and asks it questions one at a time,
  each with a deadline (``python -m MODULE WORKDIR``; the worker reads one JSON request per
  line on stdin and answers with a line :data:`MARK` + JSON on stdout, :func:`reply`, since the
  peer may print to stdout too). Its stderr goes to ``WORKDIR/worker.err``, whose last line
  (:func:`last_line`) says why a worker died. A peer whose dependencies must not decide this
  environment's (PyXAI, solbert) may run in an environment of its own, with rfcircuits at this
  version installed there too (:func:`other_python`, :func:`installed_version`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import IO, Any

from rfcircuits import __version__
from rfcircuits.crosscheck.peers.adapters.base import PeerUnavailable

#: Prefix of a worker's protocol lines.
MARK = "@@rfcircuits "
#: Seconds another environment's Python may take to report its versions.
VERSION_SECONDS = 300.0


def other_python(python: str | None, env: str) -> str | None:
    """The Python of the environment a peer's worker runs in, when not this one: ``python``
    (an adapter's option), else the environment variable ``env``'s; None for this
    interpreter."""
    chosen = python or os.environ.get(env)
    return chosen if chosen and chosen != sys.executable else None


def installed_version(package: str, peer: str, other: str | None) -> str | None:
    """The version of the distribution ``package`` (the peer ``peer``) the worker would run
    with: in the environment of the Python ``other``, or this one (None); None when it is not
    installed there. Nothing imports it here. PeerUnavailable when another environment has it
    but not rfcircuits at this version (the worker runs rfcircuits' module)."""
    if other is not None:
        found, ours = _versions(other, package)
        if found is not None and ours != __version__:
            raise PeerUnavailable(
                f"the {peer} environment of {other} has rfcircuits {ours or 'not installed'}, "
                f"this one {__version__}: install the same rfcircuits there (its worker runs "
                "there)")
        return found
    if importlib.util.find_spec(package) is None:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


def required_version(package: str, peer: str, python: str | None, env: str,
                     install: str) -> str:
    """:func:`installed_version` of the peer's worker environment (``python``, else ``env``'s
    Python, else this one); PeerUnavailable saying how to ``install`` it when it is missing."""
    other = other_python(python, env)
    found = installed_version(package, peer, other)
    if found is None:
        where = f" in the environment of {other}" if other else ""
        raise PeerUnavailable(f"{peer} is not installed{where} (an optional peer): {install}; "
                              f"or name the Python of an environment that has it in {env}")
    return found


@functools.cache
def _versions(python: str, package: str) -> tuple[str | None, str | None]:
    """The versions of ``package`` and rfcircuits in the environment of ``python`` (None: not
    installed there, or ``python`` does not run), as the worker would find them (run from
    a directory of no package)."""
    code = ("import importlib.metadata as m, json, sys\n"
            "try:\n"
            "    found = m.version(sys.argv[1])\n"
            "except m.PackageNotFoundError:\n"
            "    found = None\n"
            "try:\n"
            "    import rfcircuits\n"
            "    ours = rfcircuits.__version__\n"
            "except ImportError:\n"
            "    ours = None\n"
            "print(json.dumps([found, ours]))")
    try:
        done = subprocess.run([python, "-c", code, package], capture_output=True, text=True,
                              timeout=VERSION_SECONDS, cwd=tempfile.gettempdir())
        found, ours = json.loads(done.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None, None
    return found, ours


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """End ``proc`` and everything it started (its process group), and reap it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def run_command(argv: Sequence[str], seconds: float, stdout: IO[Any] | int,
                stderr: IO[Any] | int) -> int | None:
    """Run ``argv`` (no shell) in its own process group with no standard input; its exit code
    (negative: the signal that ended it), or None when it overran ``seconds`` and its group was
    killed. OSError when it cannot be started (no such program, not executable)."""
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                            start_new_session=True)
    try:
        return proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None
    finally:
        kill_group(proc)  # on an overrun, or when we are interrupted while waiting


def last_line(path: str) -> str:
    """The last non-blank line of a text file (a process's stderr), or ``no message``."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = [ln for ln in handle.read().splitlines() if ln.strip()]
    except OSError:
        lines = []
    return lines[-1].strip() if lines else "no message"


def reply(answer: dict[str, Any]) -> None:
    """Worker side: send one answer (a protocol line)."""
    print(MARK + json.dumps(answer), flush=True)


class Worker:
    """``python -m module workdir`` in its own process group, asked with deadlines. By default
    ``python`` is this interpreter, and the package this module belongs to is put on its
    PYTHONPATH, so an uninstalled checkout works too; another environment's interpreter (a
    peer that pins its own dependencies, installed apart) runs with its own packages only,
    rfcircuits among them."""

    def __init__(self, module: str, workdir: str, python: str | None = None) -> None:
        env = dict(os.environ)
        if python is None:
            root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self.workdir = workdir
        self.stderr = open(os.path.join(workdir, "worker.err"), "ab")
        self.proc = subprocess.Popen(
            [python or sys.executable, "-m", module, workdir], cwd=workdir, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
            start_new_session=True)
        self.buffer = b""
        self.selector = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        self.selector.register(self.proc.stdout, selectors.EVENT_READ)

    @property
    def dead(self) -> bool:
        return self.proc.poll() is not None

    def error(self) -> str:
        """The last line the worker wrote to stderr (why it died)."""
        return last_line(os.path.join(self.workdir, "worker.err"))

    def ask(self, request: dict[str, Any] | None, seconds: float) -> dict[str, Any] | None:
        """Send a request (None: just wait for the first answer, e.g. a ready line); the
        answer, or None when the worker overruns ``seconds`` or dies."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if request is not None:
            try:
                self.proc.stdin.write((json.dumps(request) + "\n").encode())
                self.proc.stdin.flush()
            except BrokenPipeError:
                return None
        deadline = time.monotonic() + seconds
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                text = line.decode(errors="replace")
                if text.startswith(MARK):
                    return json.loads(text[len(MARK):])
            left = deadline - time.monotonic()
            if left <= 0 or not self.selector.select(left):
                return None
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:  # its stdout closed: it is exiting, so let `dead` see it
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(max(deadline - time.monotonic(), 0.0))
                return None
            self.buffer += chunk

    def stop(self) -> None:
        """End the worker and everything it started."""
        kill_group(self.proc)
        self.selector.close()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        self.stderr.close()
