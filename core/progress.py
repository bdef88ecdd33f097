"""Progress on stderr for long runs (compiles, explanation batches, checks, benchmarks).

On a terminal, a tqdm bar redrawn in place; a daemon thread redraws it every second, so a long
step (one network of a big compile) still shows its clock running. Into a file or a pipe,
whole lines instead, one per period (the first after one period: short runs print nothing),
formatted by tqdm's ``format_meter``: a log holds no redraws. Disabled, it prints nothing, so
library calls stay silent unless the command line asks for progress.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Sized
from typing import IO

from tqdm import tqdm

#: Seconds between progress lines when stderr is not a terminal (environment override).
PERIOD_ENV = "RFCIRCUITS_PROGRESS_PERIOD"
PERIOD = 10.0
#: Seconds between redraws of a terminal bar by the clock thread, and at least between two.
TICK = 1.0
MIN_INTERVAL = 0.2

#: Held while drawing: a fork then never copies a half-written stream (the workers of
#: ``--jobs`` fork while a bar is open).
_DRAWING = threading.Lock()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_DRAWING.acquire, after_in_parent=_DRAWING.release,
                        after_in_child=_DRAWING.release)


def _period() -> float:
    try:
        period = float(os.environ.get(PERIOD_ENV, PERIOD))
    except ValueError:
        return PERIOD
    return period if period > 0 else PERIOD


class Progress:
    """``progress(done, total, nodes=None)`` after each step of the current stage; ``nodes``
    is the node store being built (anything with ``len``), read at every redraw, so its size
    shows while a step runs. ``stage(text)`` starts another stage (its own count and clock),
    ``note(text)`` adds a remark (counts of a run without steps), ``write(text)`` prints a
    message without breaking the bar.

    Elapsed time always shows, remaining time once a step is done and some remain, and never
    a rate (steps differ too much in length for one). ``period``: seconds between redraws on a
    terminal (default :data:`TICK`), between lines otherwise (default :data:`PERIOD`, or the
    environment's :data:`PERIOD_ENV`)."""

    def __init__(self, label: str, enabled: bool = True, *, file: IO[str] | None = None,
                 period: float | None = None) -> None:
        self.enabled = enabled
        self._file = file or sys.stderr
        self._tty = self._file.isatty()
        self._period = period or (TICK if self._tty else _period())
        self._bar: tqdm | None = None
        self._drawn = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.stage(label)
        if enabled:
            self._thread = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._thread.start()

    def stage(self, text: str, total: int | None = None) -> None:
        """Report ``text`` as what the run does now, of ``total`` steps if known."""
        self.label = text
        self.done, self.total, self.nodes, self._note = 0, total, None, ""
        self._start = time.time()  # tqdm's clock
        if self._bar is not None:
            self._draw()

    def __call__(self, done: int, total: int, nodes: Sized | None = None) -> None:
        self.done, self.total = done, total
        if nodes is not None:
            self.nodes = nodes
        if self.enabled and self._tty and time.time() - self._drawn >= MIN_INTERVAL:
            self._draw()

    def note(self, text: str) -> None:
        """Show ``text`` after the counts (until the next stage)."""
        self._note = text

    def write(self, text: str) -> None:
        """Print the line ``text`` (also when disabled): above the bar on a terminal."""
        with _DRAWING:
            if self._bar is not None:
                self._bar.write(text, file=self._file)
            else:
                print(text, file=self._file, flush=True)

    def _format(self) -> tuple[str, str]:
        """tqdm's ``bar_format`` and postfix for the current state."""
        counts = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} " \
            if self.total else "{desc} "
        remaining = "<{remaining}" if self.total and 0 < self.done < self.total else ""
        nodes = f"{len(self.nodes):,} nodes" if self.nodes is not None else ""
        return counts + "[{elapsed}" + remaining + "{postfix}]", \
            ", ".join(t for t in (self._note, nodes) if t)

    def _draw(self) -> None:
        bar_format, postfix = self._format()
        with _DRAWING:
            if self._bar is None:
                self._bar = tqdm(total=self.total, desc=self.label, file=self._file,
                                 leave=False, dynamic_ncols=True, smoothing=0,
                                 bar_format=bar_format)
            self._bar.start_t = self._start
            self._bar.desc = self.label
            self._bar.bar_format = bar_format
            self._bar.total = self.total
            self._bar.n = self.done
            self._bar.set_postfix_str(postfix, refresh=False)
            self._bar.refresh()
            self._drawn = time.time()

    def _tick(self) -> None:
        while not self._stop.wait(self._period):
            self._redraw()

    def _redraw(self) -> None:
        """What the clock thread does every period: redraw the bar on a terminal, write a
        whole line into a log."""
        if self._tty:
            self._draw()
            return
        bar_format, postfix = self._format()
        line = tqdm.format_meter(self.done, self.total, time.time() - self._start,
                                 prefix=self.label, bar_format=bar_format.replace("|{bar}|", ""),
                                 postfix=postfix)
        with _DRAWING:
            self._file.write(line + "\n")
            self._file.flush()

    def close(self) -> None:
        """Stop the clock and clear the bar (a log gets no last line); later calls draw
        nothing."""
        self.enabled = False
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._bar is not None:
            with _DRAWING:
                self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
