"""General sufficient and necessary reasons: variable-minimal prime implicants and implicates
of the general reason (docs/semantics.md §7–§8; Ji & Darwiche 2023: Alg. 6–7 and Appendix).

The feature sets of the GSRs are exactly those of the SRs, and the feature sets of the GNRs
exactly those of the NRs (a prime implicant/implicate of GR mentions a superset of some
SR/NR feature set; each SR/NR set carries one). So both are computed with the target feature
sets ``allowed`` known in advance.

- GNRs (:func:`gnrs`): Alg. 6 ``sCNF`` keeps the clauses of the CNF of GR whose features fit
  an allowed set — features only accumulate on the way up, so every intermediate clause that
  fits no allowed set is dropped (Alg. 6, generalised from the shortest sets to any family),
  and a ∨ of more operands than the largest allowed set has features is not even visited.
  Per allowed set ``v``, the GNRs on ``v`` are the prime implicates of the clauses on exactly
  ``v`` (resolving two clauses locally fixated on the instance keeps their features, so they
  come only from those clauses). Alg. 7 closes them under discrete resolution with subsumption
  removal by *variable depletion*; on one or two features (the usual shortest NR sets) the
  same clauses are read off the falsified part of the grid directly (:func:`_maximal_boxes`;
  also on more features when there are many clauses, where pairwise resolution is slow).
  With ``allowed`` = the shortest NR sets (Alg. 5's ``V``) this is Alg. 6–7.
- GSRs (:func:`gsrs`): the GSRs on an SR set ``v`` are the maximal boxes (terms) on ``v``
  that contain the instance and imply GR, i.e. the maximal boxes around ``x`` outside
  ``∃(other features). ¬GR``. GR's clauses are the decision graphs' paths to false (its
  closed form), so that projection is an ordered graph on ``v`` built in one pass over the
  graphs (:meth:`rfcircuits.dgraph.DG.falsified`), and its maximal boxes are read off it
  feature by feature (:func:`maximal_boxes`); no circuit of GR is built. Multiplying out
  the prime implicants bottom-up instead keeps those of every sub-circuit, which grow
  combinatorially with the number of trees.

Both rely on test-once graphs (callers pass ordered ones): the GNRs on the GR being
or-decomposable (a box implies a ∨ of children on disjoint features iff it implies one of
them), the GSRs on each path to false testing a feature once (its clause then has one literal
per feature) and on the projection being ordered.

Terms and clauses are tuples of ``(feature, state mask)`` sorted by feature (:mod:`rfcircuits.terms`);
inside this module they are packed into ints (:class:`Packing`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rfcircuits.dgraph import DG
from rfcircuits.dgraph import FALSE as DG_FALSE
from rfcircuits.dgraph import TRUE as DG_TRUE
from rfcircuits.dgstore import AND as AND_OP
from rfcircuits.boxes import box_region, boxes_in, grid_sizes
from rfcircuits.forest import mask_blocks
from rfcircuits.forest import mask_states as bits
from rfcircuits.nnf import AND, LIT, NNF, OR
from rfcircuits.terms import Clause, Term


class Packing:
    """Terms as ints: one field per feature, holding the states its literal allows (all of
    them when the term does not mention the feature), under a guard bit.

    A term ``a`` implies ``b`` iff ``a``'s bits are a subset of ``b``'s, ``a ∧ b`` is the
    bitwise and, and it is consistent iff no field is empty — one subtraction tells: taking
    1 from every field keeps every guard bit exactly when no field is zero. A clause is
    packed as its negation (the term of the complements of its literals), so ``a ∨ b`` is
    again the bitwise and, valid iff some field is empty, and ``a ⊨ b`` iff ``b ⊆ a``."""

    def __init__(self, full: Sequence[int]) -> None:
        self.full = tuple(full)
        self.offsets: tuple[int, ...] = ()
        top = guards = lows = at = 0
        for m in self.full:
            self.offsets += (at,)
            top |= m << at
            lows |= 1 << at
            at += m.bit_length()
            guards |= 1 << at
            at += 1
        #: The empty term (every field full).
        self.top = top
        #: ``masks[f]``: the bits of feature ``f``'s field.
        self.masks = tuple(m << at for m, at in zip(self.full, self.offsets))
        self._guards, self._lows = guards, lows

    def literal(self, f: int, m: int) -> int:
        """The one-literal term ``f ∈ m``."""
        return self.top & ~self.masks[f] | m << self.offsets[f]

    def consistent(self, t: int) -> bool:
        """No field of ``t`` is empty."""
        return ((t | self._guards) - self._lows) & self._guards == self._guards

    def field(self, t: int, f: int) -> int:
        """The states ``t`` allows for feature ``f``."""
        return t >> self.offsets[f] & self.full[f]

    def unpack(self, t: int, v: int, negated: bool = False) -> Term:
        """The term on the features ``v`` packed as ``t`` (a clause when ``negated``)."""
        out = []
        for f in bits(v):
            m = self.field(t, f)
            out.append((f, self.full[f] & ~m if negated else m))
        return tuple(out)


Packed = dict[int, int]  # packed term -> its features (a bitmask, or a superset), in order


def maximal(items: Packed, packing: Packing) -> Packed:
    """The items whose bits are contained in no other item's: for terms the weakest ones
    (implying no other), for packed clauses the strongest ones (implied by no other).

    Items are visited by decreasing bit count, so only an item already kept can contain the
    current one. Kept items are indexed per feature (one code path for every size, so that
    small fuzzed forests exercise it too): ``covers[f][m]`` has bit ``k`` set when the
    ``k``-th kept item allows every state of ``m`` on ``f``, and an item is contained in a
    kept one iff the and over the features any kept item mentions of ``covers[f][its field]``
    is not zero."""
    order = sorted(items, key=int.bit_count, reverse=True)
    kept: list[int] = []
    fields = list(zip(packing.offsets, packing.full))
    covers: list[dict[int, int]] = [{} for _ in fields]
    everyone = mentioned = 0
    for t in order:
        hits = everyone
        for f in bits(mentioned):
            at, full = fields[f]
            m = t >> at & full
            cover = covers[f].get(m)
            if cover is None:
                cover = 0
                for k, item in enumerate(kept):
                    if item >> at & m == m:
                        cover |= 1 << k
                covers[f][m] = cover
            hits &= cover
            if not hits:
                break
        if hits:
            continue
        bit = 1 << len(kept)
        kept.append(t)
        everyone |= bit
        mentioned |= items[t]
        for (at, full), cache in zip(fields, covers):
            own = t >> at & full
            for m in cache:
                if own & m == m:
                    cache[m] |= bit
    return {t: items[t] for t in kept}


# -- GSRs: maximal boxes outside where GR can be falsified ------------------------------------


def maximal_boxes(dg: DG, root: int, x: Sequence[int], features: Sequence[int]
                  ) -> list[tuple[int, ...]]:
    """The maximal boxes containing ``x`` inside the ordered graph ``root``, which tests only
    ``features`` (given in rank order): per box, the states it allows on each of them.

    A box ``S × B`` (``S`` on the first feature, ``B`` on the others) lies inside a node on
    the first feature iff ``B`` lies inside the child of every branch ``S`` meets; so a
    maximal one takes whole branches, and ``B`` is a maximal box inside the conjunction of
    their children. Hence, per node: the *meets*, the conjunctions of the children of the
    branches holding ``x``'s branch (hash-consed, so each is met once; only children true
    at ``x`` can hold a box containing it), then per meet ``m`` its maximal boxes ``B``
    (the same problem one feature down, memoised per node and feature). ``B`` lies inside
    child ``c`` iff it is among the maximal boxes of ``m ∧ c`` (maximal inside ``m``, it
    is maximal inside any part of ``m`` holding it); it is kept at the meet of all the
    children holding it, the only ``m`` with ``m ∧ c = m`` for each of them, and its
    ``S`` is their branches. Time: per node, the meets times their boxes times the
    branches, the boxes being the answer's parts; recursion depth ``len(features)``."""
    apply = dg.store.apply
    branches: dict[int, tuple[tuple[int, int], ...]] = {}
    true_at_x: dict[int, bool] = {}
    found: dict[tuple[int, int], list[tuple[int, ...]]] = {}
    as_set: dict[tuple[int, int], set[tuple[int, ...]]] = {}

    def boxes(n: int, i: int) -> list[tuple[int, ...]]:
        key = (n, i)
        out = found.get(key)
        if out is not None:
            return out
        if n == DG_FALSE:
            out = []
        elif i == len(features):
            out = [()]  # n is true: no feature is left to test
        elif n == DG_TRUE or dg.feature[n] != features[i]:  # the box is full on features[i]
            out = [(dg.full[features[i]], *rest) for rest in boxes(n, i + 1)]
        else:
            f = features[i]
            kids = branches.get(n)
            if kids is None:
                kids = branches[n] = tuple(dg.branches[n])
            held = []
            for m, c in kids:
                if c != DG_FALSE:
                    if c not in true_at_x:
                        true_at_x[c] = dg.evaluate(c, x)
                    if true_at_x[c]:
                        held.append((m, c))
            own = next(c for m, c in held if m >> x[f] & 1)
            meets = {own: None}
            for _, c in held:
                if c != own:
                    for meet in list(meets):
                        meets[apply(AND_OP, meet, c)] = None
            out = []
            for meet in meets:
                inner = boxes(meet, i + 1)
                if not inner:
                    continue
                states, smaller = 0, []
                for m, c in held:
                    both = apply(AND_OP, meet, c)
                    if both == meet:
                        states |= m
                    else:
                        part = as_set.get((both, i))
                        if part is None:
                            part = as_set[both, i] = set(boxes(both, i + 1))
                        smaller.append(part)
                out.extend((states, *rest) for rest in inner
                           if not any(rest in other for other in smaller))
        found[key] = out
        return out

    return boxes(root, 0)


