"""Build and load the C decision-graph store ``core/_dgstore.c`` on first use.

The extension is compiled with the system C compiler (``$CC`` or sysconfig's ``CC``, with
sysconfig's ``CFLAGS`` and the interpreter's include directory) into a per-user cache,
``$XDG_CACHE_HOME/rfcircuits/`` or ``~/.cache/rfcircuits/``, under a name keyed by a hash of
the C source, the compile command and the interpreter's extension suffix (its ABI tag). It
works the same from a source tree and from an installed package (the ``.c`` file ships as
package data) and needs no build step at install time. Concurrent first uses (``fuzz --jobs``)
each compile into a private temporary file and rename it into place atomically, so a loader
never sees a partial file. Any failure raises :class:`NativeUnavailable`; :mod:`core.dgraph`
then falls back to the pure-Python store.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

SOURCE = Path(__file__).with_name("_dgstore.c")
MODULE = "core._dgstore"  # its last component names the init function, PyInit__dgstore


class NativeUnavailable(RuntimeError):
    """The C store could not be built or loaded (the message says why)."""


def cache_dir() -> Path:
    """The per-user directory holding compiled extensions."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rfcircuits"


def compile_command(source: Path, target: Path) -> list[str]:
    """The compiler invocation building ``source`` into the shared library ``target``."""
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    cflags = shlex.split(sysconfig.get_config_var("CFLAGS") or "")
    link = ["-bundle", "-undefined", "dynamic_lookup"] if sys.platform == "darwin" else ["-shared"]
    return [*cc, *cflags, "-O2", "-fPIC", *link, "-I", sysconfig.get_paths()["include"],
            str(source), "-o", str(target)]


def load() -> ModuleType:
    """The extension module, compiled first if the cache has no build of this source."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    try:
        code = SOURCE.read_bytes()
    except OSError as exc:
        raise NativeUnavailable(f"cannot read {SOURCE}: {exc}") from exc
    key = hashlib.sha256(code + "\0".join(compile_command(SOURCE, Path("out"))).encode()
                         + suffix.encode()).hexdigest()[:16]
    target = cache_dir() / f"_dgstore-{key}{suffix}"
    if not target.exists():
        _build(target)
    spec = importlib.util.spec_from_file_location(
        MODULE, target, loader=importlib.machinery.ExtensionFileLoader(MODULE, str(target)))
    if spec is None or spec.loader is None:
        raise NativeUnavailable(f"cannot load {target}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:
        raise NativeUnavailable(f"cannot load {target}: {exc}") from exc
    return module


def _build(target: Path) -> None:
    """Compile into a temporary file next to ``target``, then rename it into place."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".build-", suffix=target.suffix, dir=target.parent)
        os.close(fd)
    except OSError as exc:
        raise NativeUnavailable(f"cannot write to {target.parent}: {exc}") from exc
    try:
        try:
            done = subprocess.run(compile_command(SOURCE, Path(tmp)), capture_output=True,
                                  text=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as exc:
            raise NativeUnavailable(f"cannot run the C compiler: {exc}") from exc
        if done.returncode != 0:
            first = (done.stderr.strip().splitlines() or ["no message"])[0]
            raise NativeUnavailable(f"the C compiler failed: {first}")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
