"""Campaign backends (crosscheck/campaigns/parallel.py, crosscheck/campaigns/dask_backend.py): the
same fuzz cases give the same summary and the same failure files on local processes and on Dask,
with one worker or two, also when a worker dies in the middle of the campaign; and the cases do run
where the backend says (each case records the process that ran it, and the Dask worker it ran on): a
``--dask`` that ran locally would fail.

The fuzz runs are child processes that load :data:`PLANTED` (a ``sitecustomize`` module), as
do the Dask workers they start, so that every process of a run has the same patches; their
signal dispositions are those of an interactive run (:mod:`tests.interactive`). Tests wait
for events (a case started, a worker holds a case), each with a deadline that fails the test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rfcircuits.crosscheck.campaigns._backend_abc import WorkerLost
from rfcircuits.crosscheck.campaigns.parallel import LocalBackend, open_backend, run_tasks
from tests import interactive

#: Patches for every process of a fuzz run, the Dask workers included (fresh interpreters, so
#: a monkeypatch in the test would not reach them), chosen by environment variables:
#: ``PLANT`` plants a fault (the native engine drops an NR on forests of exactly four trees,
#: so that some cases of a campaign fail and are shrunk, and the others pass); ``RUNS`` names
#: a directory where each case notes that it started and that it is done, with the process
#: that ran it, its parent and the Dask worker's address (none outside Dask); ``HOLD`` names a
#: case whose first run notes ``held`` and then waits to be killed.
PLANTED = """
import dataclasses, functools, os, time

if os.environ.get("RFCIRCUITS_TEST_PLANT"):
    from rfcircuits.explain import Explainer
    _original = Explainer.explain_states

    def _planted(self, x, what=None, *args, **kwargs):
        e = _original(self, x) if what is None else _original(self, x, what)
        if len(self.forest.trees) == 4 and len(e.necessary_reasons) > 1:
            e = dataclasses.replace(e, necessary_reasons=e.necessary_reasons[1:])
        return e

    Explainer.explain_states = _planted

RUNS = os.environ.get("RFCIRCUITS_TEST_RUNS")
if RUNS:
    from rfcircuits.crosscheck.differential import fuzz
    _run_case = fuzz.run_case
    HOLD = int(os.environ.get("RFCIRCUITS_TEST_HOLD", "-1"))

    def _note(name, text):
        path = os.path.join(RUNS, name)
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)

    def _worker():
        try:
            from distributed import get_worker
            return get_worker().address
        except (ImportError, ValueError):
            return ""

    @functools.wraps(_run_case)
    def run_case(seed, k, *args, **kwargs):
        me = f"{os.getpid()} {os.getppid()} {_worker()}"
        _note(f"start-{k}-{os.getpid()}", me)
        if k == HOLD and not os.path.exists(os.path.join(RUNS, "held")):
            _note("held", me)
            time.sleep(300)  # until the test kills this process
        result = _run_case(seed, k, *args, **kwargs)
        _note(f"done-{k}-{os.getpid()}", me)
        return result

    fuzz.run_case = run_case
