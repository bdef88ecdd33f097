"""The DG facade (core/dgraph.py): masks to segments and back, reduction, derived views,
negation, traversal and exports, with every available node store."""

from __future__ import annotations

import json

import pytest

from rfcircuits import dgraph
from rfcircuits.apply import AND, OR, Apply
from rfcircuits.dgraph import DG, FALSE, LEAF, TRUE
from rfcircuits.dgstore import GAP
from rfcircuits.forest import Feature, Forest, Leaf, Tree

BACKENDS = sorted(dgraph.STORES)
X = Feature.categorical("X", ["a", "b", "c", "d", "e"])
Y = Feature.numeric("Y", [1.0, 2.0])


@pytest.fixture(params=BACKENDS)
def dg(request, monkeypatch) -> DG:
    monkeypatch.setattr(dgraph, "BACKEND", request.param)
    return DG([X, Y], order=[1, 0])


def test_node_is_canonical(dg):
    n = dg.node(0, [(0b00110, TRUE), (0b00001, FALSE), (0b11000, FALSE)])
    assert dg.store.segments(n) == ((1, FALSE), (3, TRUE), (5, FALSE))
    assert dg.branches[n] == ((0b11001, FALSE), (0b00110, TRUE))  # by lowest state
    same = dg.node(0, [(0b11001, FALSE), (0b00100, TRUE), (0b00010, TRUE), (0, TRUE)])
    assert same == n and dg.feature[n] == 0 and dg.vars[n] == 0b01
    assert dg.node(0, [(0b00011, TRUE), (0b11100, TRUE)]) == TRUE  # one child: that child
    gap = dg.node(0, [(0b00010, TRUE), (0b01000, FALSE)])  # states a, c, e infeasible here
    assert dg.store.segments(gap) == ((1, GAP), (2, TRUE), (3, GAP), (4, FALSE), (5, GAP))
    assert dg.branches[gap] == ((0b00010, TRUE), (0b01000, FALSE))
    assert dg.node(0, [(0b00010, TRUE)]) == TRUE


def test_node_rejects_bad_masks(dg):
    with pytest.raises(ValueError, match="overlap"):
        dg.node(0, [(0b011, TRUE), (0b110, FALSE)])
    with pytest.raises(ValueError, match="does not exist"):
        dg.node(1, [(0b1000, TRUE), (0b0111, FALSE)])
    with pytest.raises(ValueError, match="feasible"):
        dg.node(0, [(0, TRUE)])


def test_literals_leaves_and_flags(dg):
    assert dg.literal(0, dg.full[0]) == TRUE and dg.literal(0, 0) == FALSE
    assert dg.feature[FALSE] == dg.feature[TRUE] == LEAF and dg.branches[TRUE] == ()
    x, y = dg.literal(0, 0b101), dg.literal(1, 0b001)
    both = Apply(dg).ordered(AND, x, y)
    assert dg.feature[both] == 1  # Y is first in the order
    assert dg.ordered[both] and dg.vars[both] == 0b11
    retest = dg.node(0, [(0b00001, x), (0b11110, FALSE)])  # X below X: not ordered
    assert not dg.ordered[retest] and dg.ordered[x]
    assert len(dg) == len(dg.feature) == len(dg.ordered) and len(dg) > both


def test_negate_reachable_and_evaluate(dg):
    ap = Apply(dg)
    f = ap.ordered(OR, ap.ordered(AND, dg.literal(0, 0b00011), dg.literal(1, 0b110)),
                   dg.literal(0, 0b10000))
    g = dg.negate(f)
    assert dg.negate(g) == f and dg.negate(TRUE) == FALSE
    for xs in range(5):
        for ys in range(3):
            want = xs in (0, 1) and ys >= 1 or xs == 4
            assert dg.evaluate(f, (xs, ys)) == want and dg.evaluate(g, (xs, ys)) != want
    nodes = dg.reachable([f, g])
    assert nodes == sorted(nodes) and {FALSE, TRUE, f, g} <= set(nodes)
    assert dg.size([f]) == len(dg.reachable([f])) and dg.count_models(f) == 2 * 2 + 3
    dg.check_invariants([f, g])


def test_exports(dg):
    forest = Forest((X, Y), ("no", "yes"), (Tree((Leaf(0),)),))
    f = Apply(dg).ordered(AND, dg.literal(0, 0b00110), dg.literal(1, 0b001))
    doc = json.loads(json.dumps(dg.to_json([f], forest, "yes", "first")))
    assert doc["format"] == "rfcircuits.dg/1" and doc["roots"] == [len(doc["nodes"]) - 1]
    assert doc["nodes"][:2] == [{"leaf": False}, {"leaf": True}]
    assert doc["nodes"][-1]["feature"] == 1
    graph = dg.to_networkx([f])
    assert graph.number_of_nodes() == dg.size([f])
    assert {tuple(d["states"]) for _, _, d in graph.edges(data=True)} >= {("b", "c")}
    dot = dg.to_dot([f])
    assert dot.startswith("digraph dg {") and '"b,c"' in dot
