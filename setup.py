"""The optional C extension ``rfcircuits._dgstore``; all other metadata is in pyproject.toml.

``pip install`` compiles ``core/_dgstore.c`` with the interpreter's C compiler. When that is
impossible (no compiler, no Python headers, ``CC=false``) the install still succeeds: the
package then runs on its pure-Python decision-graph store, much slower on large forests, and
the build prints one notice saying how to get the C store. ``rfcircuits --version`` names the
store in use.
"""

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, ExecError, PlatformError

NOTICE = """
==========================================================================================
rfcircuits: the C extension could not be built ({error}).
rfcircuits is installed with its pure-Python decision-graph store: every answer is the same,
but compiling large forests is 10-50x slower. To get the C store, install a C compiler and the
Python headers (Debian/Ubuntu: apt install gcc python3-dev; macOS: xcode-select --install),
then reinstall: pip install --force-reinstall --no-deps --no-cache-dir rfcircuits
==========================================================================================
"""


class OptionalBuildExt(build_ext):
    """``build_ext`` that turns a failed compile into the notice above instead of an error."""

    def run(self) -> None:
        try:
            super().run()
        except (CCompilerError, ExecError, PlatformError, OSError) as exc:
            self._notice(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except (CCompilerError, ExecError, PlatformError, OSError) as exc:
            self._notice(exc)

    @staticmethod
    def _notice(exc: Exception) -> None:
        error = " ".join(str(exc).split()) or type(exc).__name__
        print(NOTICE.format(error=error), file=sys.stderr, flush=True)


# -O2 after the interpreter's CFLAGS (often -O3): the NR search was measured faster at -O2
# (docs/decisions.md).
FLAGS = [] if sys.platform == "win32" else ["-O2"]

setup(
    ext_modules=[Extension("rfcircuits._dgstore", ["core/_dgstore.c"],
                           extra_compile_args=FLAGS)],
    cmdclass={"build_ext": OptionalBuildExt},
)
