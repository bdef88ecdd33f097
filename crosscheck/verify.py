"""``rfcircuits verify``: grade another tool's explanation file item by item.

Inputs are a forest, its instances (JSON Lines) and an explanations file ``E`` (JSON Lines,
explanation records: docs/formats.md#verify-input) written by *any* tool. A line of ``E`` may
hold any subset of the explanation fields; fields it lacks are not graded, other fields are
listed as ignored.

**Matching lines to instances.** When every line of ``E`` has an ``instance`` field (state
names or raw numbers, as in an instances file), a line is matched to the instances with the
same states (several instances with equal states share it; a line whose instance is not in
the instances file is still graded and marked so). When no line has one, the k-th non-empty
line answers the k-th instance. Mixing both forms, or more lines than instances in the second
form, is malformed input. Instances with no line are reported and make the verdict fail.

**Literals** of ``E`` may name states (``{"feature": "x1", "states": ["(0.5,2.5]"]}``), give
state indices (``"states": [1, 2]``) or, for a numeric feature, a numeric interval
(``{"feature": "x1", "interval": [0.5, 2.5]}`` meaning ``0.5 < x1 <= 2.5``, ``null`` for an
infinite bound), or a numeric range (``{"feature": "x1", "range": [0.4, 2.6]}``, the same
reading with any bounds). An interval stands for the states it covers, so its finite bounds
must be thresholds of the feature (equal up to a relative 1e-9, to absorb printing; in a forest that
reads float32 inputs, equal on every float32 input, as thresholds the scikit-learn importer
merged are); a range stands for every state some value in it falls in (a rule "0.4 < x1 <=
2.6" holds on a box that meets those states, and the forest decides alike within a state), and
one that meets every state constrains nothing and is dropped. A
bound that cuts a state, an empty or full literal, or two literals on one feature in a term or
clause is malformed input.

**Verdicts** come from the SAT oracle (:class:`rfcircuits.crosscheck.oracles.sat.SatOracle`; the
definitions are in docs/semantics.md), for every item ``E`` lists and every item of the native
engine's answer that ``E`` lacks:

============================  ==============================================================
field                         verdicts
============================  ==============================================================
sufficient_reasons            ``sufficient`` (instance literals that force Δ), ``minimal``
necessary_reasons             ``necessary`` (instance literals whose change can leave Δ),
                              ``minimal``
general_sufficient_reasons    ``valid`` (implicant of GR), ``prime``, ``variable_minimal``
general_necessary_reasons     ``valid`` (implicate of GR), ``prime``, ``variable_minimal``
contrastive (per target t)    ``reaches`` (changing its features can put x into R^t),
                              ``minimal``
shortest_flips                ``valid`` (a GNR), ``shortest`` (as many features as the true
                              robustness)
robustness                    equal to the true robustness (MaxSAT), else too high / too low
votes, decision, classes      equal to the forest's
============================  ==============================================================

GNR and shortest-flip verdicts are read off a table of the instance's slice
(:meth:`SatOracle.gnr_tabled`); on a slice too large to table, validity enumerates the clause's
falsifying assignments, and beyond :data:`GNR_LIMIT` (an upper bound of that work, see
:func:`gnr_cost`) those verdicts are ``None`` (unknown) with the reason, rather than a check
that may not end.

**Item status**: ``ok`` (listed, in the native answer, no verdict fails); ``wrong`` (listed, not
in the native answer, not every verdict holds); ``missing`` (in the native answer, not
listed); ``disputed`` (the native engine and the oracle disagree about it: a bug of ours, not
of the graded tool). A contrastive entry for a class the instance is already in is ``wrong``
as a whole. A wrong item carries **evidence** when one world refutes it
(:meth:`SatOracle.counterexample`): the world and the trees' votes at it.

Fields named in ``oracle_only`` (``--oracle-only``, in either vocabulary: ``sr`` or
``sufficient_reasons``; for forests whose complete answer is too expensive to enumerate
natively) are graded by the oracle alone: a listed item is ``ok`` when every verdict holds,
``wrong`` when one fails, ``unknown`` otherwise. **Completeness** is reported per field:
``checked`` (against the native answer), ``certified`` (a line lists both SRs and NRs, both
graded by the oracle alone: :meth:`SatOracle.certify_reasons` proves the correct listed ones
complete or finds an item missing, which is added with status ``missing``, repeatedly, up to
:data:`MISSING_LIMIT` per field; a target's CEs graded by the oracle alone, by
:meth:`SatOracle.missing_contrastive`, alike) or ``not checked``. The run is correct (exit 0)
when every item is ``ok``, every scalar field matches and every instance has a line; otherwise
exit 1; the result line says for which fields completeness was not checked, and never calls
them complete.
Malformed input exits 2 naming the line and field.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rfcircuits.errors import InputError
from rfcircuits.explain import Explainer
from rfcircuits.explanation import ALL_WHAT, WHAT_FIELDS, Explanation
from rfcircuits.forest import Feature, Forest, Instance, check_ties, float32_floor, \
    instance_to_json, parse_instance
from rfcircuits.jsonio import load_json_lines
from rfcircuits.terms import Literal, Term, literal_text, make, term_json, term_text
from rfcircuits.crosscheck.oracles.sat import SatOracle

#: Set-valued explanation fields and the oracle verdicts each listed item gets.
VERDICTS: dict[str, tuple[str, ...]] = {
    "sufficient_reasons": ("sufficient", "minimal"),
    "necessary_reasons": ("necessary", "minimal"),
    "general_sufficient_reasons": ("valid", "prime", "variable_minimal"),
    "general_necessary_reasons": ("valid", "prime", "variable_minimal"),
    "contrastive": ("reaches", "minimal"),
    "shortest_flips": ("valid", "shortest"),
}
#: Fields that are terms (conjunctions); the other set-valued fields hold clauses.
TERM_FIELDS = frozenset({"sufficient_reasons", "general_sufficient_reasons"})
#: Fields compared with the forest itself.
HEADER_FIELDS = ("votes", "decision", "classes")
#: The ``--what`` key of each explanation field.
WHAT_OF = {name: key for key, name in WHAT_FIELDS.items()}
#: An engine's notes on a line: who answered, which fields stopped at a limit (graded item by
#: item, their completeness not judged) and which were not computed (absent).
NOTE_FIELDS = ("engine", "incomplete", "not_computed")
KNOWN_FIELDS = frozenset({"instance", "ties", *HEADER_FIELDS, *WHAT_OF, *NOTE_FIELDS})
#: Largest :func:`gnr_cost` for which GNR / shortest-flip validity is decided on a slice too
#: large to table.
GNR_LIMIT = 20_000
#: The keys a literal gives its states by (module docstring).
LITERAL_FORMS = ("states", "interval", "range")
#: Relative tolerance when an interval bound is matched to a threshold.
BOUND_TOLERANCE = 1e-9
STATUSES = ("ok", "unknown", "wrong", "missing", "disputed")
#: How a set-valued field's completeness was established (module docstring).
COMPLETENESS = ("checked", "certified", "not checked")
#: Most items the certificate adds as missing to one field of one line (each costs a
#: certificate: one SAT call per item).
MISSING_LIMIT = 20
#: The SAT oracle's name of each set-valued field's items (:meth:`SatOracle.counterexample`).
COUNTEREXAMPLE_KIND = {"sufficient_reasons": "sr", "necessary_reasons": "nr",
                       "general_sufficient_reasons": "gsr", "general_necessary_reasons": "gnr",
                       "contrastive": "ce", "shortest_flips": "gnr"}

# ---------------------------------------------------------------------------------------------
# Parsing E (malformed input → InputError naming the line and the field).


def read_lines(path: str | os.PathLike[str]) -> list[tuple[int, Any]]:
    """The non-blank lines of a JSON Lines file as ``(line number, parsed JSON)``."""
    return [(line.number, line.value) for line in load_json_lines(path)]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def threshold_index(feature: Feature, bound: float, where: str,
                    input_dtype: str = "float64") -> int:
    """The index of the threshold of a numeric feature equal to ``bound`` (up to
    :data:`BOUND_TOLERANCE`) or, for a forest reading float32 inputs, testing them alike (the
    same :func:`float32_floor`: the threshold scikit-learn's trees hold where the importer
    merged it into another); InputError naming ``where`` when none is."""
    ts = feature.thresholds or ()
    for k, t in enumerate(ts):
        if math.isclose(bound, t, rel_tol=BOUND_TOLERANCE, abs_tol=BOUND_TOLERANCE):
            return k
    if input_dtype == "float32":
        floor = float32_floor(bound)
        for k, t in enumerate(ts):
            if float32_floor(t) == floor:
                return k
    shown = ", ".join(repr(t) for t in ts) or "none"
    raise InputError(f"{where}: bound {bound!r} is not a threshold of {feature.name!r}, so the "
                     f"interval cuts one of its states (thresholds: {shown})")


def interval_mask(feature: Feature, low: float | None, high: float | None, where: str,
                  input_dtype: str = "float64") -> int:
    """States of a numeric feature covered by ``low < value <= high`` (None: unbounded), in a
    forest reading its inputs as ``input_dtype``.

    State ``s`` is ``(t_s, t_{s+1}]``, so ``low = t_a`` starts at state ``a+1`` and
    ``high = t_b`` ends at state ``b``; a bound that is not a threshold cuts a state."""
    first = 0 if low is None else threshold_index(feature, low, where, input_dtype) + 1
    last = feature.n_states - 1 if high is None else \
        threshold_index(feature, high, where, input_dtype)
    if first > last:
        raise InputError(f"{where}: the interval ({low}, {high}] holds no state of "
                         f"{feature.name!r}")
    return ((1 << (last + 1)) - 1) & ~((1 << first) - 1)


def range_mask(feature: Feature, low: float | None, high: float | None, where: str,
               input_dtype: str = "float64") -> int:
    """States of a numeric feature that some value ``v`` with ``low < v <= high`` (None:
    unbounded; any numbers) falls in, as a forest reading its inputs as ``input_dtype`` reads
    ``v``. The forest decides alike on every value of a state, so a term of such literals
    implies a class exactly when every point of the box it describes gets that class: the form
    for rules whose bounds are not the forest's thresholds (Anchors' quantiles)."""
    last = feature.n_states - 1
    try:
        first = 0 if low is None else feature.state_of_value(math.nextafter(low, math.inf),
                                                             input_dtype)
        if high is not None:
            last = feature.state_of_value(high, input_dtype)
    except ValueError as exc:
        raise InputError(f"{where}: {exc}") from None
    if low is not None and high is not None and low >= high or first > last:
        raise InputError(f"{where}: the range ({low}, {high}] holds no value")
    return ((1 << (last + 1)) - 1) & ~((1 << first) - 1)


def parse_literal(forest: Forest, obj: Any, where: str) -> Literal:
    """One literal in any of the three accepted forms (module docstring)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("feature"), str):
        raise InputError(f"{where}: expected a literal {{\"feature\": name, \"states\": [...]}} "
                         "or {\"feature\": name, \"interval\": [low, high]}")
    name = obj["feature"]
    if name not in forest.feature_index:
        raise InputError(f"{where}: unknown feature {name!r}")
    f = forest.feature_index[name]
    feature = forest.features[f]
    extra = sorted(set(obj) - {"feature", *LITERAL_FORMS})
    if extra:
        raise InputError(f"{where}: unknown key {extra[0]!r} in a literal")
    forms = [k for k in LITERAL_FORMS if k in obj]
    if len(forms) != 1:
        raise InputError(f"{where}: give one of 'states', 'interval' or 'range' for {name!r}")
    if forms[0] != "states":
        bounds = obj[forms[0]]
        if feature.thresholds is None:
            raise InputError(f"{where}: {name!r} is categorical; an {forms[0]} needs a numeric "
                             "feature")
        if not (isinstance(bounds, list) and len(bounds) == 2
                and all(b is None or _is_number(b) for b in bounds)):
            raise InputError(f"{where}: '{forms[0]}' must be [low, high] with numbers or null")
        if forms[0] == "interval":
            mask = interval_mask(feature, bounds[0], bounds[1], where, forest.input_dtype)
        else:
            mask = range_mask(feature, bounds[0], bounds[1], where, forest.input_dtype)
    else:
        states = obj["states"]
        if not isinstance(states, list) or not states:
            raise InputError(f"{where}: 'states' must be a non-empty list")
        mask = 0
        for s in states:
            if isinstance(s, str) and s in feature.states:
                mask |= 1 << feature.states.index(s)
            elif isinstance(s, int) and not isinstance(s, bool) and 0 <= s < feature.n_states:
                mask |= 1 << s
            else:
                raise InputError(f"{where}: {json.dumps(s)} is neither a state name nor a state "
                                 f"index of {name!r} (states: {', '.join(feature.states)})")
    if mask == feature.full and "range" not in obj:  # a range may hold them all (dropped)
        raise InputError(f"{where}: the literal holds every state of {name!r}; a literal must "
                         "exclude some state")
    return f, mask


