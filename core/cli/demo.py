"""``rfcircuits demo``: the main job end to end on data bundled with scikit-learn.

Trains a small random forest on the iris data, compiles its class formulas (paper Alg. 3 as
NNF, Alg. 3B as decision graphs) and explains a few test decisions in the readable form of
:meth:`rfcircuits.explanation.Explanation.to_text` (every field), with timings; then checks
that the SAT engine gives the same answers on every test instance.
"""

from __future__ import annotations

import textwrap
import time

import numpy as np

from rfcircuits.classformula import compile_nnf
from rfcircuits.datasets import Dataset, train_forest
from rfcircuits.dgraph import backend_text
from rfcircuits.explain import Explainer
from rfcircuits.forest import Instance

TREES, DEPTH, SEED, SHOWN = 25, 3, 0, 3


def bundled_dataset() -> Dataset:
    from sklearn.datasets import load_iris

    bunch = load_iris()
    names = [n.replace(" (cm)", "").replace(" ", "_") for n in bunch.feature_names]
    return Dataset("iris", names, np.asarray(bunch.data, dtype=np.float64),
                   np.asarray(bunch.target), [str(n) for n in bunch.target_names])


def _show(explainer: Explainer, x: Instance, number: int) -> None:
    start = time.perf_counter()
    e = explainer.explain_states(x)
    took = time.perf_counter() - start
    print(f"\nInstance {number}")
    print(textwrap.indent(e.to_text(), "  "))
    print(f"  ({1000 * took:.1f} ms for all explanations of this instance)")


def run_demo() -> int:
    data = bundled_dataset()
    print(f"Training a random forest on scikit-learn's {data.name} data "
          f"({len(data.X)} rows, {len(data.feature_names)} features, {len(data.classes)} classes)")
    trained = train_forest(data, TREES, DEPTH, SEED)
    forest = trained.forest
    print(f"  {TREES} trees of depth ≤ {DEPTH}, {forest.n_nodes} nodes; test accuracy "
          f"{100 * trained.accuracy:.1f}% (hard-majority vote; agrees with sklearn predict on "
          f"{100 * trained.vote_agreement:.1f}% of test rows)")
    print("  numeric features become interval states: " + ", ".join(
        f"{f.name} {len(f.states)}" for f in forest.features))
    start = time.perf_counter()
    comp = compile_nnf(forest)
    print(f"Class formulas as NNF circuits (paper Alg. 3, sorting networks): "
          f"{comp.total_nodes()} nodes in {time.perf_counter() - start:.3f} s")
    explainer = Explainer(forest, engine="graphs")
    start = time.perf_counter()
    graphs = explainer.graphs.compiled
    print(f"Class formulas as conjunctions of decision graphs (Alg. 3B, votes counted top-down): "
          f"{graphs.total_nodes()} nodes in {time.perf_counter() - start:.3f} s "
          f"(store: {backend_text()})")
    seen: set[int] = set()
    shown = 0
    for x in trained.test_instances:  # one instance per decision first, for variety
        if forest.decision(x) in seen:
            continue
        seen.add(forest.decision(x))
        shown += 1
        _show(explainer, x, shown)
        if shown == SHOWN:
            break
    _beside_sat(explainer, trained.test_instances)
    print("\nCheck any of these against independent oracles: rfcircuits crosscheck --help")
    return 0


def _beside_sat(graphs: Explainer, instances: list[Instance]) -> None:
    """The SAT engine, which answers forests too large for decision graphs, on the same
    instances: the same answers for every field it computes."""
    sat = Explainer(graphs.forest, engine="sat")
    start = time.perf_counter()
    what = ("sr", "nr", "ce", "robust", "flips")
    same = sum(sat.explain_states(x, what).to_json(engine=False) ==
               graphs.explain_states(x, what).to_json(engine=False) for x in instances)
    print(f"\nThe SAT engine (SAT calls on the NNF circuits; --engine sat, or auto for forests "
          f"whose decision graphs do not fit) on all {len(instances)} test instances: the same "
          f"SRs, NRs, CEs, robustness and flips for {same} ({time.perf_counter() - start:.2f} s)")
