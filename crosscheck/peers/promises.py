"""Verdicts against a peer's own promises: what ``verify-peer``, ``fuzz --adapter`` and the
pytest plugin report about another explainer.

A peer's answers (:class:`~rfcircuits.crosscheck.peers.adapters.base.Answer`) are graded item by
item by ``verify`` (:class:`~rfcircuits.crosscheck.verify.Verifier`: the SAT oracle, and the
native engine's complete answer for fields the peer promises to answer completely — except
SRs and NRs promised together, whose completeness the oracle's certificate proves without
it), and every verdict is then
sorted by what the peer declared (:class:`~rfcircuits.crosscheck.peers.adapters.base.Promise`):

- **broken promises**: a guarantee of the peer fails — validity (``sufficient``, ``valid``,
  ``necessary``, ``reaches``) for a ``formal`` guarantee, and the minimality it declares
  (``conditions``: no threshold condition can be dropped; ``features``; ``prime``), a wrong
  ``decision``, ``votes`` or ``robustness``. Each comes with its evidence — a world where the
  item holds and the decision differs, or the smaller item that still does — and is
  *confirmed* independently of the SAT oracle by evaluating the trees on every world of the
  evidence (:func:`confirm`; up to :data:`CONFIRM_WORLDS` worlds; beyond that by a SAT oracle
  counting votes with another cardinality encoding, :data:`SECOND_ENCODING`; a verdict with no
  such check says what would confirm it);
- **findings that rest only on states no float32 input reaches** (``unreachable``): a broken
  promise or a missing item that holds only because the peer reads inputs as float64 and cuts
  at thresholds that no float32 value separates, which scikit-learn's trees never see
  (:mod:`rfcircuits.crosscheck.peers.unreachable`, for forests imported from the task's model): its
  reason and the world that shows it, counted apart, not broken promises;
- **differences of definition shown by a world** (``definition``): a broken promise or a
  missing item that holds for the peer's own model of the forest — RFxpl's weighted-vote
  mode sums leaf probabilities rounded to three decimals and asks for a strict win — when
  the adapter declares that model (:mod:`rfcircuits.crosscheck.peers.modelling`): a world where
  the exact sums and the peer's sums decide apart, confirmed by both forests' trees, counted
  apart, not broken promises;
- **differences of definition**: verdicts of our definitions the peer never promised, counted
  per kind (:data:`DIFFERENCES`), each item once per kind, never called wrong;
- **claims that fail**: validity of a ``heuristic`` peer's items (Anchors' rules), counted: how
  many of its claims are formally true is the figure, not a bug;
- **completeness**, only for fields the peer promises to answer completely: items of our
  answer it lacks;
- **peer failures**: its crashes, errors, timeouts and unreadable output, listed and counted;
- **disputes**: our engine and the SAT oracle disagree about an item (a bug of ours).

A peer that decides ties ``strict`` (its reasons make its class beat every other strictly,
its prediction breaks ties to the first class) is graded under ``first``, where its validity
means what it promises (strictly beating implies winning); a minimality it promises that
fails under ``first`` but holds under ``strict`` is a difference of definition (``ties``).

:attr:`PeerReport.ok` (exit 0) holds when no promise is broken, nothing promised complete is
missing and we dispute nothing. Every finding names its row by its place in the data
(``data_row``, ``where``; the task's :class:`~rfcircuits.crosscheck.peers.adapters.base.RowOrigin`)
with the raw values the peer was given.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any

from rfcircuits.errors import InputError
from rfcircuits.forest import (Forest, Instance, classes_from_votes, instance_to_json,
                               mask_states)
from rfcircuits.terms import Term, term_json, term_text
from rfcircuits.crosscheck.peers.adapters.base import Answer, Promise, RowOrigin, Task
from rfcircuits.crosscheck.peers.minimality import condition_minimal
from rfcircuits.crosscheck.peers.modelling import ModelView, ModelWitness, PeerModel
from rfcircuits.crosscheck.oracles.sat import SatOracle
from rfcircuits.crosscheck.peers.unreachable import INSTANCE_FIELDS, Float64View, Witness
from rfcircuits.crosscheck.verify import (HEADER_FIELDS, TERM_FIELDS, ItemResult, Verifier,
                                          WHAT_OF, _scalar_json, counted, parse_claim)

#: The verdict that is each field's validity.
VALIDITY = {"sufficient_reasons": "sufficient", "general_sufficient_reasons": "valid",
            "necessary_reasons": "necessary", "general_necessary_reasons": "valid",
            "contrastive": "reaches", "shortest_flips": "valid"}
#: Per field and declared minimality, the verdicts it promises (``conditions`` is this
#: module's own verdict on terms, :func:`~rfcircuits.crosscheck.peers.minimality.condition_minimal`;
#: on clauses it is read as
#: ``features``).
MINIMAL_VERDICTS = {
    "none": {},
    "conditions": {"sufficient_reasons": "conditions", "general_sufficient_reasons": "conditions",
                   "necessary_reasons": "minimal", "general_necessary_reasons": "variable_minimal",
                   "contrastive": "minimal", "shortest_flips": "shortest"},
    "features": {"sufficient_reasons": "minimal", "general_sufficient_reasons": "variable_minimal",
                 "necessary_reasons": "minimal", "general_necessary_reasons": "variable_minimal",
                 "contrastive": "minimal", "shortest_flips": "shortest"},
    "prime": {"general_sufficient_reasons": "prime", "general_necessary_reasons": "prime",
              "sufficient_reasons": "minimal", "necessary_reasons": "minimal",
              "contrastive": "minimal", "shortest_flips": "shortest"},
}
#: Differences of definition, by the verdict that fails and is not promised.
DIFFERENCES = {
    "conditions": "a threshold condition can be dropped",
    "relax": "not prime: a threshold can be relaxed",
    "non-interval": "not prime: only a widening that is no interval",
    "prime": "not prime",
    "minimal": "not minimal over features",
    "variable_minimal": "not minimal over features",
    "shortest": "not a shortest flip",
    "ties": "minimal only under strict-majority ties",
}
#: The promise of a ``definition`` finding on a row the peer did not answer because its model
#: of the forest gives the instance no class it explains.
UNANSWERED = "an answer"
#: Most worlds :func:`confirm` enumerates to confirm a broken promise.
CONFIRM_WORLDS = 1 << 20
#: The cardinality encoding of the SAT oracle that confirms a smaller valid item beyond
#: :data:`CONFIRM_WORLDS` (the grading oracle counts votes with totalizers).
SECOND_ENCODING = "sortnetwrk"


# ---------------------------------------------------------------------------------------------
# Confirmation by enumeration.


def _drops(term: Term) -> Iterable[Term]:
    """The term without each of its literals in turn."""
    for k in range(len(term)):
        yield term[:k] + term[k + 1:]


def _worlds(forest: Forest, term: Term, base: Instance | None = None) -> Iterable[Instance]:
    """Every world satisfying ``term`` (features it omits range over all their states, or stay
    at ``base``'s state when ``base`` is given)."""
    masks = {f: m for f, m in term}
    choices = [[s for s in range(ft.n_states) if masks[f] >> s & 1] if f in masks
               else [base[f]] if base is not None else list(range(ft.n_states))
               for f, ft in enumerate(forest.features)]
    return product(*choices)


def _count(forest: Forest, term: Term, base: Instance | None = None) -> int:
    masks = {f: m for f, m in term}
    return math.prod(masks[f].bit_count() if f in masks else 1 if base is not None
                     else ft.n_states for f, ft in enumerate(forest.features))


def _wins(forest: Forest, ties: str, w: Instance, c: int) -> bool:
    """Whether world ``w`` is in class ``c`` under the library's tie policy ``ties`` (the one
    peers are graded under)."""
    return c in classes_from_votes(forest.votes(w), ties)


def confirm(forest: Forest, ties: str, x: Instance, kind: str, term: Term,
            decided: int) -> bool | None:
    """Confirm by evaluating the trees alone (no SAT) that ``term`` implies the class
    ``decided`` (``kind`` ``implies``) or that it does not (``escapes``): True when the worlds
    bear it out, False when they contradict it, None when there are more than
    :data:`CONFIRM_WORLDS` of them."""
    if _count(forest, term) > CONFIRM_WORLDS:
        return None
    holds = all(_wins(forest, ties, w, decided) for w in _worlds(forest, term))
    return holds if kind == "implies" else not holds


# ---------------------------------------------------------------------------------------------
# The report.


@dataclass
class Finding:
    """One item of a peer's answer whose verdicts we report: a broken promise, a missing
    item, a dispute, or one of these that rests only on states no float32 input reaches
    (``unreachable``, with the ``witness`` world of :mod:`rfcircuits.crosscheck.peers.unreachable`)
    or on the peer's model of the forest (``definition``, with the ``model_witness`` world of
    :mod:`rfcircuits.crosscheck.peers.modelling`).
    ``row`` is the row's position among the rows explained (from 1), ``data_row`` its index
    among the data's rows (from 0; None for a world that is no data row), ``where`` how to
    find it and ``values`` the raw values the peer was given. ``evidence`` is a world (the item
    holds, the decision differs) or a smaller item that is still valid; ``confirmed`` says
    whether an independent check bore it out (``confirmed_by``; None: none could,
    ``unconfirmed`` then says what would)."""

    kind: str
    row: int
    instance: Instance
    field: str
    item: Any
    promise: str
    target: int | None = None
    evidence_world: Instance | None = None
    evidence_item: Term | None = None
    confirmed: bool | None = None
    note: str = ""
    confirmed_by: str = "evaluating the trees"
    data_row: int | None = None
    where: str = ""
    values: dict[str, float] | None = None
    witness: Witness | None = None
    unconfirmed: str = ""
    model_witness: ModelWitness | None = None
    peer_ties: str = "first"

    def to_json(self, forest: Forest) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "row": self.row, "data_row": self.data_row,
                               "where": self.where, "values": self.values,
                               "instance": instance_to_json(forest, self.instance),
                               "field": self.field, "promise": self.promise,
                               "item": term_json(forest, self.item)
                               if isinstance(self.item, tuple) else self.item}
        if self.target is not None:
            out["target"] = forest.classes[self.target]
        if self.evidence_world is not None:
            out["evidence"] = {"world": instance_to_json(forest, self.evidence_world),
                               "votes": dict(zip(forest.classes, forest.readable_votes(
                                   forest.votes(self.evidence_world))))}
        if self.evidence_item is not None:
            out["evidence"] = {"smaller_item": term_json(forest, self.evidence_item)}
        out["confirmed"] = self.confirmed
        if self.confirmed is not None:
            out["confirmed_by"] = self.confirmed_by
        elif self.unconfirmed:
            out["to_confirm"] = self.unconfirmed
        if self.witness is not None:
            out["reason"] = self.witness.reason()
            out["float64"] = self.witness.to_json()
        if self.model_witness is not None:
            out["reason"] = self.model_witness.reason
            out["peer_model"] = self.model_witness.to_json(forest)
        if self.note:
            out["note"] = self.note
        return out

    def place(self) -> str:
        """The row in words: its data row and where it is, then its position."""
        if self.data_row is None:
            return f"row {self.row}" + (f" ({self.where})" if self.where else "")
        return f"data row {self.data_row} ({self.where}; row {self.row} explained)" \
            if self.where else f"data row {self.data_row} (row {self.row} explained)"

    def text(self, forest: Forest) -> str:
        item = term_text(forest, self.item, " ∧ " if self.field in TERM_FIELDS else " ∨ ") \
            if isinstance(self.item, tuple) else json.dumps(self.item)
        target = f" (target {forest.classes[self.target]})" if self.target is not None else ""
        fails = {"unreachable": "fails on float32 inputs, holds only through states no "
                                "float32 input reaches",
                 "definition": "fails for the exact sums, holds for the peer's model of the "
                               "forest"}.get(self.kind, "fails")
        lines = [f"  {self.place()}: {self.field}{target} {item} — {self.promise} {fails}"
                 + (f" ({self.note})" if self.note else "")]
        if self.promise == UNANSWERED:
            lines = [f"  {self.place()}: no answer, as the peer's model of the forest gives the "
                     "instance no class it explains"]  # the note's sums: in the witness below
        if self.values is not None:
            lines.append("    values: " + ", ".join(f"{k} {v!r}" for k, v in
                                                    self.values.items()))
        if self.evidence_world is not None:
            world = ", ".join(f"{k}: {v}" for k, v in
                              instance_to_json(forest, self.evidence_world).items())
            votes = ", ".join(f"{c} {v!r}" for c, v in zip(forest.classes, forest.readable_votes(
                forest.votes(self.evidence_world))))
            what = "sums" if forest.voting == "soft" else "votes"
            lines.append(f"    world {{{world}}} → {what} {votes}")
        if self.evidence_item is not None:
            lines.append("    still valid with less: "
                         + term_text(forest, self.evidence_item, " ∧ "))
        if self.kind in ("broken", "unreachable", "definition") \
                and self.promise != "completeness" and (
                self.confirmed is not None or isinstance(self.item, tuple)):
            lines.append(f"    confirmed by {self.confirmed_by}" if self.confirmed
                         else "    not confirmed: " + (self.unconfirmed or (
                             "the independent check contradicts the oracle"
                             if self.confirmed is False else "no independent check")))
        if self.witness is not None:
            lines.append(self.witness.text())
        if self.model_witness is not None:
            lines.append(f"    the peer's model: {self.model_witness.reason}")
            lines.append(self.model_witness.text(forest, self.peer_ties))
        return "\n".join(lines)


