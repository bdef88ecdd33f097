"""The OBDD oracle (crosscheck/oracles/bdd.py): the worked examples, agreement with the brute force,
circuit-file equivalence checking and its input validation."""

from __future__ import annotations

import copy
import gc
import itertools
import json
import random
import re
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rfcircuits.errors import InputError
from rfcircuits.forest import Feature, Forest, Leaf, Tree, forest_from_json
from rfcircuits.crosscheck.differential import spec_examples as ex
from rfcircuits.crosscheck.oracles.bdd import DG_FORMAT, NNF_FORMAT, BddOracle, CircuitCheck
from rfcircuits.crosscheck.oracles.brute import BruteForce
from rfcircuits.crosscheck.differential.strategies import (Limits, forest_and_instance, forests,
                                                           random_forest, random_instance)

LIMITS = Limits(max_features=4, max_states=4, max_trees=7, max_classes=3)
PROPERTY = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
BACKENDS = ["cudd", "autoref"]


def worlds(forest: Forest) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(f.n_states) for f in forest.features)))


# -- worked examples ---------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_susan(backend: str) -> None:
    forest = ex.forest(ex.SUSAN_FOREST)
    x = ex.instance(forest, ex.SUSAN)
    e = BddOracle(forest, backend=backend).explain(x)
    assert forest.classes[e.decision] == ex.SUSAN_ANSWERS["decision"]
    for name in ("sufficient_reasons", "necessary_reasons", "general_sufficient_reasons",
                 "general_necessary_reasons", "shortest_flips"):
        assert getattr(e, name) == ex.expected(forest, ex.SUSAN_ANSWERS[name]), name
    assert e.robustness == ex.SUSAN_ANSWERS["robustness"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_flip_example(backend: str) -> None:
    forest = ex.forest(ex.FLIP_FOREST)
    x = ex.instance(forest, ex.FLIP)
    e = BddOracle(forest, backend=backend).explain(x)
    assert forest.classes[e.decision] == ex.FLIP_ANSWERS["decision"]
    for name in ("necessary_reasons", "general_necessary_reasons", "shortest_flips"):
        assert getattr(e, name) == ex.expected(forest, ex.FLIP_ANSWERS[name]), name
    assert e.robustness == ex.FLIP_ANSWERS["robustness"]
    # The violations of the shortest GNRs are exactly the shortest flips.
    flips = set()
    for clause in e.shortest_flips:
        for w in worlds(forest):
            differs = {f for f in range(len(x)) if w[f] != x[f]}
            if differs == {f for f, _ in clause} and not any(m >> w[f] & 1 for f, m in clause):
                flips.add(w)
    assert flips == {ex.instance(forest, w) for w in ex.FLIP_WORLDS}


@pytest.mark.parametrize("backend", BACKENDS)
def test_figure1_model_counts(backend: str) -> None:
    forest = ex.forest(ex.FIGURE1_FOREST)
    oracle = BddOracle(forest, backend=backend)
    for ties in ("first", "all"):
        counts = {name: oracle.model_count(c, ties) for c, name in enumerate(forest.classes)}
        assert counts == ex.FIGURE1_COUNTS


# -- agreement with the brute force on random forests ------------------------------------------


def assert_formulas_match(oracle: BddOracle, brute: BruteForce) -> None:
    """Membership in every class formula on every world, and the model counts, agree."""
    for c in range(len(oracle.forest.classes)):
        members = brute.class_worlds(c)
        for i, w in enumerate(brute.worlds):
            assert oracle.holds(c, w) == bool(members >> i & 1), (c, w)
        assert oracle.model_count(c) == bin(members).count("1")


def assert_explanations_match(case: tuple[Forest, tuple[int, ...]], ties: str) -> None:
    forest, x = case
    assert BddOracle(forest, ties).explain(x).to_json() == \
        BruteForce(forest, ties).explain(x).to_json()


@PROPERTY
@given(forests(LIMITS), st.sampled_from(["first", "all"]))
def test_class_formulas_match_brute_force(forest: Forest, ties: str) -> None:
    assert_formulas_match(BddOracle(forest, ties), BruteForce(forest, ties))


@PROPERTY
@given(forest_and_instance(LIMITS), st.sampled_from(["first", "all"]))
def test_explanations_match_brute_force(case: tuple[Forest, tuple[int, ...]], ties: str) -> None:
    assert_explanations_match(case, ties)


@pytest.mark.parametrize("block", range(4))
def test_seeded_random_forests_match_brute_force(block: int) -> None:
    """Uniformly drawn (larger on average than hypothesis' draws) forests, both tie policies."""
    for seed in range(50 * block, 50 * block + 50):
        rng = random.Random(seed)
        forest = random_forest(rng, LIMITS)
        for ties in ("first", "all"):
            oracle, brute = BddOracle(forest, ties), BruteForce(forest, ties)
            for c in range(len(forest.classes)):
                assert {w for w in brute.worlds if oracle.holds(c, w)} == {
                    w for i, w in enumerate(brute.worlds) if brute.class_worlds(c) >> i & 1}
            for _ in range(2):
                x = random_instance(rng, forest)
                assert oracle.explain(x).to_json() == brute.explain(x).to_json(), (seed, ties, x)


def _minimal(family: set[int]) -> list[int]:
    out: list[int] = []
    for v in sorted(family, key=lambda m: bin(m).count("1")):
        if not any(u & v == u for u in out):
            out.append(v)
    return out


@pytest.mark.parametrize("seed", range(3))
def test_brief_scale_simple_reasons_by_definition(seed: int) -> None:
    """At the scale the oracle is meant for (6 features, 5 states, 10 trees) the brute force
    is too slow for general reasons; SRs, NRs, CEs and robustness are checked by definition
    over all worlds instead, and the oracle is inside its own limits."""
    rng = random.Random(1000 + seed)
    limits = Limits(max_features=6, max_states=5, max_trees=10, max_classes=3)
    forest = max((random_forest(rng, limits) for _ in range(80)),
                 key=lambda f: (f.n_worlds() * len(f.trees) * len(f.classes), f.n_nodes))
    assert BddOracle.too_big(forest) is None
    oracle = BddOracle(forest, "all")
    every = worlds(forest)
    members = [set(forest.classes_of(w, "all")) for w in every]
    x = random_instance(rng, forest)
    e = oracle.explain(x, ["sr", "nr", "ce", "robust"])
    n = len(forest.features)

    def diff(w: tuple[int, ...]) -> int:
        return sum(1 << f for f in range(n) if w[f] != x[f])

    def simple(sets: list[int]) -> tuple:
        return tuple(sorted((tuple((f, 1 << x[f]) for f in range(n) if v >> f & 1) for v in sets),
                            key=lambda t: [[f, [x[f]]] for f, _ in t]))

    outside = {diff(w) for w, m in zip(every, members) if e.decision not in m}
    hitting = {v for v in range(1 << n) if all(v & d for d in outside)}
    assert e.sufficient_reasons == simple(_minimal(hitting))
    assert e.necessary_reasons == simple(_minimal(outside))
    assert e.robustness == min((bin(d).count("1") for d in outside), default=None)
    assert e.contrastive == tuple(
        (t, simple(_minimal({diff(w) for w, m in zip(every, members) if t in m})))
        for t in range(len(forest.classes)) if t not in e.classes)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(forest_and_instance(Limits(max_features=3, max_states=3, max_trees=4, max_classes=3)))
def test_backends_agree(case: tuple[Forest, tuple[int, ...]]) -> None:
    forest, x = case
    answers = {b: BddOracle(forest, backend=b).explain(x).to_json() for b in BACKENDS}
    assert answers["cudd"] == answers["autoref"]


@settings(max_examples=20, deadline=None)
@given(forest_and_instance(LIMITS), st.sampled_from(["sr,nr", "gsr", "ce,flips", "robust"]))
def test_subsets_of_fields(case: tuple[Forest, tuple[int, ...]], what: str) -> None:
    forest, x = case
    keys = what.split(",")
    full = BddOracle(forest).explain(x).to_json()
    part = BddOracle(forest).explain(x, keys).to_json()
    assert part == {k: v for k, v in full.items() if k in part}
    assert len(part) == 5 + len(keys)


def _single_leaf_forest(classes: list[str]) -> Forest:
    return Forest((Feature.categorical("A", ["a0", "a1"]), Feature.numeric("N", [1.5, 2.5])),
                  tuple(classes), (Tree((Leaf(0),)),))


@pytest.mark.parametrize("classes", [["yes", "no"], ["only"]])
def test_valid_class_formula_edge_cases(classes: list[str]) -> None:
    forest = _single_leaf_forest(classes)
    x = (1, 2)
    e = BddOracle(forest).explain(x)
    assert e.sufficient_reasons == ((),)
    assert e.necessary_reasons == e.general_necessary_reasons == e.shortest_flips == ()
    assert e.general_sufficient_reasons == ((),)
    assert e.robustness is None
    # "no" is unreachable: its CEs are empty (docs/semantics.md §11).
    assert e.contrastive == (((1, ()),) if len(classes) == 2 else ())
    assert e.to_json() == BruteForce(forest).explain(x).to_json()


def test_explain_rejects_bad_input() -> None:
    oracle = BddOracle(ex.forest(ex.SUSAN_FOREST))
    with pytest.raises(InputError):
        oracle.explain((1, 0))
    with pytest.raises(InputError):
        oracle.explain((1, 0, 9))
    with pytest.raises(InputError):
        oracle.explain((1, 0, 0), what=["sr", "bogus"])
    with pytest.raises(InputError):
        BddOracle(ex.forest(ex.SUSAN_FOREST), backend="sylvan")


def test_oracle_in_a_reference_cycle_is_freed_cleanly(monkeypatch: pytest.MonkeyPatch) -> None:
    """dd.cudd complains ("Still N nodes referenced") if the collector frees a manager before
    its functions; the oracle parks its manager until they are gone."""
    seen: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    for _ in range(20):
        oracle = BddOracle(ex.forest(ex.SUSAN_FOREST))
        cycle: dict[str, Any] = {"oracle": oracle, "formula": oracle.class_formula(1)}
        cycle["self"] = cycle
        del oracle, cycle
    gc.collect()
    BddOracle(ex.forest(ex.SUSAN_FOREST))  # sweeps the parked managers
    gc.collect()
    assert seen == []


def test_too_big() -> None:
    assert BddOracle.too_big(ex.forest(ex.SUSAN_FOREST)) is None
    wide = Forest(tuple(Feature.categorical(f"f{i}", ["a", "b"]) for i in range(11)),
                  ("c0", "c1"), (Tree((Leaf(0),)),))
    assert "11 features" in (BddOracle.too_big(wide) or "")
    many = Forest((Feature.categorical("f", ["a", "b"]),), ("c0", "c1"),
                  tuple(Tree((Leaf(0),)) for _ in range(17)))
    assert "17 trees" in (BddOracle.too_big(many) or "")
    work = Forest(tuple(Feature.categorical(f"f{i}", [str(s) for s in range(10)])
                        for i in range(8)), ("c0", "c1", "c2"),
                  tuple(Tree((Leaf(0),)) for _ in range(10)))
    assert "class pairs" in (BddOracle.too_big(work) or "")


# -- circuit documents ---------------------------------------------------------------------------


def evaluate(doc: dict[str, Any], w: tuple[int, ...]) -> bool:
    """The document's value on world ``w``, straight from docs/formats.md (independent of the
    oracle)."""
    values: list[bool] = []
    for node in doc["nodes"]:
        if "const" in node:
            values.append(node["const"])
        elif "lit" in node:
            values.append(w[node["lit"][0]] in node["lit"][1])
        elif "and" in node:
            values.append(all(values[i] for i in node["and"]))
        elif "or" in node:
            values.append(any(values[i] for i in node["or"]))
        elif "leaf" in node:
            values.append(node["leaf"])
        else:
            values.append(any(values[child] for states, child in node["branches"]
                              if w[node["feature"]] in states))
    if doc["format"] == DG_FORMAT:
        return all(values[r] for r in doc["roots"])
    return values[-1]


def assert_verdict(check: CircuitCheck, doc: dict[str, Any], forest: Forest) -> None:
    """The verdict agrees with evaluating the document world by world; a counterexample
    really separates the circuit from the forest."""
    c = forest.classes.index(doc["class"])
    differ = [w for w in worlds(forest)
              if evaluate(doc, w) != (c in forest.classes_of(w, doc["ties"]))]
    assert check.equivalent == (not differ)
    if check.equivalent:
        assert check.counterexample is None and check.satisfied_by is None
        return
    assert check.counterexample is not None
    w = tuple(f.states.index(check.counterexample[f.name]) for f in forest.features)
    assert w in differ
    assert check.satisfied_by == ("circuit" if evaluate(doc, w) else "forest")
    assert check.class_name == doc["class"] and check.ties == doc["ties"]


def susan_nnf() -> dict[str, Any]:
    """Class "yes" of the Susan tree as NNF: Age>=55 ∧ (over ∨ under ∧ BType∈{A,B,AB} ∨
    normal ∧ BType∈{A,B})."""
    return {"format": NNF_FORMAT, "class": "yes", "ties": "first",
            "features": copy.deepcopy(ex.SUSAN_FOREST["features"]),  # NNF_ERRORS edits them
            "nodes": [{"lit": [0, [1]]},           # 0 Age>=55
                      {"lit": [1, [0]]},           # 1 Weight=over
                      {"lit": [1, [1]]},           # 2 Weight=under
                      {"lit": [2, [0, 1, 2]]},     # 3 BType∈{A,B,AB}
                      {"and": [2, 3]},             # 4
                      {"lit": [1, [2]]},           # 5 Weight=normal
                      {"lit": [2, [0, 1]]},        # 6 BType∈{A,B}
                      {"and": [5, 6]},             # 7
                      {"or": [1, 4, 7]},           # 8
                      {"and": [0, 8]}]}            # 9 root


def figure1_dg(label: str) -> dict[str, Any]:
    """The Figure 1 tree as a decision graph for one class (children before parents)."""
    leaf = {c: {"leaf": c == label} for c in ("c1", "c2", "c3")}
    return {"format": DG_FORMAT, "class": label, "ties": "first",
            "features": ex.FIGURE1_FOREST["features"],
            "nodes": [leaf["c1"], leaf["c2"], leaf["c3"],                      # 0 1 2
                      {"feature": 2, "branches": [[[0, 1], 1], [[2], 2]]},     # 3 Z
                      {"feature": 1, "branches": [[[2], 0], [[1], 1]]},        # 4 Y (x1)
                      {"feature": 0, "branches": [[[0], 4], [[1, 2], 3]]},     # 5 X
                      {"feature": 1, "branches": [[[0], 0], [[1, 2], 5]]}],    # 6 Y root
            "roots": [6]}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("ties", ["first", "all"])
def test_nnf_susan(ties: str, backend: str) -> None:
    forest = ex.forest(ex.SUSAN_FOREST)
    oracle = BddOracle(forest, backend=backend)
    doc = dict(susan_nnf(), ties=ties)
    check = oracle.check_circuit(doc, "susan.nnf.json")
    assert check.equivalent and "equivalent" in check.describe()
    assert_verdict(check, doc, forest)
    changed = copy.deepcopy(doc)
    changed["nodes"][3] = {"lit": [2, [0, 1]]}    # BType∈{A,B,AB} → {A,B}
    check = oracle.check_circuit(changed, "susan.nnf.json")
    assert not check.equivalent and "NOT equivalent" in check.describe()
    assert check.counterexample == {"Age": ">=55", "Weight": "under", "BType": "AB"}
    assert check.satisfied_by == "forest"
    assert_verdict(check, changed, forest)


@pytest.mark.parametrize("label", ["c1", "c2", "c3"])
def test_dg_figure1(label: str) -> None:
    forest = ex.forest(ex.FIGURE1_FOREST)
    oracle = BddOracle(forest)
    doc = figure1_dg(label)
    check = oracle.check_circuit(doc, "fig1.dg.json")
    assert check.equivalent
    assert_verdict(check, doc, forest)
    redirected = copy.deepcopy(doc)
    redirected["nodes"][5]["branches"][0][1] = 3  # X=x1 now goes to the Z test
    check = oracle.check_circuit(redirected, "fig1.dg.json")
    assert not check.equivalent
    assert_verdict(check, redirected, forest)


def test_dg_conjunction_of_roots() -> None:
    forest = ex.forest(ex.SUSAN_FOREST)
    oracle = BddOracle(forest)
    tree = {"format": DG_FORMAT, "class": "yes", "ties": "first",
            "features": copy.deepcopy(ex.SUSAN_FOREST["features"]),  # NNF_ERRORS edits them
            "nodes": [{"leaf": False}, {"leaf": True},                          # 0 1
                      {"feature": 2, "branches": [[[0, 1, 2], 1], [[3], 0]]},   # 2
                      {"feature": 2, "branches": [[[0, 1], 1], [[2, 3], 0]]},   # 3
                      {"feature": 1, "branches": [[[0], 1], [[1], 2], [[2], 3]]},  # 4
                      {"feature": 0, "branches": [[[1], 4], [[0], 0]]},         # 5 the tree
                      {"feature": 0, "branches": [[[1], 1], [[0], 0]]},         # 6 Age>=55
                      {"feature": 2, "branches": [[[3], 0], [[0, 1, 2], 1]]}],  # 7 BType≠O
            "roots": [5, 6]}
    check = oracle.check_circuit(tree, "susan.dg.json")
    assert check.equivalent
    assert_verdict(check, tree, forest)
    tree["roots"] = [5, 7]  # drops Weight=over ∧ BType=O
    check = oracle.check_circuit(tree, "susan.dg.json")
    assert not check.equivalent and check.satisfied_by == "forest"
    assert_verdict(check, tree, forest)
    tree["roots"] = []      # the empty conjunction is true
    assert_verdict(oracle.check_circuit(tree), tree, forest)


def dnf_document(forest: Forest, models: set[tuple[int, ...]], label: str,
                 ties: str) -> dict[str, Any]:
    """An NNF document: the disjunction of the given worlds."""
    nodes: list[dict[str, Any]] = []
    lit: dict[tuple[int, int], int] = {}
    for f, feature in enumerate(forest.features):
        for s in range(feature.n_states):
            lit[f, s] = len(nodes)
            nodes.append({"lit": [f, [s]]})
    terms = []
    for w in sorted(models):
        terms.append(len(nodes))
        nodes.append({"and": [lit[f, s] for f, s in enumerate(w)]})
    nodes.append({"or": terms})
    return {"format": NNF_FORMAT, "class": label, "ties": ties,
            "features": [f.to_json() for f in forest.features], "nodes": nodes}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(forests(LIMITS), st.sampled_from(["first", "all"]), st.data())
def test_check_circuit_against_brute_force(forest: Forest, ties: str, data: st.DataObject
                                           ) -> None:
    oracle, brute = BddOracle(forest), BruteForce(forest, ties)
    c = data.draw(st.integers(0, len(forest.classes) - 1))
    models = {w for i, w in enumerate(brute.worlds) if brute.class_worlds(c) >> i & 1}
    doc = dnf_document(forest, models, forest.classes[c], ties)
    assert oracle.check_circuit(doc).equivalent
    w = data.draw(st.sampled_from(brute.worlds))
    check = oracle.check_circuit(dnf_document(forest, models ^ {w}, forest.classes[c], ties))
    assert not check.equivalent
    assert check.counterexample == {f.name: f.states[s] for f, s in zip(forest.features, w)}
    assert check.satisfied_by == ("forest" if w in models else "circuit")


def test_check_circuit_file(tmp_path: Any) -> None:
    forest = ex.forest(ex.SUSAN_FOREST)
    oracle = BddOracle(forest)
    path = tmp_path / "yes.nnf.json"
    path.write_text(json.dumps(susan_nnf()), encoding="utf-8")
    check = oracle.check_circuit_file(path)
    assert check.equivalent and check.source == str(path)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="yes.nnf.json"):
        oracle.check_circuit_file(path)
    with pytest.raises(InputError, match="no such file"):
        oracle.check_circuit_file(tmp_path / "missing.json")


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def mutate(doc: dict[str, Any]) -> dict[str, Any]:
        target: Any = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        return doc
    return mutate


