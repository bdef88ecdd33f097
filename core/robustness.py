"""Robustness of a decision and its shortest flips (paper Alg. 5–7; docs/semantics.md §9).

- :func:`robustness` is Alg. 5 on the complete reason (monotone, or-decomposable): for each
  NNF node the length ``r`` of its shortest prime implicates and the set ``V`` of their
  feature sets — ``true``: (∞, ∅); ``false``: (0, {∅}); a literal: (1, {{X}}); ∧: the smaller
  ``r`` (both ``V`` on a tie); ∨: ``r1 + r2`` and pairwise unions. One pass, linear.
- :func:`shortest_sets` reads the same ``(r, V)`` off the NRs: a flip changes the features
  of some NR (it violates the NR), and each NR's features can be changed into a flip, so
  ``r`` is the size of the shortest NRs and ``V`` their feature sets (the paper's
  Proposition on shortest NRs).
- :func:`shortest_gnrs` is Alg. 6–7: the GNRs on the feature sets ``V`` (see
  :mod:`rfcircuits.general`).
- :func:`flips` enumerates the concrete shortest flips: the violations of the shortest GNRs
  (worlds equal to the instance outside the clause's features and outside every literal on
  them); by the paper's Lemma/Proposition these are exactly the worlds at distance ``r``
  outside the class.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from rfcircuits.general import gnrs
from rfcircuits.nnf import AND, CONST, LIT, NNF, TRUE
from rfcircuits.primes import minimal
from rfcircuits.terms import Clause

INFINITY = float("inf")


def robustness(nnf: NNF, cr: int) -> tuple[int | None, list[int]]:
    """Alg. 5: ``(r, V)`` of the complete reason; ``r`` is None when no flip exists."""
    value: dict[int, tuple[float, list[int]]] = {}
    for n in nnf.reachable([cr]):
        kind, args = nnf.kind[n], nnf.args[n]
        if kind == CONST:
            value[n] = (INFINITY, []) if n == TRUE else (0, [0])
        elif kind == LIT:
            value[n] = (1, [1 << args[0]])
        elif kind == AND:
            best = min(value[c][0] for c in args)
            value[n] = (best, minimal(v for c in args if value[c][0] == best for v in value[c][1]))
        else:
            r, sets = value[args[0]]
            for c in args[1:]:
                r2, sets2 = value[c]
                r, sets = r + r2, minimal(a | b for a in sets for b in sets2)
            value[n] = (r, sets)
    r, sets = value[cr]
    return (None, []) if r == INFINITY else (int(r), sets)


def shortest_sets(nr_sets: Sequence[int]) -> tuple[int | None, list[int]]:
    """``(r, V)`` from the feature sets of all NRs; ``r`` is None when there is none."""
    if not nr_sets:
        return None, []
    r = min(v.bit_count() for v in nr_sets)
    return r, [v for v in nr_sets if v.bit_count() == r]


def shortest_gnrs(nnf: NNF, gr: int, shortest: Sequence[int], full: Sequence[int]) -> list[Clause]:
    """Alg. 6–7: all shortest GNRs, given Alg. 5's feature sets ``V``."""
    return gnrs(nnf, gr, shortest, full) if shortest else []


def flips(x: Sequence[int], clauses: Sequence[Clause], full: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Every violation of the given clauses: the shortest flips when given the shortest GNRs.

    Violations of different shortest GNRs are distinct worlds when their feature sets differ;
    a world violating two GNRs on the same features is yielded once.
    """
    seen: set[tuple[int, ...]] = set()
    for clause in clauses:
        choices = [[s for s in range(full[f].bit_length()) if not m >> s & 1] for f, m in clause]
        for states in itertools.product(*choices):
            w = list(x)
            for (f, _), s in zip(clause, states):
                w[f] = s
            world = tuple(w)
            if world not in seen:
                seen.add(world)
                yield world
