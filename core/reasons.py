"""Complete and general reasons by their closed forms on decision graphs (docs/semantics.md §4).

For a weak test-once decision graph and an instance ``x``, at a node on ``X`` with branches
``(S_k, T_k)``:

- ``x[X] ∈ S_{k*}``: ``CR = CR(T_{k*}) ∧ ({x[X]} ∨ ∧_{k≠k*} CR(T_k))`` and
  ``GR = GR(T_{k*}) ∧ ∧_{k≠k*} (complement(S_k) ∨ GR(T_k))``;
- ``x[X]`` not feasible at the node: ``CR = ∧_k CR(T_k)``, ``GR = ∧_k (complement(S_k) ∨ GR(T_k))``;
- leaves: true / false.

Both reasons distribute over ∧, so a conjunction of graphs (Alg. 3B) gives the conjunction of
their reasons. CR is built by one bottom-up pass over the nodes below the roots, GR by a
depth-first walk from the roots (which can leave out the branches whose clauses are not
needed, see :func:`general_reason`), each as a hash-consed NNF: time linear in the graphs.

The CR is monotone and or-decomposable: below a branch ``k ≠ k*`` the state ``x[X]`` is not
feasible, so those subgraphs yield no ``X`` literal. The GR is locally fixated (every literal
contains the instance's state) and, on test-once graphs (every ordered graph), or-decomposable
too (:meth:`rfcircuits.nnf.NNF.is_or_decomposable` tells).
"""

from __future__ import annotations

from collections.abc import Sequence

from rfcircuits.dgraph import FALSE as DG_FALSE
from rfcircuits.dgraph import TRUE as DG_TRUE
from rfcircuits.dgraph import DG
from rfcircuits.nnf import FALSE, TRUE, NNF


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


def general_reason(dg: DG, roots: Sequence[int], x: Sequence[int], nnf: NNF,
                   within: Sequence[int] | None = None) -> int:
    """The general reason of ``∧ roots`` at ``x``, as an NNF node.

    With ``within`` (feature sets), only the part of it whose clauses fit one of them. The
    closed form's CNF has one clause per path to false: the literals of the branches it takes
    away from ``x`` (on the features where ``x`` deviates). A walk from the roots that keeps
    the features deviated so far leaves a branch out once they fit no set of ``within``
    (features only accumulate), so what it builds is the conjunction of exactly the clauses
    that fit — what Alg. 6 keeps — and it visits only the nodes such paths reach (once per
    set of deviated features that fits, so at most the graph times those sets). Without
    ``within`` nothing is left out and the deviated features are not kept (always 0)."""
    sets = None if within is None else list(dict.fromkeys(within))
    fitting: dict[int, bool] = {}

    def fits(features: int) -> bool:
        ok = fitting.get(features)
        if ok is None:
            ok = fitting[features] = any(features & ~u == 0 for u in sets or ())
        return ok

    def operands(n: int, deviated: int) -> list[tuple[int, int, int]]:
        """``(state mask, child, deviated below)`` of each branch of ``n`` kept (a branch to
        true adds no clause)."""
        f = dg.feature[n]
        bit = 1 << x[f]
        away = 0 if sets is None else deviated | 1 << f
        leave = sets is None or fits(away)
        return [(mask, child, deviated) if mask & bit else (mask, child, away)
                for mask, child in dg.branches[n]
                if child != DG_TRUE and (leave or mask & bit)]

    value: dict[tuple[int, int], int] = {}
    kept: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    stack = [(r, 0) for r in roots]
    while stack:
        key = stack[-1]
        n, deviated = key
        if key in value:
            stack.pop()
        elif n <= DG_TRUE:
            value[key] = FALSE if n == DG_FALSE else TRUE
            stack.pop()
        else:
            if key not in kept:
                kept[key] = operands(n, deviated)
                missing = [(c, d) for _, c, d in kept[key] if (c, d) not in value]
                if missing:
                    stack.extend(missing)
                    continue
            stack.pop()
            f = dg.feature[n]
            bit = 1 << x[f]
            value[key] = nnf.conj(value[c, d] if m & bit else
                                  nnf.or2(nnf.literal(f, dg.full[f] & ~m), value[c, d])
                                  for m, c, d in kept.pop(key))
    return nnf.conj(value[r, 0] for r in roots)