def gsrs(dg: DG, roots: Sequence[int], x: Sequence[int], allowed: Sequence[int]) -> list[Term]:
    """Variable-minimal prime implicants of the general reason of the ordered graphs
    ``∧ roots`` at ``x`` whose feature sets are ``allowed`` (the SR feature sets: ``allowed``
    must be exactly the minimal sets whose instance term implies GR).

    A box on an SR set ``v`` that implies GR mentions all of ``v`` (it contains the instance,
    so a smaller feature set would hold an SR set strictly inside ``v``), and it implies GR
    iff no world inside it falsifies GR. So the GSRs on ``v`` are the maximal boxes
    containing ``x`` outside ``∃(the other features). ¬GR``, an ordered graph on ``v`` built
    in one pass over the graphs (:meth:`rfcircuits.dgraph.DG.falsified`; small, as it tests
    only ``v``), read off it by :func:`maximal_boxes`."""
    sets = list(dict.fromkeys(allowed))
    out: list[Term] = []
    for v, falsified in zip(sets, dg.falsified(roots, x, sets)):
        features = sorted(bits(v), key=dg.rank.__getitem__)
        for box in maximal_boxes(dg, dg.negate(falsified), x, features):
            out.append(tuple(sorted(zip(features, box))))
    return out


# -- GNRs: Alg. 6 sCNF and Alg. 7 variable depletion --------------------------------------------