def parse_items(forest: Forest, value: Any, place: str, path: str) -> tuple[Term, ...]:
    """A set of terms or clauses (a list of lists of literals), canonical (docs/formats.md). Errors
    name ``place`` (file and line) and the field ``path`` down to the literal."""
    if not isinstance(value, list):
        raise InputError(f"{place}, field '{path}': expected a list of terms or clauses")
    items = []
    for i, item in enumerate(value):
        if not isinstance(item, list):
            raise InputError(f"{place}, field '{path}[{i}]': expected a list of literals")
        literals = [parse_literal(forest, lit, f"{place}, field '{path}[{i}][{k}]'")
                    for k, lit in enumerate(item)]
        literals = [(f, m) for f, m in literals if m != forest.features[f].full]
        try:
            items.append(make(literals))
        except ValueError:
            names = Counter(forest.features[f].name for f, _ in literals)
            twice = next(n for n, c in names.items() if c > 1)
            raise InputError(f"{place}, field '{path}[{i}]': two literals on feature "
                             f"{twice!r}") from None
    return Explanation.sets(items)


@dataclass
class Claim:
    """One line of E, parsed: what the graded tool states about one instance."""

    line: int
    instance: Instance
    fields: dict[str, Any]
    ignored: tuple[str, ...]
    #: The fields the line says are incomplete.
    partial: frozenset[str] = frozenset()


