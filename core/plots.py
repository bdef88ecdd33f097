"""Figures of the benchmarks and of fuzz campaigns: ``rfcircuits bench ... --plot DIR`` and
``rfcircuits fuzz --plot DIR``.

Each figure is drawn from what the run prints (a bench's rows, as ``--json`` gives them; a
fuzz summary's timeline), one function per figure, and written to ``DIR`` twice, as
``NAME.svg`` (text kept as text) and ``NAME.png``, under the output rules of
:mod:`rfcircuits.atomicio` (a file of an earlier run is replaced whole, and said so on
stderr). The names are fixed, so a figure can be linked to:

- ``compile-size``: ``bench compile``'s circuit and graph sizes against the number of trees;
- ``explain-time``: ``bench explain``'s seconds per row, per field and engine;
- ``engines-time``: ``bench engines``' seconds per row of each engine, compile included;
- ``pyxai-time``: ``bench pyxai``'s seconds per row, ours beside PyXAI's;
- ``fuzz-timeline``: cases, checks and failures against the seconds (``fuzz``, and the fuzz
  rows of ``bench campaigns``).

matplotlib is the optional extra ``plot`` (``pip install 'rfcircuits[plot]'``), imported
here only, and only once a figure is asked for: :func:`require` refuses ``--plot`` before a
run starts when it is missing. The figures use matplotlib's object interface (no pyplot, no
window, no global state).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rfcircuits.atomicio import atomic_open, output_dir
from rfcircuits.errors import InputError

#: What ``--plot`` says when matplotlib is missing.
INSTALL = "pip install 'rfcircuits[plot]'"
#: Values spanning at least this factor get a logarithmic axis.
LOG_SPAN = 30.0
#: The formats each figure is written in.
FORMATS = ("svg", "png")
#: Pixels per inch of the PNG files (a figure is 9 × 5 inches).
DPI = 110

#: ``bench compile``'s size columns (nodes): the circuits the SAT engine compiles (Alg. 3)
#: and the decision graphs (Alg. 3B, 3A), per class except ``n_nnf``.
SIZES = (("n_nnf", "NNF circuits, all classes (Alg. 3, SAT engine)"),
         ("n_3", "NNF circuit per class (Alg. 3, SAT engine)"),
         ("n_3b", "decision graph per class (Alg. 3B, graphs engine)"),
         ("n_3a", "decision graph per class (Alg. 3A, graphs engine)"))
#: ``bench explain``'s per-row seconds: the decision graphs' per field, the SAT engine's for
#: every field together.
EXPLAIN_TIMES = (("t_sr", "graphs: sufficient reasons"), ("t_nr", "graphs: necessary reasons"),
                 ("t_sgnr", "graphs: shortest GNRs"), ("t_ce", "graphs: CEs per target class"),
                 ("t_sat", "SAT engine: every field"))
ENGINES = (("t_graphs", "decision graphs"), ("t_sat", "SAT engine"), ("t_auto", "auto"))
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D")


def require(directory: str) -> None:
    """Refuse ``--plot DIR`` before any work: matplotlib missing (the message says how to
    install it) or ``DIR`` not creatable (it is created, not its parents)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise InputError(f"--plot draws with matplotlib, which is not installed ({INSTALL})"
                         ) from None
    output_dir(directory)


def compile_size(rows: Sequence[dict[str, Any]], directory: str, command: str) -> list[str]:
    """``compile-size``: nodes against the number of trees (``--trees 5,10,20`` gives each
    dataset a line), a colour per dataset (and votes), a line style per size column of
    :data:`SIZES` the rows hold; rows stopped at a budget give only what they measured.
    Logarithmic axes where the values span :data:`LOG_SPAN` or more."""
    fig, ax = _figure()
    series = _keys(rows, _label)
    measures = [(key, text) for key, text in SIZES if any(r.get(key) for r in rows)]
    xs_all, ys_all = [], []
    for colour, name in zip(_colours(len(series)), series):
        mine = sorted((r for r in rows if _label(r) == name), key=lambda r: r["t"])
        for style, (key, _) in enumerate(measures):
            points = [(r["t"], r[key]) for r in mine if r.get(key)]
            if points:
                xs, ys = zip(*points)
                ax.plot(xs, ys, color=colour, linestyle=LINE_STYLES[style],
                        marker=MARKERS[style])
                xs_all += xs
                ys_all += ys
    _scale(ax, "x", xs_all)
    _scale(ax, "y", ys_all)
    counts = sorted(set(xs_all))
    if len(counts) <= 12:  # the numbers of trees run, as plain numbers on either scale
        ax.set_xticks(counts, [str(t) for t in counts])
        ax.minorticks_off()
    ax.set_xlabel("number of trees")
    ax.set_ylabel("nodes")
    ax.grid(True, which="major", alpha=0.3)
    _legend(fig, [_line(LINE_STYLES[i], MARKERS[i], text) for i, (_, text) in
                  enumerate(measures)] + _swatches(series))
    return _save(fig, directory, "compile-size",
                 f"Circuit and graph size against the number of trees ({command})")


