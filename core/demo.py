"""``rfcircuits demo``: the main job end to end on data bundled with scikit-learn.

Trains a small random forest on the iris data, compiles its class formulas (paper Alg. 3)
and prints a short readable report.
"""

from __future__ import annotations

import time

import numpy as np

from core.classformula import compile_nnf
from core.train import Dataset, train_forest

TREES, DEPTH, SEED = 25, 3, 0


def bundled_dataset() -> Dataset:
    from sklearn.datasets import load_iris

    bunch = load_iris()
    names = [n.replace(" (cm)", "").replace(" ", "_") for n in bunch.feature_names]
    return Dataset("iris", names, np.asarray(bunch.data, dtype=np.float64),
                   np.asarray(bunch.target), [str(n) for n in bunch.target_names])


def run_demo() -> int:
    data = bundled_dataset()
    print(f"Training a random forest on scikit-learn's {data.name} data "
          f"({len(data.X)} rows, {len(data.feature_names)} features, {len(data.classes)} classes)")
    trained = train_forest(data, TREES, DEPTH, SEED)
    forest = trained.forest
    print(f"  {TREES} trees of depth ≤ {DEPTH}, {forest.n_nodes} nodes; test accuracy "
          f"{100 * trained.accuracy:.1f}% (hard-majority vote; agrees with sklearn predict on "
          f"{100 * trained.vote_agreement:.1f}% of test rows)")
    print("  features as interval states:")
    for f in forest.features:
        print(f"    {f.name}: {len(f.states)} states {', '.join(f.states[:3])}"
              f"{', …' if len(f.states) > 3 else ''}")
    start = time.perf_counter()
    comp = compile_nnf(forest)
    took = time.perf_counter() - start
    print(f"Class formulas as NNF circuits (paper Alg. 3, sorting networks): "
          f"{comp.total_nodes()} nodes in {took:.3f} s")
    for c, name in enumerate(forest.classes):
        print(f"    R[{name}]: {comp.nodes(c)} nodes")
    return 0