@dataclass
class FieldTally:
    """Counts for one field of a peer's answers."""

    promise: Promise
    items: int = 0
    holds: int = 0
    broken: int = 0
    claims_failing: int = 0
    unknown: int = 0
    missing: int = 0
    unreachable: int = 0
    definition: int = 0
    differences: Counter[str] = field(default_factory=Counter)
    completeness: str = "not promised"

    def to_json(self) -> dict[str, Any]:
        return {"promise": {"guarantee": self.promise.guarantee,
                            "minimal": self.promise.minimal, "answers": self.promise.answers},
                "items": self.items, "holds": self.holds, "broken": self.broken,
                "claims_failing": self.claims_failing, "unknown": self.unknown,
                "missing": self.missing, "unreachable": self.unreachable,
                "definition": self.definition, "differences": dict(self.differences), "completeness": self.completeness}


#: The kinds of findings counted apart, which do not fail a report, with what they rest on.
APART = {"unreachable": "only on states no float32 input reaches (not broken promises: the "
                        "peer's answer holds when inputs are read as float64, as it reads them, "
                        "and scikit-learn reads them as float32)",
         "definition": "on the peer's model of the forest (differences of definition shown by "
                       "a world, not broken promises: the peer's answer holds for its model, "
                       "not for the exact sums)"}