def explain_time(rows: Sequence[dict[str, Any]], directory: str, command: str) -> list[str]:
    """``explain-time``: per forest (a group of bars), each field's seconds per row on the
    decision graphs and the SAT engine's for every field (:data:`EXPLAIN_TIMES`); compiles
    excluded, as the paper's Table 3; a forest whose graphs stopped at their budget has
    the SAT engine's bar only."""
    series = [(text, [r.get(key) for r in rows], None) for key, text in EXPLAIN_TIMES
              if any(r.get(key) is not None for r in rows)]
    return _bar_figure([_label(r, trees=True) for r in rows], series, "seconds per row",
                       directory, "explain-time",
                       f"Explanations: seconds per row, compile excluded ({command})")


def engines_time(rows: Sequence[dict[str, Any]], directory: str, command: str) -> list[str]:
    """``engines-time``: per forest and tie policy, each engine's seconds per row, its
    compile included (the row's seconds over its rows); a decision-graph compile stopped at
    its budget has no bar."""
    def per_row(r: dict[str, Any], key: str) -> float | None:
        return None if r.get(key) is None else r[key] / max(1, r["rows"])

    series = [(text, [per_row(r, key) for r in rows], None) for key, text in ENGINES]
    groups = [f"{_label(r, trees=True)}\nties {r['ties']}" for r in rows]
    return _bar_figure(groups, series, "seconds per row (compile included)", directory,
                       "engines-time", f"Engines: seconds per row ({command})")


def pyxai_time(rows: Sequence[dict[str, Any]], directory: str, command: str) -> list[str]:
    """``pyxai-time``: per forest and question, the median seconds per row of ours and of
    PyXAI beside it, a whisker up to the slowest row."""
    def side(prefix: str) -> tuple[str, list[float | None], list[float | None]]:
        medians = [r.get(f"{prefix}_median") for r in rows]
        slowest = [None if m is None or r.get(f"{prefix}_max") is None else
                   r[f"{prefix}_max"] - m for r, m in zip(rows, medians)]
        return (f"{'ours' if prefix == 'ours' else 'PyXAI'}: median, whisker to the slowest",
                medians, slowest)

    groups = [f"{r['forest']}\n{r['pair']}".replace(" / ", "\nvs ") for r in rows]
    return _bar_figure(groups, [side("ours"), side("pyxai")], "seconds per row", directory,
                       "pyxai-time", f"Ours beside PyXAI: seconds per row ({command})")


def fuzz_timeline(runs: Sequence[tuple[str, Sequence[Sequence[float]]]], directory: str,
                  command: str) -> list[str]:
    """``fuzz-timeline``: three panels sharing the seconds, the cases checked, the checks
    made and the failures found so far, one line per run (its label, its summary's
    ``timeline`` of ``[seconds, cases, checks, failures]``)."""
    from matplotlib.ticker import MaxNLocator

    fig, axes = _figure(panels=3)
    colours = _colours(len(runs))
    for colour, (label, points) in zip(colours, runs):
        points = [[0, 0, 0, 0], *points]  # every run starts from nothing
        seconds = [p[0] for p in points]
        marker = "." if len(points) < 60 else None
        for ax, column in zip(axes[:2], (1, 2)):
            ax.plot(seconds, [p[column] for p in points], color=colour, marker=marker)
        # a failure is noted when it is found: the count steps there
        axes[2].step(seconds, [p[3] for p in points], where="post", color=colour)
    for ax, text in zip(axes, ("cases checked", "checks made", "failures found")):
        ax.set_ylabel(text)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes[2].set_ylim(top=max([1] + [p[3] for _, points in runs for p in points]) * 1.1)
    axes[2].set_xlabel("seconds since the first case")
    _legend(fig, _swatches([label for label, _ in runs]))
    return _save(fig, directory, "fuzz-timeline",
                 f"Fuzz: cases, checks and failures over time ({command})")


def bench_figures(what: str, rows: Sequence[dict[str, Any]], directory: str,
                  command: str) -> list[str]:
    """The figure of ``bench what``'s rows (``command``: the command that made them, which the
    title names), or none for a bench without one or rows without figures (a note on
    stderr); the paths written."""
    measured = [r for r in rows if not (what == "compile" and "stopped" in r
                                        and not any(r.get(k) for k, _ in SIZES))]
    if what == "campaigns":
        runs = [(f"{r['backend']}, {r['workers']} worker{'s' if r['workers'] > 1 else ''}",
                 r["timeline"]) for r in rows if r.get("timeline")]
        return fuzz_timeline(runs, directory, command) if runs else _nothing(command)
    draw: dict[str, Callable[[Sequence[dict[str, Any]], str, str], list[str]]] = {
        "compile": compile_size, "explain": explain_time, "engines": engines_time,
        "pyxai": pyxai_time}
    if what not in draw or not measured:
        return _nothing(command)
    return draw[what](measured, directory, command)


