"""The SAT engine: exact explanations from the paper's NNF class formulas (Alg. 1–3) with
incremental SAT calls, for forests whose decision graphs do not fit.

The class formulas are compiled once per forest and tie policy as NNF circuits and encoded
to CNF (:class:`rfcircuits.cnf.CircuitCNF`). Each *goal* — ``¬R^d`` for the reasons of a
decision ``d``, ``R^t`` for contrastive explanations towards ``t`` — gets its own solver,
built on first use and kept for every instance; an instance enters only as assumptions
(its states on the features a query fixes), so nothing piles up between instances but the
solver's learnt clauses. Per instance:

- **decision and votes**: from the trees (:class:`rfcircuits.forest.Forest`);
- **SRs and NRs** together, by dualize and advance on ``¬R^d`` (:mod:`rfcircuits.dualize`):
  the SRs are its minimal blockers, the NRs its minimal freers;
- **CEs** for each class ``t`` the instance is not in: the minimal freers of ``R^t``
  (with two classes under ties ``first``, ``R^t = ¬R^d``: the NRs);
- **robustness**: the least ``k`` for which a world outside Δ differs from ``x`` on at most
  ``k`` features (a totalizer over one selector per feature, an instance's link to it
  switched on by an activation literal); then every freer of that size, by blocking each
  one found: the shortest NR sets;
- **shortest flips**: the shortest GNRs on those sets (:mod:`rfcircuits.flipgrid`);
- GSRs and GNRs are not computed by this engine (:data:`NOT_COMPUTED`).

Enumerations stop at a per-instance time limit, shared among the instance's tasks by weight
(what one leaves goes to the next), and at a number of items per field; a field cut short
is listed in the explanation's ``incomplete``, and every item in it is still exact.
:meth:`SatEngine.sufficient_reasons` streams SRs as a generator. :meth:`SatEngine.one_sr`
(one SR by deletion, shrunk by UNSAT cores) and :meth:`SatEngine.shortest_sr` (a smallest
SR, by implicit hitting sets) answer single questions.

Solvers are MiniSat 2.2 through PySAT: about as fast as CaDiCaL on these calls and, unlike
CaDiCaL in PySAT, interruptible at a time limit (docs/decisions.md).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence, Sized
from typing import TYPE_CHECKING

from rfcircuits._engine_abc import Timings
from rfcircuits.cnf import CircuitCNF
from rfcircuits.dualize import BLOCKER, Freers, dualize, shrink_freer
from rfcircuits.errors import InputError
from rfcircuits.explanation import ALL_WHAT, Explanation
from rfcircuits.flipgrid import atom_of, shortest_gnrs
from rfcircuits.forest import Forest, Instance, check_ties
from rfcircuits.forest import mask_states as bits
from rfcircuits.interrupts import interruptible
from rfcircuits.terms import Term, simple, simple_terms

if TYPE_CHECKING:
    from pysat.card import ITotalizer


#: The ``what`` keys this engine does not compute (the decision-graph engine does).
NOT_COMPUTED = ("gsr", "gnr")
#: Default per-instance limits: seconds for all of an instance's enumerations, and items
#: per enumerated field.
LIMIT_SECONDS = 10.0
LIMIT_ITEMS = 10_000
SOLVER = "minisat22"


class OutOfTime(Exception):
    """A goal's time limit passed (between calls, or interrupting one)."""