def _drop(key: str) -> Any:
    def mutate(doc: dict[str, Any]) -> dict[str, Any]:
        del doc[key]
        return doc
    return mutate


NNF_ERRORS = [
    (_set(("format",), "rfcircuits.nnf/2"), "field 'format'"),
    (_set(("format",), 7), "field 'format' must be a string"),
    (_set(("class",), "maybe"), "unknown class 'maybe'"),
    (_set(("ties",), "last"), "field 'ties'"),
    (_drop("features"), "missing field 'features'"),
    (_set(("features",), ex.FLIP_FOREST["features"]), "lists 2 features"),
    (_set(("features", 1, "states"), ["over", "under", "fine"]), "features[1]"),
    (_set(("nodes",), []), "field 'nodes' is empty"),
    (_set(("nodes",), {"0": {"const": True}}), "field 'nodes' must be a list"),
    (_set(("extra",), 1), "unknown field 'extra'"),
    (_set(("nodes", 4), {"and": [2, 7]}), "node 4, field 'and'[1]"),
    (_set(("nodes", 4), {"and": [2, -1]}), "node 4, field 'and'[1]"),
    (_set(("nodes", 4), {"and": [2, "3"]}), "node 4, field 'and'[1]"),
    (_set(("nodes", 4), {"and": 3}), "field 'and' must be a list"),
    (_set(("nodes", 4), {"xor": [2, 3]}), "node 4: unknown field 'xor'"),
    (_set(("nodes", 4), {"and": [2], "or": [3]}), "node 4: expected an object"),
    (_set(("nodes", 4), [2, 3]), "node 4: expected an object"),
    (_set(("nodes", 0), {"const": 1}), "field 'const' must be a boolean"),
    (_set(("nodes", 0), {"lit": ["Age", [1]]}), "node 0, field 'lit': feature must be"),
    (_set(("nodes", 0), {"lit": [3, [1]]}), "node 0, field 'lit': feature must be"),
    (_set(("nodes", 0), {"lit": [0, [2]]}), "state index 2 out of range"),
    (_set(("nodes", 0), {"lit": [0, [True]]}), "state indices must be integers"),
    (_set(("nodes", 0), {"lit": [0, [1, 1]]}), "listed twice"),
    (_set(("nodes", 0), {"lit": [0, [0, 1]]}), "non-empty proper subset"),
    (_set(("nodes", 0), {"lit": [0, []]}), "non-empty proper subset"),
    (_set(("nodes", 0), {"lit": [0]}), "field 'lit' must be"),
    (_set(("nodes", 0), {"lit": [0, 1]}), "states must be a list"),
]


