"""``verify-peer --html FILE``: a peer's grading as one self-contained HTML page.

The page is drawn from the document ``verify-peer --json`` prints (schemas
``verify-peer.schema.json`` and ``peer-report.schema.json``), so that it says what the JSON
says and nothing else: the forest and rows graded, then per peer its verdict, the counts of
its items per field (with a bar of their outcomes, inline SVG), its findings — each with
the row, the raw values the peer was given, and the evidence: the world where the item holds
and the decision differs with the trees' votes, a smaller item still valid, the float64
world of a finding that rests on unreachable states, the peer's sums beside the exact ones
for a difference of definition — then the differences of definition counted (not errors)
and the peer's failures.

Nothing is fetched: the style sheet is inline, there is no script, and every text of the
document (names of peers, features, classes, files; errors a peer wrote) is escaped, so a
name with markup in it shows as text. :func:`write_html` writes the page under the output
rules of :mod:`rfcircuits.atomicio`.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rfcircuits import __version__
from rfcircuits.atomicio import atomic_open
from rfcircuits.crosscheck.verify import TERM_FIELDS

#: An item's outcome (report ``items``) in the bars, with its colour and words; ``missing``
#: counts items of ours the peer lacked.
OUTCOMES = (("keeps", "#2e7d32", "keeps every promise"), ("broken", "#c62828", "broken"),
            ("claim fails", "#ef6c00", "claim not formally true"),
            ("unreachable", "#607d8b", "fails only on unreachable states"),
            ("definition", "#7e57c2", "fails only for the exact sums"),
            ("unknown", "#9e9e9e", "unknown"), ("missing", "#6d1b1b", "missing"))
#: The sections of findings, in the text report's order, with their titles.
KINDS = (("broken", "Broken promises"), ("missing", "Missing items"),
         ("disputed", "Disputes between our engine and the oracle (our bug)"),
         ("unreachable", "Findings that rest only on states no float32 input reaches "
                         "(not broken promises)"),
         ("definition", "Differences of definition shown by a world: the peer's model of the "
                        "forest (not broken promises)"))
#: Items shown per kind of difference of definition (the JSON report has them all).
EXAMPLES = 5
#: Keys of the verify-peer document that name the forest and rows, as the page labels them.
HEAD = (("dataset", "dataset"), ("trees", "trees"), ("depth", "depth"), ("model", "model"),
        ("data", "data"), ("forest", "forest"), ("instances", "instances"),
        ("target", "label column"), ("seed", "seed"), ("pick", "rows picked"),
        ("rows", "rows explained"), ("timeout", "seconds allowed per row"))

STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222;
       max-width: 72rem; margin: 1.5rem auto; padding: 0 1rem; }
h1 { font-size: 1.5rem; margin-bottom: .3rem; }
h2 { font-size: 1.25rem; border-bottom: 2px solid #ddd; padding-bottom: .2rem;
     margin-top: 2.2rem; }
h3 { font-size: 1.05rem; margin-top: 1.4rem; }
table { border-collapse: collapse; margin: .4rem 0 .8rem; display: block; max-width: 100%;
        overflow-x: auto; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .2rem .4rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; font-weight: 600; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.verdict { padding: .5rem .8rem; border-radius: 4px; margin: .6rem 0; }
.verdict.ok { background: #e8f5e9; border-left: 5px solid #2e7d32; }
.verdict.fail { background: #ffebee; border-left: 5px solid #c62828; }
.note { background: #fff8e1; border-left: 5px solid #f9a825; padding: .4rem .8rem; }
.finding { border: 1px solid #ddd; border-left: 5px solid #999; border-radius: 4px;
           padding: .4rem .8rem; margin: .7rem 0; }
.finding.broken, .finding.missing, .finding.disputed { border-left-color: #c62828; }
.finding.unreachable { border-left-color: #607d8b; }
.finding.definition { border-left-color: #7e57c2; }
.item { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .92em; }
.muted { color: #666; }
dl.head { display: grid; grid-template-columns: max-content auto; gap: .1rem 1rem; }
dl.head dt { font-weight: 600; }
dl.head dd { margin: 0; }
svg text { font: 12px system-ui, sans-serif; }
footer { margin-top: 3rem; color: #777; font-size: .85em; }
"""


class Markup(str):
    """Text that is HTML already (built here from escaped parts): not escaped again."""


def e(value: Any) -> Markup:
    """``value`` as HTML text: escaped (quotes too), unless it is :class:`Markup`."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(value if isinstance(value, str) else _plain(value), quote=True))


def _plain(value: Any) -> str:
    """A value of the JSON document in words: null as "—", numbers as JSON writes them."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _join(parts: Iterable[str]) -> Markup:
    return Markup("".join(e(p) for p in parts))