class _Goal:
    """A solver holding one goal's clauses (``R^c`` or ``¬R^c``), with its literal."""

    def __init__(self, cnf: CircuitCNF, c: int, positive: bool) -> None:
        self.literal, clauses, self.n_vars = cnf.goal(c, positive)
        from pysat.solvers import Solver  # PySAT loads with the SAT engine's first goal only

        self.solver = Solver(name=SOLVER, bootstrap_with=clauses)
        # every variable, in a clause or not, gets a value in models and a phase
        self.solver.add_clause([self.n_vars, -self.n_vars])
        self.deadline = math.inf
        self._selectors: list[int] = []  # per feature, "may differ from the instance"
        self._counter: ITotalizer | None = None

    def solve(self, assumptions: list[int]) -> bool:
        """One call under the goal's time limit (OutOfTime when it has passed)."""
        if time.perf_counter() >= self.deadline:
            raise OutOfTime
        answer = self.solver.solve_limited(assumptions=assumptions, expect_interrupt=True)
        if answer is None:
            raise OutOfTime
        return answer

    @contextlib.contextmanager
    def until(self, deadline: float) -> Iterator[None]:
        """Calls inside stop at ``deadline`` (a running call is interrupted)."""
        self.deadline = deadline
        timer = None
        if deadline < math.inf:
            timer = threading.Timer(max(0.0, deadline - time.perf_counter()),
                                    self.solver.interrupt)
            timer.daemon = True
            timer.start()
        try:
            yield
        finally:
            if timer is not None:
                timer.cancel()
                timer.join()
                self.solver.clear_interrupt()
            self.deadline = math.inf

    def counter(self, n: int) -> tuple[list[int], list[int]]:
        """``(selectors, at_least)``: one selector per feature and ``at_least[k]`` true when
        more than ``k`` selectors are (a totalizer, added on first use)."""
        if self._counter is None:
            from pysat.card import ITotalizer

            self._selectors = [self.new_var() for _ in range(n)]
            with interruptible():  # PySAT's encoders catch SIGINT
                self._counter = ITotalizer(lits=self._selectors, ubound=n, top_id=self.n_vars)
            self.n_vars = max(self.n_vars, self._counter.top_id)
            self.solver.append_formula(self._counter.cnf.clauses)
        return self._selectors, self._counter.rhs

    def new_var(self) -> int:
        """A variable no clause of this goal uses yet."""
        self.n_vars += 1
        return self.n_vars


class _Instance:
    """Queries about one instance on one goal: which features a world found differs on."""

    def __init__(self, goal: _Goal, cnf: CircuitCNF, x: Instance) -> None:
        self.goal = goal
        self.x = x
        self.features = [f for f, s in enumerate(cnf.state) if s is not None]
        self.universe = sum(1 << f for f in self.features)
        self.fix = [cnf.state[f][x[f]] if cnf.state[f] is not None else 0  # type: ignore[index]
                    for f in range(len(x))]
        # worlds found stay at x where the goal lets them: fewer deviations to shrink away
        goal.solver.set_phases([self.fix[f] for f in self.features])
        self._worlds: list[int] = []  # deviations of the worlds found
        self._blockers: list[int] = []  # fixed sets found to block (UNSAT cores)
        self._core = 0

    def assume(self, fixed: int) -> list[int]:
        return [self.goal.literal] + [self.fix[f] for f in bits(fixed)]

    def deviations(self, among: int) -> int:
        """The features of ``among`` on which the solver's last model leaves ``x``."""
        model = self.goal.solver.get_model()
        out = 0
        for f in bits(among):
            lit = self.fix[f]
            if (model[abs(lit) - 1] > 0) != (lit > 0):
                out |= 1 << f
        return out

    def oracle(self, fixed: int) -> int | None:
        """None when fixing ``fixed`` to ``x`` blocks the goal, else a world's deviations.

        Blocking is monotone, so earlier answers decide many queries without a call: a world
        found whose deviations avoid ``fixed`` frees it, and a blocker found (an UNSAT
        call's core) inside ``fixed`` blocks it."""
        allowed = self.universe & ~fixed
        for world in reversed(self._worlds):
            if not world & fixed:
                return world
        for blocker in self._blockers:
            if not blocker & allowed:
                self._core = blocker
                return None
        if not self.goal.solve(self.assume(fixed)):
            used = {abs(v) for v in self.goal.solver.get_core() or ()}
            self._core = sum(1 << f for f in bits(fixed) if abs(self.fix[f]) in used)
            self._blockers.append(self._core)
            return None
        world = self.deviations(allowed)
        self._worlds.append(world)
        return world

    def core(self) -> int:
        """A blocker inside the set the last blocked query fixed (its UNSAT core)."""
        return self._core

    def __enter__(self) -> _Instance:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._active:  # the instance's links to the counter are retired for good
            self.goal.solver.add_clause([-self._active])

    _active = 0

    def at_most(self, k: int, fixed: int = 0) -> list[int]:
        """Assumptions: the goal, ``fixed`` at ``x``, and at most ``k`` features elsewhere
        changed (the goal's counter, linked to this instance on first use)."""
        selectors, at_least = self.goal.counter(len(self.x))
        if not self._active:
            self._active = self.goal.new_var()
            self.goal.solver.append_formula([[-self._active, selectors[f], self.fix[f]]
                                             for f in self.features])
        bound = [-at_least[k]] if k < len(at_least) else []
        return self.assume(fixed) + [self._active] + bound

    def exclude(self, d: int) -> None:
        """Bound calls (:meth:`at_most`) find no world changing every feature of ``d``."""
        selectors, _ = self.goal.counter(len(self.x))
        self.goal.solver.add_clause([-self._active] + [-selectors[f] for f in bits(d)])


