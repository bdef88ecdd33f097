"""Complete and general reasons by their closed forms on decision graphs (SPEC §3).

For a weak test-once decision graph and an instance ``x``, at a node on ``X`` with branches
``(S_k, T_k)``:

- ``x[X] ∈ S_{k*}``: ``CR = CR(T_{k*}) ∧ ({x[X]} ∨ ∧_{k≠k*} CR(T_k))`` and
  ``GR = GR(T_{k*}) ∧ ∧_{k≠k*} (complement(S_k) ∨ GR(T_k))``;
- ``x[X]`` not feasible at the node: ``CR = ∧_k CR(T_k)``, ``GR = ∧_k (complement(S_k) ∨ GR(T_k))``;
- leaves: true / false.

Both reasons distribute over ∧, so a conjunction of graphs (Alg. 3B) gives the conjunction of
their reasons. One bottom-up pass over the nodes below the roots (ascending ids are a
topological order) builds the reason as a hash-consed NNF: time linear in the graphs.

The CR is monotone and or-decomposable: below a branch ``k ≠ k*`` the state ``x[X]`` is not
feasible, so those subgraphs yield no ``X`` literal. The GR is locally fixated (every literal
contains the instance's state) and, on test-once graphs (every ordered graph), or-decomposable
too; :func:`general_reason` reports whether it is.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.dgraph import FALSE as DG_FALSE
from core.dgraph import TRUE as DG_TRUE
from core.dgraph import DG
from core.nnf import FALSE, TRUE, NNF


def complete_reason(dg: DG, roots: Sequence[int], x: Sequence[int], nnf: NNF) -> int:
    """The complete reason of ``∧ roots`` at ``x`` (which must satisfy it), as an NNF node."""
    value: dict[int, int] = {DG_FALSE: FALSE, DG_TRUE: TRUE}
    for n in dg.reachable(roots):
        if n <= DG_TRUE:
            continue
        f = dg.feature[n]
        bit = 1 << x[f]
        own = None
        others = []
        for mask, child in dg.branches[n]:
            if mask & bit:
                own = value[child]
            else:
                others.append(value[child])
        if own is None:  # x[X] is not feasible here
            value[n] = nnf.conj(others)
        else:
            value[n] = nnf.and2(own, nnf.or2(nnf.literal(f, bit), nnf.conj(others)))
    return nnf.conj(value[r] for r in roots)


def general_reason(dg: DG, roots: Sequence[int], x: Sequence[int], nnf: NNF) -> int:
    """The general reason of ``∧ roots`` at ``x``, as an NNF node."""
    value: dict[int, int] = {DG_FALSE: FALSE, DG_TRUE: TRUE}
    for n in dg.reachable(roots):
        if n <= DG_TRUE:
            continue
        f = dg.feature[n]
        bit = 1 << x[f]
        full = dg.full[f]
        parts = []
        for mask, child in dg.branches[n]:
            if mask & bit:
                parts.append(value[child])
            else:
                parts.append(nnf.or2(nnf.literal(f, full & ~mask), value[child]))
        value[n] = nnf.conj(parts)
    return nnf.conj(value[r] for r in roots)
