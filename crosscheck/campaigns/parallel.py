"""Campaign backends on this machine, and the driver of every backend.

:class:`LocalBackend` (``--jobs J``) runs tasks on ``J`` worker processes forked from this
one, so they share what it built before (compiled circuits, solvers); ``J = 1`` runs them in
this process. :func:`run_tasks` keeps a backend busy — this one or a Dask cluster's
(:mod:`rfcircuits.crosscheck.campaigns.dask_backend`) — and yields results as they finish; the
interface both implement is :mod:`rfcircuits.crosscheck.campaigns._backend_abc`.

Ctrl-C (and SIGTERM, SIGHUP: :mod:`rfcircuits.interrupts`) is the parent's to handle: workers ignore
SIGINT and die of SIGTERM and SIGHUP as plain processes do, and the parent kills them when it closes
the backend. Workers run in a process group of their own, so that a signal to the command's group (a
closed terminal, ``kill -TERM -PGID``) reaches the parent alone. On Linux, workers die with the
parent, also when it is killed (SIGKILL), instead of waiting for tasks forever. A worker that dies
in the middle of a task (killed, out of memory) is replaced and its task runs again, up to
:data:`~rfcircuits.crosscheck.campaigns._backend_abc.MAX_TRIES` times. A worker that sees
KeyboardInterrupt anyway (a solver library's own SIGINT handler, as PySAT installs during a call)
passes it on as a result, and the parent raises it, instead of the worker dying and the parent
waiting for its result forever."""

from __future__ import annotations

import collections
import contextlib
import ctypes
import itertools
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from rfcircuits.interrupts import SIGNALS
from rfcircuits.crosscheck.campaigns._backend_abc import MAX_TRIES, Backend, WorkerLost

T = TypeVar("T")
R = TypeVar("R")


def can_fork() -> bool:
    """Whether workers can be forked: they then share the parent's built state (compiled
    circuits, solvers) instead of rebuilding it."""
    return sys.platform != "win32" and "fork" in multiprocessing.get_all_start_methods()


#: prctl(2) option: the signal a process gets when its parent dies (Linux).
_PR_SET_PDEATHSIG = 1


def _leave_signals(parent: int, creator: int, mask: Iterable[int]) -> None:
    """Forked workers inherit the parent's handlers, which would turn a SIGTERM into a
    KeyboardInterrupt with a traceback; and its process group (module docstring).

    The death signal comes when the *thread* that forked the worker ends, so only a worker
    forked by ``creator`` (a thread that lives as long as the parent's use of it) asks for
    it; a worker forked by a short-lived thread would die with that thread."""
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN if s == signal.SIGINT else signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if hasattr(os, "setpgid"):
        os.setpgid(0, 0)
    if sys.platform.startswith("linux") and threading.get_ident() == creator:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before prctl
        os._exit(1)


class _Worker:
    """A worker process, the parent's end of its pipe, and the task it runs (None: idle)."""

    def __init__(self, process: multiprocessing.process.BaseProcess,
                 conn: multiprocessing.connection.Connection) -> None:
        self.process = process
        self.conn = conn
        self.task: tuple[int, Callable[..., Any], tuple[Any, ...]] | None = None


class LocalBackend(Backend):
    """Tasks on ``jobs`` worker processes forked from this one (``jobs == 1``: run in this
    process, one per :meth:`wait`). The workers fork when the backend is made, and again
    when one must be replaced, so they share what this process built before."""

    def __init__(self, jobs: int = 1) -> None:
        self.jobs = jobs
        self.name = f"local:{jobs}"
        self._queue: collections.deque[tuple[int, Callable[..., Any], tuple[Any, ...]]] = \
            collections.deque()
        self._tries: dict[int, int] = {}
        self._workers: list[_Worker] = []
        self._ctx = multiprocessing.get_context("fork" if can_fork() else "spawn")
        self._closed = False
        if jobs > 1:
            for _ in range(jobs):
                self._start()

    def _start(self) -> None:
        ours, theirs = self._ctx.Pipe()
        # Forked with the signals blocked: a handler run inside fork's hooks (logging
        # registers some) would be swallowed there; the worker sets its own handlers.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
        try:
            process = self._ctx.Process(
                target=_serve, args=(theirs, os.getpid(), threading.get_ident(), blocked),
                daemon=True)
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        theirs.close()
        self._workers.append(_Worker(process, ours))

    def workers(self) -> int:
        if self.jobs == 1:
            return 1
        return sum(w.process.is_alive() for w in self._workers)

    def submit(self, key: int, fn: Callable[..., Any], *args: Any) -> None:
        self._queue.append((key, fn, args))
        if self.jobs > 1:
            self._dispatch()

    def _dispatch(self) -> None:
        """Replace dead idle workers while tasks wait, and hand tasks to idle workers."""
        for w in [w for w in self._workers if w.task is None and not w.process.is_alive()]:
            self._drop(w)
        while self._queue and len(self._workers) < self.jobs:
            self._start()
        for w in self._workers:
            if not self._queue:
                break
            if w.task is None:
                w.task = self._queue.popleft()
                try:
                    w.conn.send(w.task)
                except OSError:  # it died idle: the task goes back, to the next worker
                    self._lost(w)
                    return self._dispatch()
        return None

    def wait(self, timeout: float) -> list[tuple[int, Any]]:
        if self.jobs == 1:
            if not self._queue:
                return []
            key, fn, args = self._queue.popleft()
            return [(key, fn(*args))]
        self._dispatch()
        busy = [w for w in self._workers if w.task is not None]
        if not busy:
            return []
        ready = set(multiprocessing.connection.wait(
            [w.conn for w in busy] + [w.process.sentinel for w in busy], timeout))
        results = []
        for w in busy:
            if w.conn not in ready and w.process.sentinel not in ready:
                continue
            try:
                if not w.conn.poll():
                    raise EOFError  # dead without a word
                key, status, value = w.conn.recv()
            except (EOFError, OSError):
                self._lost(w)
                continue
            w.task = None
            if status == "interrupted":
                raise KeyboardInterrupt
            if status == "error":
                raise value
            results.append((key, value))
        self._dispatch()
        return results

    def _lost(self, w: _Worker) -> None:
        """``w`` died: its task goes back to the front of the queue, or fails the run after
        its :data:`MAX_TRIES`-th worker."""
        task = w.task
        w.process.join(timeout=1)
        code = w.process.exitcode
        self._drop(w)
        if task is None:
            return
        tries = self._tries[task[0]] = self._tries.get(task[0], 0) + 1
        if tries >= MAX_TRIES:
            raise WorkerLost(f"task {task[0]} lost its worker {tries} times (last exit "
                             f"status {code})")
        self._queue.appendleft(task)

    def _drop(self, w: _Worker) -> None:
        self._workers.remove(w)
        w.conn.close()

    def cancel(self) -> None:
        self._queue.clear()
        for w in [w for w in self._workers if w.task is not None]:
            w.process.kill()  # replaced when tasks come again
            w.process.join()
            self._drop(w)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.clear()
        for w in self._workers:
            w.process.kill()
        for w in list(self._workers):
            w.process.join()
            self._drop(w)


