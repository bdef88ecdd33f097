"""Findings that rest on how a peer models the forest: a difference of definition shown by a
world, told apart from a broken promise.

Some peers state their promise for a model of the forest that is not the decision
scikit-learn makes: RFxpl's weighted-vote mode sums each leaf's class probabilities *rounded
to three decimals* and asks its class to beat every other *strictly*. Its answers can then be
exact for its model and wrong for ``predict`` at a near tie: an AXp whose world the exact sums
decide otherwise, a CXp whose only flip is a tie the exact sums break the other way. Such a
finding is not a broken promise (the peer kept the promise it made, for the model it made it
for), but it is no mere note either: a user of the peer gets a wrong answer about the model.

An adapter that knows its peer's model says so (its ``peer_model(task)``, a
:class:`PeerModel`: the forest with the peer's weights, over the same states, and the peer's
tie rule). :class:`ModelView` grades a finding again there, the peer's item as given: when
the promise holds for the peer's model, the finding is of its own kind, ``definition``, with
a world that shows the two models apart (:class:`ModelWitness`: the world, the exact sums and
the class they decide, the peer's sums and the classes that win under its rule), *confirmed*
by evaluating both forests' trees at that world. Which world, per verdict:

- an item not sufficient / not valid (a term): the world that escapes it in the exact sums,
  where the peer's sums keep the class;
- a term not minimal (a smaller item is valid in the exact sums), when the peer's model finds
  the item minimal: a world of the smaller item that the peer's sums decide otherwise;
- a clause not necessary / not reaching its target: a world freeing the clause's features
  that leaves the class (reaches the target) in the peer's sums and not in the exact ones;
- a clause not minimal (a flip with fewer of its features), when the peer's model finds it
  minimal: that flip, which the peer's sums do not make;
- an item of ours the peer lacks (completeness): a world where the two models decide apart
  and that shows the item is not one of the peer's (not sufficient, or not minimal, for it).

Every finding regraded so is counted apart from the broken promises; the exit code ignores
it, as it ignores findings that rest only on states no float32 input reaches
(:mod:`rfcircuits.crosscheck.peers.unreachable`), which are tried first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rfcircuits.forest import Forest, Instance, classes_from_votes, instance_to_json
from rfcircuits.terms import Term
from rfcircuits.crosscheck.peers.minimality import condition_minimal
from rfcircuits.crosscheck.oracles.sat import SatOracle

#: The tie rules a peer's model may decide by: ``first`` (numpy's argmax) or ``strict``
#: (its class must beat every other strictly; a tie is no class).
MODEL_TIES = ("first", "strict")
#: Fields whose items are terms, and fields whose items are clauses of instance literals.
TERMS = frozenset({"sufficient_reasons", "general_sufficient_reasons"})
CLAUSES = frozenset({"necessary_reasons", "contrastive"})
#: Verdicts of validity, of flipping, and of minimality.
VALID = frozenset({"sufficient", "valid"})
FLIPS = frozenset({"necessary", "reaches"})
MINIMALITY = frozenset({"minimal", "conditions", "variable_minimal", "prime"})


@dataclass(frozen=True)
class PeerModel:
    """How a peer models a forest: ``forest``, the task's forest (same features, states and
    trees) with the peer's leaf weights and initial scores; ``ties``, its rule
    (:data:`MODEL_TIES`); ``what``, one sentence saying how it differs from the exact sums
    (for reports); ``show(sums)``, the peer's sums as it computes them, one text per class."""

    forest: Forest
    ties: str
    what: str
    show: Callable[[Sequence[int]], list[str]]

    def __post_init__(self) -> None:
        if self.ties not in MODEL_TIES:
            raise ValueError(f"PeerModel.ties must be one of {', '.join(MODEL_TIES)}, "
                             f"not {self.ties!r}")


def winners(votes: Sequence[int], ties: str) -> list[int]:
    """The classes that win with these sums: under ``first`` and ``all`` as the library says
    (:func:`~rfcircuits.forest.classes_from_votes`), under ``strict`` the class that beats every
    other strictly (none on a tie)."""
    if ties != "strict":
        return classes_from_votes(votes, ties)
    best = max(votes)
    return [votes.index(best)] if list(votes).count(best) == 1 else []


