"""Forest data model: features, trees, votes and the ``rfcircuits.forest/1`` format.

Meanings in docs/semantics.md (features and states; trees, the hard-majority vote, tie
policies), files in docs/formats.md (forests, instances). Every other module, native or
oracle, shares only this model.

- A :class:`Feature` has ordered states; a numeric feature's states are the intervals cut by
  its thresholds (``(-inf,t1]``, ``(t1,t2]``, …, ``(tm,+inf)``). A numeric feature with no
  threshold has the single state ``(-inf,+inf)`` (it can occur in no literal): importers keep
  features a forest never splits on so that instances keep their schema.
- A :class:`Tree` is a rooted DAG (node 0 is the root) of :class:`Branching` nodes, whose
  branches ``(state mask, child)`` partition the states of the tested feature that are
  feasible there, and :class:`Leaf` nodes carrying a class index.
- State sets are int bitmasks: bit ``s`` set means state ``s`` is in the set.
- A forest's ``votes`` says what its trees vote: ``"hard"`` (the paper's), one vote for the
  class of the leaf reached; ``"soft"``, each leaf's per-class ``weights`` (float64, as the
  library computed them: probabilities of a scikit-learn forest, a boosted tree's scaled
  values), summed with the forest's ``init``. The decision is the class with the largest
  sum, computed exactly: every float64 is a dyadic rational, so the weights are scaled to
  integers by a common power of two (:attr:`Forest.scale`) and summed as Python ints.
- A forest's ``input_dtype`` says how a raw number is read before it meets the thresholds:
  ``"float64"`` as it is, ``"float32"`` rounded to the nearest float32 first, as scikit-learn
  casts its inputs (:func:`read_value`). Every placement of a raw number goes through it.
- A forest's ``sum_dtype`` says in which floating type the library adds a soft forest's
  weights (``"float64"``: scikit-learn, LightGBM; ``"float32"``: XGBoost); the exact
  decision does not depend on it, the near-tie flag does (:meth:`Forest.near_tie`).
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rfcircuits.atomicio import write_json
from rfcircuits.errors import InputError, check_choice
from rfcircuits.jsonio import load_json_file

FOREST_FORMAT = "rfcircuits.forest/1"
TIES = ("first", "all")
VOTES = ("hard", "soft")
INPUT_DTYPES = ("float64", "float32")
#: The floating types a library sums soft votes in (:attr:`Forest.sum_dtype`).
SUM_DTYPES = ("float64", "float32")
#: Units of rounding of 1 (in the sums' type) within which a gap between two sums is a near
#: tie whatever the terms (:meth:`Forest.near_tie`): the library's link function (a sigmoid
#: compared with 1/2, a softmax) cannot separate margins closer than a few such units.
LINK_ULPS = 16
#: Runs of at least this many states are written ``[first, last]`` in forest files.
RUN_STATES = 32

Instance = tuple[int, ...]


def mask_states(mask: int) -> list[int]:
    """The members of a bitmask (state indices; feature indices too, as ``bits``), ascending.
    A wide mask is read run by run: the states of a deep forest's features number thousands,
    and a big-int operation per member would make that quadratic."""
    if mask.bit_length() > 64:
        wide: list[int] = []
        for first, end in mask_blocks(mask):
            wide.extend(range(first, end))
        return wide
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def mask_blocks(mask: int) -> Iterator[tuple[int, int]]:
    """The blocks of consecutive members of a bitmask, as ``(first, end_exclusive)``."""
    while mask:
        low = mask & -mask
        above = mask + low  # the carry clears the lowest block and sets the bit past it
        yield low.bit_length() - 1, (above & ~mask).bit_length() - 1
        mask &= above


def states_mask(states: Iterable[int]) -> int:
    """The bitmask of a collection of state indices."""
    mask = 0
    for s in states:
        mask |= 1 << s
    return mask


def interval_names(thresholds: Sequence[float]) -> tuple[str, ...]:
    """The state names of a numeric feature (docs/semantics.md#1-features-and-states);
    thresholds printed with ``repr(float)``."""
    bounds = ["-inf"] + [repr(float(t)) for t in thresholds] + ["+inf"]
    names = [f"({bounds[i]},{bounds[i + 1]}]" for i in range(len(bounds) - 2)]
    names.append(f"({bounds[-2]},+inf)")
    return tuple(names)


@dataclass(frozen=True, slots=True)
class Feature:
    """A feature with ordered states; ``thresholds`` is None for a categorical feature."""

    name: str
    states: tuple[str, ...]
    thresholds: tuple[float, ...] | None = None

    @classmethod
    def numeric(cls, name: str, thresholds: Iterable[float]) -> Feature:
        ts = tuple(sorted({float(t) for t in thresholds}))
        return cls(name, interval_names(ts), ts)

    @classmethod
    def categorical(cls, name: str, states: Iterable[str]) -> Feature:
        return cls(name, tuple(states), None)

    @property
    def is_numeric(self) -> bool:
        return self.thresholds is not None

    @property
    def n_states(self) -> int:
        return len(self.states)

    @property
    def full(self) -> int:
        """Mask of all states."""
        return (1 << len(self.states)) - 1

    def state_of_value(self, value: float, input_dtype: str = "float64") -> int:
        """State of a raw number: ``i`` with ``t_i < v <= t_{i+1}`` (goes-left rule), where
        ``v`` is ``value`` as a forest with ``input_dtype`` reads it (:func:`read_value`, whose
        ValueError it passes on)."""
        assert self.thresholds is not None
        return bisect.bisect_left(self.thresholds, read_value(value, input_dtype))

    def to_json(self) -> dict[str, Any]:
        if self.thresholds is not None:
            return {"name": self.name, "thresholds": list(self.thresholds)}
        return {"name": self.name, "states": list(self.states)}


def read_value(value: float, input_dtype: str = "float64") -> float:
    """A raw number as a forest with ``input_dtype`` compares it with its thresholds.

    ``"float32"`` rounds it to the nearest float32 (``np.float32``): scikit-learn casts its
    inputs so and then compares ``float32(x) <= threshold``, so a value within float32
    rounding of a threshold lies on the side ``predict`` puts it on only after this rounding.
    Raises ValueError saying what is wrong for NaN and, with ``"float32"``, for a value no
    finite float32 holds (infinities, magnitudes beyond about 3.4e38), which scikit-learn
    rejects too."""
    if math.isnan(value):
        raise ValueError("NaN is not a value")
    if input_dtype == "float64":
        return value
    import numpy as np  # here: the command line starts without numpy

    with np.errstate(over="ignore"):
        rounded = float(np.float32(value))
    if math.isinf(rounded):
        raise ValueError(f"{value!r} is beyond the finite float32 range (inputs are read as "
                         "float32, as scikit-learn reads them)")
    return rounded


def read_values(values: Any, input_dtype: str, where: Callable[[int, int], str]) -> Any:
    """:func:`read_value` of every number of a 2-D float64 array at once (the same rounding,
    vectorised); the first number it refuses is an :class:`InputError` named ``where(i, j)``
    (row ``i``, column ``j``)."""
    import numpy as np  # here: the command line starts without numpy

    read, refused = values, np.isnan(values)
    if input_dtype == "float32":
        with np.errstate(over="ignore"):
            read = values.astype(np.float32).astype(np.float64)
        refused |= np.isinf(read)
    if refused.any():
        i, j = (int(k) for k in np.argwhere(refused)[0])
        try:
            read_value(float(values[i, j]), input_dtype)
        except ValueError as exc:  # it refuses the same numbers: its message says why
            raise InputError(f"{where(i, j)}: {exc}") from None
    return read


def float32_floor(t: float) -> float:
    """The largest float32 not above ``t`` (``-inf`` when no finite float32 is). On float32
    inputs ``v``, the tests ``v <= t`` and ``v <= u`` agree exactly when ``t`` and ``u`` have
    the same floor."""
    import numpy as np  # here: the command line starts without numpy

    with np.errstate(over="ignore"):
        v = np.float32(t)
    if float(v) > t:
        v = np.nextafter(v, np.float32(-np.inf))
    return float(v)


@dataclass(frozen=True, slots=True)
class Branching:
    """Internal tree node: tests ``feature``; ``branches`` are ``(state mask, child index)``."""

    feature: int
    branches: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class Leaf:
    """Tree leaf voting for class index ``label`` (hard votes), or adding ``weights``, one
    float64 per class, to the sums (soft votes; ``label`` is then the first class of largest
    weight, for display)."""

    label: int
    weights: tuple[float, ...] | None = None


TreeNode = Branching | Leaf


@dataclass(frozen=True, slots=True)
class Tree:
    """A decision tree (or DAG); node 0 is the root."""

    nodes: tuple[TreeNode, ...]

    def vote(self, x: Sequence[int]) -> int:
        """The class index this tree votes for on instance ``x`` (state indices)."""
        leaf = self.nodes[self.leaf(x)]
        assert type(leaf) is Leaf
        return leaf.label

    @property
    def depth(self) -> int:
        """The number of tests on the longest path from the root to a leaf; time O(nodes)."""
        depth = [0] * len(self.nodes)
        for k in topological_order(self.nodes):
            node = self.nodes[k]
            if type(node) is Branching:
                for _, child in node.branches:
                    depth[child] = max(depth[child], depth[k] + 1)
        return max(depth)

    def leaf(self, x: Sequence[int]) -> int:
        """The index of the leaf instance ``x`` (state indices) reaches."""
        k = 0
        node = self.nodes[0]
        while type(node) is Branching:
            bit = 1 << x[node.feature]
            for mask, child in node.branches:
                if mask & bit:
                    k = child
                    node = self.nodes[child]
                    break
            else:  # pragma: no cover - validation makes branches cover feasible states
                raise AssertionError("instance state not covered by any branch")
        return k


@dataclass(frozen=True)
class Forest:
    """A random forest over discrete features (docs/semantics.md#3-trees-votes-and-class-formulas).
    Construction validates (docs/formats.md#forest-files).

    ``input_dtype`` (one of :data:`INPUT_DTYPES`) is how raw numbers are read before they are
    placed in interval states (:func:`read_value`); it changes nothing else. ``sum_dtype``
    (one of :data:`SUM_DTYPES`, non-default with soft votes only) is the floating type the
    library sums the weights in: it changes only :meth:`near_tie`."""

    features: tuple[Feature, ...]
    classes: tuple[str, ...]
    trees: tuple[Tree, ...]
    input_dtype: str = "float64"
    voting: str = "hard"
    #: Soft votes: what every sum starts from, one float64 per class (None: zeros).
    init: tuple[float, ...] | None = None
    sum_dtype: str = "float64"
    feature_index: dict[str, int] = field(init=False, repr=False, compare=False)
    #: Soft votes: the power of two that makes every weight and ``init`` an integer.
    scale: int = field(init=False, repr=False, compare=False)
    #: Soft votes: per tree, per node, the leaf's weights times ``2**scale`` (None elsewhere).
    int_weights: tuple[tuple[tuple[int, ...] | None, ...], ...] = field(
        init=False, repr=False, compare=False)
    int_init: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", tuple(self.features))
        object.__setattr__(self, "classes", tuple(self.classes))
        object.__setattr__(self, "trees", tuple(self.trees))
        if self.init is not None:
            object.__setattr__(self, "init", tuple(float(w) for w in self.init))
        object.__setattr__(self, "feature_index", {f.name: i for i, f in enumerate(self.features)})
        check_forest(self)
        self._scale_weights()

    def _scale_weights(self) -> None:
        """Exact integer weights: a finite float64 is ``n / 2**k``; all are scaled by the
        largest ``2**k``."""
        init = self.init or (0.0,) * len(self.classes)
        leaves = [n.weights for t in self.trees for n in t.nodes
                  if type(n) is Leaf and n.weights is not None]
        scale = max((w.as_integer_ratio()[1].bit_length() - 1
                     for ws in [init, *leaves] for w in ws), default=0)

        def exact(ws: Sequence[float]) -> tuple[int, ...]:
            return tuple(n << (scale - d.bit_length() + 1)
                         for n, d in (w.as_integer_ratio() for w in ws))

        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "int_init", exact(init))
        object.__setattr__(self, "int_weights", tuple(
            tuple(exact(n.weights) if type(n) is Leaf and n.weights is not None else None
                  for n in t.nodes) for t in self.trees))

    def with_trees(self, trees: Sequence[Tree]) -> Forest:
        """The same forest (features, classes, votes) with other trees."""
        return dataclasses.replace(self, trees=tuple(trees))

    @property
    def n_nodes(self) -> int:
        return sum(len(t.nodes) for t in self.trees)

    def votes(self, x: Sequence[int]) -> list[int]:
        """``v_i(x)`` for every class index ``i``: the trees voting for ``i`` (hard votes), or
        the exact sum of ``init`` and the weights for ``i`` of the leaves ``x`` reaches, times
        ``2**scale`` (soft votes)."""
        if self.voting == "hard":
            counts = [0] * len(self.classes)
            for tree in self.trees:
                counts[tree.vote(x)] += 1
            return counts
        sums = list(self.int_init)
        for tree, weights in zip(self.trees, self.int_weights):
            leaf = weights[tree.leaf(x)]
            assert leaf is not None
            for i, w in enumerate(leaf):
                sums[i] += w
        return sums

    def readable_votes(self, votes: Sequence[int]) -> list[int | float]:
        """:meth:`votes` as people read them: counts (hard votes), or each exact sum as the
        nearest float64 (soft votes; Python's int division rounds correctly)."""
        if self.voting == "hard":
            return list(votes)
        return [v / (1 << self.scale) for v in votes]

    def near_tie(self, x: Sequence[int]) -> bool:
        """Soft votes: whether the library's floating-point decision could differ from the
        exact one: a summation of the weights in :attr:`sum_dtype`, in any order
        (scikit-learn adds its trees' probabilities in the order its threads finish), then a
        division by the number of trees or a link function (sigmoid, softmax) in the same
        type, could order the two best classes otherwise than the exact sums do, or tie them.
        Such an instance's decision is the library's rounding, not the model's: it is flagged,
        never explained silently. Hard votes: False.

        Bound, with ``u`` the unit roundoff of :attr:`sum_dtype` (``2**-53``, ``2**-24``): a
        sum of ``n`` terms is within ``(n - 1) u Σ|w|`` of the exact sum, a division adds at
        most ``u`` times the quotient, and a link cannot separate margins closer than
        :data:`LINK_ULPS` ``u`` (XGBoost's float32 sigmoid is exactly 1/2, class 0, up to a
        margin of about ``3.5 u``); the gap must exceed all of these. Time
        O(trees × classes)."""
        if self.voting == "hard":
            return False
        sums = self.votes(x)
        size = [abs(w) for w in self.int_init]
        for tree, weights in zip(self.trees, self.int_weights):
            leaf = weights[tree.leaf(x)]
            assert leaf is not None
            for i, w in enumerate(leaf):
                size[i] += abs(w)
        best = max(range(len(sums)), key=sums.__getitem__)
        terms = len(self.trees) + (self.init is not None)
        bits = 53 if self.sum_dtype == "float64" else 24
        link = LINK_ULPS << self.scale
        return any(i != best and (sums[best] - sums[i]) << bits
                   <= (terms + 1) * (size[best] + size[i]) + link
                   for i in range(len(sums)))

    def classes_of(self, x: Sequence[int], ties: str = "first") -> list[int]:
        """All classes ``c`` with ``x ⊨ R^c`` under the tie policy (docs/semantics.md §3)."""
        return classes_from_votes(self.votes(x), ties)

    def decision(self, x: Sequence[int]) -> int:
        """The first class with most votes (the same under both tie policies)."""
        counts = self.votes(x)
        return counts.index(max(counts))

    def n_worlds(self) -> int:
        return math.prod(f.n_states for f in self.features)

    def to_json(self) -> dict[str, Any]:
        """The ``rfcircuits.forest/1`` document; ``input_dtype`` only when not the default, so
        that float64 forests keep the documents they had before the field existed."""
        doc: dict[str, Any] = {"format": FOREST_FORMAT}
        if self.input_dtype != "float64":
            doc["input_dtype"] = self.input_dtype
        if self.voting != "hard":
            doc["votes"] = self.voting
        if self.init is not None:
            doc["init"] = list(self.init)
        if self.sum_dtype != "float64":
            doc["sum_dtype"] = self.sum_dtype
        doc.update(classes=list(self.classes), features=[f.to_json() for f in self.features],
                   trees=[{"nodes": [_node_json(self, n) for n in t.nodes]} for t in self.trees])
        return doc


def classes_from_votes(counts: Sequence[int], ties: str) -> list[int]:
    """Classes an instance with these vote counts belongs to (docs/semantics.md §3)."""
    best = max(counts)
    if ties == "all":
        return [i for i, v in enumerate(counts) if v == best]
    return [counts.index(best)]


def check_ties(ties: str) -> str:
    return check_choice("ties", ties, TIES)


def _node_json(forest: Forest, node: TreeNode) -> dict[str, Any]:
    if type(node) is Leaf:
        if node.weights is not None:
            return {"weights": list(node.weights)}
        return {"class": forest.classes[node.label]}
    return {"feature": forest.features[node.feature].name,
            "branches": [[states_json(m), c] for m, c in node.branches]}


# ---------------------------------------------------------------------------------------------
# Structural validation (docs/formats.md#forest-files): DAG, branches partition the feasible
# states, known classes.


def _names(feature: Feature, mask: int) -> str:
    return "{" + ", ".join(feature.states[s] for s in mask_states(mask)) + "}"


def check_forest(forest: Forest) -> None:
    """Raise :class:`InputError` naming tree, node and problem if the forest is malformed."""
    if forest.input_dtype not in INPUT_DTYPES:
        raise InputError(f"input_dtype: {forest.input_dtype!r} is not one of "
                         f"{', '.join(INPUT_DTYPES)}")
    if not forest.classes:
        raise InputError("classes: at least one class is required")
    check_choice("votes", forest.voting, VOTES)
    check_choice("sum_dtype", forest.sum_dtype, SUM_DTYPES)
    if forest.sum_dtype != "float64" and forest.voting == "hard":
        raise InputError("sum_dtype: only soft votes are summed in floating point")
    if forest.init is not None:
        if forest.voting == "hard":
            raise InputError("init: only soft votes start from initial sums")
        _check_weights("init", forest.init, len(forest.classes))
    _unique("classes", forest.classes)
    _unique("features", [f.name for f in forest.features])
    for f in forest.features:
        if f.n_states < 1 or (f.thresholds is None and f.n_states < 2):
            raise InputError(f"feature {f.name!r}: a categorical feature needs at least 2 states")
        _unique(f"feature {f.name!r} states", f.states)
        if f.thresholds is not None and any(
                not math.isfinite(t) for t in f.thresholds):
            raise InputError(f"feature {f.name!r}: thresholds must be finite numbers")
        if f.thresholds is not None and list(f.thresholds) != sorted(set(f.thresholds)):
            raise InputError(f"feature {f.name!r}: thresholds must be strictly increasing")
    if not forest.trees:
        raise InputError("trees: at least one tree is required")
    for t, tree in enumerate(forest.trees):
        _check_tree(forest, t, tree)


def _check_weights(where: str, weights: Sequence[float], n_classes: int) -> None:
    if len(weights) != n_classes:
        raise InputError(f"{where}: {len(weights)} weights for {n_classes} classes")
    for w in weights:
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w):
            raise InputError(f"{where}: weights must be finite numbers, found {w!r}")


def _unique(what: str, names: Sequence[str]) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise InputError(f"{what}: name {n!r} appears twice")
        seen.add(n)


def _check_tree(forest: Forest, t: int, tree: Tree) -> None:
    nodes = tree.nodes
    if not nodes:
        raise InputError(f"tree {t}: no nodes")
    n_classes = len(forest.classes)
    for k, node in enumerate(nodes):
        where = f"tree {t}, node {k}"
        if type(node) is Leaf:
            if not 0 <= node.label < n_classes:
                raise InputError(f"{where}: unknown class index {node.label}")
            if forest.voting == "hard" and node.weights is not None:
                raise InputError(f"{where}: weights in a forest of hard votes (set votes to "
                                 "'soft')")
            if forest.voting == "soft":
                if node.weights is None:
                    raise InputError(f"{where}: a leaf of a forest of soft votes needs weights")
                _check_weights(where, node.weights, n_classes)
            continue
        if not 0 <= node.feature < len(forest.features):
            raise InputError(f"{where}: unknown feature index {node.feature}")
        feature = forest.features[node.feature]
        if not node.branches:
            raise InputError(f"{where}: a test node needs at least one branch")
        seen = 0
        for b, (mask, child) in enumerate(node.branches):
            if mask <= 0:
                raise InputError(f"{where}, branch {b}: empty state set")
            if mask & ~feature.full:
                raise InputError(f"{where}, branch {b}: state index out of range for "
                                 f"feature {feature.name!r} ({feature.n_states} states)")
            if mask & seen:
                raise InputError(f"{where}, branch {b}: states {_names(feature, mask & seen)} of "
                                 f"{feature.name!r} appear in more than one branch")
            seen |= mask
            if not 0 <= child < len(nodes):
                raise InputError(f"{where}, branch {b}: child {child} is not a node of the tree")
    order = topological_order(nodes, t)
    if len(order) != len(nodes):
        missing = sorted(set(range(len(nodes))) - set(order))
        raise InputError(f"tree {t}, node {missing[0]}: not reachable from the root (node 0)")
    _check_feasible(forest, t, nodes, order)


def topological_order(nodes: Sequence[TreeNode], t: int = 0) -> list[int]:
    """Nodes of tree ``t`` reachable from the root, parents before children (iterative DFS).

    Raises :class:`InputError` on a cycle."""
    state = [0] * len(nodes)  # 0 new, 1 on stack, 2 done
    post: list[int] = []
    stack: list[tuple[int, int]] = [(0, 0)]
    state[0] = 1
    while stack:
        k, i = stack.pop()
        node = nodes[k]
        children = node.branches if type(node) is Branching else ()
        if i < len(children):
            stack.append((k, i + 1))
            child = children[i][1]
            if state[child] == 1:
                raise InputError(f"tree {t}, node {k}: branch {i} closes a cycle (child {child})")
            if state[child] == 0:
                state[child] = 1
                stack.append((child, 0))
        else:
            state[k] = 2
            post.append(k)
    post.reverse()
    return post


def _check_feasible(forest: Forest, t: int, nodes: Sequence[TreeNode], order: list[int]) -> None:
    """Along every path, a node's branches must cover exactly the feasible states
    (docs/semantics.md#3-trees-votes-and-class-formulas)."""
    problem = weak_test_once_violation(
        order, [0], lambda k: (nodes[k].feature, nodes[k].branches)  # type: ignore[union-attr]
        if type(nodes[k]) is Branching else None, [f.full for f in forest.features])
    if problem is not None:
        k, f, cover, feasible = problem
        feature = forest.features[f]
        raise InputError(
            f"tree {t}, node {k}: branches on {feature.name!r} cover {_names(feature, cover)}"
            f" but the states feasible there are {_names(feature, feasible)}")


def weak_test_once_violation(
        order: Sequence[int], roots: Sequence[int],
        test_of: Callable[[int], tuple[int, Sequence[tuple[int, int]]] | None],
        full: Sequence[int]) -> tuple[int, int, int, int] | None:
    """The first node whose branch states differ from its feature's feasible states on some
    path, as ``(node, feature, covered mask, feasible mask)``; None for a weak test-once graph.

    ``order`` lists the nodes below ``roots`` parents first; ``test_of(n)`` is ``(feature,
    branches)`` or None for a leaf. The feasible states of X at a node depend only on the
    X-tests above it, so the set of masks reaching a node is propagated per feature (a feature
    absent from a context is unconstrained).
    """
    contexts: dict[int, dict[int, set[int]]] = {r: {} for r in roots}
    for k in order:
        ctx = contexts.pop(k, {})
        test = test_of(k)
        if test is None:
            continue
        f, branches = test
        cover = 0
        for mask, _ in branches:
            cover |= mask
        for feasible in ctx.get(f, {full[f]}):
            if feasible != cover:
                return k, f, cover, feasible
        for mask, child in branches:
            sub = dict(ctx)
            sub[f] = {mask}
            target = contexts.get(child)
            if target is None:
                contexts[child] = {g: set(m) for g, m in sub.items()}
                continue
            for g in set(target) | set(sub):  # a path that never tests g allows all its states
                target.setdefault(g, {full[g]}).update(sub.get(g, {full[g]}))
    return None


# ---------------------------------------------------------------------------------------------
# JSON (docs/formats.md).


class JsonReader:
    """Field access with error messages naming the place (``tree 2, node 5, field 'feature'``),
    for the readers of documents (docs/formats.md: forests here, circuit files in the BDD
    oracle)."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, problem: str) -> InputError:
        prefix = f"{self.source}: " if self.source else ""
        return InputError(f"{prefix}{where}: {problem}")

    def get(self, obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
        if not isinstance(obj, dict):
            raise self.fail(where, "expected a JSON object")
        if key not in obj:
            raise self.fail(where, f"missing field {key!r}")
        value = obj[key]
        if not isinstance(value, kind) or isinstance(value, bool) and bool not in _kinds(kind):
            raise self.fail(where, f"field {key!r} must be {_kind_name(kind)}, "
                                   f"not {type(value).__name__}")
        return value

    def only(self, obj: dict[str, Any], allowed: Iterable[str], where: str) -> None:
        extra = sorted(set(obj) - set(allowed))
        if extra:
            raise self.fail(where, f"unknown field {extra[0]!r}")


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", float: "a number", list: "a list",
             dict: "an object", bool: "a boolean"}
    return " or ".join(names.get(k, k.__name__) for k in _kinds(kind))


def forest_from_json(obj: Any, source: str = "") -> Forest:
    """Parse and validate a ``rfcircuits.forest/1`` document."""
    r = JsonReader(source)
    if not isinstance(obj, dict):
        raise r.fail("forest", "expected a JSON object")
    fmt = r.get(obj, "format", str, "forest")
    if fmt != FOREST_FORMAT:
        raise r.fail("forest", f"field 'format' must be {FOREST_FORMAT!r}, not {fmt!r}")
    r.only(obj, ("format", "input_dtype", "votes", "init", "sum_dtype", "classes", "features",
                 "trees", "meta"), "forest")
    input_dtype = r.get(obj, "input_dtype", str, "forest") if "input_dtype" in obj else "float64"
    if input_dtype not in INPUT_DTYPES:
        raise r.fail("forest", f"field 'input_dtype' must be one of "
                               f"{', '.join(map(repr, INPUT_DTYPES))}, not {input_dtype!r}")
    classes = r.get(obj, "classes", list, "forest")
    for i, c in enumerate(classes):
        if not isinstance(c, str):
            raise r.fail(f"classes[{i}]", "class names must be strings")
    features = []
    for i, fobj in enumerate(r.get(obj, "features", list, "forest")):
        where = f"features[{i}]"
        name = r.get(fobj, "name", str, where)
        where = f"feature {name!r}"
        if "thresholds" in fobj and "states" in fobj:
            raise r.fail(where, "give either 'states' or 'thresholds', not both")
        if "thresholds" in fobj:
            r.only(fobj, ("name", "thresholds"), where)
            ts = r.get(fobj, "thresholds", list, where)
            for t in ts:
                if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
                    raise r.fail(where, f"thresholds must be finite numbers, found {t!r}")
            if ts != sorted(set(ts)):
                raise r.fail(where, "thresholds must be strictly increasing")
            features.append(Feature.numeric(name, ts))
        else:
            r.only(fobj, ("name", "states"), where)
            states = r.get(fobj, "states", list, where)
            for s in states:
                if not isinstance(s, str):
                    raise r.fail(where, f"state names must be strings, found {s!r}")
            features.append(Feature.categorical(name, states))
    try:  # names must be unique before trees can refer to them
        _unique("classes", classes)
        _unique("features", [f.name for f in features])
    except InputError as exc:
        raise r.fail("forest", str(exc)) from None
    index = {f.name: i for i, f in enumerate(features)}
    class_index = {c: i for i, c in enumerate(classes)}
    trees = []
    for t, tobj in enumerate(r.get(obj, "trees", list, "forest")):
        r.only(tobj if isinstance(tobj, dict) else {}, ("nodes",), f"tree {t}")
        nodes: list[TreeNode] = []
        for k, nobj in enumerate(r.get(tobj, "nodes", list, f"tree {t}")):
            where = f"tree {t}, node {k}"
            if not isinstance(nobj, dict):
                raise r.fail(where, "expected a JSON object")
            if "class" in nobj:
                r.only(nobj, ("class",), where)
                label = r.get(nobj, "class", str, where)
                if label not in class_index:
                    raise r.fail(where, f"unknown class {label!r}")
                nodes.append(Leaf(class_index[label]))
                continue
            if "weights" in nobj:
                r.only(nobj, ("weights",), where)
                weights = _float_list(r, nobj, "weights", where)
                nodes.append(Leaf(max(range(len(weights)), key=weights.__getitem__, default=0),
                                  weights))
                continue
            r.only(nobj, ("feature", "branches"), where)
            fname = r.get(nobj, "feature", str, where)
            if fname not in index:
                raise r.fail(where, f"unknown feature {fname!r}")
            feature = features[index[fname]]
            branches = []
            for b, bobj in enumerate(r.get(nobj, "branches", list, where)):
                bwhere = f"{where}, branch {b}"
                if not (isinstance(bobj, list) and len(bobj) == 2 and isinstance(bobj[0], list)):
                    raise r.fail(bwhere, "expected [[state indices], child index]")
                states, child = bobj
                if isinstance(child, bool) or not isinstance(child, int):
                    raise r.fail(bwhere, f"child must be a node index, not {child!r}")
                branches.append((parse_states(feature, states,
                                              lambda problem: r.fail(bwhere, problem)), child))
            nodes.append(Branching(index[fname], tuple(branches)))
        trees.append(Tree(tuple(nodes)))
    voting = r.get(obj, "votes", str, "forest") if "votes" in obj else "hard"
    init = _float_list(r, obj, "init", "forest") if "init" in obj else None
    sum_dtype = r.get(obj, "sum_dtype", str, "forest") if "sum_dtype" in obj else "float64"
    try:
        return Forest(tuple(features), tuple(classes), tuple(trees), input_dtype, voting, init,
                      sum_dtype)
    except InputError as exc:
        raise r.fail("forest", str(exc)) from None


def _float_list(r: JsonReader, obj: dict[str, Any], key: str, where: str) -> tuple[float, ...]:
    """A list of finite numbers, as float64 (JSON integers too)."""
    values = r.get(obj, key, list, where)
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise r.fail(where, f"{key}: finite numbers expected, found {v!r}")
    return tuple(float(v) for v in values)


def parse_states(feature: Feature, states: Any, fail: Callable[[str], InputError]) -> int:
    """The bitmask of a JSON list of distinct states of ``feature`` (docs/formats.md: tree
    branches, circuit literals): state indices, or ``[first, last]`` for a run of states;
    ``fail(problem)`` makes the error naming the place. Lists of plain indices are checked
    and converted in C-speed passes (numeric features of deep forests have thousands of
    states per branch)."""
    if not isinstance(states, list):
        raise fail(f"states must be a list of state indices, not {states!r}")
    n = feature.n_states
    if set(map(type, states)) == {int}:  # plain indices (bool is no int here)
        indices = states
    else:
        indices = []
        for item in states:
            if type(item) is int:
                indices.append(item)
            elif type(item) is list and len(item) == 2 and all(type(v) is int for v in item) \
                    and item[0] <= item[1]:
                indices.extend(range(item[0], item[1] + 1))
            else:
                raise fail(f"state indices must be integers, found {item!r} (a run of states "
                           "is [first, last])")
    if not indices:
        return 0
    for s in (min(indices), max(indices)):
        if not 0 <= s < n:
            raise fail(f"state index {s} out of range for feature {feature.name!r} "
                       f"({n} states)")
    if len(set(indices)) != len(indices):
        seen: set[int] = set()
        repeated = next(s for s in indices if s in seen or seen.add(s))  # type: ignore[func-returns-value]
        raise fail(f"state index {repeated} listed twice")
    low = min(indices)
    if max(indices) - low + 1 == len(indices):  # one run: the usual interval of states
        return ((1 << len(indices)) - 1) << low
    mask = 0
    for s in indices:
        mask |= 1 << s
    return mask


def states_json(mask: int) -> list[Any]:
    """The JSON list of a state set: indices, with runs of at least :data:`RUN_STATES`
    states as ``[first, last]`` (a branch of a deep forest on a feature with thousands of
    states is then a pair, not thousands of numbers)."""
    out: list[Any] = []
    for first, end in mask_blocks(mask):
        if end - first >= RUN_STATES:
            out.append([first, end - 1])
        else:
            out.extend(range(first, end))
    return out


def load_forest(path: str | os.PathLike[str]) -> Forest:
    """Load and validate a forest file."""
    return forest_from_json(load_json_file(path), source=os.fspath(path))


def as_forest(forest: Forest | str | os.PathLike[str]) -> Forest:
    """``forest`` itself, or the forest file at a path (:func:`load_forest`): what the API's
    checking calls take."""
    return forest if isinstance(forest, Forest) else load_forest(forest)


def save_forest(forest: Forest, path: str | os.PathLike[str]) -> None:
    write_json(path, forest.to_json())


# ---------------------------------------------------------------------------------------------
# Instances (docs/formats.md#instances): {"name": state name, or a raw number for a numeric
# feature}.


def parse_instance(forest: Forest, obj: Any, where: str = "instance") -> Instance:
    """State indices of an instance given as ``{feature name: state name or number}``."""
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected a JSON object mapping feature names to values")
    unknown = [k for k in obj if k not in forest.feature_index]
    if unknown:
        raise InputError(f"{where}: unknown feature {unknown[0]!r}")
    missing = [f.name for f in forest.features if f.name not in obj]
    if missing:
        raise InputError(f"{where}: missing feature {missing[0]!r}")
    return tuple(_state_of(f, obj[f.name], where, forest.input_dtype) for f in forest.features)


def _state_of(feature: Feature, value: Any, where: str, input_dtype: str) -> int:
    if isinstance(value, str):
        try:
            return feature.states.index(value)
        except ValueError:
            kind = "an interval state name or a number" if feature.is_numeric else "a state name"
            raise InputError(f"{where}, feature {feature.name!r}: {value!r} is not {kind} "
                             f"(states: {', '.join(feature.states)})") from None
    if feature.is_numeric and isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return feature.state_of_value(float(value), input_dtype)
        except (ValueError, OverflowError) as exc:  # OverflowError: an int beyond any float
            raise InputError(f"{where}, feature {feature.name!r}: {exc}") from None
    expected = "a number or an interval state name" if feature.is_numeric else "a state name"
    raise InputError(f"{where}, feature {feature.name!r}: expected {expected}, "
                     f"not {json.dumps(value)}")


def instance_to_json(forest: Forest, x: Sequence[int]) -> dict[str, str]:
    """An instance as ``{feature name: state name}`` in feature order."""
    return {f.name: f.states[s] for f, s in zip(forest.features, x)}
