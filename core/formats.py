"""The interchange formats' shared conventions and their JSON Schemas (``docs/formats.md``).

Circuit files written by ``rfcircuits compile --out`` and kept in the golden corpus are named
by :func:`circuit_stem`, so that both name the same class's file the same way.

Every format rfcircuits reads or writes has a JSON Schema (draft 2020-12) shipped in the
package's ``schemas`` folder: :data:`SCHEMAS` names them, :func:`schema` loads one and
:func:`validator` makes a validator of it. A schema checks a document's shape; the readers
also check what a schema cannot express (that names referred to exist, indices are in range,
trees are acyclic, sets are in canonical order). Validation needs the ``jsonschema`` package,
a test dependency only: the library itself never validates with it.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

#: The base of the schemas' ``$id``; a schema refers to another by its file name.
SCHEMA_BASE = "https://rfcircuits.invalid/schemas/"
#: The packaged schemas, by name (file ``schemas/<name>.schema.json``).
SCHEMAS = ("common", "forest", "instance", "terms", "nnf", "dg", "circuits", "explanation", "repro",
           "corpus-manifest", "compile-summary", "verify-input", "verify-report",
           "fuzz-summary", "mutate-summary", "bench", "crosscheck-units", "peer-report",
           "verify-peer")


def circuit_stem(index: int, name: str) -> str:
    """The file-name stem of class ``index``'s circuit (class names may hold any character)."""
    return f"R{index}-{re.sub(r'[^A-Za-z0-9._-]+', '_', name)[:60]}"


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema ``name`` (one of :data:`SCHEMAS`), freshly loaded from the package."""
    if name not in SCHEMAS:
        raise ValueError(f"unknown schema {name!r}: expected one of {', '.join(SCHEMAS)}")
    path = resources.files("rfcircuits") / "schemas" / f"{name}.schema.json"
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def validator(name: str) -> Validator:
    """A ``jsonschema`` validator of schema ``name`` (needs ``jsonschema`` 4.18 or later).

    References to the other packaged schemas are resolved once, in place (the schemas are not
    recursive), never over the network: a validator that looks them up at each use is about
    five times slower, which matters for circuits of many thousands of nodes."""
    try:
        from jsonschema import Draft202012Validator
        from referencing import Registry, Resource
    except ImportError as exc:
        raise ImportError(
            "rfcircuits.formats.validator needs the jsonschema package (4.18 or later), a test "
            "dependency of rfcircuits: pip install 'jsonschema>=4.18', or install rfcircuits "
            "with its [test] extra") from exc
    registry: Registry[Any] = Registry().with_resources(
        (f"{SCHEMA_BASE}{n}.schema.json", Resource.from_contents(schema(n))) for n in SCHEMAS)
    root = f"{SCHEMA_BASE}{name}.schema.json"
    result: Validator = Draft202012Validator(
        _inline(schema(name), registry.resolver(root).lookup(root).resolver))
    return result


#: Keywords whose value is a schema, a list of schemas, or an object of schemas.
_SCHEMA_KEYWORDS = {"items", "additionalProperties", "propertyNames", "not", "if", "then",
                    "else", "contains", "unevaluatedItems", "unevaluatedProperties"}
_SCHEMA_LISTS = {"prefixItems", "allOf", "anyOf", "oneOf"}
_SCHEMA_OBJECTS = {"properties", "patternProperties", "dependentSchemas"}


def _inline(node: Any, resolver: Any) -> Any:
    """The schema ``node`` with every ``$ref`` replaced by what it refers to (resolved by
    ``resolver``, a ``referencing`` resolver whose base is ``node``'s document); a ``$ref``
    beside other keywords becomes one more member of ``allOf``, which means the same."""
    if not isinstance(node, dict):
        return node  # a boolean schema
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SCHEMA_KEYWORDS:
            out[key] = _inline(value, resolver)
        elif key in _SCHEMA_LISTS:
            out[key] = [_inline(v, resolver) for v in value]
        elif key in _SCHEMA_OBJECTS:
            out[key] = {k: _inline(v, resolver) for k, v in value.items()}
        elif key not in ("$ref", "$defs"):
            out[key] = value
    if "$ref" not in node:
        return out
    resolved = resolver.lookup(node["$ref"])
    target = _inline(resolved.contents, resolved.resolver)
    for key in ("$id", "$schema"):
        target.pop(key, None)
    if set(out) <= {"title", "description"}:
        return target
    out["allOf"] = [*out.get("allOf", ()), target]
    return out
