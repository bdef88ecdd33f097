"""The brute-force oracle (crosscheck/oracles/brute.py) against the definitions, written here from
scratch (docs/semantics.md, SPEC §3): votes by walking the trees of the forest's JSON, class
membership by the tie policies' rules, and every reason by enumerating feature sets, or terms
and clauses, over all worlds. The general reasons are enumerated *without* the lemma the
oracle relies on (only literals containing the instance's state can occur in a prime
implicant or implicate of GR): every proper literal on every feature is tried, so the lemma
is checked too. Answers are compared as sets, independently of the oracle's canonical order;
the worked examples' answers are the paper's.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import pytest
from hypothesis import given, settings

from rfcircuits.errors import InputError
from rfcircuits.explanation import ALL_WHAT
from rfcircuits.forest import TIES, Forest
from rfcircuits.crosscheck.differential import spec_examples
from rfcircuits.crosscheck.oracles.brute import BruteForce
from rfcircuits.crosscheck.differential.strategies import Limits, forest_and_instance

World = tuple[int, ...]
Literal = tuple[int, int]  # (feature, mask of states)
Item = frozenset[Literal]  # a term or a clause

#: Small enough for every term and clause to be enumerated (7 literals or none per feature).
TINY = Limits(max_features=3, max_states=3, max_trees=5, max_classes=3, max_depth=3)


# ----------------------------------------------------------------------------- the definitions


def votes(doc: dict, w: World) -> list[int]:
    """Each class's votes in world ``w``: every tree of the forest's JSON walked to a leaf."""
    names = [f["name"] for f in doc["features"]]
    counts = [0] * len(doc["classes"])
    for tree in doc["trees"]:
        node = tree["nodes"][0]
        while "class" not in node:
            state = w[names.index(node["feature"])]
            node = tree["nodes"][next(child for states, child in node["branches"]
                                      if state in states)]
        counts[doc["classes"].index(node["class"])] += 1
    return counts


def member(v: list[int], c: int, ties: str) -> bool:
    """``x ⊨ R^c``: under ``first``, more votes than every earlier class and at least as many
    as every later one; under ``all``, the most votes."""
    if ties == "all":
        return v[c] == max(v)
    return all(v[c] > v[j] for j in range(c)) and all(v[c] >= v[j] for j in range(c, len(v)))


class Definitions:
    """Every answer about one instance, straight from its definition."""

    def __init__(self, forest: Forest, ties: str, x: World) -> None:
        doc = forest.to_json()
        self.forest, self.x = forest, x
        self.states = [f.n_states for f in forest.features]
        self.k = len(self.states)
        self.worlds = list(itertools.product(*(range(n) for n in self.states)))
        self.classes = {c: {w for w in self.worlds if member(votes(doc, w), c, ties)}
                        for c in range(len(forest.classes))}
        self.decision = next(c for c in self.classes if x in self.classes[c])
        self.delta = self.classes[self.decision]

    def diff(self, w: World) -> frozenset[int]:
        return frozenset(f for f in range(self.k) if w[f] != self.x[f])

    def feature_sets(self) -> Iterable[frozenset[int]]:
        return (frozenset(v) for n in range(self.k + 1)
                for v in itertools.combinations(range(self.k), n))

    def simple(self, sets: Iterable[frozenset[int]]) -> set[Item]:
        """Feature sets as terms (or clauses) of the instance's states."""
        return {frozenset((f, 1 << self.x[f]) for f in v) for v in sets}

    def sufficient_reasons(self) -> set[Item]:
        """Minimal V: every world agreeing with x on V is in Δ."""
        return self.simple(minimal({v for v in self.feature_sets() if all(
            w in self.delta for w in self.worlds if all(w[f] == self.x[f] for f in v))}))

    def reaching(self, target: set[World]) -> set[frozenset[int]]:
        """Minimal V: some world that differs from x only on V is in ``target``."""
        return minimal({v for v in self.feature_sets() if any(
            self.diff(w) <= v for w in target)})

    def necessary_reasons(self) -> set[Item]:
        return self.simple(self.reaching(set(self.worlds) - self.delta))

    def robustness(self) -> int | None:
        """The fewest features whose change leaves Δ."""
        return min((len(self.diff(w)) for w in self.worlds if w not in self.delta),
                   default=None)

    def contrastive(self) -> dict[int, set[Item]]:
        """Per class t that x is not in: minimal V whose change can put x into ``R^t``."""
        return {t: self.simple(self.reaching(worlds)) for t, worlds in self.classes.items()
                if self.x not in worlds}

    def gbox(self, w: World) -> Iterable[World]:
        return itertools.product(*({w[f], self.x[f]} for f in range(self.k)))

    def general_reason(self) -> set[World]:
        """``w ⊨ GR`` iff every world of GBox(w) is in Δ."""
        return {w for w in self.worlds if all(v in self.delta for v in self.gbox(w))}

    def complete_reason(self) -> set[World]:
        """``w ⊨ CR`` iff every world of CBox(w) (free where w differs from x) is in Δ."""
        return {w for w in self.worlds if all(
            v in self.delta for v in self.worlds
            if all(v[f] == self.x[f] for f in range(self.k) if w[f] == self.x[f]))}

    def items(self) -> list[Item]:
        """Every term (or clause): per feature no literal, or any proper set of states."""
        options = [[None, *range(1, (1 << n) - 1)] for n in self.states]
        return [frozenset((f, m) for f, m in enumerate(choice) if m is not None)
                for choice in itertools.product(*options)]

    def models(self, item: Item, clause: bool) -> frozenset[World]:
        holds = any if clause else all
        return frozenset(w for w in self.worlds if holds(m >> w[f] & 1 for f, m in item))

    def general_sufficient_reasons(self) -> set[Item]:
        """Variable-minimal prime implicants of GR: no implicant is strictly weaker."""
        gr = self.general_reason()
        implicants = {t: m for t in self.items() if (m := self.models(t, False)) <= gr}
        primes = [t for t, m in implicants.items() if not any(m < o for o in
                                                                implicants.values())]
        return variable_minimal(primes)

    def general_necessary_reasons(self) -> set[Item]:
        """Variable-minimal prime implicates of GR: no implicate is strictly stronger."""
        gr = self.general_reason()
        implicates = {c: m for c in self.items() if gr <= (m := self.models(c, True))}
        primes = [c for c, m in implicates.items() if not any(o < m for o in
                                                                implicates.values())]
        return variable_minimal(primes)


