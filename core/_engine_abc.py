"""The interface of an explanation engine, which :class:`rfcircuits.explain.Explainer` (the
facade) uses; declared as the decision-graph store's is in ``_store_abc.py``.

Two engines implement it and must agree on every field both answer completely:

- :class:`rfcircuits.graphengine.GraphEngine` (``"graphs"``): the class formulas as decision
  graphs (paper Alg. 3B, 3A, 4); every field, always complete, where the graphs fit;
- :class:`rfcircuits.satengine.SatEngine` (``"sat"``): SAT calls on the NNF class formulas
  (paper Alg. 1–3); every forest, fields cut short at per-instance limits say so, GSRs and
  GNRs not computed.

Both take instances as state indices (one per feature, in feature order) and return
:class:`rfcircuits.explanation.Explanation` records naming themselves in ``engine``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from rfcircuits.explanation import Explanation
from rfcircuits.forest import Forest, Instance


@dataclass
class Timings:
    """Seconds spent per stage of the ``explain_states`` calls given them."""

    reasons: float = 0.0
    sr: float = 0.0
    nr: float = 0.0
    gsr: float = 0.0
    gnr: float = 0.0
    robust: float = 0.0
    flips: float = 0.0
    compile: float = 0.0
    ce: float = 0.0
    ce_targets: int = 0


@runtime_checkable
class Engine(Protocol):
    """Compiles a forest's class formulas once, then explains instances."""

    #: The engine's name, as explanations record it.
    name: str
    forest: Forest
    ties: str

    def compile(self, negated: bool = False) -> None:
        """Compile now what the first explanation would (with ``negated``, also what
        contrastive explanations need), so that timings and forked workers see it done."""

    def explain_states(self, x: Instance, what: Sequence[str] = ...,
                       timings: Timings | None = None) -> Explanation:
        """The fields ``what`` (``--what`` keys) of the explanation of ``x``."""