def _tag(name: str, *content: Any, cls: str = "", **attrs: Any) -> Markup:
    """``<name class=cls attrs>content</name>``, every attribute and text escaped."""
    attributes = "".join(f' {k.replace("_", "-")}="{e(v)}"'
                         for k, v in {**({"class": cls} if cls else {}), **attrs}.items())
    return Markup(f"<{name}{attributes}>{_join(content)}</{name}>")


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]],
           numeric: Sequence[bool] = ()) -> Markup:
    """A table; ``numeric[i]``: column ``i`` aligned right."""
    head = _tag("tr", *(_tag("th", h) for h in headers))
    body = [_tag("tr", *(_tag("td", cell, cls="n" if i < len(numeric) and numeric[i] else "")
                         for i, cell in enumerate(row))) for row in rows]
    return _tag("table", _tag("thead", head), _tag("tbody", *body))


def _pairs(mapping: Mapping[str, Any] | None, key: str, value: str,
           numeric: bool = True) -> Markup:
    """A two-column table of a mapping (feature → value, class → votes, ...); ``numeric``:
    its values are numbers (aligned right)."""
    if not mapping:
        return Markup("")
    return _table([key, value], mapping.items(), (False, numeric))


def literal_text(literal: Mapping[str, Any]) -> str:
    """``feature ∈ state`` (one state) or ``feature ∈ {s1, s2}``, states by name."""
    states = literal["states"]
    return f"{literal['feature']} ∈ " + (states[0] if len(states) == 1
                                          else "{" + ", ".join(states) + "}")


def item_text(item: Any, field: str) -> str:
    """An item: a term (``∧``, the fields of :data:`~rfcircuits.crosscheck.verify.
    TERM_FIELDS`) or a clause (``∨``) of literals, as the text report writes them, or a
    scalar field's value as JSON."""
    if not isinstance(item, list):
        return _plain(item)
    term = field in TERM_FIELDS
    if not item:
        return "true" if term else "false"
    return (" ∧ " if term else " ∨ ").join(literal_text(lit) for lit in item)


