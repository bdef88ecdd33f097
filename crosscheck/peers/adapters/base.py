"""The adapter interface: how another explainer is plugged into ``verify-peer``, ``fuzz
--adapter`` and the pytest plugin.

An adapter runs one explainer (the *peer*) on a :class:`Task` — a random forest, given both
as our :class:`~rfcircuits.forest.Forest` and as the fitted scikit-learn model it was imported
from, with the rows to explain — and yields one :class:`Answer` per row: an explanation record
(the JSON object ``verify`` reads, docs/formats.md#verify-input: SPEC field names, literals
with ``states``, ``interval`` or ``range``) or the peer's failure (``error``, ``timeout``).

It also *declares what the peer promises* for each field it answers (:class:`Promise`): the
grader (:mod:`rfcircuits.crosscheck.peers.promises`) holds the peer to those promises only, and
reports every other property our definitions have as a difference of definition, never as
wrong:

- ``guarantee``: ``formal`` (every item is claimed to be correct: a failure is a broken
  promise) or ``heuristic`` (items are claims the tool does not prove, as Anchors' rules:
  the report counts how many hold formally);
- ``minimal``: ``none``, ``conditions`` (no threshold condition of a term can be dropped: the
  subset-minimality of PyXAI and of most SAT-based explainers), ``features`` (no item on a
  proper subset of its features: our SR / NR / CE minimality) or ``prime`` (our GSR / GNR
  primality);
- ``answers``: ``one`` (some items) or ``all`` (the complete set, so completeness is graded).

``ties`` says how the peer decides a vote tie: ``first`` (the lowest class index among the
tied ones wins, scikit-learn's ``argmax``), ``all`` (every tied class is a decision) or
``strict`` (the peer's reasons make the predicted class beat every other strictly, while it
predicts as ``first``: PyXAI on more than two classes).

Two optional attributes say which decision the peer explains. ``votes`` (:data:`VOTES`;
``hard`` when absent): ``hard``, the trees' majority vote (PyXAI's and Anchors' promise,
RFxpl's default mode), or ``soft``, the decision ``predict`` makes (the sum of the leaves'
class probabilities, or a boosted model's scores): the task's forest is imported with these
votes (:func:`adapter_votes`). ``peer_model(task)``: the peer's own model of that forest when
it is not the exact one (RFxpl's weighted-vote mode rounds leaf probabilities to three
decimals), a :class:`~rfcircuits.crosscheck.peers.modelling.PeerModel` or None; findings that hold
there are differences of definition shown by a world (:func:`adapter_model`). ``library``
(:data:`LIBRARIES`; ``sklearn`` when absent): the models the peer explains — scikit-learn
forests, or XGBoost classifiers (PyXAI's boosted-tree explainers), which ``--dataset`` and
``fuzz --adapter`` then train; ``max_classes``: the most classes it takes (``fuzz`` draws no
more).

An adapter is a class with the attributes and methods of :class:`Adapter` (a Protocol:
nothing to inherit); ``ADAPTERS`` names the built-in ones and :func:`load_adapter` also takes
``module:Class`` for one of the user's.
"""

from __future__ import annotations

import importlib
import numbers
import traceback
from collections.abc import Container, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rfcircuits.errors import InputError
from rfcircuits.forest import Forest, Instance

GUARANTEES = ("formal", "heuristic")
MINIMALITIES = ("none", "conditions", "features", "prime")
ANSWERS = ("one", "all")
PEER_TIES = ("first", "all", "strict")
#: The fields an adapter may answer: the set-valued explanation fields and robustness.
PEER_FIELDS = ("sufficient_reasons", "necessary_reasons", "general_sufficient_reasons",
               "general_necessary_reasons", "contrastive", "shortest_flips", "robustness")
#: What an answer's ``status`` may be: ``ok`` (a record), ``none`` (the peer said it has no
#: answer), ``error`` (the peer failed: a crash, an exception, output we cannot read) and
#: ``timeout`` (it overran the task's time limit).
ANSWER_STATUSES = ("ok", "none", "error", "timeout")
#: The votes an adapter may explain (its optional ``votes`` attribute, module docstring).
VOTES = ("hard", "soft")
#: The libraries whose models an adapter may explain (its optional ``library``).
LIBRARIES = ("sklearn", "xgboost")


