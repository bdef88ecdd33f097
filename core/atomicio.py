"""The output rules every command that writes follows (docs/development.md, "Outputs, signals
and exit codes").

- A regular file (or a path that does not exist yet) is replaced atomically, and only by a
  complete result: the writer fills a temporary file in the same directory, which is renamed
  over the target after a successful close. A symbolic link is written through: the file it
  points to is replaced, the link stays.
- Anything else — a device such as ``/dev/null``, a FIFO, a socket, ``-`` for standard output
  — is written to directly, as a stream, and never replaced.
- A missing parent directory is an error naming it; directories are never created on the way
  (an output *directory* such as ``compile --out DIR`` is created itself, not its parents).
- Record outputs (JSON Lines, one result per line) are written to a visible partial file
  ``TARGET.partial`` as each record is finished, one ``write`` per record, and renamed to the
  target at the end. When a run stops early (a signal, a full disk, an error), the partial file
  keeps the finished records, the previous target stays untouched, and ``--resume`` continues
  from the partial file.

Temporary files of whole documents are anonymous (Linux ``O_TMPFILE``) where the file system
allows, so that SIGKILL leaves no temporary file behind: a new target is linked in place
directly, and only a replaced one needs the temporary file named for the two system calls of
the rename. A temporary file's name (``.tmp-PID.HOST-…``) says which process wrote it; one
that a killed process left (SIGKILL in those two calls, or anywhere where the file system
has no anonymous files) is removed by the next write into its directory on the same machine.
Files get the permissions a plain write would give them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import stat
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any

try:
    import fcntl
except ImportError:  # not POSIX: no lock
    fcntl = None  # type: ignore[assignment]

from rfcircuits.errors import InputError

#: Suffix of the file that holds a record output's finished records until it is complete.
PARTIAL = ".partial"


def _target(path: str) -> tuple[str, bool]:
    """``(real path, is a stream)`` of an output path; errors for directories and missing
    parent directories."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise InputError(f"{path}: a parent of this path is not a directory") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise InputError(f"{path}: is a directory, expected a file")
    if st is not None and not stat.S_ISREG(st.st_mode):
        return path, True
    real = os.path.realpath(path)  # through symbolic links: replace the file, keep the link
    parent = os.path.dirname(real)
    if not os.path.isdir(parent):
        raise InputError(f"{path}: directory {parent} does not exist")
    return real, False


def check_output(path: str | os.PathLike[str]) -> None:
    """Refuse an output path that cannot be written (a directory, a missing parent) before
    the work, not after it."""
    if os.fspath(path) != "-":
        _target(os.fspath(path))


def output_dir(path: str | os.PathLike[str], create: bool = True) -> str:
    """Make sure the output directory ``path`` exists: created if missing (with ``create``;
    else only checked for being creatable), but not its parents (a typo in a parent is an
    error naming it, not a new tree of directories)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        return path
    if os.path.exists(path):
        raise InputError(f"{path}: exists and is not a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise InputError(f"{path}: directory {parent} does not exist")
    if create:
        with _naming(path):
            os.mkdir(path)
    return path


@contextlib.contextmanager
def _naming(path: str) -> Iterator[None]:
    """OS errors without a file name (a write on a full disk) name ``path``."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror, path) from exc
        raise


#: The machine's part of temporary names: a process of another machine sharing the directory
#: is never taken for a dead one of this machine.
_HOST = f"{zlib.crc32(socket.gethostname().encode()):08x}"
_TEMPORARY = re.compile(r"\.tmp-(\d+)\.([0-9a-f]{8})-")
_swept: set[str] = set()


def _prefix() -> str:
    return f".tmp-{os.getpid()}.{_HOST}-"


def _sweep(directory: str) -> None:
    """Remove the temporary files that killed processes of this machine left in
    ``directory``; once per directory and process."""
    if directory in _swept:
        return
    _swept.add(directory)
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            match = _TEMPORARY.match(entry.name)
            if match and match[2] == _HOST and not _alive(int(match[1])):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


