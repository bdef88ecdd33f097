"""``rfcircuits explain --jobs J | --dask ADDRESS``: an explainer's rows shared among the campaign
backends' workers (:mod:`rfcircuits.crosscheck.campaigns.parallel`), for users with many rows to
explain on a large forest.

Local workers are forked after the parent has chosen its engine and compiled it, so they
share the compiled class formulas; a Dask cluster's workers each load them, sent once per
worker as the parent saved them (:meth:`rfcircuits.Explainer.dumps`), at their first row of
the run, so every line comes from the same engine and nothing is compiled twice. Lines come
back as each row finishes and are passed on in row order, so an interrupted run keeps a
prefix of the rows, as a serial one does. Workers send each record in the format asked for
(:meth:`rfcircuits.explanation.Explanation.render`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from rfcircuits.explain import Explainer, load_explainer
from rfcircuits.forest import Instance
from rfcircuits.crosscheck.campaigns.parallel import can_fork, open_backend, run_tasks

#: What forked workers explain with: the parent's explainer, the rows, the fields and the
#: format.
_LOCAL: tuple[Explainer, Sequence[Instance], Sequence[str], str] | None = None
#: A cluster worker's explainer for the run of a token: (token, explainer).
_REMOTE: tuple[str, Explainer] | None = None


def _explain_local(i: int) -> str:
    assert _LOCAL is not None
    explainer, rows, what, fmt = _LOCAL
    return explainer.explain_states(rows[i], what).render(fmt)


def _explain_remote(token: str, circuits: bytes, options: dict[str, Any],
                    what: Sequence[str], fmt: str, x: Instance) -> str:
    global _REMOTE
    if _REMOTE is None or _REMOTE[0] != token:
        _REMOTE = (token, load_explainer(circuits, **options))
    return _REMOTE[1].explain_states(x, what).render(fmt)


def explain_rows(explainer: Explainer, rows: Sequence[Instance], what: Sequence[str],
                 start: int, jobs: int, dask: str | None, options: dict[str, Any],
                 fmt: str = "jsonl") -> Iterator[tuple[int, str]]:
    """``(i, record)`` for rows ``start``, ``start + 1``, … in order, explained by ``jobs``
    forked workers or the Dask cluster at ``dask``, each record in format ``fmt``; ``options``
    are the explainer's node budget and limits, for the cluster's workers to load theirs
    with."""
    global _LOCAL
    todo = range(start, len(rows))
    if dask is None and (jobs <= 1 or len(todo) <= 1 or not can_fork()):
        for i in todo:
            yield i, explainer.explain_states(rows[i], what).render(fmt)
        return
    explainer.compile(negated="ce" in what)  # the CEs' graphs too, compiled here once
    if dask is None:
        _LOCAL = (explainer, rows, what, fmt)
        fn: Any = _explain_local
        tasks = ((i, (i,)) for i in todo)
    else:
        fn = _explain_remote
        circuits = explainer.dumps()
    finished: dict[int, str] = {}
    shown = start
    try:
        with open_backend(min(jobs, len(todo)), dask) as backend:
            if dask is not None:
                setup = (uuid.uuid4().hex, backend.share(circuits), options, what, fmt)
                tasks = ((i, (*setup, rows[i])) for i in todo)
            for i, line in run_tasks(backend, fn, tasks):
                finished[i] = line
                while shown in finished:
                    yield shown, finished.pop(shown)
                    shown += 1
    finally:
        _LOCAL = None
