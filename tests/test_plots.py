"""Figures: ``bench ... --plot DIR`` and ``fuzz --plot DIR`` (:mod:`rfcircuits.plots`).

The benches run on scikit-learn's bundled iris written as a table's dataset (no external
data). A figure is checked as a file (the PNG signature and size, the SVG an XML document
with an ``<svg>`` root whose text names what was drawn) and, where a Chromium is installed,
as a browser opens it. matplotlib missing is simulated by making its import fail."""

from __future__ import annotations

import contextlib
import io
import json
import signal
import struct
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rfcircuits import plots
from rfcircuits.cli.main import main
from rfcircuits.crosscheck.differential.fuzz import TIMELINE_POINTS, timeline_point
from tests import browser, required
from tests.test_formats import assert_valid, jsonl

SVG = "{http://www.w3.org/2000/svg}svg"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sklearn.datasets import load_iris

    path = tmp_path_factory.mktemp("data")
    data = load_iris()
    header = ",".join([f"f{i}" for i in range(data.data.shape[1])] + ["target"])
    body = [",".join(map(str, [*r, t])) for r, t in zip(data.data, data.target)]
    (path / "iris.csv").write_text("\n".join([header, *body]) + "\n")
    return path


@pytest.fixture(scope="module")
def compile_figures(data_dir: Path, tmp_path_factory: pytest.TempPathFactory
                    ) -> tuple[Path, list[dict]]:
    """``bench compile --form dg-conj --trees 2,3 --json --plot DIR`` on iris: DIR (not made
    beforehand) and the rows printed."""
    required.need("matplotlib")
    out = tmp_path_factory.mktemp("plots") / "figures"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["bench", "compile", "--form", "dg-conj", "--data-dir", str(data_dir),
                     "--datasets", "iris", "--trees", "2,3", "--json", "-q", "--plot",
                     str(out)]) == 0
    return out, jsonl(printed.getvalue())


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height of a PNG, after checking its signature and first chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def svg_text(path: Path) -> str:
    """The text of an SVG file (an XML document whose root is ``<svg>``), its strings
    joined."""
    root = ET.parse(path).getroot()
    assert root.tag == SVG
    return " ".join(t.strip() for t in root.itertext() if t.strip())


def assert_figure(directory: Path, stem: str, *texts: str) -> None:
    """``stem.png`` and ``stem.svg`` are valid, of the figure's size, and the SVG's text
    holds ``texts``."""
    height = 7 if stem == "fuzz-timeline" else 5  # inches: three panels, or one
    assert png_size((directory / f"{stem}.png").read_bytes()) == (9 * plots.DPI,
                                                                  height * plots.DPI)
    words = svg_text(directory / f"{stem}.svg")
    for text in texts:
        assert text in words, (text, words[:500])


@pytest.mark.needs("matplotlib")
def test_bench_compile_plot_draws_size_against_trees(compile_figures, data_dir, capsys):
    out, rows = compile_figures
    # one row per number of trees, and the directory made for the figures
    assert [(r["dataset"], r["t"]) for r in rows] == [("iris", 2), ("iris", 3)]
    assert sorted(p.name for p in out.iterdir()) == ["compile-size.png", "compile-size.svg"]
    assert_figure(out, "compile-size", "number of trees", "nodes", "iris",
                  "NNF circuit per class (Alg. 3", "decision graph per class (Alg. 3B",
                  "bench compile --form dg-conj")
    # A second run replaces the figures whole, and says so.
    before = (out / "compile-size.svg").read_bytes()
    assert main(["bench", "compile", "--form", "dg-conj", "--data-dir", str(data_dir),
                 "--datasets", "iris", "--trees", "2,3", "-q", "--plot", str(out)]) == 0
    err = capsys.readouterr().err
    assert "(replacing the earlier compile-size.svg, compile-size.png)" in err
    assert (out / "compile-size.svg").read_bytes() == before  # same rows, same bytes


@pytest.mark.needs("matplotlib")
@pytest.mark.needs("chromium")
def test_the_figures_open_in_a_browser(compile_figures, tmp_path):
    out, _ = compile_figures
    # Chromium read the file as an SVG document (a file it cannot parse becomes an HTML page
    # saying so), with the figure's text in it
    dom = ET.fromstring(browser.dump_dom(out / "compile-size.svg", tmp_path / "profile"))
    assert dom.tag == SVG and "number of trees" in " ".join(dom.itertext())
    shot = browser.screenshot(out / "compile-size.png", tmp_path / "profile",
                              tmp_path / "shot.png", "1000,600")
    assert png_size(shot) == (1000, 600)


