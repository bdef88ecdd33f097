"""Atomic file output: nothing half-written ever appears under the final name.

Writers go to a temporary file in the target directory and are renamed over the target
only after a successful close (``os.replace`` is atomic on POSIX). The file gets the
permissions a plain write would give it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from collections.abc import Iterator
from typing import IO, Any


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w",
                keep_partial: bool = False) -> Iterator[IO[Any]]:
    """Open a temporary sibling of ``path`` for writing; rename it to ``path`` on success.

    With ``keep_partial``, an interrupt (Ctrl-C) also renames what was written so far: for
    record-per-line outputs whose writer flushes only whole records.
    """
    path = os.fspath(path)
    if os.path.isdir(path):  # found now, not at the rename after all the work
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=directory)
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as handle:
            os.fchmod(fd, _permissions(path))
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except KeyboardInterrupt:
        if keep_partial:
            os.replace(tmp, path)
        else:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _permissions(path: str) -> int:
    """The mode a plain ``open(path, "w")`` would leave: an existing file's own, a new
    file's 0o666 less the umask (``mkstemp`` creates its file 0o600, which would make every
    output private to its writer)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~current_umask()


def current_umask() -> int:
    """The process's umask: from ``/proc/self/status`` where Linux shows it (reading it
    leaves it alone, so other threads never see a zero umask), else by setting it and
    putting it straight back."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    umask = os.umask(0)
    os.umask(umask)
    return umask


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write one JSON document atomically (UTF-8, no ASCII escaping, trailing newline)."""
    with atomic_open(path) as handle:
        json.dump(obj, handle, ensure_ascii=False)
        handle.write("\n")
