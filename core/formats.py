"""The interchange formats' shared conventions (``docs/formats.md``).

Circuit files written by ``rfcircuits compile --out`` and kept in the golden corpus are named
by :func:`circuit_stem`, so that both name the same class's file the same way.
"""

from __future__ import annotations

import re


def circuit_stem(index: int, name: str) -> str:
    """The file-name stem of class ``index``'s circuit (class names may hold any character)."""
    return f"R{index}-{re.sub(r'[^A-Za-z0-9._-]+', '_', name)[:60]}"
