"""General sufficient and necessary reasons: variable-minimal prime implicants and implicates
of the general reason (SPEC §3; Ji & Darwiche 2023; paper Alg. 6–7 and their Appendix).

The feature sets of the GSRs are exactly those of the SRs, and the feature sets of the GNRs
exactly those of the NRs (a prime implicant/implicate of GR mentions a superset of some
SR/NR feature set; each SR/NR set carries one). So both are computed with the target feature
sets ``allowed`` known in advance, and every intermediate term or clause whose features fit in
no allowed set is dropped — features only accumulate on the way up, so nothing dropped could
have contributed (paper Alg. 6, generalised from the shortest sets to any family).

- GNRs (:func:`gnrs`): Alg. 6 ``sCNF`` keeps the clauses of the CNF of GR whose features fit
  an allowed set; per allowed set ``v``, the clauses on exactly ``v`` are closed under discrete
  resolution with subsumption removal by *variable depletion* (Alg. 7): resolving two clauses
  locally fixated on the instance keeps their features, so GNRs on ``v`` come only from clauses
  on ``v``. With ``allowed`` = the shortest NR sets (Alg. 5's ``V``) this is exactly Alg. 7.
- GSRs (:func:`gsrs`): the dual, bottom-up over the or-decomposable GR: ∨ unites the children's
  prime implicants, ∧ conjoins them pairwise; the weakest survive. (On a GR that is not
  or-decomposable ∨ would need consensus; callers pass GRs of test-once graphs.)

Terms and clauses are tuples of ``(feature, state mask)`` sorted by feature (:mod:`core.terms`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from core.nnf import AND, CONST, LIT, NNF, OR, TRUE
from core.terms import Clause, Term, variables


def _subsets(allowed: Sequence[int]) -> set[int]:
    """Every subset of every allowed feature set: the feature sets that "fit"."""
    out: set[int] = set()
    for u in allowed:
        sub = u
        while True:
            out.add(sub)
            if sub == 0:
                break
            sub = (sub - 1) & u
    return out


def term_implies(a: Term, b: Term) -> bool:
    """``a ⊨ b`` for consistent terms: every literal of b contains a's literal on its feature.

    Both are sorted by feature, so one merge walk decides it."""
    j, na = 0, len(a)
    for f, m in b:
        while j < na and a[j][0] < f:
            j += 1
        if j == na or a[j][0] != f or a[j][1] & ~m:
            return False
    return True


def clause_implies(a: Clause, b: Clause) -> bool:
    """``a ⊨ b`` for non-valid clauses: every literal of a lies in b's literal on its feature."""
    j, nb = 0, len(b)
    for f, m in a:
        while j < nb and b[j][0] < f:
            j += 1
        if j == nb or b[j][0] != f or m & ~b[j][1]:
            return False
    return True


def weakest(terms: Iterable[Term]) -> list[Term]:
    """Terms implying no other one (duplicates removed)."""
    return _antichain(terms, lambda a, b: term_implies(b, a))


def strongest(clauses: Iterable[Clause]) -> list[Clause]:
    """Clauses implied by no other one (duplicates removed)."""
    return _antichain(clauses, clause_implies)


def _antichain(items: Iterable[Term], beats: Callable[[Term, Term], bool]) -> list[Term]:
    """Items no other item ``beats``, where ``beats(a, b)`` needs ``vars(a) ⊆ vars(b)``:
    for terms "b implies a" (a is weaker), for clauses "a implies b" (a is stronger).

    Items are grouped by feature set and visited by growing feature sets, so an item can
    only be beaten by one already kept on a subset, or by another on the same features."""
    groups: dict[int, list[Term]] = {}
    for t in dict.fromkeys(items):
        groups.setdefault(variables(t), []).append(t)
    kept: dict[int, list[Term]] = {}
    for v in sorted(groups, key=lambda u: (u.bit_count(), u)):
        same = groups[v]
        if len(same) > 1:
            same = [t for t in same if not any(o is not t and beats(o, t) for o in same)]
        below = [k for u, ks in kept.items() if u & ~v == 0 for k in ks]
        if below:
            same = [t for t in same if not any(beats(k, t) for k in below)]
        if same:
            kept[v] = same
    return [t for ts in kept.values() for t in ts]


def conjoin(a: Term, b: Term) -> Term | None:
    """The term ``a ∧ b``; None if contradictory."""
    out = dict(a)
    for f, m in b:
        if f in out:
            m &= out[f]
            if not m:
                return None
        out[f] = m
    return tuple(sorted(out.items()))


def disjoin(a: Clause, b: Clause, full: Sequence[int]) -> Clause | None:
    """The clause ``a ∨ b``; None if valid (a literal covers all its feature's states)."""
    out = dict(a)
    for f, m in b:
        m |= out.get(f, 0)
        if m == full[f]:
            return None
        out[f] = m
    return tuple(sorted(out.items()))


Family = tuple[int, ...]


def _restrict(family: Iterable[int], within: int) -> Family:
    """The maximal non-empty sets ``u ∩ within`` (a canonical memo key)."""
    parts = {u & within for u in family} - {0}
    return tuple(sorted(u for u in parts if not any(u != w and u & w == u for w in parts)))


