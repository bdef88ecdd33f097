"""The optional C extension ``rfcircuits._dgstore``; all other metadata is in pyproject.toml.

``pip install`` compiles ``core/_dgstore.c`` with the interpreter's C compiler. When that is
impossible (no compiler, no Python headers, ``CC=false``) the install still succeeds: the
package then runs on its pure-Python decision-graph store, much slower on large forests, and
the build prints one notice saying how to get the C store. ``rfcircuits --version`` names the
store in use.
"""

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
        """Say it once where the user sees it. pip shows a build's output only on failure or
        with ``-v``, so the notice goes to the terminal when there is one; otherwise it is a
        warning, which recent pip versions relay from the build (older ones with ``-v``)."""
        if isinstance(exc, CCompilerError):  # its text is the whole command line
            compiler = getattr(self.compiler, "compiler_so", None) or ["the C compiler"]
            reason = f"the C compiler {compiler[0]!r} failed on core/_dgstore.c"
        else:
            reason = " ".join(str(exc).split()) or type(exc).__name__
        text = NOTICE.format(error=reason)
        try:
            with open("/dev/tty", "w", encoding="utf-8") as tty:
                tty.write(text)
        except OSError:
            warnings.warn(text, stacklevel=1)


# -O2 after the interpreter's CFLAGS (often -O3): the NR search was measured faster at -O2
# (docs/decisions.md).
FLAGS = [] if sys.platform == "win32" else ["-O2"]

setup(
    ext_modules=[Extension("rfcircuits._dgstore", ["core/_dgstore.c"],
                           extra_compile_args=FLAGS)],
    cmdclass={"build_ext": OptionalBuildExt},
)
