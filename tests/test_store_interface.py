"""The declared store interface (rfcircuits._store_abc.Store) and its two implementations.

Every member of the Protocol must exist on both store classes with the Protocol's parameters,
and the stores, driven by the same random calls of every method (on their own, without the
facade), must return the same values, node ids included, and raise the same errors.

The C store is loaded directly (also when ``RFCIRCUITS_PURE_PYTHON=1`` makes the Python store
the default). Where it did not load, the comparisons fail, unless this machine cannot build C
extensions at all (no C compiler or no Python headers), where they skip saying so: a build
that silently fell back to the Python store must not pass for a comparison of both.
"""

from __future__ import annotations

import inspect
import os
import random
import re
import shutil
import sysconfig
from array import array
from collections.abc import Callable

import pytest

from rfcircuits._store_abc import Store
from rfcircuits.dgcompile import tree_code
from rfcircuits.dgstore import FALSE, GAP, TRUE, PyStore
from rfcircuits.errors import BudgetExceeded
from rfcircuits.crosscheck.differential.strategies import Limits, random_forest


def cannot_build_extensions() -> str | None:
    """Why this machine cannot compile a C extension (no compiler, no Python headers), or
    None."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if not shutil.which(compiler):
        return f"no C compiler ({compiler})"
    headers = os.path.join(sysconfig.get_paths()["include"], "Python.h")
    if not os.path.exists(headers):
        return f"no Python headers ({headers})"
    return None


def c_store() -> type[Store]:
    """The C store's class; the test fails when it did not load where it could be built, and
    skips where it could not."""
    try:
        from rfcircuits.cstore import CStore
    except ImportError as exc:
        why = cannot_build_extensions()
        if why:
            pytest.skip(f"the C store cannot be built here: {why}")
        pytest.fail(f"the C store did not load ({exc}) although this machine can build it: "
                    "reinstall rfcircuits (pip install --force-reinstall --no-deps "
                    "--no-cache-dir .) and read the build's notice")
    return CStore


STORES: dict[str, Callable[[], type[Store]]] = {"python": lambda: PyStore, "c": c_store}

#: The Protocol's methods (its own namespace, not object's or Protocol's machinery).
METHODS = sorted(name for name, member in vars(Store).items()
                 if callable(member) and (not name.startswith("_") or name == "__len__"))
ATTRIBUTES = ("feature", "ordered")


def parameters(method: Callable[..., object]) -> list[tuple[str, inspect._ParameterKind]]:
    """Names and kinds of a method's parameters after ``self``."""
    return [(p.name, p.kind) for p in list(inspect.signature(method).parameters.values())[1:]]


def test_the_protocol_lists_what_the_facade_uses():
    assert set(METHODS) == {
        "__len__", "segments", "branches", "lookup", "make", "apply", "negate", "exists",
        "threshold", "tree_formulas", "evaluate", "min_true_sets", "reachable", "collect",
        "dump", "load",
        "clear", "node_bytes", "set_budget", "set_deadline",
        "prepare",
        "min_deviations", "falsified"}
    assert set(ATTRIBUTES) <= set(Store.__annotations__)
    for name in METHODS:
        assert inspect.getdoc(getattr(Store, name)), name


@pytest.mark.parametrize("backend", sorted(STORES))
def test_each_store_has_every_member_with_the_protocols_parameters(backend):
    cls = STORES[backend]()
    for name in METHODS:
        assert parameters(getattr(cls, name)) == parameters(getattr(Store, name)), (backend, name)
    store = make_store(cls, [2, 3])
    for name in ATTRIBUTES:
        assert list(getattr(store, name)) == ([-1, -1] if name == "feature" else [True, True])
    assert isinstance(store, Store)


def make_store(cls: type[Store], n_states: list[int], rank: list[int] | None = None) -> Store:
    return cls(n_states, rank if rank is not None else list(range(len(n_states))), None, None,
               BudgetExceeded, "too many nodes", "too long")


def outcome(call: Callable[[], object]) -> object:
    """The value of a call, or the type of the error it raises (the messages may differ)."""
    try:
        return call()
    except (ValueError, IndexError, TypeError, OverflowError, BudgetExceeded) as error:
        return type(error).__name__


