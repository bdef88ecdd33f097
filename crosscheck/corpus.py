"""The golden corpus in ``fixtures/``: cases with oracle-confirmed answers.

Layout (format :data:`CORPUS_FORMAT`)::

    fixtures/MANIFEST.json    format, package versions, and per case: origin, edge-case
                              categories hit, forest size, oracle confirmations, circuit files
    fixtures/README.md        what the corpus holds and how to use it
    fixtures/cases/<id>/forest.json           the forest (rfcircuits.forest/1)
                        instances.jsonl       one instance per line, as state names
                        expected-first.jsonl  one explanation line per instance, every
                        expected-all.jsonl    field, byte-identical to ``rfcircuits explain``
                        circuits/<form>/<ties>/R<c>-<class>.<nnf|dg>.json
                              (small forests: every class, forms nnf, dg-conj, dg, both tie
                              policies, as ``rfcircuits compile --out`` writes them)

Cases (:func:`plan`): the worked examples with every world as an instance; tiny random forests of
:func:`rfcircuits.crosscheck.differential.fuzz.make_case`, selected by seed so that each edge-case
category of :data:`STREAMS` is represented (ties, valid and unsatisfiable class formulas,
single-state re-tests, numeric + categorical features, 2–5 classes, one-tree forests; with soft
votes, exact ties of the weighted sums, near ties, negative decisions, decisive initial scores),
their instances completed by a tied world (soft votes: and a near tie) and a world per decided
class; forests trained with scikit-learn on its bundled datasets (:data:`TRAINED`: random forests
with hard or soft votes, gradient-boosted trees), instances the first test rows. XGBoost and
LightGBM models are left out: the corpus must build without those optional libraries, and neither
promises the same trees bit for bit across platforms and thread counts (their import is tested on
its own, ``tests/test_boosted_import.py``).

:func:`build` writes every expected answer from the native engine and keeps a case only when every
oracle that fits it agrees (:func:`rfcircuits.crosscheck.differential.harness.crosscheck`, both tie
policies) and the BDD oracle finds every circuit file equivalent to its class formula; any
disagreement fails the build, which then writes nothing but repro files. The corpus is built in a
temporary sibling directory and swapped in at the end, so an interrupted build leaves the old
corpus. :func:`check` re-verifies a corpus: the native engine must reproduce every line byte for
byte, circuit files must be equivalent to the BDD oracle's class formulas, and optionally the
oracles re-confirm. Output is deterministic: fixed seeds, canonical JSON, no timings.
``build(keep=True)`` (``corpus build --keep``) adds the cases the corpus lacks and leaves the others
byte for byte, as a newer engine would write some of their files otherwise.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import json
import os
import platform
import random
import shutil
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any

from rfcircuits import __version__
from rfcircuits.atomicio import PARTIAL, atomic_open, current_umask, output_dir, write_json
from rfcircuits.classformula import compile_nnf
from rfcircuits.dgcompile import compile_dg
from rfcircuits.errors import InputError
from rfcircuits.explain import Explainer
from rfcircuits.explanation import WHAT_FIELDS, dumps
from rfcircuits.forest import (TIES, Branching, Forest, Instance, Tree, forest_from_json,
                               instance_to_json, load_forest, load_json_file)
from rfcircuits.formats import circuit_stem
from rfcircuits.inputs import read_instances
from rfcircuits.jsonio import load_json_lines
from rfcircuits.interrupts import reraise_signal
from rfcircuits.progress import Progress
from rfcircuits.terms import terms_json
from rfcircuits.crosscheck.differential import spec_examples
from rfcircuits.crosscheck.differential.fuzz import make_case, repro
from rfcircuits.crosscheck.differential.harness import ORACLES, Report, crosscheck
from rfcircuits.crosscheck.campaigns._backend_abc import Backend
from rfcircuits.crosscheck.campaigns.parallel import open_backend, run_ordered, run_tasks
from rfcircuits.crosscheck.differential.strategies import Limits, all_worlds, tied, with_edge_worlds

CORPUS_FORMAT = "rfcircuits.corpus/1"
MANIFEST = "MANIFEST.json"
README = "README.md"
CASES = "cases"
FOREST_FILE = "forest.json"
INSTANCES_FILE = "instances.jsonl"
FORMS = ("nnf", "dg-conj", "dg")
#: Circuit files are kept for a case only while their total size stays within this budget.
CIRCUIT_BUDGET = 150_000
#: Random candidates tried per selected case before a stream is declared unfillable.
MAX_TRIES_PER_CASE = 50
#: Package versions recorded in the manifest (distribution names).
PACKAGES = ("numpy", "scikit-learn", "dd", "python-sat")


def expected_file(ties: str) -> str:
    """Name of a case's expected explanations under a tie policy."""
    return f"expected-{ties}.jsonl"


def circuit_file(form: str, ties: str, c: int, class_name: str) -> str:
    """Path of a circuit inside a case directory (file name as ``compile --out`` writes it)."""
    extension = "nnf" if form == "nnf" else "dg"
    return f"circuits/{form}/{ties}/{circuit_stem(c, class_name)}.{extension}.json"


