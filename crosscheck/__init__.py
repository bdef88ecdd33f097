"""rfcircuits.crosscheck: everything that checks the native engines' answers, grouped by role.

- :mod:`~rfcircuits.crosscheck.api`: :func:`verify` and :func:`crosscheck` for Python;
  :mod:`~rfcircuits.crosscheck.verify` (``rfcircuits verify``), :mod:`~rfcircuits.crosscheck.corpus`
  (the golden corpus) and :mod:`~rfcircuits.crosscheck.pytest_plugin` (the pytest plugin).
- :mod:`rfcircuits.crosscheck.oracles`: the independent oracles (brute force, OBDDs, SAT).
- :mod:`rfcircuits.crosscheck.differential`: the harness that compares the engines with the
  oracles, random forests, fuzzing, shrinking, mutation and the worked examples.
- :mod:`rfcircuits.crosscheck.peers`: other explainers graded against their promises
  (``verify-peer``, ``fuzz --adapter``), and their adapters.
- :mod:`rfcircuits.crosscheck.campaigns`: where a long job's tasks run (local processes, Dask).

The package is also callable: ``rfcircuits.crosscheck(forest, instances, ...)`` is
:func:`rfcircuits.crosscheck.api.crosscheck` (import that name in type-checked code: a type
checker takes a module for not callable). A module attribute could not bear the name,
which the package has.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _CallablePackage(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from rfcircuits.crosscheck.api import crosscheck

        return crosscheck(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
