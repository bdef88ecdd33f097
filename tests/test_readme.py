"""Every command the README shows runs as written.

The README's fenced blocks are of three kinds: ```` ```sh ```` blocks of commands, run here
in order in an empty directory (each block in its own), ```` ```python ```` blocks, run in
order by ``tests/test_api.py``, and ```` ```text ```` blocks of output, not run. A command
is an ``rfcircuits`` line (run through :func:`rfcircuits.cli.main`, which the console script
calls), a ``python`` line (run by this interpreter), or ``pip install``, which CI runs
itself: ``.ci/run`` installs the package and ends with the README's test command, which must
be its last line, word for word. Anything else in a block, or a block of another kind, fails
here, so that the README cannot show a command no test runs.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from rfcircuits.cli import main
from tests import test_api
from tests.test_docs import Block, blocks

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CI = ROOT / ".ci" / "run"
PAGE = blocks(README.read_text(encoding="utf-8"))
#: The two commands the README opens with: install and try it, install and test it.
FIRST = "pip install . && rfcircuits demo"
TEST_COMMAND = "pip install '.[test]' && pytest"
KINDS = ("sh", "python", "text")


def lines(block: Block) -> list[str]:
    """The block's command lines: continuation lines joined, comments and blanks left out."""
    joined = block.text.replace("\\\n", " ")
    return [line for line in joined.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def commands(line: str) -> list[list[str]]:
    """The argument vectors of a line's commands (``a && b``), trailing comments dropped."""
    words = shlex.split(line, comments=True)
    out: list[list[str]] = [[]]
    for word in words:
        if word == "&&":
            out.append([])
        else:
            out[-1].append(word)
    return out


SH = [b for b in PAGE if b.info[:1] == ("sh",)]


def test_every_block_is_of_a_kind_a_test_runs() -> None:
    assert SH and all(b.info[:1] in {(k,) for k in KINDS} for b in PAGE), \
        [(b.line, b.info) for b in PAGE if b.info[:1] not in {(k,) for k in KINDS}]
    assert README in test_api.DOCS, "tests/test_api.py runs the README's python blocks"


def test_the_readme_opens_with_the_two_commands_and_ci_runs_the_second() -> None:
    first = PAGE[0]
    assert first.info == ("sh",) and first.line <= 3, "the README opens with its commands"
    assert lines(first) == [FIRST, TEST_COMMAND]
    ci = [line for line in CI.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert ci[-1] == TEST_COMMAND


def run(argv: list[str], directory: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Run one command of the README in ``directory``; fail on a non-zero exit."""
    if argv[0] == "rfcircuits":
        try:
            code = main(argv[1:])
        except SystemExit as exc:  # argparse refuses the options
            code = exc.code
        err = capsys.readouterr().err
    elif argv[0] == "python":
        done = subprocess.run([sys.executable, *argv[1:]], cwd=directory, capture_output=True,
                              text=True, timeout=300)
        code, err = done.returncode, done.stderr
    else:
        pytest.fail(f"the README shows a command this test does not run: {shlex.join(argv)}")
    assert code == 0, f"{shlex.join(argv)} exited {code}:\n{err[-3000:]}"


@pytest.mark.parametrize("block", SH, ids=[f"line{b.line}" for b in SH])
def test_every_command_of_the_readme_runs(block: Block, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    ran = 0
    for line in lines(block):
        for argv in commands(line):
            if argv[:2] == ["pip", "install"] or argv == ["pytest"]:
                continue  # CI's own steps (the test above)
            run(argv, tmp_path, capsys)
            ran += 1
    assert ran, f"line {block.line}: a block with nothing to run"
