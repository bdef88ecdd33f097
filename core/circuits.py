"""Compiled class formulas saved and read back: the ``rfcircuits.circuits/1`` format
(docs/formats.md#saved-circuits), so that a forest is compiled once and explained many times
(:meth:`rfcircuits.Explainer.save`, :func:`rfcircuits.load_explainer`, ``rfcircuits compile
--out DIR`` and ``explain --circuits DIR``, the workers of ``--dask`` runs).

A file holds what its engine needs to answer without compiling. For the decision graphs
(:class:`rfcircuits.graphengine.GraphEngine`): the feature order they were compiled under,
each class formula's conjuncts (Alg. 3B), the negated class graphs contrastive explanations
search, and the projections (:mod:`rfcircuits.projections`), all graphs of one manager whose
nodes are written once, children first, as the store dumps them
(:meth:`rfcircuits.dgraph.DG.dump`). For the SAT engine: nothing but the choice of engine,
since its NNF circuits compile in well under a second and its solvers cannot be saved
(docs/decisions.md, "Compile once, explain many").

Every file embeds its forest with the SHA-256 digest of the forest's canonical JSON
(:func:`forest_digest`) and names its tie policy: reading it beside another forest or tie
policy is an :class:`~rfcircuits.errors.InputError` naming both, as is a file of a later
format version, and a damaged or cut file (the nodes' zlib stream carries a checksum; each
node is checked as it is made, and named when it is wrong).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import sys
import zlib
from array import array
from dataclasses import dataclass
from typing import Any

from rfcircuits._engine_abc import Engine
from rfcircuits.dgcompile import DGCompilation
from rfcircuits.dgraph import DG
from rfcircuits.errors import InputError
from rfcircuits.forest import TIES, Forest, JsonReader, forest_from_json
from rfcircuits.graphengine import GraphEngine
from rfcircuits.jsonio import load_json_file
from rfcircuits.projections import MAX_FEATURES

__all__ = ["CIRCUITS_FORMAT", "FORMS", "MANIFEST", "Saved", "document", "forest_digest",
           "read", "source_path"]

CIRCUITS_FORMAT = "rfcircuits.circuits/1"
#: The form of the class formulas each engine answers from.
FORMS = {"graphs": "dg-conj", "sat": "nnf"}
#: The file ``compile --out DIR`` writes in DIR beside the per-class circuits, and
#: ``explain --circuits DIR`` reads.
MANIFEST = "circuits.json"
#: zlib's level for the nodes: the fastest, within a third of the smallest (docs/decisions.md).
ZLIB_LEVEL = 1

#: How errors and choices name circuits given as bytes (:meth:`rfcircuits.Explainer.dumps`).
BYTES = "saved circuits"
_VERSION = re.compile(r"rfcircuits\.circuits/(\d+)")


def forest_digest(forest: Forest) -> str:
    """``sha256:`` and the hex digest of the forest's canonical JSON (its document with
    sorted keys and no spaces): equal for equal forests, whatever their files' layout."""
    text = json.dumps(forest.to_json(), ensure_ascii=False, sort_keys=True,
                      separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Saved:
    """A circuits file read back: where from (its path, or :data:`BYTES`), its forest and tie
    policy, the engine that answers and, for the decision graphs, their class formulas
    (``compiled``), negated class graphs by class and projections' rows by the roots they
    project (None: too large to project), in a manager of their own."""

    source: str
    forest: Forest
    ties: str
    engine: str
    compiled: DGCompilation | None = None
    negated: dict[int, int] | None = None
    projections: dict[tuple[int, ...], list[int] | None] | None = None


def document(engine: Engine) -> dict[str, Any]:
    """The ``rfcircuits.circuits/1`` document of an engine (a :class:`GraphEngine` or a SAT
    engine) that has compiled what it is to answer from."""
    forest = engine.forest
    doc: dict[str, Any] = {"format": CIRCUITS_FORMAT, "engine": engine.name,
                           "form": FORMS[engine.name], "ties": engine.ties,
                           "forest_digest": forest_digest(forest), "forest": forest.to_json()}
    if not isinstance(engine, GraphEngine):
        return doc
    comp = engine.compiled
    negated, projections = engine.prepared()
    rows = {key: list(p.row) for key, p in projections.items() if p is not None}
    roots = [r for rs in comp.roots for r in rs] + list(negated.values()) + \
        [r for key in projections for r in key] + [r for row in rows.values() for r in row]
    code, numbers = comp.dg.dump(roots)
    number = iter(numbers)
    doc.update(
        order=sorted(range(len(forest.features)), key=comp.dg.rank.__getitem__),
        classes=[[next(number) for _ in rs] for rs in comp.roots])
    negated_numbers = {t: next(number) for t in negated}
    doc["negated"] = [negated_numbers.get(t) for t in range(len(forest.classes))]
    keys = [[next(number) for _ in key] for key in projections]
    doc["projections"] = [{"roots": key, "rows": [next(number) for _ in rows[old]]
                           if old in rows else None} for key, old in zip(keys, projections)]
    doc["nodes"] = max([1, *numbers]) - 1  # the last node written is a root
    doc["code"] = base64.b64encode(zlib.compress(_little_endian(code), ZLIB_LEVEL)).decode()
    return doc


def _little_endian(code: bytes) -> bytes:
    """The store's native int32 words as the file's little-endian ones, and back."""
    if sys.byteorder == "little":
        return code
    words = array("i", code)
    words.byteswap()
    return words.tobytes()


def source_path(path: str | os.PathLike[str]) -> str:
    """The circuits file at ``path``: the file itself, or a directory's :data:`MANIFEST`
    (``compile --out DIR``)."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        return path
    manifest = os.path.join(path, MANIFEST)
    if not os.path.exists(manifest):
        raise InputError(f"{path}: no {MANIFEST} in this directory (rfcircuits compile "
                         f"--form dg-conj --out {path} writes one)")
    return manifest


def read(source: str | os.PathLike[str] | bytes, forest: Forest | None = None,
         ties: str | None = None, engine: str = "auto") -> Saved:
    """The circuits file at ``source`` (a file, a directory written by ``compile --out``, or
    the bytes of one), checked against ``forest``, ``ties`` and ``engine`` when given
    (``"auto"``: any). Errors name the file and the field or node at fault, and say what to
    do."""
    if isinstance(source, bytes):
        where = BYTES
        try:
            doc = json.loads(source)
        except (ValueError, RecursionError) as exc:
            raise InputError(f"{where}: not a circuits document ({exc})") from None
    else:
        where = source_path(source)
        doc = load_json_file(where)
    r = JsonReader(where)
    fmt = r.get(doc, "format", str, "circuits")
    version = _VERSION.fullmatch(fmt)
    if version is None:
        raise r.fail("circuits", f"field 'format' must be {CIRCUITS_FORMAT!r}, not {fmt!r}")
    if fmt != CIRCUITS_FORMAT:
        raise r.fail("circuits", f"format {fmt} is of a later rfcircuits than this one, which "
                                 f"reads {CIRCUITS_FORMAT}: upgrade rfcircuits, or compile "
                                 "the circuits again with this one")
    saved_engine = r.get(doc, "engine", str, "circuits")
    if saved_engine not in FORMS:
        raise r.fail("circuits", f"field 'engine' must be one of {', '.join(map(repr, FORMS))}, "
                                 f"not {saved_engine!r}")
    graph_fields = ("order", "classes", "negated", "projections", "nodes", "code")
    r.only(doc, ("format", "engine", "form", "ties", "forest_digest", "forest",
                 *(graph_fields if saved_engine == "graphs" else ())), "circuits")
    if r.get(doc, "form", str, "circuits") != FORMS[saved_engine]:
        raise r.fail("circuits", f"field 'form' must be {FORMS[saved_engine]!r} for engine "
                                 f"{saved_engine!r}")
    saved_ties = r.get(doc, "ties", str, "circuits")
    if saved_ties not in TIES:
        raise r.fail("circuits", f"field 'ties' must be one of {', '.join(map(repr, TIES))}")
    digest = r.get(doc, "forest_digest", str, "circuits")
    embedded = forest_from_json(r.get(doc, "forest", dict, "circuits"), f"{where}: forest")
    if forest_digest(embedded) != digest:
        raise r.fail("circuits", f"the forest it holds does not have its digest {digest}: "
                                 "the file was changed after it was written")
    if forest is not None and forest_digest(forest) != digest:
        raise InputError(f"{where}: circuits of another forest (its digest is {digest}, the "
                         f"forest given has {forest_digest(forest)}): compile them for this "
                         "forest (rfcircuits compile --forest F --form dg-conj --out DIR, or "
                         "Explainer(forest).save(PATH))")
    if ties is not None and ties != saved_ties:
        raise InputError(f"{where}: circuits of tie policy {saved_ties!r}, not {ties!r}: "
                         f"explain under ties {saved_ties!r} (--ties {saved_ties}), or compile "
                         f"them under {ties!r} (rfcircuits compile --ties {ties} --form dg-conj "
                         f"--out DIR, or Explainer(forest, ties={ties!r}).save(PATH))")
    if engine not in ("auto", saved_engine):
        raise InputError(f"{where}: circuits of engine {saved_engine!r}, not {engine!r}: "
                         f"explain with engine {saved_engine!r} or 'auto' (--engine), or "
                         f"compile them for engine {engine!r} (rfcircuits compile --form "
                         f"{FORMS[engine]} --out DIR, or Explainer(forest, "
                         f"engine={engine!r}).save(PATH))")
    saved = Saved(where, embedded if forest is None else forest, saved_ties, saved_engine)
    if saved_engine == "graphs":
        _read_graphs(r, doc, saved)
    return saved


def _read_graphs(r: JsonReader, doc: dict[str, Any], saved: Saved) -> None:
    """The decision graphs of a circuits document into ``saved``, in a new manager."""
    forest = saved.forest
    n, k = len(forest.features), len(forest.classes)
    order = _numbers(r, r.get(doc, "order", list, "circuits"), "order")
    if sorted(order) != list(range(n)):
        raise r.fail("order", f"must list the features 0 to {n - 1} once each")
    classes = [_numbers(r, roots, f"classes[{c}]")
               for c, roots in enumerate(_listed(r, doc, "classes", k))]
    negated = {t: root for t, root in enumerate(_listed(r, doc, "negated", k))
               if root is not None}
    _numbers(r, list(negated.values()), "negated")
    projections: dict[tuple[int, ...], list[int] | None] = {}
    for i, entry in enumerate(r.get(doc, "projections", list, "circuits")):
        where = f"projections[{i}]"
        r.only(entry if isinstance(entry, dict) else {}, ("roots", "rows"), where)
        key = tuple(_numbers(r, r.get(entry, "roots", list, where), f"{where}.roots"))
        rows = entry.get("rows") if isinstance(entry, dict) else None
        if rows is not None:
            rows = _numbers(r, r.get(entry, "rows", list, where), f"{where}.rows")
            if n > MAX_FEATURES or len(rows) != 1 << n:
                raise r.fail(where, f"{len(rows)} rows, where {n} features have "
                                    f"{1 << n if n <= MAX_FEATURES else 'none'}")
        projections[key] = rows
    count = r.get(doc, "nodes", int, "circuits")
    try:
        code = _little_endian(zlib.decompress(base64.b64decode(
            r.get(doc, "code", str, "circuits"), validate=True)))
    except (binascii.Error, ValueError, zlib.error) as exc:
        raise r.fail("code", f"damaged or cut short ({exc})") from None
    refs = [x for roots in classes for x in roots] + list(negated.values()) + \
        [x for key in projections for x in key] + \
        [x for rows in projections.values() if rows is not None for x in rows]
    dg = DG(forest.features, order)
    try:
        ids = iter(dg.load(code, refs))
    except ValueError as exc:
        raise r.fail("code", str(exc)) from None
    if len(dg) - 2 != count:
        raise r.fail("code", f"{len(dg) - 2} distinct nodes, where field 'nodes' says {count}")
    classes = [[next(ids) for _ in roots] for roots in classes]
    negated = {t: next(ids) for t in negated}
    keys = [tuple(next(ids) for _ in key) for key in projections]
    projections = {key: None if rows is None else [next(ids) for _ in rows]
                   for key, rows in zip(keys, projections.values())}
    graphs = [x for roots in classes for x in roots] + list(negated.values()) + \
        [x for rows in projections.values() if rows is not None for x in rows]
    if not all(dg.ordered[x] for x in graphs):
        raise r.fail("code", "a class formula, negated class or projection is not ordered "
                             "under the field 'order'")
    saved.compiled = DGCompilation(dg, "dg-conj", classes, [0.0] * k, 0.0,
                                   roots_3b=[list(roots) for roots in classes])
    saved.negated, saved.projections = negated, projections


def _listed(r: JsonReader, doc: dict[str, Any], key: str, k: int) -> list[Any]:
    """Field ``key``: a list of one item per class."""
    items = r.get(doc, key, list, "circuits")
    if len(items) != k:
        raise r.fail(key, f"{len(items)} items, where the forest has {k} classes")
    return items


def _numbers(r: JsonReader, items: Any, where: str) -> list[int]:
    """A list of node numbers (integers from 0; the nodes' loading checks the upper bound)."""
    if not isinstance(items, list) or not all(
            type(x) is int and x >= 0 for x in items):  # noqa: E721 - bools are not numbers
        raise r.fail(where, "must be a list of node numbers (integers from 0)")
    return items
