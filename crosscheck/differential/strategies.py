"""Random small forests and instances for differential testing (fuzz and property tests).

:func:`random_forest` draws everything from a ``random.Random``: a seeded one replays the
same case (``rfcircuits fuzz --seed``); hypothesis' ``st.randoms()`` makes the draws
shrinkable in property tests (:func:`forests`). Forests mix numeric and categorical
features, re-tests of a feature on its feasible states, shared subtrees (DAGs), single-leaf
trees, classes no leaf votes for, and few trees so that ties are common.
:func:`random_soft_forest` (:func:`soft_forests`) gives such trees' leaves soft-vote weights
from a few floats whose sums tie exactly or only nearly.

Instances worth checking lie near vote ties: :func:`margin` measures the distance,
:func:`pick_by_margin` chooses the closest, :func:`with_edge_worlds` adds a tied world and one
world per decided class (shared by the corpus, the harness's scheduling and ``verify-pyxai``).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from rfcircuits.forest import (Branching, Feature, Forest, Instance, Leaf, Tree, TreeNode,
                               float32_floor, mask_states)


@dataclass(frozen=True)
class Limits:
    """Size bounds of generated forests."""

    max_features: int = 4
    max_states: int = 4
    max_trees: int = 7
    max_classes: int = 3
    max_depth: int = 4
    #: What the trees vote (:func:`rfcircuits.crosscheck.differential.fuzz.make_case`): ``hard``,
    #: ``soft`` (weights from :data:`SOFT_WEIGHTS`, :func:`soften`), or ``mixed`` (odd cases soft).
    votes: str = "hard"


#: Bounds of the fuzz run's general-reason cases (:mod:`rfcircuits.crosscheck.differential.fuzz`):
#: more features and states than the brute force can enumerate terms over, so that instances often
#: have several GSRs per SR set and GNRs on three features or more (the paths of
#: :mod:`rfcircuits.general` the small forests seldom reach), and still within every size limit of
#: the BDD oracle (48 state variables, 10 trees, trees × variables × class pairs ≤ 1440).
GENERAL = Limits(max_features=6, max_states=8, max_trees=10, max_classes=3, max_depth=6)


def random_forest(rng: random.Random, limits: Limits = Limits()) -> Forest:
    """A random valid forest within ``limits``."""
    n_features = rng.randint(1, limits.max_features)
    features = []
    for i in range(n_features):
        n_states = rng.randint(2, max(2, limits.max_states))
        if rng.random() < 0.5:
            ts = sorted(rng.sample(range(1, 100), n_states - 1))
            features.append(Feature.numeric(f"x{i}", [t / 10 for t in ts]))
        else:
            features.append(Feature.categorical(f"f{i}", [f"s{j}" for j in range(n_states)]))
    n_classes = rng.randint(2, max(2, limits.max_classes))
    classes = [f"c{i}" for i in range(n_classes)]
    n_trees = rng.randint(1, limits.max_trees)
    trees = [_random_tree(rng, features, n_classes, limits.max_depth) for _ in range(n_trees)]
    return Forest(tuple(features), tuple(classes), tuple(trees))


#: Leaf weights of random soft forests: sums of 0, 1/2 and 1 tie exactly; 1/3, 0.1, 0.2 and
#: 0.7 are not dyadic, so their float64 values make sums that only nearly tie; negatives as
#: boosted trees have.
SOFT_WEIGHTS = (0.0, 0.5, 1.0, 1 / 3, 2 / 3, 0.1, 0.2, 0.7, -0.1, -1 / 3, -1.0)
#: Weights in halves: a tree's differences of sums span at most 8 halves, small integers as
#: the probabilities of pure leaves are (the SAT engine then compares them in unary).
COARSE_WEIGHTS = (0.0, 0.5, 1.0, 1.5, -0.5)


def random_soft_forest(rng: random.Random, limits: Limits = Limits(),
                       weights: Sequence[float] = SOFT_WEIGHTS) -> Forest:
    """A random valid forest of soft votes within ``limits``: :func:`random_forest`'s trees
    with soft weights (:func:`soften`)."""
    return soften(random_forest(rng, limits), rng, weights)


def soften(hard: Forest, rng: random.Random, weights: Sequence[float] = SOFT_WEIGHTS) -> Forest:
    """``hard``'s trees with soft votes: every leaf given one weight per class drawn from
    ``weights``, and half the time an ``init`` drawn from them too. Four leaves in ten permute
    an earlier leaf's weights instead, so that exact ties between sums are common
    (independent draws seldom tie)."""
    n_classes = len(hard.classes)
    drawn: list[tuple[float, ...]] = []

    def draw() -> tuple[float, ...]:
        if drawn and rng.random() < 0.4:
            ws = list(rng.choice(drawn))
            rng.shuffle(ws)
        else:
            ws = [rng.choice(weights) for _ in range(n_classes)]
        drawn.append(tuple(ws))
        return drawn[-1]

    def leaf(ws: tuple[float, ...]) -> Leaf:
        return Leaf(ws.index(max(ws)), ws)

    trees = tuple(Tree(tuple(leaf(draw()) if type(n) is Leaf else n for n in t.nodes))
                  for t in hard.trees)
    init = draw() if rng.random() < 0.5 else None
    return replace(hard, trees=trees, voting="soft", init=init)


def _random_tree(rng: random.Random, features: Sequence[Feature], n_classes: int,
                 max_depth: int) -> Tree:
    nodes: list[TreeNode | None] = []
    tested: list[int] = []  # per node: bitmask of features tested in its subtree

    def build(feasible: list[int], depth: int) -> int:
        # Depth is bounded by max_depth, so this recursion is shallow.
        choices = [f for f, m in enumerate(feasible) if bin(m).count("1") >= 2]
        if not choices or depth >= max_depth or rng.random() < 0.2 + 0.15 * depth:
            nodes.append(Leaf(rng.randrange(n_classes)))
            tested.append(0)
            return len(nodes) - 1
        f = rng.choice(choices)
        groups = _partition(rng, mask_states(feasible[f]), features[f].is_numeric)
        slot = len(nodes)
        nodes.append(None)
        tested.append(0)
        branches: list[tuple[int, int]] = []
        below = 1 << f
        for group in groups:
            reusable = [c for _, c in branches if not tested[c] >> f & 1]
            if reusable and rng.random() < 0.25:
                child = rng.choice(reusable)  # a shared child (DAG) must not re-test f
            else:
                sub = list(feasible)
                sub[f] = group
                child = build(sub, depth + 1)
            below |= tested[child]
            branches.append((group, child))
        nodes[slot] = Branching(f, tuple(branches))
        tested[slot] = below
        return slot

    build([f.full for f in features], 0)
    return Tree(tuple(nodes))  # type: ignore[arg-type]


def _partition(rng: random.Random, states: list[int], numeric: bool) -> list[int]:
    """Split feasible states into 2+ non-empty groups (contiguous runs for numeric features)."""
    k = rng.randint(2, min(3, len(states)))
    if numeric:
        cuts = sorted(rng.sample(range(1, len(states)), k - 1))
        runs = [states[a:b] for a, b in zip([0] + cuts, cuts + [len(states)])]
    else:
        shuffled = list(states)
        rng.shuffle(shuffled)
        cuts = sorted(rng.sample(range(1, len(states)), k - 1))
        runs = [shuffled[a:b] for a, b in zip([0] + cuts, cuts + [len(shuffled)])]
    return [sum(1 << s for s in run) for run in runs]


def random_instance(rng: random.Random, forest: Forest) -> Instance:
    return tuple(rng.randrange(f.n_states) for f in forest.features)


def all_worlds(forest: Forest) -> list[Instance]:
    """Every instance of ``forest``, in lexicographic order of the state indices."""
    return list(itertools.product(*(range(f.n_states) for f in forest.features)))


def margin(forest: Forest, x: Instance) -> int:
    """How far ``x`` is from a tie: the vote count of its top class minus the next one (0 for
    an exact tie)."""
    votes = sorted(forest.votes(x), reverse=True)
    return votes[0] - (votes[1] if len(votes) > 1 else 0)


def tied(forest: Forest, x: Instance) -> bool:
    """Whether two or more classes share the top vote count at ``x``."""
    votes = forest.votes(x)
    return votes.count(max(votes)) > 1


def pick_by_margin(forest: Forest, instances: Sequence[Instance], k: int) -> list[int]:
    """The indices in ``instances`` of the ``k`` (or all, if fewer) instances with the
    smallest :func:`margin`, smallest first: exact ties, then margins of one vote, ...; equal
    margins keep their input order. Indices rather than instances, so that a caller can take
    the matching rows of its data (the raw values a peer tool reads)."""
    if k < 0:
        raise ValueError(f"k must be non-negative, not {k}")
    margins = [margin(forest, x) for x in instances]
    return sorted(range(len(instances)), key=margins.__getitem__)[:k]  # sorted() is stable


def with_edge_worlds(forest: Forest, instances: Sequence[Instance], rng: random.Random,
                     worlds: Sequence[Instance] | None = None) -> list[Instance]:
    """``instances`` (duplicates dropped) plus, when none of them is one, a world with tied
    votes, for soft votes a near tie whose exact sums do not tie
    (:meth:`~rfcircuits.forest.Forest.near_tie`), and a world decided for each class (first
    in a shuffled order of ``worlds``, by default all worlds: a caller whose forest has too
    many passes a sample)."""
    worlds = list(worlds) if worlds is not None else all_worlds(forest)
    rng.shuffle(worlds)
    chosen = list(dict.fromkeys(instances))
    wanted: list[Callable[[Instance], bool]] = [lambda w: tied(forest, w)]
    if forest.voting == "soft":
        wanted.append(lambda w: forest.near_tie(w) and not tied(forest, w))
    wanted += [lambda w, c=c: forest.decision(w) == c for c in range(len(forest.classes))]
    for want in wanted:
        if not any(want(x) for x in chosen):
            chosen.extend(itertools.islice((w for w in worlds if want(w)), 1))
    return chosen


def forests(limits: Limits = Limits()):  # -> SearchStrategy[Forest]
    """Hypothesis strategy of random forests.

    Half the draws come from hypothesis' recorded randomness (shrinkable, but biased towards
    tiny forests), half from a seeded generator (sizes spread over the whole range)."""
    return _drawn(random_forest, limits)


def soft_forests(limits: Limits = Limits()):  # -> SearchStrategy[Forest]
    """Hypothesis strategy of random forests of soft votes (:func:`random_soft_forest`),
    drawn as :func:`forests` draws."""
    return _drawn(random_soft_forest, limits)


def _drawn(make: Callable[[random.Random, Limits], Forest], limits: Limits):
    from hypothesis import strategies as st

    return st.one_of(
        st.builds(make, st.randoms(use_true_random=False), st.just(limits)),
        st.builds(lambda seed: make(random.Random(seed), limits), st.integers(0, 2 ** 32 - 1)))


def forest_and_instance(limits: Limits = Limits(), soft: bool = False
                        ):  # -> SearchStrategy[tuple[Forest, Instance]]
    """Hypothesis strategy of a forest (of soft votes if ``soft``) with one of its
    instances."""
    from hypothesis import strategies as st

    @st.composite
    def draw(draw_fn):  # type: ignore[no-untyped-def]
        forest = draw_fn(soft_forests(limits) if soft else forests(limits))
        x = tuple(draw_fn(st.integers(0, f.n_states - 1)) for f in forest.features)
        return forest, x

    return draw()


def state_value(feature: Feature, s: int, input_dtype: str) -> float:
    """A raw value in state ``s`` of a numeric feature as a forest reading ``input_dtype``
    places it (0 for a feature without thresholds; NaN for a categorical feature, which has
    no raw values): the middle of its interval (the outer states taken one unit wide), or, when
    float32 rounding carries the middle out of a narrow state, the largest float32 not above
    its upper threshold (inside: merged thresholds have distinct float32 floors)."""
    ts = feature.thresholds
    if ts is None:
        return math.nan
    if not ts:
        return 0.0
    low = ts[s - 1] if s > 0 else ts[0] - 1.0
    high = ts[s] if s < len(ts) else ts[-1] + 1.0
    middle = (low + high) / 2
    return middle if feature.state_of_value(middle, input_dtype) == s else float32_floor(high)


def world_values(forest: Forest, x: Instance) -> list[float]:
    """Raw values of a world (:func:`state_value` per feature)."""
    return [state_value(f, s, forest.input_dtype) for f, s in zip(forest.features, x)]
