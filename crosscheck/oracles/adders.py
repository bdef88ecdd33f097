"""Binary arithmetic in CNF for the SAT oracle's soft votes: one-hot integers as bits, their sum
by full adders, and the comparison of the sum with a constant.

Every gate is a Tseitin definition in both directions, so each output literal is *equivalent*
to its function of the inputs: a caller may assert a comparison, deny it, or leave it to the
solver. Constants are the literals ``true`` and ``-true`` of a variable the caller forces
true; gates fold them (a half adder with a false input is a wire) and make no variable for them.

Sizes, for ``n`` one-hot integers with ``L_t`` choices and ``w_t`` bits each, and ``W`` bits of
the sum (``W <= max_t w_t + log2 n + 1``):

- :meth:`Circuit.one_hot`: bit ``k`` is the disjunction of the choices whose value has bit
  ``k``, or the negated disjunction of the others when they are fewer (exactly one choice
  holds): at most ``w_t (L_t / 2 + 1)`` clauses per integer, one variable per bit;
- :meth:`Circuit.add`: column compression (a Wallace tree): a column of three bits or more
  passes three through a full adder (sum bit back in the column, carry to the next), a column
  of two through a half adder; a full adder removes one bit, so there are fewer than
  ``Σ_t w_t`` of them, 2 variables and 14 clauses each (the sum's 8, the carry's 6);
- :meth:`Circuit.at_least`: a chain from the lowest bit, ``W`` gates of 3 clauses at most.

:class:`OneHotSum` puts them together for ``[Σ_t v_t >= k]`` with any integers ``v_t``: each
integer is shifted by its smallest choice and all are divided by the greatest common divisor
of the shifted values, so the bits are as few as the values allow. Time and space are linear in
the clauses.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence


class Circuit:
    """Gates over the literals of one CNF: ``new_var()`` gives a fresh variable, ``true`` is a
    literal forced true elsewhere, and the clauses go to :attr:`clauses`."""

    def __init__(self, new_var: Callable[[], int], true: int) -> None:
        self.new_var = new_var
        self.true = true
        self.clauses: list[list[int]] = []

    def _constant(self, lit: int) -> bool | None:
        """True or False for the constant literals, None for any other."""
        return lit > 0 if abs(lit) == self.true else None

    def or_(self, lits: Sequence[int]) -> int:
        """A literal equivalent to ``∨ lits`` (false for none): ``len + 1`` clauses, none for
        one literal or a constant."""
        if any(self._constant(lit) is True for lit in lits):
            return self.true
        lits = [lit for lit in lits if self._constant(lit) is None]
        if len(lits) <= 1:
            return lits[0] if lits else -self.true
        out = self.new_var()
        self.clauses.append([-out, *lits])
        self.clauses.extend([-lit, out] for lit in lits)
        return out

    def and_(self, a: int, b: int) -> int:
        """A literal equivalent to ``a ∧ b``."""
        return -self.or_([-a, -b])

    def xor(self, a: int, b: int) -> int:
        """A literal equivalent to ``a ⊕ b``: 4 clauses, none when an input is constant."""
        for p, q in ((a, b), (b, a)):
            value = self._constant(p)
            if value is not None:
                return -q if value else q
        out = self.new_var()
        self.clauses.extend([[-out, a, b], [-out, -a, -b], [out, -a, b], [out, a, -b]])
        return out

    def full_adder(self, a: int, b: int, c: int) -> tuple[int, int]:
        """``(sum, carry)`` of three bits: ``a ⊕ b ⊕ c`` and their majority (8 + 6 clauses)."""
        for p, q, r in ((a, b, c), (b, c, a), (c, a, b)):
            value = self._constant(p)
            if value is not None:  # a constant input leaves a half adder, or its complement
                if value:
                    return -self.xor(q, r), self.or_([q, r])
                return self.half_adder(q, r)
        s, carry = self.new_var(), self.new_var()
        # The odd assignments make s true; their complements, the even ones, make it false.
        for x, y, z in ((a, b, c), (-a, -b, c), (-a, b, -c), (a, -b, -c)):
            self.clauses.extend([[s, -x, -y, -z], [-s, x, y, z]])
        for x, y in ((a, b), (a, c), (b, c)):
            self.clauses.extend([[carry, -x, -y], [-carry, x, y]])
        return s, carry

    def half_adder(self, a: int, b: int) -> tuple[int, int]:
        """``(sum, carry)`` of two bits: ``a ⊕ b`` and ``a ∧ b``."""
        return self.xor(a, b), self.and_(a, b)

    def one_hot(self, choices: Sequence[tuple[int, int]]) -> list[int]:
        """The bits, lowest first, of the value of the one choice ``(literal, value)`` whose
        literal holds (the caller guarantees exactly one does; values are non-negative). A bit
        no value has is the constant false."""
        width = max((value.bit_length() for _, value in choices), default=0)
        bits = []
        for k in range(width):
            having = [lit for lit, value in choices if value >> k & 1]
            others = [lit for lit, value in choices if not value >> k & 1]
            # Exactly one literal holds, so the bit is also "none of the others holds".
            bits.append(self.or_(having) if len(having) <= len(others) else -self.or_(others))
        return bits

    def add(self, numbers: Sequence[Sequence[int]]) -> list[int]:
        """The bits, lowest first, of the sum of the numbers (each its bits, lowest first), by
        column compression; constant false bits are left out of the columns."""
        columns: list[list[int]] = []
        for bits in numbers:
            for k, bit in enumerate(bits):
                if self._constant(bit) is False:
                    continue
                while len(columns) <= k:
                    columns.append([])
                columns[k].append(bit)
        out = []
        k = 0
        while k < len(columns):
            column = columns[k]
            carries = []
            while len(column) >= 2:  # FIFO: bits made late (deep) are added late
                if len(column) >= 3:
                    s, c = self.full_adder(column.pop(0), column.pop(0), column.pop(0))
                else:
                    s, c = self.half_adder(column.pop(0), column.pop(0))
                column.append(s)
                carries.append(c)
            if carries:
                if k + 1 == len(columns):
                    columns.append([])
                columns[k + 1].extend(carries)
            out.append(column[0] if column else -self.true)
            k += 1
        return out

    def at_least(self, bits: Sequence[int], k: int) -> int:
        """A literal equivalent to ``[Σ_i bits[i]·2^i >= k]``. From the lowest bit up,
        ``c_{i+1} = [low i+1 bits >= low i+1 bits of k]`` is ``b_i ∧ c_i`` where ``k`` has bit
        ``i``, else ``b_i ∨ c_i`` (``c_0`` true)."""
        if k <= 0:
            return self.true
        if k >> len(bits):
            return -self.true
        c = self.true
        for i, bit in enumerate(bits):
            c = self.and_(bit, c) if k >> i & 1 else self.or_([bit, c])
        return c


class OneHotSum:
    """``Σ_t v_t`` over groups of ``(literal, integer)`` choices, exactly one literal true per
    group (``v_t`` its integer), encoded once; :meth:`at_least` compares it with constants.

    Each group's values are shifted by their minimum and all divided by ``unit``, the greatest
    common divisor of the shifted values, so that ``Σ_t v_t = low + unit · B`` with ``B`` the
    binary sum :attr:`bits` (groups of one value add nothing but ``low``)."""

    def __init__(self, circuit: Circuit, groups: Sequence[Sequence[tuple[int, int]]]) -> None:
        self.circuit = circuit
        lows = [min(value for _, value in group) for group in groups]
        self.low = sum(lows)
        self.unit = math.gcd(*(value - low for group, low in zip(groups, lows)
                               for _, value in group)) or 1
        self.bits = circuit.add([circuit.one_hot([(lit, (value - low) // self.unit)
                                                  for lit, value in group])
                                 for group, low in zip(groups, lows)])

    def at_least(self, k: int) -> int:
        """A literal equivalent to ``[Σ_t v_t >= k]``, i.e. ``B >= ⌈(k - low) / unit⌉``."""
        return self.circuit.at_least(self.bits, -((self.low - k) // self.unit))
