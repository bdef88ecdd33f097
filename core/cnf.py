"""The paper's class formulas as CNF: a Tseitin encoding of the NNF circuits of Alg. 3, for
the SAT engine (:mod:`rfcircuits.satengine`).

:class:`CircuitCNF` compiles ``R^c`` for every class with :func:`rfcircuits.classformula.compile_nnf`
(sorting networks over the trees' class formulas) and gives each node of the shared circuit a
literal:

- **features**: an order encoding, one variable ``le_{f,s} ⇔ [X_f <= s]`` for every state but
  the last, chained ``le_{f,s} → le_{f,s+1}``, so that exactly one state holds with no
  cardinality constraint. ``X_f = s`` is ``le_{f,0}`` for the first state, ``¬le_{f,n-2}`` for
  the last and a variable defined as ``le_{f,s} ∧ ¬le_{f,s-1}`` in between: one literal per
  state, which is what an instance's assumptions and an UNSAT core speak of;
- **literals** ``X_f ∈ S``: the disjunction of ``S``'s runs of consecutive states, each run
  ``a..b`` two order literals (``¬le_{f,a-1} ∧ le_{f,b}``, one at either end of the states),
  or the negation of the same for the complement of ``S`` when that has fewer runs;
- **gates**: ``v ⇔ ∧ children`` and ``v ⇔ ∨ children``, both directions, so that every class
  formula can be asserted and denied (``¬R^d`` for the decision's reasons, ``R^t`` for
  contrastive explanations, and under ties ``all`` the two are not complements).

The numbers are the circuit's: ``O(S + k²·n log² n)`` clauses for ``n`` trees of total size
``S`` and ``k`` classes. Building is linear in the circuit and iterative (node ids ascend in
a topological order), with no recursion.

What the SAT oracle encodes instead (trees by reachability, votes by totalizers over the
leaves) is in docs/algorithms.md: the two share the forest model and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Sized

from rfcircuits.classformula import compile_nnf
from rfcircuits.forest import Forest, check_ties, mask_blocks
from rfcircuits.nnf import AND, CONST, LIT, TRUE


class CircuitCNF:
    """The class formulas of a forest under a tie policy, encoded per goal.

    ``state[f][s]`` is the literal of ``X_f = s`` (None for a feature with one state, which
    no formula mentions); the features' variables come first and every goal uses the same
    ones. :meth:`goal` gives the clauses under which a literal means ``R^c`` (``positive``)
    or ``¬R^c``: the features' clauses, the definitions of the literals below ``R^c`` and its
    gates' clauses in that one direction (Plaisted–Greenbaum: asserting the goal literal
    makes every model a model of the formula), numbered from ``feature_vars + 1`` on. One
    solver per goal holds only that class's circuit, so its decisions never wander into
    other classes' comparisons, and its models are as long as its own circuit.
    ``nnf_nodes`` is the size of the whole circuit; ``comparison`` is how it compares soft
    votes (:func:`rfcircuits.classformula.compile_nnf`'s).
    """

    def __init__(self, forest: Forest, ties: str = "first",
                 progress: Callable[[int, int, Sized], None] | None = None,
                 comparison: str = "auto") -> None:
        check_ties(ties)
        self.forest = forest
        self.ties = ties
        self._features = _Clauses(0)  # the features' variables and clauses
        self._le: list[list[int]] = []
        self.state: list[list[int] | None] = []
        for feature in forest.features:
            self._feature(feature.n_states)
        #: The features' variables are 1 .. feature_vars.
        self.feature_vars = self._features.top
        comp = compile_nnf(forest, ties, progress=progress, comparison=comparison)
        #: The circuit: ``nnf``'s node ``roots[c]`` is ``R^c``.
        self.nnf = comp.nnf
        self.roots = comp.roots
        self.nnf_nodes = len(comp.nnf.reachable(comp.roots))

    def goal(self, c: int, positive: bool) -> tuple[int, list[list[int]], int]:
        """``(g, clauses, n_vars)``: under the clauses, ``g`` implies ``R^c`` (``positive``)
        or ``¬R^c``, and every assignment of the features satisfying that formula extends to
        one where ``g`` holds; the clauses use variables 1 .. ``n_vars``. Linear in the class
        formula's circuit."""
        nnf = self.nnf
        out = _Clauses(self.feature_vars)
        out.clauses.extend(list(cl) for cl in self._features.clauses)
        lit: dict[int, int] = {}
        sign = 1 if positive else -1
        true = 0
        for n in nnf.reachable([self.roots[c]]):
            kind, args = nnf.kind[n], nnf.args[n]
            if kind == CONST:
                if not true:
                    true = out.var()
                    out.clauses.append([true])
                lit[n] = true if n == TRUE else -true
            elif kind == LIT:
                lit[n] = self._literal(args[0], args[1], out)
            else:
                v = lit[n] = out.var()
                children = [lit[ch] for ch in args]
                if (kind == AND) == positive:  # v -> all children (AND), or not v -> none (OR)
                    out.clauses.extend([-sign * v, sign * ch] for ch in children)
                else:  # v -> some child (OR), or not v -> not every child (AND)
                    out.clauses.append([-sign * v] + [sign * ch for ch in children])
        g = lit[self.roots[c]]
        return (g if positive else -g), out.clauses, out.top

    def member(self, f: int, mask: int, top: int) -> tuple[int, list[list[int]], int]:
        """``(literal, clauses, top)``: a literal equivalent to ``X_f ∈ mask`` under the
        clauses, for a goal whose variables end at ``top`` (the new last variable third)."""
        into = _Clauses(top)
        literal = self._literal(f, mask, into)
        return literal, into.clauses, into.top

    def state_of(self, model: Sequence[int], f: int) -> int:
        """The state of feature ``f`` in a solver's model (its order variables' values)."""
        le = self._le[f]
        for s, v in enumerate(le):
            if model[v - 1] > 0:
                return s
        return len(le)

    def _feature(self, n: int) -> None:
        """Order variables, state literals and clauses of a feature with ``n`` states."""
        if n < 2:
            self._le.append([])
            self.state.append(None)
            return
        into = self._features
        le = [into.var() for _ in range(n - 1)]
        into.clauses.extend([-a, b] for a, b in zip(le, le[1:]))
        states = [le[0]]
        for s in range(1, n - 1):
            v = into.var()
            into.clauses += [[-v, le[s]], [-v, -le[s - 1]], [v, -le[s], le[s - 1]]]
            states.append(v)
        states.append(-le[-1])
        self._le.append(le)
        self.state.append(states)

    def _run(self, f: int, a: int, b: int, into: _Clauses) -> int:
        """The literal of ``a <= X_f < b`` (a run of consecutive states)."""
        le, n = self._le[f], len(self._le[f]) + 1
        if b == a + 1:
            return self.state[f][a]  # type: ignore[index]
        if a == 0:
            return le[b - 1]
        if b == n:
            return -le[a - 1]
        return into.define(True, [-le[a - 1], le[b - 1]])

    def _literal(self, f: int, mask: int, into: _Clauses) -> int:
        """The literal of ``X_f ∈ mask``: its runs or-ed, or the complement's negated."""
        full = (1 << (len(self._le[f]) + 1)) - 1
        runs = list(mask_blocks(mask))
        other = list(mask_blocks(full & ~mask))
        if len(other) < len(runs):
            return -into.define(False, [self._run(f, a, b, into) for a, b in other])
        return into.define(False, [self._run(f, a, b, into) for a, b in runs])


class _Clauses:
    """Clauses being written, with the last variable used; definitions made once (a literal
    or a run that several nodes use)."""

    def __init__(self, top: int) -> None:
        self.top = top
        self.clauses: list[list[int]] = []
        self._defined: dict[tuple[bool, tuple[int, ...]], int] = {}

    def var(self) -> int:
        self.top += 1
        return self.top

    def define(self, conj: bool, children: list[int]) -> int:
        """A variable equivalent to the ∧ (``conj``) or ∨ of the children's literals (both
        directions: literals occur under either polarity)."""
        if len(children) == 1:
            return children[0]
        key = (conj, tuple(children))
        if key not in self._defined:
            v = self._defined[key] = self.var()
            sign = 1 if conj else -1  # ∨ is the ∧ of the negations, negated
            self.clauses.extend([-sign * v, sign * c] for c in children)
            self.clauses.append([sign * v] + [-sign * c for c in children])
        return self._defined[key]
