"""The pytest plugin: another project runs rfcircuits' golden corpus against its explainer with
one line of configuration.

Installing rfcircuits registers this module as a pytest plugin (entry point ``pytest11``,
name ``rfcircuits``). It does nothing until a project names its adapter (a class with the
attributes and methods of :class:`rfcircuits.crosscheck.peers.adapters.base.Adapter`, loaded by
:func:`~rfcircuits.crosscheck.peers.adapters.base.load_adapter`; the project's rootdir is put at the
end of ``sys.path`` to find it)::

    # pytest.ini (or [tool.pytest.ini_options] in pyproject.toml, or [tool:pytest] in setup.cfg)
    [pytest]
    rfcircuits_adapter = myadapter:MyAdapter

Then ``pytest`` runs one test per case of the corpus and field the adapter promises
(``adapter.promises``), ``rfcircuits-corpus::<case>::<field>``. Each option is also a
command-line flag, which wins over the ini file:

=========================  ==============================  ====================================
ini                        command line                    meaning
=========================  ==============================  ====================================
``rfcircuits_adapter``     ``--rfcircuits-adapter``        ``module:Class`` or a built-in name
``rfcircuits_corpus``      ``--rfcircuits-corpus``         a corpus directory (default: the one
                                                           installed with rfcircuits)
``rfcircuits_cases``       ``--rfcircuits-cases``          globs of case ids (default: all)
``rfcircuits_timeout``     ``--rfcircuits-timeout``        seconds per case (default 60)
``rfcircuits_repro_dir``   ``--rfcircuits-repro-dir``      where repro files go (default
                                                           ``.rfcircuits-repro`` in the rootdir)
=========================  ==============================  ====================================

The corpus is collected when pytest collects its default set of tests (no paths on the
command line: ``testpaths`` or the current directory) or when an ``--rfcircuits-*`` flag is
given, so that ``pytest tests/test_one.py`` stays quick; ``-k`` selects among its tests
(``-k spec-susan``, ``-k "not rfcircuits-corpus"``), and ``-p no:rfcircuits`` turns the plugin
off. A relative ``rfcircuits_corpus`` or ``rfcircuits_repro_dir`` is relative to the ini
file's directory in the ini file and to the current directory on the command line; give the
flags with ``=`` (``--rfcircuits-corpus=DIR``): pytest looks for its rootdir before it knows
a plugin's flags, and takes a separate ``DIR`` for a path to test.

**Votes**: a case whose forest has soft votes (the manifest's ``forest.votes``) is skipped
unless the adapter says it explains them (``votes = "soft"``; absent, ``hard``: the trees'
majority vote, another decision than the case's). A peer of soft votes runs every case: a
forest of hard votes is one of soft votes whose leaves weigh 1 for their class.

**What the adapter is given**, per case, in one call of ``explain`` (answers are kept for
every field of the case): a :class:`~rfcircuits.crosscheck.peers.adapters.base.Task` whose
``forest`` is the case's forest (our format: corpus forests are not scikit-learn models, so
``model`` is None and ``X_train``/``y_train`` are empty), ``instances`` its instances (state
indices) and ``rows`` a raw value per feature standing for each state (:func:`raw_rows`: a
value inside the state's interval); a categorical feature has no raw value (NaN in ``rows``): an adapter that handles
categorical features reads ``instances`` and ``forest``. ``seed`` is 0 and ``timeout`` is the
per-case limit.

**Grading**: the answers are graded against the adapter's promises by
:func:`~rfcircuits.crosscheck.peers.promises.grade_answers`. A field's test fails when a promise on
it is broken, an item it promises is missing, or our engine and the SAT oracle dispute an
item (a bug of rfcircuits); every field of a case fails when the peer failed on the case (an
exception, a timeout, an answer we cannot read, a row without an answer, a wrong decision or
vote count). The failure names the case, each instance (row, states and the raw values
passed), the item, the promise that broke and its evidence, and the repro file written for
the case (``rfcircuits.repro/1`` with the peer's answers, :mod:`.peer_repro`; removed when
the case passes again).

**Timeouts**: ``explain`` runs in a daemon thread of the test process, and a case whose
answers are not all in after ``rfcircuits_timeout`` seconds fails. The thread cannot be
killed: it runs on in the background (and may still be using the adapter when the next case
starts) until it returns or pytest exits. A subprocess could be killed, but would need the
adapter and its task to be picklable and to import in a fresh interpreter; a thread takes
any adapter as the project configured it, and keeps ``--pdb`` and tracebacks of its code.
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
import sys
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

    from rfcircuits.forest import Forest, Instance
    from rfcircuits.crosscheck.peers.adapters.base import Answer, Task
    from rfcircuits.crosscheck.peers.promises import Finding, PeerReport

#: The options (ini name; the command-line flag is ``--`` and the name with dashes) and their
#: help.
OPTIONS = {
    "rfcircuits_adapter": "run rfcircuits' golden corpus against this adapter of an explainer: "
                          "module:Class (or a built-in adapter's name)",
    "rfcircuits_corpus": "the corpus directory (default: the one installed with rfcircuits)",
    "rfcircuits_cases": "globs of the corpus case ids to run, separated by spaces or commas "
                        "(default: every case)",
    "rfcircuits_timeout": "seconds the adapter may take per case (default 60)",
    "rfcircuits_repro_dir": "directory of the repro files of failing cases (default "
                            ".rfcircuits-repro in the rootdir)",
}
DEFAULT_TIMEOUT = 60.0
DEFAULT_REPRO_DIR = ".rfcircuits-repro"
#: The name of the collector of the corpus's tests, the first part of their node ids.
NODE = "rfcircuits-corpus"
#: Most findings a failure message lists per field (the repro file has them all).
SHOWN = 10


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rfcircuits", "rfcircuits: the golden corpus against an explainer")
    for name, text in OPTIONS.items():
        group.addoption("--" + name.replace("_", "-"), dest=name, default=None, help=text)
        parser.addini(name, text, default="")


def _setting(config: pytest.Config, name: str) -> tuple[str, Path]:
    """An option's value (the command line's, else the ini file's, else "") and the directory
    relative paths in it start from."""
    value = config.getoption(name)
    if value is not None:
        return value, config.invocation_params.dir
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    return str(config.getini(name)).strip(), base


@pytest.hookimpl(tryfirst=True)  # before -k and -m deselect among the items
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    if not _setting(config, "rfcircuits_adapter")[0]:
        return
    flagged = any(config.getoption(name) is not None for name in OPTIONS)
    if config.args_source == pytest.Config.ArgsSource.ARGS and not flagged:
        return
    run = CorpusRun.configure(config)
    corpus = Corpus.from_parent(session, name=NODE, nodeid=NODE, run=run)
    for case in corpus.collect():
        fields = case.collect()
        # reported as collected, so that pytest counts them as it counts the others
        session.ihook.pytest_collectreport(
            report=pytest.CollectReport(case.nodeid, "passed", None, fields))
        items.extend(fields)


# ---------------------------------------------------------------------------------------------
# The configuration of a run


@dataclass
class CorpusRun:
    """What the options say: the adapter (loaded once), the corpus and its cases, the
    timeout and where repro files go."""

    adapter: Any
    version: str
    root: str
    cases: list[dict[str, Any]]
    timeout: float
    repro_dir: Path

    @classmethod
    def configure(cls, config: pytest.Config) -> CorpusRun:
        """Read and check every option (a :class:`pytest.UsageError` names what is wrong)."""
        from rfcircuits.errors import InputError
        from rfcircuits.crosscheck import corpus
        from rfcircuits.crosscheck.peers.adapters.base import load_adapter

        spec = _setting(config, "rfcircuits_adapter")[0]
        try:
            if str(config.rootpath) not in sys.path:  # the project's own adapter module
                sys.path.append(str(config.rootpath))
            adapter = load_adapter(spec)
            version = str(adapter.version())
            value, base = _setting(config, "rfcircuits_corpus")
            root = str(base / value) if value else corpus.installed_root()
            manifest = corpus.load_manifest(root)
        except InputError as exc:
            raise pytest.UsageError(f"rfcircuits plugin: {exc}") from None
        except Exception as exc:  # the adapter's own code failed: its traceback, not ours
            raise pytest.UsageError(f"rfcircuits plugin: the adapter {spec} failed to load:\n"
                                    + _peer_traceback(exc)) from None
        value = _setting(config, "rfcircuits_cases")[0]
        cases = manifest["cases"]
        if value:
            globs = [g for g in re.split(r"[\s,]+", value) if g]
            ids = [e["id"] for e in cases]
            unmatched = [g for g in globs if not any(fnmatch.fnmatchcase(i, g) for i in ids)]
            if unmatched:
                raise pytest.UsageError(f"rfcircuits_cases: {', '.join(unmatched)} matches no "
                                        f"case of the corpus in {root}")
            cases = [e for e in cases if any(fnmatch.fnmatchcase(e["id"], g) for g in globs)]
        value = _setting(config, "rfcircuits_timeout")[0]
        try:
            timeout = float(value) if value else DEFAULT_TIMEOUT
        except ValueError:
            timeout = math.nan
        if not 0 < timeout < math.inf:
            raise pytest.UsageError(f"rfcircuits_timeout: {value!r} is not a positive number "
                                    "of seconds")
        value, base = _setting(config, "rfcircuits_repro_dir")
        repro_dir = base / value if value else config.rootpath / DEFAULT_REPRO_DIR
        return cls(adapter, version, root, cases, timeout, repro_dir)


# ---------------------------------------------------------------------------------------------
# Collection


class Corpus(pytest.Collector):
    """The corpus: one :class:`CorpusCase` per case selected."""

    def __init__(self, *, run: CorpusRun, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run = run

    def collect(self) -> list[CorpusCase]:
        from rfcircuits.crosscheck import corpus

        return [CorpusCase.from_parent(self, name=entry["id"], entry=entry,
                                       path=Path(self.run.root, corpus.CASES, entry["id"]))
                for entry in self.run.cases]


class CorpusCase(pytest.Collector):
    """One case: a :class:`CorpusField` per field the adapter promises; the adapter is run
    and graded once, when the first of them runs, and the outcome is dropped after the
    last."""

    def __init__(self, *, entry: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entry = entry
        self.run: CorpusRun = self.parent.run  # type: ignore[union-attr]
        self._outcome: CaseOutcome | None = None

    def collect(self) -> list[CorpusField]:
        return [CorpusField.from_parent(self, name=name) for name in self.run.adapter.promises]

    def outcome(self) -> CaseOutcome:
        if self._outcome is None:
            self._outcome = run_case(self.run, self.entry)
        return self._outcome

    def teardown(self) -> None:
        self._outcome = None


class CorpusFailure(Exception):
    """A field of a case failed; the message says why (shown without a traceback)."""


class CorpusField(pytest.Item):
    """The test of one field of one case."""

    def runtest(self) -> None:
        from rfcircuits.crosscheck.peers.adapters.base import adapter_votes

        case: CorpusCase = self.parent  # type: ignore[assignment]
        soft = case.entry["forest"].get("votes") == "soft"
        if soft and adapter_votes(case.run.adapter) != "soft":
            pytest.skip("a forest of soft votes; the adapter explains hard votes (declare "
                        "votes = 'soft' if it explains the sums)")
        message = case.outcome().failure(self.name)
        if message:
            raise CorpusFailure(message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:
        if isinstance(excinfo.value, CorpusFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, None, str]:
        return self.path, None, self.nodeid


# ---------------------------------------------------------------------------------------------
# Running and grading a case


def raw_rows(forest: Forest, instances: Sequence[Instance]) -> np.ndarray:
    """A raw value for each state of each instance (rows × features): a value inside each
    numeric state as the forest reads it (:func:`~rfcircuits.crosscheck.differential.strategies.
    state_value`); NaN for a categorical feature."""
    import numpy as np

    from rfcircuits.crosscheck.differential.strategies import world_values

    return np.array([world_values(forest, x) for x in instances], dtype=float).reshape(
        len(instances), len(forest.features))


def _peer_traceback(exc: BaseException) -> str:
    """The traceback of an exception the adapter raised, from the frame below the one of ours
    that caught it."""
    tb = exc.__traceback__
    return "".join(traceback.format_exception(type(exc), exc, tb.tb_next if tb else None))


def call_peer(adapter: Any, task: Task, timeout: float) -> tuple[list[Any], str, str]:
    """The adapter's answers to ``task`` (whatever ``explain`` yielded), run in a daemon
    thread for at most ``timeout`` seconds, and how it ended: ``("", "")``, ``("error",
    the peer's traceback)`` or ``("timeout", what came)``."""
    answers: list[Any] = []
    crash: list[str] = []

    def work() -> None:
        try:
            for answer in adapter.explain(task):
                answers.append(answer)
        except BaseException as exc:  # SystemExit too: any way the peer fails is reported
            crash.append(_peer_traceback(exc))

    thread = threading.Thread(target=work, name=f"rfcircuits peer {adapter.name}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return list(answers), "timeout", (
            f"timed out after {timeout:g} s with {len(answers)} of {len(task.instances)} "
            "answers (the adapter's thread cannot be stopped: it runs on in the background)")
    if crash:
        return answers, "error", crash[0]
    return answers, "", ""


def checked_answers(answers: Sequence[Any],
                    rows: int) -> tuple[list[Answer], list[dict[str, Any]]]:
    """The answers that keep the protocol (an :class:`Answer` per row, each row once) and
    failures for the rest (``row`` counts from 1; None when no row can be named)."""
    from rfcircuits.crosscheck.peers.adapters.base import Answer, protocol_error

    kept: dict[int, Answer] = {}
    failures: list[dict[str, Any]] = []
    for answer in answers:
        problem = protocol_error(answer, rows, kept)
        if not problem:
            kept[answer.index] = answer
            continue
        row = answer.index + 1 if isinstance(answer, Answer) and answer.index in kept else None
        failures.append({"row": row, "status": "error", "error": problem})
    return list(kept.values()), failures


@dataclass
class CaseOutcome:
    """A case's graded answers: the failure message of each field (:meth:`failure`)."""

    case: str
    heading: str = ""
    forest: Forest | None = None
    rows: Any = None
    report: PeerReport | None = None
    problem: str = ""
    repro: str = ""
    messages: dict[str, str] = field(default_factory=dict)

    def failure(self, name: str) -> str:
        """Why the field ``name`` fails ("" when it passes)."""
        if name not in self.messages:
            self.messages[name] = self._failure(name)
        return self.messages[name]

    def _failure(self, name: str) -> str:
        if self.problem:
            return f"{self.heading}, field {name}:\n{self.problem}"
        report, forest = self.report, self.forest
        assert report is not None and forest is not None
        mine = [f for f in report.findings if f.field == name]
        everyone = [f for f in report.findings if f.field not in report.promises]
        if not (mine or everyone or report.failures):
            return ""
        promise = report.promises[name]
        lines = [f"{self.heading}, field {name}",
                 f"peer {report.peer} {report.version} promises {promise.guarantee} items, "
                 f"minimal over {promise.minimal}, {promise.answers} answer"
                 f"{'s' if promise.answers == 'all' else ''}; ties {report.ties}"]
        for failure in report.failures:
            where = "the case" if failure["row"] is None else f"row {failure['row']}"
            lines.append(f"the peer failed on {where} ({failure['status']}): "
                         + failure["error"].rstrip().replace("\n", "\n  "))
        chosen = sorted(mine + everyone, key=lambda f: f.row)
        for kind, one, many in (
                ("broken", "broken promise", "broken promises"),
                ("missing", "item missing", "items missing"),
                ("disputed", "dispute", "disputes")):
            count = sum(f.kind == kind for f in chosen)
            if count:
                lines.append(f"{count} {one if count == 1 else many}" + (
                    " between rfcircuits' engine and its SAT oracle (a bug of rfcircuits: "
                    "please report it)" if kind == "disputed" else ""))
        row = None
        for finding in chosen[:SHOWN]:
            if finding.row != row:
                row = finding.row
                lines.append(self._instance(finding))
            lines.append(finding.text(forest))
        if len(chosen) > SHOWN:
            lines.append(f"… and {len(chosen) - SHOWN} more in the repro file")
        lines.append(f"repro file: {self.repro}")
        return "\n".join(lines)

    def _instance(self, finding: Finding) -> str:
        """The instance of a finding's row as the peer was given it."""
        forest = self.forest
        assert forest is not None
        k = finding.row - 1
        states = ", ".join(f"{f.name} {f.states[s]}"
                           for f, s in zip(forest.features, finding.instance))
        given = f"task.rows[{k}] = [{', '.join(f'{v:g}' for v in self.rows[k])}]" \
            if any(f.is_numeric for f in forest.features) else f"task.instances[{k}]"
        return f"row {finding.row} ({given}): instance {states}"


def run_case(run: CorpusRun, entry: dict[str, Any]) -> CaseOutcome:
    """Run the adapter on a case once, grade its answers and write the repro file of a case
    with a failure."""
    import numpy as np

    from rfcircuits.atomicio import output_dir, write_json
    from rfcircuits.errors import InputError
    from rfcircuits.crosscheck import corpus
    from rfcircuits.crosscheck.peers.adapters.base import Task
    from rfcircuits.crosscheck.peers.repro import peer_repro
    from rfcircuits.crosscheck.peers.promises import grade_answers

    case_id, adapter = entry["id"], run.adapter
    categories = ", ".join(entry.get("categories", []))
    outcome = CaseOutcome(case_id, f"case {case_id}" + (f" ({categories})" if categories else ""))
    try:
        forest, instances = corpus.load_case(run.root, case_id)
    except InputError as exc:
        outcome.problem = f"cannot read the case: {exc}"
        return outcome
    rows = raw_rows(forest, instances)
    task = Task(forest, None, np.empty((0, len(forest.features))), np.empty(0, dtype=int),
                rows, list(instances), seed=0, timeout=run.timeout)
    answers, status, error = call_peer(adapter, task, run.timeout)
    kept, failures = checked_answers(answers, len(instances))
    if status:
        failures.append({"row": None, "status": status, "error": error})
    else:
        answered = {a.index for a in kept}
        failures += [{"row": k + 1, "status": "error", "error": "no answer for this row"}
                     for k in range(len(instances)) if k not in answered]
    report = grade_answers(forest, instances, kept, adapter.name, run.version, adapter.ties,
                           adapter.promises)
    report.failures.extend(failures)
    outcome.forest, outcome.rows, outcome.report = forest, rows, report
    path = run.repro_dir / f"{case_id}.json"
    if report.ok and not report.failures:
        if path.is_file():  # a repro file of the case is of its last failure
            path.unlink()
        return outcome
    try:
        fresh = not os.path.isdir(run.repro_dir)
        output_dir(run.repro_dir)
        if fresh:  # a directory of ours: kept out of git, as pytest keeps .pytest_cache
            with open(run.repro_dir / ".gitignore", "w", encoding="utf-8") as out:
                out.write("# Created by the rfcircuits pytest plugin.\n*\n")
        write_json(path, peer_repro(report, forest, instances, kept))
        outcome.repro = str(path)
    except (OSError, InputError) as exc:
        outcome.repro = f"none: {path} could not be written ({exc})"
    return outcome
