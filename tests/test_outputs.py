"""The output rules (rfcircuits.atomicio) one by one, in process: what replaces a file, what is
streamed to, what a stopped record output keeps, and what ``--resume`` accepts. The CLI under
real signals is tests/test_faults.py's."""

from __future__ import annotations

import json
import os
import stat

import pytest

from rfcircuits.atomicio import (PARTIAL, atomic_open, check_output, output_dir, record_output,
                                 write_json)
from rfcircuits.cli.main import main
from rfcircuits.crosscheck.differential.spec_examples import SUSAN, SUSAN_FOREST
from rfcircuits.errors import InputError


def _no_temporaries(directory):
    assert [p for p in os.listdir(directory) if p.startswith(".")] == []


def test_a_regular_file_is_replaced_only_by_a_complete_document(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("previous\n")
    os.chmod(target, 0o640)
    with pytest.raises(RuntimeError):
        with atomic_open(target) as handle:
            handle.write("half")
            raise RuntimeError("stopped")
    assert target.read_text() == "previous\n"
    write_json(target, {"a": 1})
    assert target.read_text() == '{"a": 1}\n'
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640  # the file's own permissions
    _no_temporaries(tmp_path)


def test_a_new_file_is_linked_in_place_without_a_temporary_name(tmp_path, monkeypatch):
    """Anonymous temporary files get a name only to replace a target: a new target is the
    anonymous file linked in place, so SIGKILL cannot leave a named temporary file."""
    import rfcircuits.atomicio as atomicio

    if not hasattr(os, "O_TMPFILE"):
        pytest.skip("no anonymous files here")
    renamed: list[str] = []
    real_replace = os.replace
    monkeypatch.setattr(atomicio.os, "replace",
                        lambda src, dst: renamed.append(dst) or real_replace(src, dst))
    write_json(tmp_path / "new.json", [1])
    write_json(tmp_path / "new.json", [2])
    assert (tmp_path / "new.json").read_text() == "[2]\n"
    assert renamed == [str(tmp_path / "new.json")]  # the second write only
    _no_temporaries(tmp_path)


def test_the_next_write_removes_what_a_killed_writer_left(tmp_path):
    """A temporary file left by a process of this machine that is gone is removed by the next
    write into its directory; a live process's, another machine's and other hidden files stay."""
    import subprocess
    import sys

    import rfcircuits.atomicio as atomicio

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = int(gone.stdout)
    left = tmp_path / f".tmp-{dead}.{atomicio._HOST}-0123456789ab-out.json"
    kept = [tmp_path / f".tmp-{os.getppid()}.{atomicio._HOST}-0123456789ab-out.json",
            tmp_path / f".tmp-{dead}.{'0' * 8 if atomicio._HOST != '0' * 8 else '1' * 8}-x-o",
            tmp_path / ".tmp-notes"]
    for path in [left, *kept]:
        path.write_text("")
    write_json(tmp_path / "other.json", [1])
    assert sorted(p for p in tmp_path.iterdir() if p.name.startswith(".")) == sorted(kept)


def test_a_symbolic_link_is_written_through(tmp_path):
    (tmp_path / "real.json").write_text("old\n")
    (tmp_path / "link.json").symlink_to("real.json")
    write_json(tmp_path / "link.json", [1])
    assert (tmp_path / "link.json").is_symlink()
    assert (tmp_path / "real.json").read_text() == "[1]\n"


def test_what_is_not_a_regular_file_is_streamed_to(tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so that opening to write won't block
    write_json(fifo, {"x": 2})
    assert os.read(reader, 100) == b'{"x": 2}\n'
    os.close(reader)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    write_json(os.devnull, {"y": 3})
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    write_json("-", {"z": 4})
    assert capsys.readouterr().out == '{"z": 4}\n'


def test_missing_parents_are_errors_naming_them(tmp_path):
    missing = tmp_path / "no" / "such"
    with pytest.raises(InputError, match=f"directory {missing} does not exist"):
        check_output(missing / "x.jsonl")
    with pytest.raises(InputError, match="is a directory"):
        check_output(tmp_path)
    with pytest.raises(InputError, match=f"directory {tmp_path / 'no'} does not exist"):
        output_dir(missing)
    assert output_dir(tmp_path / "no") and (tmp_path / "no").is_dir()  # the leaf is created
    assert not missing.exists()


def test_a_stopped_record_output_keeps_its_finished_records(tmp_path, capsys):
    target = tmp_path / "e.jsonl"
    target.write_text("previous complete result\n")
    with pytest.raises(KeyboardInterrupt):
        with record_output(target, what="lines") as out:
            out.write("one\n")
            out.write("two\n")
            raise KeyboardInterrupt
    assert target.read_text() == "previous complete result\n"
    partial = tmp_path / ("e.jsonl" + PARTIAL)
    assert partial.read_text() == "one\ntwo\n"
    assert f"2 finished lines kept in {partial}" in capsys.readouterr().err

    with open(partial, "ab") as handle:  # a kill in the middle of a third line
        handle.write(b"thr")
    seen = []
    with record_output(target, resume=True, accept=seen.extend) as out:
        assert out.resumed == ["one", "two"] == seen
        out.write("three\n")
    assert target.read_text() == "one\ntwo\nthree\n" and not partial.exists()
    _no_temporaries(tmp_path)


def test_a_record_output_that_finished_nothing_leaves_no_partial_file(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with record_output(tmp_path / "e.jsonl"):
            raise KeyboardInterrupt
    assert os.listdir(tmp_path) == []


def test_a_failed_write_is_cut_back_to_the_last_whole_record(tmp_path, monkeypatch):
    from rfcircuits import atomicio

    real_write = os.write

    def short_then_full(fd, data):  # the disk fills in the middle of the second record
        if bytes(data).startswith(b"second"):
            real_write(fd, bytes(data)[:3])
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    target = tmp_path / "e.jsonl"
    with pytest.raises(OSError) as error:
        with record_output(target) as out:
            out.write("first\n")
            monkeypatch.setattr(atomicio.os, "write", short_then_full)
            out.write("second\n")
    monkeypatch.undo()
    assert error.value.filename == str(target)  # the message names the output
    assert (tmp_path / ("e.jsonl" + PARTIAL)).read_text() == "first\n"


def test_one_run_at_a_time_writes_a_target(tmp_path):
    with record_output(tmp_path / "e.jsonl") as out:
        out.write("first run\n")
        with pytest.raises(InputError, match="another run is writing it now"):
            with record_output(tmp_path / "e.jsonl"):
                pass
        out.write("still the first run\n")
    assert (tmp_path / "e.jsonl").read_text() == "first run\nstill the first run\n"


def test_resume_needs_a_regular_file():
    with pytest.raises(InputError, match="--resume needs --out FILE"):
        with record_output(None, resume=True):
            pass
    with pytest.raises(InputError, match="--resume needs --out FILE"):
        with record_output(os.devnull, resume=True):
            pass


def _susan(tmp_path):
    forest, instances = tmp_path / "f.json", tmp_path / "i.jsonl"
    forest.write_text(json.dumps(SUSAN_FOREST))
    instances.write_text((json.dumps(SUSAN) + "\n") * 3)
    return ["explain", "--forest", str(forest), "--instances", str(instances), "--no-progress"]


def test_explain_resumes_to_the_same_bytes_and_refuses_other_runs(tmp_path, capsys):
    explain = _susan(tmp_path)
    assert main(explain + ["--out", str(tmp_path / "full.jsonl")]) == 0
    full = (tmp_path / "full.jsonl").read_bytes()
    (tmp_path / ("e.jsonl" + PARTIAL)).write_bytes(full.split(b"\n", 1)[0] + b"\n")
    assert main(explain + ["--out", str(tmp_path / "e.jsonl"), "--resume"]) == 0
    assert (tmp_path / "e.jsonl").read_bytes() == full

    (tmp_path / ("e.jsonl" + PARTIAL)).write_bytes(full.split(b"\n", 1)[0] + b"\n")
    capsys.readouterr()
    for other in (["--ties", "all"], ["--what", "sr"]):
        assert main(explain + ["--out", str(tmp_path / "e.jsonl"), "--resume", *other]) == 2
        assert f"e.jsonl{PARTIAL}, line 1: not an explanation of instance 1" in \
            capsys.readouterr().err
    assert (tmp_path / "e.jsonl").read_bytes() == full  # refused runs replace nothing


def test_crosscheck_resumes_to_the_same_file_and_table(tmp_path, capsys):
    crosscheck = _susan(tmp_path)[1:5]
    argv = ["crosscheck", *crosscheck, "--ties", "both", "--no-progress", "--oracles", "brute"]
    assert main(argv + ["--out", str(tmp_path / "full.jsonl")]) == 0
    table = capsys.readouterr().out
    lines = (tmp_path / "full.jsonl").read_text().splitlines(keepends=True)
    assert len(lines) == 2 * (1 + 3)  # per tie policy: the formulas, then each instance
    for kept in (1, 3, 5, 8):
        (tmp_path / ("r.jsonl" + PARTIAL)).write_text("".join(lines[:kept]))
        assert main(argv + ["--out", str(tmp_path / "r.jsonl"), "--resume"]) == 0
        assert capsys.readouterr().out == table
        assert (tmp_path / "r.jsonl").read_text() == "".join(lines)
    (tmp_path / ("r.jsonl" + PARTIAL)).write_text(lines[1])  # not the first unit
    assert main(argv + ["--out", str(tmp_path / "r.jsonl"), "--resume"]) == 2
    assert "line 1: not the checks of unit 1 of this run" in capsys.readouterr().err
