"""The explanation record, its canonical JSON line (docs/formats.md#explanations) and its
readable text.

Engines (the native explainer and every oracle) fill an :class:`Explanation`; its
:meth:`Explanation.to_json` is the one serialisation, so equal answers print identically, and
:meth:`Explanation.to_text` (``str(e)``) the one readable form (the demo prints it too).
Which fields are present is given by ``what`` (the ``--what`` keys of ``rfcircuits explain``:
docs/semantics.md#12-field-reference).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rfcircuits.errors import InputError
from rfcircuits.forest import Forest, Instance, instance_to_json
from rfcircuits.robustness import flips
from rfcircuits.terms import Clause, Term, canonical, literal_text, term_text, terms_json

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
#: The formats of ``rfcircuits explain --format`` (:meth:`Explanation.render`).
FORMATS = ("jsonl", "text")
#: How many items of each list the readable form shows by default.
TEXT_LIMIT = 10
#: The keys every explanation has, before the fields of ``what``.
HEADER_KEYS = ("instance", "ties", "votes", "decision", "classes")
#: One field's key; :data:`What`: the fields an explanation is asked for.
WhatKey = Literal["sr", "nr", "gsr", "gnr", "ce", "robust", "flips"]
What = Literal["all"] | WhatKey | Sequence[WhatKey]


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


def what_keys(what: What) -> tuple[str, ...]:
    """The keys of ``what`` (``"all"``, one key or a sequence of keys) in canonical order."""
    keys: Any = ALL_WHAT if what == "all" else (what,) if isinstance(what, str) else what
    try:
        unknown = [k for k in keys if k not in WHAT_FIELDS]
    except TypeError:  # not iterable
        unknown = [keys]
    if unknown:
        raise InputError(f"what: unknown key {unknown[0]!r}: expected 'all', one of "
                         f"{', '.join(map(repr, ALL_WHAT))}, or a sequence of them")
    return tuple(k for k in ALL_WHAT if k in keys)


@dataclass(frozen=True)
class Explanation:
    """Every field of an explanation of one instance; fields outside ``what`` stay empty."""

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
    #: Which engine answered ("graphs", "sat"); None for the oracles' records.
    engine: str | None = None
    #: The keys of ``what`` whose field stopped at a limit: each item in it is exact, but
    #: items may be missing (robustness: the size of the smallest NR found, or None).
    incomplete: tuple[str, ...] = ()
    #: Keys asked for that the engine does not compute (absent from ``what``).
    not_computed: tuple[str, ...] = ()

    @staticmethod
    def sets(items: Iterable[Term]) -> tuple[Term, ...]:
        """Canonical tuple of terms/clauses, for constructing fields."""
        return canonical(items)

    def to_json(self, engine: bool = True) -> dict[str, Any]:
        """The JSON object (docs/formats.md#explanations), keys in canonical order: the
        header, ``engine`` when an engine answered (and ``engine`` is true: the golden
        corpus records answers, not who gave them), the fields asked for, then
        ``incomplete`` and ``not_computed`` (field names) when not empty."""
        out = self.header_json()
        if engine and self.engine is not None:
            out["engine"] = self.engine
        for key in self.what:
            out[WHAT_FIELDS[key]] = self.field_json(key)
        if self.incomplete:
            out["incomplete"] = [WHAT_FIELDS[k] for k in self.incomplete]
        if self.not_computed:
            out["not_computed"] = [WHAT_FIELDS[k] for k in self.not_computed]
        return out

    def header_json(self) -> dict[str, Any]:
        """The keys every explanation has: instance, ties, votes, decision, classes."""
        f = self.forest
        out = {
            "instance": instance_to_json(f, self.instance),
            "ties": self.ties,
            "votes": dict(zip(f.classes, f.readable_votes(self.votes))),
            "decision": f.classes[self.decision],
            "classes": [f.classes[i] for i in self.classes],
        }
        if f.near_tie(self.instance):
            out["near_tie"] = True
        return out

    def field_json(self, key: str) -> Any:
        """The JSON value of the field that ``--what`` key ``key`` adds."""
        f = self.forest
        value = getattr(self, WHAT_FIELDS[key])
        if key == "ce":
            return {f.classes[t]: terms_json(f, ces) for t, ces in value}
        if key == "robust":
            return value
        return terms_json(f, value)

    def to_line(self, engine: bool = True) -> str:
        """One canonical JSON Lines record (no trailing newline); ``engine`` as
        :meth:`to_json` takes it."""
        return dumps(self.to_json(engine))

    def render(self, fmt: str) -> str:
        """One record of ``rfcircuits explain --format fmt``: :meth:`to_line` (``jsonl``) or
        :meth:`to_text` (``text``), whose lists cut at :data:`TEXT_LIMIT` point to ``jsonl``."""
        if fmt == "text":
            return self.to_text(more="--format jsonl lists all")
        return self.to_line()

    def to_text(self, limit: int | None = TEXT_LIMIT,
                more: str = "to_text(limit=None) shows all") -> str:
        """The readable form: the instance, the decision and votes, then every field asked
        for, its items as literals (``2.45 < petal_length ≤ 4.75``, ``colour=red``); at most
        ``limit`` items per list (None: all), a longer list ending with how many more and
        ``more``, where to see them."""
        f = self.forest
        states = (_state_text(f, i, s) for i, s in enumerate(self.instance))
        lines = ["instance: " + ", ".join(states),
                 f"decision: {f.classes[self.decision]} ({'votes' if f.voting == 'hard' else 'sums'}: "
                 + ", ".join(f"{c} {v:.6g}" for c, v in zip(f.classes, f.readable_votes(self.votes)))
                 + ")"]
        if f.near_tie(self.instance):
            lines.append(NEAR_TIE_TEXT)
        if self.ties == "all":
            lines.append("classes (ties 'all'): " + ", ".join(f.classes[c] for c in self.classes))
        if self.engine is not None:
            lines.append(f"engine: {ENGINE_TEXT.get(self.engine, self.engine)}")
        for key in self.what:
            value = getattr(self, WHAT_FIELDS[key])
            if key in self.incomplete:
                lines.append(f"[{TEXT_HEADINGS.get(key, 'robustness').split(' (')[0]}: stopped "
                             "at the limit; what follows is exact but may be incomplete]")
            if key == "robust":
                lines.append(f"robustness: {value} (the fewest features whose change can flip "
                             "the decision)" if value is not None else
                             "robustness: none (no change of features flips the decision)")
            elif key == "ce":
                lines.append(TEXT_HEADINGS[key] + ":")
                if not value:
                    lines.append("  (none: the instance is in every class)")
                for t, clauses in value:
                    lines.append(f"  to {f.classes[t]}:")
                    lines.extend(_listing(f, clauses, " ∨ ", limit, more, "    "))
            else:
                lines.append(TEXT_HEADINGS[key] + ":")
                lines.extend(_listing(f, value, " ∨ " if key in CLAUSE_KEYS else " ∧ ", limit,
                                      more))
                if key == "flips" and value:
                    lines.append("  e.g. " + self._flip_example())
        for key in self.not_computed:
            lines.append(f"{TEXT_HEADINGS[key].split(' (')[0]}: not computed by the "
                         f"{self.engine} engine (the decision graphs compute them where they "
                         "fit: engine='graphs')")
        return "\n".join(lines)

    def _flip_example(self) -> str:
        """One of the shortest flips in words: ``set 4.75 < petal_length → virginica``."""
        f = self.forest
        world = next(flips(self.instance, self.shortest_flips, [ft.full for ft in f.features]))
        changed = [literal_text(f, (i, 1 << s)) for i, s in enumerate(world)
                   if s != self.instance[i]]
        return f"set {' and '.join(changed)} → {f.classes[f.decision(world)]}"

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        """Short: the decision, the votes and how many items each field has."""
        f = self.forest
        parts = []
        for key in self.what:
            value = getattr(self, WHAT_FIELDS[key])
            count = value if key == "robust" else {f.classes[t]: len(c) for t, c in value} \
                if key == "ce" else len(value)
            parts.append(f"{WHAT_FIELDS[key].replace('_', ' ')}: {count}")
        votes = dict(zip(f.classes, f.readable_votes(self.votes)))
        return (f"<Explanation: decision {f.classes[self.decision]!r}, votes {votes}"
                + ("; " + ", ".join(parts) if parts else "") + ">")

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython and Jupyter show the readable form."""
        printer.text(self.to_text())


#: The readable form's warning on a near tie (:meth:`rfcircuits.forest.Forest.near_tie`).
NEAR_TIE_TEXT = ("near tie: the best sums are so close that the library's float arithmetic "
                 "could decide otherwise; this explains the exact sums' decision")
#: How the readable form names each engine.
ENGINE_TEXT = {"graphs": "decision graphs", "sat": "SAT on the NNF circuits"}
#: The readable form's heading of each list field, saying how to read its items.
TEXT_HEADINGS = {
    "sr": "sufficient reasons (each alone keeps the decision, whatever the other features)",
    "nr": "necessary reasons (changing all the features of any one can flip the decision)",
    "gsr": "general sufficient reasons (each alone keeps the decision, over wider ranges)",
    "gnr": "general necessary reasons (every change that violates one flips the decision)",
    "ce": "contrastive explanations (changing all the features of one can reach the class)",
    "flips": "shortest flips (every change of the fewest features that flips the decision "
             "violates one)",
}
#: The list fields whose items are clauses (the others' are terms; the CEs' too are clauses).
CLAUSE_KEYS = ("nr", "gnr", "flips")


def _state_text(forest: Forest, feature: int, state: int) -> str:
    """An instance's state as a literal; a feature no tree tests has one state only."""
    if forest.features[feature].n_states == 1:
        return f"{forest.features[feature].name} (untested)"
    return literal_text(forest, (feature, 1 << state))


def _listing(forest: Forest, items: Sequence[Term], joiner: str, limit: int | None,
             more: str, indent: str = "  ") -> list[str]:
    shown = items if limit is None else items[:limit]
    texts = [term_text(forest, t, joiner) for t in shown]
    lines = [indent + (t if t != "true" else "true (whatever the features)") for t in texts]
    lines = lines or [indent + "(none)"]
    if len(items) > len(shown):
        lines.append(f"{indent}… and {len(items) - len(shown)} more ({more})")
    return lines


def dumps(obj: Any) -> str:
    """The canonical JSON text used for every explanation line."""
    return json.dumps(obj, ensure_ascii=False)
