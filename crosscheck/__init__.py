"""rfcircuits.crosscheck: the independent oracles (brute force, OBDDs, SAT), the harness that
compares the native engines with them, fuzzing, the golden corpus, the verifier of other
tools' explanations and the adapters that grade other explainers.

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
