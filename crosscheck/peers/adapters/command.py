"""The command-line adapter: an explainer in any language, run as a command per task.

``CommandAdapter(run="mytool --forest {forest} --instances {instances} --out {out}",
promises="sufficient_reasons=formal,features,all")`` (registered as ``command``) writes the
task's forest (our forest JSON, docs/formats.md) and its instances (JSON Lines, one
``{feature: state name}`` object a row) to a temporary directory, puts their paths and the
path of the output the tool must write for ``{forest}``, ``{instances}`` and ``{out}``
(shell-quoted, so the template leaves them unquoted; then the command is split as a shell
would, :func:`shlex.split`, and run with no shell, in the current directory, with no standard
input; ``{{`` and ``}}`` stand for braces), and reads ``{out}``: JSON Lines of
explanation records as ``rfcircuits verify`` reads them (docs/formats.md#verify-input), matched
to the rows as ``verify`` matches them (every line names its ``instance``, or the k-th line
answers the k-th row). Each record is passed on whole as :attr:`Answer.record` and graded
later by :mod:`rfcircuits.crosscheck.peers.promises`.

The command runs in its own process group for at most ``task.timeout`` seconds per row (all
rows in one run); an overrun kills the group. Answers: ``ok`` for every row a line answers,
with the run's wall time divided among the rows; for the other rows ``timeout`` when the run
overran, else ``error`` with why (the exit code and the last line of its stderr, no output
file, an output that cannot be read, no line for the row). Lines written before an overrun or
a failure are still passed on.

What the tool promises is declared per field as ``FIELD=GUARANTEE,MINIMAL,ANSWERS`` parts
joined by ``;`` (:func:`parse_promises`; fields as ``verify`` or ``explain --what`` name them,
values as :class:`~rfcircuits.crosscheck.peers.adapters.base.Promise` takes them).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import string
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from rfcircuits.atomicio import atomic_open
from rfcircuits.errors import InputError, check_choice
from rfcircuits.explanation import WHAT_FIELDS
from rfcircuits.forest import Forest, Instance, instance_to_json, save_forest
from rfcircuits.crosscheck.peers.adapters.base import (ANSWERS, GUARANTEES, MINIMALITIES,
                                                       PEER_FIELDS, PEER_TIES, Answer,
                                                       PeerUnavailable, Promise, Task)
from rfcircuits.crosscheck.peers.adapters.worker import last_line, run_command
from rfcircuits.crosscheck.verify import parse_claims, read_lines

#: The placeholders of a ``run`` template (``out`` is required).
PLACEHOLDERS = ("forest", "instances", "out")
#: A promise's parts, in the order a spec gives them, with the values each takes.
PROMISE_PARTS = (("guarantee", GUARANTEES), ("minimal", MINIMALITIES), ("answers", ANSWERS))


def promise_field(name: str, where: str) -> str:
    """The SPEC name of a field a peer may answer, given as SPEC or ``explain --what`` names
    it; InputError naming ``where`` for any other."""
    field = WHAT_FIELDS.get(name, name)
    if field not in PEER_FIELDS:
        raise InputError(f"{where}: {name!r} is not a field a peer may answer "
                         f"({', '.join(PEER_FIELDS)}; or {', '.join(WHAT_FIELDS)})")
    return field


def parse_promise(text: str, where: str) -> Promise:
    """The Promise written ``GUARANTEE,MINIMAL,ANSWERS``; InputError naming ``where``."""
    values = [v.strip() for v in text.split(",")]
    if len(values) != len(PROMISE_PARTS):
        raise InputError(f"{where}: expected {len(PROMISE_PARTS)} values "
                         f"GUARANTEE,MINIMAL,ANSWERS, got {len(values)}")
    for value, (part, allowed) in zip(values, PROMISE_PARTS):
        check_choice(f"{where}: {part}", value, allowed)
    return Promise(*values)


def parse_promises(spec: str | Mapping[str, Promise | str]) -> dict[str, Promise]:
    """Promises per field from ``"FIELD=G,M,A;FIELD=G,M,A"`` (module docstring) or from a
    mapping whose values are Promises or ``"G,M,A"``; InputError naming the bad part."""
    if isinstance(spec, str):
        pairs = []
        for part in (p.strip() for p in spec.split(";")):
            name, eq, text = part.partition("=")
            if part and not eq:
                raise InputError(f"promises, part {part!r}: expected "
                                 "FIELD=GUARANTEE,MINIMAL,ANSWERS")
            if part:
                pairs.append((name.strip(), text, f"promises, part {part!r}"))
    else:
        pairs = [(name, value, f"promises of {name!r}") for name, value in spec.items()]
    out: dict[str, Promise] = {}
    for name, value, where in pairs:
        field = promise_field(name, where)
        if field in out:
            raise InputError(f"{where}: {field} is promised twice")
        if isinstance(value, str):
            value = parse_promise(value, where)
        elif not isinstance(value, Promise):
            raise InputError(f"{where}: expected a Promise or \"GUARANTEE,MINIMAL,ANSWERS\"")
        out[field] = value
    if not out:
        raise InputError("promises: none given (e.g. \"sufficient_reasons=formal,features,all\")")
    return out


def _check_template(run: str) -> list[str]:
    """The words of ``run`` with its placeholders filled by stand-ins; InputError for an
    unknown placeholder, a missing ``{out}`` or unbalanced quotes."""
    try:
        named = {name for _, name, _, _ in string.Formatter().parse(run) if name is not None}
    except ValueError as exc:  # a lone brace
        raise InputError(f"run: {exc} in {run!r} (write {{{{ and }}}} for literal braces)") \
            from None
    unknown = sorted(named - set(PLACEHOLDERS))
    if unknown:
        raise InputError(f"run: unknown placeholder {{{unknown[0]}}} (placeholders: "
                         + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS) + ")")
    if "out" not in named:
        raise InputError("run: the command must name {out}, the file it writes its "
                         "explanations to")
    words = _fill(run, {p: p.upper() for p in PLACEHOLDERS})
    if not words:
        raise InputError("run: empty command")
    return words


def _fill(run: str, paths: Mapping[str, str]) -> list[str]:
    try:
        return shlex.split(run.format(**{k: shlex.quote(v) for k, v in paths.items()}))
    except ValueError as exc:  # unbalanced quotes
        raise InputError(f"run: {exc} in {run!r}") from None


def write_inputs(forest: Forest, instances: Sequence[Instance], forest_path: str,
                 instances_path: str) -> None:
    """The task's forest and its instances (JSON Lines of named instances) as files."""
    save_forest(forest, forest_path)
    with atomic_open(instances_path) as handle:
        for x in instances:
            handle.write(json.dumps(instance_to_json(forest, x), ensure_ascii=False) + "\n")