"""

CASES = 200
SEED = 7
#: The case whose worker the worker-kill test kills while it runs it.
HELD = 60
#: Seconds a test waits for an event of a run before it fails.
PATIENCE = 300

needs_dask = pytest.mark.needs("dask")


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    site = tmp_path_factory.mktemp("planted")
    (site / "sitecustomize.py").write_text(PLANTED, encoding="utf-8")
    return site


def planted_env(planted: Path, runs: Path | None, plant: bool = True,
                hold: int | None = None) -> dict[str, str]:
    """The environment variables that load :data:`PLANTED` with its options."""
    env = {"PYTHONPATH": os.pathsep.join(
        [str(planted)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    if plant:
        env["RFCIRCUITS_TEST_PLANT"] = "1"
    if runs is not None:
        env["RFCIRCUITS_TEST_RUNS"] = str(runs)
    if hold is not None:
        env["RFCIRCUITS_TEST_HOLD"] = str(hold)
    return env


def start_fuzz(planted: Path, out: Path, backend: list[str], cases: int = CASES,
               runs: Path | None = None, plant: bool = True, hold: int | None = None
               ) -> subprocess.Popen[str]:
    if runs is not None:
        runs.mkdir(exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-c", interactive.CLI, "fuzz", "--cases", str(cases), "--seed",
         str(SEED), "--oracles", "brute", "--out", str(out), "--json", "-q", *backend],
        env={**os.environ, **planted_env(planted, runs, plant, hold)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(run: subprocess.Popen[str], out: Path) -> tuple[dict, dict[str, bytes]]:
    """The summary without its timing, failure paths by name, and the failure files."""
    stdout, stderr = run.communicate(timeout=600)
    assert run.returncode == 1, stderr  # the planted fault fails some cases
    summary = json.loads(stdout)
    assert not summary.pop("interrupted")
    summary.pop("seconds")
    summary.pop("timeline")
    names = [os.path.basename(p) for p in summary["failures"]]
    assert [os.path.dirname(p) for p in summary["failures"]] == [str(out)] * len(names)
    summary["failures"] = names
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    assert sorted(files) == sorted(names)
    return summary, files


def notes(runs: Path, kind: str) -> dict[int, list[tuple[int, int, str]]]:
    """Per case, the ``(pid, parent pid, Dask worker)`` of each process that noted ``kind``
    (``start`` or ``done``) for it."""
    out: dict[int, list[tuple[int, int, str]]] = {}
    for path in runs.glob(f"{kind}-*"):
        if path.suffix != ".tmp":
            pid, ppid, worker = path.read_text().split(" ")
            out.setdefault(int(path.name.split("-")[1]), []).append((int(pid), int(ppid),
                                                                      worker))
    return out


def wait_for(event: Callable[[], Any], what: str, run: subprocess.Popen[str]) -> Any:
    """The first true value of ``event()``, asked every 50 ms; the test fails when the run
    ends first or :data:`PATIENCE` seconds pass."""
    deadline = time.monotonic() + PATIENCE
    while not (value := event()):
        if run.poll() is not None:
            pytest.fail(f"the run ended before {what}: {run.stderr.read()[-2000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"{PATIENCE} s passed before {what}")
        time.sleep(0.05)
    return value


def where_cases_ran(runs: Path) -> dict[str, set[Any]]:
    """Every case ran to its end; the processes that ran them, their parents and the Dask
    workers (none outside Dask)."""
    done = notes(runs, "done")
    assert sorted(done) == list(range(CASES))
    places = [place for k in done for place in done[k]]
    return {"pids": {pid for pid, _, _ in places}, "parents": {ppid for _, ppid, _ in places},
            "workers": {worker for _, _, worker in places}}


@pytest.fixture(scope="module")
def reference(planted, tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    out = root / "serial"
    run = start_fuzz(planted, out, [], runs=root / "runs")
    summary, files = finish(run, out)
    assert summary["cases"] == CASES and summary["checks"] > 0
    assert 0 < len(files) < CASES  # some cases fail, not all
    ran = where_cases_ran(root / "runs")
    assert ran["pids"] == {run.pid} and ran["workers"] == {""}  # all in the run's process
    return summary, files


BACKENDS = [pytest.param(["--jobs", "2"], id="local-2"),
            pytest.param(["--dask", "local:1"], id="dask-1", marks=needs_dask),
            pytest.param(["--dask", "local:2"], id="dask-2", marks=needs_dask)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_same_cases_give_the_same_summary_and_files_on_every_backend(
        backend, planted, reference, tmp_path):
    out, runs = tmp_path / "out", tmp_path / "runs"
    run = start_fuzz(planted, out, backend, runs=runs)
    assert finish(run, out) == reference
    # The cases ran in the backend's workers: child processes of the run, one per worker,
    # and on Dask each inside a Dask worker of the run's cluster.
    ran = where_cases_ran(runs)
    workers = int(backend[1].removeprefix("local:"))
    assert run.pid not in ran["pids"] and ran["parents"] == {run.pid}
    assert len(ran["pids"]) == workers
    if backend[0] == "--dask":
        assert len(ran["workers"]) == workers and "" not in ran["workers"]
    else:
        assert ran["workers"] == {""}


@pytest.mark.parametrize("backend", [
    pytest.param(["--jobs", "2"], id="local-2"),
    pytest.param(["--dask", "local:2"], id="dask-2", marks=needs_dask)])
def test_a_worker_killed_mid_campaign_loses_no_case(backend, planted, reference, tmp_path):
    out, runs = tmp_path / "out", tmp_path / "runs"
    run = start_fuzz(planted, out, backend, runs=runs, hold=HELD)
    # The worker that runs case HELD says so and waits: killed, it holds a task for sure.
    held = wait_for(lambda: (runs / "held").exists() and (runs / "held").read_text(),
                    f"a worker held case {HELD}", run)
    pid, parent, worker = held.split(" ")
    assert int(parent) == run.pid and int(pid) != run.pid  # one of the run's workers
    assert (worker != "") == (backend[0] == "--dask")
    os.kill(int(pid), signal.SIGKILL)
    assert finish(run, out) == reference
    finished_by = [p for p, _, _ in notes(runs, "done")[HELD]]
    assert finished_by and int(pid) not in finished_by  # it ran again on another worker


@needs_dask
def test_ctrl_c_cancels_the_run_and_leaves_the_cluster_usable(planted, tmp_path):
    import dask
    import distributed

    from rfcircuits.crosscheck.campaigns.dask_backend import WORKER_CONFIG

    runs = tmp_path / "runs"
    runs.mkdir()
    environ = dict(os.environ)  # Dask's nanny sets its workers' variables in this process
    try:
        for name, value in planted_env(planted, runs, plant=False).items():
            os.environ[name] = value  # the cluster's workers note their cases too
        with dask.config.set(WORKER_CONFIG), distributed.LocalCluster(
                n_workers=1, threads_per_worker=1, processes=True,
                dashboard_address=None) as cluster:
            interrupted_then_reused(distributed, cluster, planted, runs, tmp_path)
    finally:
        os.environ.clear()
        os.environ.update(environ)


def interrupted_then_reused(distributed: Any, cluster: Any, planted: Path, runs: Path,
                            tmp_path: Path) -> None:
    """A run on the cluster interrupted by Ctrl-C, then another on the same cluster."""
    from rfcircuits.crosscheck.campaigns.dask_backend import DaskBackend

    address = ["--dask", cluster.scheduler_address]
    first = start_fuzz(planted, tmp_path / "first", address, cases=100000, runs=runs,
                       plant=False)
    # The run submits `queued` batches per worker ahead, and the next only once a result is
    # back: a case of a later batch has started when cases are running and some are counted.
    ahead = DaskBackend.queued * DaskBackend.batch
    wait_for(lambda: any(k >= ahead for k in notes(runs, "start")),
             f"case {ahead} started on the cluster", first)
    first.send_signal(signal.SIGINT)
    stdout, stderr = first.communicate(timeout=60)
    assert first.returncode == 130, stderr
    summary = json.loads(stdout)
    assert summary["interrupted"] and 0 < summary["cases"] < 100000
    assert "Traceback" not in stderr
    second = start_fuzz(planted, tmp_path / "second", address, cases=20, plant=False)
    stdout, stderr = second.communicate(timeout=120)
    assert second.returncode == 0, stderr
    assert json.loads(stdout)["cases"] == 20
    with distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 1


@needs_dask
def test_crosscheck_on_dask_reports_what_a_serial_run_does():
    # Each worker loads the client's circuits and builds its oracles at its first instance.
    from rfcircuits.crosscheck.differential.fuzz import make_case
    from rfcircuits.crosscheck.differential.harness import crosscheck
    from rfcircuits.crosscheck.differential.strategies import Limits

    forest, instances = make_case(5, 3, Limits())
    serial = crosscheck(forest, instances * 2, formulas=False)
    remote = crosscheck(forest, instances * 2, formulas=False, dask="local:2")
    assert remote.explained == serial.explained == 6 and serial.checks() > 0
    assert [(o.check, o.engine, o.status) for o in remote.outcomes] == \
        [(o.check, o.engine, o.status) for o in serial.outcomes]


@needs_dask
def test_explain_on_dask_writes_what_a_serial_run_does(tmp_path, capsys):
    # The workers load the client's circuits (so its engine), once each.
    from rfcircuits.cli.main import main
    from rfcircuits.crosscheck.differential.fuzz import make_case
    from rfcircuits.crosscheck.differential.strategies import Limits
    from rfcircuits.forest import instance_to_json

    forest, instances = make_case(5, 3, Limits())
    (tmp_path / "f.json").write_text(json.dumps(forest.to_json()))
    (tmp_path / "i.jsonl").write_text("".join(json.dumps(instance_to_json(forest, x)) + "\n"
                                              for x in instances * 3))
    args = ["explain", "--forest", str(tmp_path / "f.json"), "--instances",
            str(tmp_path / "i.jsonl"), "-q"]
    for engine in ("graphs", "sat"):
        assert main(args + ["--engine", engine]) == 0
        serial = capsys.readouterr().out
        assert main(args + ["--engine", engine, "--dask", "local:2"]) == 0
        assert capsys.readouterr().out == serial and serial.count("\n") == 9


def _square(x: int) -> int:
    return x * x


def _die(x: int) -> int:
    os._exit(3)


def _fail(x: int) -> int:
    raise ValueError(f"task {x} fails")


def _die_once(marker: str) -> str:
    """Kills its worker the first time it runs, then succeeds."""
    if not os.path.exists(marker):
        Path(marker).touch()
        os._exit(9)
    return marker


def _interrupt_on_one(i: int) -> int:
    if i == 1:
        raise KeyboardInterrupt  # as a solver's own SIGINT handler makes a worker see it
    return i


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("batch", [1, 3])
def test_run_tasks_reports_every_task_once(jobs, batch):
    with LocalBackend(jobs) as backend:
        backend.batch = batch  # short tasks go together, as on Dask
        out = list(run_tasks(backend, _square, ((k, (k,)) for k in range(50)), short=True))
    assert sorted(out) == [(k, k * k) for k in range(50)]


def test_a_task_whose_worker_dies_runs_again_and_reports_once(tmp_path):
    markers = [str(tmp_path / f"m{k}") for k in range(6)]
    with LocalBackend(2) as backend:
        out = list(run_tasks(backend, _die_once, ((k, (m,)) for k, m in enumerate(markers))))
        assert backend.workers() == 2  # replaced
    assert sorted(out) == list(enumerate(markers))


def test_a_worker_meeting_ctrl_c_interrupts_the_client_instead_of_hanging():
    # A worker that dies of it would leave the client waiting for its result: the alarm turns
    # that hang into this test's failure.
    previous = signal.signal(signal.SIGALRM, signal.default_int_handler)
    signal.alarm(60)
    try:
        with LocalBackend(2) as backend, pytest.raises(KeyboardInterrupt):
            list(run_tasks(backend, _interrupt_on_one, ((i, (i,)) for i in range(4))))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_task_that_kills_every_worker_stops_the_run():
    with LocalBackend(2) as backend, pytest.raises(WorkerLost, match="task 0 lost its worker"):
        list(run_tasks(backend, _die, [(0, (0,))]))


def test_a_tasks_error_reaches_the_client_with_where_it_happened():
    with LocalBackend(2) as backend, pytest.raises(ValueError, match="task 3 fails") as info:
        list(run_tasks(backend, _fail, [(3, (3,))]))
    assert any("in worker process" in note for note in info.value.__notes__)


def test_a_time_budget_stops_drawing_tasks():
    with LocalBackend(2) as backend:
        tick = iter(range(10))
        out = list(run_tasks(backend, _square, ((k, (k,)) for k in range(1000)),
                             more=lambda: next(tick, None) is not None))
    assert 0 < len(out) < 1000


@needs_dask
def test_dask_backend_refuses_bad_addresses(monkeypatch):
    from rfcircuits.crosscheck.campaigns import dask_backend
    from rfcircuits.errors import InputError

    with pytest.raises(InputError, match="local:N"):
        open_backend(dask="local:zero")
    monkeypatch.setattr(dask_backend, "CONNECT_TIMEOUT", 1)
    with pytest.raises(InputError, match="no scheduler answers"):
        open_backend(dask="tcp://127.0.0.1:9")
