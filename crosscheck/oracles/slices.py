"""Δ on a slice: the worlds equal to an instance outside a few features, tabled by counting votes.

A general necessary reason of ``x`` is a prime implicate of GR, and GR is closed under moving any
feature back to ``x[X]`` (docs/semantics.md §7; the lemma of
:mod:`rfcircuits.crosscheck.oracles.brute`). So whether a clause on the features ``V`` is an
implicate, prime, and variable-minimal depends only on the *slice* of ``V``: the worlds that agree
with ``x`` outside ``V``. On a slice each tree takes ``x``'s branch at every node testing a feature
outside ``V``, so only the branch masks met on the free features matter: the states of a free
feature fall into *atoms*, the classes of states that no reachable node tells apart, and the slice
is a grid of atoms. :class:`Slice` counts the votes on that grid (each tree's reachable leaves paint
their boxes: one vote for the leaf's class, or with soft votes the leaf's exact integer weights,
:attr:`~rfcircuits.forest.Forest.int_weights`, added to ``int_init``) and marks the cells in Δ;
:func:`gnr_verdicts` reads the three verdicts of a clause off the grid with array operations.
Nothing here is shared with the native engine: the votes are the trees' own, counted cell by cell.

Cost: ``O(Σ_trees reachable nodes · |V|)`` to find the atoms and ``O(#trees · #cells)`` to count
the votes, where ``#cells`` is the product of the atoms' counts; a clause then costs
``O(2^|V| · #cells)``. A slice of more than :data:`MAX_CELLS` cells is not tabled (``delta`` is
None; the caller falls back to its counter-example search).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from rfcircuits.forest import Branching, Forest, Instance, mask_states
from rfcircuits.terms import Clause

#: Largest grid a slice tables (cells, i.e. products of the atoms' counts).
MAX_CELLS = 1 << 21


def member_grid(votes: np.ndarray, c: int, ties: str) -> np.ndarray:
    """Where ``R^c`` holds, from vote counts with the classes on axis 0 (docs/semantics.md §3;
    ``strict``: ``c`` beats every other class strictly). The votes may be Python ints (dtype
    object), whose comparisons on one axis give a plain bool: the answer is always an array."""
    top = votes.max(axis=0)
    if ties == "first":
        member = np.argmax(votes, axis=0) == c
    elif ties == "all":
        member = votes[c] == top
    else:
        member = (votes[c] == top) & ((votes == top).sum(axis=0) == 1)
    return np.asarray(member, dtype=bool)


class Slice:
    """The slice of ``features`` at ``x``: ``atoms[i]`` the atoms of ``features[i]`` (state
    masks, in state order), ``atom_of[i]`` each state's atom, and ``delta`` the grid of atoms
    (axis ``i`` for ``features[i]``) with True where the cell is in ``R^c``."""

    def __init__(self, forest: Forest, x: Instance, features: Sequence[int], c: int,
                 ties: str, max_cells: int = MAX_CELLS) -> None:
        self.forest, self.x, self.features = forest, x, tuple(features)
        axis = {f: i for i, f in enumerate(self.features)}
        tests: list[set[int]] = [set() for _ in self.features]
        leaves: list[list[tuple[int, tuple[int, ...]]]] = []  # per tree: (leaf node, box)
        for tree in forest.trees:
            # Each reachable leaf with the branch masks met on the free features, per axis
            # (a stack, not recursion: DAG trees can be deep).
            found = []
            stack = [(0, tuple(f.full for f in (forest.features[g] for g in self.features)))]
            while stack:
                k, box = stack.pop()
                node = tree.nodes[k]
                if type(node) is not Branching:
                    found.append((k, box))
                    continue
                i = axis.get(node.feature)
                for mask, child in node.branches:
                    if i is None:
                        if mask >> x[node.feature] & 1:
                            stack.append((child, box))
                    elif box[i] & mask:
                        tests[i].add(mask)
                        stack.append((child, box[:i] + (box[i] & mask,) + box[i + 1:]))
            leaves.append(found)
        self.atoms = [_atoms(forest.features[f].n_states, tests[i])
                      for i, f in enumerate(self.features)]
        self.atom_of = []
        for atoms, f in zip(self.atoms, self.features):
            of = [0] * forest.features[f].n_states
            for a, mask in enumerate(atoms):
                for s in mask_states(mask):
                    of[s] = a
            self.atom_of.append(of)
        self._meets: dict[tuple[int, int], np.ndarray] = {}
        shape = tuple(len(a) for a in self.atoms)
        #: Δ on the grid of atoms; None when it has more than ``max_cells`` cells.
        self.delta: np.ndarray | None = None
        if math.prod(shape) > max_cells:
            return
        votes = _empty_votes(forest, shape)
        for tree, weights, found in zip(forest.trees, forest.int_weights, leaves):
            for k, box in found:
                cells = np.ix_(*(self.meets(i, m) for i, m in enumerate(box)))
                w = weights[k]
                if w is None:
                    votes[(tree.nodes[k].label,) + cells] += 1  # type: ignore[union-attr]
                else:
                    votes[(slice(None),) + cells] += np.array(w, dtype=votes.dtype).reshape(
                        (-1,) + (1,) * len(shape))
        self.delta = member_grid(votes, c, ties)

    def meets(self, i: int, mask: int) -> np.ndarray:
        """The atoms of axis ``i`` that meet the state mask (as a boolean array)."""
        if (i, mask) not in self._meets:
            self._meets[(i, mask)] = np.array([bool(a & mask) for a in self.atoms[i]])
        return self._meets[(i, mask)]

    def home(self, i: int) -> int:
        """The atom of ``x``'s state on axis ``i``."""
        return self.atom_of[i][self.x[self.features[i]]]