def _bottom_up(nnf: NNF, root: int, allowed: Sequence[int], gate: int,
               const: Callable[[bool], list[Term]],
               lit: Callable[[int, int], Term],
               merge: Callable[[Term, Term], Term | None],
               tidy: Callable[[Iterable[Term]], list[Term]]) -> list[Term]:
    """Terms (or clauses) of ``root`` whose features fit a set of ``allowed``, bottom-up.

    ``gate`` is the connective that combines children pairwise with ``merge`` (∧ for prime
    implicants, ∨ for the CNF); the other connective unites its children's items. Each node
    is evaluated for the family of allowed sets that can still hold its items, cut down to its
    own features, which keeps most of a large reason unvisited:

    every literal of a reason contains the instance's state, so a non-constant node is
    satisfied by the instance, and in an or-decomposable reason it is not valid either. So its
    prime implicants and its CNF clauses all mention some of its features; a node whose
    features meet no allowed set has none that fit, and a gate node's items meet every child's
    features, so only allowed sets meeting all children count there. Runs on an explicit stack
    (reasons of long decision-graph paths are deep)."""
    value: dict[tuple[int, Family], list[Term]] = {}
    start = (root, _restrict(allowed, nnf.vars[root]) if nnf.kind[root] != CONST else ())
    stack = [start]
    while stack:
        key = stack[-1]
        if key in value:
            stack.pop()
            continue
        n, family = key
        kind, args = nnf.kind[n], nnf.args[n]
        if kind == CONST:
            value[key] = const(n == TRUE)
            stack.pop()
            continue
        if kind == LIT:
            value[key] = [lit(args[0], args[1])] if family else []
            stack.pop()
            continue
        if kind == gate:
            family = tuple(u for u in family if all(u & nnf.vars[c] for c in args))
        kids = [(c, _restrict(family, nnf.vars[c])) for c in args]
        missing = [k for k in kids if k[1] and k not in value]
        if missing:
            stack.extend(missing)
            continue
        stack.pop()
        if kind != gate:
            value[key] = tidy(t for k in kids if k[1] for t in value[k])
            continue
        fits = _subsets(family)
        acc = value[kids[0]] if kids[0][1] else []
        for k in kids[1:]:
            pairs = (merge(a, b) for a in acc for b in (value[k] if k[1] else ())
                     if variables(a) | variables(b) in fits)
            acc = tidy(t for t in pairs if t is not None)
        value[key] = acc
    return value[start]


def gsrs(nnf: NNF, root: int, allowed: Sequence[int]) -> list[Term]:
    """Variable-minimal prime implicants of the or-decomposable GR ``root`` whose feature
    sets are ``allowed`` (the SR feature sets)."""
    terms = _bottom_up(nnf, root, allowed, AND, lambda v: [()] if v else [],
                       lambda f, m: ((f, m),), conjoin, weakest)
    targets = set(allowed)
    return [t for t in weakest(terms) if variables(t) in targets]


def scnf(nnf: NNF, root: int, allowed: Sequence[int], full: Sequence[int]) -> list[Clause]:
    """Paper Alg. 6 (generalised): the clauses of the CNF of the reason ``root`` whose
    features fit in an allowed set, without subsumed ones (removed once, at the end:
    Corollary 1 makes the order of subsumption checks irrelevant)."""
    clauses = _bottom_up(nnf, root, allowed, OR, lambda v: [] if v else [()],
                         lambda f, m: ((f, m),), lambda a, b: disjoin(a, b, full),
                         lambda items: list(dict.fromkeys(items)))
    return strongest(clauses)


def close_by_resolution(clauses: Iterable[Clause], v: int, full: Sequence[int]) -> list[Clause]:
    """Paper Alg. 7's inner loop: clauses on exactly the features ``v``, closed under
    resolution with subsumption removal, one feature at a time (variable depletion).

    Clauses are handled as tuples of masks over the features of ``v``: resolving on position
    ``i`` meets the masks there and joins the others (a full join makes the resolvent valid).
    A resolvent whose met mask equals one parent's is implied by that parent, so only pairs
    whose masks at ``i`` are incomparable can add a clause."""
    feats = [f for f in range(v.bit_length()) if v >> f & 1]
    fulls = [full[f] for f in feats]
    width = range(len(feats))
    kept: list[tuple[int, ...] | None] = [tuple(dict(c)[f] for f in feats)
                                          for c in strongest(clauses)]

    def implies(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
        return all(x & ~y == 0 for x, y in zip(a, b))

    for i in width:
        k = 0
        while k < len(kept):  # resolve each clause with every earlier one, once
            c = kept[k]
            for j in range(k):
                d = kept[j]
                if c is None:
                    break
                if d is None:
                    continue
                meet = c[i] & d[i]
                if meet == c[i] or meet == d[i]:
                    continue
                r = tuple(meet if t == i else c[t] | d[t] for t in width)
                if any(r[t] == fulls[t] for t in width if t != i):
                    continue
                if any(e is not None and implies(e, r) for e in kept):
                    continue
                kept = [None if e is not None and implies(r, e) else e for e in kept]
                kept.append(r)
                c = kept[k]
            k += 1
        kept = [e for e in kept if e is not None]
    return [tuple(zip(feats, masks)) for masks in kept if masks is not None]


def gnrs(nnf: NNF, root: int, allowed: Sequence[int], full: Sequence[int]) -> list[Clause]:
    """Variable-minimal prime implicates of the GR ``root`` with feature sets in ``allowed``
    (all NR feature sets for every GNR; Alg. 5's ``V`` for the shortest ones, Alg. 7)."""
    clauses = scnf(nnf, root, allowed, full)
    out: list[Clause] = []
    for v in dict.fromkeys(allowed):
        out.extend(close_by_resolution([c for c in clauses if variables(c) == v], v, full))
    return out
