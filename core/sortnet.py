"""Odd-even merge sorting networks (paper Alg. 1 ``Sortnet`` and Alg. 2 ``Merge``).

A network is built once per shape as a symbolic template: wires ``0..n-1`` are the inputs,
wire ``n + j`` is the ``j``-th comparator output, and each output is ``max`` (``a ∨ b``) or
``min`` (``a ∧ b``) of two earlier wires. Inputs beyond the real ones are padding with
``false``, folded away while building (``max(a, false) = a``, ``min(a, false) = false``).
:func:`evaluate` then computes only the comparators the requested outputs depend on, with
caller-supplied operations — NNF gates, decision-graph Apply or plain booleans.

Output ``y_k`` (1-based, descending) is true iff at least ``k`` inputs are true.
With ``presorted_pairs`` the inputs come as pairs ``(a_l, b_l)`` with ``b_l ⊨ a_l`` (paper,
footnote to Alg. 3: ``(¬C^j_l, C^i_l)``), so the first layer of comparators is the identity
and is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

T = TypeVar("T")

#: The padding constant ``false`` as a symbolic wire.
PAD = -1
MAX, MIN = 0, 1


@dataclass(frozen=True)
class Network:
    """A sorting network template (see module docstring)."""

    n_inputs: int
    ops: tuple[tuple[int, int, int], ...]  # (MAX|MIN, wire a, wire b)
    outputs: tuple[int, ...]  # wire of y_1 … y_N (PAD where the output is constantly false)


def _power_of_two(n: int) -> int:
    m = 1
    while m < n:
        m *= 2
    return m


@lru_cache(maxsize=64)
def network(n_inputs: int, presorted_pairs: bool = False) -> Network:
    """The odd-even merge network for ``n_inputs`` real inputs, padded to a power of two."""
    if n_inputs < 1 or presorted_pairs and n_inputs % 2:
        raise ValueError("need n_inputs >= 1 (and even with presorted pairs)")
    size = _power_of_two(n_inputs)
    ops: list[tuple[int, int, int]] = []

    def comparator(a: int, b: int) -> tuple[int, int]:
        if a == PAD:
            return b, PAD
        if b == PAD:
            return a, PAD
        ops.append((MAX, a, b))
        ops.append((MIN, a, b))
        return n_inputs + len(ops) - 2, n_inputs + len(ops) - 1

    def merge(a: list[int], b: list[int]) -> list[int]:  # Alg. 2; depth log2(size)
        m = len(a)
        if m == 1:
            return list(comparator(a[0], b[0]))
        c = merge(a[0::2], b[0::2])
        d = merge(a[1::2], b[1::2])
        y = [c[0]]
        for i in range(1, m):
            y.extend(comparator(c[i], d[i - 1]))
        y.append(d[m - 1])
        return y

    def sort(x: list[int]) -> list[int]:  # Alg. 1; depth log2(size)
        if len(x) == 1 or presorted_pairs and len(x) == 2:
            return x
        half = len(x) // 2
        return merge(sort(x[:half]), sort(x[half:]))

    outputs = sort(list(range(n_inputs)) + [PAD] * (size - n_inputs))
    return Network(n_inputs, tuple(ops), tuple(outputs))


def evaluate(net: Network, inputs: Sequence[T], wanted: Sequence[int],
             op_max: Callable[[T, T], T], op_min: Callable[[T, T], T], false: T) -> list[T]:
    """Values of outputs ``y_k`` for each 1-based ``k`` in ``wanted``, computing only their cone."""
    if len(inputs) != net.n_inputs:
        raise ValueError(f"network has {net.n_inputs} inputs, got {len(inputs)}")
    n = net.n_inputs
    roots = [net.outputs[k - 1] if 1 <= k <= len(net.outputs) else PAD for k in wanted]
    needed: set[int] = set()
    stack = [w for w in roots if w >= n]
    while stack:
        w = stack.pop()
        if w in needed:
            continue
        needed.add(w)
        _, a, b = net.ops[w - n]
        stack.extend(v for v in (a, b) if v >= n)
    value: dict[int, T] = {}

    def get(w: int) -> T:
        if w == PAD:
            return false
        return inputs[w] if w < n else value[w]

    for w in sorted(needed):
        kind, a, b = net.ops[w - n]
        value[w] = (op_max if kind == MAX else op_min)(get(a), get(b))
    return [get(w) for w in roots]
