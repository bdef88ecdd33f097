"""Minimality over threshold conditions: the subset-minimality PyXAI and most SAT explainers
promise, which the grading of peers (:mod:`rfcircuits.crosscheck.peers.promises`) and its two
views of a peer's model (:mod:`rfcircuits.crosscheck.peers.modelling`,
:mod:`rfcircuits.crosscheck.peers.unreachable`) all ask of a term.

Cost: one SAT call per threshold condition of the term (at most two per literal).
"""

from __future__ import annotations

from collections.abc import Iterable

from rfcircuits.forest import Forest, Instance
from rfcircuits.terms import Term
from rfcircuits.crosscheck.oracles.sat import SatOracle


def one_sided_widenings(forest: Forest, term: Term) -> Iterable[tuple[Term, str]]:
    """The terms with one threshold condition of ``term`` dropped, with a description: a
    literal holding the run of states ``a..b`` of a numeric feature is ``x > t_a`` and
    ``x <= t_{b+1}``, and dropping one opens that side; a categorical literal (or a numeric
    one that is no run) is one condition, dropped whole."""
    for k, (f, mask) in enumerate(term):
        feature = forest.features[f]
        rest = term[:k] + term[k + 1:]
        low, high = (mask & -mask).bit_length() - 1, mask.bit_length() - 1
        run = mask == ((1 << (high + 1)) - 1) & ~((1 << low) - 1)
        if feature.thresholds is None or not run:
            yield rest, f"{feature.name}'s condition"
            continue
        for wide, side in (((1 << (high + 1)) - 1, "lower"),
                           (feature.full & ~((1 << low) - 1), "upper")):
            if wide == mask:
                continue
            yield (rest if wide == feature.full else
                   rest[:k] + ((f, wide),) + rest[k:]), f"{feature.name}'s {side} bound"


def condition_minimal(sat: SatOracle, forest: Forest, x: Instance,
                      term: Term) -> tuple[bool, Term | None, str]:
    """Whether no threshold condition of a term that implies Δ can be dropped (PyXAI's and
    most SAT explainers' subset-minimality); otherwise the smaller term that still implies Δ
    and which condition went."""
    for smaller, what in one_sided_widenings(forest, term):
        if sat.check_sr(x, smaller)["sufficient"]:
            return False, smaller, what
    return True, None, ""
