"""The interface of campaign backends: where the tasks of a long job (fuzz cases, mutants,
corpus cases, a forest's instances) run.

Two backends implement it and must agree on every result: local processes
(:class:`rfcircuits.crosscheck.campaigns.parallel.LocalBackend`, ``--jobs J``) and a Dask
distributed cluster (:class:`rfcircuits.crosscheck.campaigns.dask_backend.DaskBackend`, ``--dask
ADDRESS``). A task is a module-level function and its arguments, so that it pickles by reference;
its result must pickle too. :func:`rfcircuits.crosscheck.campaigns.parallel.run_tasks` drives either
one.

The contract, which the tests of both backends check:

- a task runs to completion at least once, and its result is reported exactly once: a worker
  that dies in the middle of a task has the task run again on another worker (a task that has
  killed :data:`MAX_TRIES` workers is an error, as is any exception the task raises, which
  :meth:`Backend.wait` raises in the client);
- results come in completion order: whatever depends on the order (a summary, the files a
  job writes) is sorted by the task's key by the caller;
- :meth:`Backend.cancel` forgets every unfinished task: none of their results comes later, and
  the workers stay usable.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

#: Times a task may lose its worker before the run stops with an error (Dask's
#: ``distributed.scheduler.allowed-failures`` is the same number by default).
MAX_TRIES = 3


class WorkerLost(RuntimeError):
    """A task whose workers kept dying: the run stops rather than retry it for ever."""


class Backend(abc.ABC):
    """Runs keyed tasks and reports their results as they finish. A context manager:
    leaving the block closes it (for a cluster the client made, the cluster too)."""

    #: How the backend shows in progress lines and summaries, e.g. ``local:2``.
    name: str
    #: Tasks the driver keeps submitted per worker: enough to hide the time a result takes
    #: to come back, few enough that a time budget is not overrun by much.
    queued: int = 2
    #: Short tasks (tens of milliseconds, as fuzz cases) sent together as one, so that what a
    #: task costs the backend itself is shared among them.
    batch: int = 1

    @abc.abstractmethod
    def workers(self) -> int:
        """Workers alive now (shown as progress; the driver keeps :attr:`queued` tasks per
        worker submitted)."""

    def prepare(self, fn: Callable[..., Any]) -> None:
        """Have the workers ready to run ``fn`` (on a cluster: its module imported by every
        worker), so that a campaign's clock can start after that fixed cost."""

    def share(self, value: Any) -> Any:
        """What to pass tasks for an argument ``value`` that many of them take (compiled
        circuits), each receiving ``value``: here ``value`` itself, sent with every task; a
        cluster's backend sends it once to each worker instead."""
        return value

    @abc.abstractmethod
    def submit(self, key: int, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` as the task ``key`` (a key not in use)."""

    @abc.abstractmethod
    def wait(self, timeout: float) -> list[tuple[int, Any]]:
        """``(key, result)`` of tasks finished since the last call, waiting up to ``timeout``
        seconds for the first (an empty list when none finished in time). A task's exception
        is raised here."""

    @abc.abstractmethod
    def cancel(self) -> None:
        """Forget every unfinished task."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the workers (idempotent)."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