def _serve(conn: multiprocessing.connection.Connection, parent: int, creator: int,
           mask: Iterable[int]) -> None:
    """A worker of :class:`LocalBackend`: tasks from the pipe, one at a time, until it
    closes. A task's exception goes back to the parent (as text when it does not pickle)."""
    _leave_signals(parent, creator, mask)
    while True:
        try:
            key, fn, args = conn.recv()
        except EOFError:
            return
        try:
            reply: tuple[int, str, Any] = (key, "ok", fn(*args))
        except KeyboardInterrupt:
            reply = (key, "interrupted", None)
        except Exception as exc:  # noqa: BLE001 - the parent raises it
            exc.add_note(f"(in worker process {os.getpid()})\n"
                         + "".join(traceback.format_tb(exc.__traceback__)))
            reply = (key, "error", exc)
        try:
            conn.send(reply)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            what = "error" if reply[1] == "error" else "result"
            conn.send((key, "error", RuntimeError(
                f"task {key}: its {what} does not pickle ({exc}): {reply[2]!r:.500}")))


def open_backend(jobs: int = 1, dask: str | None = None) -> Backend:
    """The backend of ``--jobs`` or, when given, ``--dask`` (an address, or ``local:N``)."""
    if dask is None:
        return LocalBackend(jobs)
    from rfcircuits.crosscheck.campaigns.dask_backend import DaskBackend

    return DaskBackend(dask)


def run_tasks(backend: Backend, fn: Callable[..., Any],
              tasks: Iterable[tuple[int, tuple[Any, ...]]],
              more: Callable[[], bool] | None = None,
              short: bool = False) -> Iterator[tuple[int, Any]]:
    """``(key, fn(*args))`` for each ``(key, args)`` of ``tasks``, as they finish. Tasks are
    drawn lazily, the backend's ``queued`` per worker kept submitted, while ``more()`` holds (a
    time budget: the tasks already submitted still finish); ``short`` tasks go the backend's
    ``batch`` at a time. Leaving early — an error, Ctrl-C, the caller closing the generator —
    cancels the tasks not finished."""
    source: Iterator[tuple[int, tuple[Any, ...]]] | None = iter(tasks)
    size = backend.batch if short else 1
    pending = 0
    try:
        while True:
            room = backend.queued * max(1, backend.workers()) - pending
            while room > 0 and source is not None and (more is None or more()):
                chunk = list(itertools.islice(source, size))
                if len(chunk) < size:
                    source = None
                if not chunk:
                    break
                if size == 1:
                    backend.submit(chunk[0][0], fn, *chunk[0][1])
                else:
                    backend.submit(chunk[0][0], _run_chunk, fn, chunk)
                pending += 1
                room -= 1
            if more is not None and not more():
                source = None
            if not pending:
                return
            for key, result in backend.wait(1.0):
                pending -= 1
                if size == 1:
                    yield key, result
                else:
                    yield from result
    finally:
        if pending:
            backend.cancel()


def _run_chunk(fn: Callable[..., Any], chunk: list[tuple[int, tuple[Any, ...]]]
               ) -> list[tuple[int, Any]]:
    """Short tasks run as one (:attr:`Backend.batch`)."""
    return [(key, fn(*args)) for key, args in chunk]


def run_ordered(backend: Backend, fn: Callable[[T], R], items: Sequence[T],
                progress: Callable[[int, int], None] | None = None) -> list[R]:
    """``[fn(item) for item in items]`` on the backend."""
    out: dict[int, R] = {}
    for i, result in run_tasks(backend, fn, ((i, (item,)) for i, item in enumerate(items))):
        out[i] = result
        if progress:
            progress(len(out), len(items))
    return [out[i] for i in range(len(items))]
