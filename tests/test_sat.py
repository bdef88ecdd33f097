"""The SAT oracle against the worked examples and against the brute-force oracle (the
definitions of docs/semantics.md)."""

from __future__ import annotations

import functools
import itertools
import random

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rfcircuits.errors import InputError
from rfcircuits.explanation import Explanation
from rfcircuits.forest import Branching, Feature, Forest, Leaf, Tree, classes_from_votes
from rfcircuits.terms import simple
from rfcircuits.crosscheck.oracles import sat
from rfcircuits.crosscheck.differential import spec_examples as ex
from rfcircuits.crosscheck.oracles.brute import BruteForce
from rfcircuits.crosscheck.oracles.sat import ENCODINGS, SatOracle
from rfcircuits.crosscheck.differential.strategies import (Limits, forest_and_instance,
                                                           random_forest, random_instance)

LIMITS = Limits(max_features=4, max_states=4, max_trees=7, max_classes=3)
PROPERTY = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
COMPARED = ("votes", "decision", "classes", "sufficient_reasons", "necessary_reasons",
            "contrastive", "robustness")


def _susan():
    forest = ex.forest(ex.SUSAN_FOREST)
    return forest, ex.instance(forest, ex.SUSAN)


def _flip():
    forest = ex.forest(ex.FLIP_FOREST)
    return forest, ex.instance(forest, ex.FLIP)


# -- worked examples ---------------------------------------------------------------------------


@pytest.mark.parametrize("ties", ["first", "all"])
def test_susan(ties):
    forest, x = _susan()
    answers = ex.SUSAN_ANSWERS
    with SatOracle(forest, ties) as oracle:
        e = oracle.explain(x)
        assert forest.classes[e.decision] == answers["decision"]
        assert e.sufficient_reasons == ex.expected(forest, answers["sufficient_reasons"])
        assert e.necessary_reasons == ex.expected(forest, answers["necessary_reasons"])
        assert e.robustness == answers["robustness"]
        for term in ex.expected(forest, answers["general_sufficient_reasons"]):
            assert oracle.check_gsr(x, term) == dict.fromkeys(
                ("valid", "prime", "variable_minimal"), True)
        for clause in ex.expected(forest, answers["general_necessary_reasons"]):
            assert oracle.check_gnr(x, clause) == dict.fromkeys(
                ("valid", "prime", "variable_minimal"), True)
        for clause in ex.expected(forest, answers["shortest_flips"]):
            assert oracle.check_flip(x, clause, e.robustness) == {"valid": True,
                                                                  "shortest": True}
        # The GSR (Age>=55 ∧ BType∈{A,B}) is not an SR, and the SR with BType=A is not prime in
        # GR; its features are an SR's, so no implicant of GR lies on fewer: variable-minimal.
        age_btype_ab = ex.expected(forest, [{"Age": [">=55"], "BType": ["A", "B"]}])[0]
        assert oracle.check_sr(x, age_btype_ab)["sufficient"]
        age_btype_a = ex.expected(forest, [{"Age": [">=55"], "BType": ["A"]}])[0]
        assert oracle.check_gsr(x, age_btype_a) == {"valid": True, "prime": False,
                                                    "variable_minimal": True}


def test_flip_example():
    forest, x = _flip()
    answers = ex.FLIP_ANSWERS
    with SatOracle(forest) as oracle:
        e = oracle.explain(x)
        assert e.necessary_reasons == ex.expected(forest, answers["necessary_reasons"])
        assert e.robustness == answers["robustness"] == 2
        (gnr,) = ex.expected(forest, answers["general_necessary_reasons"])
        assert all(oracle.check_gnr(x, gnr).values())
        assert oracle.check_flip(x, gnr, 2) == {"valid": True, "shortest": True}
        assert oracle.check_flip(x, gnr, 3) == {"valid": True, "shortest": False}
        # The NR is an implicate of CR, not of GR: X=2 ∧ Y=2 falsifies it and its GBox ⊆ Δ.
        nr = e.necessary_reasons[0]
        assert oracle.check_gnr(x, nr)["valid"] is False
        # The only shortest flip is X=3 ∧ Y=3.
        (world,) = [ex.instance(forest, w) for w in ex.FLIP_WORLDS]
        flips = [w for w in itertools.product(range(3), range(3))
                 if not oracle.member(w, e.decision)]
        assert flips == [world]


