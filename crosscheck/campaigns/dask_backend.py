"""Campaign tasks on a Dask distributed cluster (``--dask ADDRESS``, or ``--dask local:N`` for
a :class:`distributed.LocalCluster` of ``N`` single-threaded worker processes that lives as
long as the run). ``distributed`` is an optional dependency: ``pip install 'rfcircuits[dask]'``.

Tasks are the same module-level functions as on :class:`~rfcircuits.crosscheck.campaigns.parallel.
LocalBackend`, pickled by reference: every worker needs rfcircuits installed, at the client's
version (checked when the client connects). The scheduler runs a task again when its worker
dies (up to ``distributed.scheduler.allowed-failures`` times, 3 by default, then the run stops
with :class:`~rfcircuits.crosscheck.campaigns._backend_abc.WorkerLost`). Cancelling, as Ctrl-C does,
cancels this client's tasks only: the cluster stays up for the next run.
"""

from __future__ import annotations

import importlib
import logging
import os
import queue
import signal
import sys
import time
import uuid
from multiprocessing import resource_tracker
from collections.abc import Callable
from typing import Any

from rfcircuits.errors import InputError
from rfcircuits.crosscheck.campaigns._backend_abc import Backend, WorkerLost

#: Seconds to wait for the scheduler at ``--dask ADDRESS``.
CONNECT_TIMEOUT = 10
#: Seconds a count of workers is reused (each count asks the scheduler).
WORKERS_TTL = 1.0
#: Dask settings of the workers of ``local:N`` (docs/decisions.md, "Campaigns"): without
#: Dask's ``MALLOC_TRIM_THRESHOLD_=65536``, which slowed fuzz cases by a quarter, without
#: the statistical profiler, which samples the running task every 10 ms, and with the
#: monitors of the event loop, the system and memory waking less often than every 20, 500
#: and 100 ms: each wake takes the interpreter lock from the running task.
WORKER_CONFIG = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
                 "distributed.worker.profile.enabled": False,
                 "distributed.admin.tick.interval": "1s",
                 "distributed.admin.system-monitor.interval": "5s",
                 "distributed.worker.memory.monitor-interval": "1s"}


def dask_setup(worker: Any) -> None:
    """Preload of the workers of ``local:N`` (Dask calls it as they start): they run in the
    command's process group, so Ctrl-C at the terminal reaches them too; it is the client's
    to handle (it cancels the tasks and closes the cluster), and a worker would only print
    a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker, which the processes of a local cluster
    share, with SIGHUP blocked: it ignores SIGINT and SIGTERM but would die of the SIGHUP a
    closed terminal sends the command's group, and its replacement would print a traceback
    per shared resource of the cluster."""
    if not hasattr(signal, "SIGHUP"):
        return
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
    try:
        resource_tracker.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _facts() -> tuple[str, str | None]:
    """rfcircuits' version on a worker, and its ``MALLOC_TRIM_THRESHOLD_``."""
    from rfcircuits import __version__

    return __version__, os.environ.get("MALLOC_TRIM_THRESHOLD_")


