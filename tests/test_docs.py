"""The user documentation cannot rot: its examples run, and the code it names exists.

``docs/semantics.md`` shows worked examples as fenced blocks: ```` ```json file=NAME ```` (and
``jsonl``) holds an input file, a ```` ```console ```` block holds one ``$ rfcircuits ...`` command,
and the ```` ```json output ```` block right after it holds what the command prints, one JSON value
per instance, wrapped for reading. Each command is run here on the page's files and must print
exactly those values (compared re-serialised, so key order counts too). The examples taken from the
paper must also give the answers the paper lists
(:mod:`rfcircuits.crosscheck.differential.spec_examples`), which were written down independently of
the engine.

``docs/algorithms.md`` maps algorithms to code: every repository path and every dotted name
``rfcircuits.…`` it cites must exist, and a table row's path must be the module of the row's
names, so that a rename or a move breaks this test rather than the page.
"""

from __future__ import annotations

import importlib
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rfcircuits.cli import main
from rfcircuits.crosscheck.differential import spec_examples
from rfcircuits.explain import Explainer
from rfcircuits.explanation import dumps
from rfcircuits.forest import load_forest
from rfcircuits.terms import terms_json

ROOT = Path(__file__).resolve().parent.parent
SEMANTICS = ROOT / "docs" / "semantics.md"
ALGORITHMS = ROOT / "docs" / "algorithms.md"

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    """A fenced block: the words of its info string, its text, the line it starts on."""

    info: tuple[str, ...]
    text: str
    line: int


@dataclass(frozen=True)
class Example:
    """A command of the page and the JSON values the page says it prints."""

    argv: tuple[str, ...]
    shown: tuple[Any, ...]
    line: int

    @property
    def id(self) -> str:
        return f"line{self.line}:" + " ".join(self.argv[1:])


def blocks(text: str) -> list[Block]:
    return [Block(tuple(m.group(1).split()), m.group(2), text.count("\n", 0, m.start()) + 1)
            for m in FENCE.finditer(text)]


def json_values(text: str) -> list[Any]:
    """The JSON values written one after another in ``text`` (whitespace between them)."""
    decoder = json.JSONDecoder()
    values, at = [], 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return values
        value, at = decoder.raw_decode(text, at)
        values.append(value)


def files(page: list[Block]) -> dict[str, str]:
    """The input files of a page, by name (a name given twice is an error of the page)."""
    out: dict[str, str] = {}
    for b in page:
        for word in b.info[1:]:
            if word.startswith("file="):
                name = word.removeprefix("file=")
                assert name not in out, f"line {b.line}: file {name} is given twice"
                out[name] = b.text
    return out


def examples(page: list[Block]) -> list[Example]:
    """Each console command with the output block that must follow it."""
    out = []
    for i, b in enumerate(page):
        if b.info[:1] != ("console",):
            continue
        commands = [line[2:] for line in b.text.splitlines() if line.startswith("$ ")]
        assert len(commands) == 1, f"line {b.line}: a console block holds one command"
        argv = tuple(shlex.split(commands[0]))
        assert argv[0] == "rfcircuits", f"line {b.line}: not an rfcircuits command"
        after = page[i + 1] if i + 1 < len(page) else None
        assert after is not None and after.info == ("json", "output"), \
            f"line {b.line}: the command is not followed by a json output block"
        out.append(Example(argv, tuple(json_values(after.text)), b.line))
    return out


SEMANTIC_BLOCKS = blocks(SEMANTICS.read_text(encoding="utf-8"))
FILES = files(SEMANTIC_BLOCKS)
EXAMPLES = examples(SEMANTIC_BLOCKS)