@pytest.mark.needs("matplotlib")
def test_figures_of_explain_engines_pyxai_and_campaigns(data_dir, tmp_path, capsys):
    out = tmp_path / "figures"
    assert main(["bench", "explain", "--data-dir", str(data_dir), "--datasets", "iris",
                 "--trees", "2", "--rows", "2", "--expand", "0", "-q", "--plot",
                 str(out)]) == 0
    assert main(["bench", "engines", "--data-dir", str(data_dir), "--datasets", "iris",
                 "--trees", "2", "--rows", "2", "--ties", "first", "-q", "--plot",
                 str(out)]) == 0
    assert_figure(out, "explain-time", "seconds per row", "graphs: sufficient reasons",
                  "SAT engine: every field", "iris")
    assert_figure(out, "engines-time", "seconds per row (compile included)",
                  "decision graphs", "SAT engine", "auto", "ties first")
    # bench pyxai and campaigns take minutes: rows of their shape (valid bench rows)
    pyxai = [{"forest": "breast-cancer-100x4", "pair": "one SR / sufficient_reason",
              "ours_median": 0.002, "ours_max": 0.01, "pyxai_median": 0.05, "pyxai_max": 0.2,
              "ratio": 0.04, "ours_done": 5, "pyxai_done": 5, "rows": 5, "ours_compile": 0.3,
              "ours_mb": 200, "pyxai_mb": 300},
             {"forest": "breast-cancer-100x4", "pair": "SRs + NRs / -", "ours_median": 0.2,
              "ours_max": 0.5, "ours_done": 5, "rows": 5, "ours_compile": 0.3, "ours_mb": 200,
              "pyxai_mb": 300}]
    campaigns = [{"job": "fuzz", "backend": backend, "workers": workers, "tasks": 4,
                  "seconds": 2.0, "start": 0.1, "rate": 2.0, "speedup": None,
                  "dask_local": None, "same": "yes", "peak_mb": 100.0, "workers_mb": 90.0,
                  "timeline": [[0.5, 1, 100, 0], [1.2, 3, 300, 1], [2.0, 4, 400, 1]]}
                 for backend, workers in (("local", 1), ("local", 2))]
    for row in pyxai + campaigns:
        assert_valid("bench", row)
    plots.bench_figures("pyxai", pyxai, str(out), "bench pyxai")
    plots.bench_figures("campaigns", campaigns, str(out), "bench campaigns")
    assert_figure(out, "pyxai-time", "ours: median", "PyXAI: median", "one SR")
    assert_figure(out, "fuzz-timeline", "cases checked", "checks made", "failures found",
                  "local, 2 workers", "seconds since the first case")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"{stem}.{fmt}" for stem in ("explain-time", "engines-time", "pyxai-time",
                                     "fuzz-timeline") for fmt in ("png", "svg"))


@pytest.mark.needs("matplotlib")
def test_fuzz_plot_draws_the_summary_timeline(tmp_path, capsys):
    out = tmp_path / "figures"
    assert main(["fuzz", "--cases", "3", "--oracles", "brute", "--out", str(tmp_path / "f"),
                 "--json", "-q", "--plot", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert_valid("fuzz-summary", summary, "fuzz --json")
    # the last point is the run's end
    assert summary["timeline"][-1] == [round(summary["seconds"], 3), 3, summary["checks"], 0]
    assert_figure(out, "fuzz-timeline", "fuzz --seed 0", "seed 0")


def test_plot_is_refused_before_the_run_without_matplotlib(monkeypatch, data_dir, tmp_path,
                                                           capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    out = tmp_path / "figures"
    for argv in (["bench", "compile", "--data-dir", str(data_dir), "--datasets", "iris",
                  "--trees", "2"], ["fuzz", "--cases", "1", "--out", str(tmp_path / "f")]):
        assert main([*argv, "--plot", str(out)]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and "pip install 'rfcircuits[plot]'" in captured.err
    assert not out.exists() and not (tmp_path / "f").exists()


def test_plot_and_tree_lists_are_refused_where_they_do_not_apply(data_dir, tmp_path, capsys):
    for argv, said in (
            (["predict", "--plot", str(tmp_path)],
             "bench predict: --plot draws bench compile, explain, engines, pyxai, campaigns"),
            (["predict", "--trees", "2,3"], "bench predict: --trees takes one number"),
            (["compile", "--trees", "2,x"], "--trees: expected a number or a comma list"),
            (["compile", "--trees", "2,0"], "--trees must be at least 1"),
            (["compile", "--plot", str(tmp_path / "no" / "dir")], "does not exist")):
        assert main(["bench", *argv, "--data-dir", str(data_dir)]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and said in captured.err, captured.err


def test_timeline_stays_short_and_keeps_each_failure():
    timeline: list[list[float]] = []
    failures_at = {k: 0 for k in range(0, 100_000, 7919)}  # cases where a failure is found
    failures = 0
    for k in range(100_000):  # a case every 36 ms for an hour
        failures += k in failures_at
        timeline_point(timeline, k * 0.036, k + 1, 10 * (k + 1), failures)
    timeline_point(timeline, 3600.0, 100_000, 1_000_000, failures, last=True)
    assert len(timeline) <= 2 * TIMELINE_POINTS + len(failures_at)
    assert len(timeline) >= TIMELINE_POINTS // 2
    assert timeline[0] == [0.0, 1, 10, 1] and timeline[-1] == [3600.0, 100_000, 1_000_000,
                                                               failures]
    # seconds rise, and every failure shows where it was found (its case, exactly)
    assert all(a[0] < b[0] for a, b in zip(timeline, timeline[1:]))
    steps = [p[1] - 1 for p, q in zip(timeline[1:], timeline) if p[3] > q[3]]
    assert [timeline[0][1] - 1] + steps == sorted(failures_at)


@pytest.mark.needs("matplotlib")
def test_fuzz_adapter_plot_draws_the_peers_findings_over_time(tmp_path, monkeypatch, capsys):
    """A peer's fuzz campaign (it runs for ``--seconds``: stopped here by a signal at its
    fifth case, deterministically): its failures, broken promises, are points of the
    timeline, drawn though the run was stopped."""
    from tests.test_peer_fuzz import interrupt_at

    interrupt_at(monkeypatch, 4)
    out = tmp_path / "figures"
    assert main(["fuzz", "--adapter", "tests.test_peer_fuzz:TieFault", "--seed", "5",
                 "--out", str(tmp_path / "f"), "--json", "-q", "--plot", str(out)]) == \
        128 + signal.SIGINT
    summary = json.loads(capsys.readouterr().out)
    assert summary["failures"] and summary["timeline"][-1][1:] == \
        [4, summary["checks"], len(summary["failures"])]
    assert_figure(out, "fuzz-timeline", "failures found")