def outcome_bar(fields: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> Markup:
    """An inline SVG: per field, a bar of its items by outcome (:data:`OUTCOMES`), each part
    with its count as a tooltip, and the legend of the outcomes present."""
    counts = {name: Counter(i["outcome"] for i in items if i["field"] == name)
              for name in fields}
    for name, tally in fields.items():
        counts[name]["missing"] = tally["missing"]
    present = [o for o in OUTCOMES if any(c[o[0]] for c in counts.values())]
    if not present:
        return Markup("")
    label_width, width, row = 190, 420, 26
    height = row * len(counts) + 30
    parts = []
    for k, (name, count) in enumerate(counts.items()):
        total = sum(count.values()) or 1
        y = k * row
        parts.append(_tag("text", name, x=0, y=y + 15))
        x = float(label_width)
        for outcome, colour, words in OUTCOMES:
            if count[outcome]:
                w = width * count[outcome] / total
                parts.append(_tag("rect", _tag("title", f"{name}: {count[outcome]} {words}"),
                                  x=f"{x:.1f}", y=y + 2, width=f"{w:.1f}", height=row - 8,
                                  fill=colour))
                x += w
        parts.append(_tag("text", sum(count.values()), x=label_width + width + 6, y=y + 15))
    x = 0.0
    for outcome, colour, words in present:
        y = row * len(counts) + 8
        parts.append(_tag("rect", x=f"{x:.1f}", y=y, width=10, height=10, fill=colour))
        parts.append(_tag("text", words, x=f"{x + 14:.1f}", y=y + 9))
        x += 14 + 6.5 * len(words) + 14
    return _tag("svg", _tag("title", "items per field, by outcome"), *parts,
                xmlns="http://www.w3.org/2000/svg", role="img", width=max(640, int(x)),
                height=height, viewBox=f"0 0 {max(640, int(x))} {height}")


def finding_html(f: Mapping[str, Any]) -> Markup:
    """One finding: where its row is, what fails, the values, the evidence, whether an
    independent check confirmed it, and the worlds of its reason (float64, peer's model)."""
    place = (f"data row {f['data_row']}" if f["data_row"] is not None else f"row {f['row']}") \
        + (f" ({f['where']})" if f["where"] else "") \
        + (f", row {f['row']} explained" if f["data_row"] is not None else "")
    target = f" (target class {f['target']})" if "target" in f else ""
    parts: list[Any] = [
        _tag("p", _tag("strong", place)),
        _tag("p", f"{f['field']}{target}: ", _tag("span", item_text(f["item"], f["field"]),
                                                 cls="item"),
             f" — {f['promise']} fails" + (f" ({f['note']})" if f.get("note") else ""))]
    if f.get("values"):
        parts += [_tag("h4", "Raw values given to the peer"),
                  _pairs(f["values"], "feature", "value")]
    evidence = f.get("evidence") or {}
    if "world" in evidence:
        parts += [_tag("h4", "Witness world (the item holds, the decision differs)"),
                  _table(["feature", "state in the witness", "state of the row"],
                         ((k, v, f["instance"].get(k)) for k, v in evidence["world"].items())),
                  _pairs(evidence.get("votes"), "class", "votes in the witness")]
    if "smaller_item" in evidence:
        parts.append(_tag("p", "Still valid with less: ",
                          _tag("span", item_text(evidence["smaller_item"], f["field"]),
                               cls="item")))
    if f["confirmed"] is not None:
        parts.append(_tag("p", ("Confirmed by " if f["confirmed"] else
                                "Not confirmed: the independent check contradicts the oracle "
                                "(") + f.get("confirmed_by", "") + ("" if f["confirmed"] else
                                                                    ")"), cls="muted"))
    elif f.get("to_confirm"):
        parts.append(_tag("p", f"Not confirmed: {f['to_confirm']}", cls="muted"))
    if f.get("reason"):
        parts.append(_tag("p", "Why: ", f["reason"]))
    if f.get("float64"):
        parts.append(_float64(f["float64"]))
    if f.get("peer_model"):
        parts.append(_peer_model(f["peer_model"]))
    return _tag("article", *parts, cls=f"finding {f['kind']}")


def _float64(w: Mapping[str, Any]) -> Markup:
    """An unreachable finding's float64 world (peer-report.schema.json, ``float64``)."""
    gaps = _table(["feature", "state", "thresholds", "float32 below", "float32 above"],
                  ((g["feature"], g["state"], " < ".join(map(_plain, g["thresholds"])),
                    g["float32_below"], g["float32_above"]) for g in w["unreachable"]))
    return Markup(_tag("h4", f"The float64 world: {w['what']}")
                  + _table(["feature", "state", "float64 value", "as float32"],
                           ((k, v, w["values"].get(k), w["float32"].get(k))
                            for k, v in w["changed"].items()))
                  + _pairs(w["votes"], "class", "votes") + _tag("p", f"decision: {w['decision']}"
                                                           + ("" if w["confirmed"] else
                                                              " (not borne out by the votes)"))
                  + _tag("p", "States no float32 value reaches:") + gaps)


def _peer_model(m: Mapping[str, Any]) -> Markup:
    """A difference of definition's world (peer-report.schema.json, ``peerModel``)."""
    classes = list(dict.fromkeys([*m["exact_sums"], *m["peer_sums"]]))
    return Markup(_tag("h4", f"The peer's model of the forest: {m['what']}")
                  + _pairs(m["world"], "feature", "state in the world", numeric=False)
                  + _table(["class", "exact sum", "the peer's sum"],
                           ((c, m["exact_sums"].get(c), m["peer_sums"].get(c))
                            for c in classes), (False, True, True))
                  + _tag("p", f"exact sums decide {', '.join(m['exact_classes']) or 'none'}; "
                              f"the peer's decide {', '.join(m['peer_classes']) or 'none'}"
                              + ("" if m["confirmed"] else
                                 " (not borne out by both forests' trees)")))


def peer_html(name: str, report: Mapping[str, Any], anchor: str) -> Markup:
    """One peer's section (module docstring)."""
    fields = report["fields"]

    def promise(p: Mapping[str, str]) -> str:
        return (f"{p['guarantee']}, minimal: {p['minimal']}, "
                + ("all answers" if p["answers"] == "all" else "one answer"))

    counts = _table(
        ["field", "promise", "items", "keep every promise", "broken", "claims not formally "
         "true", "unknown", "missing", "only unreachable", "only exact sums", "completeness"],
        ((n, promise(t["promise"]), t["items"], t["holds"], t["broken"], t["claims_failing"],
          t["unknown"], t["missing"], t["unreachable"], t["definition"], t["completeness"])
         for n, t in fields.items()), (False, False) + (True,) * 8)
    seconds = report["seconds"]
    parts: list[Any] = [
        _tag("h2", f"{name} — {report['peer']} {report['version']}", id=anchor),
        _tag("div", _tag("strong", "Every promise kept" if report["ok"] else
                         "Promises broken"), f": {report['result']}",
             cls="verdict " + ("ok" if report["ok"] else "fail")),
        _tag("p", f"{report['rows']} rows; ties decided as '{report['ties']}'; answers: "
                  + (", ".join(f"{k} {v}" for k, v in sorted(report["answers"].items()))
                     or "none") + f". Median seconds per row: the peer "
                  f"{_plain(seconds['peer_median'])}, grading {_plain(seconds['ours_median'])}."),
        _tag("h3", "Items per field"), outcome_bar(fields, report["items"]), counts]
    for kind, title in KINDS:
        chosen = [f for f in report["findings"] if f["kind"] == kind]
        if chosen:
            parts += [_tag("h3", f"{title} ({len(chosen)})"), *map(finding_html, chosen)]
    parts.append(_differences(fields, report["items"]))
    if report["failures"]:
        parts += [_tag("h3", f"The peer's failures ({len(report['failures'])})"),
                  _table(["row", "data row", "where", "status", "error"],
                         ((f["row"], f["data_row"], f["where"], f["status"],
                           _tag("span", f["error"], cls="item"))
                          for f in report["failures"]))]
    return _tag("section", *parts)


def _differences(fields: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> Markup:
    """The differences of definition counted per field and kind (not errors), each with its
    first :data:`EXAMPLES` items."""
    rows = [(n, kind, count) for n, t in fields.items()
            for kind, count in sorted(t["differences"].items())]
    if not rows:
        return Markup("")
    examples = []
    for n, kind, _ in rows:
        shown = [i for i in items if i["field"] == n and kind in i["differences"]][:EXAMPLES]
        examples.append(_tag("details", _tag("summary", f"{n}: {kind}"), _tag("ul", *(
            _tag("li", f"row {i['row']}" + (f" (data row {i['data_row']})"
                                             if i["data_row"] is not None else "") + ": ",
                 _tag("span", item_text(i["item"], n), cls="item")) for i in shown))))
    return Markup(_tag("h3", "Differences of definition (not errors)")
                  + _tag("p", "Properties of our answers the peer does not promise, counted "
                              "per item; the first items of each kind below.", cls="muted")
                  + _table(["field", "difference", "items"], rows, (False, False, True))
                  + _join(examples))


def render(document: Mapping[str, Any], interrupted: bool = False) -> str:
    """The page of a ``verify-peer --json`` document (module docstring); ``interrupted``:
    the run stopped early, the page has the peers finished before."""
    peers = document["peers"]
    anchors = {name: f"peer-{k + 1}" for k, name in enumerate(peers)}
    head = _tag("dl", *(Markup(_tag("dt", label) + _tag("dd", document[key]))
                        for key, label in HEAD if key in document), cls="head")
    summary = _table(["peer", "version", "rows", "verdict", "broken", "missing", "disputed",
                      "unreachable", "definition", "failures"],
                     ((_tag("a", name, href=f"#{anchors[name]}"), r["version"], r["rows"],
                       "every promise kept" if r["ok"] else "promises broken",
                       *(sum(f["kind"] == k for f in r["findings"])
                         for k in ("broken", "missing", "disputed", "unreachable",
                                   "definition")), len(r["failures"]))
                      for name, r in peers.items()), (False, False, True, False) + (True,) * 6)
    body = [_tag("h1", "verify-peer report"),
            _tag("p", "Other explainers' answers graded against what each promises.",
                 cls="muted"), head]
    if interrupted:
        body.append(_tag("p", "The run was interrupted: this page has the peers that "
                              "finished before it stopped.", cls="note"))
    body += [_tag("h2", "Summary"), summary if peers else _tag("p", "No peer finished."),
             *(peer_html(name, r, anchors[name]) for name, r in peers.items()),
             _tag("footer", f"rfcircuits {__version__}")]
    title = "verify-peer: " + ", ".join(peers) if peers else "verify-peer"
    return ("<!DOCTYPE html>\n" + _tag(
        "html", _tag("head", Markup('<meta charset="utf-8">'),
                     Markup('<meta name="viewport" content="width=device-width, '
                            'initial-scale=1">'),
                     _tag("title", title), Markup(f"<style>{STYLE}</style>")),
        _tag("body", *body), lang="en") + "\n")


def write_html(path: str, document: Mapping[str, Any], interrupted: bool = False) -> None:
    """Write :func:`render`'s page to ``path`` under the output rules (a complete page
    replaces an earlier one whole)."""
    with atomic_open(path) as handle:
        handle.write(render(document, interrupted))
