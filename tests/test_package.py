"""The installed package: one top-level name, and layers that import only downwards.

Layers: the library ``rfcircuits`` (model, compile, explain) < the oracles
``rfcircuits.crosscheck`` < the command line ``rfcircuits.cli``. The library never imports the
oracles or the command line; the oracles never import the command line.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

import rfcircuits
import rfcircuits.cli
import rfcircuits.crosscheck


def modules() -> dict[str, Path]:
    """Every module of the installed package by dotted name (the library's folder and the
    oracles' folder are separate in the repository, nested in a wheel)."""
    roots = {"rfcircuits": Path(rfcircuits.__file__).parent,
             "rfcircuits.crosscheck": Path(rfcircuits.crosscheck.__file__).parent}
    out = {}
    for package, root in roots.items():
        for path in root.rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            if package == "rfcircuits" and parts[0] == "crosscheck":
                continue  # a wheel nests the oracles in the library's folder
            name = ".".join((package, *parts)).removesuffix(".__init__")
            out[name] = path
    return out


def imported(path: Path, name: str) -> set[str]:
    """Every module a file imports, anywhere in it (function-level imports too)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return found


def layer(name: str) -> int:
    if name == "rfcircuits.cli" or name.startswith("rfcircuits.cli."):
        return 2
    if name == "rfcircuits.crosscheck" or name.startswith("rfcircuits.crosscheck."):
        return 1
    return 0 if name.startswith("rfcircuits") else -1


def test_layers_import_only_downwards():
    found = modules()
    assert "rfcircuits.explain" in found and "rfcircuits.crosscheck.oracles.sat" in found \
        and "rfcircuits.cli.main" in found
    wrong = []
    for name, path in sorted(found.items()):
        if name == "rfcircuits.__main__":  # ``python -m rfcircuits`` starts the command line
            continue
        for target in imported(path, name):
            if layer(target) > layer(name):
                wrong.append(f"{name} imports {target}")
    assert not wrong


def test_ordering_does_not_import_compiling():
    # Feature orders are judged by a cost function the compiler passes (issue 28): the
    # compiler imports the orders, never the other way round.
    found = modules()
    assert "rfcircuits.featureorder" in imported(found["rfcircuits.dgcompile"],
                                                 "rfcircuits.dgcompile")
    order = imported(found["rfcircuits.featureorder"], "rfcircuits.featureorder")
    assert not {name for name in order if name.startswith("rfcircuits.dg")}


def test_one_top_level_package_is_installed():
    # the installed distribution's RECORD (a source tree's egg-info, which pytest may also
    # find, lists the repository's files instead)
    records = [d.read_text("RECORD") for d in metadata.distributions(name="rfcircuits")]
    records = [r for r in records if r]
    assert records
    for record in records:
        files = [line.split(",")[0] for line in record.splitlines() if line]
        tops = {f.split("/")[0] for f in files if "/" in f and ".dist-info/" not in f
                and not f.startswith(("..", "__pycache__/"))}
        assert tops <= {"rfcircuits"}, tops


def test_the_pytest_plugin_is_registered():
    (plugin,) = [e for e in metadata.entry_points(group="pytest11") if e.name == "rfcircuits"]
    assert plugin.value == "rfcircuits.crosscheck.pytest_plugin"


SOURCE = Path(__file__).resolve().parent.parent
NOTICE = "rfcircuits: the C extension could not be built"


def build_wheel(tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str],
                                                              list[str]]:
    """``pip wheel`` of a copy of the source tree (pip builds in the tree it is given), with no
    controlling terminal (so the notice takes the path that pip relays), and the wheel's
    file names."""
    tree = tmp_path / "src"
    tree.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(SOURCE / name, tree / name)
    for name in ("core", "crosscheck"):
        shutil.copytree(SOURCE / name, tree / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"))
    # the corpus's files that the wheel ships (pyproject.toml), and one that it leaves out
    for path in ["MANIFEST.json", *(f"cases/{case.name}/{name}"
                                    for case in (SOURCE / "fixtures" / "cases").iterdir()
                                    for name in ("forest.json", "instances.jsonl"))]:
        (tree / "fixtures" / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SOURCE / "fixtures" / path, tree / "fixtures" / path)
    shutil.copy(SOURCE / "fixtures" / "cases" / "spec-susan" / "expected-all.jsonl",
                tree / "fixtures" / "cases" / "spec-susan")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps",
                           "--no-build-isolation", "-w", str(tmp_path / "dist"), str(tree)],
                          capture_output=True, text=True, env={**os.environ, **env},
                          start_new_session=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("rfcircuits-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return done, archive.namelist()


needs_source = pytest.mark.skipif(not (SOURCE / "setup.py").is_file(),
                                  reason="needs the source tree")


@needs_source
def test_wheel_holds_the_c_extension_and_one_package(tmp_path):
    done, names = build_wheel(tmp_path, {})
    assert any(n.startswith("rfcircuits/_dgstore.") and n.endswith((".so", ".pyd"))
               for n in names)
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == {"rfcircuits"}
    assert not any(n.endswith(".c") for n in names)
    assert {"rfcircuits/py.typed", "rfcircuits/schemas/forest.schema.json",
            "rfcircuits/crosscheck/differential/EQUIVALENT_MUTANTS.md"} <= set(names)
    # the golden corpus, for the pytest plugin: manifest, forests and instances of every case
    corpus = "rfcircuits/crosscheck/fixtures/"
    cases = {n.split("/")[4] for n in names if n.startswith(corpus + "cases/")}
    assert cases == {p.name for p in (SOURCE / "fixtures" / "cases").iterdir()}
    assert {n.split("/")[-1] for n in names if n.startswith(corpus)} == {
        "MANIFEST.json", "forest.json", "instances.jsonl"}
    output = done.stdout + done.stderr
    assert NOTICE not in output and "would be ignored" not in output


@needs_source
def test_wheel_without_a_compiler_says_so_once(tmp_path):
    done, names = build_wheel(tmp_path, {"CC": "false"})
    assert (done.stdout + done.stderr).count(NOTICE) == 1
    assert not any("_dgstore." in n for n in names)
    assert "rfcircuits/explain.py" in names and "rfcircuits/crosscheck/oracles/sat.py" in names