def test_figure1_class_counts():
    forest = ex.forest(ex.FIGURE1_FOREST)
    worlds = list(itertools.product(range(3), repeat=3))
    with SatOracle(forest) as oracle:
        for c, name in enumerate(forest.classes):
            assert sum(oracle.member(w, c) for w in worlds) == ex.FIGURE1_COUNTS[name]


# -- against brute force ----------------------------------------------------------------------


def _compare(forest, x, ties, encoding="totalizer", solver="cadical195"):
    brute = BruteForce(forest, ties).explain(x)
    with SatOracle(forest, ties, encoding=encoding, solver=solver) as oracle:
        mine = oracle.explain(x)
        for name in COMPARED:
            assert getattr(mine, name) == getattr(brute, name), name
    return brute


@pytest.mark.parametrize("ties", ["first", "all"])
@PROPERTY
@given(case=forest_and_instance(LIMITS))
def test_enumeration_matches_brute(ties, case):
    forest, x = case
    _compare(forest, x, ties)


@pytest.mark.parametrize("ties", ["first", "all"])
@PROPERTY
@given(case=forest_and_instance(LIMITS), seed=st.integers(0, 2**16))
def test_checks_accept_brute_items_and_reject_corruptions(ties, case, seed):
    check_brute_items_and_corruptions(*case, ties, seed)


def check_brute_items_and_corruptions(forest, x, ties, seed):
    rng = random.Random(seed)
    brute = BruteForce(forest, ties).explain(x)
    ok3 = dict.fromkeys(("valid", "prime", "variable_minimal"), True)
    with SatOracle(forest, ties) as oracle:
        for term in brute.sufficient_reasons:
            assert oracle.check_sr(x, term) == {"sufficient": True, "minimal": True}
            if term:  # dropping a literal of a minimal term loses sufficiency
                k = rng.randrange(len(term))
                assert oracle.check_sr(x, term[:k] + term[k + 1:]) == {"sufficient": False,
                                                                       "minimal": False}
        for clause in brute.necessary_reasons:
            assert oracle.check_nr(x, clause) == {"necessary": True, "minimal": True}
            others = [f for f in range(len(forest.features)) if f not in dict(clause)]
            if others:  # a superset of an NR is necessary but not minimal
                f = rng.choice(others)
                bigger = tuple(sorted(clause + ((f, 1 << x[f]),)))
                assert oracle.check_nr(x, bigger) == {"necessary": True, "minimal": False}
            k = rng.randrange(len(clause))
            assert oracle.check_nr(x, clause[:k] + clause[k + 1:])["necessary"] is False
            f, mask = clause[k]
            wide = mask | 1 << rng.choice(
                [s for s in range(forest.features[f].n_states) if not mask >> s & 1])
            if wide != forest.features[f].full:  # NRs are made of instance literals
                assert oracle.check_nr(x, clause[:k] + ((f, wide),) + clause[k + 1:])[
                    "necessary"] is False
        for t, ces in brute.contrastive:
            for clause in ces:
                assert oracle.check_ce(x, t, clause) == {"reaches": True, "minimal": True}
                k = rng.randrange(len(clause))
                assert oracle.check_ce(x, t, clause[:k] + clause[k + 1:])["reaches"] is False
        assert oracle.check_gsrs(x, brute.general_sufficient_reasons) == [ok3] * len(
            brute.general_sufficient_reasons)
        for term in brute.general_sufficient_reasons:
            assert oracle.check_gsr(x, term) == ok3
            for k, (f, mask) in enumerate(term):
                missing = [s for s in range(forest.features[f].n_states) if not mask >> s & 1]
                wide = mask | 1 << rng.choice(missing)
                if wide != forest.features[f].full:  # a prime implicant widened is no implicant
                    assert oracle.check_gsr(x, term[:k] + ((f, wide),) + term[k + 1:])[
                        "valid"] is False
        for clause in brute.general_necessary_reasons:
            assert oracle.check_gnr(x, clause) == ok3
            for k, (f, mask) in enumerate(clause):
                missing = [s for s in range(forest.features[f].n_states) if not mask >> s & 1]
                wide = mask | 1 << rng.choice(missing)
                if wide != forest.features[f].full:  # weaker: still an implicate, not prime,
                    # on the GNR's features, which no prime implicate's lie strictly inside
                    assert oracle.check_gnr(x, clause[:k] + ((f, wide),) + clause[k + 1:]) == {
                        "valid": True, "prime": False, "variable_minimal": True}
        r = brute.robustness
        for clause in brute.shortest_flips:
            assert oracle.check_flip(x, clause, r) == {"valid": True, "shortest": True}
            assert oracle.check_flip(x, clause, r + 1)["shortest"] is False
            assert oracle.check_flip(x, clause, r - 1)["shortest"] is False