def random_segments(rng: random.Random, n: int, nodes: list[int]) -> tuple[tuple[int, int], ...]:
    """Canonical segments over ``n`` states: increasing ends ending at ``n``, adjacent ones
    leading to different children, some states infeasible (``GAP``)."""
    ends = sorted(rng.sample(range(1, n), rng.randint(0, min(n - 1, 4)))) + [n]
    out: list[tuple[int, int]] = []
    for end in ends:
        child = GAP if rng.random() < 0.15 else rng.choice(nodes)
        if out and out[-1][1] == child:
            out[-1] = (end, child)
        else:
            out.append((end, child))
    return tuple(out)


def session(rng: random.Random, stores: list[Store], steps: int) -> list[object]:
    """The same random calls of every interface method on each store; asserts that they
    agree call by call and returns the trace."""
    forest = random_forest(rng, Limits(max_trees=4, max_classes=3, max_features=5))
    n_states = [f.n_states for f in forest.features]
    rank = list(range(len(n_states)))
    rng.shuffle(rank)
    stores = [make_store(cls, n_states, rank) for cls in stores]
    k = len(n_states)
    trace: list[object] = []

    def call(method: str, *args: object) -> object:
        results = [outcome(lambda s=s: getattr(s, method)(*args)) for s in stores]
        assert all(r == results[0] for r in results), (method, args, results)
        trace.append((method, results[0]))
        return results[0]

    codes = [tree_code(t) for t in forest.trees]
    pos, neg = call("tree_formulas", codes, len(forest.classes))
    nodes = sorted({FALSE, TRUE, *(n for side in (pos, neg) for ids in side for n in ids)})
    memory = [s.node_bytes() for s in stores]
    for _ in range(steps):
        store = stores[0]
        ordered = [n for n in nodes if store.ordered[n]]
        kind = rng.random()
        f = rng.randrange(k)
        x = [rng.randrange(n) for n in n_states]
        if kind < 0.25:
            made = call("make", f, random_segments(rng, n_states[f], nodes))
            if isinstance(made, int):
                nodes.append(made)
        elif kind < 0.5:
            nodes.append(call("apply", rng.randrange(2), rng.choice(ordered),
                              rng.choice(ordered)))
        elif kind < 0.55:
            nodes.append(call("negate", rng.choice(nodes)))
        elif kind < 0.6:
            nodes.append(call("exists", rng.choice(ordered), f))
        elif kind < 0.65:
            roots = [rng.choice(ordered) for _ in range(rng.randint(0, 5))]
            nodes.extend(call("threshold", roots, [rng.randint(-1, 6) for _ in range(3)]))
        elif kind < 0.7:
            call("evaluate", rng.sample(nodes, min(9, len(nodes))), x)
            call("min_true_sets", [rng.choice(nodes) for _ in range(1 << rng.randrange(4))], x)
        elif kind < 0.8:
            roots = rng.sample(ordered, min(3, len(ordered)))
            call("reachable", roots)
            if rng.random() < 0.5:
                call("prepare", roots)
            call("min_deviations", roots, x)
            # up to 11 feature sets: the C store's passes take 8 at a time
            call("falsified", roots, x, [[g for g in range(k) if rng.random() < 0.5]
                                         for _ in range(rng.randint(0, 11))])
        elif kind < 0.85:
            n = rng.choice([n for n in nodes if n > TRUE] or [FALSE])
            if n > TRUE:  # (the C store refuses a leaf's feature, which the reference trusts)
                call("lookup", store.feature[n], store.segments(n))
            call("lookup", f, random_segments(rng, n_states[f], nodes))
        elif kind < 0.87:
            call("clear")
            call("set_deadline", None, "too long")  # none was set: nothing changes
        elif kind < 0.9:  # a tight budget for one Apply, then none again
            call("set_budget", len(store) - 2 + rng.randint(0, 3), "too many nodes")
            made = call("apply", rng.randrange(2), rng.choice(ordered), rng.choice(ordered))
            if isinstance(made, int):
                nodes.append(made)
            call("set_budget", None, "too many nodes")
        elif kind < 0.93:
            dump_and_load(rng, call, lambda: [make_store(type(s), n_states, rank) for s in stores],
                          rng.sample(nodes, min(4, len(nodes))))
        else:
            kept = rng.sample(nodes, len(nodes) // 2)
            new = call("collect", kept)
            nodes = sorted({FALSE, TRUE, *new})
        for n in rng.sample(nodes, min(5, len(nodes))):
            call("segments", n)
            call("branches", n)
        # Memory differs by store, but only a collection gives any back.
        held = [s.node_bytes() for s in stores]
        assert all(h > 0 for h in held)
        assert all(h >= before for h, before in zip(held, memory)) or kind >= 0.93  # collect
        memory = held
    call("__len__")
    trace.append(("node_bytes", None))  # checked above, store by store
    for name in ATTRIBUTES:
        columns = [list(getattr(s, name)) for s in stores]
        assert all(c == columns[0] for c in columns), name
    return trace


def dump_and_load(rng: random.Random, call: Callable[..., object],
                  fresh: Callable[[], list[Store]], roots: list[int]) -> None:
    """``dump`` the graphs below ``roots``; ``load`` gives their ids back in the session's
    stores and the same dump from ``fresh`` stores of each kind; a damaged dump (a word
    changed, words cut off) is refused, or makes nodes, alike in every store."""
    code, numbers = call("dump", roots)
    assert call("load", code, numbers) == roots
    for store in fresh():
        assert store.dump(store.load(code, numbers)) == (code, numbers)
    words = array("i", code)
    if words:
        words[rng.randrange(len(words))] = rng.randint(-2, 12)
        call("load", words.tobytes(), numbers)
        call("load", code[:rng.randrange(len(code))], numbers)


@pytest.mark.parametrize("seed", range(25))
def test_both_stores_agree_on_every_method(seed):
    rng = random.Random(seed)
    trace = session(rng, [PyStore, c_store()], 120)
    used = {method for method, _ in trace}
    if seed == 0:  # a session calls every method (the others vary)
        assert used == set(METHODS) - {"prepare"} or used == set(METHODS)


def test_python_store_alone_runs_the_session():
    # Without the C store (a build without a compiler) the session still runs the reference.
    session(random.Random(99), [PyStore], 80)


@pytest.mark.parametrize("backend", sorted(STORES))
def test_load_names_the_damaged_node(backend):
    # Two features of 3 and 2 states; node 2 tests feature 1, node 3 feature 0 above it.
    cls = STORES[backend]()
    good = [1, 2, 1, FALSE, 2, TRUE, 0, 2, 1, TRUE, 3, 2]
    assert make_store(cls, [3, 2]).load(array("i", good).tobytes(), [3, 2]) == [3, 2]
    damage = {"no feature 5": (6, 5), "segment (4, 2)": (10, 4), "segment (3, 3)": (11, 3),
              "segments end at state 2 of 3": (10, 2), "4 segments": (7, 4)}
    for problem, (at, value) in damage.items():
        words = array("i", good)
        words[at] = value
        with pytest.raises(ValueError, match=rf"^node 3: {re.escape(problem)}"):
            make_store(cls, [3, 2]).load(words.tobytes(), [3])
    with pytest.raises(ValueError, match=r"^node 3: 2 segments.* in 3 words"):
        make_store(cls, [3, 2]).load(array("i", good[:-1]).tobytes(), [3])
    with pytest.raises(ValueError, match="not whole 4-byte words"):
        make_store(cls, [3, 2]).load(array("i", good).tobytes()[:-1], [3])
    with pytest.raises(ValueError, match="roots: not all among the 4 nodes"):
        make_store(cls, [3, 2]).load(array("i", good).tobytes(), [4])
    gaps = array("i", good)
    gaps[3] = gaps[5] = GAP  # node 2 leads nowhere
    with pytest.raises(ValueError, match="^node 2: .*lead to no child"):
        make_store(cls, [3, 2]).load(gaps.tobytes(), [2])
