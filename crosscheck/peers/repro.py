"""A peer's graded answers as a repro file: ``rfcircuits.repro/1`` with the ``peer`` property
(docs/formats.md#repro-files), what the pytest plugin and ``fuzz --adapter`` save for the
author of another explainer.

Each finding of a :class:`~rfcircuits.crosscheck.peers.promises.PeerReport` (a broken promise, an
item missing from an answer promised complete, a dispute between our engine and the SAT
oracle, one of these resting only on states no float32 input reaches or on the peer's model of
the forest) becomes one disagreement, and so does each failure of the peer (an error, a timeout, output we cannot
read).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from rfcircuits.forest import Forest, Instance, instance_to_json
from rfcircuits.crosscheck.peers.adapters.base import Answer, Task
from rfcircuits.crosscheck.differential.fuzz import repro
from rfcircuits.crosscheck.differential.harness import Disagreement
from rfcircuits.crosscheck.peers.promises import Finding, PeerReport, row_origin


def finding_disagreement(forest: Forest, peer: str, finding: Finding) -> Disagreement:
    """One finding as a disagreement: ``check`` the field, ``engines`` the peer and ``sat``
    (``native`` and ``sat`` for a dispute, a bug of ours), ``ours`` the peer's item (None for
    an item it lacks), ``theirs`` the verdict that failed (with the row's ``data_row`` and
    ``where``, and for a finding that rests on unreachable states or on the peer's model its
    ``reason``), ``counterexample`` the evidence (a world and its votes, or a smaller item that
    is still valid; and the ``float64`` world of an ``unreachable`` finding, the
    ``peer_model`` world of a ``definition`` one)."""
    doc = finding.to_json(forest)
    verdict = {k: doc[k] for k in ("kind", "promise", "target", "note", "data_row", "where",
                                   "reason", "to_confirm") if doc.get(k) is not None}
    if finding.kind == "missing" or finding.promise == "completeness":
        verdict["item"] = doc["item"]
    elif finding.kind in ("broken", "unreachable", "definition"):
        verdict["confirmed"] = doc["confirmed"]
    evidence = doc.get("evidence")
    for key in ("float64", "peer_model"):  # the world that shows the finding's kind
        if key in doc:
            evidence = {**(evidence or {}), key: doc[key]}
    engines = ("native", "sat") if finding.kind == "disputed" else (peer, "sat")
    return Disagreement(finding.field, engines, doc["instance"],
                        None if finding.promise == "completeness" else doc["item"], verdict,
                        evidence)


def peer_repro(report: PeerReport, forest: Forest, instances: Sequence[Instance],
               answers: Sequence[Answer], task: Task | None = None) -> dict[str, Any]:
    """The repro document of a graded run: ``answers[k].index`` indexes ``instances``, rows
    in findings and failures count from 1 (a failure with ``row`` None concerns the whole run,
    as a crash of the peer before any answer: its instance is null).

    Only the instances that some finding or failure concerns are kept (all of them when a
    failure concerns the whole run), each with the peer's record for it (null when it gave
    none) and, given the ``task``, where its row comes from and the raw values the peer was
    given (``peer.rows``). The tie policy is the one the report was graded under (``strict``
    peers are graded under ``first``)."""
    rows = {f.row for f in report.findings} | {f["row"] for f in report.failures}
    keep = range(len(instances)) if None in rows or not rows else \
        sorted(r - 1 for r in rows)
    records = {a.index: a.record for a in answers}
    disagreements = [finding_disagreement(forest, report.peer, f) for f in report.findings]
    disagreements += [Disagreement(
        f["status"], (report.peer, "-"),
        None if f["row"] is None else instance_to_json(forest, instances[f["row"] - 1]),
        None if f["row"] is None else records.get(f["row"] - 1), None, f["error"])
        for f in report.failures]
    doc = repro(forest, [instances[k] for k in keep], "all" if report.ties == "all" else "first",
                disagreements)
    doc["peer"] = {"name": report.peer, "version": report.version, "ties": report.ties,
                   "promises": {name: asdict(p) for name, p in report.promises.items()},
                   "answers": [records.get(k) for k in keep]}
    if task is not None:
        doc["peer"]["rows"] = [{"row": k + 1, **row_origin(task, k)} for k in keep]
    return doc
