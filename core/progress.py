"""Progress lines on stderr for long runs (compiles, explanation batches, benchmarks).

A thin wrapper over tqdm that stays silent when disabled, so library calls print nothing
unless the CLI asks for progress.
"""

from __future__ import annotations

import sys


class Progress:
    """``update(done, total)`` callback drawing one tqdm bar on stderr."""

    def __init__(self, label: str, enabled: bool = True) -> None:
        self.label = label
        self.enabled = enabled
        self._bar = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=self.label, file=sys.stderr, leave=False,
                             mininterval=0.5, dynamic_ncols=True)
        self._bar.total = total
        self._bar.n = done
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
