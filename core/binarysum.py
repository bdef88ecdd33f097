"""Comparisons of soft votes as binary arithmetic in NNF: the SAT engine's circuits.

The decision diagrams of :mod:`rfcircuits.pbdd` are exact and canonical, but their size grows
with the distinct partial sums of the trees, which a forest of probabilities (every leaf a
different fraction) makes exponential. The SAT engine needs circuits of polynomial size
whatever the weights, so it adds in binary: ``[Σ_t d_t >= K]`` (``d_t = v_{t,k}`` exactly when
the atom ``A_{t,k}`` holds; :func:`rfcircuits.pbdd.difference_trees`) is

- per tree, the value shifted to start at 0 and divided by the values' greatest common
  divisor (``K`` alike, rounded up), each bit the disjunction of the atoms whose value has it
  (and its negation the disjunction of the others: a tree's atoms are exclusive and
  exhaustive);
- a ripple-carry accumulation in tree order: ``acc_t = acc_{t-1} + d_t``, full adders whose
  sum is the XOR of three and whose carry is their majority;
- a comparison with the constant from the lowest bit: ``ge_b = s_b ∨ ge_{b-1}`` where ``K``'s
  bit is 0 and ``s_b ∧ ge_{b-1}`` where it is 1 (``ge_{-1}`` true: equal is at least).

NNF negates only literals, so every signal is kept in both polarities (dual rail: XOR's
negation is built from the operands' negations). What the SAT oracle encodes instead
(column compression of the trees' bits in CNF, :mod:`rfcircuits.crosscheck.oracles.adders`) shares
nothing with this but the arithmetic.

Size: ``O(n · (B + log n))`` gates for ``n`` trees of ``B``-bit values (after the common
divisor; scaled float64 probabilities give ``B`` up to about 60), per comparison.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

from rfcircuits.ops import Ops

T = TypeVar("T")
#: A signal in both polarities: (it, its negation).
Rail = tuple[T, T]


def normalized(values: Sequence[Sequence[int]]) -> tuple[int, int, list[list[int]]]:
    """``(low, divisor, units)`` of the trees' ascending ``values``: the least sum
    ``Σ_t values[t][0]``, the greatest common divisor of every value's distance from its tree's
    least (1 when there is none), and each tree's values as those distances divided by it
    (0 first). ``[Σ_t d_t >= K]`` is ``Σ_t u_t >= ceil((K - low) / divisor)``."""
    low = sum(v[0] for v in values)
    divisor = math.gcd(*(x - v[0] for v in values for x in v)) or 1
    return low, divisor, [[(x - v[0]) // divisor for x in v] for v in values]


def at_least_binary(values: Sequence[Sequence[int]], atoms: Sequence[Sequence[T]],
                    needs: Sequence[int], ops: Ops[T], true: T) -> list[T]:
    """Per ``K`` of ``needs``: ``[Σ_t d_t >= K]`` as a circuit of ``ops`` (module docstring),
    the same function as :func:`rfcircuits.pbdd.at_least` of the same arguments. The needs
    share the sum; each has its comparison. O(n · (B + log n)) operations."""
    low, divisor, shifted = normalized(values)
    top = sum(v[-1] for v in shifted)
    total: list[Rail[T]] = []
    for vals, tree_atoms in zip(shifted, atoms):
        bits = [_bit(vals, tree_atoms, b, ops) for b in range(vals[-1].bit_length())]
        total = _add(total, bits, ops, true)
    out = []
    for need in needs:
        k = -((low - need) // divisor)  # ceil((need - low) / divisor)
        if k <= 0:
            out.append(true)
        elif k > top:
            out.append(ops.false)
        else:
            out.append(_compare(total, k, ops, true))
    return out


def _bit(vals: Sequence[int], atoms: Sequence[T], b: int, ops: Ops[T]) -> Rail[T]:
    """Bit ``b`` of a tree's value: the atoms whose value has it, and the others."""
    ones, zeros = ops.false, ops.false
    for v, atom in zip(vals, atoms):
        if v >> b & 1:
            ones = ops.max(ones, atom)
        else:
            zeros = ops.max(zeros, atom)
    return ones, zeros


def _add(a: list[Rail[T]], b: list[Rail[T]], ops: Ops[T], true: T) -> list[Rail[T]]:
    """The binary sum of ``a`` and ``b`` (least significant bit first), ripple carry."""
    zero: Rail[T] = (ops.false, true)
    out = []
    carry = zero
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else zero
        y = b[i] if i < len(b) else zero
        out.append(_xor(_xor(x, y, ops), carry, ops))
        carry = _majority(x, y, carry, ops)
    if carry != zero:
        out.append(carry)
    return out


def _xor(x: Rail[T], y: Rail[T], ops: Ops[T]) -> Rail[T]:
    if x[0] == ops.false:  # a zero operand (constants fold: no gates for padding)
        return y
    if y[0] == ops.false:
        return x
    return (ops.max(ops.min(x[0], y[1]), ops.min(x[1], y[0])),
            ops.max(ops.min(x[0], y[0]), ops.min(x[1], y[1])))


def _majority(x: Rail[T], y: Rail[T], z: Rail[T], ops: Ops[T]) -> Rail[T]:
    def maj(p: T, q: T, r: T) -> T:
        return ops.max(ops.max(ops.min(p, q), ops.min(p, r)), ops.min(q, r))
    return maj(x[0], y[0], z[0]), maj(x[1], y[1], z[1])


def _compare(total: list[Rail[T]], k: int, ops: Ops[T], true: T) -> T:
    """``[total >= k]`` for a constant ``0 < k`` that ``total`` can reach, lowest bit first."""
    ge = true
    for b, (bit, _) in enumerate(total):
        ge = ops.min(bit, ge) if k >> b & 1 else ops.max(bit, ge)
    return ge
