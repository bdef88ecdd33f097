"""No import cycle in the package: every module of ``rfcircuits`` (folder ``core/``) and
``rfcircuits.crosscheck`` (folder ``crosscheck/``) imports only modules below it.

Every import statement counts, wherever it stands: at the top, inside a function (a lazy
import still ties the two modules) or under ``TYPE_CHECKING``. ``from p import name`` is an
arrow to the module ``p.name`` when there is one, else to ``p`` itself; importing a package
does not count as importing its submodules' parents (``import a.b`` is an arrow to ``a.b``
only), as in the import graphs of pydeps and import-linter.
"""

from __future__ import annotations

import ast
import importlib.machinery
from pathlib import Path

import networkx as nx

import rfcircuits
import rfcircuits.crosscheck

SUFFIXES = tuple(importlib.machinery.all_suffixes())


def modules(package: str, folder: Path) -> dict[str, Path | None]:
    """Every module of ``package`` in ``folder``, subpackages included: its dotted name and
    its source (None for a compiled extension, which imports nothing of ours)."""
    found: dict[str, Path | None] = {}
    for path in folder.rglob("*"):
        suffix = next((s for s in SUFFIXES if path.name.endswith(s)), None)
        if suffix is None or "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(folder).parts)
        parts[-1] = path.name[: -len(suffix)]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join([package, *parts])] = path if suffix == ".py" else None
    return found


def import_graph(roots: dict[str, Path]) -> nx.DiGraph:
    """The arrows between the modules of the packages ``roots`` (name to folder; installed,
    ``rfcircuits.crosscheck`` is also found inside ``rfcircuits``' folder, as the same
    modules)."""
    mods: dict[str, Path | None] = {}
    for package, folder in roots.items():
        mods.update(modules(package, folder))
    graph = nx.DiGraph()
    graph.add_nodes_from(mods)
    for name, path in mods.items():
        if path is None:
            continue
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = here[: len(here) - node.level + 1]
                    base = ".".join(parent + ([node.module] if node.module else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in mods else base
                           for alias in node.names]
            graph.add_edges_from((name, t) for t in targets if t in mods and t != name)
    return graph


def package_graph() -> nx.DiGraph:
    return import_graph({"rfcircuits": Path(rfcircuits.__file__).parent,
                         "rfcircuits.crosscheck": Path(rfcircuits.crosscheck.__file__).parent})


def test_no_import_cycle():
    graph = package_graph()
    assert len(graph) > 60  # both packages walked, subpackages included
    cycle = next(nx.simple_cycles(graph), None)
    assert cycle is None, "import cycle: " + " -> ".join(cycle + cycle[:1])


def test_the_engine_never_imports_the_oracles():
    graph = package_graph()
    engine = [n for n in graph if not n.startswith("rfcircuits.crosscheck")]
    wrong = [(a, b) for a in engine for b in graph.successors(a)
             if b.startswith("rfcircuits.crosscheck") and not a.startswith("rfcircuits.cli")]
    assert wrong == []


def test_a_cycle_is_found(tmp_path):
    """The walk sees lazy, relative and TYPE_CHECKING imports: each of these closes a cycle."""
    pkg = tmp_path / "p"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from p.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import c\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\n"
                              "if TYPE_CHECKING:\n    from p import a\n")
    (pkg / "d.py").write_text("import p.c\n")
    graph = import_graph({"p": pkg})
    assert sorted(graph.edges) == [("p.a", "p.sub.b"), ("p.c", "p.a"), ("p.d", "p.c"),
                                   ("p.sub.b", "p.c")]
    assert sorted(map(sorted, nx.simple_cycles(graph))) == [["p.a", "p.c", "p.sub.b"]]


def test_documented_import_paths_exist():
    """docs/api.md's table of ``rfcircuits.crosscheck``'s import paths: every module imports,
    and every name it lists (in backticks, before the row's colon) is in one of the row's
    modules."""
    import importlib
    import re

    text = (Path(__file__).parents[1] / "docs" / "api.md").read_text(encoding="utf-8")
    table = text.split("### Import paths of `rfcircuits.crosscheck`", 1)[1].split("\n#", 1)[0]
    rows = [line.split("|")[1:3] for line in table.splitlines()
            if line.startswith("| `rfcircuits.")]
    assert len(rows) >= 12
    for modules, names in rows:
        loaded = [importlib.import_module(m) for m in re.findall(r"`([\w.]+)`", modules)]
        listed = re.findall(r"`(\w+)`", names.split(":")[0])
        assert listed, modules
        for name in listed:
            assert any(hasattr(m, name) for m in loaded), (modules, name)
