"""The NNF manager: hash-consing, folding, invariants, statistics and exports."""

from __future__ import annotations

import json

import networkx as nx
import pytest

from rfcircuits.forest import Feature
from rfcircuits.nnf import AND, FALSE, TRUE, NNF

FEATURES = [Feature.categorical("X", ["a", "b", "c"]), Feature.categorical("Y", ["p", "q"])]


def test_hash_consing_and_folding():
    m = NNF(FEATURES)
    a, b = m.literal(0, 0b011), m.literal(1, 0b01)
    assert m.literal(0, 0b011) == a
    assert m.literal(0, 0b111) == TRUE and m.literal(0, 0) == FALSE
    ab = m.and2(a, b)
    assert m.and2(b, a) == ab == m.conj([b, a, TRUE, a])
    assert m.and2(a, FALSE) == FALSE and m.and2(a, TRUE) == a and m.and2(a, a) == a
    assert m.or2(a, TRUE) == TRUE and m.or2(a, FALSE) == a
    assert m.conj([]) == TRUE and m.disj([]) == FALSE and m.disj([a]) == a
    assert m.kind[ab] == AND
    m.check_invariants()


def test_evaluation_and_stats():
    m = NNF(FEATURES)
    x_ab = m.literal(0, 0b011)
    y_p = m.literal(1, 0b01)
    root = m.or2(m.and2(x_ab, y_p), m.literal(0, 0b100))
    truth = {(x, y): m.evaluate(root, (x, y)) for x in range(3) for y in range(2)}
    assert truth == {(0, 0): True, (0, 1): False, (1, 0): True, (1, 1): False,
                     (2, 0): True, (2, 1): True}
    stats = m.stats([root])
    assert stats == {"nodes": 5, "edges": 4, "depth": 2}
    assert m.is_or_decomposable([root]) is False
    assert m.is_or_decomposable([m.or2(x_ab, y_p)]) is True


def test_invariant_checker_catches_corruption():
    m = NNF(FEATURES)
    g = m.and2(m.literal(0, 1), m.literal(1, 1))
    m.check_invariants()
    m.args[g] = (m.args[g][1], m.args[g][0])
    with pytest.raises(AssertionError):
        m.check_invariants()


def test_exports():
    from rfcircuits.forest import forest_from_json
    from rfcircuits.crosscheck.differential.spec_examples import SUSAN_FOREST

    forest = forest_from_json(SUSAN_FOREST)
    m = NNF(forest.features)
    root = m.or2(m.literal(0, 0b10), m.and2(m.literal(1, 0b001), m.literal(2, 0b0011)))
    doc = m.to_json(root, forest, "yes", "first")
    assert doc["format"] == "rfcircuits.nnf/1" and doc["class"] == "yes"
    for i, node in enumerate(doc["nodes"]):
        for key in ("and", "or"):
            assert all(c < i for c in node.get(key, []))
    assert doc["nodes"][-1] == {"or": [0, 3]} or "or" in doc["nodes"][-1]
    json.dumps(doc)
    graph = m.to_networkx([root])
    assert nx.is_directed_acyclic_graph(graph) and graph.number_of_nodes() == 5
    dot = m.to_dot([root])
    assert dot.startswith("digraph") and "Age∈{>=55}" in dot