@dataclass
class ModelWitness:
    """A world where the exact sums and the peer's model decide apart, showing that a finding
    rests on the peer's model (module docstring): ``what`` it shows, the ``world``, the exact
    sums there (``exact``, as float64) with the class they decide (``decided``, under the
    tie policy graded), the peer's sums (``peer``, as it computes them) with the classes that
    win under its rule (``peer_wins``); ``reason``, how the peer's model differs; and
    ``confirmed``: both forests' trees, evaluated at the world, bear it out."""

    what: str
    world: Instance
    exact: dict[str, float]
    decided: list[str]
    peer: dict[str, str]
    peer_wins: list[str]
    reason: str
    confirmed: bool

    def to_json(self, forest: Forest) -> dict[str, Any]:
        return {"what": self.what, "world": instance_to_json(forest, self.world),
                "exact_sums": self.exact, "exact_classes": self.decided,
                "peer_sums": self.peer, "peer_classes": self.peer_wins,
                "confirmed": self.confirmed}

    def text(self, forest: Forest, peer_ties: str) -> str:
        world = ", ".join(f"{k}: {v}" for k, v in instance_to_json(forest, self.world).items())
        exact = ", ".join(f"{c} {v!r}" for c, v in self.exact.items())
        peer = ", ".join(f"{c} {v}" for c, v in self.peer.items())
        wins = ", ".join(self.peer_wins) or ("no class wins strictly" if peer_ties == "strict"
                                             else "none")
        return (f"    {self.what}: world {{{world}}}\n"
                f"      exact sums {exact} → class {', '.join(self.decided)}\n"
                f"      the peer's sums {peer} → {wins}"
                + ("" if self.confirmed else " (not borne out by the trees)"))