def match_output(forest: Forest, instances: Sequence[Instance],
                 path: str) -> tuple[dict[int, dict[str, Any]], str]:
    """The records of the output file by row index, and what the rows without one are told.
    Lines are matched to rows as ``verify`` matches them (:func:`~rfcircuits.crosscheck.verify.
    parse_claims` on each line's ``instance`` alone: the rest is graded later): by order, or
    by their instance's states. Rows in the same states share the one line naming them, or
    take as many such lines in order; other counts leave them unanswered. InputError when the
    file cannot be read or its lines break the matching rules."""
    lines = read_lines(path)
    keys = [(n, {"instance": obj["instance"]} if "instance" in obj else {})
            if isinstance(obj, dict) else (n, obj) for n, obj in lines]
    claims, by = parse_claims(forest, instances, keys, path, "first")
    if by == "order":
        return {k: obj for k, (_, obj) in enumerate(lines)}, \
            "no line of the output answers this row"
    rows_of: dict[Instance, list[int]] = {}
    for i, x in enumerate(instances):
        rows_of.setdefault(x, []).append(i)
    lines_of: dict[Instance, list[int]] = {}
    for k, claim in enumerate(claims):
        lines_of.setdefault(claim.instance, []).append(k)
    records: dict[int, dict[str, Any]] = {}
    why = "no line of the output names this row's instance"
    for x, rows in rows_of.items():
        ks = lines_of.get(x, [])
        if len(ks) == 1 or len(ks) == len(rows):
            records.update((i, lines[ks[0] if len(ks) == 1 else k][1])
                           for i, k in zip(rows, ks * len(rows)))
        elif ks:
            why += (f", or {len(ks)} lines name the instance of {len(rows)} rows (lines "
                    + ", ".join(str(lines[k][0]) for k in ks) + ")")
    unmatched = sum(len(ks) for x, ks in lines_of.items() if x not in rows_of)
    if unmatched:
        why += f" ({unmatched} line{'s' if unmatched > 1 else ''} name other instances)"
    return records, why


