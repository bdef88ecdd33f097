"""Reading the JSON files users give: one document (forests, circuits, repro files, the corpus
manifest) or JSON Lines (instances, explanations).

The rules (docs/formats.md#how-files-are-read) make every file either read as standard JSON
means it or refused with an :class:`~rfcircuits.errors.InputError` naming the file and line:

- UTF-8 text; a byte order mark at the very start is skipped; an invalid byte is an error
  giving its line and byte offset.
- A document file must hold a value (an empty or blank file is an error); in JSON Lines, blank
  lines are skipped and lines end at ``\\n`` (or ``\\r\\n``) only.
- A key repeated in one object, the tokens ``NaN``, ``Infinity`` and ``-Infinity`` (Python's
  ``json`` reads them; standard JSON has no such tokens), an integer of more than
  :data:`MAX_INT_DIGITS` digits, a number too large for a float (``1e999``), a string
  escaping half a surrogate pair (``"\\ud800"``: not Unicode text, it could not be written
  out again), and arrays and objects nested more than :data:`MAX_DEPTH` deep are errors.

Valid files take the C decoder's fast path plus cheap scans of the raw bytes (nesting, the
digit runs that out-of-range numbers need, escaped surrogates); only a file those scans
flag, or a failed decode, is searched token by token for the position to report.
"""

from __future__ import annotations

import codecs
import json
import json.decoder
import json.scanner
import math
import os
import re
import sys
from typing import Any, NamedTuple

from rfcircuits.errors import InputError

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "JsonLine", "load_json_file", "load_json_lines"]

#: Deepest nesting of arrays and objects read (``[[1]]`` is 2 deep); rfcircuits' formats need
#: about ten levels, and no later step has to recurse on a deeper document.
MAX_DEPTH = 64
#: Most digits of an integer read: CPython's own default limit on converting text to int.
MAX_INT_DIGITS = 4300

_WHITESPACE = " \t\n\r"  # JSON's whitespace (str.strip would also strip form feeds, etc.)
# A string token, or its unterminated rest of the line (it never fails to match, so a scan
# stays linear on unterminated strings).
_STRING = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"?'
_STRING_BYTES = re.compile(_STRING.encode())
# Tokens outside strings that a valid file can hold and the rules refuse; strings are
# matched (and skipped) first so that their contents never count.
_TOKEN = re.compile(_STRING + r"|([\[{])|([\]}])|(-?Infinity|NaN)"
                    r"|(-?\d+)((?:\.\d+)?(?:[eE][-+]?\d+)?)")
# Digits as 0 and E as e, to find with plain substring searches the runs without which no
# number breaks the rules: a float reaches 1.8e308 only with a positive exponent of three
# digits or more, or with 210 digits before its point (its exponent then at most 99).
_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789E", b"0000000000e")
_SUSPECT_RUNS = (b"0" * 210, b"0e000", b"0e+000")
# An escaped surrogate, of a pair or alone (telling them apart needs the string's tokens:
# in JSON, "\\ud800" is a backslash and "ud800").
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_PARENS = bytes.maketrans(b"[]{}", b"()()")
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))


class JsonLine(NamedTuple):
    """A non-blank line of a JSON Lines file: its number (from 1), text and value."""

    number: int
    text: str
    value: Any


class _Problem(Exception):
    """A rule broken at offset ``pos`` of the decoded text."""

    def __init__(self, pos: int, message: str) -> None:
        super().__init__(message)
        self.pos = pos


class _RepeatedKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key
        self.start: int | None = None  # where the object holding it starts, once known


class _Refused(Exception):
    """A ``NaN`` / ``Infinity`` token met by the C decoder (its hooks get no position)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return obj


def _refuse(token: str) -> Any:
    raise _Refused(token)


def _read_text(path: str) -> tuple[str, bytes]:
    """The decoded text of a file and its bytes, a leading byte order mark dropped from
    both."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    data = data[bom:]
    try:
        return data.decode("utf-8"), data
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"{path}, line {line}: not UTF-8 text ({exc.reason}: byte "
                         f"0x{data[exc.start]:02x} at byte offset {exc.start + bom})") from None


def _suspect(data: bytes) -> bool:
    """Whether a file may break the number or nesting rules (False: it surely does not)."""
    if _SURROGATE_ESCAPE.search(data):
        return True
    # Numbers and brackets outside strings only (a long string, as the nodes of saved
    # circuits in base64, holds digit runs that are no numbers).
    outside = _STRING_BYTES.sub(b"", data)
    numbers = outside.translate(_DIGITS_AS_ZERO)
    if any(run in numbers for run in _SUSPECT_RUNS):
        return True
    # Brackets as parentheses; each pass drops the innermost pairs, so the result is empty
    # exactly when they are balanced and at most MAX_DEPTH deep.
    nesting = outside.translate(_PARENS, _NOT_BRACKETS)
    for _ in range(MAX_DEPTH):
        nesting = nesting.replace(b"()", b"")
    return bool(nesting)


