"""Findings that rest only on states no float32 input reaches: a peer's modelling difference,
told apart from its broken promises.

scikit-learn casts its inputs to float32 and compares ``float32(x) <= t`` with float64
thresholds, so two thresholds ``t1 < t2`` with no float32 value between them (0.5099999905
and 0.5100000054) enclose a state ``(t1, t2]`` that no input reaches. Our importer merges
such thresholds (:func:`rfcircuits.sklearn_import.merge_thresholds`): our forest has only the
states real inputs reach, and grading on it is grading on what the model does. A peer that
reads its inputs as float64 (RFxpl, PyXAI) cuts at every threshold, so its answers can be
right about a forest with more states than the model can be in: a necessary reason whose
only flip goes through ``(t1, t2]``, a sufficient reason kept larger because a world there
escapes a smaller one.

:class:`Float64View` grades such a finding again on that forest (the model imported without
merging, :func:`~rfcircuits.sklearn_import.forest_from_sklearn` with ``merge=False``), the
peer's item read there as the peer meant it (an instance literal as the instance's own state,
any other literal as the values it covers): when the promise holds there, and the world that
shows it (a flip the item allows, or a world escaping the smaller item we found) uses a state
no float32 reaches, the finding is ``unreachable`` — its reason (which thresholds enclose no
float32 value, and the adjacent float32 values), the world with the trees' votes and raw
values in it — and counted apart from the broken promises real inputs show. Only verdicts
whose failure can rest on extra states are graded again: a flip that is missing
(``necessary``, ``reaches``), a smaller term that is valid (the minimality of a sufficient
reason or of a general one), and a sufficient or necessary reason of ours that the peer lacks
(``completeness``: not sufficient, or not minimal, on the float64 forest); a world that
escapes an item (``sufficient``, ``valid``), or a smaller clause that frees (the minimality
of a necessary reason), is a real input's world already.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rfcircuits.errors import InputError
from rfcircuits.forest import Forest, Instance, classes_from_votes, float32_floor
from rfcircuits.sklearn_import import forest_from_sklearn
from rfcircuits.terms import Term
from rfcircuits.crosscheck.peers.minimality import condition_minimal
from rfcircuits.crosscheck.oracles.sat import SatOracle
from rfcircuits.crosscheck.differential.strategies import state_value

#: Fields whose literals hold the instance's own state (a peer's "fix this feature").
INSTANCE_FIELDS = frozenset({"sufficient_reasons", "necessary_reasons", "contrastive"})
#: Fields whose items are terms (a world escaping a smaller term refutes its validity).
TERMS = frozenset({"sufficient_reasons", "general_sufficient_reasons"})
#: Verdicts a smaller valid item refutes (minimality), and those a missing flip refutes.
MINIMALITY = frozenset({"minimal", "conditions", "variable_minimal", "prime"})
FLIPS = frozenset({"necessary", "reaches"})


@dataclass(frozen=True)
class Gap:
    """A state of the float64 forest that holds no float32 value: ``(low, high]`` of
    ``feature``, between the adjacent float32 values ``below`` (not above ``low``) and
    ``above`` (above ``high``)."""

    feature: str
    state: str
    low: float
    high: float
    below: float
    above: float

    def reason(self) -> str:
        return (f"thresholds {self.low!r} and {self.high!r} of {self.feature} enclose no "
                f"float32 value (adjacent float32 values {self.below!r} and {self.above!r})")

    def to_json(self) -> dict[str, Any]:
        return {"feature": self.feature, "state": self.state, "thresholds": [self.low, self.high],
                "float32_below": self.below, "float32_above": self.above}


@dataclass
class Witness:
    """What shows a finding rests on unreachable states: the ``world`` of the float64 forest
    (a flip the peer's item allows, or a world escaping the smaller item), the features where
    it differs from the instance (``changed``: their states, ``values``: a float64 value in
    each, ``float32``: what scikit-learn reads of that value), its ``votes`` and the class it
    goes to (``decision``), the ``gaps`` it goes through, and ``confirmed``: the trees' own
    votes bear the world out."""

    what: str
    world: Instance
    changed: dict[str, str]
    values: dict[str, float]
    float32: dict[str, float]
    votes: dict[str, int | float]
    decision: str
    gaps: list[Gap]
    confirmed: bool

    def reason(self) -> str:
        return "; ".join(g.reason() for g in self.gaps)

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "changed": self.changed, "values": self.values,
                "float32": self.float32, "votes": self.votes, "decision": self.decision,
                "unreachable": [g.to_json() for g in self.gaps], "confirmed": self.confirmed}

    def text(self) -> str:
        changed = ", ".join(f"{k}: {v}" for k, v in self.changed.items())
        votes = ", ".join(f"{c}: {v}" for c, v in self.votes.items())
        gaps = {g.feature for g in self.gaps}
        values = ", ".join(f"{k} = {v!r}" + (f" (float32 reads {self.float32[k]!r})"
                                               if k in gaps else "")
                           for k, v in self.values.items())
        return (f"    read as float64 (every threshold a cut), {self.what}: the instance with "
                f"{{{changed}}}, values {values} → votes {votes}, class {self.decision}"
                + ("" if self.confirmed else " (not borne out by the trees' votes)") + "\n"
                + "\n".join(f"    {g.reason()}" for g in self.gaps))


class Float64View:
    """The forest as an explainer reading float64 inputs sees it (module docstring), beside
    ``forest``, ours of the same scikit-learn ``model``; built by :meth:`of`."""

    def __init__(self, forest: Forest, wide: Forest, ties: str) -> None:
        self.forest = forest
        self.wide = wide
        self.ties = ties
        # per feature, our state → (the one float64 state of it a float32 reaches, all of them)
        self.states: list[list[tuple[int, list[int]]]] = [
            _cover(ours.thresholds or (), theirs.thresholds or ())
            for ours, theirs in zip(forest.features, wide.features)]
        self._sat: SatOracle | None = None

    @classmethod
    def of(cls, forest: Forest, model: Any, ties: str) -> Float64View | None:
        """The view of ``model`` (our ``forest`` imported from it), or None when no threshold
        was merged (every state holds a float32 value: nothing to tell apart) or the forest is
        not the model's."""
        if model is None or forest.input_dtype != "float32":
            return None
        names, classes = [f.name for f in forest.features], list(forest.classes)
        try:
            ours = forest_from_sklearn(model, names, classes, votes=forest.voting)
            wide = forest_from_sklearn(model, names, classes, merge=False, votes=forest.voting)
        except InputError:  # not a model we import: nothing to grade again
            return None
        if ours.features != forest.features or \
                [f.n_states for f in wide.features] == [f.n_states for f in forest.features]:
            return None
        return cls(forest, wide, ties)

    def close(self) -> None:
        if self._sat is not None:
            self._sat.close()

    @property
    def sat(self) -> SatOracle:
        if self._sat is None:
            self._sat = SatOracle(self.wide, self.ties)
        return self._sat

    def instance(self, x: Instance) -> Instance:
        """``x`` in the float64 forest: each state the float32 value reaches."""
        return tuple(self.states[f][s][0] for f, s in enumerate(x))

    def item(self, name: str, x: Instance, item: Term) -> Term:
        """A peer's item in the float64 forest: in fields of instance literals, a literal
        holding the instance's state is that state; other literals hold every float64 state
        inside theirs (the same values)."""
        out = []
        for f, mask in item:
            if name in INSTANCE_FIELDS and mask == 1 << x[f]:
                wide = 1 << self.states[f][x[f]][0]
            else:
                wide = sum(1 << w for s, (_, inside) in enumerate(self.states[f])
                           if mask >> s & 1 for w in inside)
            out.append((f, wide))
        return tuple(out)

    def gaps(self, world: Instance) -> list[Gap]:
        """The states of a float64 world that no float32 value reaches."""
        out = []
        for f, s in enumerate(world):
            feature = self.wide.features[f]
            ts = feature.thresholds or ()
            low = ts[s - 1] if s > 0 else -np.inf
            high = ts[s] if s < len(ts) else np.inf
            if not _reached(low, high):
                below = float32_floor(high)
                above = float(np.nextafter(np.float32(below), np.float32(np.inf)))
                out.append(Gap(feature.name, feature.states[s], low, high, below, above))
        return out

    def witness(self, name: str, promise: str, x: Instance, item: Any,
                target: int | None, smaller: Term | None) -> Witness | None:
        """The float64 world on which a finding (our verdict ``promise`` fails for ``item``
        of field ``name``; ``smaller``: the smaller item we found valid) turns out to rest on
        unreachable states, or None when it does not (module docstring). ``promise``
        ``completeness``: ``item`` is ours, the peer lacks it."""
        if not isinstance(item, tuple):
            return None
        sat, x64 = self.sat, self.instance(x)
        decided = self.forest.decision(x)
        item64 = self.item(name, x, item)
        features = [f for f, _ in item]
        world, what = None, ""
        if promise in FLIPS:
            world = sat.freeing_world(x64, features, target)
            what = "a flip the item allows"
        elif promise in MINIMALITY and smaller is not None and name in TERMS \
                and self._keeps(name, promise, x64, item64):
            world = sat.counterexample(x64, "sr" if name == "sufficient_reasons" else "gsr",
                                       self.item(name, x, smaller))
            what = "a world that escapes the smaller item"
        elif promise == "completeness" and name == "sufficient_reasons" \
                and not sat.check_sr(x64, item64)["sufficient"]:
            world = sat.counterexample(x64, "sr", item64)
            what = "a world that escapes the item, so the peer rightly leaves it out"
        elif promise == "completeness" and name == "necessary_reasons":
            world = next((w for k in range(len(features))
                          if (w := sat.freeing_world(x64, features[:k] + features[k + 1:]))
                          is not None), None)
            what = "a flip with fewer features, so the item is not minimal for the peer"
        if world is None:
            return None
        gaps = self.gaps(world)
        if not gaps:
            return None
        votes = self.wide.votes(world)
        won = classes_from_votes(votes, self.ties)
        confirmed = (target in won) if promise in FLIPS and target is not None \
            else decided not in won
        wide = self.wide.features
        moved = [f for f, s in enumerate(world) if s != x64[f]]
        values = {wide[f].name: state_value(wide[f], world[f], "float64") for f in moved}
        return Witness(what, world, {wide[f].name: wide[f].states[world[f]] for f in moved},
                       values, {k: float(np.float32(v)) for k, v in values.items()},
                       dict(zip(self.wide.classes, self.wide.readable_votes(votes))),
                       self.wide.classes[won[0]], gaps,
                       confirmed)

    def _keeps(self, name: str, promise: str, x64: Instance, item64: Term) -> bool:
        """Whether the minimality ``promise`` holds for the item in the float64 forest (else
        it fails on real inputs too, whatever the smaller item found)."""
        if promise == "conditions":
            return condition_minimal(self.sat, self.wide, x64, item64)[0]
        if name == "sufficient_reasons":
            return self.sat.check_sr(x64, item64)["minimal"]
        return bool(self.sat.check_gsr(x64, item64).get(promise))


def _reached(low: float, high: float) -> bool:
    """Some finite float32 ``v`` has ``low < v <= high``."""
    top = float32_floor(high) if np.isfinite(high) else float(np.finfo(np.float32).max)
    return top > low


def _cover(ours: Sequence[float], theirs: Sequence[float]) -> list[tuple[int, list[int]]]:
    """Per state of a feature with thresholds ``ours`` (merged), the float64 states (between
    ``theirs``, every threshold) inside it, and the one of them a float32 value reaches."""
    at = {t: k for k, t in enumerate(theirs)}
    bounds = [-1] + [at[t] for t in ours] + [len(theirs)]
    out = []
    for a in range(len(ours) + 1):
        inside = list(range(bounds[a] + 1, bounds[a + 1] + 1))
        reached = [w for w in inside if _reached(theirs[w - 1] if w > 0 else -np.inf,
                                                 theirs[w] if w < len(theirs) else np.inf)]
        out.append((reached[0] if reached else inside[-1], inside))
    return out
