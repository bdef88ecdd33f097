"""Comparator operations: what the vote comparisons build their circuits with.

The same comparison plans (odd-even networks, :mod:`rfcircuits.sortnet`; totalizers,
:mod:`rfcircuits.totalizer`; soft votes' diagrams and binary sums, :mod:`rfcircuits.pbdd` and
:mod:`rfcircuits.binarysum`) drive NNF circuits (:mod:`rfcircuits.classformula`) and decision
graphs (:mod:`rfcircuits.dgcompile`): each is generic over an :class:`Ops`. A module of its
own, so that the constructions and the class formulas that call them import it and not
each other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Ops(Generic[T]):
    """Comparator operations: ``max`` is ∨, ``min`` is ∧, ``false`` pads the network."""

    max: Callable[[T, T], T]
    min: Callable[[T, T], T]
    false: T
    #: ``threshold(inputs, ks)``: per ``k``, "at least ``k`` inputs are true" in one operation
    #: (decision graphs: :meth:`rfcircuits.dgraph.DG.threshold`), for ``counter="topdown"``.
    threshold: Callable[[list[T], list[int]], list[T]] | None = None
    #: ``check()``, called every so often by constructions whose steps may create no node
    #: for long (soft votes' diagrams, :func:`rfcircuits.pbdd.at_least`): it raises once the
    #: compile's time is up (decision graphs: :meth:`rfcircuits.dgraph.DG.check_budget`).
    check: Callable[[], None] | None = None


#: A comparison ``[Σ_t d_t >= K]`` per need
#: (:func:`rfcircuits.classformula.soft_pair_outputs`).
Compare = Callable[[Sequence[Sequence[int]], Sequence[Sequence[T]], Sequence[int], Ops[T], T],
                   list[T]]