def _operands(nnf: NNF, n: int) -> tuple[int, ...]:
    """The operands of the gate ``n`` with nested gates of its kind expanded."""
    kind = nnf.kind[n]
    out: dict[int, None] = {}
    stack = [n]
    seen = {n}
    while stack:
        for c in nnf.args[stack.pop()]:
            if nnf.kind[c] != kind:
                out[c] = None
            elif c not in seen:
                seen.add(c)
                stack.append(c)
    return tuple(out)


def scnf(nnf: NNF, root: int, allowed: Sequence[int], packing: Packing) -> Packed:
    """Paper Alg. 6 (generalised): the clauses of the CNF of the reason ``root`` whose
    features fit in an allowed set, packed negated (subsumed ones are removed later, where
    needed: Corollary 1 makes the order of subsumption checks irrelevant).

    Bottom-up, ∧ unites its children's clauses and ∨ joins one clause of each operand (nested
    ∨ expanded). A clause that fits no allowed set is dropped as soon as it appears, since
    features only accumulate on the way up; the unit clauses of a ∧ on one feature are merged
    into their resolvent (the meet of their literals), which is equivalent to them.

    Every literal of a reason contains the instance's state, so a non-constant node is
    satisfied by the instance, and in an or-decomposable reason it is not valid either: all
    its CNF clauses mention some of its features. So a node is visited only for its clauses
    of at most ``k`` features (memoised per ``(node, k)``, from the size of the largest
    allowed set at the root): a ∨ of ``m`` operands has none when ``m > k`` and otherwise
    needs clauses of at most ``k - m + 1`` features from each operand; a node's clauses of
    one feature are the literals it reaches through ∧ only (memoised per node); and a node
    whose features meet no allowed set, or a ∨ whose operands no single allowed set meets,
    has none that fit. Runs on explicit stacks (reasons of long decision-graph paths are
    deep)."""
    sets = list(dict.fromkeys(allowed))
    full = packing.full
    fitting: dict[int, bool] = {}

    def fits(features: int) -> bool:
        ok = fitting.get(features)
        if ok is None:
            ok = fitting[features] = any(features & ~u == 0 for u in sets)
        return ok

    meeting: dict[int, int] = {}  # node -> the allowed sets (bits over ``sets``) meeting it

    def meets(n: int) -> int:
        out = meeting.get(n)
        if out is None:
            features = nnf.vars[n]
            out = 0
            for i, u in enumerate(sets):
                if u & features:
                    out |= 1 << i
            meeting[n] = out
        return out

    anywhere = 0  # the features of all allowed sets
    for u in sets:
        anywhere |= u

    kinds, features_of, args_of = nnf.kind, nnf.vars, nnf.args
    # ∧ node -> the unit clauses of its literal children (merged per feature), and its ∧
    # children that meet an allowed set; ∨ children have no unit clauses
    conjuncts: dict[int, tuple[dict[int, int], list[int]]] = {}

    def conjunct(n: int) -> tuple[dict[int, int], list[int]]:
        out = conjuncts.get(n)
        if out is None:
            local: dict[int, int] = {}
            inner = []
            for c in [c for c in args_of[n] if kinds[c] != OR]:
                if kinds[c] == AND:
                    if features_of[c] & anywhere:
                        inner.append(c)
                    continue
                f, m = args_of[c]
                if fits(1 << f):
                    local[1 << f] = local.get(1 << f, 0) | packing.literal(f, full[f] & ~m)
            out = conjuncts[n] = (local, inner)
        return out

    singles: dict[int, dict[int, int]] = {}  # node -> feature -> its merged unit clauses

    def units(n: int) -> Packed:
        """The unit clauses of ``n`` that fit, merged per feature: the literals it reaches
        through ∧ only (a ∨ joins clauses of two features or more)."""
        stack = [n]
        while stack:
            m = stack[-1]
            if m in singles:
                stack.pop()
                continue
            kind = kinds[m]
            if kind == AND:
                local, inner = conjunct(m)
                missing = [c for c in inner if c not in singles]
                if missing:
                    stack.extend(missing)
                    continue
                merged = dict(local)
                for c in inner:
                    for f, t in singles[c].items():
                        merged[f] = merged.get(f, 0) | t
                singles[m] = merged
            elif kind == LIT:
                f, lit = args_of[m]
                singles[m] = {1 << f: packing.literal(f, full[f] & ~lit)} if fits(1 << f) else {}
            else:
                # ∨, or the constant true (a GR with no NR); x satisfies GR, and constants
                # are folded away from gates, so false never occurs
                singles[m] = {}
            # m is popped by the check at the top of the loop, now that it is in singles
        return {t: f for f, t in singles[n].items()}

    most = max((u.bit_count() for u in sets), default=0)
    if most <= 1 or kinds[root] not in (AND, OR):
        return units(root)
    # clauses of at most k > 1 features of ∧ and ∨ nodes, per (node, k)
    value: dict[tuple[int, int], Packed] = {}
    plans: dict[tuple[int, int], list[tuple[int, int]]] = {}
    stack = [(root, most)]
    while stack:
        key = stack[-1]
        if key in value:
            stack.pop()
            continue
        n, k = key
        kids = plans.get(key)
        if kids is None:
            if kinds[n] == AND:
                kids = [(c, k) for c in conjunct(n)[1]]
                kids += [(c, k) for c in args_of[n] if kinds[c] == OR
                         and len(args_of[c]) <= k and features_of[c] & anywhere]
            else:
                operands = args_of[n]
                if any(kinds[c] == OR for c in operands):
                    operands = _operands(nnf, n)
                common = 0  # the allowed sets meeting every operand
                if len(operands) <= k:
                    common = -1
                    for c in operands:
                        common &= meets(c)
                kids = [(c, k - len(operands) + 1) for c in operands] if common else []
            plans[key] = kids
            stack.extend(kid for kid in kids if kid[1] > 1 and kinds[kid[0]] != LIT
                         and kid not in value)
            continue
        # the key stays on the stack: the check at the top pops it once its value is set
        parts = [value[kid] if kid[1] > 1 and kinds[kid[0]] != LIT else units(kid[0])
                 for kid in kids]
        if kinds[n] == AND:
            union: Packed = {}
            merged = dict(conjunct(n)[0])  # feature -> the meet of its unit clauses
            for part in parts:
                for t, v in part.items():
                    if v & (v - 1):
                        union[t] = v
                    else:
                        merged[v] = merged.get(v, 0) | t
            union.update((t, v) for v, t in merged.items())
            value[key] = union
            continue
        parts.sort(key=len)
        acc = parts[0] if parts else {}
        for part in parts[1:]:  # operands share no feature: their join is never valid
            acc = {a & b: fa | fb for a, fa in acc.items() for b, fb in part.items()
                   if fits(fa | fb)}
        value[key] = acc
    return value[root, most]