def _check_tokens(text: str) -> None:
    """Raise :class:`_Problem` at the first token that breaks the rules on numbers, constants,
    surrogates or nesting."""
    int_limit = min(MAX_INT_DIGITS, sys.get_int_max_str_digits() or MAX_INT_DIGITS)
    depth = 0
    for m in _TOKEN.finditer(text):
        opening, closing, constant, whole, rest = m.groups()
        if m.lastindex is None:  # a string
            if "\\u" in m.group() and _lone_surrogate(m.group()):
                raise _Problem(m.start(), "a string escapes half a surrogate pair (\\ud800 to "
                                          "\\udfff alone), which is not Unicode text")
        elif opening:
            depth += 1
            if depth > MAX_DEPTH:
                raise _Problem(m.start(), f"arrays and objects nested more than {MAX_DEPTH} "
                                          "deep")
        elif closing:
            depth -= 1
        elif constant:
            raise _Problem(m.start(), f"{constant} is not a JSON number (standard JSON has no "
                                      "NaN or infinities)")
        elif whole and not rest and len(whole.lstrip("-")) > int_limit:
            raise _Problem(m.start(), f"an integer of {len(whole.lstrip('-'))} digits (at most "
                                      f"{int_limit} are read)")
        elif whole and rest and math.isinf(float(m.group())):
            raise _Problem(m.start(), f"the number {_short(m.group())} is too large for a "
                                      "float (about 1.8e308 at most)")


def _lone_surrogate(token: str) -> bool:
    try:
        json.loads(token).encode("utf-8")
    except json.JSONDecodeError:  # unterminated: the decoder reports it
        return False
    except UnicodeEncodeError:
        return True
    return False


def _short(token: str) -> str:
    return token if len(token) <= 30 else f"{token[:12]}…{token[-12:]} ({len(token)} chars)"


def _repeated_key(text: str) -> _RepeatedKey:
    """The first repeated key, with the start of its object: the pure-Python scanner, whose
    ``parse_object`` is wrapped to note where each object starts (the C one tells no
    position)."""
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)

    def parse_object(s_and_end: tuple[str, int], *args: Any) -> Any:
        try:
            return json.decoder.JSONObject(s_and_end, *args)
        except _RepeatedKey as exc:
            if exc.start is None:  # the innermost object, whose hook raised
                exc.start = s_and_end[1] - 1
            raise

    decoder.parse_object = parse_object  # type: ignore[attr-defined]
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    try:
        decoder.decode(text)
    except _RepeatedKey as exc:
        return exc
    raise AssertionError("the pure-Python scanner found no repeated key")


def _decode(text: str, suspect: bool) -> Any:
    """One JSON value; rules broken raise :class:`_Problem`, syntax errors
    :class:`json.JSONDecodeError`."""
    if suspect:
        _check_tokens(text)
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_refuse)
    except _RepeatedKey:
        repeated = _repeated_key(text)
        raise _Problem(repeated.start or 0, f"the key {repeated.key!r} is repeated in an "
                                            "object") from None
    except json.JSONDecodeError:
        raise
    except (_Refused, ValueError, RecursionError):  # ValueError: the int limit of this Python
        _check_tokens(text)
        raise


def load_json_file(path: str | os.PathLike[str]) -> Any:
    """Read a JSON document under the rules above; errors name the file and the line (and
    the column, for syntax errors)."""
    path = os.fspath(path)
    text, data = _read_text(path)
    if not text.strip(_WHITESPACE):
        raise InputError(f"{path}: empty file, expected a JSON document")
    try:
        return _decode(text, _suspect(data))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: "
                         f"{exc.msg}") from None
    except _Problem as exc:
        line = text.count("\n", 0, exc.pos) + 1
        raise InputError(f"{path}, line {line}: {exc}") from None


def load_json_lines(path: str | os.PathLike[str]) -> list[JsonLine]:
    """The non-blank lines of a JSON Lines file, each one JSON value read under the rules
    above; errors name the file and line. A file with no such line gives ``[]``: each caller
    says whether that is an error."""
    path = os.fspath(path)
    text, data = _read_text(path)
    suspect = _suspect(data)
    rows = []
    for n, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")  # a CRLF file's lines read as an LF file's
        if not line.strip(_WHITESPACE):
            continue
        try:
            rows.append(JsonLine(n, line, _decode(line, suspect)))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}, line {n}: invalid JSON ({exc.msg}, column {exc.colno})") \
                from None
        except _Problem as exc:
            raise InputError(f"{path}, line {n}: {exc}") from None
    return rows
