"""The worked examples as forests, with their answers: Susan (docs/semantics.md §5), the flip
example (§9) and the decision graph of the paper's Figure 1.

Expected sets are written as ``{feature: [state names]}`` per term/clause, exactly as the
paper's §2/§4 state them; :func:`expected` turns them into canonical tuples.
"""

from __future__ import annotations

from typing import Any

from rfcircuits.explanation import Explanation
from rfcircuits.forest import Forest, forest_from_json, parse_instance
from rfcircuits.terms import Term

SUSAN_FOREST = {
    "format": "rfcircuits.forest/1",
    "classes": ["no", "yes"],
    "features": [
        {"name": "Age", "states": ["<55", ">=55"]},
        {"name": "Weight", "states": ["over", "under", "normal"]},
        {"name": "BType", "states": ["A", "B", "AB", "O"]},
    ],
    "trees": [{"nodes": [
        {"feature": "Age", "branches": [[[0], 1], [[1], 2]]},
        {"class": "no"},
        {"feature": "Weight", "branches": [[[0], 3], [[1], 4], [[2], 5]]},
        {"class": "yes"},
        {"feature": "BType", "branches": [[[0, 1, 2], 3], [[3], 1]]},
        {"feature": "BType", "branches": [[[0, 1], 3], [[2, 3], 1]]},
    ]}],
}
SUSAN = {"Age": ">=55", "BType": "A", "Weight": "over"}
SUSAN_ANSWERS = {
    "decision": "yes",
    "sufficient_reasons": [{"Age": [">=55"], "BType": ["A"]}, {"Age": [">=55"], "Weight": ["over"]}],
    "necessary_reasons": [{"Age": [">=55"]}, {"Weight": ["over"], "BType": ["A"]}],
    "general_sufficient_reasons": [{"Age": [">=55"], "BType": ["A", "B"]},
                                   {"Age": [">=55"], "Weight": ["over"]}],
    "general_necessary_reasons": [{"Age": [">=55"]},
                                  {"BType": ["A", "B", "AB"], "Weight": ["over"]},
                                  {"BType": ["A", "B"], "Weight": ["over", "under"]}],
    "robustness": 1,
    "shortest_flips": [{"Age": [">=55"]}],
}

FLIP_FOREST = {
    "format": "rfcircuits.forest/1",
    "classes": ["out", "in"],
    "features": [{"name": "X", "states": ["1", "2", "3"]}, {"name": "Y", "states": ["1", "2", "3"]}],
    "trees": [{"nodes": [
        {"feature": "X", "branches": [[[0, 1], 1], [[2], 2]]},
        {"class": "in"},
        {"feature": "Y", "branches": [[[0, 1], 1], [[2], 3]]},
        {"class": "out"},
    ]}],
}
FLIP = {"X": "1", "Y": "1"}
FLIP_ANSWERS = {
    "decision": "in",
    "necessary_reasons": [{"X": ["1"], "Y": ["1"]}],
    "general_necessary_reasons": [{"X": ["1", "2"], "Y": ["1", "2"]}],
    "robustness": 2,
    "shortest_flips": [{"X": ["1", "2"], "Y": ["1", "2"]}],
}
#: The only shortest flip of the flip example (X=3 ∧ Y=3).
FLIP_WORLDS = [{"X": "3", "Y": "3"}]

FIGURE1_FOREST = {
    "format": "rfcircuits.forest/1",
    "classes": ["c1", "c2", "c3"],
    "features": [{"name": n, "states": [f"{n.lower()}{i}" for i in (1, 2, 3)]} for n in "XYZ"],
    "trees": [{"nodes": [
        {"feature": "Y", "branches": [[[0], 1], [[1, 2], 2]]},
        {"class": "c1"},
        {"feature": "X", "branches": [[[0], 3], [[1, 2], 4]]},
        {"feature": "Y", "branches": [[[2], 1], [[1], 5]]},
        {"feature": "Z", "branches": [[[0, 1], 5], [[2], 6]]},
        {"class": "c2"},
        {"class": "c3"},
    ]}],
}
#: Model counts of C^1, C^2, C^3 (paper Fig. 1).
FIGURE1_COUNTS = {"c1": 12, "c2": 11, "c3": 4}


def forest(doc: dict[str, Any]) -> Forest:
    return forest_from_json(doc, source="worked example")


def expected(forest_: Forest, items: list[dict[str, list[str]]]) -> tuple[Term, ...]:
    """Canonical terms/clauses from ``{feature: [state names]}`` dictionaries."""
    out = []
    for item in items:
        lits = []
        for name, states in item.items():
            f = forest_.feature_index[name]
            lits.append((f, sum(1 << forest_.features[f].states.index(s) for s in states)))
        out.append(tuple(sorted(lits)))
    return Explanation.sets(out)


def instance(forest_: Forest, obj: dict[str, Any]) -> tuple[int, ...]:
    return parse_instance(forest_, obj)
