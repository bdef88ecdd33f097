"""The C store: the extension type ``rfcircuits._dgstore.Store`` completed into a
:class:`rfcircuits._store_abc.Store` that takes any forest.

The C code packs deviation sets in 64-bit words and path costs and state counts in 16 bits;
beyond those widths :class:`CStore` runs the reference searches of :mod:`rfcircuits.dgstore`
on its own segments. So the store knows its limits and the facade never asks which store it
has. Importing this module raises ImportError when the extension was not built.
"""

from __future__ import annotations

from collections.abc import Sequence

from rfcircuits import _dgstore
from rfcircuits._store_abc import Path
from rfcircuits.dgstore import min_deviations, violations


class CStore(_dgstore.Store):
    """:class:`rfcircuits.dgstore.PyStore`'s C twin (same constructor, same node ids)."""

    def __init__(self, n_states: Sequence[int], *args: object) -> None:
        # The C type's constructor took every argument; the searches' widths need these.
        self._n_states = list(n_states)
        self._wide_sets = len(self._n_states) > 64
        self._wide_costs = (len(self._n_states) >= 1 << 14
                            or max(self._n_states, default=0) > 0xFFFF)

    def min_deviations(self, roots: Sequence[int], x: Sequence[int], /) -> list[int]:
        """See :meth:`rfcircuits._store_abc.Store.min_deviations` (in C up to 64 features)."""
        if self._wide_sets:
            return min_deviations(self.feature, self.segments, roots, x)
        return super().min_deviations(list(roots), list(x))

    def violations(self, roots: Sequence[int], x: Sequence[int], boxes: Sequence[bytes], /
                   ) -> list[Path | None]:
        """See :meth:`rfcircuits._store_abc.Store.violations` (in C while costs and state
        counts fit in 16 bits)."""
        if self._wide_costs:
            return violations(self._n_states, self.feature, self.segments,
                              self.reachable(list(roots)), roots, x, boxes)
        return super().violations(list(roots), list(x), list(boxes))
