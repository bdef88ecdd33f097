"""The optional C extension ``rfcircuits._dgstore``; all other metadata is in pyproject.toml.

``pip install`` compiles ``core/_dgstore.c`` with the interpreter's C compiler. When that is
impossible (no compiler, no Python headers, ``CC=false``) the install still succeeds: the
package then runs on its pure-Python decision-graph store, much slower on large forests, and
the build prints one notice saying how to get the C store. ``rfcircuits --version`` names the
store in use.
"""

import glob
import os
import stat
import sys
import warnings

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError

NOTICE = """
==========================================================================================
rfcircuits: the C extension could not be built ({error}).
rfcircuits is installed with its pure-Python decision-graph store: every answer is the same, but
compiling large forests takes 20 times as long or more. To get the C store, install a C
compiler and the Python headers (Debian/Ubuntu: apt install gcc python3-dev; macOS:
xcode-select --install), then run the same pip install again with --force-reinstall --no-deps
--no-cache-dir.
==========================================================================================
"""


class OptionalBuildExt(build_ext):
    """``build_ext`` that turns a failed compile into the notice above instead of an error."""

    def run(self) -> None:
        try:
            super().run()
        except (CCompilerError, ExecError, PlatformError, OSError) as exc:  # no compiler at all
            self._notice(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except (CCompilerError, ExecError, PlatformError, OSError) as exc:
            self._notice(exc)

    def _notice(self, exc: Exception) -> None:
        """Say it once where the user sees it. pip shows a build's output only when the build
        fails (or with ``-v``), so the notice is written to pip's own stderr when that is a
        terminal or a pipe, else to the terminal; failing both (pip's output goes to a file and
        there is no terminal) it is a warning, which recent versions of pip print."""
        if isinstance(exc, CCompilerError):  # its text is the whole command line
            compiler = getattr(self.compiler, "compiler_so", None) or ["the C compiler"]
            reason = f"the C compiler {compiler[0]!r} failed on core/_dgstore.c"
        else:
            reason = " ".join(str(exc).split()) or type(exc).__name__
        text = NOTICE.format(error=reason)
        for path in (f"/proc/{os.getppid()}/fd/2", "/dev/tty"):  # the first: Linux only
            try:
                if stat.S_ISREG(os.stat(path).st_mode):
                    continue  # a log file: pip's next writes, at its own offset, would overwrite
                with open(path, "a", encoding="utf-8") as out:
                    out.write(text)
                return
            except OSError:
                continue
        warnings.warn(text, stacklevel=1)


# -O2 after the interpreter's CFLAGS (often -O3): the NR search was measured faster at -O2
# (docs/decisions.md).
FLAGS = [] if sys.platform == "win32" else ["-O2"]

setup(
    ext_modules=[Extension("rfcircuits._dgstore", ["core/_dgstore.c"],
                           depends=sorted(glob.glob("core/c-store/*")),
                           extra_compile_args=FLAGS)],
    cmdclass={"build_ext": OptionalBuildExt},
)