class CommandAdapter:
    """An explainer run as a command (module docstring); ``promises`` as :func:`parse_promises`
    reads them, ``ties`` as :data:`~rfcircuits.crosscheck.peers.adapters.base.PEER_TIES` names
    them."""

    def __init__(self, run: str, promises: Mapping[str, Promise | str] | str,
                 ties: str = "first", name: str = "command") -> None:
        self.run = run
        self.words = _check_template(run)
        self.promises = parse_promises(promises)
        self.ties = check_choice("ties", ties, PEER_TIES)
        self.name = name

    def version(self) -> str:
        """The command template (the program must be found: PeerUnavailable otherwise)."""
        program = self.words[0]
        if shutil.which(program) is None:
            raise PeerUnavailable(f"run: cannot find the program {program!r} (not on PATH, or "
                                  "not executable)")
        return self.run

    def explain(self, task: Task) -> Iterator[Answer]:
        """Run the command once on all rows of ``task`` (module docstring)."""
        n = len(task.instances)
        if n == 0:
            return
        limit = task.timeout * n
        with tempfile.TemporaryDirectory(prefix="rfcircuits-command-") as tmp:
            paths = {p: os.path.join(tmp, f) for p, f in
                     (("forest", "forest.json"), ("instances", "instances.jsonl"),
                      ("out", "explanations.jsonl"))}
            write_inputs(task.forest, task.instances, paths["forest"], paths["instances"])
            err_path = os.path.join(tmp, "stderr")
            start = time.perf_counter()
            with open(os.path.join(tmp, "stdout"), "wb") as out, open(err_path, "wb") as err:
                try:
                    code = run_command(_fill(self.run, paths), limit, out, err)
                except OSError as exc:
                    code, cannot = 1, f"cannot run {self.words[0]!r}: {exc.strerror or exc}"
                else:
                    cannot = ""
            seconds = (time.perf_counter() - start) / n
            records, why = ({}, cannot) if cannot else \
                self._records(task, paths["out"], code, err_path)
            if code is None:
                failure = f"overran {limit:g} s ({task.timeout:g} s × {n} rows) and was killed"
            elif code == 0 or cannot:
                failure = ""
            else:
                failure = (f"exit code {code}" if code > 0 else f"killed by signal {-code}") \
                    + f": {last_line(err_path)}"
        for i in range(n):
            if i in records:
                yield Answer(i, "ok", records[i], seconds)
            else:
                yield Answer(i, "timeout" if code is None else "error", None, seconds,
                             failure or why)

    def _records(self, task: Task, path: str, code: int | None,
                 err_path: str) -> tuple[dict[int, dict[str, Any]], str]:
        """The records the command wrote, by row, and what rows without one are told (after
        a failed run, its finished lines only: it may have been killed mid-line)."""
        if not os.path.exists(path):
            return {}, f"wrote no {{out}} file (stderr: {last_line(err_path)})"
        if code != 0:
            with open(path, "rb") as handle:
                data = handle.read()
            with open(path, "wb") as handle:
                handle.write(data[:data.rfind(b"\n") + 1])
        try:
            return match_output(task.forest, task.instances, path)
        except InputError as exc:  # its message names our temporary file
            return {}, "unreadable output: " + str(exc).replace(path, "{out}")