@dataclass(frozen=True)
class Promise:
    """What a peer guarantees about one field (module docstring)."""

    guarantee: str = "formal"
    minimal: str = "none"
    answers: str = "one"

    def __post_init__(self) -> None:
        for name, allowed in (("guarantee", GUARANTEES), ("minimal", MINIMALITIES),
                              ("answers", ANSWERS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"Promise.{name} must be one of {', '.join(allowed)}, "
                                 f"not {getattr(self, name)!r}")


@dataclass(frozen=True)
class RowOrigin:
    """Where a task's row comes from, for reports: ``index``, its position among the data's
    rows (from 0, as ``X[index]`` or ``DataFrame.iloc[index]``; None for a world that is no
    data row) and ``where``, how a person finds it (``rows.csv, line 43``)."""

    index: int | None
    where: str


@dataclass
class Task:
    """What a peer is asked to explain: ``forest`` (our model of ``model``, the fitted
    scikit-learn ``RandomForestClassifier``; its classes are ``forest.classes`` in the order of
    ``model.classes_``), the training data ``X_train``/``y_train`` (raw values and class
    indices; Anchors samples from them), the ``rows`` to explain (raw values) with their states
    ``instances``, a ``seed`` for peers that draw at random and ``timeout``, the seconds the
    peer may take per row; ``origins`` says where each row comes from (none: reports name rows
    by their position only)."""

    forest: Forest
    model: Any
    X_train: np.ndarray
    y_train: np.ndarray
    rows: np.ndarray
    instances: list[Instance]
    seed: int = 0
    timeout: float = 60.0
    feature_names: list[str] = field(default_factory=list)
    origins: list[RowOrigin] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.feature_names:
            self.feature_names = [f.name for f in self.forest.features]


@dataclass
class Answer:
    """The peer's answer for row ``index`` of the task: ``record`` is an explanation record
    when ``status`` is ``ok``; ``seconds`` is the peer's own time for the row; ``error`` says
    what failed."""

    index: int
    status: str
    record: dict[str, Any] | None = None
    seconds: float = 0.0
    error: str = ""

    def __post_init__(self) -> None:
        if self.status not in ANSWER_STATUSES:
            raise ValueError(f"Answer.status must be one of {', '.join(ANSWER_STATUSES)}, "
                             f"not {self.status!r}")


@runtime_checkable
class Adapter(Protocol):
    """One explainer under test (module docstring)."""

    #: The name reports and repro files give the peer.
    name: str
    #: How the peer decides a vote tie (:data:`PEER_TIES`).
    ties: str
    #: Per field it answers (:data:`PEER_FIELDS`), what it promises.
    promises: Mapping[str, Promise]

    def version(self) -> str:
        """The peer's version, for reports (raise :class:`PeerUnavailable` when it is not
        installed)."""
        ...

    def explain(self, task: Task) -> Iterator[Answer]:
        """One answer per row of ``task``, in any order, each as soon as it is known."""
        ...


def protocol_error(value: Any, rows: int, seen: Container[int]) -> str:
    """What is wrong with one value an adapter's ``explain`` yielded for a task of ``rows``
    rows, ``seen`` being the rows already answered ('' when it keeps the protocol: an
    :class:`Answer` for a new row)."""
    if not isinstance(value, Answer):
        return f"explain yielded a {type(value).__name__}, not an Answer"
    if not isinstance(value.index, numbers.Integral) or not 0 <= value.index < rows:
        return f"an answer for row index {value.index!r}, but the task has {rows} rows"
    if value.index in seen:
        return f"row index {value.index} answered twice (the first answer is graded)"
    return ""


class PeerUnavailable(InputError):
    """The peer is not installed or not configured (exit 2, with how to install it)."""


#: Built-in adapters: name → ``module:Class`` and the options it is built with (imported only
#: when asked for). PyXAI's reason kinds promise different things, so each is one adapter.
ADAPTERS: dict[str, tuple[str, dict[str, Any]]] = {
    "pyxai": ("rfcircuits.crosscheck.peers.adapters.pyxai:PyxaiAdapter",
              {"kind": "sufficient_reason"}),
    "pyxai-minimal": ("rfcircuits.crosscheck.peers.adapters.pyxai:PyxaiAdapter",
                      {"kind": "minimal_sufficient_reason"}),
    "pyxai-majoritary": ("rfcircuits.crosscheck.peers.adapters.pyxai:PyxaiAdapter",
                         {"kind": "majoritary_reason"}),
    "pyxai-minimal-majoritary": ("rfcircuits.crosscheck.peers.adapters.pyxai:PyxaiAdapter",
                                 {"kind": "minimal_majoritary_reason"}),
    "pyxai-contrastive": ("rfcircuits.crosscheck.peers.adapters.pyxai:PyxaiAdapter",
                          {"kind": "minimal_contrastive_reason"}),
    "pyxai-bt": ("rfcircuits.crosscheck.peers.adapters.pyxai:PyxaiBoostedAdapter",
                 {"kind": "tree_specific_reason"}),
    "pyxai-bt-direct": ("rfcircuits.crosscheck.peers.adapters.pyxai:PyxaiBoostedAdapter",
                        {"kind": "direct_reason"}),
    "pyxai-bt-contrastive": ("rfcircuits.crosscheck.peers.adapters.pyxai:PyxaiBoostedAdapter",
                             {"kind": "minimal_contrastive_reason"}),
    "anchors": ("rfcircuits.crosscheck.peers.adapters.anchors:AnchorsAdapter", {}),
    "rfxpl": ("rfcircuits.crosscheck.peers.adapters.rfxpl:RfxplAdapter", {}),
    "rfxpl-maxsat": ("rfcircuits.crosscheck.peers.adapters.rfxpl:RfxplAdapter", {"mode": "maxsat"}),
    "solbert": ("rfcircuits.crosscheck.peers.adapters.solbert:SolbertAdapter", {}),
    "command": ("rfcircuits.crosscheck.peers.adapters.command:CommandAdapter", {}),
}


def check_adapter(adapter: Any) -> Any:
    """``adapter`` itself, after checking it declares what :class:`Adapter` asks for (a
    TypeError naming what is wrong otherwise)."""
    name = getattr(adapter, "name", type(adapter).__name__)
    if not isinstance(adapter, Adapter):
        lacks = [a for a in ("name", "ties", "promises", "version", "explain")
                 if not hasattr(adapter, a)]
        raise TypeError(f"adapter {name!r} lacks {', '.join(lacks)} (see "
                        "rfcircuits.crosscheck.peers.adapters.base.Adapter)")
    if adapter.ties not in PEER_TIES:
        raise TypeError(f"adapter {name!r}: ties must be one of {', '.join(PEER_TIES)}, "
                        f"not {adapter.ties!r}")
    if adapter_votes(adapter) not in VOTES:
        raise TypeError(f"adapter {name!r}: votes must be one of {', '.join(VOTES)}, not "
                        f"{adapter.votes!r}")
    if adapter_library(adapter) not in LIBRARIES:
        raise TypeError(f"adapter {name!r}: library must be one of {', '.join(LIBRARIES)}, "
                        f"not {adapter.library!r}")
    if not adapter.promises:
        raise TypeError(f"adapter {name!r} promises nothing: declare a Promise per field")
    for key, promise in adapter.promises.items():
        if key not in PEER_FIELDS:
            raise TypeError(f"adapter {name!r}: {key!r} is not a field an adapter may answer "
                            f"({', '.join(PEER_FIELDS)})")
        if not isinstance(promise, Promise):
            raise TypeError(f"adapter {name!r}: the promise of {key!r} is not a Promise")
    return adapter


def error_text(exc: BaseException) -> str:
    """``Type: message (at dir/file.py:line in function)``: a peer's exception with the
    innermost frame that raised it, so that a report tells a peer's own failure from the
    adapter's without a traceback."""
    text = f"{type(exc).__name__}: {exc}"
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        where = "/".join(last.filename.replace("\\", "/").split("/")[-2:])
        text += f" (at {where}:{last.lineno} in {last.name})"
    return text


def adapter_votes(adapter: Any) -> str:
    """The votes the adapter's peer explains: its ``votes``, else ``hard`` (module
    docstring)."""
    return getattr(adapter, "votes", "hard")


def adapter_library(adapter: Any) -> str:
    """The library whose models the adapter's peer explains: its ``library``, else
    ``sklearn`` (module docstring)."""
    return getattr(adapter, "library", "sklearn")


def adapter_model(adapter: Any, task: Task) -> Any:
    """The peer's own model of the task's forest (a
    :class:`~rfcircuits.crosscheck.peers.modelling.PeerModel`), when the adapter declares one."""
    model_of = getattr(adapter, "peer_model", None)
    return None if model_of is None else model_of(task)


def load_adapter(spec: str, **options: Any) -> Any:
    """The adapter named ``spec`` (:data:`ADAPTERS`) or ``module:Class`` (a class of the
    user's, importable from the current environment), constructed with ``options``; InputError
    naming what cannot be loaded."""
    target, defaults = ADAPTERS.get(spec, (spec, {}))
    options = {**defaults, **options}
    if ":" not in target:
        raise InputError(f"--adapter: unknown adapter {spec!r} (built in: "
                         f"{', '.join(ADAPTERS)}; or give module:Class)")
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(f"--adapter {spec}: cannot import {module_name!r}: {exc}") from None
    cls = getattr(module, class_name, None)
    if cls is None:
        raise InputError(f"--adapter {spec}: module {module_name!r} has no {class_name!r}")
    try:
        return check_adapter(cls(**options))
    except TypeError as exc:
        raise InputError(f"--adapter {spec}: {exc}") from None