#: The kinds of findings that fail a report, with their names (one, many).
FAILING = {"broken": ("broken promise", "broken promises"),
           "missing": ("item missing", "items missing"),
           "disputed": ("dispute (our bug)", "disputes (our bug)")}


@dataclass
class PeerReport:
    """What grading a peer found (module docstring)."""

    forest: Forest
    peer: str
    version: str
    ties: str
    promises: Mapping[str, Promise]
    rows: int = 0
    answers: Counter[str] = field(default_factory=Counter)
    fields: dict[str, FieldTally] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    peer_seconds: list[float] = field(default_factory=list)
    our_seconds: list[float] = field(default_factory=list)

    @property
    def broken(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "broken"]

    @property
    def ok(self) -> bool:
        """No broken promise, nothing promised complete missing, no dispute (exit 0); findings
        that rest only on unreachable states do not count."""
        return not any(f.kind in FAILING for f in self.findings)

    def tally(self, name: str) -> FieldTally:
        if name not in self.fields:
            promise = self.promises.get(name, Promise())
            self.fields[name] = FieldTally(promise, completeness="not promised"
                                           if promise.answers == "one" else "not checked")
        return self.fields[name]

    def notes(self) -> list[str]:
        """What the result must say so that it is not misread: how many claims of a heuristic
        field hold formally (a figure, not broken promises), and how many findings rest only
        on states no float32 input reaches."""
        out = []
        for name, t in self.fields.items():
            if t.promise.guarantee == "heuristic" and t.items:
                k = t.claims_failing
                out.append(f"{self.peer} promises nothing formal ({name}): " + (
                    f"{k} of its {counted(t.items, 'claim')} {'is' if k == 1 else 'are'} not "
                    "formally true (not broken promises)" if k else
                    f"its {counted(t.items, 'claim')} {'holds' if t.items == 1 else 'all hold'}"
                    " formally"))
        for kind, why in APART.items():
            n = sum(f.kind == kind for f in self.findings)
            if n:
                out.append(f"{counted(n, 'finding')} {'rests' if n == 1 else 'rest'} {why}")
        return out

    def result(self) -> str:
        kinds = Counter(f.kind for f in self.findings)
        parts = [counted(kinds[k], *names) for k, names in FAILING.items() if kinds[k]]
        text = "; ".join(parts) if parts else "every promise kept"
        notes = self.notes()
        if notes:
            text += " — " + "; ".join(notes)
        failures = sum(self.answers[s] for s in ("error", "timeout"))
        if failures:
            text += f"; the peer failed on {failures} of {counted(self.rows, 'row')}"
        for state in ("not promised", "not checked"):
            names = [n for n, t in self.fields.items() if t.completeness == state]
            if names and not parts:
                text += f" (completeness {state}" + (", not checked" if state == "not promised"
                                                     else "") + f": {', '.join(names)})"
        return text

    def to_json(self) -> dict[str, Any]:
        return {"peer": self.peer, "version": self.version, "ties": self.ties,
                "rows": self.rows, "answers": dict(self.answers), "ok": self.ok,
                "result": self.result(),
                "fields": {n: t.to_json() for n, t in self.fields.items()},
                "findings": [f.to_json(self.forest) for f in self.findings],
                "items": self.items, "failures": self.failures,
                "seconds": {"peer_median": _median(self.peer_seconds),
                            "ours_median": _median(self.our_seconds),
                            "peer_total": round(sum(self.peer_seconds), 3),
                            "ours_total": round(sum(self.our_seconds), 3)}}

    def text(self) -> str:
        out = [f"{self.peer} {self.version}: {counted(self.rows, 'row')}; answers "
               + ", ".join(f"{k} {v}" for k, v in sorted(self.answers.items()))
               + f"; ties {self.ties}"]
        for name, t in self.fields.items():
            p = t.promise
            minimal = {"none": "no minimality", "prime": "prime"}.get(
                p.minimal, f"minimal over {p.minimal}")
            lacked = sum(f.kind == "unreachable" and f.field == name
                         and f.promise == "completeness" for f in self.findings)
            listed = t.unreachable - lacked
            apart = sum(f.kind == "definition" and f.field == name
                        and f.promise == "completeness" for f in self.findings)
            out.append(f"{name} (promises: {p.guarantee}, {minimal}, "
                       f"{p.answers} answer{'s' if p.answers == 'all' else ''}): "
                       f"{counted(t.items, 'item')}, {t.holds} "
                       f"keep{'s' if t.holds == 1 else ''} every promise"
                       + (f", {t.broken} break{'s' if t.broken == 1 else ''} one"
                          if t.broken else "")
                       + (f", {listed} fail{'s' if listed == 1 else ''} only on unreachable "
                          "states" if listed else "")
                       + (f", {t.definition - apart} fail{'s' if t.definition - apart == 1 else ''}"
                          " only for the exact sums" if t.definition - apart else "")
                       + (f", {counted(t.claims_failing, 'claim')} not formally true"
                          if t.claims_failing else "")
                       + (f", {t.unknown} unknown" if t.unknown else ""))
            if t.differences:
                out.append("  differences of definition (not errors): " + "; ".join(
                    f"{k} {v}" for k, v in sorted(t.differences.items())))
            out.append(f"  completeness: {t.completeness}"
                       + (f", {t.missing} missing" if t.missing else "")
                       + (f", {lacked} missing only on unreachable states" if lacked else "")
                       + (f", {apart} missing only for the exact sums" if apart else ""))
        for kind, title in (("broken", "broken promises"), ("missing", "missing items"),
                            ("disputed", "disputes between our engine and the oracle"),
                            ("unreachable", "findings that rest only on states no float32 "
                                            "input reaches (not broken promises)"),
                            ("definition", "differences of definition shown by a world (the "
                                           "peer's model of the forest; not broken promises)")):
            chosen = [f for f in self.findings if f.kind == kind]
            if chosen:
                out.append(f"{title}:")
                out.extend(f.text(self.forest) for f in chosen)
        for failure in self.failures:
            where = f" on {failure['where']}" if failure.get("where") else \
                f" on row {failure['row']}" if failure["row"] is not None else ""
            what = "no answer" if failure["status"] == "none" else f"peer {failure['status']}"
            out.append(f"{what}{where}: {failure['error']}")
        out.append(f"time per row answered (median): peer {_median(self.peer_seconds)} s, "
                   f"grading {_median(self.our_seconds)} s")
        out.append(f"result: {self.result()}")
        return "\n".join(out)