def _nothing(command: str) -> list[str]:
    print(f"[plot] {command}: nothing to draw", file=sys.stderr)
    return []


def _figure(panels: int = 1) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 5 if panels == 1 else 7), layout="constrained")
    axes = fig.subplots(panels, 1, sharex=True)
    return fig, axes


def _label(row: dict[str, Any], trees: bool = False) -> str:
    """A row's forest: its dataset (with ``trees``, its number of trees), soft votes said."""
    text = row["dataset"] + (f"\n{row['t']} trees" if trees else "")
    return text + (" (soft votes)" if row.get("votes") == "soft" else "")


def _keys(rows: Iterable[dict[str, Any]], key: Callable[[dict[str, Any]], str]) -> list[str]:
    """The distinct ``key`` of the rows, in the order first met."""
    return list(dict.fromkeys(key(r) for r in rows))


def _colours(n: int) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def _scale(ax: Any, axis: str, values: Sequence[float]) -> bool:
    """A logarithmic ``axis`` when the positive ``values`` span :data:`LOG_SPAN` or more."""
    positive = [v for v in values if v > 0]
    log = bool(positive) and max(positive) >= LOG_SPAN * min(positive)
    if log:
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    return log


def _line(style: str, marker: str, label: str) -> Any:
    from matplotlib.lines import Line2D

    return Line2D([], [], color="0.3", linestyle=style, marker=marker, label=label)


def _swatches(labels: Sequence[str]) -> list[Any]:
    from matplotlib.patches import Patch

    return [Patch(color=c, label=text.replace("\n", ", "))
            for c, text in zip(_colours(len(labels)), labels)]


def _legend(fig: Any, handles: Sequence[Any]) -> None:
    """The legend under the panels (beside them, long labels would squeeze the plot)."""
    if handles:
        fig.legend(handles=handles, loc="outside lower center", fontsize="small",
                   ncols=min(3, len(handles)), frameon=False)


def _bar_figure(groups: Sequence[str],
                series: Sequence[tuple[str, Sequence[float | None], Sequence[float | None] | None]],
                ylabel: str, directory: str, stem: str, title: str) -> list[str]:
    """Grouped bars: per group (x), a bar per series ``(label, values, whiskers)`` (None:
    no bar; whiskers: up from the bar's top); a logarithmic axis where the values span
    :data:`LOG_SPAN` or more (then bars of 0 are left out)."""
    fig, ax = _figure()
    values = [v for _, vs, _ in series for v in vs if v is not None]
    log = _scale(ax, "y", values)
    width = 0.8 / max(1, len(series))
    for i, (colour, (label, vs, whiskers)) in enumerate(zip(_colours(len(series)), series)):
        at = [(g + (i - (len(series) - 1) / 2) * width, v, whiskers[g] if whiskers else None)
              for g, v in enumerate(vs) if v is not None and (v > 0 or not log)]
        if not at:
            continue
        xs, heights, ups = zip(*at)
        ax.bar(xs, heights, width, color=colour, label=label)
        if whiskers:
            ax.errorbar(xs, heights, yerr=[[0] * len(ups), [u or 0 for u in ups]],
                        fmt="none", ecolor="0.2", capsize=3)
    ax.set_xticks(range(len(groups)), groups, fontsize="small",
                  rotation=30 if len(groups) > 6 else 0,
                  ha="right" if len(groups) > 6 else "center")
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", which="major", alpha=0.3)
    _legend(fig, ax.get_legend_handles_labels()[0])
    return _save(fig, directory, stem, title)


def _save(fig: Any, directory: str, stem: str, title: str) -> list[str]:
    """Write ``fig`` titled ``title`` as ``directory/stem.svg`` and ``.png`` (module
    docstring), saying on stderr what was written and what it replaced."""
    from matplotlib import rc_context

    fig.suptitle(title, fontsize="medium")
    paths = [os.path.join(directory, f"{stem}.{fmt}") for fmt in FORMATS]
    replaced = [p for p in paths if os.path.exists(p)]
    # SVG text as text (searchable, smaller), and the same bytes for the same figure.
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": stem}):
        for path, fmt in zip(paths, FORMATS):
            with atomic_open(path, "wb") as handle:
                fig.savefig(handle, format=fmt, dpi=DPI,
                            metadata={"Title": title, **({"Date": None} if fmt == "svg"
                                                         else {})})
    print(f"[plot] {', '.join(paths)}"
          + (f" (replacing the earlier {', '.join(map(os.path.basename, replaced))})"
             if replaced else ""), file=sys.stderr)
    return paths
