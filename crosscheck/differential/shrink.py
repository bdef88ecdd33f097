"""Shrinking a failing case: the smallest forest and instance list that still fail.

Greedy: try simplifications in order and keep the first one on which the failure persists,
until none does. Simplifications: keep a single instance; drop a tree; collapse an internal
node into a leaf; drop a feature no tree tests; merge two adjacent states no branch separates
(for a numeric feature, drop a threshold); drop the last class if no leaf votes for it. Every
candidate is a valid forest (invalid ones are skipped).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

from rfcircuits.errors import InputError
from rfcircuits.forest import (Branching, Feature, Forest, Instance, Leaf, Tree, TreeNode,
                               interval_names)

Case = tuple[Forest, list[Instance]]


def shrink(forest: Forest, instances: Sequence[Instance],
           fails: Callable[[Forest, list[Instance]], bool], budget: int = 400) -> Case:
    """The smallest case found (within ``budget`` attempts) on which ``fails`` holds."""
    current: Case = (forest, list(instances))
    attempts = 0
    improved = True
    while improved and attempts < budget:
        improved = False
        for candidate in _candidates(*current):
            attempts += 1
            if fails(*candidate):
                current = candidate
                improved = True
                break
            if attempts >= budget:
                break
    return current


def _candidates(forest: Forest, instances: list[Instance]) -> Iterator[Case]:
    if len(instances) > 1:
        for x in instances:
            yield forest, [x]
    for t in range(len(forest.trees)):
        if len(forest.trees) > 1:
            yield from _valid(forest, forest.features, forest.classes,
                              forest.trees[:t] + forest.trees[t + 1:], instances)
    for t, tree in enumerate(forest.trees):
        for k, node in enumerate(tree.nodes):
            if type(node) is Branching:
                for leaf in _leaves(tree):
                    trees = list(forest.trees)
                    trees[t] = _compact(tree.nodes[:k] + (leaf,) + tree.nodes[k + 1:])
                    yield from _valid(forest, forest.features, forest.classes, trees, instances)
    tested = {n.feature for tree in forest.trees for n in tree.nodes if type(n) is Branching}
    for f in range(len(forest.features)):
        if f not in tested:
            yield from _without_feature(forest, instances, f)
    for f, feature in enumerate(forest.features):
        for s in range(feature.n_states - 1):
            yield from _merge_states(forest, instances, f, s)
    last = len(forest.classes) - 1
    if last >= 2 and not any(type(n) is Leaf and n.label == last
                             for tree in forest.trees for n in tree.nodes):
        yield from _valid(forest, forest.features, forest.classes[:-1], forest.trees, instances)


def _leaves(tree: Tree) -> list[Leaf]:
    """The tree's distinct leaves (a soft leaf with its weights), in a fixed order."""
    return sorted({n for n in tree.nodes if type(n) is Leaf},
                  key=lambda n: (n.label, n.weights or ()))


def _valid(forest: Forest, features: Sequence[Feature], classes: Sequence[str],
           trees: Sequence[Tree], instances: list[Instance]) -> Iterator[Case]:
    """``forest`` with these parts, its other properties (``input_dtype``) kept, if it is
    valid."""
    try:
        yield replace(forest, features=tuple(features), classes=tuple(classes),
                      trees=tuple(trees)), instances
    except InputError:
        return


def _compact(nodes: Sequence[TreeNode]) -> Tree:
    """The tree of the nodes reachable from node 0, renumbered in depth-first order."""
    order: list[int] = []
    index: dict[int, int] = {}
    stack = [0]
    while stack:
        k = stack.pop()
        if k in index:
            continue
        index[k] = len(order)
        order.append(k)
        node = nodes[k]
        if type(node) is Branching:
            stack.extend(c for _, c in reversed(node.branches) if c not in index)
    out: list[TreeNode] = []
    for k in order:
        node = nodes[k]
        if type(node) is Branching:
            out.append(Branching(node.feature, tuple((m, index[c]) for m, c in node.branches)))
        else:
            out.append(node)
    return Tree(tuple(out))


def _map_trees(forest: Forest, feature_map: Callable[[int], int],
               mask_map: Callable[[int, int], int]) -> list[Tree]:
    trees = []
    for tree in forest.trees:
        nodes: list[TreeNode] = []
        for node in tree.nodes:
            if type(node) is Branching:
                nodes.append(Branching(feature_map(node.feature), tuple(
                    (mask_map(node.feature, m), c) for m, c in node.branches)))
            else:
                nodes.append(node)
        trees.append(Tree(tuple(nodes)))
    return trees


def _without_feature(forest: Forest, instances: list[Instance], f: int) -> Iterator[Case]:
    if len(forest.features) == 1:
        return
    features = forest.features[:f] + forest.features[f + 1:]
    trees = _map_trees(forest, lambda g: g - (g > f), lambda g, m: m)
    yield from _valid(forest, features, forest.classes, trees,
                      [x[:f] + x[f + 1:] for x in instances])


def _merge_states(forest: Forest, instances: list[Instance], f: int, s: int) -> Iterator[Case]:
    """Merge state ``s + 1`` of feature ``f`` into state ``s`` if no branch separates them."""
    feature = forest.features[f]
    pair = 3 << s
    for tree in forest.trees:
        for node in tree.nodes:
            if type(node) is Branching and node.feature == f:
                if any(m & pair not in (0, pair) for m, _ in node.branches):
                    return
    if feature.thresholds is not None:
        ts = feature.thresholds[:s] + feature.thresholds[s + 1:]
        merged = Feature(feature.name, interval_names(ts), ts)
    elif feature.n_states > 2:
        merged = Feature(feature.name, feature.states[:s + 1] + feature.states[s + 2:], None)
    else:
        return
    low = (1 << (s + 1)) - 1

    def squeeze(g: int, m: int) -> int:
        return m if g != f else (m & low) | (m >> 1 & ~low)

    features = forest.features[:f] + (merged,) + forest.features[f + 1:]
    moved = [x[:f] + (x[f] - (x[f] > s),) + x[f + 1:] for x in instances]
    yield from _valid(forest, features, forest.classes,
                      _map_trees(forest, lambda g: g, squeeze), moved)
