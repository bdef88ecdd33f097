"""The C store: the extension type ``rfcircuits._dgstore.Store`` completed into a
:class:`rfcircuits._store_abc.Store` that takes any forest.

The C code packs deviation sets in 64-bit words; beyond that width :class:`CStore` runs the
reference search of :mod:`rfcircuits.dgstore` on its own segments. So the store knows its
limits and the facade never asks which store it has. Importing this module raises
ImportError when the extension was not built.
"""

from __future__ import annotations

from collections.abc import Sequence

from rfcircuits import _dgstore
from rfcircuits.dgstore import min_deviations


class CStore(_dgstore.Store):
    """:class:`rfcircuits.dgstore.PyStore`'s C twin (same constructor, same node ids)."""

    def __init__(self, n_states: Sequence[int], *args: object) -> None:
        # The C type's constructor took every argument; the search's width needs this.
        self._wide_sets = len(n_states) > 64

    def min_deviations(self, roots: Sequence[int], x: Sequence[int], /) -> list[int]:
        """See :meth:`rfcircuits._store_abc.Store.min_deviations` (in C up to 64 features)."""
        if self._wide_sets:
            return min_deviations(self.feature, self.segments, roots, x)
        return super().min_deviations(list(roots), list(x))
