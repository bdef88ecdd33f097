"""The explanation record and its canonical JSON line (SPEC §5).

Engines (the native explainer and every oracle) fill an :class:`Explanation`; its
:meth:`Explanation.to_json` is the one serialisation, so equal answers print identically.
Which fields are present is given by ``what`` (the ``--what`` keys of SPEC §6).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rfcircuits.errors import InputError
from rfcircuits.forest import Forest, Instance, instance_to_json
from rfcircuits.terms import Clause, Term, canonical, terms_json

#: ``--what`` keys in canonical field order, with the JSON field each one adds.
WHAT_FIELDS = {
    "sr": "sufficient_reasons",
    "nr": "necessary_reasons",
    "gsr": "general_sufficient_reasons",
    "gnr": "general_necessary_reasons",
    "ce": "contrastive",
    "robust": "robustness",
    "flips": "shortest_flips",
}
ALL_WHAT = tuple(WHAT_FIELDS)


def parse_what(text: str) -> tuple[str, ...]:
    """``all`` or a comma list of ``sr,nr,gsr,gnr,ce,robust,flips`` → keys in canonical order."""
    if text.strip() == "all":
        return ALL_WHAT
    keys = {k.strip() for k in text.split(",") if k.strip()}
    unknown = sorted(keys - set(ALL_WHAT))
    if unknown or not keys:
        raise InputError(f"--what: unknown key {unknown[0]!r}" if unknown else "--what: empty"
                         f" (expected all or a comma list of {','.join(ALL_WHAT)})")
    return tuple(k for k in ALL_WHAT if k in keys)


@dataclass(frozen=True)
class Explanation:
    """Every field of SPEC §5 for one instance; fields outside ``what`` stay empty."""

    forest: Forest = field(repr=False, compare=False)
    instance: Instance
    ties: str
    votes: tuple[int, ...]
    decision: int
    classes: tuple[int, ...]
    what: tuple[str, ...] = ALL_WHAT
    sufficient_reasons: tuple[Term, ...] = ()
    necessary_reasons: tuple[Clause, ...] = ()
    general_sufficient_reasons: tuple[Term, ...] = ()
    general_necessary_reasons: tuple[Clause, ...] = ()
    contrastive: tuple[tuple[int, tuple[Clause, ...]], ...] = ()
    robustness: int | None = None
    shortest_flips: tuple[Clause, ...] = ()

    @staticmethod
    def sets(items: Iterable[Term]) -> tuple[Term, ...]:
        """Canonical tuple of terms/clauses, for constructing fields."""
        return canonical(items)

    def to_json(self) -> dict[str, Any]:
        """The SPEC §5 object, keys in canonical order."""
        out = self.header_json()
        for key in self.what:
            out[WHAT_FIELDS[key]] = self.field_json(key)
        return out

    def header_json(self) -> dict[str, Any]:
        """The SPEC §5 keys every explanation has: instance, ties, votes, decision, classes."""
        f = self.forest
        return {
            "instance": instance_to_json(f, self.instance),
            "ties": self.ties,
            "votes": {f.classes[i]: v for i, v in enumerate(self.votes)},
            "decision": f.classes[self.decision],
            "classes": [f.classes[i] for i in self.classes],
        }

    def field_json(self, key: str) -> Any:
        """The JSON value of the field that ``--what`` key ``key`` adds (SPEC §5)."""
        f = self.forest
        value = getattr(self, WHAT_FIELDS[key])
        if key == "ce":
            return {f.classes[t]: terms_json(f, ces) for t, ces in value}
        if key == "robust":
            return value
        return terms_json(f, value)

    def to_line(self) -> str:
        """One canonical JSON Lines record (no trailing newline)."""
        return dumps(self.to_json())


def dumps(obj: Any) -> str:
    """The canonical JSON text used for every explanation line."""
    return json.dumps(obj, ensure_ascii=False)
