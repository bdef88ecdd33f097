"""Shared test helpers: model sets of circuits as world bitmasks of the brute-force oracle."""

from __future__ import annotations

import operator
from functools import reduce

from core.nnf import NNF
from crosscheck.brute import BruteForce


def nnf_worlds(nnf: NNF, roots: list[int], brute: BruteForce) -> list[int]:
    """Model set (bitmask over the brute force's worlds) of each root."""
    return nnf.fold(roots, lambda v: brute.all if v else 0, brute.literal_worlds,
                    lambda xs: reduce(operator.and_, xs), lambda xs: reduce(operator.or_, xs))
