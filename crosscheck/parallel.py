"""Process pools for ``--jobs`` (corpus build and check, crosscheck): a pool that dies with
its block, and a map that reports each result as it completes.

Ctrl-C (and SIGTERM, SIGHUP: :mod:`rfcircuits.interrupts`) is the parent's to handle: workers
ignore SIGINT and die of SIGTERM and SIGHUP as plain processes do, and the parent terminates
them when it leaves the pool's block. Workers run in a process group of their own, so that a
signal to the command's group (a closed terminal, ``kill -TERM -PGID``) reaches the parent
alone: a worker it killed while waiting for a task would take the pool's task lock with it,
and the parent's shutdown would wait for that lock forever. On Linux, workers die with the
parent, also when it is killed (SIGKILL), instead of waiting for tasks forever (a
replacement the pool forks for a dead worker ends when its task queue closes). A worker that
sees KeyboardInterrupt anyway (a solver library's own SIGINT handler, as PySAT installs during
a call) passes it on as a result, and the parent raises it, instead of the worker dying and
the parent waiting for its result forever."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from multiprocessing.pool import Pool
from typing import TypeVar

from rfcircuits.interrupts import SIGNALS

T = TypeVar("T")
R = TypeVar("R")


def can_fork() -> bool:
    """Whether workers can be forked: they then share the parent's built state (compiled
    circuits, solvers) instead of rebuilding it."""
    return sys.platform != "win32" and "fork" in multiprocessing.get_all_start_methods()


@contextlib.contextmanager
def pool(jobs: int) -> Iterator[Pool | None]:
    """A process pool for ``jobs > 1`` (None: run in this process). Leaving the block, also
    by an error or Ctrl-C, terminates the workers at once."""
    if jobs <= 1:
        yield None
        return
    ctx = multiprocessing.get_context("fork" if can_fork() else "spawn")
    # Workers are made with the signals blocked: a handler run inside fork's hooks (logging
    # registers some) would be swallowed there ("Exception ignored"), in the parent and in a
    # worker that has not yet set its own handlers.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        workers = ctx.Pool(jobs, initializer=_leave_signals,
                           initargs=(os.getpid(), threading.get_ident(), blocked))
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        raise
    with workers:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # a pending signal ends the pool
        yield workers


#: prctl(2) option: the signal a process gets when its parent dies (Linux).
_PR_SET_PDEATHSIG = 1


def _leave_signals(parent: int, creator: int, mask: Iterable[int]) -> None:
    """Forked workers inherit the parent's handlers, which would turn the SIGTERM that
    ``Pool.terminate`` sends into a KeyboardInterrupt with a traceback; and its process group
    (module docstring).

    The death signal comes when the *thread* that forked the worker ends, so only workers
    that the pool's maker forked ask for it. The pool's own thread forks a replacement when
    a worker dies (a signal to the command's group can reach one before it leaves the
    group), and ends at shutdown: its workers, killed then, would take the task lock with
    them while the shutdown waits for it. They end when their task queue closes instead."""
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


class _Interrupted:
    """A worker's result standing for the KeyboardInterrupt it met."""


def _indexed(fn: Callable[[T], R], job: tuple[int, T]) -> tuple[int, R | _Interrupted]:
    try:
        return job[0], fn(job[1])
    except KeyboardInterrupt:
        return job[0], _Interrupted()


def completed(workers: Pool | None, fn: Callable[[T], R], items: Sequence[T],
              cost: Callable[[T], float] | None = None) -> Iterator[tuple[int, R]]:
    """``(i, fn(items[i]))`` for every item, as each finishes: in order in this process, in
    completion order on the pool (costly items started first)."""
    if workers is None:
        for i, item in enumerate(items):
            yield i, fn(item)
        return
    order = sorted(range(len(items)), key=lambda i: -cost(items[i])) if cost else \
        range(len(items))
    for i, result in workers.imap_unordered(functools.partial(_indexed, fn),
                                            [(i, items[i]) for i in order]):
        if isinstance(result, _Interrupted):
            raise KeyboardInterrupt
        yield i, result


def pmap(workers: Pool | None, fn: Callable[[T], R], items: Sequence[T],
         progress: Callable[[int, int], None] | None = None,
         cost: Callable[[T], float] | None = None) -> list[R]:
    """``[fn(x) for x in items]``, on the pool when there is one (costly items first)."""
    out: list[R | None] = [None] * len(items)
    for done, (i, result) in enumerate(completed(workers, fn, items, cost), start=1):
        out[i] = result
        if progress:
            progress(done, len(items))
    return out  # type: ignore[return-value]
