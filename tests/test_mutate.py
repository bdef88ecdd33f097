"""The mutation tooling: operators, a mutant that must be killed is, the tree is untouched."""

from __future__ import annotations

import hashlib
import io
import zipfile

from rfcircuits.crosscheck.differential.mutate import (PACKAGE_DIRS, _copy_packages,
                                                       _mutated_source, judge, mutants,
                                                       snapshot_archive, summary)


def tree_digest() -> str:
    h = hashlib.sha256()
    for folder in PACKAGE_DIRS.values():
        for path in sorted(folder.glob("*.py")):
            h.update(path.read_bytes())
    return h.hexdigest()


def test_operators_are_found_and_applied():
    found = {m.operator for m in mutants("rfcircuits/primes.py")} | \
        {m.operator for m in mutants("rfcircuits/robustness.py")}
    assert {"binop", "cmp", "const", "delete", "not", "call"} <= found
    for m in mutants("rfcircuits/sortnet.py")[:40]:
        original, mutated = _mutated_source(m)
        assert original != mutated, m.ident


def test_a_breaking_mutant_is_killed_and_the_tree_is_untouched(tmp_path):
    before = tree_digest()
    # minimal(): "u & v == u" (u is a subset of v) turned into "!=" breaks every prime set.
    target = next(m for m in mutants("rfcircuits/primes.py")
                  if m.operator == "cmp" and m.change == "== → !=")
    _copy_packages(None, tmp_path / "snapshot")
    verdict = judge(target, 5, snapshot_archive(tmp_path / "snapshot"))
    assert verdict.status == "killed", verdict
    assert verdict.diff.startswith("---")
    assert tree_digest() == before


def test_summary_counts():
    from rfcircuits.crosscheck.differential.mutate import Verdict

    data = summary([Verdict("a", "m", "cmp", "killed"), Verdict("b", "m", "cmp", "survived"),
                    Verdict("c", "m", "const", "equivalent")])
    assert (data["total"], data["killed"], data["equivalent"], data["kill_rate"]) == (3, 1, 1, 0.5)
    assert len(data["survivors"]) == 1


def test_type_annotations_are_not_mutated():
    from rfcircuits.crosscheck.differential.mutate import locate, mutants

    # ``progress: Callable[[int, int], None] | None`` is an annotation, not code.
    lines = locate("rfcircuits/classformula.py").read_text(encoding="utf-8").splitlines()
    annotated = [i for i, text in enumerate(lines, start=1) if "progress: Callable" in text]
    assert annotated
    assert not [m.ident for m in mutants("rfcircuits/classformula.py") if m.line in annotated]


def test_campaign_judges_a_snapshot_of_the_tree(monkeypatch):
    # Mutants are made from a copy taken when the campaign starts, so editing the working
    # tree during a long campaign cannot shift the sample or the code a mutant lands in.
    from rfcircuits.crosscheck.differential import mutate

    seen = []

    def fake_judge(m, budget, snapshot):
        with zipfile.ZipFile(io.BytesIO(snapshot)) as archive:
            seen.append(archive.read(m.module).decode("utf-8"))
        return mutate.Verdict(m.ident, m.module, m.operator, "killed")

    monkeypatch.setattr(mutate, "judge", fake_judge)
    verdicts = mutate.campaign(["rfcircuits/robustness.py"], 3, 1.0, 1, 0)
    assert len(verdicts) == len(seen) == 3
    text = mutate.locate("rfcircuits/robustness.py").read_text(encoding="utf-8")
    assert all(copy == text for copy in seen)


def test_every_listed_equivalent_mutant_exists():
    # An id left behind when its module changes would silently stop excusing anything (or,
    # worse, excuse a different mutant that moved onto its line).
    from rfcircuits.crosscheck.differential.mutate import DEFAULT_MODULES, equivalent_mutants

    ids = {m.ident for module in DEFAULT_MODULES for m in mutants(module)}
    assert sorted(set(equivalent_mutants()) - ids) == []