@pytest.mark.parametrize(("mutate", "message"), NNF_ERRORS)
def test_malformed_nnf(mutate: Any, message: str) -> None:
    oracle = BddOracle(ex.forest(ex.SUSAN_FOREST))
    # match= rather than "as info": an ExceptionInfo kept in the test frame makes a reference
    # cycle, and dd.cudd warns when the garbage collector frees a manager in a cycle.
    with pytest.raises(InputError, match=r"^bad\.nnf\.json: .*" + re.escape(message)):
        oracle.check_circuit(mutate(susan_nnf()), "bad.nnf.json")


DG_ERRORS = [
    (_drop("roots"), "missing field 'roots'"),
    (_set(("roots",), [7]), "roots[0]: a root 7"),
    (_set(("roots",), 6), "field 'roots' must be a list"),
    (_set(("nodes", 5, "branches", 0, 1), 5), "node 5, branch 0: child 5"),
    (_set(("nodes", 5, "branches", 0, 1), 6), "node 5, branch 0: child 6"),
    (_set(("nodes", 5, "branches", 0), [[0], 4, 1]), "node 5, branch 0: expected"),
    (_set(("nodes", 5, "branches", 1, 0), [0, 2]), "more than one branch"),
    (_set(("nodes", 5, "branches", 1, 0), []), "empty state set"),
    (_set(("nodes", 5, "branches", 1, 0), [1, 3]), "state index 3 out of range"),
    (_set(("nodes", 5, "branches"), []), "at least one branch"),
    (_set(("nodes", 5, "feature"), "X"), "field 'feature' must be an integer"),
    (_set(("nodes", 5, "feature"), 3), "feature must be an index"),
    (_set(("nodes", 0), {"leaf": "yes"}), "field 'leaf' must be a boolean"),
    (_set(("nodes", 0), {"leaf": True, "feature": 0}), "node 0: unknown field 'feature'"),
    (_set(("nodes", 0), {"const": True}), "node 0: unknown field 'const'"),
    (_set(("nodes", 0), {}), "node 0: missing field 'feature'"),
    (_set(("nodes", 3, "class"), "c1"), "node 3: unknown field 'class'"),
]