@pytest.mark.parametrize("ties", ["first", "all"])
@pytest.mark.parametrize("tabled", [True, False], ids=["slices", "search"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=forest_and_instance(Limits(max_features=3, max_states=4, max_trees=5,
                                       max_classes=3)),
       seed=st.integers(0, 2**16))
def test_check_verdicts_equal_definitions(ties, tabled, case, seed):
    check_verdicts_equal_definitions(*case, ties, tabled, seed)


def check_verdicts_equal_definitions(forest, x, ties, tabled, seed):
    """Every verdict of every check, on arbitrary items, equals the brute-force definition;
    GNR checks both on tabled slices and by counter-example search."""
    rng = random.Random(seed)
    brute = BruteForce(forest, ties)
    delta = brute.class_worlds(forest.decision(x))
    gr = brute.general_reason(x, delta)
    full = brute.explain(x)
    n = len(forest.features)
    prime_implicants = set(brute._prime_implicants(x, gr))
    prime_implicates = set(brute._prime_implicates(x, gr))

    def variable_minimal(item, primes):
        """By the definition: no prime's feature set lies strictly inside the item's."""
        mine = {f for f, _ in item}
        return not any({f for f, _ in p} < mine for p in primes)

    with SatOracle(forest, ties) as oracle:
        oracle.max_slice_cells = oracle.max_slice_cells if tabled else 0
        for v in range(1 << n):
            items = simple(x, v)
            sufficient = brute.term_worlds(items) & ~delta == 0
            assert oracle.check_sr(x, items) == {
                "sufficient": sufficient, "minimal": items in full.sufficient_reasons}
            assert oracle.check_nr(x, items) == {
                "necessary": any(set(c) <= set(items) for c in full.necessary_reasons),
                "minimal": items in full.necessary_reasons}
            for t, ces in full.contrastive:
                assert oracle.check_ce(x, t, items)["minimal"] == (items in ces)
        options = [[None, *range(1, f.full)] for f in forest.features]
        candidates = list(itertools.product(*options))
        for choice in rng.sample(candidates, min(40, len(candidates))):
            item = tuple((f, m) for f, m in enumerate(choice) if m is not None)
            gsr = oracle.check_gsr(x, item)
            assert gsr == {
                "valid": brute.term_worlds(item) & ~gr == 0,
                "prime": item in prime_implicants,
                "variable_minimal": variable_minimal(item, prime_implicants)}
            assert all(gsr.values()) == (item in full.general_sufficient_reasons)
            gnr = oracle.check_gnr(x, item)
            assert gnr == {
                "valid": gr & ~brute.clause_worlds(item) == 0,
                "prime": item in prime_implicates,
                "variable_minimal": variable_minimal(item, prime_implicates)}
            assert all(gnr.values()) == (item in full.general_necessary_reasons)


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_encodings_agree(encoding):
    rng = random.Random(2024)
    for _ in range(8):
        forest = random_forest(rng, LIMITS)
        x = random_instance(rng, forest)
        for ties in ("first", "all"):
            _compare(forest, x, ties, encoding=encoding)


@pytest.mark.parametrize("solver", ["glucose4", "minisat22", "cadical195"])
def test_solvers_agree(solver):
    rng = random.Random(7)
    for _ in range(6):
        forest = random_forest(rng, LIMITS)
        _compare(forest, random_instance(rng, forest), rng.choice(["first", "all"]),
                 solver=solver)


def test_sklearn_forest_matches_brute():
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier

    from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values

    data, target = load_iris(return_X_y=True)
    model = RandomForestClassifier(n_estimators=5, max_depth=2, random_state=0).fit(data, target)
    forest = forest_from_sklearn(model, votes="hard")
    for x in instances_from_values(forest, data[::37]):
        for ties in ("first", "all"):
            _compare(forest, x, ties)


# -- certificate of SRs and NRs ---------------------------------------------------------------


@pytest.mark.parametrize("ties", ["first", "all"])
@PROPERTY
@given(case=forest_and_instance(LIMITS))
def test_certificate_accepts_the_true_reasons(ties, case):
    check_certificate_accepts(*case, ties)


def check_certificate_accepts(forest, x, ties):
    brute = BruteForce(forest, ties).explain(x, ("sr", "nr"))
    with SatOracle(forest, ties) as oracle:
        certificate = oracle.certify_reasons(x, brute.sufficient_reasons,
                                             brute.necessary_reasons)
        assert certificate.verdicts == dict.fromkeys(sat.CERTIFICATE_CHECKS, True)
        assert certificate.holds and certificate.describe() == "certified"


def _drop_literal(rng, forest, sets):
    """One non-empty set loses a feature."""
    options = [v for v in sets if v]
    if not options:
        return None
    v = rng.choice(options)
    return [u for u in sets if u != v] + [v - {rng.choice(sorted(v))}], v


def _add_literal(rng, forest, sets, keep=False):
    """One set gains a feature (with several states), replacing it or (``keep``) besides it."""
    options = [(v, f) for v in sets for f, feature in enumerate(forest.features)
               if f not in v and feature.n_states > 1]
    if not options:
        return None
    v, f = rng.choice(options)
    return [u for u in sets if keep or u != v] + [v | {f}], v


def _remove(rng, forest, sets):
    """One set is left out."""
    if not sets:
        return None
    v = rng.choice(sets)
    return [u for u in sets if u != v], v


#: Corruptions of the true SRs or NRs: the family, the change (the new sets and the set
#: changed, or None when it does not apply), the check that must fail, and whether its
#: counterexample then names the changed set missing.
CORRUPTIONS = {
    "SR with a literal dropped": ("sr", _drop_literal, "sr_sufficient", False),
    "SR with a literal added": ("sr", _add_literal, "sr_transversals", True),
    "SR missing": ("sr", _remove, "sr_transversals", True),
    "extra non-minimal SR": ("sr", functools.partial(_add_literal, keep=True), "sr_antichain",
                             False),
    "NR missing": ("nr", _remove, "sr_transversals", True),
    "NR with a literal dropped": ("nr", _drop_literal, "nr_frees", False),
    "NR with a literal added": ("nr", _add_literal, "sr_transversals", True),
    "extra non-minimal NR": ("nr", functools.partial(_add_literal, keep=True), "nr_antichain",
                             False),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(case=forest_and_instance(LIMITS), ties=st.sampled_from(["first", "all"]),
       seed=st.integers(0, 2**16))
def test_certificate_rejects_each_corruption(corruption, case, ties, seed):
    check_certificate_rejects(*case, corruption, ties, seed)


def check_certificate_rejects(forest, x, corruption, ties, seed):
    family, change, check, named = CORRUPTIONS[corruption]
    brute = BruteForce(forest, ties).explain(x, ("sr", "nr"))
    sets = {"sr": [frozenset(f for f, _ in t) for t in brute.sufficient_reasons],
            "nr": [frozenset(f for f, _ in c) for c in brute.necessary_reasons]}
    changed = change(random.Random(seed), forest, sets[family])
    assume(changed is not None)
    sets[family], original = changed
    srs, nrs = (Explanation.sets(simple(x, sum(1 << f for f in v)) for v in sets[k])
                for k in ("sr", "nr"))
    with SatOracle(forest, ties) as oracle:
        certificate = oracle.certify_reasons(x, srs, nrs)
        shown = oracle._shown(x, original)
    assert certificate.verdicts[check] is False and not certificate.holds
    if named:
        kind = family.upper()
        assert f"the {kind} {shown} is missing" in certificate.counterexamples[check]
        assert certificate.missing == (family, simple(x, sum(1 << f for f in original)))
    else:
        assert certificate.missing is None
    if "non-minimal" in corruption:  # only the antichain breaks (and an NR superset may free
        # with some of its features unchanged only)
        assert {k for k, v in certificate.verdicts.items() if not v} - {"nr_frees"} == {check}


@pytest.mark.parametrize("family, item, problem", [
    ("sr", ((0, 1),), "is not a literal of x"),  # Age=<55 where x has Age=>=55
    ("sr", ((1, 0b11),), "is not a literal of x"),  # two states of Weight
    ("nr", ((3, 1),), "is not a literal of x"),  # no such feature
    ("nr", ((2, 1), (0, 2)), "features repeat or are out of order"),
    ("nr", ((0, 2), (0, 2)), "features repeat or are out of order"),
    ("nr", "repeat", "repeats"),
    ("sr", "reverse", "comes after"),
])
def test_certificate_rejects_malformed_items(family, item, problem):
    forest, x = _susan()
    with SatOracle(forest) as oracle:
        e = oracle.explain(x, ("sr", "nr"))
        items = {"sr": e.sufficient_reasons, "nr": e.necessary_reasons}
        assert len(items[family]) >= 2
        items[family] = {"repeat": items[family] + items[family][-1:],
                         "reverse": items[family][::-1]}.get(item, items[family] + (item,))
        certificate = oracle.certify_reasons(x, items["sr"], items["nr"])
    check = f"{family}_well_formed"
    assert certificate.verdicts[check] is False
    assert problem in certificate.counterexamples[check]
    assert {k for k, v in certificate.verdicts.items() if v is None} == \
        set(sat.CERTIFICATE_CHECKS) - {"sr_well_formed", "nr_well_formed"}


@pytest.mark.parametrize("ties", ["first", "all"])
def test_certificate_of_a_valid_delta(ties):
    """Δ valid gives SRs ``[[]]`` and no NR; the certificate proves exactly that."""
    single = Forest((Feature.categorical("f", ["u", "v"]),), ("a",),
                    (Tree((Branching(0, ((1, 1), (2, 2))), Leaf(0), Leaf(0))),))
    for forest, x in ((_constant_forest(), (1, 0)), (single, (0,))):
        with SatOracle(forest, ties) as oracle:
            assert oracle.certify_reasons(x, ((),), ()).holds
            missing = oracle.certify_reasons(x, (), ())
            assert "the SR {} is missing" in missing.counterexamples["sr_transversals"]
            assert missing.missing == ("sr", ())
            extra = oracle.certify_reasons(x, ((),), (((0, 1 << x[0]),),))
            assert [k for k, v in extra.verdicts.items() if not v] == ["nr_frees"]
            assert "does not free" in extra.counterexamples["nr_frees"]


# -- edge cases and interface -----------------------------------------------------------------


def _constant_forest():
    """Every world votes ``a``; class ``b`` is unreachable (docs/semantics.md §11)."""
    features = (Feature.categorical("f", ["u", "v"]), Feature.numeric("g", []))
    return Forest(features, ("a", "b"), (Tree((Leaf(0),)), Tree((Leaf(0),))))


@pytest.mark.parametrize("ties", ["first", "all"])
def test_valid_delta_and_unreachable_target(ties):
    forest = _constant_forest()
    with SatOracle(forest, ties) as oracle:
        e = oracle.explain((1, 0))
        assert e.sufficient_reasons == ((),)
        assert e.necessary_reasons == ()
        assert e.robustness is None
        assert e.contrastive == ((1, ()),)
        assert oracle.check_sr((1, 0), ()) == {"sufficient": True, "minimal": True}
        assert oracle.check_flip((1, 0), ((0, 2),), None)["shortest"] is False


@pytest.mark.parametrize("ties", ["first", "all"])
def test_single_class(ties):
    features = (Feature.categorical("f", ["u", "v"]),)
    tree = Tree((Branching(0, ((1, 1), (2, 2))), Leaf(0), Leaf(0)))
    with SatOracle(Forest(features, ("a",), (tree,)), ties) as oracle:
        e = oracle.explain((0,))
        assert (e.classes, e.sufficient_reasons, e.necessary_reasons, e.contrastive,
                e.robustness) == ((0,), ((),), (), (), None)
        assert oracle.check_gsr((0,), ()) == dict.fromkeys(
            ("valid", "prime", "variable_minimal"), True)
        assert oracle.check_gnr((0,), ((0, 1),))["valid"] is False


def test_target_already_reached_and_ties_all():
    # One tree per class over a binary feature: at x both classes tie.
    features = (Feature.categorical("f", ["u", "v"]),)
    forest = Forest(features, ("a", "b"), (Tree((Leaf(0),)), Tree((Leaf(1),))))
    with SatOracle(forest, "all") as oracle:
        assert oracle.classes_of((0,)) == (0, 1)
        assert oracle.contrastive((0,), 1) == ((),)
        assert oracle.explain((0,)).contrastive == ()
    with SatOracle(forest, "first") as oracle:
        assert oracle.classes_of((0,)) == (0,)
        assert oracle.contrastive((0,), 1) == ()


def test_interface_errors():
    forest, x = _susan()
    with pytest.raises(InputError):
        SatOracle(forest, encoding="ladder")
    with pytest.raises(InputError):
        SatOracle(forest, solver="kissat404")
    with pytest.raises(InputError):
        SatOracle(forest, ties="some")
    with SatOracle(forest) as oracle:
        assert oracle.SUPPORTS == {"sr", "nr", "ce", "robust"}
        for what in ("gsr", "gnr", "flips"):
            with pytest.raises(NotImplementedError, match="check_gsr"):
                oracle.explain(x, ("sr", what))
        with pytest.raises(InputError):
            oracle.robustness((0, 0))
        with pytest.raises(InputError):
            oracle.contrastive(x, 2)
        with pytest.raises(InputError):
            oracle.check_ce(x, -1, ())
        with pytest.raises(InputError):
            oracle.check_sr(x, ((0, 3),))  # a full literal is not a literal
        with pytest.raises(InputError):
            oracle.check_gnr(x, ((1, 1), (1, 2)))
        with pytest.raises(InputError):  # any term of the family, not only the first
            oracle.check_gsrs(x, [((0, 1),), ((0, 3),)])
        e = oracle.explain(x, ("robust",))
        assert e.what == ("robust",) and e.sufficient_reasons == ()


def test_member_and_votes_match_the_forest():
    rng = random.Random(11)
    for _ in range(10):
        forest = random_forest(rng, LIMITS)
        for ties in ("first", "all"):
            with SatOracle(forest, ties) as oracle:
                for w in itertools.islice(
                        itertools.product(*(range(f.n_states) for f in forest.features)), 40):
                    assert oracle.votes(w) == tuple(forest.votes(w))
                    assert list(oracle.classes_of(w)) == forest.classes_of(w, ties)
                    assert [c for c in range(len(forest.classes)) if oracle.member(w, c)] == \
                        forest.classes_of(w, ties)



# -- strict ties and counterexample worlds, by the trees' votes ---------------------------------


def _worlds(forest):
    return list(itertools.product(*(range(f.n_states) for f in forest.features)))


def _strict_winners(votes):
    """The classes with strictly more votes than every other (none when the top ties)."""
    return [c for c, v in enumerate(votes) if all(v > u for d, u in enumerate(votes) if d != c)]


def _in_class(forest, w, c, ties):
    """``w ⊨ R^c`` under the tie policy, from the trees' votes at ``w``."""
    votes = forest.votes(w)
    if ties == "strict":
        return _strict_winners(votes) == [c]
    return c in classes_from_votes(votes, ties)


def test_strict_membership_is_a_strict_majority_on_every_world():
    rng = random.Random(29)
    tied = 0
    for _ in range(12):
        forest = random_forest(rng, LIMITS)
        worlds = _worlds(forest)
        x = random_instance(rng, forest)
        d = forest.decision(x)  # the first class with most votes
        with SatOracle(forest, "strict") as oracle:
            for w in worlds:
                winners = _strict_winners(forest.votes(w))
                tied += not winners
                assert list(oracle.classes_of(w)) == winners
                assert [c for c in range(len(forest.classes)) if oracle.member(w, c)] == winners
            assert oracle.decision(x) == d
            for v in range(1 << len(forest.features)):
                term = simple(x, v)
                expected = all(_strict_winners(forest.votes(w)) == [d] for w in worlds
                               if all(w[f] == x[f] for f, _ in term))
                assert oracle.check_sr(x, term)["sufficient"] == expected
    assert tied  # the strict policy differed from first somewhere
    with pytest.raises(InputError, match="strict"):
        SatOracle(ex.forest(ex.SUSAN_FOREST), "strictest")


@pytest.mark.parametrize("ties", ["first", "all"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=forest_and_instance(LIMITS))
def test_freeing_worlds_change_only_their_features_and_reach_the_goal(ties, case):
    check_freeing_worlds(*case, ties)


def check_freeing_worlds(forest, x, ties):
    """A world that leaves Δ (or reaches a class) changing only some features exists exactly
    when enumeration finds one, and the one returned does, by the trees' votes."""
    n = len(forest.features)
    worlds = _worlds(forest)
    d = forest.decision(x)
    with SatOracle(forest, ties) as oracle:
        for v in range(1 << n):
            features = {f for f in range(n) if v >> f & 1}
            for target in (None, *range(len(forest.classes))):
                def goal(w):
                    return not _in_class(forest, w, d, ties) if target is None \
                        else _in_class(forest, w, target, ties)

                found = [w for w in worlds if goal(w)
                         and all(w[f] == x[f] for f in range(n) if f not in features)]
                w = oracle.freeing_world(x, features, target)
                assert (w is None) == (not found)
                assert w is None or w in found


@pytest.mark.parametrize("ties", ["first", "all", "strict"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=forest_and_instance(LIMITS), seed=st.integers(0, 2**16))
def test_counterexample_worlds_satisfy_the_item_and_refute_it_by_the_votes(ties, case, seed):
    check_counterexample_worlds(*case, ties, seed)


def check_counterexample_worlds(forest, x, ties, seed):
    """Validity decided by enumerating worlds; every world returned is re-checked with the
    trees' votes, never with the oracle."""
    rng = random.Random(seed)
    n = len(forest.features)
    worlds = _worlds(forest)
    d = forest.decision(x)
    delta = {w for w in worlds if _in_class(forest, w, d, ties)}

    def changed(w):
        return {f for f in range(n) if w[f] != x[f]}

    def frees(features, goal):  # some world changing only ``features`` satisfies the goal
        return any(changed(w) <= features for w in goal)

    with SatOracle(forest, ties) as oracle:
        for v in range(1 << n):
            item = simple(x, v)
            features = {f for f, _ in item}
            w = oracle.counterexample(x, "sr", item)
            if all(w2 in delta for w2 in worlds if not changed(w2) & features):
                assert w is None
            else:
                assert not changed(w) & features and w not in delta
            goals = [("nr", None, [w2 for w2 in worlds if w2 not in delta])]
            goals += [("ce", t, [w2 for w2 in worlds if _in_class(forest, w2, t, ties)])
                      for t in range(len(forest.classes))]
            for kind, t, goal in goals:
                w = oracle.counterexample(x, kind, item, t)
                smaller = [f for f in features if frees(features - {f}, goal)]
                if not frees(features, goal) or not smaller:
                    assert w is None  # no world refutes it, or it is minimal
                else:
                    assert changed(w) < features and w in goal
        options = [[None, *range(1, f.full)] for f in forest.features]
        candidates = list(itertools.product(*options))
        for choice in rng.sample(candidates, min(20, len(candidates))):
            item = tuple((f, m) for f, m in enumerate(choice) if m is not None)
            wide = {f: m | 1 << x[f] for f, m in item}
            w = oracle.counterexample(x, "gsr", item)
            outside = [w2 for w2 in worlds if w2 not in delta
                       if all(m >> w2[f] & 1 for f, m in wide.items())]
            assert (w is None) == (not outside)
            if w is not None:
                assert w in outside
                if all(m >> x[f] & 1 for f, m in item):
                    assert all(m >> w[f] & 1 for f, m in item)
            # GR: the worlds whose GBox (each feature at its own or x's state) lies in Δ.
            gbox = {w2: set(itertools.product(*({s, x[f]} for f, s in enumerate(w2))))
                    for w2 in worlds}
            gr = [w2 for w2 in worlds if gbox[w2] <= delta]
            violations = [w2 for w2 in gr if not any(m >> w2[f] & 1 for f, m in item)]
            w = oracle.counterexample(x, "gnr", item)
            if violations:
                assert w in violations and all(_in_class(forest, w2, d, ties) for w2 in gbox[w])
            elif w is not None:  # a valid clause on features not variable-minimal
                features = {f for f, _ in item}
                assert changed(w) < features and w not in delta

def test_ctrl_c_inside_a_solver_call_is_keyboard_interrupt_and_the_solver_is_replaced(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import pysolvers

    rng = random.Random(3)
    forest = random_forest(rng, LIMITS)
    xs = [random_instance(rng, forest) for _ in range(2)]

    def interrupted(assumptions=()):
        raise pysolvers.error("Caught keyboard interrupt")  # what PySAT raises on Ctrl-C

    with SatOracle(forest) as oracle:
        broken = oracle._solver
        broken.solve = interrupted
        with pytest.raises(KeyboardInterrupt):
            oracle.member(xs[0], 0)
        assert oracle._solver is not broken  # never called again
        assert [c for c in range(len(forest.classes)) if oracle.member(xs[0], c)] == \
            forest.classes_of(xs[0], "first")
        expected = oracle.necessary_reasons(xs[0])
        oracle._cache = {"classes": oracle._cache["classes"]}  # the NRs again, the class known
        # An enumeration's own (fresh) solver is interrupted: the Ctrl-C comes out as
        # KeyboardInterrupt, and the next enumeration works.
        with monkeypatch.context() as patch:
            patch.setattr(sat.Solver, "solve", lambda self, assumptions=(): interrupted())
            with pytest.raises(KeyboardInterrupt):
                oracle.necessary_reasons(xs[0])
        assert oracle.necessary_reasons(xs[0]) == expected

        def failed(assumptions=()):
            raise pysolvers.error("some other failure")

        oracle._solver.solve = failed
        with pytest.raises(pysolvers.error):  # other errors are not taken for Ctrl-C
            oracle.member(xs[1], 0)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 20), data=st.data())
def test_strict_subset_finds_a_nested_pair_exactly_when_there_is_one(n, data):
    # The byte tables of unions (full and partial bytes of features) against all pairs.
    masks = data.draw(st.lists(st.integers(0, (1 << n) - 1), unique=True, max_size=40))
    sets = [tuple(f for f in range(n) if m >> f & 1) for m in masks]
    pair = sat._strict_subset(sets, n)
    nested = any(a != b and a & b == b for a in masks for b in masks)
    assert (pair is not None) == nested
    if pair is not None:
        i, j = pair
        assert i != j and masks[i] & masks[j] == masks[j]
