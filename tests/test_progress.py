"""Progress on stderr: whole lines into logs, a bar with a running clock on terminals, nothing
with --quiet, compile progress with node counts.

Times are those of a clock the test moves (:func:`clock`: Progress's and tqdm's), and the
clock thread's period is done by hand (``_redraw``, what the thread does every period); the
thread itself is checked to redraw, waiting for the redraws to appear, never for a time.
"""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import tqdm.std

from rfcircuits import progress as progress_module

from rfcircuits.classformula import compile_nnf
from rfcircuits.dgcompile import compile_dg
from rfcircuits.forest import load_forest
from rfcircuits.progress import PERIOD_ENV, Progress

CASE = Path(__file__).parent.parent / "fixtures" / "cases" / "trained-iris-x0_1_2_3-50t-d4-s0"
CLOCK = re.compile(r"\[\d\d:\d\d")  # tqdm's elapsed time, [MM:SS


class Terminal(io.StringIO):
    """A stream that says it is a terminal (tqdm then draws its bar in place)."""

    def isatty(self) -> bool:
        return True


def explain(*options: str, period: str = "0.01") -> subprocess.CompletedProcess[str]:
    """``rfcircuits explain`` on a fixture forest (3 classes, 50 trees), stderr not a terminal."""
    return subprocess.run(
        [sys.executable, "-m", "rfcircuits", "explain", "--forest",
         str(CASE / "forest.json"), "--instances", str(CASE / "instances.jsonl"), *options],
        capture_output=True, text=True, env={**os.environ, PERIOD_ENV: period}, timeout=120)