def parse_claim(forest: Forest, obj: Any, line: int, source: str, ties: str,
                instance: Instance | None) -> Claim:
    """Parse one line of E; ``instance`` is the order-matched instance when the line has none.

    Field values: set fields → canonical tuples, ``contrastive`` → ``{class index: tuple}``,
    ``robustness`` → int or None, ``votes`` → tuple, ``decision`` → class index, ``classes``
    → sorted tuple of class indices."""
    place = f"{source}, line {line}"

    def where(name: str) -> str:
        return f"{place}, field '{name}'"

    if not isinstance(obj, dict):
        raise InputError(f"{source}, line {line}: expected a JSON object (an explanation)")
    if "instance" in obj:
        x = parse_instance(forest, obj["instance"], where("instance"))
    else:
        assert instance is not None
        x = instance
    if "ties" in obj and obj["ties"] != ties:
        raise InputError(f"{where('ties')}: {json.dumps(obj['ties'])}, but verifying with "
                         f"--ties {ties} (pass the tie policy the tool used)")
    class_index = {c: i for i, c in enumerate(forest.classes)}

    def class_of(value: Any, name: str) -> int:
        if not isinstance(value, str) or value not in class_index:
            raise InputError(f"{where(name)}: {json.dumps(value)} is not a class "
                             f"(classes: {', '.join(forest.classes)})")
        return class_index[value]

    fields: dict[str, Any] = {}
    for name, value in obj.items():
        if name in VERDICTS and name != "contrastive":
            fields[name] = parse_items(forest, value, place, name)
        elif name == "contrastive":
            if not isinstance(value, dict):
                raise InputError(f"{where(name)}: expected an object {{class: [clauses]}}")
            fields[name] = {class_of(t, f"{name}.{t}"): parse_items(forest, v, place, f"{name}.{t}")
                            for t, v in value.items()}
        elif name == "robustness":
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):
                raise InputError(f"{where(name)}: expected a non-negative integer or null")
            fields[name] = value
        elif name == "votes":  # counts, or a soft forest's sums as explanations print them
            number = int if forest.voting == "hard" else (int, float)
            if not isinstance(value, dict) or not all(
                    isinstance(v, number) and not isinstance(v, bool) for v in value.values()):
                raise InputError(f"{where(name)}: expected an object {{class: number of votes}}"
                                 if forest.voting == "hard" else
                                 f"{where(name)}: expected an object {{class: sum}}")
            counts = {class_of(c, f"votes.{c}"): v for c, v in value.items()}
            fields[name] = tuple(counts.get(i) for i in range(len(forest.classes)))
        elif name == "decision":
            fields[name] = class_of(value, name)
        elif name == "classes":
            if not isinstance(value, list):
                raise InputError(f"{where(name)}: expected a list of class names")
            fields[name] = tuple(sorted({class_of(c, name) for c in value}))
    partial = obj.get("incomplete", [])
    if not isinstance(partial, list) or not all(n in WHAT_OF for n in partial):
        raise InputError(f"{where('incomplete')}: expected a list of explanation field names")
    ignored = tuple(sorted(set(obj) - KNOWN_FIELDS))
    return Claim(line, x, fields, ignored, frozenset(partial))