class ModelView:
    """The task's ``forest`` beside the peer's ``model`` of it (module docstring); ``exact``
    is the grading oracle (the task's forest under ``ties``, the policy graded)."""

    def __init__(self, forest: Forest, model: PeerModel, exact: SatOracle, ties: str) -> None:
        if [f.n_states for f in model.forest.features] != \
                [f.n_states for f in forest.features] or \
                len(model.forest.trees) != len(forest.trees):
            raise ValueError("a peer's model must have the forest's states and trees")
        self.forest = forest
        self.model = model
        self.exact = exact
        self.ties = ties
        self._sat: SatOracle | None = None

    @property
    def sat(self) -> SatOracle:
        """The oracle of the peer's model under its rule."""
        if self._sat is None:
            self._sat = SatOracle(self.model.forest, self.model.ties)
        return self._sat

    def close(self) -> None:
        if self._sat is not None:
            self._sat.close()

    def witness(self, name: str, promise: str, x: Instance, item: Any, target: int | None,
                smaller: Term | None, world: Instance | None) -> ModelWitness | None:
        """The world showing that a finding (our verdict ``promise`` fails for ``item`` of
        field ``name``; ``smaller``: the smaller valid item found; ``world``: the evidence
        world; ``promise`` ``completeness``: ``item`` is ours, the peer lacks it) rests on
        the peer's model, or None when it does not (module docstring). At most a few SAT
        calls on the peer's model."""
        if not isinstance(item, tuple) or self.model.forest.decision(x) != \
                self.forest.decision(x):
            return None  # the peer's model decides the instance otherwise: no common ground
        peer = self.sat
        features = [f for f, _ in item]
        kind = "sr" if name == "sufficient_reasons" else "gsr"
        found: tuple[Instance | None, str, bool] | None = None  # world, what, exact keeps Δ
        if name in TERMS and promise in VALID:
            if self._valid(name, x, item):
                found = world, "a world of the item that the exact sums decide otherwise", \
                    False
        elif name in TERMS and promise in MINIMALITY and smaller is not None:
            if self._keeps(name, promise, x, item):
                found = peer.counterexample(x, kind, smaller), \
                    "a world of the smaller item that the peer's sums decide otherwise", True
        elif name in CLAUSES and promise in FLIPS:
            found = peer.freeing_world(x, features, target), \
                "a flip the item allows in the peer's sums, not in the exact ones", True
        elif name in CLAUSES and promise == "minimal" and world is not None:
            check = peer.check_nr(x, item) if target is None else peer.check_ce(x, target, item)
            if check["minimal"]:
                found = world, "a flip with fewer of its features, in the exact sums only", \
                    False
        elif promise == "completeness":
            found = self._lacked(name, x, item)
        if found is None or found[0] is None:
            return None
        w, what, exact_keeps = found
        return self._witness(x, w, what, exact_keeps, target)

    def at_instance(self, x: Instance) -> ModelWitness | None:
        """The instance itself as the witness, when the peer's model does not give it the
        class the exact sums decide (under the peer's rule): a peer that explains only what
        its model decides then has nothing to explain, and rightly answers nothing."""
        if self.forest.decision(x) in winners(self.model.forest.votes(x), self.model.ties):
            return None
        return self._witness(x, x, "the instance itself", True, None)

    def _valid(self, name: str, x: Instance, term: Term) -> bool:
        if name == "sufficient_reasons":
            return self.sat.check_sr(x, term)["sufficient"]
        return self.sat.check_gsr(x, term)["valid"]

    def _keeps(self, name: str, promise: str, x: Instance, term: Term) -> bool:
        """Whether the minimality ``promise`` holds for the term in the peer's model."""
        if promise == "conditions":
            return self._valid(name, x, term) and \
                condition_minimal(self.sat, self.model.forest, x, term)[0]
        if name == "sufficient_reasons":
            return self.sat.check_sr(x, term)["minimal"]
        verdict = self.sat.check_gsr(x, term)
        return bool(verdict["valid"] and verdict.get(promise))

    def _lacked(self, name: str, x: Instance,
                item: Term) -> tuple[Instance | None, str, bool] | None:
        """For an SR or NR of ours the peer lacks: the world showing it is none of the
        peer's (not sufficient / necessary for its model, or not minimal there)."""
        peer, exact = self.sat, self.exact
        features = [f for f, _ in item]
        if name == "sufficient_reasons":
            verdict = peer.check_sr(x, item)
            if not verdict["sufficient"]:
                return peer.counterexample(x, "sr", item), \
                    "a world of the item that the peer's sums decide otherwise", True
            if not verdict["minimal"]:
                smaller = next(item[:k] + item[k + 1:] for k in range(len(item))
                               if peer.check_sr(x, item[:k] + item[k + 1:])["sufficient"])
                return exact.counterexample(x, "sr", smaller), \
                    "a world of a smaller item, sufficient for the peer's sums, that the " \
                    "exact sums decide otherwise", False
        elif name == "necessary_reasons":
            verdict = peer.check_nr(x, item)
            if not verdict["necessary"]:
                return exact.freeing_world(x, features), \
                    "a flip the item allows in the exact sums, not in the peer's", False
            if not verdict["minimal"]:
                return next((w for k in range(len(features))
                             if (w := peer.freeing_world(x, features[:k] + features[k + 1:]))
                             is not None), None), \
                    "a flip with fewer of its features, in the peer's sums only", True
        return None

    def _witness(self, x: Instance, w: Instance, what: str, exact_keeps: bool,
                 target: int | None) -> ModelWitness:
        """The witness at world ``w``: the exact sums keep the class (reach ``target``) when
        ``exact_keeps``, and the peer's sums do the opposite — confirmed when both forests'
        trees say so."""
        d = self.forest.decision(x)
        goal = d if target is None else target
        exact_votes, peer_votes = self.forest.votes(w), self.model.forest.votes(w)
        decided = classes_from_votes(exact_votes, self.ties)
        wins = winners(peer_votes, self.model.ties)
        # "keeps": in Δ (no target) or in R^target (a contrastive target)
        exact_in = goal in decided
        peer_in = goal in wins
        confirmed = exact_in != peer_in and exact_in == (exact_keeps if target is None
                                                        else not exact_keeps)
        classes = self.forest.classes
        return ModelWitness(what, w, dict(zip(classes, self.forest.readable_votes(exact_votes))),
                            [classes[c] for c in decided],
                            dict(zip(classes, self.model.show(peer_votes))),
                            [classes[c] for c in wins], self.model.what, confirmed)