def minimal(family: set[frozenset[int]]) -> set[frozenset[int]]:
    return {v for v in family if not any(u < v for u in family)}


def variable_minimal(primes: Sequence[Item]) -> set[Item]:
    features = {p: frozenset(f for f, _ in p) for p in primes}
    return {p for p in primes if not any(o < features[p] for o in features.values())}


def as_sets(items: Iterable[Iterable[Literal]]) -> set[Item]:
    return {frozenset(item) for item in items}


# ----------------------------------------------------------------------------- the tests


@settings(max_examples=60, deadline=None)
@given(forest_and_instance(TINY))
def test_every_answer_is_its_definition(case):
    forest, x = case
    for ties in TIES:
        oracle = BruteForce(forest, ties)
        e = oracle.explain(x, ALL_WHAT)
        d = Definitions(forest, ties, x)
        assert e.decision == d.decision
        assert set(e.classes) == {c for c, worlds in d.classes.items() if x in worlds}
        assert as_sets(e.sufficient_reasons) == d.sufficient_reasons()
        assert as_sets(e.necessary_reasons) == d.necessary_reasons()
        assert e.robustness == d.robustness()
        assert {t: as_sets(ces) for t, ces in e.contrastive} == d.contrastive()
        gsrs, gnrs = d.general_sufficient_reasons(), d.general_necessary_reasons()
        assert as_sets(e.general_sufficient_reasons) == gsrs
        assert as_sets(e.general_necessary_reasons) == gnrs
        assert as_sets(e.shortest_flips) == {c for c in gnrs if len(c) == e.robustness}


@settings(max_examples=60, deadline=None)
@given(forest_and_instance(TINY))
def test_the_shortest_flips_are_violated_exactly_by_the_nearest_worlds_outside(case):
    """SPEC §3: the shortest flips are all worlds outside Δ at distance r, and they are
    exactly the violations of the shortest GNRs (worlds that differ from x exactly on a
    clause's features and falsify it)."""
    forest, x = case
    for ties in TIES:
        e = BruteForce(forest, ties).explain(x, ("robust", "flips"))
        d = Definitions(forest, ties, x)
        nearest = {w for w in d.worlds if w not in d.delta and len(d.diff(w)) == e.robustness}
        violations = {w for clause in as_sets(e.shortest_flips) for w in d.worlds
                      if d.diff(w) == {f for f, _ in clause} and w not in d.models(clause, True)}
        assert violations == nearest