def _empty_votes(forest: Forest, shape: tuple[int, ...]) -> np.ndarray:
    """The vote grid before any tree, classes on axis 0: zero counts (hard votes) or
    ``int_init`` (soft votes) in int64, or in Python ints (dtype object) when the sums could
    leave int64."""
    n = len(forest.classes)
    if forest.voting == "hard":
        return np.zeros((n,) + shape, dtype=np.int32)
    bound = max(map(abs, forest.int_init), default=0) + sum(
        max((abs(v) for w in weights if w is not None for v in w), default=0)
        for weights in forest.int_weights)
    dtype = np.int64 if bound < 1 << 62 else object
    return np.broadcast_to(np.array(forest.int_init, dtype=dtype).reshape(
        (n,) + (1,) * len(shape)), (n,) + shape).copy()


def _atoms(n_states: int, masks: set[int]) -> list[int]:
    """The coarsest partition of the states that every mask is a union of, in state order."""
    groups: dict[tuple[bool, ...], int] = {}
    order = sorted(masks)
    for s in range(n_states):
        key = tuple(bool(m >> s & 1) for m in order)
        groups[key] = groups.get(key, 0) | 1 << s
    return sorted(groups.values(), key=lambda m: m & -m)


def general_reason_grid(sl: Slice) -> np.ndarray:
    """GR on the slice: a cell is in GR when every corner of its box with ``x`` is in Δ
    (``GBox``), i.e. the AND over the subsets ``T`` of the axes of Δ with the axes outside ``T``
    set to ``x``'s atoms."""
    k = sl.delta.ndim
    out = np.ones(sl.delta.shape, dtype=bool)
    for r in range(k + 1):
        for kept in itertools.combinations(range(k), r):
            index = tuple(slice(None) if i in kept else slice(sl.home(i), sl.home(i) + 1)
                          for i in range(k))
            out &= sl.delta[index]
    return out


def gnr_verdicts(sl: Slice, clause: Clause) -> dict[str, bool]:
    """The GNR verdicts (``valid``, ``prime``, ``variable_minimal``: see
    :meth:`rfcircuits.crosscheck.oracles.sat.SatOracle.check_gnr`) of a clause whose features are
    the slice's, in the slice's order.

    - ``valid``: no cell of GR has, on every axis, an atom meeting the states the literal
      leaves out (a world of GR falsifying the clause);
    - ``prime``: valid, and for every literal and every state ``s`` it holds some world of GR
      takes ``s`` there and falsifies the other literals (then the clause without ``s`` is not
      an implicate; GR is a union of cells, so the atom of ``s`` decides);
    - ``variable_minimal``: for every feature, the cells with ``x``'s atom on its axis are all
      in Δ (no world changing only the other features leaves Δ).
    """
    k = len(sl.features)
    assert [f for f, _ in clause] == list(sl.features)
    gr = general_reason_grid(sl)
    full = [sl.forest.features[f].full for f in sl.features]
    falsify = [sl.meets(i, full[i] & ~mask) for i, (_, mask) in enumerate(clause)]
    valid = not gr[np.ix_(*falsify)].any() if k else not bool(gr)
    prime = valid
    for i in range(k if valid else 0):
        axes = [falsify[j] if j != i else np.ones(len(sl.atoms[i]), dtype=bool)
                for j in range(k)]
        witnessed = gr[np.ix_(*axes)].any(axis=tuple(j for j in range(k) if j != i))
        if not witnessed[sl.meets(i, clause[i][1])].all():
            prime = False
            break
    variable_minimal = all(np.take(sl.delta, sl.home(i), axis=i).all() for i in range(k))
    return {"valid": valid, "prime": prime, "variable_minimal": variable_minimal}


def path_box(forest: Forest, w: Instance) -> tuple[list[int], tuple[int, ...]]:
    """The votes at ``w`` (:meth:`~rfcircuits.forest.Forest.votes`: counts, or exact scaled
    sums) and the box of worlds that reach the same leaf as ``w`` in every tree (per feature,
    the intersection of the branch masks ``w`` takes): the trees vote alike on all of it.
    ``O(Σ_trees depth · #classes)``."""
    box = [f.full for f in forest.features]
    votes = [0] * len(forest.classes) if forest.voting == "hard" else list(forest.int_init)
    for tree, weights in zip(forest.trees, forest.int_weights):
        k = 0
        node = tree.nodes[0]
        while type(node) is Branching:
            f = node.feature
            for mask, k in node.branches:
                if mask >> w[f] & 1:
                    box[f] &= mask
                    node = tree.nodes[k]
                    break
        leaf = weights[k]
        if leaf is None:
            votes[node.label] += 1
        else:
            for i, v in enumerate(leaf):
                votes[i] += v
    return votes, tuple(box)