def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 4) if values else None


# ---------------------------------------------------------------------------------------------
# Grading.


class PromiseGrader:
    """Grades a peer's answers for one forest (the oracle and the native engine are built
    once): :meth:`grade` per answer, or :func:`grade_answers` for a whole run. With the
    ``task`` the answers are for, findings name the rows as the task's ``origins`` do, with
    the raw values the peer was given, and findings on a forest imported from ``task.model``
    are graded again where they may rest on states no float32 input reaches
    (:class:`~rfcircuits.crosscheck.peers.unreachable.Float64View`); with the ``peer_model`` the
    adapter declares, findings are graded again on that model
    (:class:`~rfcircuits.crosscheck.peers.modelling.ModelView`)."""

    def __init__(self, forest: Forest, peer: str, version: str, ties: str,
                 promises: Mapping[str, Promise], max_nodes: int | None = None,
                 task: Task | None = None, peer_model: PeerModel | None = None) -> None:
        self.forest = forest
        self.ties = ties
        self.verify_ties = "all" if ties == "all" else "first"
        self.promises = dict(promises)
        self.task = task
        oracle_only = [n for n, p in promises.items() if p.answers == "one" and n in WHAT_OF]
        pair = ("sufficient_reasons", "necessary_reasons")
        if all(n in promises and promises[n].answers == "all" for n in pair):
            # the oracle's certificate proves both complete without the native engine's
            # complete answer, whose graphs run out of memory on larger forests (RFxpl on
            # breast-cancer, 25 trees of depth 4: MemoryError at 8 GB; certified: 12 s, 0.2 GB)
            oracle_only.extend(pair)
        self.verifier = Verifier(forest, self.verify_ties, oracle_only=oracle_only,
                                 max_nodes=max_nodes)
        self._strict: SatOracle | None = None
        self._second: SatOracle | None = None
        self._view: Float64View | None | bool = False  # False: not built yet
        self.model_view = None if peer_model is None else \
            ModelView(forest, peer_model, self.verifier.sat, self.verify_ties)
        self.report = PeerReport(forest, peer, version, ties, self.promises)
        self._row: dict[str, Any] = {}
        for name in promises:
            self.report.tally(name)

    def close(self) -> None:
        self.verifier.close()
        for oracle in (self._strict, self._second):
            if oracle is not None:
                oracle.close()
        if isinstance(self._view, Float64View):
            self._view.close()
        if self.model_view is not None:
            self.model_view.close()

    def __enter__(self) -> PromiseGrader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def strict(self) -> SatOracle:
        if self._strict is None:
            self._strict = SatOracle(self.forest, "strict")
        return self._strict

    @property
    def second(self) -> SatOracle:
        """The SAT oracle with other vote counters (:data:`SECOND_ENCODING`), which confirms
        what has too many worlds to enumerate."""
        if self._second is None:
            self._second = SatOracle(self.forest, self.verify_ties, SECOND_ENCODING)
        return self._second

    @property
    def view(self) -> Float64View | None:
        """The forest as a float64 reader sees it, when the task's model has states no
        float32 input reaches (built at the first finding that needs it)."""
        if self._view is False:
            model = None if self.task is None else self.task.model
            self._view = Float64View.of(self.forest, model, self.verify_ties)
        return self._view or None

    def _finding(self, *args: Any, **kwargs: Any) -> Finding:
        """A finding on the row being graded."""
        return Finding(*args, **kwargs, **self._row)

    def grade(self, answer: Answer, x: Instance) -> None:
        """Grade one answer for the row whose instance (our states of it) is ``x``."""
        report = self.report
        report.rows += 1
        report.answers[answer.status] += 1
        if answer.status in ("ok", "none"):  # the time of a failure is the limit, or unknown
            report.peer_seconds.append(answer.seconds)
        row = answer.index + 1
        self._row = row_origin(self.task, answer.index)
        if answer.status == "none" and self.model_view is not None:
            shown = self.model_view.at_instance(x)
            if shown is not None:  # its model gives x no class it explains: nothing to answer
                report.findings.append(self._finding(
                    "definition", row, x, "decision", None, UNANSWERED, note=answer.error,
                    model_witness=shown, peer_ties=self.model_view.model.ties))
                return
        if answer.status in ("error", "timeout") or answer.status == "none" and answer.error:
            report.failures.append(self._failure(row, answer.status, answer.error))
            return
        if answer.status != "ok" or answer.record is None:
            return
        start = time.perf_counter()
        record = {k: v for k, v in answer.record.items()
                  if k in self.promises or k in HEADER_FIELDS or k == "instance"}
        try:
            claim = parse_claim(self.forest, record, row, f"{report.peer}'s answer",
                                self.verify_ties, x)
        except InputError as exc:
            report.answers["unreadable"] += 1
            report.failures.append(self._failure(row, "unreadable", str(exc)))
            return
        line = self.verifier.grade(claim, [row])
        for fr in line.fields:
            if fr.items is None:
                if fr.status != "ok" and fr.field != "contrastive":
                    # votes, decision and classes are the trees' own count: confirmed
                    report.findings.append(self._finding(
                        "disputed" if fr.status == "disputed" else "broken", row,
                        claim.instance, fr.field, _scalar_json(self.forest, fr.field, fr.value),
                        "the correct value", note=fr.note or
                        f"the forest's is {_scalar_json(self.forest, fr.field, fr.truth)}",
                        confirmed=True if fr.field in HEADER_FIELDS else None))
                elif fr.status != "ok":
                    report.findings.append(self._finding(
                        "broken", row, claim.instance, fr.field, None,
                        "targets a class it is not in", target=fr.target, note=fr.note))
                continue
            tally = report.tally(fr.field)
            tally.completeness = fr.completeness if tally.promise.answers == "all" \
                else "not promised"
            for item in fr.items:
                self._item(tally, fr.field, claim.instance, item, fr.target, row)
        report.our_seconds.append(time.perf_counter() - start)

    def _failure(self, row: int, status: str, error: str) -> dict[str, Any]:
        """A peer failure on the row being graded, named as findings name it."""
        return {"row": row, "data_row": self._row["data_row"], "where": self._row["where"],
                "status": status, "error": error}

    def _item(self, tally: FieldTally, name: str, x: Instance, item: ItemResult,
              target: int | None, row: int) -> None:
        report = self.report
        promise = tally.promise
        if item.status == "disputed":
            report.findings.append(self._finding("disputed", row, x, name, item.item,
                                                 "agreement", target, note=item.note))
            return
        if not item.listed:
            if promise.answers == "all":
                finding = self._finding("missing", row, x, name, item.item, "completeness",
                                        target, note=item.note)
                kind = self._regrade(finding)
                if kind == "unreachable":
                    tally.unreachable += 1
                elif kind == "definition":
                    tally.definition += 1
                else:
                    tally.missing += 1
                report.findings.append(finding)
            return
        tally.items += 1
        outcome, differences = self._judge(tally, name, x, item, target, row)
        report.items.append({"row": row, "data_row": self._row["data_row"], "field": name,
                             "target": None if target is None else self.forest.classes[target],
                             "item": term_json(self.forest, item.item), "outcome": outcome,
                             "differences": differences})

    def _judge(self, tally: FieldTally, name: str, x: Instance, item: ItemResult,
               target: int | None, row: int) -> tuple[str, list[str]]:
        """Sort one listed item's verdicts by the promise (module docstring): its outcome
        (``keeps``, ``broken``, ``unreachable``, ``claim fails``,
        ``unknown``) and its differences of
        definition, counted in ``tally``."""
        promise = tally.promise
        verdict = dict(item.verdict)
        smaller: Term | None = None
        if name in TERM_FIELDS and verdict.get(VALIDITY[name]):
            verdict["conditions"], smaller, dropped = condition_minimal(
                self.verifier.sat, self.forest, x, item.item)
        validity = VALIDITY[name]
        minimal = MINIMAL_VERDICTS[promise.minimal].get(name)
        if verdict[validity] is False:
            if promise.guarantee == "heuristic":
                tally.claims_failing += 1
                return "claim fails", []
            return self._broken(tally, name, x, item.item, validity, target, row,
                                item.evidence, note=item.note), []
        failed = {k for k, v in verdict.items() if v is False}
        differences = []
        if minimal in failed and self.ties == "strict" and name in TERM_FIELDS \
                and condition_minimal(self.strict, self.forest, x, item.item)[0]:
            failed.discard(minimal)
            differences.append(DIFFERENCES["ties"])
        if minimal in failed and promise.guarantee == "formal":
            if minimal == "minimal" and name == "sufficient_reasons":
                smaller = next((t for t in _drops(item.item)
                                if self.verifier.sat.check_sr(x, t)["sufficient"]), None)
            elif minimal == "prime" and name == "general_sufficient_reasons":
                smaller = self._widening(x, item.item)
            elif minimal != "conditions":
                smaller = None
            world = item.evidence if name not in TERM_FIELDS else None
            return self._broken(tally, name, x, item.item, minimal, target, row, world,
                                smaller, f"{dropped} can be dropped"
                                if minimal == "conditions" else ""), differences
        if verdict[validity] is None or minimal is not None and verdict.get(minimal) is None:
            tally.unknown += 1
            outcome = "unknown"
        else:
            tally.holds += 1
            outcome = "keeps"
        for kind in sorted(failed):
            if kind == "prime" and "conditions" in failed:
                continue  # counted once, as a condition that can be dropped
            if kind == "prime" and name == "general_sufficient_reasons":
                kind = self._why_not_prime(x, item.item)
            differences.append(DIFFERENCES.get(kind, kind))
        tally.differences.update(differences)
        return outcome, differences

    def _widening(self, x: Instance, term: Term) -> Term | None:
        """A term that widens one literal of a general term by one state (a literal that
        becomes full is dropped) and is still valid: the evidence that it is not prime."""
        sat = self.verifier.sat
        for k, (f, mask) in enumerate(term):
            full = self.forest.features[f].full
            for s in mask_states(full & ~mask):
                wide = mask | 1 << s
                candidate = term[:k] + term[k + 1:] if wide == full else \
                    term[:k] + ((f, wide),) + term[k + 1:]
                if sat.check_gsr(x, candidate)["valid"]:
                    return candidate
        return None

    def _why_not_prime(self, x: Instance, term: Term) -> str:
        """``relax`` when widening a literal by a state adjacent to its run still implies Δ,
        else ``non-interval`` (a whole condition that can be dropped is counted as such)."""
        sat = self.verifier.sat
        for k, (f, mask) in enumerate(term):
            n = self.forest.features[f].n_states
            for s in ((mask & -mask).bit_length() - 2, mask.bit_length()):
                if 0 <= s < n and (mask | 1 << s) != self.forest.features[f].full \
                        and sat.check_sr(x, term[:k] + ((f, mask | 1 << s),) + term[k + 1:]
                                         )["sufficient"]:
                    return "relax"
        return "non-interval"

    def _broken(self, tally: FieldTally, name: str, x: Instance, term: Term, promise: str,
                target: int | None, row: int, world: Instance | None,
                smaller: Term | None = None, note: str = "") -> str:
        """Report a broken promise, confirmed independently of the grading oracle where it
        can be, or as resting only on unreachable states; the item's outcome."""
        finding = self._finding("broken", row, x, name, term, promise, target, world, smaller,
                                note=note)
        decided = self.forest.decision(x)
        if world is not None and name in TERM_FIELDS:
            finding.confirmed = term_holds(term, world) and not _wins(
                self.forest, self.verify_ties, world, decided)
        elif world is not None:  # a clause freeing fewer of its features is enough
            changed = {f for f in range(len(x)) if world[f] != x[f]}
            finding.confirmed = changed < {f for f, _ in term} and (
                not _wins(self.forest, self.verify_ties, world, decided) if target is None
                else _wins(self.forest, self.verify_ties, world, target))
        elif smaller is not None:
            finding.confirmed = confirm(self.forest, self.verify_ties, x, "implies", smaller,
                                        decided)
            if finding.confirmed is None:  # too many worlds: another CNF of the vote counts
                finding.confirmed = self.second.check_sr(x, smaller)["sufficient"]
                finding.confirmed_by = f"the SAT oracle with {SECOND_ENCODING} counters"
        elif name in INSTANCE_FIELDS and any(mask != 1 << x[f] for f, mask in term):
            finding.confirmed = True  # its form, whatever the worlds: not instance literals
            finding.confirmed_by = "its literals (not all of the instance's states)"
        elif name in TERM_FIELDS and promise == VALIDITY[name]:
            finding.confirmed = confirm(self.forest, self.verify_ties, x, "escapes", term,
                                        decided)
            if finding.confirmed is None:
                finding.confirmed = not self.second.check_sr(x, term)["sufficient"]
                finding.confirmed_by = f"the SAT oracle with {SECOND_ENCODING} counters"
        elif promise == VALIDITY[name] and name in ("necessary_reasons", "contrastive"):
            finding.confirmed = self._confirm_stuck(x, term, target)
            if not term:  # freeing nothing: the instance is the one world, shown with its votes
                finding.evidence_world = x
            if finding.confirmed is None:
                check = self.second.check_nr(x, term)["necessary"] if target is None \
                    else self.second.reaches(x, target, term)
                finding.confirmed = not check
                finding.confirmed_by = f"the SAT oracle with {SECOND_ENCODING} counters"
        else:
            finding.unconfirmed = ("no independent check of this verdict: `rfcircuits "
                                   "crosscheck --replay` on the repro file compares our answer "
                                   "for this instance with the brute-force and BDD oracles")
        self.report.findings.append(finding)
        kind = self._regrade(finding)
        if kind == "unreachable":
            tally.unreachable += 1
            return "unreachable"
        if kind == "definition":
            tally.definition += 1
            return "definition"
        tally.broken += 1
        return "broken"

    def _regrade(self, finding: Finding) -> str | None:
        """The kind the finding turns out to be when graded again: ``unreachable`` when it
        rests only on states no float32 input reaches, ``definition`` when it holds for the
        peer's model of the forest (each with its witness), None when neither."""
        view = self.view
        witness = None if view is None else view.witness(
            finding.field, finding.promise, finding.instance, finding.item, finding.target,
            finding.evidence_item)
        if witness is not None:
            finding.kind, finding.witness = "unreachable", witness
            return finding.kind
        if self.model_view is None:
            return None
        shown = self.model_view.witness(finding.field, finding.promise, finding.instance,
                                        finding.item, finding.target, finding.evidence_item,
                                        finding.evidence_world)
        if shown is None:
            return None
        finding.kind, finding.model_witness = "definition", shown
        finding.peer_ties = self.model_view.model.ties
        return finding.kind

    def _confirm_stuck(self, x: Instance, clause: Term, target: int | None) -> bool | None:
        """That no world changing only the clause's features leaves x's class (``target``
        None) or reaches ``target``: True when enumeration bears it out."""
        free = tuple((f, self.forest.features[f].full) for f, _ in clause)
        if _count(self.forest, free, x) > CONFIRM_WORLDS:
            return None
        decided = self.forest.decision(x)
        for w in _worlds(self.forest, free, x):
            if (target is None and not _wins(self.forest, self.verify_ties, w, decided)
                    or target is not None and _wins(self.forest, self.verify_ties, w, target)):
                return False
        return True