@settings(max_examples=60, deadline=None)
@given(forest_and_instance(TINY))
def test_the_reasons_as_world_sets_are_their_boxes(case):
    """CR and GR by their boxes, class formulas by counting votes, and the world sets of
    terms and clauses by evaluating them; CR implies GR, and equals it on binary features."""
    forest, x = case
    for ties in TIES:
        oracle = BruteForce(forest, ties)
        d = Definitions(forest, ties, x)

        def worlds(mask: int) -> set[World]:
            return {w for w in d.worlds if mask >> oracle.index(w) & 1}

        for c, members in d.classes.items():
            assert worlds(oracle.class_worlds(c)) == members
        delta = oracle.class_worlds(d.decision)
        cr, gr = worlds(oracle.complete_reason(x, delta)), worlds(oracle.general_reason(x, delta))
        assert cr == d.complete_reason() and gr == d.general_reason() and cr <= gr
        if all(n == 2 for n in d.states):
            assert cr == gr
        for item in d.items()[::7]:
            assert worlds(oracle.term_worlds(sorted(item))) == d.models(item, False)
            assert worlds(oracle.clause_worlds(sorted(item))) == d.models(item, True)


@pytest.mark.parametrize("example, x, answers", [
    (spec_examples.SUSAN_FOREST, spec_examples.SUSAN, spec_examples.SUSAN_ANSWERS),
    (spec_examples.FLIP_FOREST, spec_examples.FLIP, spec_examples.FLIP_ANSWERS)])
def test_the_worked_examples_get_the_papers_answers(example, x, answers):
    forest = spec_examples.forest(example)
    e = BruteForce(forest).explain(spec_examples.instance(forest, x))
    line = e.to_json()
    for key, value in answers.items():
        expected = value if key in ("decision", "robustness") else \
            as_sets(spec_examples.expected(forest, value))
        got = line[key] if key in ("decision", "robustness") else as_sets(getattr(e, key))
        assert got == expected, key


def test_the_flip_examples_only_shortest_flip_is_x3_y3():
    forest = spec_examples.forest(spec_examples.FLIP_FOREST)
    x = spec_examples.instance(forest, spec_examples.FLIP)
    d = Definitions(forest, "first", x)
    r = BruteForce(forest).explain(x, ("robust",)).robustness
    nearest = [w for w in d.worlds if w not in d.delta and len(d.diff(w)) == r]
    assert nearest == [spec_examples.instance(forest, w) for w in spec_examples.FLIP_WORLDS]


def test_figure_1s_class_formulas_have_the_papers_model_counts():
    forest = spec_examples.forest(spec_examples.FIGURE1_FOREST)
    oracle = BruteForce(forest)
    counts = {name: oracle.class_worlds(c).bit_count() for c, name in enumerate(forest.classes)}
    assert counts == spec_examples.FIGURE1_COUNTS


def test_a_valid_decision_has_the_empty_sr_and_no_nr():
    # One tree, one leaf: every world is in the class (SPEC §5's edge case).
    forest = spec_examples.forest({
        "format": "rfcircuits.forest/1", "classes": ["a", "b"],
        "features": [{"name": "X", "states": ["0", "1", "2"]}],
        "trees": [{"nodes": [{"class": "a"}]}]})
    e = BruteForce(forest).explain((1,))
    assert e.sufficient_reasons == ((),) and e.necessary_reasons == ()
    assert e.robustness is None and e.shortest_flips == () and e.general_necessary_reasons == ()
    assert e.general_sufficient_reasons == ((),) and dict(e.contrastive) == {1: ()}


def test_limits_are_refused_with_what_to_do():
    forest = spec_examples.forest(spec_examples.SUSAN_FOREST)  # 24 worlds
    with pytest.raises(InputError, match="24 worlds exceed the limit of 23"):
        BruteForce(forest, max_worlds=23)
    wide = spec_examples.forest({
        "format": "rfcircuits.forest/1", "classes": ["a", "b"],
        "features": [{"name": f"X{i}", "states": [str(s) for s in range(4)]}
                     for i in range(7)],  # 4^7 worlds; 2^21 candidate general terms
        "trees": [{"nodes": [{"feature": "X0", "branches": [[[0, 1], 1], [[2, 3], 2]]},
                             {"class": "a"}, {"class": "b"}]}]})
    oracle = BruteForce(wide)
    assert oracle.explain((0,) * 7, ("sr", "nr")).necessary_reasons == (((0, 0b1),),)
    with pytest.raises(InputError, match="leave out gsr, gnr, flips"):
        oracle.explain((0,) * 7, ("gsr",))