def parse_claims(forest: Forest, instances: Sequence[Instance], rows: Sequence[tuple[int, Any]],
                 source: str, ties: str) -> tuple[list[Claim], str]:
    """Parse every line of E and decide how lines match instances: ``"instance"`` (every line
    names its instance) or ``"order"`` (none does)."""
    given = [n for n, obj in rows if isinstance(obj, dict) and "instance" in obj]
    if given and len(given) != len(rows):
        lacking = next(n for n, obj in rows if not (isinstance(obj, dict) and "instance" in obj))
        raise InputError(f"{source}, line {lacking}, field 'instance': missing, but other lines "
                         "have one (give it on every line or on none)")
    by = "instance" if given else "order"
    if by == "order" and len(rows) > len(instances):
        raise InputError(f"{source}, line {rows[len(instances)][0]}: lines are matched by order "
                         f"(no 'instance' field) and there are only "
                         f"{counted(len(instances), 'instance')}")
    claims = [parse_claim(forest, obj, n, source, ties, None if by == "instance" else instances[k])
              for k, (n, obj) in enumerate(rows)]
    return claims, by


# ---------------------------------------------------------------------------------------------
# Results.


def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` and the noun in the number it takes (``1 item``, ``2 items``), for reports."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def _verdict_text(verdict: dict[str, bool | None]) -> str:
    mark = {True: "✓", False: "✗", None: "?"}
    return " ".join(f"{k} {mark[v]}" for k, v in verdict.items())


@dataclass
class ItemResult:
    """One item of a set-valued field: listed by E and/or in the native answer (``ours`` is
    None when the field is graded by the oracle alone; an item neither listed nor ours is one
    the oracle's certificate found missing), with the oracle's verdict (None = unknown), why a
    verdict fails or is unknown, and a world refuting the first failing verdict
    (``evidence``) when one does."""

    item: Term
    listed: bool
    ours: bool | None
    verdict: dict[str, bool | None]
    note: str = ""
    evidence: Instance | None = None

    @property
    def refuted(self) -> str | None:
        """The verdict the evidence refutes: the first that fails."""
        return next((k for k, v in self.verdict.items() if v is False), None)

    @property
    def status(self) -> str:
        """``ok``, ``unknown``, ``wrong``, ``missing`` or ``disputed`` (module docstring)."""
        holds = all(v is True for v in self.verdict.values())
        fails = any(v is False for v in self.verdict.values())
        if self.ours is None:
            if not self.listed:  # found missing by the certificate
                return "disputed" if fails else "missing"
            return "ok" if holds else "wrong" if fails else "unknown"
        if self.listed and self.ours:
            return "disputed" if fails else "ok"
        if self.listed:
            return "disputed" if holds else "wrong"
        return "disputed" if fails else "missing"


@dataclass
class FieldResult:
    """The grading of one field of one line. Set-valued fields carry ``items``; scalar fields
    (robustness, votes, decision, classes) carry E's ``value``, the native engine's ``ours``
    and the oracle's ``truth``; a contrastive entry has its ``target`` class. ``native`` is
    False for a field graded by the oracle alone, ``certified`` when the oracle's certificate
    then checked its completeness."""

    field: str
    target: int | None = None
    items: list[ItemResult] | None = None
    native: bool = True
    certified: bool = False
    value: Any = None
    ours: Any = None
    truth: Any = None
    scalar_status: str = "ok"
    note: str = ""
    #: E's line says the field is incomplete: its items are graded, its completeness not.
    partial: bool = False

    @property
    def status(self) -> str:
        if self.items is None:
            return self.scalar_status
        worst = {i.status for i in self.items} - {"ok"}
        return "ok" if not worst else next(s for s in STATUSES[::-1] if s in worst)

    @property
    def completeness(self) -> str | None:
        """How completeness was established (:data:`COMPLETENESS`); None for scalar fields."""
        if self.items is None:
            return None
        return "checked" if self.native else "certified" if self.certified else "not checked"

    @property
    def equal(self) -> bool | None:
        """Set equality with the native answer (None for scalar fields and fields graded by
        the oracle alone)."""
        if self.items is None or not self.native:
            return None
        return all(i.listed == i.ours for i in self.items)


@dataclass
class LineResult:
    """The grading of one line of E."""

    line: int
    instance: Instance
    positions: list[int]
    fields: list[FieldResult]
    ignored: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return all(f.status == "ok" for f in self.fields)


@dataclass
class VerifyReport:
    """Everything ``verify`` found: per line, per field, per item; missing instances."""

    forest: Forest
    source: str
    ties: str
    matched_by: str
    lines: list[LineResult] = field(default_factory=list)
    missing_instances: list[tuple[int, Instance]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Everything in E is correct, and complete where completeness was checked (exit 0)."""
        return not self.missing_instances and all(r.ok for r in self.lines)

    def completeness(self) -> dict[str, str]:
        """Per set-valued field graded, how its completeness was established on every line:
        ``not checked`` if on some line it was not, else ``certified`` if on some line the
        certificate checked it, else ``checked``."""
        seen: dict[str, set[str]] = {}
        for r in self.lines:
            for f in r.fields:
                if f.completeness is not None:
                    seen.setdefault(f.field, set()).add(f.completeness)
        return {name: next(c for c in COMPLETENESS[::-1] if c in seen[name])
                for name in VERDICTS if name in seen}

    def result(self) -> str:
        """The verdict in words; it calls complete only what completeness was checked for."""
        unchecked = [WHAT_OF[name] for name, c in self.completeness().items()
                     if c == "not checked"]
        if not self.ok:
            text = "some item is wrong or missing"
        else:
            text = "every item correct" if unchecked else "everything correct and complete"
        if unchecked:
            partial = {f.field for r in self.lines for f in r.fields if f.partial}
            said = [n for n in unchecked if WHAT_FIELDS[n] in partial]
            rest = [n for n in unchecked if n not in said]
            if rest:
                text += f"; completeness not checked for {', '.join(rest)} (--oracle-only)"
            if said:
                text += (f"; completeness not checked for {', '.join(said)} (the file says "
                         "they are incomplete)")
        return text

    def summary(self) -> dict[str, Any]:
        """Counts: item statuses, per field and verdict the listed items' verdicts, scalar
        field statuses, lines, instances without a line."""
        statuses: Counter[str] = Counter()
        verdicts: dict[str, dict[str, Counter[str]]] = {}
        scalars: dict[str, Counter[str]] = {}
        for r in self.lines:
            for f in r.fields:
                if f.items is None:  # a scalar field, or a contrastive entry for x's class
                    key = "contrastive targets" if f.field == "contrastive" else f.field
                    scalars.setdefault(key, Counter())[f.status] += 1
                    continue
                for item in f.items:
                    statuses[item.status] += 1
                    if not item.listed:
                        continue
                    per = verdicts.setdefault(f.field, {})
                    for key, v in item.verdict.items():
                        per.setdefault(key, Counter())[
                            {True: "holds", False: "fails", None: "unknown"}[v]] += 1
        return {
            "lines": len(self.lines),
            "instances_without_line": len(self.missing_instances),
            "items": {s: statuses[s] for s in STATUSES},
            "verdicts": {f: {k: dict(c) for k, c in per.items()} for f, per in verdicts.items()},
            "scalars": {f: dict(c) for f, c in scalars.items()},
        }

    def to_json(self) -> dict[str, Any]:
        """The machine form printed by ``verify --json`` (one object)."""
        forest = self.forest

        def item_json(i: ItemResult) -> dict[str, Any]:
            out = {"item": term_json(forest, i.item), "status": i.status, "listed": i.listed,
                   "ours": i.ours, "verdict": i.verdict, "note": i.note}
            if i.evidence is not None:
                out["evidence"] = {"world": instance_to_json(forest, i.evidence),
                                   "votes": dict(zip(forest.classes, forest.readable_votes(
                                       forest.votes(i.evidence)))),
                                   "refutes": i.refuted}
            return out

        def field_json(f: FieldResult) -> dict[str, Any]:
            out: dict[str, Any] = {"field": f.field, "status": f.status}
            if f.target is not None:
                out["target"] = forest.classes[f.target]
            if f.items is not None:
                out["equal"] = f.equal
                out["completeness"] = f.completeness
                out["items"] = [item_json(i) for i in f.items]
            else:
                out.update({k: _scalar_json(forest, f.field, v) for k, v in
                            (("value", f.value), ("ours", f.ours), ("truth", f.truth))})
            if f.note:
                out["note"] = f.note
            return out

        ignored = sorted({n for r in self.lines for n in r.ignored})
        return {
            "source": self.source, "ties": self.ties, "matched_by": self.matched_by,
            "ok": self.ok, "result": self.result(), "completeness": self.completeness(),
            "summary": self.summary(), "ignored_fields": ignored,
            "instances_without_line": [{"position": p, "instance": instance_to_json(forest, x)}
                                       for p, x in self.missing_instances],
            "lines": [{"line": r.line, "instance": instance_to_json(forest, r.instance),
                       "positions": r.positions, "ok": r.ok,
                       "fields": [field_json(f) for f in r.fields]} for r in self.lines],
        }

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        """Short: the result and the counts."""
        return f"<VerifyReport: {self.result()}; lines graded: {len(self.lines)}>"

    def text(self) -> str:
        """The readable report: per line, per field, per item, then the summary."""
        forest = self.forest
        how = "their 'instance' field" if self.matched_by == "instance" else "line order"
        out = [f"verify {self.source} (ties {self.ties}): {counted(len(self.lines), 'line')}, "
               f"matched to instances by {how}"]
        for r in self.lines:
            where = (", ".join(f"#{p}" for p in r.positions) if r.positions
                     else "not in the instances file")
            shown = ", ".join(f"{k}: {v}" for k, v in instance_to_json(forest, r.instance).items())
            out.append(f"line {r.line} — instance {where} {{{shown}}}")
            if r.ignored:
                out.append(f"  ignored fields: {', '.join(r.ignored)}")
            for f in r.fields:
                out.extend(self._field_text(f))
        if self.missing_instances:
            out.append("instances without a line: " + "; ".join(
                f"#{p} {json.dumps(instance_to_json(forest, x), ensure_ascii=False)}"
                for p, x in self.missing_instances))
        s = self.summary()
        items = ", ".join(f"{n} {k}" for k, n in s["items"].items())
        out.append(f"summary: items {items}; instances without a line "
                   f"{s['instances_without_line']}")
        for name, per in s["verdicts"].items():
            counts = "; ".join(f"{k}: " + ", ".join(f"{n} {w}" for w, n in sorted(c.items()))
                               for k, c in per.items())
            out.append(f"  {name}: {counts}")
        for name, c in s["scalars"].items():
            out.append(f"  {name}: " + ", ".join(f"{n} {k}" for k, n in sorted(c.items())))
        out.append("result: " + self.result())
        return "\n".join(out)

    def _field_text(self, f: FieldResult) -> list[str]:
        forest = self.forest
        label = f.field + (f" → {forest.classes[f.target]}" if f.target is not None else "")
        if f.items is None:
            head = f"  {label}: {_scalar_text(forest, f.field, f.value)} — {f.status}"
            return [head + (f": {f.note}" if f.note else "")]
        listed = sum(i.listed for i in f.items)
        ours = sum(bool(i.ours) for i in f.items)
        compared = {True: f"{ours} ours, equal", False: f"{ours} ours, differs",
                    None: "completeness certified by the oracle" if f.certified
                    else "completeness not checked (oracle only)"}[f.equal]
        lines = [f"  {label}: {listed} listed, {compared}" + (f" — {f.note}" if f.note else "")]
        joiner = " ∧ " if f.field in TERM_FIELDS else " ∨ "
        for i in f.items:
            note = f" ({i.note})" if i.note else ""
            lines.append(f"    {i.status:<9}{term_text(forest, i.item, joiner)}  "
                         f"[{_verdict_text(i.verdict)}]{note}")
            if i.evidence is not None:
                world = ", ".join(f"{k}: {v}" for k, v in
                                  instance_to_json(forest, i.evidence).items())
                votes = forest.readable_votes(forest.votes(i.evidence))
                lines.append(f"      evidence against {i.refuted}: {{{world}}} → votes "
                             f"{_scalar_text(forest, 'votes', votes)}")
        return lines


def _scalar_json(forest: Forest, name: str, value: Any) -> Any:
    """A scalar field's value in the explanation's JSON form (class names; clauses as
    literals)."""
    if value is None:
        return None
    if name == "decision":
        return forest.classes[value]
    if name == "classes":
        return [forest.classes[c] for c in value]
    if name == "votes":
        return {c: v for c, v in zip(forest.classes, value) if v is not None}
    if name == "contrastive":  # an entry for a class the instance is in
        return [term_json(forest, c) for c in value]
    return value


def _scalar_text(forest: Forest, name: str, value: Any) -> str:
    if name == "decision":
        return forest.classes[value]
    if name == "classes":
        return "[" + ", ".join(forest.classes[c] for c in value) + "]"
    if name == "votes":
        return ", ".join(f"{c} {'?' if v is None else v}" for c, v in zip(forest.classes, value))
    if name == "contrastive":
        return f"{len(value)} listed"
    return json.dumps(value)


# ---------------------------------------------------------------------------------------------
# Grading.


def gnr_cost(forest: Forest, x: Sequence[int], clause: Term) -> int:
    """Upper bound of the work of :meth:`SatOracle.check_gnr`: the falsifying assignments its
    validity loop may propose (the product, over literals holding x's state, of the states
    outside the literal, plus one for the narrowings) times the one clause and its one-state
    narrowings checked for primality."""
    assignments = math.prod(forest.features[f].n_states - m.bit_count() + 1
                            for f, m in clause if m >> x[f] & 1)
    narrowings = sum(m.bit_count() for _, m in clause)
    return assignments * (1 + narrowings)


class Verifier:
    """Grades lines of E for one forest and tie policy (the native engine and the SAT oracle
    are built once). ``gnr_limit`` bounds the GNR / shortest-flip validity checks; fields in
    ``oracle_only`` are graded without the native answer; ``max_nodes`` bounds the native
    engine's decision graphs (:class:`rfcircuits.errors.BudgetExceeded` beyond it)."""

    def __init__(self, forest: Forest, ties: str = "first", gnr_limit: int = GNR_LIMIT,
                 oracle_only: Iterable[str] = (), max_nodes: int | None = None) -> None:
        self.forest = forest
        self.ties = check_ties(ties)
        self.gnr_limit = gnr_limit
        self.oracle_only = frozenset(oracle_only)
        self.explainer = Explainer(forest, ties, max_nodes=max_nodes)
        self.sat = SatOracle(forest, ties)

    def close(self) -> None:
        self.sat.close()

    def __enter__(self) -> Verifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def judge(self, name: str, x: Instance, item: Term,
              target: int | None = None) -> tuple[dict[str, bool | None], str]:
        """The oracle's verdict on one item of field ``name`` (and why a verdict fails when the
        item is not made of instance literals, or why it is unknown)."""
        sat = self.sat
        foreign = [lit for lit in item if lit[1] != 1 << x[lit[0]]]
        note = ""
        if foreign and name in ("sufficient_reasons", "necessary_reasons", "contrastive"):
            note = (f"{literal_text(self.forest, foreign[0])} is not the instance's state "
                    "(the field holds only instance literals)")
        if name == "sufficient_reasons":
            # check_sr decides implication for any term; an SR must also use x's states only.
            if foreign:
                return {"sufficient": False, "minimal": False}, note + self._gsr_hint(x, item)
            return dict(sat.check_sr(x, item)), note
        if name == "necessary_reasons":
            return dict(sat.check_nr(x, item)), note
        if name == "contrastive":
            assert target is not None
            return dict(sat.check_ce(x, target, item)), note
        if name == "general_sufficient_reasons":
            return dict(sat.check_gsr(x, item)), note
        robustness = sat.robustness(x) if name == "shortest_flips" else None
        cost = gnr_cost(self.forest, x, item)
        if cost > self.gnr_limit and not sat.gnr_tabled(x, [f for f, _ in item]):
            note = (f"validity unknown: the check would enumerate up to {cost} assignments "
                    f"(limit {self.gnr_limit})")
            if name == "shortest_flips":
                return {"valid": None,
                        "shortest": robustness is not None and len(item) == robustness}, note
            return {"valid": None, "prime": None, "variable_minimal": None}, note
        if name == "shortest_flips":
            return dict(sat.check_flip(x, item, robustness)), note
        return dict(sat.check_gnr(x, item)), note

    def _gsr_hint(self, x: Instance, term: Term) -> str:
        """For a term listed as a sufficient reason whose literals hold more than the
        instance's states: where it belongs when it is a general sufficient reason, or a
        valid general term ('' when a literal misses the instance's state or it is not valid;
        then it is no explanation of x at all)."""
        if not all(mask >> x[f] & 1 for f, mask in term):
            return ""
        verdict = self.sat.check_gsr(x, term)
        if all(verdict.values()):
            return ("; it is one of the instance's general sufficient reasons: list it under "
                    "general_sufficient_reasons")
        if verdict["valid"]:
            return ("; it implies the decision as a general term (not one of the instance's "
                    "general sufficient reasons: it is not prime or not minimal over features); "
                    "general_sufficient_reasons grades such terms")
        return ""

    def _items(self, name: str, x: Instance, listed: Iterable[Term],
               ours: Iterable[Term] | None, target: int | None = None) -> list[ItemResult]:
        """Listed and native items (``ours`` None: the listed ones only), judged."""
        listed_set = set(listed)
        ours_set = None if ours is None else set(ours)
        items = Explanation.sets(listed_set | (ours_set or set()))
        # GSRs are checked together (a large forest's instance can have tens of thousands).
        known = dict(zip(items, self.sat.check_gsrs(x, items))) \
            if name == "general_sufficient_reasons" else {}
        return [self._item(name, x, item, item in listed_set,
                           None if ours_set is None else item in ours_set, target,
                           verdict=known.get(item))
                for item in items]

    def _item(self, name: str, x: Instance, item: Term, listed: bool, ours: bool | None,
              target: int | None = None, note: str = "",
              verdict: dict[str, bool] | None = None) -> ItemResult:
        """One item judged (``verdict``: already known), with a refuting world when a verdict
        fails (for shortest flips, only GNR validity is refuted by a world: ``shortest`` is a
        count)."""
        verdict, why = self.judge(name, x, item, target) if verdict is None else (verdict, "")
        result = ItemResult(item, listed, ours, verdict, why or note)
        if result.refuted is not None and (name != "shortest_flips" or not verdict["valid"]):
            result.evidence = self.sat.counterexample(x, COUNTEREXAMPLE_KIND[name], item, target)
        return result

    def _certify(self, x: Instance, srs: FieldResult, nrs: FieldResult) -> None:
        """Completeness of a line's SRs and NRs graded by the oracle alone: the listed items
        every verdict holds for go to :meth:`SatOracle.certify_reasons`; each item it finds
        missing is added (status ``missing``) and the families certified again, up to
        :data:`MISSING_LIMIT` items per field."""
        fields = {"sr": srs, "nr": nrs}
        assert srs.items is not None and nrs.items is not None
        found = {k: {i.item for i in f.items if i.status == "ok"}  # type: ignore[union-attr]
                 for k, f in fields.items()}
        while True:
            certificate = self.sat.certify_reasons(x, Explanation.sets(found["sr"]),
                                                   Explanation.sets(found["nr"]))
            if certificate.missing is None:
                break
            kind, item = certificate.missing
            family = fields[kind]
            assert family.items is not None
            if sum(not i.listed for i in family.items) == MISSING_LIMIT:
                family.note = (f"more items may be missing: the certificate stopped after "
                               f"{MISSING_LIMIT}")
                break
            found[kind].add(item)
            family.items.append(self._item(family.field, x, item, False, None,
                                           note="found missing by the oracle's certificate"))
        if not certificate.holds and certificate.missing is None:
            return  # a listed item the oracle's checks passed failed the certificate: no claim
        for f in fields.values():
            f.certified = True
            _canonical_order(f)

    def grade(self, claim: Claim, positions: list[int]) -> LineResult:
        """Grade every field a line of E holds."""
        x, given = claim.instance, claim.fields
        native = [n for n in given if n in WHAT_OF and n not in self.oracle_only
                  and n not in claim.partial]
        ours = self.explainer.explain_states(x, tuple(WHAT_OF[n] for n in native))
        # what the native engine did not answer completely is graded by the oracle alone
        native = [n for n in native if WHAT_OF[n] in ours.what
                  and WHAT_OF[n] not in ours.incomplete]
        results: list[FieldResult] = []
        truth_header = {"votes": tuple(self.forest.readable_votes(ours.votes)),
                        "decision": ours.decision,
                        "classes": tuple(sorted(ours.classes))}
        for name in HEADER_FIELDS:
            if name in given:
                truth = truth_header[name]
                status = "ok" if given[name] == truth else "wrong"
                results.append(FieldResult(name, value=given[name], ours=truth, truth=truth,
                                           scalar_status=status))
        for name in (WHAT_FIELDS[k] for k in ALL_WHAT):
            if name not in given:
                continue
            if name == "robustness":
                results.append(self._robustness(
                    x, given[name], ours.robustness if name in native else None, name in native,
                    name in claim.partial))
            elif name == "contrastive":
                results.extend(self._contrastive(x, given[name], ours, name in native,
                                                 name not in claim.partial))
            else:
                results.append(FieldResult(name, items=self._items(
                    name, x, given[name], getattr(ours, name) if name in native else None),
                    native=name in native, partial=name in claim.partial))
        graded = {f.field: f for f in results}
        pair = ("sufficient_reasons", "necessary_reasons")
        if all(n in graded and n not in native and n not in claim.partial for n in pair):
            self._certify(x, *(graded[n] for n in pair))
        return LineResult(claim.line, x, positions, results, claim.ignored)

    def _robustness(self, x: Instance, value: int | None, ours: int | None,
                    native: bool, bound: bool = False) -> FieldResult:
        """E's robustness against the oracle's; with ``bound`` (E says it is incomplete: the
        smallest NR it found) it may be higher, or null when it found none."""
        truth = self.sat.robustness(x)
        status, note = "ok", ""
        if bound and (value is None or truth is not None and value >= truth):
            pass
        elif value != truth:
            status = "wrong"
            if truth is None:
                note = "no flip exists (Δ is valid): the robustness is null"
            elif value is None:
                note = f"a flip exists: the true robustness is {truth}"
            else:
                note = f"too {'high' if value > truth else 'low'}: the true robustness is {truth}"
        if native and ours != truth:
            status = "disputed" if status == "ok" else status
            note = (note + "; " if note else "") + \
                f"the native engine says {json.dumps(ours)}, the oracle {json.dumps(truth)}"
        return FieldResult("robustness", value=value, ours=ours, truth=truth,
                           scalar_status=status, note=note, partial=bound)

    def _contrastive(self, x: Instance, given: dict[int, tuple[Term, ...]],
                     ours: Explanation, native: bool, certify: bool = True
                     ) -> list[FieldResult]:
        """One result per target: E's and, when ``native``, the native engine's; graded by
        the oracle alone, the certificate adds missing items unless ``certify`` is False
        (E says the field is incomplete)."""
        out = []
        expected: dict[int, tuple[Term, ...] | None] = dict(ours.contrastive) if native else {
            t: None for t in range(len(self.forest.classes)) if t not in ours.classes}
        for t in sorted(set(given) | (set(expected) if native else set())):
            if t not in expected:
                out.append(FieldResult(
                    "contrastive", target=t, value=given[t], scalar_status="wrong",
                    note=f"the instance is in class {self.forest.classes[t]}: contrastive "
                         "explanations are listed only for classes it is not in"))
                continue
            # Oracle alone: the certificate first, whose blockers then decide the items'
            # minimality without SAT calls of their own.
            missing = None if native or not certify else \
                self._missing_ces(x, t, given.get(t, ()))
            result = FieldResult("contrastive", target=t, items=self._items(
                "contrastive", x, given.get(t, ()), expected[t], t), native=native,
                partial=not certify)
            if missing is not None:
                self._add_missing(result, x, t, *missing)
            out.append(result)
        return out

    def _missing_ces(self, x: Instance, t: int, listed: Iterable[Term]
                     ) -> tuple[list[Term], bool]:
        """The CEs for ``t`` missing from the listed items that reach ``R^t``, found by
        :meth:`SatOracle.missing_contrastive` one at a time (each added and the rest certified
        again), up to :data:`MISSING_LIMIT`; and whether the search ended (certified)."""
        found = {c for c in listed if self.sat.reaches(x, t, c)}
        missing: list[Term] = []
        while (item := self.sat.missing_contrastive(x, t, Explanation.sets(found))) is not None:
            if len(missing) == MISSING_LIMIT:
                return missing, False
            found.add(item)
            missing.append(item)
        return missing, True

    def _add_missing(self, ces: FieldResult, x: Instance, t: int, missing: list[Term],
                     certified: bool) -> None:
        """One target's CEs graded by the oracle alone: the missing ones added (status
        ``missing``), in order, and certified unless the search stopped at its limit."""
        assert ces.items is not None
        ces.items.extend(self._item("contrastive", x, item, False, None, t,
                                    note="found missing by the oracle's certificate")
                         for item in missing)
        ces.certified = certified
        if not certified:
            ces.note = f"more items may be missing: the certificate stopped after {MISSING_LIMIT}"
        _canonical_order(ces)


def _canonical_order(result: FieldResult) -> None:
    """Sort a field's items as answers list them (:meth:`Explanation.sets`), the ones a
    certificate found missing among the listed ones."""
    assert result.items is not None
    order = {item: k for k, item in enumerate(Explanation.sets(i.item for i in result.items))}
    result.items.sort(key=lambda i: order[i.item])


def field_names(names: Iterable[str]) -> frozenset[str]:
    """Explanation field names, each given as ``explain --what`` names it (``sr``) or as
    explanations spell it (``sufficient_reasons``); InputError naming any other."""
    out = set()
    for name in names:
        if name not in WHAT_OF and name not in WHAT_FIELDS:
            raise InputError(f"--oracle-only: {name!r} is not an explanation field (expected "
                             f"all or a comma list of {','.join(WHAT_FIELDS)} or of "
                             f"{','.join(WHAT_OF)})")
        out.add(WHAT_FIELDS.get(name, name))
    return frozenset(out)


def parse_fields(text: str) -> frozenset[str]:
    """``--oracle-only``'s value: ``all`` or a comma list for :func:`field_names`."""
    if text.strip() == "all":
        return frozenset(WHAT_OF)
    return field_names(n.strip() for n in text.split(",") if n.strip())


def verify(forest: Forest, instances: Sequence[Instance], rows: Sequence[tuple[int, Any]],
           ties: str = "first", source: str = "explanations", gnr_limit: int = GNR_LIMIT,
           oracle_only: Iterable[str] = (), max_nodes: int | None = None,
           progress: Callable[[int, int], None] | None = None) -> VerifyReport:
    """Grade the lines ``rows`` (``(line number, parsed JSON)``) of an explanations file
    against the forest and its instances (module docstring); fields in ``oracle_only`` are
    graded by the SAT oracle alone (named in either vocabulary, :func:`field_names`), and SRs
    and NRs both so graded are certified complete; ``max_nodes`` bounds the native engine's graphs;
    ``progress(done, total)`` is called per line graded."""
    check_ties(ties)
    oracle_only = field_names(oracle_only)
    claims, by = parse_claims(forest, instances, rows, source, ties)
    where: dict[Instance, list[int]] = {}
    for p, x in enumerate(instances, start=1):
        where.setdefault(tuple(x), []).append(p)
    report = VerifyReport(forest, source, ties, by)
    with Verifier(forest, ties, gnr_limit, oracle_only, max_nodes) as verifier:
        if progress:  # the count, while the first line compiles the class formulas
            progress(0, len(claims))
        for k, claim in enumerate(claims):
            positions = where.get(claim.instance, []) if by == "instance" else [k + 1]
            report.lines.append(verifier.grade(claim, positions))
            if progress:
                progress(k + 1, len(claims))
    answered = {p for r in report.lines for p in r.positions}
    report.missing_instances = [(p, tuple(x)) for p, x in enumerate(instances, start=1)
                                if p not in answered]
    return report