class Clock:
    """Seconds since the epoch, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def time(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> Clock:
    """The clock of Progress and of the tqdm bars it makes (both read ``time.time``)."""
    fake = Clock()
    monkeypatch.setattr(progress_module, "time", SimpleNamespace(time=fake.time))
    monkeypatch.setattr(tqdm.std, "time", fake.time)
    return fake


#: A period the clock thread never reaches during a test: periods are done by hand.
NEVER = 3600.0


def test_a_log_gets_a_whole_line_each_period_with_the_time_spent(clock):
    log = io.StringIO()
    with Progress("work", file=log, period=NEVER) as progress:
        for i in range(6):
            progress(i, 6)
            clock.advance(10)
            progress._redraw()  # a period ends
    text = log.getvalue()
    assert "\r" not in text and "\x1b" not in text and text.endswith("\n")
    lines = text.splitlines()
    assert [CLOCK.search(line).group() for line in lines] == \
        ["[00:10", "[00:20", "[00:30", "[00:40", "[00:50", "[01:00"]
    assert [line.split()[2] for line in lines] == [f"{i}/6" for i in range(6)]
    assert all(line.startswith("work") for line in lines)
    assert not any("it/s" in line for line in lines)


def test_a_short_run_prints_nothing_into_a_log(clock):
    log = io.StringIO()
    with Progress("work", file=log, period=NEVER) as progress:
        progress(1, 2)
        clock.advance(5)
        progress(2, 2)
    assert log.getvalue() == ""  # no period ended, and closing writes no last line


class Watched(io.StringIO):
    """A stream that sets ``seen`` once ``wanted`` writes have come."""

    def __init__(self, wanted: int) -> None:
        super().__init__()
        self.wanted = wanted
        self.seen = threading.Event()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        if self.writes >= self.wanted:
            self.seen.set()
        return super().write(text)


class WatchedTerminal(Watched, Terminal):
    pass


@pytest.mark.parametrize("stream", [Watched, WatchedTerminal], ids=["log", "terminal"])
def test_the_clock_thread_redraws_every_period_without_steps(stream):
    out = stream(3)
    with Progress("compiling", file=out, period=0.01) as progress:
        progress(0, 1)  # one long step: no more calls
        assert out.seen.wait(60), "the clock thread did not redraw"
    redraws = out.getvalue().split("\r" if stream is WatchedTerminal else "\n")
    assert len([part for part in redraws if "0/1" in part]) >= 2


def test_a_log_of_the_command_line_has_no_redraws():
    run = explain()
    assert run.returncode == 0 and len(run.stdout.splitlines()) == 5
    assert "\r" not in run.stderr
    lines = run.stderr.splitlines()
    assert lines and all(CLOCK.search(line) for line in lines), run.stderr
    assert {line.split()[0] for line in lines} <= {"compiling", "compiling:", "instances",
                                                   "instances:"}


@pytest.mark.parametrize("flag", ["-q", "--quiet", "--no-progress"])
def test_quiet_prints_nothing_on_stderr(flag):
    run = explain(flag)
    assert run.returncode == 0 and len(run.stdout.splitlines()) == 5
    assert run.stderr == ""


def test_a_terminal_gets_a_bar_with_elapsed_time_and_no_rate():
    screen = Terminal()
    with Progress("instances", file=screen) as progress:
        progress(1, 25)  # at once: a rate would come from a zero interval
        drawn = screen.getvalue()
    assert "\r" in drawn
    last = drawn.split("\r")[-1]
    assert last.startswith("instances:") and "1/25" in last and CLOCK.search(last)
    assert "it/s" not in drawn and "?" not in last
    assert screen.getvalue().endswith("\r")  # closed: the bar is cleared, no line left


def test_the_clock_runs_during_a_long_step(clock):
    screen = Terminal()
    with Progress("compiling", file=screen, period=NEVER) as progress:
        progress(0, 1)
        clock.advance(65)  # one long step: no calls
        progress._redraw()  # a period ends
        last = screen.getvalue().split("\r")[-1]
    assert "0/1" in last and "[01:05" in last


def test_a_stage_starts_its_own_count():
    screen = Terminal()
    with Progress("compiling", file=screen) as progress:
        progress(3, 3)
        progress.stage("instances", 7)
        last = screen.getvalue().split("\r")[-1]
    assert last.startswith("instances:") and "0/7" in last


def test_remaining_time_shows_only_between_first_and_last_step(clock):
    screen = Terminal()
    shown = []
    with Progress("x", file=screen, period=NEVER) as progress:
        for done in (0, 2, 4):
            progress(done, 4)
            shown.append(screen.getvalue().split("\r")[-1])
            clock.advance(10)
    first, middle, last = shown
    assert "0/4 [00:00]" in first and "4/4 [00:20]" in last
    assert "2/4 [00:10<00:10]" in middle  # two steps in 10 s: two more take 10 s


def test_a_closed_progress_draws_nothing():
    screen = Terminal()
    progress = Progress("x", file=screen)
    progress.close()
    progress(1, 2)
    assert screen.getvalue() == ""


def test_a_pty_gets_a_bar_from_the_command_line():
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    code = ("from rfcircuits.progress import Progress\n"
            "with Progress('networks') as p:\n"
            "    p(1, 4)\n")  # drawn at once on a terminal
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=slave)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=30) == 0
    text = out.decode()
    assert "\r" in text and "networks:" in text and "1/4" in text and CLOCK.search(text)


def test_compile_progress_reports_networks_and_nodes():
    forest = load_forest(str(CASE / "forest.json"))
    k = len(forest.classes)
    calls: list[tuple[int, int, int]] = []
    comp = compile_dg(forest, "first", "dg-conj",
                      progress=lambda done, total, dg: calls.append((done, total, len(dg))))
    pairs = k * (k - 1) // 2  # one network per pair of classes
    assert [(d, t) for d, t, _ in calls] == [(d, pairs) for d in range(pairs + 1)]
    assert calls[0][2] > 0 and calls[-1][2] == len(comp.dg)
    calls.clear()
    nnf = compile_nnf(forest, "first",
                      progress=lambda done, total, c: calls.append((done, total, len(c))))
    # "first" ties: each class is compared with each other class
    networks = k * (k - 1)
    assert [(d, t) for d, t, _ in calls] == [(d, networks) for d in range(1, networks + 1)]
    sizes = [n for _, _, n in calls]
    assert 0 < sizes[0] and sizes == sorted(sizes) and sizes[-1] <= len(nnf.nnf)


def test_a_bar_shows_the_nodes_of_a_compile():
    forest = load_forest(str(CASE / "forest.json"))
    screen = Terminal()
    with Progress("pair networks", file=screen) as progress:
        comp = compile_dg(forest, progress=progress)
        last = screen.getvalue().split("\r")[-1]
    assert len(comp.roots) == 3 and re.search(r"\d/3 \[\d\d:\d\d.*\d nodes\]$", last)