def close_by_resolution(clauses: Iterable[int], v: int, packing: Packing) -> list[int]:
    """Paper Alg. 7's inner loop: clauses (packed negated) on exactly the features ``v``,
    without subsumed ones, closed under resolution with subsumption removal, one feature at a
    time (variable depletion).

    Resolving on ``f`` meets the two literals on ``f`` and joins the others: the negated
    fields are joined on ``f`` and met elsewhere, and the resolvent is valid iff a met field
    is empty. A resolvent whose literal on ``f`` equals one parent's is implied by that
    parent, so only pairs whose literals on ``f`` are incomparable can add a clause. A clause
    implies another iff its negation contains the other's."""
    kept: list[int | None] = list(clauses)  # None: removed (subsumed by a later clause)
    for f in bits(v):
        mask = packing.masks[f]
        # resolve each clause with every earlier one, once; the list grows as it is walked
        for k, c in enumerate(kept):
            for j in range(k):
                d = kept[j]
                if c is None:
                    break
                if d is None:
                    continue
                cf, df = c & mask, d & mask
                joined = cf | df
                if joined == cf or joined == df:
                    continue
                r = c & d & ~mask | joined
                if not packing.consistent(r):
                    continue
                if any(e is not None and r | e == e for e in kept):
                    continue
                for i, e in enumerate(kept):
                    if e is not None and e | r == r:
                        kept[i] = None
                kept.append(r)
                c = kept[k]
    return [c for c in kept if c is not None]


