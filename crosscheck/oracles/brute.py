"""Brute-force oracle: every answer by its definition (docs/semantics.md), over all worlds.

No circuit, closed form or sorting network is used: class membership comes from counting
the trees' votes in each world, and every reason is found by enumerating worlds, feature sets
and candidate terms/clauses and testing the definition. Sets of worlds are int bitmasks over
world indices (world ``i`` is the ``i``-th element of ``itertools.product`` over the features'
states, feature 0 most significant).

One lemma bounds the enumeration of general terms and clauses: the model set of GR is closed
under moving any feature back to the instance's state (``w ⊨ GR`` and ``w'`` in ``GBox(w)``
imply ``w' ⊨ GR``). Hence a literal of a prime implicant or prime implicate of GR that missed
``x[X]`` could be dropped (implicate) or widened by ``x[X]`` (implicant) and stay valid, so every
literal of a prime implicant/implicate contains ``x[X]``, and
only such literals are enumerated. ``tests/test_brute.py`` checks this against the unrestricted
enumeration on tiny forests.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

from rfcircuits.errors import InputError
from rfcircuits.explanation import ALL_WHAT, Explanation
from rfcircuits.forest import Forest, Instance, check_ties, classes_from_votes

#: Default bound on the number of worlds the oracle accepts.
MAX_WORLDS = 20_000
#: Bound on the candidate general terms or clauses, ``Π_X 2^(|X|-1)``, that GSRs, GNRs and
#: shortest flips enumerate (2^18 take seconds per instance); past it the oracle still gives
#: every other field (the worlds can fit when the candidates do not: docs/decisions.md,
#: "Brute force's general fields have their own bound").
MAX_GENERAL_CANDIDATES = 2 ** 18
#: The fields that enumerate those candidates.
GENERAL = ("gsr", "gnr", "flips")


def popcount(v: int) -> int:
    return bin(v).count("1")


def minimal_sets(family: set[int]) -> list[int]:
    """The inclusion-minimal feature sets of a family (bitmasks)."""
    out: list[int] = []
    for v in sorted(family, key=popcount):
        if not any(u & v == u for u in out):
            out.append(v)
    return out


class WorldSet:
    """A list of worlds whose sets are bitmasks (bit ``i``: ``worlds[i]``): all of them for
    brute force, a sample for checking a circuit against the SAT oracle."""

    def __init__(self, forest: Forest, worlds: Sequence[Instance]) -> None:
        self.forest = forest
        self.worlds = list(worlds)
        self.all = (1 << len(self.worlds)) - 1
        # eq[X][s]: the worlds with X = s.
        self.eq = [[0] * f.n_states for f in forest.features]
        for i, w in enumerate(self.worlds):
            for f, s in enumerate(w):
                self.eq[f][s] |= 1 << i

    def literal_worlds(self, f: int, mask: int) -> int:
        out = 0
        for s in range(self.forest.features[f].n_states):
            if mask >> s & 1:
                out |= self.eq[f][s]
        return out


class BruteForce(WorldSet):
    """All worlds of a small forest, with class membership by counting votes."""

    def __init__(self, forest: Forest, ties: str = "first", max_worlds: int = MAX_WORLDS) -> None:
        self.ties = check_ties(ties)
        n = forest.n_worlds()
        if n > max_worlds:
            raise InputError(f"brute force: {n} worlds exceed the limit of {max_worlds}")
        super().__init__(forest, itertools.product(*(range(f.n_states) for f in forest.features)))
        self.n_features = len(forest.features)
        self.member = [0] * len(forest.classes)
        for i, w in enumerate(self.worlds):
            for c in classes_from_votes(forest.votes(w), ties):
                self.member[c] |= 1 << i

    # -- worlds and formulas ----------------------------------------------------------------

    def index(self, x: Sequence[int]) -> int:
        i = 0
        for f, s in zip(self.forest.features, x):
            i = i * f.n_states + s
        return i

    def class_worlds(self, c: int) -> int:
        """Models of the class formula ``R^c`` as a world bitmask."""
        return self.member[c]

    def term_worlds(self, term: Sequence[tuple[int, int]]) -> int:
        out = self.all
        for f, m in term:
            out &= self.literal_worlds(f, m)
        return out

    def clause_worlds(self, clause: Sequence[tuple[int, int]]) -> int:
        out = 0
        for f, m in clause:
            out |= self.literal_worlds(f, m)
        return out

    def diff(self, x: Sequence[int], w: Sequence[int]) -> int:
        """Features on which two worlds differ (bitmask)."""
        return sum(1 << f for f in range(self.n_features) if x[f] != w[f])

    # -- the two boxes of CR and GR (docs/semantics.md §4) ---------------------------------------

    def complete_reason(self, x: Sequence[int], delta: int) -> int:
        """``w ⊨ CR`` iff ``CBox(w) ⊆ models(Δ)``; CBox fixes the features where w agrees with x."""
        good: dict[int, bool] = {}
        out = 0
        for i, w in enumerate(self.worlds):
            agree = self.all_features & ~self.diff(x, w)
            if agree not in good:
                box = self.all
                for f in range(self.n_features):
                    if agree >> f & 1:
                        box &= self.eq[f][x[f]]
                good[agree] = box & ~delta == 0
            if good[agree]:
                out |= 1 << i
        return out

    def general_reason(self, x: Sequence[int], delta: int) -> int:
        """``w ⊨ GR`` iff ``GBox(w) ⊆ models(Δ)``; GBox allows ``{w[X], x[X]}`` for every X."""
        out = 0
        for i, w in enumerate(self.worlds):
            box = self.all
            for f in range(self.n_features):
                box &= self.eq[f][w[f]] | self.eq[f][x[f]]
            if box & ~delta == 0:
                out |= 1 << i
        return out

    @property
    def all_features(self) -> int:
        return (1 << self.n_features) - 1

    # -- explanations ------------------------------------------------------------------------

    def general_too_big(self) -> str | None:
        """Why the :data:`GENERAL` fields are out of reach (:data:`MAX_GENERAL_CANDIDATES`),
        or None."""
        bits = sum(f.n_states - 1 for f in self.forest.features)
        if 1 << bits > MAX_GENERAL_CANDIDATES:
            return (f"2^{bits} candidate general terms exceed the brute force's "
                    f"2^{MAX_GENERAL_CANDIDATES.bit_length() - 1}")
        return None

    def explain(self, x: Instance, what: Sequence[str] = ALL_WHAT) -> Explanation:
        """Every requested explanation field, each from its definition (the
        :data:`GENERAL` ones only within :meth:`general_too_big`'s bound)."""
        beyond = self.general_too_big() if any(k in GENERAL for k in what) else None
        if beyond:
            raise InputError(f"brute force: {beyond}; leave out {', '.join(GENERAL)}")
        forest = self.forest
        votes = forest.votes(x)
        decision = forest.decision(x)
        member_of = tuple(c for c in range(len(forest.classes)) if self.member[c] >> self.index(x) & 1)
        delta = self.member[decision]
        fields: dict[str, object] = {}
        outside = [self.diff(x, w) for i, w in enumerate(self.worlds) if not delta >> i & 1]
        if "sr" in what:
            # Minimal V such that every world agreeing with x on V is in Δ: V meets every
            # difference set of a world outside Δ.
            hitting = [v for v in range(1 << self.n_features) if all(v & d for d in outside)]
            fields["sufficient_reasons"] = self._simple(x, minimal_sets(set(hitting)))
        if "nr" in what:
            fields["necessary_reasons"] = self._simple(x, minimal_sets(set(outside)))
        if "robust" in what or "flips" in what or "gnr" in what:
            robustness = min((popcount(d) for d in outside), default=None)
        if "robust" in what:
            fields["robustness"] = robustness
        if "gsr" in what:
            gr = self.general_reason(x, delta)
            fields["general_sufficient_reasons"] = self._variable_minimal(
                self._prime_implicants(x, gr))
        if "gnr" in what or "flips" in what:
            gr = self.general_reason(x, delta)
            gnrs = self._variable_minimal(self._prime_implicates(x, gr))
            if "gnr" in what:
                fields["general_necessary_reasons"] = gnrs
            if "flips" in what:
                fields["shortest_flips"] = Explanation.sets(
                    c for c in gnrs if len(c) == robustness)
        if "ce" in what:
            ces = []
            for t in range(len(forest.classes)):
                if t in member_of:
                    continue
                reach = [self.diff(x, w) for i, w in enumerate(self.worlds)
                         if self.member[t] >> i & 1]
                ces.append((t, self._simple(x, minimal_sets(set(reach)))))
            fields["contrastive"] = tuple(ces)
        return Explanation(forest, tuple(x), self.ties, tuple(votes), decision, member_of,
                           tuple(k for k in ALL_WHAT if k in what), **fields)  # type: ignore[arg-type]

    def _simple(self, x: Sequence[int], sets: list[int]) -> tuple:
        return Explanation.sets(
            tuple((f, 1 << x[f]) for f in range(self.n_features) if v >> f & 1) for v in sets)

    # -- general terms and clauses (enumeration bounded by the lemma in the module docstring) ---

    def _candidates(self, x: Sequence[int]) -> Iterator[tuple[tuple[int, int], ...]]:
        """Every term/clause whose literals are proper and contain the instance's states."""
        options: list[list[int | None]] = []
        for f, feature in enumerate(self.forest.features):
            own = 1 << x[f]
            rest = feature.full & ~own
            subs = [own | sub for sub in _submasks(rest) if own | sub != feature.full]
            options.append([None, *subs])
        for choice in itertools.product(*options):
            yield tuple((f, m) for f, m in enumerate(choice) if m is not None)

    def _prime_implicants(self, x: Sequence[int], gr: int) -> list[tuple]:
        """Terms τ with models(τ) ⊆ GR such that no one-state widening stays inside GR."""
        primes = []
        for term in self._candidates(x):
            if self.term_worlds(term) & ~gr:
                continue
            if all(self.term_worlds(w) & ~gr for w in self._widenings(term)):
                primes.append(term)
        return primes

    def _prime_implicates(self, x: Sequence[int], gr: int) -> list[tuple]:
        """Clauses σ with GR ⊆ models(σ) such that no one-state narrowing still contains GR."""
        primes = []
        for clause in self._candidates(x):
            if gr & ~self.clause_worlds(clause):
                continue
            if all(gr & ~self.clause_worlds(n) for n in self._narrowings(clause)):
                primes.append(clause)
        return primes

    def _widenings(self, term: tuple) -> Iterator[tuple]:
        """Terms one state weaker (a literal that becomes full is dropped)."""
        for k, (f, m) in enumerate(term):
            full = self.forest.features[f].full
            for s in range(self.forest.features[f].n_states):
                if not m >> s & 1:
                    wider = m | 1 << s
                    lit = () if wider == full else ((f, wider),)
                    yield term[:k] + lit + term[k + 1:]

    def _narrowings(self, clause: tuple) -> Iterator[tuple]:
        """Clauses one state stronger (a literal that becomes empty is dropped)."""
        for k, (f, m) in enumerate(clause):
            for s in range(self.forest.features[f].n_states):
                if m >> s & 1:
                    narrower = m & ~(1 << s)
                    lit = ((f, narrower),) if narrower else ()
                    yield clause[:k] + lit + clause[k + 1:]

    def _variable_minimal(self, primes: list[tuple]) -> tuple:
        """Primes whose feature set has no strict subset among the primes' feature sets."""
        var_sets = {sum(1 << f for f, _ in p) for p in primes}
        keep = []
        for p in primes:
            v = sum(1 << f for f, _ in p)
            if not any(u != v and u & v == u for u in var_sets):
                keep.append(p)
        return Explanation.sets(keep)


def _submasks(mask: int) -> Iterator[int]:
    """All submasks of ``mask``, the empty one included."""
    sub = mask
    while True:
        yield sub
        if sub == 0:
            return
        sub = (sub - 1) & mask