@pytest.mark.parametrize(("mutate", "message"), DG_ERRORS)
def test_malformed_dg(mutate: Any, message: str) -> None:
    oracle = BddOracle(ex.forest(ex.FIGURE1_FOREST))
    with pytest.raises(InputError, match=r"^bad\.dg\.json: .*" + re.escape(message)):
        oracle.check_circuit(mutate(figure1_dg("c2")), "bad.dg.json")


def test_malformed_top_level() -> None:
    oracle = BddOracle(ex.forest(ex.SUSAN_FOREST))
    for doc in ([], "nnf", None, 3):
        with pytest.raises(InputError, match="expected a JSON object"):
            oracle.check_circuit(doc, "x.json")
    # A numeric feature's thresholds must match too (the states derive from them).
    forest = forest_from_json({"format": "rfcircuits.forest/1", "classes": ["a", "b"],
                               "features": [{"name": "x", "thresholds": [0.5, 1.5]}],
                               "trees": [{"nodes": [{"class": "a"}]}]})
    doc = {"format": NNF_FORMAT, "class": "a", "ties": "first",
           "features": [{"name": "x", "thresholds": [0.5, 2.5]}], "nodes": [{"const": True}]}
    with pytest.raises(InputError, match=r"features\[0\]"):
        BddOracle(forest).check_circuit(doc)
    doc["features"][0]["thresholds"] = [0.5, 1.5]
    assert BddOracle(forest).check_circuit(doc).equivalent
