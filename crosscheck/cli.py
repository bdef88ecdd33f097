"""The ``rfcircuits`` console script: the native engine's commands plus the oracles' ones.

Native commands (train, compile, explain, demo, bench) come from :mod:`core.cli`; this layer
adds the commands that need the oracles (crosscheck, fuzz, verify, corpus, mutate). It lives
in ``crosscheck`` because ``core`` never imports ``crosscheck``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from core import __version__
from core.cli import add_commands, run


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rfcircuits",
        description="Random forests as circuits, formal explanations, independent oracles.")
    parser.add_argument("--version", action="version", version=f"rfcircuits {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (SPEC §6: 0 ok, 1 disagreement, 2 bad input)."""
    args = build_parser().parse_args(argv)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