class DaskBackend(Backend):
    """Tasks on a Dask cluster: ``address`` is a scheduler's (``tcp://host:8786``) or
    ``local:N``."""

    # A task's round trip through the scheduler takes milliseconds: send short tasks eight at
    # a time (docs/decisions.md, "Campaigns").
    queued = 2
    batch = 8

    def __init__(self, address: str) -> None:
        try:
            import dask
            import distributed
        except ImportError:
            raise InputError("--dask needs Dask distributed: pip install "
                             "'rfcircuits[dask]'") from None
        self._distributed = distributed
        self._cluster: Any = None
        self.client: Any = None
        self._futures: dict[Any, int] = {}
        # Finished futures, put by their callbacks on the client's event loop: waiting on a
        # queue costs less per task than asking the scheduler which futures are done.
        self._done: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._run = uuid.uuid4().hex[:8]
        self._serial = 0
        self._counted = (0.0, 0)
        self.name = f"dask {address}"
        if address.startswith("local:"):
            try:
                n = int(address[len("local:"):])
            except ValueError:
                n = 0
            if n < 1:
                raise InputError(f"--dask {address}: expected local:N with N a positive "
                                 "number of workers")
            _start_resource_tracker()
            environ = dict(os.environ)
            try:
                with dask.config.set(WORKER_CONFIG):
                    self._cluster = distributed.LocalCluster(
                        n_workers=n, threads_per_worker=1, processes=True,
                        dashboard_address=None, silence_logs=logging.CRITICAL,
                        preload=[__name__])
            finally:
                # The nanny sets its workers' variables in this process before spawning
                # them; the subprocesses a job starts (mutate's judges) must not get them.
                os.environ.clear()
                os.environ.update(environ)
            self.client = distributed.Client(self._cluster)
        else:
            try:
                self.client = distributed.Client(address, timeout=CONNECT_TIMEOUT)
            except (OSError, TimeoutError, ValueError) as exc:
                raise InputError(f"--dask {address}: no scheduler answers there ({exc})") \
                    from None
        try:
            self._check_workers()
        except BaseException:
            self.close()
            raise

    def _check_workers(self) -> None:
        """Every worker runs this client's rfcircuits; a warning for a worker whose memory
        allocator Dask's default setting slows down."""
        from rfcircuits import __version__

        facts = self.client.run(_facts)
        for worker, (version, _) in facts.items():
            if version != __version__:
                raise InputError(f"--dask: the worker {worker} runs rfcircuits {version}, this "
                                 f"client {__version__}: install the same version on every "
                                 "worker")
        slowed = [w for w, (_, trim) in facts.items() if trim is not None]
        if slowed:
            print(f"warning: {len(slowed)} of {len(facts)} Dask workers run with "
                  f"MALLOC_TRIM_THRESHOLD_={facts[slowed[0]][1]} (Dask's default), which slows "
                  "rfcircuits' tasks by about a quarter; docs/development.md, \"Campaigns on one "
                  "machine or a cluster\", shows the setting that turns it off", file=sys.stderr)

    def workers(self) -> int:
        when, count = self._counted
        if time.monotonic() - when > WORKERS_TTL:
            count = len(self.client.scheduler_info()["workers"])
            self._counted = (time.monotonic(), count)
        return count

    def prepare(self, fn: Callable[..., Any]) -> None:
        self.client.run(importlib.import_module, fn.__module__)

    def share(self, value: Any) -> Any:
        """A future of ``value`` scattered to every worker now (Dask passes tasks its value;
        the scheduler keeps it while tasks wait on it, and a worker that joins later fetches
        it from another)."""
        [future] = self.client.scatter([value], broadcast=True, hash=False)
        return future

    def submit(self, key: int, fn: Callable[..., Any], *args: Any) -> None:
        self._serial += 1
        future = self.client.submit(fn, *args, key=f"rfcircuits-{self._run}-{key}-"
                                                    f"{self._serial}", pure=False)
        self._futures[future] = key
        future.add_done_callback(self._done.put)

    def wait(self, timeout: float) -> list[tuple[int, Any]]:
        if not self._futures:
            return []
        done = []
        try:
            done.append(self._done.get(timeout=timeout))
            while True:
                done.append(self._done.get_nowait())
        except queue.Empty:
            pass
        finished = []
        for future in done:
            key = self._futures.get(future)
            if key is None:
                continue  # cancelled before its callback came
            if future.status in ("lost", "pending"):
                # Its result was lost with a worker after it finished: the scheduler computes
                # it again, and the callback comes again.
                future.add_done_callback(self._done.put)
                continue
            if future.status not in ("finished", "error"):
                raise WorkerLost(f"task {key} ended {future.status} on the cluster")
            finished.append(future)
        try:
            # One round trip for all the results (or the first error, raised here).
            values = self.client.gather(finished)
        except self._distributed.KilledWorker as exc:
            raise WorkerLost(f"a task lost its worker too many times ({exc})") from exc
        results = []
        for future, value in zip(finished, values):
            results.append((self._futures.pop(future), value))
            future.release()
        return results

    def cancel(self) -> None:
        if self._futures:
            self.client.cancel(list(self._futures))
            self._futures.clear()

    def close(self) -> None:
        if self.client is not None:
            self.cancel()
            self.client.close()
            self.client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
