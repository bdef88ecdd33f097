"""A real browser for the tests of pages and figures: headless Chromium, run directly.

Each call starts Chromium once (about a second) with a profile of its own in a temporary
directory, with the network features that would reach out turned off, on a ``file://`` URL:
what it renders is what a user opening the file would see. Tests that use it are marked
``@pytest.mark.needs("chromium")`` (tests/required.py): skipped where no browser is
installed, failed where the run requires one.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

#: The names a Chromium may be installed under (Debian's package, others' packages, Chrome).
NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: Flags of every run: headless, without a sandbox (CI runs as root, in a container), and
#: without anything that would fetch (updates, sync, QUIC probes) or wait for a first run.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")
#: Seconds a run may take (it takes one or two).
TIMEOUT = 120


def find() -> str | None:
    """The path of an installed Chromium, or None."""
    return next((path for name in NAMES if (path := shutil.which(name))), None)


def _run(page: Path, profile: Path, *flags: str) -> str:
    browser = find()
    assert browser is not None, "no Chromium: the test should have been skipped"
    run = subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", *flags,
                          page.resolve().as_uri()],
                         capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def dump_dom(page: Path, profile: Path) -> str:
    """The document Chromium built from ``page``, serialized (``--dump-dom``)."""
    return _run(page, profile, "--dump-dom")


def screenshot(page: Path, profile: Path, out: Path, size: str = "1200,1600") -> bytes:
    """A PNG of ``page`` as Chromium draws it in a window of ``size`` pixels."""
    _run(page, profile, f"--screenshot={out}", f"--window-size={size}")
    return out.read_bytes()