def json_text(obj: Any) -> str:
    """A JSON document as :func:`rfcircuits.atomicio.write_json` writes it (forest, circuit files)."""
    return json.dumps(obj, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------
# Which cases


@dataclass(frozen=True)
class Stream:
    """Tiny random forests (``make_case(seed, k, limits)``, k = 0, 1, …) kept while they hit
    ``category``, until ``quota`` cases are selected."""

    name: str
    category: str
    quota: int
    limits: Limits
    seed: int
    retests: bool = False


STREAMS = (
    Stream("tie", "tie", 40, Limits(4, 4, 6, 3, 3), 601),
    Stream("valid", "valid-class", 25, Limits(3, 3, 5, 3, 3), 602),
    Stream("unsat", "unsat-class", 30, Limits(4, 4, 5, 5, 3), 603),
    Stream("retest", "single-state-retest", 35, Limits(4, 4, 5, 3, 4), 604, retests=True),
    Stream("mixed", "mixed-features", 40, Limits(4, 4, 7, 3, 4), 605),
    Stream("one-tree", "one-tree", 30, Limits(4, 5, 1, 4, 5), 606),
    *(Stream(f"classes-{k}", f"classes-{k}", 20, Limits(4, 4, 7, k, 4), 610 + k)
      for k in range(2, 6)),
    # Soft votes (weights of rfcircuits.crosscheck.differential.strategies.SOFT_WEIGHTS): the edge
    # cases of exact sums of float64 weights.
    Stream("soft-tie", "soft-tie", 6, Limits(4, 4, 4, 3, 3, "soft"), 621),
    Stream("soft-near-tie", "near-tie", 6, Limits(4, 3, 5, 3, 3, "soft"), 622),
    Stream("soft-negative", "negative-sum", 6, Limits(4, 4, 4, 3, 3, "soft"), 623),
    Stream("soft-init", "init-decides", 6, Limits(4, 4, 4, 3, 3, "soft"), 624),
)


@dataclass(frozen=True)
class TrainedSpec:
    """A scikit-learn forest on a bundled dataset, restricted to some columns and classes:
    a random forest (``model`` ``rf``) imported with hard or soft ``votes``, or gradient-boosted
    trees (``gb``, ``trees`` stages; soft votes, their only meaning)."""

    dataset: str
    columns: tuple[int, ...]
    labels: tuple[int, ...] | None  # class labels kept (None: all)
    trees: int
    depth: int
    seed: int = 0
    instances: int = 5
    votes: str = "hard"
    model: str = "rf"  # a key of rfcircuits.datasets.TRAINERS

    @property
    def id(self) -> str:
        """E.g. ``trained-digits-x28_36-c0_1-20t-d3-s0`` (columns, classes kept, trees, depth,
        seed), then ``-soft`` for a random forest's soft votes, ``-gb`` for boosted trees."""
        labels = "-c" + "_".join(map(str, self.labels)) if self.labels is not None else ""
        tag = f"-{self.model}" if self.model != "rf" else \
            "-soft" if self.votes == "soft" else ""
        return (f"trained-{self.dataset.replace('_', '-')}-x{'_'.join(map(str, self.columns))}"
                f"{labels}-{self.trees}t-d{self.depth}-s{self.seed}{tag}")


#: Column and class subsets keep each forest tractable for the native engine and for the SAT
#: oracle, and keep the brute force (which fits up to 20 000 worlds but is exponential in the
#: states per feature) either fast or beyond its limit.
TRAINED = (
    TrainedSpec("iris", (0, 1, 2, 3), None, 5, 2),
    TrainedSpec("iris", (0, 1, 2, 3), None, 50, 3),
    TrainedSpec("iris", (0, 1, 2, 3), None, 50, 4),
    TrainedSpec("iris", (2, 3), None, 5, 3),
    TrainedSpec("iris", (2, 3), None, 10, 3),
    TrainedSpec("iris", (2, 3), None, 20, 2),
    TrainedSpec("iris", (0, 2), None, 5, 2),
    TrainedSpec("iris", (0, 1, 2, 3), (1, 2), 5, 2),
    TrainedSpec("iris", (0, 1, 2, 3), (1, 2), 30, 3),
    TrainedSpec("iris", (1, 3), (1, 2), 10, 2),
    TrainedSpec("wine", (0, 6, 9, 12), None, 5, 2),
    TrainedSpec("wine", (0, 6, 9, 12), None, 10, 3),
    TrainedSpec("wine", (0, 6, 9, 12), None, 20, 2),
    TrainedSpec("wine", (0, 6, 9, 12), None, 20, 3),
    TrainedSpec("wine", (0, 6, 9, 12), None, 50, 2),
    TrainedSpec("wine", (6, 9, 12), None, 5, 2),
    TrainedSpec("wine", (9, 12), None, 5, 2),
    TrainedSpec("wine", (0, 1, 6, 9, 10, 12), None, 5, 2),
    TrainedSpec("wine", (0, 1, 6, 9, 10, 12), None, 10, 3),
    TrainedSpec("wine", (0, 6, 9, 12), (0, 1), 5, 2),
    TrainedSpec("wine", (0, 6, 9, 12), (0, 1), 20, 3),
    TrainedSpec("wine", (0, 6, 9, 12), (0, 1), 50, 2),
    TrainedSpec("breast_cancer", (0, 1, 20, 27), None, 5, 2),
    TrainedSpec("breast_cancer", (0, 1, 20, 27), None, 10, 3),
    TrainedSpec("breast_cancer", (0, 1, 20, 27), None, 20, 2),
    TrainedSpec("breast_cancer", (0, 1, 20, 27), None, 50, 2),
    TrainedSpec("breast_cancer", (7, 22, 27), None, 5, 2),
    TrainedSpec("breast_cancer", (21, 27), None, 5, 2),
    TrainedSpec("breast_cancer", (21, 27), None, 50, 4),
    TrainedSpec("breast_cancer", (0, 1, 7, 20, 21, 27), None, 5, 2),
    TrainedSpec("breast_cancer", (0, 1, 7, 20, 21, 27), None, 10, 3),
    TrainedSpec("digits", (20, 28, 36, 43), (0, 1, 7), 5, 2),
    TrainedSpec("digits", (20, 28, 36, 43), (0, 1, 7), 20, 3),
    TrainedSpec("digits", (20, 28, 36, 43), (0, 1, 7), 50, 3),
    TrainedSpec("digits", (21, 26, 34, 42, 53), (3, 5, 8), 5, 2),
    TrainedSpec("digits", (21, 26, 34, 42, 53), (3, 5, 8), 50, 2),
    TrainedSpec("digits", (19, 27, 35, 43), (0, 1, 2, 3), 10, 2),
    TrainedSpec("digits", (19, 27, 35, 43), (0, 1, 2, 3), 20, 3),
    TrainedSpec("digits", (28, 36), (0, 1), 20, 3),
    TrainedSpec("digits", (28, 36), (0, 1), 50, 3),
    TrainedSpec("digits", (20, 28, 36, 43, 44, 21), (0, 1, 2, 3, 4), 5, 2),
    TrainedSpec("digits", (20, 28, 36, 43, 44, 21), (0, 1, 2, 3, 4), 20, 2),
    # Soft votes: the decision predict makes (and one where it is not the hard vote's).
    TrainedSpec("iris", (2, 3), None, 5, 3, votes="soft"),
    TrainedSpec("wine", (9, 12), None, 5, 2, votes="soft"),
    TrainedSpec("breast_cancer", (21, 27), None, 5, 2, votes="soft"),
    TrainedSpec("digits", (28, 36), (0, 1), 10, 3, votes="soft"),
    # Gradient boosting, binary (one score against 0) and multi-class (a tree per class and
    # stage); XGBoost and LightGBM are left out (module docstring).
    TrainedSpec("breast_cancer", (21, 27), None, 5, 2, votes="soft", model="gb"),
    TrainedSpec("wine", (0, 6, 9, 12), (0, 1), 5, 2, votes="soft", model="gb"),
    TrainedSpec("iris", (2, 3), None, 2, 2, votes="soft", model="gb"),
    TrainedSpec("wine", (9, 12), None, 2, 2, votes="soft", model="gb"),
)

#: The worked examples (:mod:`rfcircuits.crosscheck.differential.spec_examples`): forest, instance,
#: title.
EXAMPLE_CASES = {
    "spec-susan": ("SUSAN_FOREST", "SUSAN", "worked example: Susan (paper Fig. 2)"),
    "spec-flip": ("FLIP_FOREST", "FLIP", "worked example: flip (paper §4)"),
    "spec-figure1": ("FIGURE1_FOREST", None, "worked example: Figure 1 decision graph"),
}


@dataclass(frozen=True)
class CaseSpec:
    """A case to build: its id and origin (the manifest's ``origin``, which drives
    :func:`make`)."""

    id: str
    origin: dict[str, Any]


def spec_case(case_id: str) -> CaseSpec:
    """A worked example (:mod:`rfcircuits.crosscheck.differential.spec_examples`) with every
    world."""
    forest_name, instance_name, title = EXAMPLE_CASES[case_id]
    return CaseSpec(case_id, {"kind": "spec", "example": title, "forest": forest_name,
                              "instances": "every world; the example's instance first" if
                              instance_name else "every world"})


def limits_json(limits: Limits) -> dict[str, object]:
    """A stream's limits as its cases record them (``votes`` only when not the default)."""
    doc = asdict(limits)
    if limits.votes == "hard":
        del doc["votes"]
    return doc


def random_case(stream: Stream, k: int) -> CaseSpec:
    """Candidate ``k`` of a stream of tiny random forests."""
    return CaseSpec(f"random-{stream.name}-{k:04d}", {
        "kind": "random", "stream": stream.name,
        "generator": "rfcircuits.crosscheck.differential.fuzz.make_case",
        "seed": stream.seed, "case": k, "limits": limits_json(stream.limits),
        "single_state_retests": stream.retests,
        "instances": "make_case's instances, then a tied world and a world per decided class"})


def trained_case(spec: TrainedSpec) -> CaseSpec:
    """A forest trained on a scikit-learn bundled dataset (names resolved for the manifest;
    ``votes`` and ``model`` only when not the defaults, so that the hard random forests'
    origins stay what they were)."""
    from sklearn import datasets

    from rfcircuits.datasets import TRAINERS

    bunch = getattr(datasets, f"load_{spec.dataset}")()
    labels = spec.labels if spec.labels is not None else tuple(range(len(bunch.target_names)))
    origin = {
        "kind": "trained", "dataset": spec.dataset,
        "loader": f"sklearn.datasets.load_{spec.dataset}", "columns": list(spec.columns),
        "features": [str(bunch.feature_names[c]) for c in spec.columns],
        "labels": list(labels), "classes": [str(bunch.target_names[c]) for c in labels],
        "trainer": f"rfcircuits.datasets.train_forest ({TRAINERS[spec.model]}, 85/15 split)",
        "n_estimators": spec.trees, "max_depth": spec.depth, "random_state": spec.seed,
        "n_instances": spec.instances,
        "instances": "the first distinct test rows (as states)"}
    if spec.votes != "hard":
        origin["votes"] = spec.votes
    if spec.model != "rf":
        origin["model"] = spec.model
    if _versus_hard(origin):
        origin["instances"] += (", then the first world (in the order of the state indices) "
                                "whose soft decision is not the hard vote's, if none of them is")
    return CaseSpec(spec.id, origin)


def _versus_hard(origin: dict[str, Any]) -> bool:
    """Whether a trained case's instances include a world where the soft decision differs
    from the hard vote: a random forest of soft votes (whose leaves' labels are the hard
    vote's)."""
    return origin.get("votes") == "soft" and origin.get("model", "rf") == "rf"


# ---------------------------------------------------------------------------------------------
# Making a case: forest, instances, native answers, categories


@dataclass
class Made:
    """A case's forest and instances, plus facts to record (training quality)."""

    forest: Forest
    instances: list[Instance]
    facts: dict[str, Any] = field(default_factory=dict)


def make(spec: CaseSpec) -> Made:
    """The forest and instances a case's origin describes."""
    origin = spec.origin
    if origin["kind"] == "spec":
        doc = getattr(spec_examples, origin["forest"])
        forest = forest_from_json(doc, source=origin["example"])
        first = EXAMPLE_CASES[spec.id][1]
        head = [spec_examples.instance(forest, getattr(spec_examples, first))] if first else []
        return Made(forest, list(dict.fromkeys(head + all_worlds(forest))))
    if origin["kind"] == "random":
        limits = Limits(**origin["limits"])
        forest, xs = make_case(origin["seed"], origin["case"], limits)
        if origin["single_state_retests"]:
            forest = with_single_state_retests(
                forest, random.Random(f"corpus-retest/{origin['seed']}/{origin['case']}"))
        rng = random.Random(f"corpus-worlds/{origin['seed']}/{origin['case']}")
        return Made(forest, with_edge_worlds(forest, xs, rng))
    return _trained(origin)


def with_single_state_retests(forest: Forest, rng: random.Random) -> Forest:
    """Below (about half of) the branches that leave a single state of their feature feasible,
    insert a node re-testing that feature with one branch on that state (the branches partition
    the feasible states, here a single one)."""
    trees = []
    for tree in forest.trees:
        nodes = list(tree.nodes)
        for k, node in enumerate(tree.nodes):
            if type(node) is not Branching:
                continue
            branches = list(node.branches)
            for b, (mask, child) in enumerate(branches):
                if mask & (mask - 1) == 0 and rng.random() < 0.5:
                    nodes.append(Branching(node.feature, ((mask, child),)))
                    branches[b] = (mask, len(nodes) - 1)
            nodes[k] = Branching(node.feature, tuple(branches))
        trees.append(Tree(tuple(nodes)))
    return forest.with_trees(trees)


def _trained(origin: dict[str, Any]) -> Made:
    import numpy as np
    from sklearn import datasets

    from rfcircuits.datasets import Dataset, train_forest

    bunch = getattr(datasets, f"load_{origin['dataset']}")()
    labels = list(origin["labels"])
    keep = np.isin(bunch.target, labels)
    data = Dataset(origin["dataset"], list(origin["features"]),
                   bunch.data[keep][:, origin["columns"]],
                   np.array([labels.index(v) for v in bunch.target[keep]]),
                   list(origin["classes"]))
    trained = train_forest(data, origin["n_estimators"], origin["max_depth"],
                           origin["random_state"], origin.get("votes", "hard"),
                           origin.get("model", "rf"))
    forest = trained.forest
    instances = list(dict.fromkeys(trained.test_instances))[:origin["n_instances"]]
    if _versus_hard(origin) and all(hard_vote(forest, x) == forest.decision(x)
                                    for x in instances):
        instances.extend(itertools.islice(
            (w for w in itertools.product(*(range(f.n_states) for f in forest.features))
             if hard_vote(forest, w) != forest.decision(w)), 1))
    return Made(forest, instances, {
        "accuracy": round(trained.accuracy, 6), "vote_agreement": round(trained.vote_agreement, 6),
        "test_rows": len(trained.test_instances)})


def native_lines(forest: Forest, instances: Sequence[Instance]) -> dict[str, list[str]]:
    """The native engine's explanation lines, every field, per tie policy."""
    out = {}
    for ties in TIES:
        explainer = Explainer(forest, ties, engine="graphs")
        out[ties] = [explainer.explain_states(x).to_line(engine=False) for x in instances]
    return out


def hard_vote(forest: Forest, x: Instance) -> int:
    """The first class with most trees whose leaf at ``x`` is labelled with it: the decision
    of hard votes; of soft votes, the vote of the leaves' labels (for a random forest imported
    from scikit-learn, each leaf's argmax class: its hard vote)."""
    counts = [0] * len(forest.classes)
    for tree in forest.trees:
        counts[tree.vote(x)] += 1
    return counts.index(max(counts))


#: What each edge-case category means (the README's table); a case may hit several.
CATEGORIES = {
    "binary-features": "every feature has two states",
    "categorical-only": "categorical features only",
    "dag": "a tree shares a subtree between branches",
    "mixed-features": "numeric and categorical features",
    "numeric-only": "numeric features only",
    "one-state-feature": "a feature with a single state",
    "one-tree": "a single tree",
    "retest": "a test below another on the same feature (its feasible states only)",
    "single-state-retest": "a re-test with one branch, on a single state",
    "tie": "hard votes: an instance whose top vote count is shared",
    "unsat-class": "a class no world reaches (its contrastive explanations `[]`)",
    "unused-feature": "a feature no tree tests",
    "valid-class": "an instance whose decision no change of features flips (robustness "
                   "`null`)",
    "soft-votes": "soft votes: each leaf adds float64 weights, the largest exact sum decides",
    "soft-tie": "soft votes: an instance whose top exact sum is shared",
    "near-tie": "soft votes: an instance flagged as a near tie (the library's float "
                "arithmetic could decide otherwise) whose exact sums do not tie",
    "negative-weight": "soft votes: a leaf weight or initial score below 0",
    "negative-sum": "soft votes: an instance whose decision's exact sum is below 0 (every "
                    "sum is)",
    "init": "soft votes: initial scores (boosted trees' prior)",
    "init-decides": "soft votes: an instance whose decision the initial scores change",
    "soft-not-hard": "soft votes: an instance whose decision is not the vote of the leaves' "
                     "labels (for a random forest, the hard vote)",
}


def category_meaning(name: str) -> str:
    """What the category ``name`` means (:data:`CATEGORIES`)."""
    if name.startswith("classes-"):
        return f"{name.split('-')[1]} classes"
    return CATEGORIES[name]


def categories(forest: Forest, instances: Sequence[Instance],
               lines: dict[str, list[str]]) -> list[str]:
    """The edge-case categories (:data:`CATEGORIES`) a case hits, from its forest, its
    instances and their explanation lines."""
    numeric = sum(f.is_numeric for f in forest.features)
    hits = {f"classes-{len(forest.classes)}",
            "mixed-features" if 0 < numeric < len(forest.features) else
            "numeric-only" if numeric else "categorical-only"}
    if len(forest.trees) == 1:
        hits.add("one-tree")
    if all(f.n_states == 2 for f in forest.features):
        hits.add("binary-features")
    if any(f.n_states == 1 for f in forest.features):
        hits.add("one-state-feature")
    tested: set[int] = set()
    for tree in forest.trees:
        parents: dict[int, int] = {}
        for node in tree.nodes:
            if type(node) is not Branching:
                continue
            tested.add(node.feature)
            cover = 0
            for mask, child in node.branches:
                cover |= mask
                parents[child] = parents.get(child, 0) + 1
            if cover != forest.features[node.feature].full:
                hits.add("retest")
            if len(node.branches) == 1 and cover & (cover - 1) == 0:
                hits.add("single-state-retest")
        if any(n > 1 for n in parents.values()):
            hits.add("dag")
    if len(tested) < len(forest.features):
        hits.add("unused-feature")
    if forest.voting == "soft":
        hits.update(_soft_categories(forest, instances))
    elif any(tied(forest, x) for x in instances):
        hits.add("tie")
    for text in itertools.chain.from_iterable(lines.values()):
        line = json.loads(text)
        if line["robustness"] is None:
            hits.add("valid-class")
        if any(ces == [] for ces in line["contrastive"].values()):
            hits.add("unsat-class")
    return sorted(hits)


def _soft_categories(forest: Forest, instances: Sequence[Instance]) -> set[str]:
    """The categories of :data:`CATEGORIES` only soft votes hit."""
    hits = {"soft-votes"}
    weights = [w for leaves in forest.int_weights for leaf in leaves if leaf for w in leaf]
    if min(weights + list(forest.int_init)) < 0:
        hits.add("negative-weight")
    if forest.init is not None:
        hits.add("init")
    for x in instances:
        sums = forest.votes(x)
        if tied(forest, x):
            hits.add("soft-tie")
        elif forest.near_tie(x):
            hits.add("near-tie")
        if max(sums) < 0:
            hits.add("negative-sum")
        trees = [s - i for s, i in zip(sums, forest.int_init)]
        if trees.index(max(trees)) != forest.decision(x):
            hits.add("init-decides")
        if hard_vote(forest, x) != forest.decision(x):
            hits.add("soft-not-hard")
    return hits


def candidate_categories(spec: CaseSpec) -> list[str]:
    """Categories of a random candidate (native engine only; used to select seeds)."""
    made = make(spec)
    return categories(made.forest, made.instances, native_lines(made.forest, made.instances))


# ---------------------------------------------------------------------------------------------
# Building one case: native answers, oracle confirmations, circuits


@dataclass
class CaseResult:
    """Files of a case (path inside the case directory → text), its manifest entry, and the
    disagreements that forbid writing it (with repro documents)."""

    id: str
    files: dict[str, str]
    entry: dict[str, Any]
    failures: list[str] = field(default_factory=list)
    repros: dict[str, dict[str, Any]] = field(default_factory=dict)


def confirmations(report: Report) -> dict[str, dict[str, Any]]:
    """Per oracle: ``confirmed`` with its number of agreeing checks (and the checks it left out
    with why), or ``skipped`` with the reason."""
    out: dict[str, dict[str, Any]] = {}
    for name in ORACLES:
        mine = [o for o in report.outcomes if o.engine == name]
        agreed = sum(o.status == "agree" for o in mine)
        left_out: dict[str, list[str]] = {}
        for o in mine:
            if o.status == "skipped" and o.check not in left_out.setdefault(o.detail, []):
                left_out[o.detail].append(o.check)
        if not agreed:
            out[name] = {"status": "skipped", "reason": "; ".join(left_out) or "no check ran"}
        else:
            out[name] = {"status": "confirmed", "checks": agreed}
            if left_out:
                out[name]["unchecked"] = left_out
    return out


def _circuits(forest: Forest) -> tuple[dict[str, str], list[str], str | None]:
    """Circuit files of every class, form and tie policy, each checked by the BDD oracle:
    ``(files, failures, why omitted)``."""
    from rfcircuits.crosscheck.oracles.bdd import BddOracle

    reason = BddOracle.too_big(forest)
    if reason:
        return {}, [], reason
    docs: dict[str, tuple[str, dict[str, Any]]] = {}
    for ties in TIES:
        for form in FORMS:
            if form == "nnf":
                nnf = compile_nnf(forest, ties)
                per_class = [nnf.nnf.to_json(nnf.roots[c], forest, name, ties)
                             for c, name in enumerate(forest.classes)]
            else:
                dg = compile_dg(forest, ties, form)
                per_class = [dg.dg.to_json(dg.roots[c], forest, name, ties)
                             for c, name in enumerate(forest.classes)]
            for c, doc in enumerate(per_class):
                docs[circuit_file(form, ties, c, forest.classes[c])] = (ties, doc)
    files = {path: json_text(doc) for path, (_, doc) in docs.items()}
    size = sum(len(text.encode()) for text in files.values())
    if size > CIRCUIT_BUDGET:
        return {}, [], (f"{size} bytes of circuit files exceed the per-case budget of "
                        f"{CIRCUIT_BUDGET}")
    oracles = {ties: BddOracle(forest, ties) for ties in TIES}
    failures = [verdict.describe() for path, (ties, doc) in docs.items()
                if not (verdict := oracles[ties].check_circuit(doc, path)).equivalent]
    return files, failures, None


def _spec_answers(case_id: str, forest: Forest, lines: dict[str, list[str]]) -> list[str]:
    """Differences between the worked example's listed answers and the case's lines."""
    problems = []
    if case_id == "spec-figure1":
        decided = [json.loads(line)["decision"] for line in lines["first"]]
        for name, count in spec_examples.FIGURE1_COUNTS.items():
            if decided.count(name) != count:
                problems.append(f"{decided.count(name)} worlds in {name}, the example says {count}")
        return problems
    answers = spec_examples.SUSAN_ANSWERS if case_id == "spec-susan" else \
        spec_examples.FLIP_ANSWERS
    line = json.loads(lines["first"][0])
    for key, value in answers.items():
        want = value if key in ("decision", "robustness") else \
            terms_json(forest, spec_examples.expected(forest, value))
        if line[key] != want:
            problems.append(f"{key}: {line[key]!r}, the example says {want!r}")
    return problems


def build_case(spec: CaseSpec) -> CaseResult:
    """Answers from the native engine, confirmed by every oracle that fits (both tie policies),
    and the circuit files of small forests (each confirmed by the BDD oracle)."""
    made = make(spec)
    forest, instances = made.forest, made.instances
    lines = native_lines(forest, instances)
    files = {FOREST_FILE: json_text(forest.to_json()),
             INSTANCES_FILE: "".join(dumps(instance_to_json(forest, x)) + "\n" for x in instances)}
    for ties in TIES:
        files[expected_file(ties)] = "".join(line + "\n" for line in lines[ties])
    result = CaseResult(spec.id, files, {})
    oracles = {}
    for ties in TIES:
        report = crosscheck(forest, instances, ties, ORACLES)
        if report.interrupted:  # Ctrl-C: a partial report confirms nothing
            raise KeyboardInterrupt
        oracles[ties] = confirmations(report)
        if not report.ok:
            result.failures.extend(
                f"{spec.id} (ties {ties}): {d.check} ({' vs '.join(d.engines)})"
                f"{' at ' + json.dumps(d.instance, ensure_ascii=False) if d.instance else ''}: "
                f"{json.dumps(d.counterexample, ensure_ascii=False)[:300]}"
                for d in report.disagreements)
            result.repros[ties] = repro(forest, instances, ties, report.disagreements)
    confirmed = [name for name in ORACLES
                 if all(oracles[ties][name]["status"] == "confirmed" for ties in TIES)]
    if not confirmed:
        result.failures.append(f"{spec.id}: no oracle fits the case")
    circuits, circuit_failures, omitted = _circuits(forest)
    result.failures.extend(f"{spec.id}: {problem}" for problem in circuit_failures)
    files.update(circuits)
    entry: dict[str, Any] = {"id": spec.id, "origin": spec.origin}
    if made.facts:
        entry["training"] = made.facts
    entry["categories"] = categories(forest, instances, lines)
    entry["forest"] = {
        "features": len(forest.features),
        "numeric": sum(f.is_numeric for f in forest.features),
        "states": [f.n_states for f in forest.features],
        "classes": len(forest.classes), "trees": len(forest.trees), "nodes": forest.n_nodes,
        "worlds": forest.n_worlds()}
    if forest.voting != "hard":  # hard forests' entries stay what they were
        entry["forest"]["votes"] = forest.voting
    entry["instances"] = len(instances)
    entry["confirmed_by"] = confirmed
    if spec.origin["kind"] == "spec":
        problems = _spec_answers(spec.id, forest, lines)
        result.failures.extend(f"{spec.id}: {p}" for p in problems)
        entry["confirmed_by"] = confirmed + ["the worked example's listed answers"]
    entry["oracles"] = oracles
    entry["circuits"] = {"files": sorted(circuits), "checked_by": "bdd"} if circuits else \
        {"omitted": omitted}
    result.entry = entry
    return result


# ---------------------------------------------------------------------------------------------
# The whole corpus


def select(backend: Backend, stream: Stream, batch: int = 16) -> list[CaseSpec]:
    """The first ``quota`` candidates of a stream (in case order) that hit its category;
    candidates are judged ``batch`` at a time (the result does not depend on ``batch``)."""
    chosen: list[CaseSpec] = []
    start = 0
    while len(chosen) < stream.quota:
        if start >= MAX_TRIES_PER_CASE * stream.quota:
            raise RuntimeError(f"stream {stream.name}: only {len(chosen)} of {stream.quota} "
                               f"cases hit {stream.category!r} in {start} candidates")
        specs = [random_case(stream, k) for k in range(start, start + batch)]
        for spec, hits in zip(specs, run_ordered(backend, candidate_categories, specs)):
            if stream.category in hits and len(chosen) < stream.quota:
                chosen.append(spec)
        start += batch
    return chosen


def plan(backend: Backend, progress: bool = False) -> list[CaseSpec]:
    """Every case of the corpus, in manifest order."""
    specs = [spec_case(case_id) for case_id in EXAMPLE_CASES]
    with Progress("selecting random cases", enabled=progress) as bar:
        for done, stream in enumerate(STREAMS, start=1):
            specs.extend(select(backend, stream, 16 * max(1, backend.workers())))
            bar(done, len(STREAMS))
    specs.extend(trained_case(t) for t in TRAINED)
    ids = [s.id for s in specs]
    if len(set(ids)) != len(ids):
        raise RuntimeError(f"case ids repeat: {sorted(i for i in ids if ids.count(i) > 1)}")
    return specs


def versions() -> dict[str, str]:
    """Versions of Python, the packages the answers depend on, and rfcircuits."""
    out = {"python": platform.python_version(), "rfcircuits": __version__}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _cost(spec: CaseSpec) -> float:
    """Rough build cost for scheduling: trained forests first, the largest first."""
    o = spec.origin
    return o["n_estimators"] * o["max_depth"] * len(o["columns"]) if o["kind"] == "trained" \
        else 0.0


@dataclass
class BuildSummary:
    """What :func:`build` wrote (sizes, categories), or the problems that stopped it."""

    cases: int = 0
    instances: int = 0
    bytes: int = 0
    categories: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    repro_files: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def text(self) -> str:
        if self.failures:
            lines = [f"corpus build FAILED: {len(self.failures)} problems (oracle "
                     "disagreements, unconfirmed cases); the corpus was not written"]
            lines += [f"  {f}" for f in self.failures[:50]]
            if len(self.failures) > 50:
                lines.append(f"  ... and {len(self.failures) - 50} more")
            lines += [f"  repro: {p}" for p in self.repro_files]
            return "\n".join(lines)
        cats = ", ".join(f"{k} {v}" for k, v in sorted(self.categories.items()))
        return (f"corpus build: {self.cases} cases, {self.instances} instances, "
                f"{self.bytes / 1e6:.2f} MB\n  categories: {cats}")


def build(out: str, jobs: int = 1, progress: bool = True,
          failures_dir: str = "corpus-failures", resume: bool = False,
          dask: str | None = None, keep: bool = False) -> BuildSummary:
    """Regenerate the corpus in ``out`` (replacing it only if every case is confirmed), its
    cases built on ``jobs`` local processes or the Dask cluster at ``dask``.

    Each finished case is kept in ``OUT.partial/`` as it completes; an interrupted build
    leaves that directory (and the previous corpus) in place, and ``resume`` builds only the
    cases it does not hold yet. The partial directory is removed once the corpus is written.

    ``keep``: the cases of the corpus in ``out`` that the plan still has (same id and origin)
    stay as they are, files and manifest entries byte for byte, and only the others are built
    (:func:`kept_cases`): cases are added without rebuilding what a newer engine would write
    otherwise (equivalent circuit files, more oracle checks). The manifest's ``versions``
    stay those of the kept corpus, and an added case whose build ran on other versions
    records its own.
    """
    out = os.path.abspath(out)
    if os.path.exists(out) and not os.path.isdir(out):
        raise InputError(f"{out}: exists and is not a directory")
    if os.path.isdir(out) and os.listdir(out) and not os.path.exists(os.path.join(out, MANIFEST)):
        raise InputError(f"{out}: not empty and not a corpus (no {MANIFEST}); refusing to "
                         "replace it")
    parent = os.path.dirname(out)
    if not os.path.isdir(parent):
        raise InputError(f"{out}: directory {parent} does not exist")
    output_dir(failures_dir, create=False)  # refused now, not after the build
    partial = out + PARTIAL
    finished = _finished(partial) if resume else {}
    kept, base = kept_cases(out) if keep else ({}, versions())
    try:
        if not resume and os.path.exists(partial):
            print(f"note: starting over; removing the partial build {partial} of an earlier "
                  "run (--resume continues it instead)", file=sys.stderr)
            shutil.rmtree(partial)
        if not os.path.exists(os.path.join(partial, PARTIAL_VERSIONS)):
            write_json(os.path.join(output_dir(partial), PARTIAL_VERSIONS), versions())
        _remove_stale(out)
        with open_backend(jobs, dask) as backend:
            return _build(out, backend, progress, failures_dir, partial, {**finished, **kept},
                          set(kept), base)
    except BaseException:
        if os.path.isdir(partial):
            kept = len([n for n in os.listdir(partial) if n != PARTIAL_VERSIONS])
            print(f"{kept} finished cases kept in {partial} (the previous {out} is untouched; "
                  "--resume continues from them)", file=sys.stderr)
        raise


def _build(out: str, backend: Backend, progress: bool, failures_dir: str, partial: str,
           finished: dict[str, CaseResult], kept: set[str],
           base: dict[str, str]) -> BuildSummary:
    """:func:`build` once its target, partial directory and backend are settled: ``finished``
    cases (of ``kept``'s ids: kept from the old corpus) are not built again, and ``base`` is
    the manifest's versions."""
    summary = BuildSummary()
    specs = plan(backend, progress)
    finished = {s.id: finished[s.id] for s in specs
                if s.id in finished and finished[s.id].entry["origin"] == s.origin}
    todo = sorted((s for s in specs if s.id not in finished), key=lambda s: -_cost(s))
    with Progress("building cases", enabled=progress) as bar:
        bar(len(finished), len(specs))
        for _, result in run_tasks(backend, build_case, ((k, (s,)) for k, s in enumerate(todo))):
            write_json(os.path.join(partial, f"{result.id}.json"), asdict(result))
            finished[result.id] = result
            bar(len(finished), len(specs))
    results = [finished[s.id] for s in specs]
    for result in results:
        if result.id not in kept and versions() != base:  # built beside older cases
            result.entry["versions"] = versions()
        summary.failures.extend(result.failures)
        for ties, doc in result.repros.items():
            path = os.path.join(output_dir(failures_dir), f"{result.id}-{ties}.json")
            write_json(path, doc)
            summary.repro_files.append(path)
    if summary.failures:
        shutil.rmtree(partial, ignore_errors=True)
        return summary
    # named before it exists, made inside the try: a signal right after the mkdir (or inside
    # tempfile.mkdtemp, before it returned the name) still finds it to remove
    tmp = os.path.join(os.path.dirname(out),
                       f".{os.path.basename(out)}.building-{os.urandom(6).hex()}")
    try:
        os.mkdir(tmp, 0o700)
        for result in results:
            for rel, text in result.files.items():
                _write(os.path.join(tmp, CASES, result.id, rel), text)
        entries = [r.entry for r in results]
        for entry in entries:
            for cat in entry["categories"]:
                summary.categories[cat] = summary.categories.get(cat, 0) + 1
        summary.cases = len(entries)
        summary.instances = sum(e["instances"] for e in entries)
        manifest = {"format": CORPUS_FORMAT, "built_by": "rfcircuits corpus build",
                    "versions": base, "summary": {
                        "cases": summary.cases, "instances": summary.instances,
                        "categories": dict(sorted(summary.categories.items()))},
                    "cases": entries}
        _write(os.path.join(tmp, README), readme(manifest))
        _write(os.path.join(tmp, MANIFEST),
               json.dumps(manifest, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
        summary.bytes = _size(tmp)
        _plain_modes(tmp)
        _swap(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(partial, ignore_errors=True)
    return summary


def _remove_stale(out: str) -> None:
    """Remove what a killed build of ``out`` left beside it: the corpus being assembled and
    the old corpus being swapped out (hidden ``.OUT.building-*``, ``.OUT.old-*``)."""
    parent, name = os.path.split(out)
    for entry in os.listdir(parent):
        if entry.startswith((f".{name}.building-", f".{name}.old-")):
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


#: The file of a partial build that says which versions built its cases.
PARTIAL_VERSIONS = "VERSIONS.json"


def kept_cases(root: str) -> tuple[dict[str, CaseResult], dict[str, str]]:
    """The cases of the corpus in ``root`` as finished results (each file's text as it is,
    each manifest entry as it is) and the manifest's versions; none and this run's versions
    where ``root`` holds no corpus yet."""
    if not os.path.exists(os.path.join(root, MANIFEST)):
        return {}, versions()
    manifest = load_manifest(root)
    out = {}
    for entry in manifest["cases"]:
        case_dir = os.path.join(root, CASES, entry["id"])
        if not os.path.isdir(case_dir):
            raise InputError(f"{case_dir}: no such case directory (listed in "
                             f"{os.path.join(root, MANIFEST)}), so it cannot be kept")
        files = {}
        for directory, _, names in os.walk(case_dir):
            for name in names:
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8", newline="") as handle:
                    files[os.path.relpath(path, case_dir).replace(os.sep, "/")] = handle.read()
        out[entry["id"]] = CaseResult(entry["id"], files, entry)
    return out, manifest["versions"]


def _finished(partial: str) -> dict[str, CaseResult]:
    """The cases an interrupted build kept in ``partial`` (none if it has no partial
    directory); a partial build of other package versions is refused."""
    if not os.path.isdir(partial):
        print(f"note: no partial build {partial}; starting from the beginning", file=sys.stderr)
        return {}
    stamp = os.path.join(partial, PARTIAL_VERSIONS)
    if not os.listdir(partial):  # a build killed before it wrote its first file
        return {}
    if not os.path.exists(stamp) or load_json_file(stamp) != versions():
        raise InputError(f"{partial}: a partial build of other package versions; remove it "
                         "or build without --resume")
    out = {}
    for name in sorted(os.listdir(partial)):
        if name.endswith(".json") and name != PARTIAL_VERSIONS:
            doc = load_json_file(os.path.join(partial, name))
            try:
                result = CaseResult(**doc)
            except TypeError:
                raise InputError(f"{os.path.join(partial, name)}: not a case of a partial "
                                 "build") from None
            out[result.id] = result
    return out


def _write(path: str, text: str) -> None:
    """A file of the corpus being assembled (in a fresh temporary directory)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with atomic_open(path) as handle:
        handle.write(text)


def _plain_modes(root: str) -> None:
    """Give the corpus the modes a plain write would (temporary files and directories are
    created private)."""
    umask = current_umask()
    os.chmod(root, 0o777 & ~umask)
    for directory, dirs, files in os.walk(root):
        for name in dirs:
            os.chmod(os.path.join(directory, name), 0o777 & ~umask)
        for name in files:
            os.chmod(os.path.join(directory, name), 0o666 & ~umask)


def _size(root: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)


def _swap(new: str, out: str) -> None:
    """Put directory ``new`` in place of ``out`` (the old corpus is removed afterwards): in one
    step where Linux can exchange two names (``renameat2``), so that ``out`` never misses."""
    if not os.path.exists(out):
        os.replace(new, out)
        return
    if _exchange(new, out):
        shutil.rmtree(new, ignore_errors=True)  # now the old corpus
        return
    old = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.old-", dir=os.path.dirname(out))
    os.replace(out, os.path.join(old, "corpus"))
    os.replace(new, out)
    shutil.rmtree(old, ignore_errors=True)


#: renameat2(2): the directory file descriptor meaning "relative to the working directory",
#: and the flag that exchanges the two names.
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def _exchange(a: str, b: str) -> bool:
    """Swap the names ``a`` and ``b`` atomically; False where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    return renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b),
                     _RENAME_EXCHANGE) == 0


def readme(manifest: dict[str, Any]) -> str:
    """``fixtures/README.md``: the layout, the case mix, how to use and regenerate the corpus."""
    cats = "\n".join(f"| {k} | {v} | {category_meaning(k)} |"
                     for k, v in manifest["summary"]["categories"].items())
    kinds: dict[str, int] = {}
    for entry in manifest["cases"]:
        kinds[entry["origin"]["kind"]] = kinds.get(entry["origin"]["kind"], 0) + 1
    mix = ", ".join(f"{v} {k}" for k, v in sorted(kinds.items()))
    return f"""# rfcircuits golden corpus ({manifest['format']})

Generated by `rfcircuits corpus build`; do not edit by hand. Re-verify with
`rfcircuits corpus check` (add `--oracles` to have the oracles re-confirm every answer).
`rfcircuits corpus build --keep` adds new cases and leaves the others byte for byte (a case
built on other versions than the manifest's records its own).

{manifest['summary']['cases']} cases ({mix}), {manifest['summary']['instances']} instances.
Every expected answer was computed by the native engine and confirmed by every oracle that
fits the case (brute force, BDD, SAT; see `confirmed_by` and `oracles` in `MANIFEST.json`,
which also records each case's origin and the package versions).

## Layout

- `cases/<id>/forest.json` — the forest (`rfcircuits.forest/1`,
  [docs/formats.md](../docs/formats.md#forest-files)).
- `cases/<id>/instances.jsonl` — one instance per line (state names).
- `cases/<id>/expected-first.jsonl`, `expected-all.jsonl` — one explanation per instance
  ([docs/formats.md](../docs/formats.md#explanations)) with every field, byte-identical to
  `rfcircuits explain --forest forest.json --instances instances.jsonl --ties first|all`.
- `cases/<id>/circuits/<form>/<ties>/R<c>-<class>.<nnf|dg>.json` — for small forests, the class
  formula of every class as `rfcircuits compile --form <form> --ties <ties> --out DIR` writes it
  (`nnf`: Alg. 3, `dg-conj`: Alg. 3B, `dg`: Alg. 3A); each is equivalent to the forest's class
  formula (BDD oracle). Another compiler's circuits need not be identical, only equivalent.

## Cases

- `spec-*`: the worked examples (Susan and the flip example of
  [docs/semantics.md](../docs/semantics.md), the decision graph of the paper's Figure 1), every
  world as an instance.
- `random-<stream>-<k>`: tiny random forests (`rfcircuits.crosscheck.differential.fuzz.make_case(seed, k, limits)`),
  the first of each stream's seeds that hit the stream's edge case; instances are
  `make_case`'s plus a tied world (soft votes: and a near tie) and a world decided for each
  class.
- `trained-*`: scikit-learn forests on bundled datasets (subsets of features and classes),
  instances are test rows.
- Soft votes (`"votes": "soft"` in `forest.json`: each leaf adds float64 weights, the largest
  exact sum decides, [docs/formats.md](../docs/formats.md#forest-files)): the
  `random-soft-*` streams (`make_case` with `"votes": "soft"` in their limits: weights such
  as 1/3, 0.1, -1 whose sums tie exactly or only in floating point), `trained-*-soft`
  (random forests imported with the decision `predict` makes; where no test row tells it
  from the hard vote, a world that does is added) and `trained-*-gb`
  (`GradientBoostingClassifier`, binary and multi-class: initial scores and negative leaf
  values). XGBoost and LightGBM models are not in the corpus: it must build without those
  optional libraries, and neither promises the same trees bit for bit across platforms and
  thread counts; their import is tested in `tests/test_boosted_import.py`.

Edge-case categories (number of cases hitting each; a case may hit several):

| category | cases | meaning |
|---|---|---|
{cats}
"""


# ---------------------------------------------------------------------------------------------
# Reading and checking a corpus


def installed_root() -> str:
    """The corpus that comes with the package: ``rfcircuits/crosscheck/fixtures`` in an
    installed wheel (its manifest, forests and instances: pyproject.toml), the repository's
    ``fixtures/`` in a source checkout (an editable install maps no data folder)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for root in (os.path.join(here, "fixtures"), os.path.join(os.path.dirname(here), "fixtures")):
        if os.path.isfile(os.path.join(root, MANIFEST)):
            return root
    raise InputError(f"the golden corpus is not installed beside {here} (no {MANIFEST}); "
                     "reinstall rfcircuits or give the path of a corpus")


def load_case(root: str, case_id: str) -> tuple[Forest, list[Instance]]:
    """A case's forest and instances (errors name the file)."""
    case_dir = os.path.join(root, CASES, case_id)
    if not os.path.isdir(case_dir):
        raise InputError(f"{case_dir}: no such case directory (listed in {MANIFEST})")
    forest = load_forest(os.path.join(case_dir, FOREST_FILE))
    return forest, read_instances(os.path.join(case_dir, INSTANCES_FILE), forest)


def load_manifest(root: str) -> dict[str, Any]:
    """The manifest, validated enough to drive :func:`check` (errors name the file)."""
    path = os.path.join(root, MANIFEST)
    doc = load_json_file(path)
    if not isinstance(doc, dict) or doc.get("format") != CORPUS_FORMAT:
        raise InputError(f"{path}: not a corpus manifest (expected format {CORPUS_FORMAT!r})")
    cases = doc.get("cases")
    if not isinstance(cases, list) or not cases:
        raise InputError(f"{path}: 'cases' must be a non-empty list")
    seen = set()
    for i, entry in enumerate(cases):
        where = f"{path}, cases[{i}]"
        case_id = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(case_id, str) or not case_id or case_id in seen or \
                os.path.basename(case_id) != case_id or case_id.startswith("."):
            raise InputError(f"{where}: missing, repeated or unsafe 'id'")
        seen.add(case_id)
        files = entry.get("circuits", {}).get("files", []) \
            if isinstance(entry.get("circuits"), dict) else None
        if not isinstance(files, list) or not all(
                isinstance(p, str) and len(p.split("/")) == 4 and p.split("/")[0] == "circuits"
                and p.split("/")[1] in FORMS and p.split("/")[2] in TIES and ".." not in p
                for p in files):
            raise InputError(f"{where} ({case_id}): 'circuits' must hold 'files', paths "
                             "circuits/<form>/<ties>/<file>")
    stray = sorted(set(os.listdir(os.path.join(root, CASES))) - seen) \
        if os.path.isdir(os.path.join(root, CASES)) else []
    if stray:
        raise InputError(f"{os.path.join(root, CASES, stray[0])}: not listed in {path}")
    return doc


@dataclass
class CaseCheck:
    """What :func:`check_case` verified, and the mismatches it found."""

    id: str
    lines: int = 0
    circuits: int = 0
    circuits_skipped: str | None = None
    oracle_checks: int = 0
    mismatches: list[str] = field(default_factory=list)
    #: Lines per field that the engine did not compute (the SAT engine's general reasons).
    not_compared: dict[str, int] = field(default_factory=dict)


def _short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "…"


def _read_lines(path: str) -> list[str]:
    lines = load_json_lines(path)
    for line in lines:
        if not isinstance(line.value, dict):
            raise InputError(f"{path}, line {line.number}: expected a JSON object")
    return [line.text for line in lines]


def _line_difference(expected: str, ours: str) -> list[str]:
    """The fields in which two explanation lines differ (or a note on formatting)."""
    a, b = json.loads(expected), json.loads(ours)
    keys = list(dict.fromkeys([*b, *a]))
    fields = [f"field {k}: expected {_short(a.get(k))}, native {_short(b.get(k))}"
              for k in keys if a.get(k) != b.get(k)]
    return fields or ["same fields, but not byte-identical (formatting or key order)"]


def check_case(root: str, entry: dict[str, Any], oracles: Sequence[str] = (),
               engine: str = "auto") -> CaseCheck:
    """Re-verify one case: the lines of the engine ``engine`` answers with (``auto``: the
    decision graphs, which fit every case), circuit files against the BDD oracle, and
    (``oracles``) the harness. The decision graphs' lines must be byte for byte the expected
    ones; the SAT engine's (no limits: its answers are complete) field by field, for the
    fields it computes (those it does not are counted in ``not_compared``). Malformed files
    raise :class:`InputError`."""
    case_id = entry["id"]
    result = CaseCheck(case_id)
    case_dir = os.path.join(root, CASES, case_id)
    forest, instances = load_case(root, case_id)
    instances_path = os.path.join(case_dir, INSTANCES_FILE)
    for ties in TIES:
        path = os.path.join(case_dir, expected_file(ties))
        expected = _read_lines(path)
        if len(expected) != len(instances):
            raise InputError(f"{path}: {len(expected)} lines for {len(instances)} instances in "
                             f"{instances_path}")
        explainer = Explainer(forest, ties, engine=engine, limit_seconds=None, limit_items=None)
        for n, (x, line) in enumerate(zip(instances, expected), start=1):
            try:
                answer = explainer.explain_states(x)
            except Exception as exc:  # a crash is a mismatch to report, not a traceback
                reraise_signal(exc)
                result.mismatches.append(f"{case_id}, {expected_file(ties)} line {n}: the native "
                                         f"engine failed ({exc!r})")
                continue
            result.lines += 1
            ours = answer.to_line(engine=False)
            if answer.not_computed:  # compared on the fields both have
                mine, theirs = answer.to_json(engine=False), json.loads(line)
                del mine["not_computed"]
                for key in answer.not_computed:
                    theirs.pop(WHAT_FIELDS[key], None)
                    result.not_compared[WHAT_FIELDS[key]] = \
                        result.not_compared.get(WHAT_FIELDS[key], 0) + 1
                ours, line = dumps(mine), dumps(theirs)
            if ours != line:
                result.mismatches.extend(f"{case_id}, {expected_file(ties)} line {n} (instance "
                                         f"{n}): {d}" for d in _line_difference(line, ours))
    _check_circuits(case_dir, forest, entry["circuits"].get("files", []), result)
    for ties in TIES if oracles else ():
        report = crosscheck(forest, instances, ties, oracles)
        if report.interrupted:
            raise KeyboardInterrupt
        result.oracle_checks += report.checks()
        result.mismatches.extend(
            f"{case_id} (ties {ties}): {d.check} ({' vs '.join(d.engines)})"
            f"{' at ' + _short(d.instance) if d.instance else ''}: {_short(d.counterexample)}"
            for d in report.disagreements)
    return result


def _check_circuits(case_dir: str, forest: Forest, files: Iterable[str],
                    result: CaseCheck) -> None:
    from rfcircuits.crosscheck.oracles.bdd import NNF_FORMAT, BddOracle

    files = list(files)
    if not files:
        return
    reason = BddOracle.too_big(forest)
    if reason:
        result.circuits_skipped = reason
        return
    oracles: dict[str, BddOracle] = {}
    for rel in files:
        _, form, ties, _ = rel.split("/")
        path = os.path.join(case_dir, *rel.split("/"))
        doc = load_json_file(path)
        if not isinstance(doc, dict) or doc.get("ties") != ties or \
                (doc.get("format") == NNF_FORMAT) != (form == "nnf"):
            result.mismatches.append(f"{result.id}, {rel}: not a {form} circuit for ties {ties}")
            continue
        oracle = oracles.setdefault(ties, BddOracle(forest, ties))
        verdict = oracle.check_circuit(doc, f"{result.id}/{rel}")
        result.circuits += 1
        if not verdict.equivalent:
            result.mismatches.append(verdict.describe())


@dataclass
class CheckSummary:
    """Totals of :func:`check` and every mismatch found."""

    cases: int = 0
    lines: int = 0
    circuits: int = 0
    circuits_skipped: int = 0
    oracle_checks: int = 0
    mismatches: list[str] = field(default_factory=list)
    not_compared: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def text(self) -> str:
        how = "byte for byte" if not self.not_compared else "on every field but " + ", ".join(
            f"{name} ({n} lines, not computed by the engine)"
            for name, n in self.not_compared.items())
        head = (f"corpus check: {self.cases} cases, {self.lines} explanation lines reproduced "
                f"{how}, {self.circuits} circuit files equivalent (BDD)"
                + (f", {self.circuits_skipped} cases' circuits beyond the BDD oracle"
                   if self.circuits_skipped else "")
                + (f", {self.oracle_checks} oracle checks" if self.oracle_checks else "")
                + f"; {len(self.mismatches)} mismatches")
        lines = [head] + [f"  MISMATCH {m}" for m in self.mismatches[:100]]
        if len(self.mismatches) > 100:
            lines.append(f"  ... and {len(self.mismatches) - 100} more")
        return "\n".join(lines)


def check(root: str, jobs: int = 1, oracles: Sequence[str] = (),
          progress: bool = True, engine: str = "auto") -> CheckSummary:
    """Re-verify every case of the corpus in ``root`` with the engine ``engine`` (see
    :func:`check_case`)."""
    manifest = load_manifest(root)
    recorded = manifest.get("versions", {})
    now = versions()
    changed = [f"{k} {recorded.get(k)} → {v}" for k, v in now.items() if recorded.get(k) != v]
    if changed and progress:
        print(f"[corpus check] note: versions differ from the build's: {', '.join(changed)}",
              file=sys.stderr)
    summary = CheckSummary()
    one = functools.partial(check_case, root, oracles=tuple(oracles), engine=engine)
    with open_backend(jobs) as backend, Progress("checking cases", enabled=progress) as bar:
        results = run_ordered(backend, one, manifest["cases"], bar)
    for r in results:
        summary.cases += 1
        summary.lines += r.lines
        summary.circuits += r.circuits
        summary.circuits_skipped += r.circuits_skipped is not None
        summary.oracle_checks += r.oracle_checks
        summary.mismatches.extend(r.mismatches)
        for name, n in r.not_compared.items():
            summary.not_compared[name] = summary.not_compared.get(name, 0) + n
    return summary