class _Temporary:
    """A file for the new contents of ``real``, in its directory: anonymous where the file
    system supports it (nothing to clean up after a kill), else a hidden named file."""

    def __init__(self, real: str) -> None:
        self.directory, self.base = os.path.split(real)
        self.name: str | None = None
        self.fd = self.dir_fd = -1
        _sweep(self.directory)
        if hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                self.fd = os.open(self.directory, os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC,
                                  0o600)
                self.dir_fd = os.open(self.directory, os.O_RDONLY | os.O_CLOEXEC)
        if self.fd < 0:
            try:
                self.fd, self.name = tempfile.mkstemp(prefix=_prefix(), suffix="-" + self.base,
                                                      dir=self.directory)
            except OSError as exc:  # named after the target, not a temporary name
                raise OSError(exc.errno, exc.strerror, real) from None

    def publish(self, real: str) -> None:
        """Rename the (still open) file over ``real``; an anonymous one is linked as ``real``
        itself when there is nothing to replace."""
        if self.name is None:
            # Given a src_dir_fd, os.link calls linkat with AT_SYMLINK_FOLLOW: the /proc entry
            # is followed to the anonymous file instead of being linked itself.
            anonymous = f"/proc/self/fd/{self.fd}"
            with contextlib.suppress(FileExistsError):
                os.link(anonymous, real, src_dir_fd=self.dir_fd)
                return
            # named before it exists: a signal right after the link still finds it to remove
            self.name = os.path.join(self.directory,
                                     f"{_prefix()}{os.urandom(6).hex()}-{self.base}")
            os.link(anonymous, self.name, src_dir_fd=self.dir_fd)
        os.replace(self.name, real)
        self.name = None

    def discard(self) -> None:
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1
        if self.name is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.name)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """Open ``path`` for one whole document under the output rules (module docstring): a
    temporary file renamed over a regular target when the block succeeds, the stream itself
    for ``-`` and for devices, FIFOs and sockets."""
    path = os.fspath(path)
    encoding = None if "b" in mode else "utf-8"
    if path == "-":
        stream = sys.stdout.buffer if "b" in mode else sys.stdout
        yield stream
        stream.flush()
        return
    real, is_stream = _target(path)
    if is_stream:
        with _naming(path), open(path, mode, encoding=encoding) as handle:
            yield handle
        return
    with _naming(path):
        temp = _Temporary(real)
    try:
        with _naming(path), os.fdopen(temp.fd, mode, encoding=encoding, closefd=True) as handle:
            os.fchmod(temp.fd, _permissions(real))
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
            temp.publish(real)
    finally:
        temp.discard()


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write one JSON document under the output rules (UTF-8, no ASCII escaping, trailing
    newline)."""
    with atomic_open(path) as handle:
        json.dump(obj, handle, ensure_ascii=False)
        handle.write("\n")


class Records:
    """A record output (:func:`record_output`): ``write(line)`` adds one finished record;
    ``resumed`` holds the records a resumed run found already finished."""

    def __init__(self, fd: int, stream: IO[str] | None, resumed: list[str], size: int) -> None:
        self._fd = fd
        self._stream = stream
        self.resumed = resumed
        #: Bytes of whole records written so far (a failed write is cut back to this).
        self.size = size
        #: Records finished so far, resumed ones included.
        self.count = len(resumed)

    def write(self, line: str) -> None:
        """Append one record, a line ending with a newline, in one write where possible."""
        if self._stream is not None:
            self._stream.write(line)
            self._stream.flush()
            return
        data = memoryview(line.encode("utf-8"))
        done = 0
        try:
            while done < len(data):
                done += os.write(self._fd, data[done:])
        except BaseException:  # no part of a record stays behind
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self.size)
            raise
        self.size += done
        self.count += 1


@contextlib.contextmanager
def record_output(path: str | os.PathLike[str] | None, resume: bool = False,
                  accept: Callable[[list[str]], None] | None = None,
                  what: str = "records") -> Iterator[Records]:
    """A JSON Lines output under the output rules: standard output (``None`` or ``-``) and
    non-regular files are streamed to; a regular target is written through ``TARGET.partial``
    (module docstring). With ``resume``, the finished records of an earlier partial file are
    kept (a final line cut by a kill is dropped) after ``accept(lines)`` has checked that they
    belong to this run (it raises :class:`InputError` if not). ``what`` names the records in
    the message that reports a kept partial file."""
    path = "-" if path is None else os.fspath(path)
    real, is_stream = (path, True) if path == "-" else _target(path)
    if is_stream:
        if resume:
            raise InputError("--resume needs --out FILE (a regular file): a stream cannot be "
                             "resumed")
        with atomic_open(path) as handle:  # a stream: written to as it is
            yield Records(-1, handle, [], 0)
        return
    partial = real + PARTIAL
    existed = os.path.exists(partial)
    fd = -1
    records = None
    refused = False
    try:  # from the partial file's creation on: a signal anywhere leaves nothing astray
        with _naming(partial):
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            _lock(fd, partial, path)
        except InputError:
            refused = True
            raise
        if resume:
            resumed, size = _resumed(partial, accept)
        else:
            resumed, size = [], 0
            if existed:
                print(f"note: starting over; replacing the partial file {partial} of an earlier "
                      "run (--resume continues it instead)", file=sys.stderr)
        records = Records(fd, None, resumed, size)
        with _naming(partial):
            os.ftruncate(fd, size)
            os.lseek(fd, size, os.SEEK_SET)
            os.fchmod(fd, _permissions(real))
        with _naming(path):
            yield records
            os.fsync(fd)
            os.replace(partial, real)
            records.size = -1  # complete: a signal from now on has nothing to keep
    except BaseException:
        if records is not None and records.size > 0:
            kept = f"the previous {path} is untouched; " if os.path.exists(real) else ""
            print(f"{records.count} finished {what} kept in {partial} ({kept}--resume "
                  "continues from them)", file=sys.stderr)
        elif records.size == 0 if records is not None else not (existed or refused):
            # nothing finished (a signal may even come before ``fd`` is set); a partial file
            # this run did not take over (another run's, one --resume refused) stays
            with contextlib.suppress(OSError):
                os.unlink(partial)
        raise
    finally:
        if fd >= 0:
            os.close(fd)


def _lock(fd: int, partial: str, path: str) -> None:
    """One run at a time writes a target: a second one would interleave its records."""
    if fcntl is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise InputError(f"{path}: another run is writing it now (it holds {partial})") from None


def _resumed(partial: str, accept: Callable[[list[str]], None] | None) -> tuple[list[str], int]:
    """The whole lines of an earlier partial file and their size in bytes (none if there is
    no partial file)."""
    try:
        with open(partial, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise InputError(f"{partial}: cannot read ({exc.strerror})") from None
    if not data:
        print(f"note: no partial file {partial}; starting from the beginning", file=sys.stderr)
    size = data.rfind(b"\n") + 1  # a line cut by a kill mid-write is not a finished record
    try:
        lines = data[:size].decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise InputError(f"{partial}: not a partial file of rfcircuits (not UTF-8)") from None
    if accept is not None:
        accept(lines)
    return lines, size


def _permissions(path: str) -> int:
    """The mode a plain ``open(path, "w")`` would leave: an existing file's own, a new
    file's 0o666 less the umask (temporary files are created 0o600, which would make every
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
