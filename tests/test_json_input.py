"""Users' JSON files are read by one set of rules (docs/formats.md#how-files-are-read): each
bad file gives an InputError naming the file and the line (command line: exit 2, one line
on stderr, no traceback), never a traceback or a silent guess.

Expected line numbers are counted by hand from the inputs written here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rfcircuits.cli.main import main
from rfcircuits.errors import InputError
from rfcircuits.jsonio import MAX_DEPTH, MAX_INT_DIGITS, load_json_file, load_json_lines

CASE = Path(__file__).resolve().parent.parent / "fixtures" / "cases" / "random-classes-2-0000"
FOREST, INSTANCES = CASE / "forest.json", CASE / "instances.jsonl"
EXPLANATIONS = CASE / "expected-first.jsonl"
BOM = b"\xef\xbb\xbf"
DEEP = "[" * 100_000 + "]" * 100_000


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# (rule, document file, its bad line, JSON Lines file, its bad line, words of the message).
# The JSON Lines files start with a good line and a blank one, so the bad line is line 3.
RULES = [
    ("deep", '{"a":\n' + DEEP + "}", 2, "{}\n\n" + DEEP + "\n", 3, "nested more than 64 deep"),
    ("repeated key", '{"a": 1,\n "b": [\n  {"c": 1, "c": 2}]}', 3,
     '{}\n\n{"c": 1, "c": 2}\n', 3, "the key 'c' is repeated"),
    ("NaN", '{"a": [1,\n NaN]}', 2, "{}\n\n[NaN]\n", 3, "NaN is not a JSON number"),
    ("Infinity", '{"a":\n\n Infinity}', 3, '{}\n\n{"x": Infinity}\n', 3,
     "Infinity is not a JSON number"),
    ("-Infinity", '{"a":\n -Infinity}', 2, '{}\n\n{"x": -Infinity}\n', 3,
     "-Infinity is not a JSON number"),
    ("long integer", '{"a":\n' + "7" * 5000 + "}", 2, "{}\n\n" + "7" * 5000 + "\n", 3,
     "an integer of 5000 digits (at most 4300 are read)"),
    ("overflow", '{"a": [1,\n 1e999]}', 2, '{}\n\n{"x": 1e999}\n', 3,
     "the number 1e999 is too large for a float"),
    ("lone surrogate", '{"a":\n "x\\ud800"}', 2, '{}\n\n["\\udc00"]\n', 3,
     "a string escapes half a surrogate pair"),
]


def bad_utf8(kind: str) -> tuple[bytes, int, int]:
    """A file with an invalid byte, the line holding it and its byte offset (counted by
    hand: the BOM is 3 bytes, ``{"a":\\n`` 6 and `` "`` 2)."""
    if kind == "document":
        return BOM + b'{"a":\n "\xff"}', 2, 11
    return b'{}\n\n{"\xfe": 1}\n', 3, 6


def commands(tmp_path: Path) -> dict[str, tuple[str, list[str]]]:
    """For each kind of input: whether it is a document or JSON Lines, and the command line
    reading ``tmp_path / bad`` in that place."""
    bad = str(tmp_path / "bad")
    return {
        "explain --forest": ("document", ["explain", "--forest", bad, "--instances",
                                          str(INSTANCES)]),
        "explain --instances": ("lines", ["explain", "--forest", str(FOREST), "--instances",
                                          bad]),
        "verify --explanations": ("lines", ["verify", "--forest", str(FOREST), "--instances",
                                            str(INSTANCES), "--explanations", bad]),
        "crosscheck --replay": ("document", ["crosscheck", "--replay", bad, "--no-progress"]),
    }


PLACES = ["explain --forest", "explain --instances", "verify --explanations",
          "crosscheck --replay"]


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one-line message of a command that must exit 2."""
    assert main(argv) == 2
    out = capsys.readouterr()
    assert "Traceback" not in out.err and out.err.count("\n") == 1, out.err
    return out.err


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("rule", RULES, ids=[r[0] for r in RULES])
def test_each_rule_is_an_error_naming_the_file_and_line(rule, place, tmp_path, capsys):
    _, document, doc_line, lines, lines_line, words = rule
    kind, argv = commands(tmp_path)[place]
    text, line = (document, doc_line) if kind == "document" else (lines, lines_line)
    (tmp_path / "bad").write_text(text, encoding="utf-8")
    err = refused(argv, capsys)
    assert f"error: {tmp_path / 'bad'}, line {line}: " in err and words in err


@pytest.mark.parametrize("place", PLACES)
def test_invalid_utf8_names_the_line_and_byte_offset(place, tmp_path, capsys):
    kind, argv = commands(tmp_path)[place]
    data, line, offset = bad_utf8(kind)
    (tmp_path / "bad").write_bytes(data)
    err = refused(argv, capsys)
    assert f"{tmp_path / 'bad'}, line {line}: not UTF-8 text" in err
    assert f"at byte offset {offset})" in err


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("text", ["", " \n\t\r\n"], ids=["empty", "blank"])
def test_empty_files(place, text, tmp_path, capsys):
    kind, argv = commands(tmp_path)[place]
    (tmp_path / "bad").write_text(text)
    if place == "verify --explanations":
        # an explanations file may hold no line: every instance is then reported as missing
        assert main(argv) == 1
        assert "instances without a line 3" in capsys.readouterr().out
        return
    err = refused(argv, capsys)
    words = "empty file, expected a JSON document" if kind == "document" else \
        "holds no instances"
    assert f"error: {tmp_path / 'bad'}: {words}" in err


@pytest.mark.parametrize("place", PLACES)
def test_syntax_errors_keep_their_line_and_column(place, tmp_path, capsys):
    kind, argv = commands(tmp_path)[place]
    # the "]" after the stray comma: document line 2, column 8; JSON Lines line 3, column 7
    text = '{"a":\n [1, 2,]}' if kind == "document" else '{}\n\n[1, 2,]\n'
    (tmp_path / "bad").write_text(text)
    err = refused(argv, capsys)
    expected = "invalid JSON at line 2, column 8: " if kind == "document" else \
        "line 3: invalid JSON (Expecting value, column 7)"
    assert expected in err


@pytest.mark.parametrize("place", PLACES)
def test_missing_file_and_directory(place, tmp_path, capsys):
    _, argv = commands(tmp_path)[place]
    assert f"{tmp_path / 'bad'}: no such file" in refused(argv, capsys)
    (tmp_path / "bad").mkdir()
    assert f"{tmp_path / 'bad'}: is a directory, expected a file" in refused(argv, capsys)


def test_a_bom_changes_nothing(tmp_path, capsys):
    for name, source in (("forest.json", FOREST), ("instances.jsonl", INSTANCES)):
        (tmp_path / name).write_bytes(BOM + source.read_bytes())
    assert main(["explain", "--forest", str(FOREST), "--instances", str(INSTANCES)]) == 0
    plain = capsys.readouterr().out
    assert main(["explain", "--forest", str(tmp_path / "forest.json"),
                 "--instances", str(tmp_path / "instances.jsonl")]) == 0
    assert capsys.readouterr().out == plain
    (tmp_path / "e.jsonl").write_bytes(BOM + EXPLANATIONS.read_bytes())
    assert main(["verify", "--forest", str(FOREST), "--instances", str(INSTANCES),
                 "--explanations", str(tmp_path / "e.jsonl")]) == 0


# ---------------------------------------------------------------------------------------------
# The reader itself


def write(tmp_path: Path, text: str | bytes, name: str = "f.json") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def error(call, path: Path) -> str:
    with pytest.raises(InputError) as info:
        call(path)
    return str(info.value)


def test_nesting_up_to_the_limit_is_read(tmp_path):
    assert MAX_DEPTH == 64
    value = load_json_file(write(tmp_path, nested(64)))
    for _ in range(63):
        (value,) = value
    assert value == []
    path = write(tmp_path, '{\n"a":' + nested(64) + "}")  # the 64th "[" is the 65th level
    assert error(load_json_file, path) == f"{path}, line 2: arrays and objects nested more " \
                                          "than 64 deep"
    mixed = '{"a": [' * 32 + "1" + "]}" * 32  # 64 levels, objects and arrays
    value = load_json_file(write(tmp_path, mixed))
    for _ in range(32):
        (value,) = value["a"]
    assert value == 1
    # many arrays side by side are not deep (1e300 makes the file take the token scan)
    assert len(load_json_file(write(tmp_path, "[1e300" + ", [[1]]" * 100 + "]"))) == 101
    path = write(tmp_path, "[" + mixed + "]")
    assert error(load_json_file, path) == f"{path}, line 1: arrays and objects nested more " \
                                          "than 64 deep"


def test_brackets_and_tokens_in_strings_do_not_count(tmp_path):
    doc = {"[" * 100: "{" * 100, "NaN": "Infinity -Infinity", "digits": "9" * 5000,
           "exponent": "1e999", 'quote " and \\': "]" * 100, "ünï": "\u2028"}
    text = json.dumps(doc, ensure_ascii=False)
    assert load_json_file(write(tmp_path, text)) == doc
    assert [line.value for line in load_json_lines(write(tmp_path, text + "\n" + text))] \
        == [doc, doc]


def test_numbers_at_and_past_the_limits(tmp_path):
    assert MAX_INT_DIGITS == 4300
    assert load_json_file(write(tmp_path, "-" + "9" * 4300)) == -int("9" * 4300)
    path = write(tmp_path, "[\n-" + "9" * 4301 + "]")
    assert error(load_json_file, path) == f"{path}, line 2: an integer of 4301 digits (at most " \
                                          "4300 are read)"
    # floats: the largest finite, long mantissas and exponents that stay in range, underflow
    for text, value in (("1.7976931348623157e308", 1.7976931348623157e308), ("1e-999", 0.0),
                        ("0.001e310", 1e307), ("1" + "0" * 300 + ".5", 1e300),
                        ("1" + "0" * 5000 + ".0e-4800", 1e200)):
        assert load_json_file(write(tmp_path, text)) == pytest.approx(value, rel=1e-15)
    for text in ("1.8e308", "-1e999", "1" + "0" * 309 + ".0", "1" + "0" * 299 + "e10",
                 "0.1E+0400"):
        path = write(tmp_path, '{"a":\n\n' + text + "}")
        assert error(load_json_file, path).startswith(f"{path}, line 3: the number ")


def test_repeated_keys_name_the_line_of_their_object(tmp_path):
    path = write(tmp_path, '{"x": {"y": 1},\n "x": 2}')   # the outer object, line 1
    assert error(load_json_file, path) == f"{path}, line 1: the key 'x' is repeated in an " \
                                          "object"
    path = write(tmp_path, '[{"k": 1},\n\n {"k": 1, "z": [\n{"k": 1, "k": 1}]}]')
    assert error(load_json_file, path) == f"{path}, line 4: the key 'k' is repeated in an " \
                                          "object"
    assert load_json_file(write(tmp_path, '[{"k": 1}, {"k": 1}]')) == [{"k": 1}, {"k": 1}]


def test_utf8_and_the_bom(tmp_path):
    assert load_json_file(write(tmp_path, BOM + '{"é": "\u2028"}'.encode())) == \
        {"é": "\u2028"}
    # a BOM later than the first byte is text, which JSON does not allow there
    assert "invalid JSON at line 1, column 1" in error(load_json_file,
                                                       write(tmp_path, BOM + BOM + b"1"))
    path = write(tmp_path, b'["ok",\n"\xc3\xa9",\n"\xc3"]')  # a truncated two-byte sequence
    assert error(load_json_file, path) == f"{path}, line 3: not UTF-8 text (invalid " \
                                          "continuation byte: byte 0xc3 at byte offset 14)"


def test_surrogate_escapes(tmp_path):
    # a pair is one character; an escaped backslash and "ud800" are text
    assert load_json_file(write(tmp_path, '["\\ud83d\\ude00", "\\\\ud800"]')) == \
        ["\U0001f600", "\\ud800"]
    for text in ('"\\\\ud800\\udc00"', '"\\udc00\\ud800"', '"\\ud800\\ud800"', '"\\uDBFF"'):
        path = write(tmp_path, "[1,\n" + text + "]")
        assert error(load_json_file, path) == f"{path}, line 2: a string escapes half a " \
            "surrogate pair (\\ud800 to \\udfff alone), which is not Unicode text", text


def test_json_lines_numbering_and_line_ends(tmp_path):
    path = write(tmp_path, b'\xef\xbb\xbf{"a": 1}\r\n\r\n  \n["\xe2\x80\xa8"]\r\n', "f.jsonl")
    lines = load_json_lines(path)
    assert [(line.number, line.text, line.value) for line in lines] == \
        [(1, '{"a": 1}', {"a": 1}), (4, '["\u2028"]', ["\u2028"])]
    assert load_json_lines(write(tmp_path, "\n \n", "g.jsonl")) == []
    path = write(tmp_path, '1\n2\n{"n": NaN}', "h.jsonl")
    assert error(load_json_lines, path) == f"{path}, line 3: NaN is not a JSON number " \
                                           "(standard JSON has no NaN or infinities)"


TEXT = st.text(st.characters(blacklist_categories=("Cs",)))  # surrogates are not UTF-8
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(JSON, st.booleans())
def test_valid_json_reads_as_the_standard_library_reads_it(tmp_path_factory, value, ascii_):
    text = json.dumps(value, ensure_ascii=ascii_, indent=1 if ascii_ else None)
    path = tmp_path_factory.mktemp("j") / "v.json"
    path.write_text(text, encoding="utf-8")
    assert load_json_file(path) == json.loads(text)
