"""Campaign backends (crosscheck/parallel.py, crosscheck/dask_backend.py): the same fuzz
cases give the same summary and the same failure files on local processes and on Dask, with
one worker or two, also when a worker dies in the middle of the campaign."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rfcircuits.crosscheck._backend_abc import WorkerLost
from rfcircuits.crosscheck.parallel import LocalBackend, open_backend, run_tasks

#: A fault planted in every process of a run, the Dask workers included (they are fresh
#: interpreters, so a monkeypatch in the test would not reach them): the native engine drops
#: an NR on forests of exactly four trees, so that some cases of a campaign fail and are
#: shrunk, and the others pass.
PLANTED = """
import dataclasses
from rfcircuits.explain import Explainer
_original = Explainer.explain_states
def _planted(self, x, what=None, *args, **kwargs):
    e = _original(self, x) if what is None else _original(self, x, what)
    if len(self.forest.trees) == 4 and len(e.necessary_reasons) > 1:
        e = dataclasses.replace(e, necessary_reasons=e.necessary_reasons[1:])
    return e
Explainer.explain_states = _planted
"""

CASES = 200
SEED = 7

needs_dask = pytest.mark.skipif(
    subprocess.run([sys.executable, "-c", "import distributed"],
                   capture_output=True).returncode != 0,
    reason="Dask distributed is not installed (pip install 'rfcircuits[dask]')")


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    site = tmp_path_factory.mktemp("planted")
    (site / "sitecustomize.py").write_text(PLANTED, encoding="utf-8")
    return site


def start_fuzz(planted: Path, out: Path, backend: list[str], cases: int = CASES
               ) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(planted)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    return subprocess.Popen(
        [sys.executable, "-m", "rfcircuits", "fuzz", "--cases", str(cases), "--seed",
         str(SEED), "--oracles", "brute", "--out", str(out), "--json", "-q", *backend],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(run: subprocess.Popen[str], out: Path) -> tuple[dict, dict[str, bytes]]:
    """The summary without its timing, failure paths by name, and the failure files."""
    stdout, stderr = run.communicate(timeout=600)
    assert run.returncode == 1, stderr  # the planted fault fails some cases
    summary = json.loads(stdout)
    assert not summary.pop("interrupted")
    summary.pop("seconds")
    names = [os.path.basename(p) for p in summary["failures"]]
    assert [os.path.dirname(p) for p in summary["failures"]] == [str(out)] * len(names)
    summary["failures"] = names
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    assert sorted(files) == sorted(names)
    return summary, files


@pytest.fixture(scope="module")
def reference(planted, tmp_path_factory):
    out = tmp_path_factory.mktemp("fuzz") / "serial"
    summary, files = finish(start_fuzz(planted, out, []), out)
    assert summary["cases"] == CASES and summary["checks"] > 0
    assert 0 < len(files) < CASES  # some cases fail, not all
    return summary, files


BACKENDS = [pytest.param(["--jobs", "2"], id="local-2"),
            pytest.param(["--dask", "local:1"], id="dask-1", marks=needs_dask),
            pytest.param(["--dask", "local:2"], id="dask-2", marks=needs_dask)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_same_cases_give_the_same_summary_and_files_on_every_backend(
        backend, planted, reference, tmp_path):
    out = tmp_path / "out"
    assert finish(start_fuzz(planted, out, backend), out) == reference


def workers_of(pid: int, dask: bool) -> list[int]:
    """The worker processes a fuzz run made: forked children, or the spawned processes of
    its local Dask cluster."""
    psutil = pytest.importorskip("psutil")
    found = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            line = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if ("spawn_main" in line) if dask else child.ppid() == pid and "resource_tracker" \
                not in line:
            found.append(child.pid)
    return found


@pytest.mark.parametrize("backend", [
    pytest.param(["--jobs", "2"], id="local-2"),
    pytest.param(["--dask", "local:2"], id="dask-2", marks=needs_dask)])
def test_a_worker_killed_mid_campaign_loses_no_case(backend, planted, reference, tmp_path):
    out = tmp_path / "out"
    run = start_fuzz(planted, out, backend)
    dask = backend[0] == "--dask"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and run.poll() is None:
        # Once cases are running (a failure file is written: the run is under way), kill one
        # worker; its case runs again on another.
        workers = workers_of(run.pid, dask)
        if len(workers) == 2 and any(out.glob("*.json")):
            os.kill(workers[0], 9)
            break
        time.sleep(0.05)
    else:
        pytest.fail("the run ended before a worker could be killed")
    assert finish(run, out) == reference


@needs_dask
def test_ctrl_c_cancels_the_run_and_leaves_the_cluster_usable(tmp_path):
    distributed = pytest.importorskip("distributed")
    import dask

    from rfcircuits.crosscheck.dask_backend import WORKER_CONFIG

    environ = dict(os.environ)  # Dask's nanny sets its workers' variables in this process
    try:
        with dask.config.set(WORKER_CONFIG), distributed.LocalCluster(
                n_workers=1, threads_per_worker=1, processes=True,
                dashboard_address=None) as cluster:
            interrupted_then_reused(distributed, cluster, tmp_path)
    finally:
        os.environ.clear()
        os.environ.update(environ)


def interrupted_then_reused(distributed, cluster, tmp_path: Path) -> None:
    """A run on the cluster interrupted by Ctrl-C, then another on the same cluster."""
    address = ["--dask", cluster.scheduler_address]
    first = start_fuzz(tmp_path, tmp_path / "first", address, cases=100000)
    deadline = time.monotonic() + 60
    while not (tmp_path / "first").is_dir() and time.monotonic() < deadline:
        time.sleep(0.1)  # its output directory is made before the cluster starts
    time.sleep(3)  # the cluster is up and cases are running
    first.send_signal(signal.SIGINT)
    stdout, stderr = first.communicate(timeout=60)
    assert first.returncode == 130, stderr
    summary = json.loads(stdout)
    assert summary["interrupted"] and 0 < summary["cases"] < 100000
    assert "Traceback" not in stderr
    second = start_fuzz(tmp_path, tmp_path / "second", address, cases=20)
    stdout, stderr = second.communicate(timeout=120)
    assert second.returncode == 0, stderr
    assert json.loads(stdout)["cases"] == 20
    with distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 1


@needs_dask
def test_crosscheck_on_dask_reports_what_a_serial_run_does():
    # Each worker loads the client's circuits and builds its oracles at its first instance.
    from rfcircuits.crosscheck.fuzz import make_case
    from rfcircuits.crosscheck.harness import crosscheck
    from rfcircuits.crosscheck.strategies import Limits

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
    from rfcircuits.crosscheck.fuzz import make_case
    from rfcircuits.crosscheck.strategies import Limits
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
    from rfcircuits.crosscheck import dask_backend
    from rfcircuits.errors import InputError

    with pytest.raises(InputError, match="local:N"):
        open_backend(dask="local:zero")
    monkeypatch.setattr(dask_backend, "CONNECT_TIMEOUT", 1)
    with pytest.raises(InputError, match="no scheduler answers"):
        open_backend(dask="tcp://127.0.0.1:9")