#: Alg. 7's pairwise resolution is cubic in the clauses; beyond this many clauses on three
#: features or more, and when the grid has at most ``_GRID_BITS`` points, the GNRs are read off
#: the falsified part of the grid instead (:func:`_maximal_boxes`, the same clauses).
_ALG7_CLAUSES = 48
_GRID_BITS = 1 << 24


def _maximal_boxes(clauses: Sequence[int], features: Sequence[int], packing: Packing) -> list[int]:
    """The prime implicates of clauses (packed negated) on exactly ``features``: the
    negations of the maximal boxes inside the union of the clauses' negations (a clause is
    implied iff its negation lies in that union, the falsified part of the grid) — the same
    clauses as Alg. 7's closure by resolution, without its cubic pairwise loop."""
    fields = [[packing.field(c, f) for f in features] for c in clauses]
    # The grid's axes are each feature's runs: the longest intervals of states on which
    # every clause's field is constant. The falsified part is a union of run boxes, so its
    # maximal boxes are too, and the grid shrinks to the runs' product.
    runs: list[list[int]] = []  # per feature, its runs' first states, then its state count
    on_runs = []  # per feature, each field as the runs it holds
    for i, f in enumerate(features):
        distinct = {row[i] for row in fields}
        cuts = 0  # bit s: some field differs at states s and s + 1
        for field in distinct:
            cuts |= field ^ field >> 1
        n = packing.full[f].bit_length()
        starts = [0, *(s + 1 for s in bits(cuts & (1 << (n - 1)) - 1)), n]
        runs.append(starts)
        # a field's blocks of states begin and end at runs' starts
        index = {start: j for j, start in enumerate(starts)}
        on_runs.append({field: sum((1 << index[end]) - (1 << index[start])
                                   for start, end in mask_blocks(field)) for field in distinct})
    sizes = grid_sizes([len(starts) - 1 for starts in runs])
    firsts: dict[tuple[int, ...], int] = {}  # boxes grouped by their other axes
    for row in fields:
        tail = tuple(on[field] for on, field in zip(on_runs[1:], row[1:]))
        firsts[tail] = firsts.get(tail, 0) | on_runs[0][row[0]]
    falsified = 0
    for tail, first in firsts.items():
        falsified |= box_region((first, *tail), sizes, 0)
    out = []
    for box in boxes_in(falsified, sizes, 0):
        packed = packing.top
        for f, starts, m in zip(features, runs, box):
            states = sum((1 << starts[end]) - (1 << starts[start])
                         for start, end in mask_blocks(m))
            packed = packed & ~packing.masks[f] | states << packing.offsets[f]
        out.append(packed)
    return out