def run(example: Example, directory: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The lines ``example``'s command prints, run in ``directory`` holding the page's files."""
    for name, text in FILES.items():
        (directory / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(directory)
    code = main(list(example.argv[1:]))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out.splitlines()


def test_the_page_has_examples() -> None:
    assert len(EXAMPLES) >= 10
    assert all(e.shown for e in EXAMPLES)
    used = {e.argv[i + 1] for e in EXAMPLES for i, a in enumerate(e.argv[:-1])
            if a in ("--forest", "--instances")}
    assert used == set(FILES), "every input file of the page is used, and only those"


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_example_prints_what_the_page_shows(example: Example, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    printed = run(example, tmp_path, monkeypatch, capsys)
    assert printed == [dumps(value) for value in example.shown]


#: Forest file, instances file -> the example's forest, instance and answers.
PAPER_EXAMPLES = {
    ("susan.forest.json", "susan.jsonl"): (spec_examples.SUSAN_FOREST, spec_examples.SUSAN,
                                           spec_examples.SUSAN_ANSWERS),
    ("flip.forest.json", "flip.jsonl"): (spec_examples.FLIP_FOREST, spec_examples.FLIP,
                                         spec_examples.FLIP_ANSWERS),
}


def _option(argv: tuple[str, ...], name: str, default: str | None = None) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else default


def test_paper_examples_are_the_papers() -> None:
    for (forest_file, instances_file), (forest, instance, _) in PAPER_EXAMPLES.items():
        assert json.loads(FILES[forest_file]) == forest
        assert json_values(FILES[instances_file]) == [instance]


def test_paper_examples_give_the_published_answers() -> None:
    checked = set()
    for e in EXAMPLES:
        key = (_option(e.argv, "--forest"), _option(e.argv, "--instances"))
        if key not in PAPER_EXAMPLES or _option(e.argv, "--ties", "first") != "first":
            continue
        doc, _, answers = PAPER_EXAMPLES[key]
        forest = spec_examples.forest(doc)
        (shown,) = e.shown
        for field, answer in answers.items():
            if field not in shown:
                continue
            if field == "decision" or field == "robustness":
                assert shown[field] == answer, (e.id, field)
            else:
                expected = terms_json(forest, spec_examples.expected(forest, answer))
                assert shown[field] == expected, (e.id, field)
            checked.add((key, field))
    assert len(checked) == sum(len(a) for _, _, a in PAPER_EXAMPLES.values())


def test_library_call_gives_the_command_line_answer(tmp_path: Path) -> None:
    """The last paragraph of the page: the library call behind ``explain``."""
    (example,) = [e for e in EXAMPLES if e.argv[1:] == (
        "explain", "--forest", "susan.forest.json", "--instances", "susan.jsonl")]
    (tmp_path / "susan.forest.json").write_text(FILES["susan.forest.json"], encoding="utf-8")
    forest = load_forest(tmp_path / "susan.forest.json")
    x = json_values(FILES["susan.jsonl"])[0]
    assert Explainer(forest, ties="first").explain(x).to_line() == dumps(example.shown[0])
    shown = {k: v for k, v in example.shown[0].items()
             if k not in ("general_sufficient_reasons", "general_necessary_reasons",
                          "contrastive", "robustness", "shortest_flips")}
    assert Explainer(forest).explain(x, what=("sr", "nr")).to_line() == dumps(shown)


# -- docs/algorithms.md ------------------------------------------------------------------------

PATH = re.compile(r"`((?:core|crosscheck|tests|docs|fixtures)/[\w./-]+)`")
NAME = re.compile(r"`(rfcircuits(?:\.\w+)+)`")


def resolve(name: str) -> Any:
    """The object a dotted name denotes: its longest importable prefix, then attributes."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        module_name = ".".join(parts[:i])
        try:
            obj = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and not module_name.startswith(exc.name):
                raise
            continue
        for attr in parts[i:]:
            assert hasattr(obj, attr), f"{name}: {obj!r} has no attribute {attr!r}"
            obj = getattr(obj, attr)
        return obj
    raise AssertionError(f"{name}: no such module")


def module_of_path(path: str) -> str:
    """The dotted module of a repository source path (``core/`` is the package)."""
    stem = path.removesuffix(".py").split("/")
    top = {"core": ["rfcircuits"], "crosscheck": ["rfcircuits", "crosscheck"]}[stem[0]]
    rest = stem[1:]
    return ".".join(top + (rest[:-1] if rest[-1] == "__init__" else rest))


#: The pages whose cited paths and names must exist: every page of docs/ and the READMEs.
CITING = (ROOT / "README.md", ROOT / "fixtures" / "README.md",
          *sorted((ROOT / "docs").glob("*.md")))


def _cited(pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    """``(page name, cited text)`` for every match of ``pattern`` on the pages."""
    return sorted({(page.name, m.group(1)) for page in CITING
                   for m in pattern.finditer(page.read_text(encoding="utf-8"))})


@pytest.mark.parametrize("page,path", _cited(PATH))
def test_cited_path_exists(page: str, path: str) -> None:
    assert (ROOT / path).exists(), f"{page} cites {path}, which does not exist"


@pytest.mark.parametrize("page,name", _cited(NAME))
def test_cited_name_exists(page: str, name: str) -> None:
    resolve(name)


def test_cited_c_functions_exist() -> None:
    source = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "core" / "c-store").glob("*"))
    cited = set(re.findall(r"`(Store_\w+)`", ALGORITHMS.read_text(encoding="utf-8")))
    assert cited
    for name in sorted(cited):
        assert re.search(rf"\b{name}\(", source), f"core/c-store/ has no function {name}"


