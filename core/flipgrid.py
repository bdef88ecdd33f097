"""Shortest flips of an instance, read off the class formula's circuit conditioned on the
instance outside a few features (for the SAT engine, :mod:`rfcircuits.satengine`).

Given the feature sets ``V`` of the shortest NRs (robustness ``r = |V|``), the shortest
flips on ``V`` are the worlds that differ from ``x`` on every feature of ``V``, agree with it
elsewhere and leave Δ; the shortest GNRs on ``V`` are the clauses whose violations are
exactly those worlds, i.e. the negations of the maximal boxes inside them
(docs/semantics.md: shortest flips).

The NNF circuit of Δ (paper Alg. 3) is conditioned on ``x`` outside ``V`` (literals on other
features become constants and fold away), which leaves a small circuit over ``V``. The states
of each feature of ``V`` fall into *atoms*, the classes of states that no literal of that
circuit tells apart; the circuit is evaluated once on the grid of atoms (NumPy arrays per
node), and the maximal boxes of the cells outside Δ are read off with
:func:`rfcircuits.boxes.boxes_in`. The decision graphs compute the same clauses by paper
Alg. 6–7 on the general reason; the SAT oracle checks them by counting the trees' votes.

Cost: one pass over the circuit of Δ for the union of the sets, then per set a pass over
the conditioned circuit with arrays of ``#cells`` entries (the product of the atoms' counts),
by blocks whose arrays hold at most :data:`MAX_WORK` entries in all;
a set with more than ``max_cells`` cells has its cells outside Δ listed by the caller
(the SAT engine enumerates them, :data:`Cells`), or is skipped and the answer marked
incomplete.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np

from rfcircuits.boxes import boxes_in, grid_sizes
from rfcircuits.forest import mask_states as bits
from rfcircuits.nnf import AND, CONST, FALSE, LIT, NNF, TRUE
from rfcircuits.terms import Clause

#: Largest grid of atoms tabled for one feature set, and most cells times circuit nodes
#: evaluated at once (each node is a boolean array over the cells: this bounds memory; a
#: larger grid is evaluated a block of the first feature's atoms at a time).
MAX_CELLS = 1 << 20
MAX_WORK = 1 << 27


def condition(nnf: NNF, root: int, x: Sequence[int], free: int, out: NNF) -> int:
    """The node ``root`` of ``nnf`` with every feature outside the bitmask ``free`` set to
    its state in ``x``, built in ``out`` (constants folded). Linear in the circuit."""
    def lit(f: int, mask: int) -> int:
        if free >> f & 1:
            return out.literal(f, mask)
        return TRUE if mask >> x[f] & 1 else FALSE

    return nnf.fold([root], lambda v: TRUE if v else FALSE, lit, out.conj, out.disj)[0]


#: ``cells(features, atoms)``: the cells outside Δ that change every feature (atom indices,
#: one per feature), found by other means where the grid is too large to evaluate; None
#: when they cannot be had (too many, no time).
Cells = Callable[[list[int], list[list[int]]], "list[tuple[int, ...]] | None"]


def shortest_gnrs(nnf: NNF, root: int, x: Sequence[int], sets: Sequence[int],
                  max_cells: int = MAX_CELLS, cells: Cells | None = None
                  ) -> tuple[list[Clause], bool]:
    """``(clauses, complete)``: the shortest GNRs on each feature set of ``sets`` (the
    shortest NR sets of ``x``; Δ is ``root``), and False when some set's grid had more than
    ``max_cells`` cells and ``cells`` (when given) could not list its flips either (its
    clauses are then missing)."""
    out = NNF(nnf.features)
    near = condition(nnf, root, x, functools.reduce(int.__or__, sets, 0), out)
    clauses: list[Clause] = []
    complete = True
    for v in sets:
        found = _on_set(out, condition(out, near, x, v, out), x, bits(v), max_cells, cells)
        if found is None:
            complete = False
        else:
            clauses.extend(found)
    return clauses, complete


def _on_set(nnf: NNF, root: int, x: Sequence[int], features: list[int],
            max_cells: int, cells: Cells | None) -> list[Clause] | None:
    """The shortest GNRs on ``features`` from Δ conditioned on ``x`` elsewhere (``root``);
    None when the grid is too large and ``cells`` gives no list of its flips."""
    nodes = nnf.reachable([root])
    axis = {f: i for i, f in enumerate(features)}
    masks: list[set[int]] = [set() for _ in features]
    for n in nodes:
        if nnf.kind[n] == LIT:
            masks[axis[nnf.args[n][0]]].add(nnf.args[n][1])
    atoms = [_atoms(nnf.features[f].n_states, masks[i]) for i, f in enumerate(features)]
    sizes = grid_sizes([len(a) for a in atoms])
    if sizes[0] <= max_cells:
        region = _flips(nnf, root, nodes, x, features, atoms)
    else:
        listed = cells(features, atoms) if cells is not None else None
        if listed is None:
            return None
        region = 0
        for cell in listed:
            region |= 1 << sum(a * size for a, size in zip(cell, sizes[1:]))
    out: list[Clause] = []
    for box in boxes_in(region, sizes, 0) if region else []:
        clause = []
        for i, f in enumerate(features):
            states = 0
            for a in bits(box[i]):
                states |= atoms[i][a]
            clause.append((f, nnf.features[f].full & ~states))
        out.append(tuple(clause))
    return out


def _flips(nnf: NNF, root: int, nodes: list[int], x: Sequence[int], features: list[int],
           atoms: list[list[int]]) -> int:
    """The cells outside Δ that change every feature, as a bitmask over the grid (row-major):
    the conditioned circuit evaluated with a NumPy array per node, over a block of the first
    feature's atoms at a time so that the arrays alive stay within :data:`MAX_WORK` cells."""
    shape = [len(a) for a in atoms]
    row = math.prod(shape[1:])
    step = max(1, MAX_WORK // max(1, row * len(nodes)))
    axis = {f: i for i, f in enumerate(features)}
    firsts = [np.array([(a & -a).bit_length() - 1 for a in own]) for own in atoms]
    inside = {n: _inside(firsts[axis[nnf.args[n][0]]], nnf.args[n][1])
              for n in nodes if nnf.kind[n] == LIT}
    blocks = [_block(nnf, root, nodes, x, features, atoms, inside, start,
                     min(start + step, shape[0])) for start in range(0, shape[0], step)]
    flat = np.concatenate(blocks)
    return int.from_bytes(np.packbits(flat, bitorder="little").tobytes(), "little")


def _block(nnf: NNF, root: int, nodes: list[int], x: Sequence[int], features: list[int],
           atoms: list[list[int]], inside: dict[int, np.ndarray], start: int,
           stop: int) -> np.ndarray:
    """The cells of :func:`_flips` whose first feature's atom is in ``start .. stop - 1``,
    flattened row-major (``inside``: each literal node's atoms)."""
    axis = {f: i for i, f in enumerate(features)}
    shape = (stop - start, *(len(a) for a in atoms[1:]))
    last = {}  # each node's last reader: its array is dropped once that one is built
    for n in nodes:
        if nnf.kind[n] >= AND:
            for c in nnf.args[n]:
                last[c] = n
    value: dict[int, np.ndarray] = {}
    for n in nodes:
        kind, args = nnf.kind[n], nnf.args[n]
        if kind == CONST:
            value[n] = np.full(shape, n == TRUE)
        elif kind == LIT:
            i = axis[args[0]]
            own = inside[n][start:stop] if i == 0 else inside[n]
            value[n] = own.reshape(tuple(len(own) if j == i else 1 for j in range(len(shape))))
        else:
            combine = np.logical_and if kind == AND else np.logical_or
            value[n] = functools.reduce(combine, (value[c] for c in args))
            for c in args:
                if last[c] == n:
                    del value[c]
    flips = ~np.broadcast_to(value[root], shape)
    for i, f in enumerate(features):  # a flip changes every feature of the set
        home = atom_of(atoms[i], x[f])
        first = start if i == 0 else 0
        flips = flips & (np.arange(first, first + shape[i]) != home).reshape(
            tuple(shape[i] if j == i else 1 for j in range(len(shape))))
    return np.ascontiguousarray(flips).reshape(-1)


def atom_of(atoms: list[int], state: int) -> int:
    """The index of the atom (a state mask of a partition) holding ``state``."""
    return next(a for a, m in enumerate(atoms) if m >> state & 1)


def _atoms(n_states: int, masks: set[int]) -> list[int]:
    """A partition of the states into runs that no mask splits (state masks, in state
    order): the runs between the states where some mask changes. Runs that no mask tells
    apart may stay apart, which changes no maximal box."""
    cuts = 0  # bit s: some mask differs at states s and s + 1
    for m in masks:
        cuts |= m ^ m >> 1
    ends = [s + 1 for s in bits(cuts & (1 << (n_states - 1)) - 1)] + [n_states]
    starts = [0] + ends[:-1]
    return [((1 << end) - 1) ^ ((1 << start) - 1) for start, end in zip(starts, ends)]


def _inside(firsts: np.ndarray, mask: int) -> np.ndarray:
    """For each atom (a run of states no mask splits, given by its first state), whether it
    lies in ``mask``: the mask's bit at the atom's first state, read for all atoms at once."""
    width = (max(mask.bit_length(), int(firsts[-1]) + 1) + 7) // 8
    states = np.unpackbits(np.frombuffer(mask.to_bytes(width, "little"), np.uint8),
                           bitorder="little")
    return states[firsts].astype(bool)