def _minimal_blocker(q: _Instance, fixed: int) -> int:
    """A minimal blocker inside the blocker ``fixed``: each feature dropped in turn while
    the rest still blocks, the set cut to the core of every UNSAT answer."""
    if q.oracle(fixed) is not None:  # pragma: no cover - callers pass blockers
        raise AssertionError("not a blocker")
    fixed &= q.core()
    for f in bits(fixed):
        if fixed >> f & 1 and q.oracle(fixed & ~(1 << f)) is None:
            fixed = q.core() & fixed & ~(1 << f)
    return fixed


class SatEngine:
    """Explanations of a forest's decisions by SAT calls on its NNF class formulas.

    Parameters
    ----------
    forest : Forest
    ties : {"first", "all"}
    limit_seconds : float or None
        Seconds an instance's enumerations may take in all (None: no limit).
    limit_items : int or None
        Items an enumerated field may hold (None: no limit).
    progress : callable, optional
        Called as the NNF circuits compile (:func:`rfcircuits.classformula.compile_nnf`).
    """

    name = "sat"

    def __init__(self, forest: Forest, ties: str = "first", *,
                 limit_seconds: float | None = LIMIT_SECONDS,
                 limit_items: int | None = LIMIT_ITEMS,
                 progress: Callable[[int, int, Sized], None] | None = None,
                 comparison: str = "auto") -> None:
        check_ties(ties)
        if limit_seconds is not None and not limit_seconds > 0:
            raise InputError(f"limit_seconds must be positive or None, not {limit_seconds!r}")
        if limit_items is not None and limit_items < 1:
            raise InputError(f"limit_items must be positive or None, not {limit_items!r}")
        self.forest = forest
        self.ties = ties
        self.limit_seconds = limit_seconds
        self.limit_items = limit_items
        self._progress = progress
        #: How the circuits compare soft votes (:func:`rfcircuits.classformula.soft_comparison`).
        self.comparison = comparison
        self._cnf: CircuitCNF | None = None
        self._goals: dict[tuple[int, bool], _Goal] = {}

    @property
    def cnf(self) -> CircuitCNF:
        """The class formulas' CNF (compiled on first use)."""
        if self._cnf is None:
            self._cnf = CircuitCNF(self.forest, self.ties, self._progress, self.comparison)
        return self._cnf

    def compile(self, negated: bool = False) -> None:
        """Compile the class formulas now (and, with ``negated``, build every goal's solver)."""
        self.cnf  # the property compiles on first use
        for c in range(len(self.forest.classes)) if negated else ():
            self._goal(c, False)
            self._goal(c, True)

    def _goal(self, c: int, positive: bool) -> _Goal:
        if (c, positive) not in self._goals:
            self._goals[c, positive] = _Goal(self.cnf, c, positive)
        return self._goals[c, positive]

    # -- single questions ------------------------------------------------------------------

    def holds(self, c: int, x: Instance, positive: bool = True) -> bool:
        """The CNF's verdict on ``x ⊨ R^c`` (``positive``) or ``x ⊭ R^c``: whether that goal
        is satisfiable with every feature fixed to its state in ``x`` (the checks compare it
        with the trees' votes)."""
        q = _Instance(self._goal(c, positive), self.cnf, x)
        return q.oracle(q.universe) is not None

    def one_sr(self, x: Instance) -> Term:
        """One sufficient reason of the decision on ``x``: all features fixed, then each
        dropped while the rest still blocks ``¬Δ``, the set cut to the core of every UNSAT
        answer. ``O(#features)`` calls."""
        q = _Instance(self._goal(self.forest.decision(x), False), self.cnf, x)
        return simple(x, _minimal_blocker(q, q.universe))

    def shortest_sr(self, x: Instance, seconds: float | None = None) -> tuple[Term, bool]:
        """``(term, proved)``: a sufficient reason of the fewest features, by implicit hitting
        sets, and True; or, when ``seconds`` run out first, the shortest SR found by then
        (an SR all the same) and False.

        A candidate meeting every NR found so far is checked; when it does not block, the
        world found gives a new NR. Greedy candidates come first (they find NRs without a
        MaxSAT call, and each one that blocks, shrunk to an SR, is a smaller bound); a
        smallest hitting set of the NRs (``Hitman``, MaxSAT) then either reaches the bound,
        which proves the best SR found shortest, or is checked in turn. The time limit
        interrupts solver calls and is checked between MaxSAT calls (one is not
        interrupted); the first SR (:meth:`one_sr`'s) is always found."""
        from pysat.examples.hitman import Hitman

        start = time.perf_counter()
        with _Instance(self._goal(self.forest.decision(x), False), self.cnf, x) as q, \
                Hitman(htype="sorted") as hitman, interruptible():  # MaxSAT catches SIGINT
            best = _minimal_blocker(q, q.universe)
            found = Freers()
            deadline = math.inf if seconds is None else start + seconds
            try:
                with q.goal.until(deadline):
                    while True:
                        if time.perf_counter() >= deadline:  # steps answered from the cache
                            raise OutOfTime
                        h = found.greedy_hitting()
                        optimal = h.bit_count() >= best.bit_count()
                        if optimal:
                            h = sum(1 << (f - 1) for f in hitman.get() or ())
                            if h.bit_count() >= best.bit_count():
                                return simple(x, best), True
                        world = q.oracle(h)
                        if world is None:
                            if optimal:
                                return simple(x, h), True
                            best = _minimal_blocker(q, h)
                            continue
                        d = shrink_freer(world & q.universe & ~h, q.universe, q.oracle)
                        found.add(d)
                        hitman.hit([f + 1 for f in bits(d)])
            except OutOfTime:
                return simple(x, best), False

    def sufficient_reasons(self, x: Instance) -> Iterator[Term]:
        """The sufficient reasons of the decision on ``x``, yielded as they are found (no
        limit: stop the generator to stop)."""
        return self._stream(x, self.forest.decision(x), False, BLOCKER)

    def necessary_reasons(self, x: Instance) -> Iterator[Term]:
        """The necessary reasons (clauses) of the decision on ``x``, yielded as found."""
        return self._stream(x, self.forest.decision(x), False, not BLOCKER)

    def contrastive(self, x: Instance, t: int) -> Iterator[Term]:
        """The contrastive explanations (clauses) of ``x`` towards class ``t`` (one ``x`` is
        not in), yielded as found."""
        return self._stream(x, t, True, not BLOCKER)

    def _stream(self, x: Instance, c: int, positive: bool, kind: bool) -> Iterator[Term]:
        with _Instance(self._goal(c, positive), self.cnf, x) as q:
            for found, items in dualize(q.universe, q.oracle):
                if found == kind:
                    yield simple(x, items)

    # -- explanations ----------------------------------------------------------------------

    def explain_states(self, x: Instance, what: Sequence[str] = ALL_WHAT,
                       timings: Timings | None = None) -> Explanation:
        """Every requested field for instance ``x`` (state indices), within the limits."""
        forest = self.forest
        what = tuple(k for k in ALL_WHAT if k in what)
        votes = forest.votes(x)
        decision = forest.decision(x)
        member = tuple(forest.classes_of(x, self.ties))
        computed = [k for k in what if k not in NOT_COMPUTED]
        fields: dict[str, object] = {}
        incomplete: set[str] = set()
        if computed:
            run = _Run(self, x, decision, member, set(computed), timings)
            run.go()
            fields, incomplete = run.fields, run.incomplete
        return Explanation(forest, tuple(x), self.ties, tuple(votes), decision, member,
                           tuple(computed), engine=self.name,
                           incomplete=tuple(k for k in computed if k in incomplete),
                           not_computed=tuple(k for k in what if k in NOT_COMPUTED),
                           **fields)  # type: ignore[arg-type]


