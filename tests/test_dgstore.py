"""The decision-graph node stores (dgstore.py, _dgstore.c) behind rfcircuits.dgraph.DG.

The C store must create the same nodes, with the same ids, as the pure-Python reference for
the same calls; class formulas compiled with either must equal the brute-force oracle; limits
(node budget, timeout, Ctrl-C) stop the C code; without the extension the pure-Python store
serves, silently.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from functools import reduce

import pytest

from rfcircuits import dgcompile, dgraph, dgstore
from rfcircuits.apply import AND, OR, Apply
from rfcircuits.dgcompile import compile_dg
from rfcircuits.dgraph import DG, FALSE, TRUE
from rfcircuits.errors import BudgetExceeded
from rfcircuits.forest import Feature
from rfcircuits.nnf import NNF
from rfcircuits.reasons import general_reason
from rfcircuits.crosscheck.oracles.brute import BruteForce
from rfcircuits.crosscheck.differential.harness import circuit_worlds, nnf_worlds
from rfcircuits.crosscheck.differential.strategies import Limits, random_forest

BACKENDS = sorted(dgraph.STORES)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def snapshot(dg: DG) -> list[tuple[int, tuple[tuple[int, int], ...], tuple, bool]]:
    """Every node of a manager as (feature, segments, branches, ordered), by id; a store's
    own branches (the C store's) must be what the segments say."""
    out = []
    for n in range(len(dg)):
        segments = dg.store.segments(n)
        assert dg.branches[n] == dgstore.segments_branches(segments), n
        out.append((dg.feature[n], segments, dg.branches[n], dg.ordered[n]))
    return out


def test_c_store_is_the_default():
    if os.environ.get("RFCIRCUITS_PURE_PYTHON") == "1":
        pytest.skip("pure Python requested")
    assert dgraph.BACKEND == "c" and "c" in dgraph.STORES


# -- same ids in both stores --------------------------------------------------------------------


def value(dg: DG, n: int, x: tuple[int, ...]) -> int:
    """The leaf instance ``x`` reaches from ``n`` (the gap marker where a state is infeasible:
    random nodes need not be weak test-once)."""
    while n > TRUE:
        state = x[dg.feature[n]]
        n = next(c for end, c in dg.store.segments(n) if state < end)
    return n


def random_session(rng: random.Random, features: list[Feature], steps: int) -> list[object]:
    """A random sequence of facade operations; returns every result in order."""
    k = len(features)
    order = list(range(k))
    rng.shuffle(order)
    dg = DG(features, order)
    ap = Apply(dg)
    nodes = [FALSE, TRUE]  # every id the session holds
    clean = [True, True]  # built by literal and ordered Apply: weak test-once (ordered)
    trace: list[object] = []
    for _ in range(steps):
        kind = rng.random()
        f = rng.randrange(k)
        n = features[f].n_states
        operands = [m for m, ok in zip(nodes, clean) if ok]
        if kind < 0.3:
            node, ok = dg.literal(f, rng.getrandbits(n) or 1), True
        elif kind < 0.45:  # a node over arbitrary children, some states left out (gaps)
            states = [s for s in range(n) if rng.random() < 0.8] or [0]
            groups: dict[int, int] = {}
            for s in states:
                child = rng.choice(nodes)
                groups[child] = groups.get(child, 0) | 1 << s
            node, ok = dg.node(f, [(m, c) for c, m in groups.items()]), False
        elif kind < 0.8:
            op = rng.choice((AND, OR))
            node, ok = ap.ordered(op, rng.choice(operands), rng.choice(operands)), True
        elif kind < 0.83:  # projection of an ordered node, and evaluation of some nodes
            node, ok = dg.exists(rng.choice(operands), f), True
            x = [rng.randrange(f.n_states) for f in features]
            rows = [rng.choice(operands) for _ in range(1 << rng.randrange(4))]
            trace.append((dg.store.evaluate(rows, x), dg.min_true_sets(rows, x)))
        elif kind < 0.85:  # thresholds of ordered nodes (repeats count)
            inputs = [rng.choice(operands) for _ in range(rng.randint(0, 6))]
            *more, node = dg.threshold(inputs, [rng.randint(-1, 7) for _ in range(3)])
            nodes.extend(more)
            clean.extend(True for _ in more)
            ok = True
        elif kind < 0.95:
            i = rng.randrange(len(nodes))
            node, ok = dg.negate(nodes[i]), clean[i]
        elif kind < 0.98:
            ap.clear()
            some = rng.sample(nodes, min(3, len(nodes)))
            x = [rng.randrange(f.n_states) for f in features]
            trace.append(dg.reachable(some))
            if rng.random() < 0.5:
                dg.prepare_search(some)
            trace.append(dg.min_deviations(some, x))
            continue
        else:  # garbage collection keeps the leaves and a random half, with their functions
            kept = [0, 1] + rng.sample(range(2, len(nodes)), (len(nodes) - 2) // 2)
            worlds = [tuple(rng.randrange(f.n_states) for f in features) for _ in range(20)]
            before = [[value(dg, nodes[i], x) for x in worlds] for i in kept]
            nodes, clean = dg.collect([nodes[i] for i in kept]), [clean[i] for i in kept]
            ap.clear()
            assert [[value(dg, m, x) for x in worlds] for m in nodes] == before
            dg.check_invariants([m for m, ok in zip(nodes, clean) if ok])
            trace.append(nodes)
            continue
        nodes.append(node)
        clean.append(ok)
        trace.append(node)
    trace.append(snapshot(dg))
    dg.check_invariants([m for m, ok in zip(nodes, clean) if ok])
    return trace


@pytest.mark.parametrize("seed", range(12))
def test_random_sessions_give_identical_stores(monkeypatch, seed):
    rng = random.Random(seed)
    # Few states, 64 states (the C store's widest 64-bit masks), more than 64 and
    # ExtraTrees-like 300 states.
    sizes = [rng.choice((2, 3, 5, 9)) for _ in range(rng.randint(2, 5))]
    sizes[rng.randrange(len(sizes))] = rng.choice((64, 70, 300))
    features = [Feature.categorical(f"f{i}", [f"s{j}" for j in range(n)])
                for i, n in enumerate(sizes)]
    traces = []
    for backend in BACKENDS:
        monkeypatch.setattr(dgraph, "BACKEND", backend)
        traces.append(random_session(random.Random(seed), features, 300))
    assert all(t == traces[0] for t in traces)


def test_exists_over_many_children_makes_the_same_nodes(monkeypatch):
    # A node on the quantified feature with six distinct children: both stores disjoin them
    # in the same balanced tree, so they create the same intermediate nodes with the same ids.
    snapshots = []
    for backend in BACKENDS:
        monkeypatch.setattr(dgraph, "BACKEND", backend)
        dg = DG([Feature.categorical("A", list("pqrstu")), Feature.categorical("B", list("abcdef")),
                 Feature.categorical("C", list("xyz"))])
        ap = Apply(dg)
        kids = [ap.conj(dg.literal(1, 1 << i | 1 << (i + 1) % 6), dg.literal(2, 1 << i % 3))
                for i in range(6)]
        assert len(set(kids)) == 6
        dg.exists(dg.node(0, [(1 << i, k) for i, k in enumerate(kids)]), 0)
        snapshots.append(snapshot(dg))
    assert all(s == snapshots[0] for s in snapshots)


@pytest.mark.parametrize("backend", BACKENDS)
def test_min_deviations_on_retests(monkeypatch, backend):
    # A weak test-once graph whose path to false through re-tests of A (x's state no longer
    # feasible there) deviates on A alone, while a shorter path deviates on A and B. The
    # re-tests must cost nothing; charged as deviations they would put the {A} path two
    # levels later, after {A, B} was already taken as minimal.
    monkeypatch.setattr(dgraph, "BACKEND", backend)
    a, b = 0, 1
    dg = DG([Feature.categorical("A", list("pqrs")), Feature.categorical("B", list("pq"))])
    r2 = dg.node(a, ((0b0010, FALSE), (0b0100, TRUE)))
    r1 = dg.node(a, ((0b0110, r2), (0b1000, TRUE)))
    q = dg.node(b, ((0b01, r1), (0b10, FALSE)))
    root = dg.node(a, ((0b0001, TRUE), (0b1110, q)))
    dg.check_invariants([root])
    assert dg.min_deviations([root], [0, 0]) == [1 << a]
    assert dg.min_deviations([root], [0, 1]) == [1 << a]
    assert dg.min_deviations([root], [1, 1]) == [0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_min_deviations_through_a_gap_after_a_found_set(monkeypatch, backend):
    # A node whose segment for x's state is a gap (as below any root list the store is asked
    # about) is passed through: every child is reached at the same level. {A} is found on
    # level 1 (root2) before level 1 reaches the gap on A (below root1's deviation on B):
    # that a deviation on A there would hold {A} must not stop the path to false, {B}.
    monkeypatch.setattr(dgraph, "BACKEND", backend)
    dg = DG([Feature.categorical("A", list("pqr")), Feature.categorical("B", list("pq"))])
    gap = dg.node(0, ((0b010, FALSE), (0b100, TRUE)))
    root1 = dg.node(1, ((0b01, TRUE), (0b10, gap)))
    root2 = dg.node(0, ((0b001, TRUE), (0b110, FALSE)))
    for roots in ([root1, root2], [root2, root1]):
        assert dg.min_deviations(roots, [0, 0]) == [0b01, 0b10]


@pytest.mark.skipif("c" not in dgraph.STORES, reason="needs the C store")
def test_min_deviations_with_more_root_lists_than_cached_layouts(monkeypatch):
    # The C store keeps a bounded number of search layouts; older ones are rebuilt on demand.
    monkeypatch.setattr(dgraph, "BACKEND", "c")
    rng = random.Random(11)
    f = random_forest(rng, Limits(max_features=4, max_states=6, max_trees=10, max_classes=3,
                                  max_depth=5))
    comp = compile_dg(f, "first", "dg-conj")
    dg = comp.dg
    nodes = [n for n in dg.reachable([r for roots in comp.roots for r in roots]) if n > TRUE]
    pairs = [[a, b] for a in nodes for b in nodes if a < b]
    assert len(pairs) > 200
    for _ in range(2):
        for roots in pairs[:200]:
            x = [rng.randrange(ft.n_states) for ft in f.features]
            assert dg.min_deviations(roots, x) == dgstore.min_deviations(
                dg.feature, dg.store.segments, roots, x)


@pytest.mark.skipif("c" not in dgraph.STORES, reason="needs the C store")
def test_min_deviations_on_a_larger_forest(monkeypatch):
    # Many sets expanded per node (past the C search's inline ones, into growing arrays) and
    # many found sets per level (its memo and pair buckets): the C search equals the Python
    # reference.
    from sklearn.datasets import load_wine
    from sklearn.ensemble import RandomForestClassifier

    from rfcircuits.sklearn_import import forest_from_sklearn, instances_from_values

    monkeypatch.setattr(dgraph, "BACKEND", "c")
    data, target = load_wine(return_X_y=True)
    model = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0)
    f = forest_from_sklearn(model.fit(data, target))
    comp = compile_dg(f, "first", "dg-conj")
    dg = comp.dg
    largest = 0
    for x in instances_from_values(f, data[::15]):
        for roots in comp.roots:
            got = dg.min_deviations(roots, x)
            assert got == dgstore.min_deviations(dg.feature, dg.store.segments, roots, x)
            largest = max(largest, len(got))
    assert largest > 50


@pytest.mark.skipif("c" not in dgraph.STORES, reason="needs the C store")
@pytest.mark.parametrize("n", [3, 255, 256, 65535, 65536])
def test_min_deviations_across_end_widths(monkeypatch, n):
    # The C search's layout stores segment ends in 1, 2 or 4 bytes, the fewest holding every
    # feature's state count: at the widths' edges it equals the reference, at states on
    # either side of each segment boundary. A deviates to false from its middle segment
    # only, through B's literal or on its own.
    monkeypatch.setattr(dgraph, "BACKEND", "c")
    third = n // 3
    dg = DG([Feature.categorical("A", [str(i) for i in range(n)]),
             Feature.categorical("B", list("pqr"))])
    b = dg.node(1, ((0b001, FALSE), (0b110, TRUE)))
    low, mid = (1 << third) - 1, (1 << 2 * third) - (1 << third)
    root = dg.node(0, ((low, b), (mid, FALSE), (((1 << n) - 1) ^ low ^ mid, TRUE)))
    seen = set()
    for a in (0, third - 1, third, 2 * third - 1, 2 * third, n - 1):
        for s in range(3):
            x = [a, s]
            got = dg.min_deviations([root], x)
            assert got == dgstore.min_deviations(dg.feature, dg.store.segments, [root], x)
            seen.add(tuple(got))
    # x falsifies (A's middle, or B = p below A's low segment); else {A}, and {B} as well
    # below A's low segment
    assert seen == {(0,), (1, 2), (1,)}


@pytest.mark.skipif("c" not in dgraph.STORES, reason="needs the C store")
def test_min_deviations_at_every_state_of_many_segments(monkeypatch):
    # The C search finds the instance's segment 16 one-byte ends at a time: a node of 40
    # segments (three blocks, the last partial) over 200 states, its children cycling through
    # B's node, false and true, equals the reference at every state.
    monkeypatch.setattr(dgraph, "BACKEND", "c")
    dg = DG([Feature.categorical("A", [str(i) for i in range(200)]),
             Feature.categorical("B", list("pqr"))])
    b = dg.node(1, ((0b001, FALSE), (0b110, TRUE)))
    cycle = (b, FALSE, TRUE)
    root = dg.node(0, tuple((((1 << 5) - 1) << 5 * i, cycle[i % 3]) for i in range(40)))
    seen = set()
    for a in range(200):
        for s in range(3):
            x = [a, s]
            got = dg.min_deviations([root], x)
            assert got == dgstore.min_deviations(dg.feature, dg.store.segments, [root], x)
            seen.add(tuple(got))
    assert seen == {(0,), (1,), (1, 2)}


@pytest.mark.parametrize("backend", BACKENDS)
def test_min_deviations_beyond_64_features(monkeypatch, backend):
    # The C store packs feature sets in 64 bits; wider forests take the reference search.
    # ∧_f (X_f = x_f) at x: its complete reason is the conjunction of x's states, whose prime
    # implicates are the singletons; x' differs on feature 69 and fails the formula.
    monkeypatch.setattr(dgraph, "BACKEND", backend)
    features = [Feature.categorical(f"f{i}", ["a", "b", "c"]) for i in range(70)]
    dg = DG(features)
    ap = Apply(dg)
    x = [i % 3 for i in range(70)]
    root = reduce(ap.conj, (dg.literal(f, 1 << x[f]) for f in range(70)), TRUE)
    assert dg.min_deviations([root], x) == [1 << f for f in range(70)]
    assert dg.min_deviations([root], x[:69] + [2]) == [0]
    if backend == "c":  # the C code itself refuses; its Python subclass took the reference
        with pytest.raises(OverflowError):
            dgraph.NATIVE.Store.min_deviations(dg.store, [root], x)


@pytest.mark.parametrize("seed", range(10))
def test_falsified_is_where_the_general_reason_can_be_falsified(monkeypatch, seed):
    # Against the general reason's closed form (rfcircuits.reasons) world by world: the graph
    # tests only the chosen features and holds at a world iff some world agreeing with it on
    # them falls outside GR (brute force's existential projection). Both stores give the
    # same graphs.
    rng = random.Random(seed)
    forest = random_forest(rng, Limits(max_features=4, max_states=5, max_trees=6, max_classes=3,
                                       max_depth=4))
    brute = BruteForce(forest)
    k = len(forest.features)
    # 1, 8 and 11 feature sets: one, a full and a partial batch of the C store's passes
    cases = [([rng.randrange(ft.n_states) for ft in forest.features],
              [rng.randrange(1 << k) for _ in range(n_sets)]) for n_sets in (1, 8, 11)]
    answers = []
    for backend in BACKENDS:
        monkeypatch.setattr(dgraph, "BACKEND", backend)
        comp = compile_dg(forest, "first", "dg-conj")
        dg = comp.dg
        got = []
        for x, sets in cases:
            roots = comp.roots[forest.decision(x)]
            nnf = NNF(forest.features)
            gr = nnf_worlds(nnf, [general_reason(dg, roots, x, nnf)], brute)[0]
            outside = [w for i, w in enumerate(brute.worlds) if not gr >> i & 1]
            nodes = dg.falsified(roots, x, sets)
            assert len(nodes) == len(sets)
            for v, node in zip(sets, nodes):
                assert dg.ordered[node] and dg.vars[node] & ~v == 0
                for w in brute.worlds:
                    reached = any(all(u[f] == w[f] for f in range(k) if v >> f & 1)
                                  for u in outside)
                    assert dg.evaluate(node, w) == reached
                got.append(sorted(w for w in brute.worlds if dg.evaluate(node, w)))
        answers.append(got)
    assert all(a == answers[0] for a in answers)


@pytest.mark.parametrize("backend", BACKENDS)
def test_falsified_with_every_or_no_feature(monkeypatch, backend):
    # False exactly where all k features leave x = 0 (one path to false, deviating on every
    # feature): on all features the general reason can be falsified at that world only; on
    # none, everywhere (some world falsifies it).
    monkeypatch.setattr(dgraph, "BACKEND", backend)
    k = 5
    dg = DG([Feature.categorical(f"f{i}", ["a", "b"]) for i in range(k)])
    node = FALSE
    for f in reversed(range(k)):
        node = dg.node(f, ((0b01, TRUE), (0b10, node)))
    assert dg.falsified([node], [0] * k, [(1 << k) - 1, 0]) == [dg.negate(node), TRUE]
    assert dg.falsified([TRUE], [0] * k, [0b101]) == [FALSE]
    assert dg.falsified([node], [0] * k, []) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_features_with_hundreds_of_states(monkeypatch, backend):
    """Masks beyond 64 bits survive the trip through segments and the stores' branches."""
    monkeypatch.setattr(dgraph, "BACKEND", backend)
    dg = DG([Feature.categorical("wide", [str(s) for s in range(300)]),
             Feature.categorical("b", ["0", "1"])])
    mask = 1 << 299 | 1 << 70 | 0b111 << 64 | 1
    lit = dg.literal(0, mask)
    assert [e for e, _ in dg.store.segments(lit)] == [1, 64, 67, 70, 71, 299, 300]
    assert dg.branches[lit] == ((mask, TRUE), (dg.full[0] & ~mask, FALSE))
    both = Apply(dg).ordered(AND, lit, dg.literal(1, 0b10))
    for s in (0, 1, 63, 64, 66, 67, 70, 71, 298, 299):
        for b in (0, 1):
            assert dg.evaluate(both, (s, b)) == (bool(mask >> s & 1) and b == 1), (s, b)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", range(6))
def test_min_true_sets_are_the_minimal_rows_that_hold(monkeypatch, backend, seed):
    """Upward closed or not, the rows' sets whose row holds while no proper subset's does,
    by size then value (each row evaluated apart here, through its branches)."""
    monkeypatch.setattr(dgraph, "BACKEND", backend)
    rng = random.Random(seed)
    forest = random_forest(rng, Limits(max_trees=4, max_classes=3, max_features=4))
    comp = compile_dg(forest)
    dg = comp.dg
    nodes = dg.reachable([r for roots in comp.roots for r in roots])
    for width in range(5):
        for _ in range(5):
            rows = [rng.choice(nodes) for _ in range(1 << width)]
            x = tuple(rng.randrange(f.n_states) for f in forest.features)
            holds = [value(dg, r, x) == TRUE for r in rows]
            want = [d for d in sorted(range(1 << width), key=lambda d: (d.bit_count(), d))
                    if holds[d] and not any(holds[e] for e in range(d) if e & d == e)]
            assert dg.min_true_sets(rows, x) == want, (rows, x)
    with pytest.raises(ValueError, match="power of two"):
        dg.min_true_sets(nodes[:3] if len(nodes) >= 3 else [FALSE] * 3, x)


def test_evaluate_on_a_store_larger_than_the_caches():
    """Past 2^20 nodes the C store interleaves its walks over several lanes (and memoises
    every store's walks): each root's value is still its own, including roots that share
    nodes, repeated roots and leaves."""
    wide = 1500
    dg = DG([Feature.categorical("top", [str(s) for s in range(4)]),
             Feature.categorical("wide", [str(s) for s in range(wide)])])
    # Node (a, b) on "wide" is false on the states [a, b), true elsewhere.
    cuts = [(a, b) for a in range(1, wide) for b in range(a + 1, wide)]
    make = dg.store.make
    lits = [make(1, ((a, TRUE), (b, FALSE), (wide, TRUE))) for a, b in cuts]
    assert len(dg) > 1 << 20
    rng = random.Random(7)
    tops = []
    for _ in range(300):
        picks = rng.sample(range(len(lits)), 2)
        tops.append((dg.node(0, [(0b0011, lits[picks[0]]), (0b1100, lits[picks[1]])]), picks))

    def lit_value(i: int, s: int) -> int:
        a, b = cuts[i]
        return int(not a <= s < b)

    for _ in range(20):
        x = (rng.randrange(4), rng.randrange(wide))
        roots, want = [], []
        for _ in range(400):
            kind = rng.randrange(3)
            if kind == 0:
                i = rng.randrange(len(lits))
                roots.append(lits[i])
                want.append(lit_value(i, x[1]))
            elif kind == 1:
                top, picks = rng.choice(tops)
                roots.append(top)
                want.append(lit_value(picks[x[0] >= 2], x[1]))
            else:
                leaf = rng.choice((FALSE, TRUE))
                roots.append(leaf)
                want.append(int(leaf == TRUE))
        assert dg.store.evaluate(roots, x) == sum(w << i for i, w in enumerate(want)).to_bytes(
            50, "little")


# -- class formulas against the oracle ----------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_compile_equals_brute_force_in_both_stores(monkeypatch, seed):
    f = random_forest(random.Random(seed), Limits(max_trees=7, max_classes=4))
    for ties in ("first", "all"):
        brute = BruteForce(f, ties)
        for apply, counter in (("ordered", "totalizer"), ("ordered", "oddeven"),
                               ("ordered", "topdown"), ("generic", "totalizer"),
                               ("generic", "oddeven")):
            for form in ("dg-conj", "dg"):
                shapes = []
                for backend in BACKENDS:
                    monkeypatch.setattr(dgraph, "BACKEND", backend)
                    comp = compile_dg(f, ties, form, apply, counter=counter)
                    comp.dg.check_invariants([r for rs in comp.roots for r in rs])
                    accepted = circuit_worlds(form, comp, range(len(f.classes)), brute)
                    for c, got in enumerate(accepted):
                        assert got == brute.class_worlds(c), (ties, apply, counter, form, backend,
                                                              c)
                        if form == "dg":
                            assert comp.dg.count_models(comp.roots[c][0]) == bin(got).count("1")
                    shapes.append((comp.roots, snapshot(comp.dg)))
                assert all(s == shapes[0] for s in shapes), (ties, apply, counter, form)


@pytest.mark.parametrize("seed", range(6))
def test_garbage_collection_between_networks(monkeypatch, seed):
    """Collecting after every pair network keeps the class formulas (renumbered inputs)."""
    monkeypatch.setattr(dgcompile, "COLLECT_GROWTH", 0.0)
    calls = []
    collect = DG.collect
    monkeypatch.setattr(DG, "collect", lambda dg, roots: calls.append(1) or collect(dg, roots))
    f = random_forest(random.Random(seed), Limits(max_trees=6, max_classes=5))
    k = len(f.classes)
    brute = BruteForce(f, "all")
    shapes = []
    for backend in BACKENDS:
        monkeypatch.setattr(dgraph, "BACKEND", backend)
        calls.clear()
        comp = compile_dg(f, "all", "dg", order="depth")
        assert len(calls) == k * (k - 1) // 2 - 1  # after every pair network but the last
        for c in range(len(f.classes)):
            comp.dg.check_invariants(comp.roots[c])
            assert comp.dg.count_models(comp.roots[c][0]) == bin(brute.class_worlds(c)).count("1")
            assert all(comp.dg.evaluate(comp.roots[c][0], x) == (c in f.classes_of(x, "all"))
                       for x in brute.worlds)
        shapes.append((comp.roots, comp.roots_3b, snapshot(comp.dg)))
    assert all(s == shapes[0] for s in shapes)


# -- paper Fig. 3 -------------------------------------------------------------------------------

X3 = Feature.categorical("X", ["x1", "x2", "x3"])
Y4 = Feature.categorical("Y", ["y1", "y2", "y3", "y4"])


def fig3(dg: DG, which: str, c: int) -> int:
    """Paper Fig. 3 (left, middle or right graph) as the Boolean graph of class c (1..3)."""
    leaf = {k: TRUE if k == c else FALSE for k in (1, 2, 3)}
    x12, x3 = 0b011, 0b100
    y = {s: sum(1 << (int(ch) - 1) for ch in s) for s in ("1", "2", "3", "4", "12", "23", "34",
                                                         "124", "134")}
    if which == "left":
        y3 = dg.node(1, [(y["1"], leaf[1]), (y["23"], leaf[2]), (y["4"], leaf[3])])
        y1 = dg.node(1, [(y["34"], leaf[1]), (y["12"], y3)])
        y2 = dg.node(1, [(y["34"], y3), (y["12"], leaf[3])])
    elif which == "middle":
        y3 = dg.node(1, [(y["1"], leaf[1]), (y["2"], leaf[2])])  # only y1, y2 feasible here
        y4 = dg.node(1, [(y["3"], leaf[2]), (y["4"], leaf[3])])
        y1 = dg.node(1, [(y["34"], leaf[1]), (y["12"], y3)])
        y2 = dg.node(1, [(y["34"], y4), (y["12"], leaf[3])])
    else:
        y1 = dg.node(1, [(y["134"], leaf[1]), (y["2"], leaf[2])])
        y2 = dg.node(1, [(y["3"], leaf[2]), (y["124"], leaf[3])])
    return dg.node(0, [(x12, y1), (x3, y2)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_figure3_weak_test_once(monkeypatch, backend):
    monkeypatch.setattr(dgraph, "BACKEND", backend)
    dg = DG([X3, Y4])
    worlds = [(x, y) for x in range(3) for y in range(4)]
    for c in (1, 2, 3):
        left, middle, right = (fig3(dg, w, c) for w in ("left", "middle", "right"))
        with pytest.raises(AssertionError, match="not weak test-once"):
            dg.check_invariants([left])
        dg.check_invariants([middle, right])
        for x in worlds:  # the three graphs are equivalent
            assert dg.evaluate(left, x) == dg.evaluate(middle, x) == dg.evaluate(right, x)
        assert dg.count_models(middle) == dg.count_models(right) \
            == sum(dg.evaluate(right, x) for x in worlds)


# -- limits -------------------------------------------------------------------------------------


def operands(dg: DG) -> tuple[int, int]:
    """Two random DNFs (ordered graphs, ~15k nodes together) whose conjunction is large."""
    rng = random.Random(7)
    ap = Apply(dg)
    out = []
    for _ in range(2):
        g = FALSE
        for _ in range(20):
            term = TRUE
            for f in rng.sample(range(12), 6):
                term = ap.ordered(AND, term, dg.literal(f, rng.getrandbits(6) or 1))
            g = ap.ordered(OR, g, term)
        out.append(g)
    return out[0], out[1]


FEATURES = [Feature.categorical(f"f{i}", [str(s) for s in range(6)]) for i in range(12)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_node_budget(monkeypatch, backend):
    monkeypatch.setattr(dgraph, "BACKEND", backend)
    dg = DG(FEATURES, max_nodes=500)
    with pytest.raises(BudgetExceeded, match=r"^decision graphs exceed --max-nodes 500$"):
        operands(dg)
    assert len(dg) == 502  # the leaves and exactly the budget


def test_node_budget_counts_the_threshold_table(monkeypatch):
    """A threshold's sub-problems hold memory as well: with room for every node it makes but
    not for its table, the budget stops it, at the same point in both stores."""
    def inputs(dg: DG) -> list[int]:
        rng = random.Random(3)
        ap = Apply(dg)
        return [ap.ordered(OR, dg.literal(rng.randrange(12), rng.getrandbits(6) or 1),
                           dg.literal(rng.randrange(12), rng.getrandbits(6) or 1))
                for _ in range(30)]

    stopped = []
    for backend in BACKENDS:
        monkeypatch.setattr(dgraph, "BACKEND", backend)
        free = DG(FEATURES)
        roots = inputs(free)
        before = len(free)
        free.threshold(roots, [15])
        dg = DG(FEATURES, max_nodes=len(free) - 2)
        roots = inputs(dg)
        with pytest.raises(BudgetExceeded, match=r"^decision graphs exceed --max-nodes"):
            dg.threshold(roots, [15])
        assert before < len(dg) < len(free)
        stopped.append(len(dg))
    assert len(set(stopped)) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_timeout_inside_the_store(monkeypatch, backend):
    monkeypatch.setattr(dgraph, "BACKEND", backend)
    dg = DG(FEATURES, timeout=0.0)
    with pytest.raises(BudgetExceeded, match=r"^compilation exceeds --timeout 0 s$"):
        a, b = operands(dg)
        dg.store.apply(AND, a, b)


@pytest.mark.skipif("c" not in dgraph.STORES, reason="needs the C store")
def test_ctrl_c_interrupts_a_long_c_apply(monkeypatch):
    monkeypatch.setattr(dgraph, "BACKEND", "c")
    dg = DG(FEATURES)
    a, b = operands(dg)
    before = len(dg)

    class Interrupted(Exception):
        pass

    def handler(signum, frame):
        raise Interrupted

    def signal_inside() -> None:
        # The store lets other threads run at its periodic checks: once this thread sees the
        # conjunction's first nodes, the Apply is under way in C (~0.2 s, checks every 64k
        # steps), and the signal is handled at its next check.
        while len(dg) == before and not done.is_set():
            time.sleep(0)
        if not done.is_set():
            os.kill(os.getpid(), signal.SIGALRM)

    old = signal.signal(signal.SIGALRM, handler)
    done = threading.Event()
    watcher = threading.Thread(target=signal_inside, daemon=True)
    try:
        watcher.start()
        with pytest.raises(Interrupted):
            dg.store.apply(AND, a, b)
    finally:
        done.set()
        watcher.join()
        signal.signal(signal.SIGALRM, old)
    # Stopped inside C: finishing the conjunction now creates nodes (a handler run only after
    # the call returned would find it complete). The store stays usable.
    interrupted_at = len(dg)
    assert dg.store.apply(AND, a, b) > TRUE and len(dg) > interrupted_at


@pytest.mark.skipif("c" not in dgraph.STORES, reason="needs the C store")
def test_c_store_validates_its_input():
    store = dgraph.STORES["c"]([3, 2], [0, 1], None, None, BudgetExceeded, "", "")
    with pytest.raises(ValueError, match="not canonical"):
        store.make(0, ((2, TRUE), (1, FALSE)))
    with pytest.raises(ValueError, match="not canonical"):
        store.make(0, ((1, TRUE), (3, 99)))
    with pytest.raises(ValueError, match="end at"):
        store.make(0, ((1, TRUE), (2, FALSE)))
    with pytest.raises(IndexError):
        store.make(5, ((1, TRUE),))
    with pytest.raises(IndexError):
        store.segments(7)
    inner = store.make(0, ((1, TRUE), (3, FALSE)))
    outer = store.make(0, ((1, inner), (3, TRUE)))  # re-tests feature 0: not ordered
    assert store.ordered[inner] and not store.ordered[outer]
    with pytest.raises(ValueError, match="ordered operands"):
        store.apply(AND, outer, inner)
    assert store.falsified([inner], [0, 0], [[0], [1]]) == [store.negate(inner), TRUE]
    with pytest.raises(ValueError, match="ordered nodes"):
        store.falsified([outer], [0, 0], [[0]])
    with pytest.raises(ValueError, match="out of range"):
        store.falsified([inner], [3, 0], [[0]])
    with pytest.raises(IndexError):
        store.falsified([99], [0, 0], [[0]])
    with pytest.raises(IndexError):
        store.falsified([inner], [0, 0], [[2]])
    with pytest.raises(TypeError):
        store.falsified([inner], [0, 0], [0])


# -- building and loading the extension ---------------------------------------------------------


def run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=300)


def test_pure_python_switch_and_missing_extension():
    code = "import rfcircuits.dgraph as d; print(d.BACKEND)"
    done = run_python(code, {"RFCIRCUITS_PURE_PYTHON": "1"})
    assert (done.stdout, done.stderr) == ("python\n", "")
    # an install without a C compiler has no rfcircuits._dgstore: the same, and no message
    # at import (the install printed it, and ``rfcircuits --version`` names the store)
    blocked = "import sys; sys.modules['rfcircuits._dgstore'] = None; " + code
    done = run_python(blocked, {"RFCIRCUITS_PURE_PYTHON": "0"})
    assert (done.stdout, done.stderr) == ("python\n", "")


# -- sifting the feature order (rfcircuits.featureorder.sift, the trigger of rfcircuits.dgcompile) ---------


@pytest.mark.parametrize("seed", range(12))
def test_sifted_auto_compile_equals_brute_force(monkeypatch, seed):
    """With the trigger lowered, ``order="auto"`` stops, sifts and compiles again; the class
    formulas are the oracle's, the order is the one :func:`sift` makes, and the first attempt
    really stopped (else the sifted order would not be used)."""
    f = random_forest(random.Random(seed), Limits(max_trees=7, max_classes=3))
    monkeypatch.setattr(dgcompile, "SIFT_TRIGGER", 3)
    monkeypatch.setattr(dgcompile, "_SIFTED", {})
    sifted = []
    real_sift = dgcompile.sift

    def spy(forest, order, *args, **kwargs):
        sifted.append(real_sift(forest, order, *args, **kwargs))
        return sifted[-1]

    monkeypatch.setattr(dgcompile, "sift", spy)
    for ties in ("first", "all", "first"):
        brute = BruteForce(f, ties)
        comp = compile_dg(f, ties, "dg")
        # sifted at most once: the later compiles of the forest reuse that order
        assert len(sifted) <= 1
        if not sifted:  # the first attempt fitted: only a tiny forest may
            assert len(comp.dg) <= 4
        else:
            assert sorted(sifted[0]) == list(range(len(f.features)))
            assert [comp.dg.rank.index(p) for p in range(len(f.features))] == sifted[0]
        comp.dg.check_invariants([r for rs in comp.roots for r in rs])
        for c, got in enumerate(circuit_worlds("dg", comp, range(len(f.classes)), brute)):
            assert got == brute.class_worlds(c), (ties, c)


@pytest.mark.parametrize("max_nodes", [None, 10 ** 6])
def test_a_compile_that_fits_the_trigger_keeps_the_callers_budget(monkeypatch, max_nodes):
    # The first attempt runs under SIFT_TRIGGER nodes; when it fits, its graphs must go on
    # under the caller's budget: negating them (CEs), Alg. 3A's conjunctions and the
    # explainer's searches create more nodes (waveform-21 stopped at the trigger this way).
    f = random_forest(random.Random(3), Limits(max_trees=7, max_classes=3))
    size = len(compile_dg(f, order="auto", max_nodes=max_nodes).dg)
    monkeypatch.setattr(dgcompile, "SIFT_TRIGGER", size)  # just fits
    comp = compile_dg(f, order="auto", max_nodes=max_nodes)
    assert len(comp.dg) == size and comp.dg.max_nodes == max_nodes
    ap = Apply(comp.dg)
    for roots in comp.roots:  # Alg. 3A's conjunctions: new nodes
        ap.conj(roots[0], roots[-1])
        comp.dg.negate(roots[0])
    assert len(comp.dg) > size


def test_sift_keeps_the_order_when_out_of_time_or_work():
    """Sifting is bounded: a passed deadline or no work budget returns the order as given;
    a real run returns a permutation and never one its windows find larger."""
    from rfcircuits.featureorder import feature_order, sift

    f = random_forest(random.Random(5), Limits(max_trees=7, max_features=4))
    order = feature_order(f, "index")
    created = dgcompile.created_nodes
    assert sift(f, list(order), created, deadline=0.0) == order
    assert sift(f, list(order), created, work=0) == order
    assert sorted(sift(f, list(order), created)) == list(range(len(f.features)))


def test_sifting_shrinks_a_badly_ordered_forest():
    """Trees that each test feature ``i`` then ``i + k`` (k = half the features) make large
    graphs under the index order, which keeps every pair ``k`` apart, and small ones when the
    pairs are adjacent; sifting must find a strictly smaller order than the index one."""
    from rfcircuits.featureorder import feature_order, sift
    from rfcircuits.forest import Branching, Forest, Leaf, Tree

    k = 5
    features = tuple(Feature.categorical(f"f{i}", ["a", "b"]) for i in range(2 * k))
    trees = tuple(Tree((Branching(i, ((1, 1), (2, 2))), Branching(i + k, ((1, 3), (2, 4))),
                        Leaf(0), Leaf(0), Leaf(1))) for i in range(k))
    f = Forest(features, ("no", "yes"), trees)
    index = feature_order(f, "index")
    before = compile_dg(f, order=index).total_nodes()
    after = compile_dg(f, order=sift(f, list(index), dgcompile.created_nodes)).total_nodes()
    assert after < before