def row_origin(task: Task | None, index: int) -> dict[str, Any]:
    """How reports name row ``index`` (from 0) of ``task``: ``data_row``, ``where`` (its
    :class:`~rfcircuits.crosscheck.peers.adapters.base.RowOrigin`) and the raw ``values`` the peer
    was given, by feature (None each without a task, or one without origins)."""
    if task is None or task.rows is None or not 0 <= index < len(task.rows):
        return {"data_row": None, "where": "", "values": None}
    origin = task.origins[index] if index < len(task.origins) else RowOrigin(None, "")
    values = dict(zip(task.feature_names, (float(v) for v in task.rows[index]))) \
        if len(task.rows[index]) == len(task.feature_names) else None
    return {"data_row": origin.index, "where": origin.where, "values": values}


def term_holds(term: Term, world: Instance) -> bool:
    return all(m >> world[f] & 1 for f, m in term)


def grade_answers(forest: Forest, instances: Sequence[Instance], answers: Iterable[Answer],
                  peer: str, version: str, ties: str, promises: Mapping[str, Promise],
                  max_nodes: int | None = None, task: Task | None = None,
                  peer_model: PeerModel | None = None) -> PeerReport:
    """Grade a peer's answers (``answers[k].index`` indexes ``instances``); ``task``, the
    task they answer, names the rows in findings; ``peer_model``, the peer's model of the
    forest, where findings are graded again (:class:`PromiseGrader`)."""
    with PromiseGrader(forest, peer, version, ties, promises, max_nodes, task,
                       peer_model) as grader:
        for answer in answers:
            grader.grade(answer, instances[answer.index])
        return grader.report