class _Run:
    """One instance's tasks under its time limit, each given its weight's share of what is
    left (:meth:`go`)."""

    def __init__(self, engine: SatEngine, x: Instance, decision: int, member: tuple[int, ...],
                 wanted: set[str], timings: Timings | None) -> None:
        self.engine, self.x, self.decision, self.wanted = engine, x, decision, wanted
        self.timings = timings
        self.fields: dict[str, object] = {}
        self.incomplete: set[str] = set()
        self.deadline = (math.inf if engine.limit_seconds is None
                         else time.perf_counter() + engine.limit_seconds)
        self.items = engine.limit_items or math.inf
        forest = engine.forest
        self.targets = [t for t in range(len(forest.classes)) if t not in member]
        #: with two classes under ties "first", R^t is ¬R^d: the CEs are the NRs
        self.ce_from_nrs = len(forest.classes) == 2 and engine.ties == "first"
        self.nr_found: list[int] = []
        self.nr_complete = False
        #: robustness (None: no flip, or not known) and the shortest NR sets, as found
        self.r: int | None = None
        self.shortest: list[int] = []
        self.shortest_complete = False
        self.robust_known = False

    def go(self) -> None:
        wanted = self.wanted
        # Robustness and flips first: a few calls that enumerations could starve. Each task
        # then gets its weight's share of the time left (what one leaves goes to the next);
        # the decision's own SRs and NRs weigh as much as all CE targets together (CEs read
        # off the NRs take no time of their own).
        ce = [self._contrastive(t) for t in self.targets] if "ce" in wanted else []
        ce_weight = 0 if self.ce_from_nrs else 1
        tasks: list[tuple[Callable[[float], None], int]] = []
        if {"robust", "flips"} & wanted:
            tasks.append((self.robustness, 1))
        if "flips" in wanted:
            tasks.append((self.flips, 1))
        if {"sr", "nr"} & wanted or (ce and self.ce_from_nrs):
            tasks.append((self.reasons, max(1, len(ce) * ce_weight)))
        if "ce" in wanted:
            self.fields["contrastive"] = []
            tasks.extend((task, ce_weight) for task in ce)
        left = sum(weight for _, weight in tasks)
        for task, weight in tasks:
            now = time.perf_counter()
            task(now + (self.deadline - now) * (weight / left if left else 0.0))
            left -= weight
        if "ce" in wanted:
            self.fields["contrastive"] = tuple(self.fields["contrastive"])  # type: ignore[arg-type]

    def _lap(self, name: str, start: float) -> None:
        if self.timings is not None:
            setattr(self.timings, name,
                    getattr(self.timings, name) + time.perf_counter() - start)

    def _enumerate(self, goal: _Goal, deadline: float) -> tuple[list[int], list[int], bool]:
        """``(blockers, freers, complete)`` of ``goal`` at the instance."""
        blockers: list[int] = []
        freers: list[int] = []
        complete = False
        with goal.until(deadline), _Instance(goal, self.engine.cnf, self.x) as q:
            try:
                for kind, items in dualize(q.universe, q.oracle):
                    (blockers if kind == BLOCKER else freers).append(items)
                    if len(blockers) > self.items or len(freers) > self.items:
                        break
                else:
                    complete = True
            except OutOfTime:
                pass
        return blockers, freers, complete

    def reasons(self, deadline: float) -> None:
        start = time.perf_counter()
        blockers, freers, complete = self._enumerate(
            self.engine._goal(self.decision, False), deadline)
        self.nr_found, self.nr_complete = freers, complete
        x = self.x
        for key, name, items in (("sr", "sufficient_reasons", blockers),
                                 ("nr", "necessary_reasons", freers)):
            if key in self.wanted:
                self.fields[name] = simple_terms(x, items[:int(min(self.items, len(items)))])
                if not complete:
                    self.incomplete.add(key)
        self._lap("sr", start)

    def robustness(self, deadline: float) -> None:
        """Robustness and the shortest NR sets by calls bounding the changed features: the
        least bound with a world outside Δ, then every freer of that size."""
        start = time.perf_counter()
        goal = self.engine._goal(self.decision, False)
        with goal.until(deadline), _Instance(goal, self.engine.cnf, self.x) as q:
            try:
                if q.oracle(0) is None:  # no world leaves Δ
                    self.r, self.robust_known = None, True
                    self.shortest_complete = True
                else:
                    k = 1
                    while not goal.solve(q.at_most(k)):
                        k += 1
                    self.r, self.robust_known = k, True
                    if "flips" in self.wanted:  # the shortest NR sets serve flips only
                        while len(self.shortest) < self.items and goal.solve(q.at_most(k)):
                            d = q.deviations(q.universe)
                            self.shortest.append(d)
                            q.exclude(d)
                        else:
                            self.shortest_complete = len(self.shortest) < self.items
            except OutOfTime:
                pass
        if "robust" in self.wanted:
            self.fields["robustness"] = self.r
            if not self.robust_known:
                self.incomplete.add("robust")
        self._lap("robust", start)

    def flips(self, deadline: float) -> None:
        start = time.perf_counter()
        if self.r is None and self.robust_known:
            clauses, complete = [], True
        else:
            cnf = self.engine.cnf
            goal = self.engine._goal(self.decision, False)
            with goal.until(deadline), _Instance(goal, cnf, self.x) as q:
                clauses, complete = shortest_gnrs(
                    cnf.nnf, cnf.roots[self.decision], self.x, self.shortest,
                    cells=lambda features, atoms: self._cells(q, features, atoms))
            complete = complete and self.shortest_complete and self.robust_known
        found = Explanation.sets(clauses)
        if len(found) > self.items:
            found, complete = found[:int(self.items)], False
        self.fields["shortest_flips"] = found
        if not complete:
            self.incomplete.add("flips")
        self._lap("flips", start)

    def _cells(self, q: _Instance, features: list[int], atoms: list[list[int]]
               ) -> list[tuple[int, ...]] | None:
        """The flips on ``features`` (worlds outside Δ changing each of them and no other
        feature) as cells of the grid of ``atoms``, one SAT call per cell, each cell blocked
        once found; None past ``limit_items`` cells or the task's time."""
        cnf, goal = self.engine.cnf, q.goal
        active = goal.new_var()
        assume = q.assume(q.universe & ~sum(1 << f for f in features)) + \
            [-q.fix[f] for f in features] + [active]
        found: list[tuple[int, ...]] = []
        inside: dict[tuple[int, int], int] = {}
        try:
            while goal.solve(assume):
                if len(found) >= self.items:
                    return None
                model = goal.solver.get_model()
                cell = []
                for i, f in enumerate(features):
                    state = cnf.state_of(model, f)
                    cell.append(atom_of(atoms[i], state))
                found.append(tuple(cell))
                block = [-active]
                for i, (f, a) in enumerate(zip(features, cell)):
                    if (f, atoms[i][a]) not in inside:
                        lit, clauses, goal.n_vars = cnf.member(f, atoms[i][a], goal.n_vars)
                        goal.solver.append_formula(clauses)
                        inside[f, atoms[i][a]] = lit
                    block.append(-inside[f, atoms[i][a]])
                goal.solver.add_clause(block)
        except OutOfTime:
            return None
        finally:
            goal.solver.add_clause([-active])
        return found

    def _contrastive(self, t: int) -> Callable[[float], None]:
        def task(deadline: float) -> None:
            start = time.perf_counter()
            if self.ce_from_nrs:
                freers, complete = self.nr_found, self.nr_complete
            else:
                _, freers, complete = self._enumerate(self.engine._goal(t, True), deadline)
            ces = self.fields["contrastive"]
            ces.append((t, simple_terms(self.x, freers[:int(min(self.items, len(freers)))])))  # type: ignore[attr-defined]
            if not complete:
                self.incomplete.add("ce")
            self._lap("ce", start)
            if self.timings is not None:
                self.timings.ce_targets += 1
        return task
