"""Campaign tasks on a Dask distributed cluster (``--dask ADDRESS``, or ``--dask local:N`` for
a :class:`distributed.LocalCluster` of ``N`` single-threaded worker processes that lives as
long as the run). ``distributed`` is an optional dependency: ``pip install 'rfcircuits[dask]'``.

Tasks are the same module-level functions as on :class:`~rfcircuits.crosscheck.parallel.
LocalBackend`, pickled by reference: every worker needs rfcircuits installed, at the client's
version (checked when the client connects). The scheduler runs a task again when its worker
dies (up to ``distributed.scheduler.allowed-failures`` times, 3 by default, then the run stops
with :class:`~rfcircuits.crosscheck._backend_abc.WorkerLost`). Cancelling, as Ctrl-C does,
cancels this client's tasks only: the cluster stays up for the next run.
"""

from __future__ import annotations

import logging
import queue
import signal
import time
import uuid
from multiprocessing import resource_tracker
from collections.abc import Callable
from typing import Any

from rfcircuits.errors import InputError
from rfcircuits.crosscheck._backend_abc import Backend, WorkerLost

#: Seconds to wait for the scheduler at ``--dask ADDRESS``.
CONNECT_TIMEOUT = 10
#: Seconds a count of workers is reused (each count asks the scheduler).
WORKERS_TTL = 1.0


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


def _version() -> str:
    """rfcircuits' version, on a worker."""
    from rfcircuits import __version__

    return __version__


class DaskBackend(Backend):
    """Tasks on a Dask cluster: ``address`` is a scheduler's (``tcp://host:8786``) or
    ``local:N``."""

    # A task's round trip through the scheduler takes milliseconds: keep more in flight.
    queued = 8

    def __init__(self, address: str) -> None:
        try:
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
            self._cluster = distributed.LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                silence_logs=logging.CRITICAL, preload=[__name__])
            self.client = distributed.Client(self._cluster)
        else:
            try:
                self.client = distributed.Client(address, timeout=CONNECT_TIMEOUT)
            except (OSError, TimeoutError, ValueError) as exc:
                raise InputError(f"--dask {address}: no scheduler answers there ({exc})") \
                    from None
        try:
            self._check_versions()
        except BaseException:
            self.close()
            raise

    def _check_versions(self) -> None:
        from rfcircuits import __version__

        versions = self.client.run(_version)
        other = {w: v for w, v in versions.items() if v != __version__}
        if other:
            worker, version = next(iter(other.items()))
            raise InputError(f"--dask: the worker {worker} runs rfcircuits {version}, this "
                             f"client {__version__}: install the same version on every "
                             "worker")

    def workers(self) -> int:
        when, count = self._counted
        if time.monotonic() - when > WORKERS_TTL:
            count = len(self.client.scheduler_info()["workers"])
            self._counted = (time.monotonic(), count)
        return count

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
        results = []
        for future in done:
            key = self._futures.get(future)
            if key is None:
                continue  # cancelled before its callback came
            if future.status in ("lost", "pending"):
                # Its result was lost with a worker after it finished: the scheduler computes
                # it again, and the callback comes again.
                future.add_done_callback(self._done.put)
                continue
            try:
                if future.status != "finished" and future.status != "error":
                    raise WorkerLost(f"task {key} ended {future.status} on the cluster")
                result = future.result()
            except self._distributed.KilledWorker as exc:
                raise WorkerLost(f"task {key} lost its worker too many times ({exc})") from exc
            del self._futures[future]
            results.append((key, result))
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
