"""The ``rfcircuits`` command line and the tools behind it: training from CSV files,
benchmarks, the paper's tables and the demo.

This layer sits on top: it imports the library (:mod:`rfcircuits`) and the oracles
(:mod:`rfcircuits.crosscheck`); neither of them ever imports it.
"""

from rfcircuits.cli.main import entry, main

__all__ = ["entry", "main"]