def test_algorithms_table_rows_name_their_modules() -> None:
    rows = [line for line in ALGORITHMS.read_text(encoding="utf-8").splitlines()
            if line.startswith("|") and PATH.search(line)]
    assert len(rows) >= 20
    for row in rows:
        modules = {module_of_path(p) for p in PATH.findall(row) if p.endswith(".py")}
        for name in NAME.findall(row):
            assert any(name == m or name.startswith(m + ".") for m in modules), \
                f"{name} is not in the row's modules {sorted(modules)}: {row}"


def test_algorithms_page_covers_the_papers_algorithms() -> None:
    text = ALGORITHMS.read_text(encoding="utf-8")
    for alg in ("1", "2", "3", "3A", "3B", "4", "5", "6", "7"):
        assert re.search(rf"\| Alg\. {alg} ", text), f"no table row for Alg. {alg}"


# -- commands the pages show ----------------------------------------------------------------


def shell_words(text: str) -> list[list[str]]:
    """The words of each command line of a shell block (continuation lines joined, a line
    joined with the next while a quotation is open, ``$ `` prompts and comments dropped;
    ``;``, ``&&``, ``|``, redirections and parentheses are words of their own)."""
    out: list[list[str]] = []
    pending = ""
    for line in text.replace("\\\n", " ").splitlines():
        pending += line.removeprefix("$ ")
        lexer = shlex.shlex(pending, posix=True, punctuation_chars=True)
        lexer.whitespace_split, lexer.commenters = True, "#"
        try:
            out.append(list(lexer))
        except ValueError:  # a quotation spans lines
            pending += "\n"
            continue
        pending = ""
    return out


def shown_commands() -> list[tuple[str, int, tuple[str, ...]]]:
    """``(page, block's line, argv)`` of every ``rfcircuits COMMAND ...`` in the shell blocks
    (``sh``, ``console``) of the pages, up to the end of its line, ``;``, ``&&``, ``|``, a
    redirection or a closing parenthesis. Shell variables (``$DATA``) stand for ``1``."""
    from rfcircuits.cli.main import build_parser

    subcommands = {name for action in build_parser()._subparsers._group_actions
                   for name in getattr(action, "choices", None) or ()}
    found = []
    for page in CITING:
        for block in blocks(page.read_text(encoding="utf-8")):
            if block.info[:1] not in {("sh",), ("console",)}:
                continue
            for words in shell_words(block.text):
                for i, word in enumerate(words[:-1]):
                    if word != "rfcircuits" or words[i + 1] not in subcommands:
                        continue
                    argv = []
                    for w in words[i + 1:]:
                        if set(w) <= set(";&|<>()"):
                            break
                        argv.append("1" if "$" in w else w)
                    found.append((page.name, block.line, tuple(argv)))
    return found


@pytest.mark.parametrize("page,line,argv", shown_commands())
def test_shown_command_parses(page: str, line: int, argv: tuple[str, ...]) -> None:
    """Every command a page shows is one the command line accepts (its options, their
    values' types and choices): parsed, not run."""
    from rfcircuits.cli.main import build_parser

    try:
        build_parser().parse_args(list(argv))
    except SystemExit as exc:
        pytest.fail(f"{page}:{line}: rfcircuits {' '.join(argv)} does not parse ({exc.code})")