def gnrs(nnf: NNF, root: int, allowed: Sequence[int], full: Sequence[int]) -> list[Clause]:
    """Variable-minimal prime implicates of the GR ``root`` with feature sets in ``allowed``
    (all NR feature sets for every GNR; Alg. 5's ``V`` for the shortest ones, Alg. 7).

    Per allowed set ``v``, the prime implicates of the sCNF clauses on exactly ``v``: on one
    feature the meet of their literals, on two the maximal rectangles of their falsified
    part (:func:`_maximal_boxes`), on more Alg. 7's resolution of the unsubsumed ones, or the
    maximal boxes when there are many clauses and the grid is not too large. A clause
    fitting an allowed set ``u`` is on exactly ``u``: an implicate of GR mentions a superset
    of some NR set, which lies in ``u``, and NR sets do not nest."""
    packing = Packing(full)
    by_features: dict[int, list[int]] = {}
    for c, features in scnf(nnf, root, allowed, packing).items():
        by_features.setdefault(features, []).append(c)
    out: list[Clause] = []
    for v in dict.fromkeys(allowed):
        on_v = by_features.get(v)
        if not on_v:
            continue
        features = bits(v)
        if len(features) == 1:
            union = 0
            for c in on_v:
                union |= c
            primes = [union]
        elif grid_sizes([packing.full[f].bit_length() for f in features])[0] <= _GRID_BITS and (
                len(features) == 2 or len(on_v) > _ALG7_CLAUSES):
            primes = _maximal_boxes(on_v, features, packing)
        else:
            primes = close_by_resolution(maximal(dict.fromkeys(on_v, v), packing), v, packing)
        out.extend(packing.unpack(c, v, negated=True) for c in primes)
    return out
