"""Optional parts the tests need: a peer (PyXAI, anchor-exp, RFxpl, solbert), Dask, a
boosting library (XGBoost, LightGBM), matplotlib (figures) or a Chromium (pages and figures
opened in a real browser).

A test marked ``@pytest.mark.needs("pyxai")`` (or a parameter with that mark) is skipped,
saying why, when the part is missing, unless the run requires the part: the comma list in
:data:`REQUIRE_ENV` (CI sets it for what it installs) turns that skip into a failure, so that
an install step that lost a part fails CI instead of passing with the part's tests skipped
(tests/conftest.py applies the mark through :func:`need`).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable

import pytest

#: The environment variable listing the parts this run requires (``pyxai,anchors,dask``;
#: ``xgboost``, ``lightgbm``, ``matplotlib``, ``chromium``).
REQUIRE_ENV = "RFCIRCUITS_TESTS_REQUIRE"


def _pyxai() -> str | None:
    from rfcircuits.crosscheck.peers.adapters.base import PeerUnavailable
    from rfcircuits.crosscheck.peers.adapters.pyxai import PYTHON_ENV, pyxai_version

    try:
        found = pyxai_version()
    except PeerUnavailable as exc:
        return str(exc)
    return None if found else f"PyXAI is not installed (pip install pyxai; or ${PYTHON_ENV})"


def _anchors() -> str | None:
    return None if importlib.util.find_spec("anchor") else \
        "anchor-exp is not installed (pip install '.[anchors]')"


def _rfxpl() -> str | None:
    from rfcircuits.crosscheck.peers.adapters.base import PeerUnavailable
    from rfcircuits.crosscheck.peers.adapters.rfxpl import RfxplAdapter

    try:
        RfxplAdapter().version()
    except PeerUnavailable as exc:
        return f"{exc} (and pip install anytree namedlist)"
    return None


def _solbert() -> str | None:
    from rfcircuits.crosscheck.peers.adapters.base import PeerUnavailable
    from rfcircuits.crosscheck.peers.adapters.solbert import SolbertAdapter

    try:
        SolbertAdapter().version()
    except PeerUnavailable as exc:
        return str(exc)
    return None


def _dask() -> str | None:
    return None if importlib.util.find_spec("distributed") else \
        "Dask distributed is not installed (pip install '.[dask]')"


def _module(name: str, extra: str) -> Callable[[], str | None]:
    """Why the library ``name`` of the extra ``extra`` is missing, or None."""
    return lambda: None if importlib.util.find_spec(name) else \
        f"{name} is not installed (pip install '.[{extra}]')"


def _chromium() -> str | None:
    from tests import browser

    return None if browser.find() else \
        f"no Chromium installed (one of {', '.join(browser.NAMES)}; apt-get install chromium)"


#: Why each part is missing (None: it is there).
MISSING: dict[str, Callable[[], str | None]] = {
    "pyxai": _pyxai, "anchors": _anchors, "rfxpl": _rfxpl, "solbert": _solbert, "dask": _dask,
    "xgboost": _module("xgboost", "boost"), "lightgbm": _module("lightgbm", "boost"),
    "matplotlib": _module("matplotlib", "plot"), "chromium": _chromium}
_seen: dict[str, str | None] = {}


def required() -> set[str]:
    """The parts this run requires (:data:`REQUIRE_ENV`)."""
    return {p.strip() for p in os.environ.get(REQUIRE_ENV, "").split(",") if p.strip()}


def need(part: str) -> None:
    """Skip the calling test when ``part`` is missing, or fail it when the run requires the
    part."""
    if part not in _seen:
        _seen[part] = MISSING[part]()
    why = _seen[part]
    if why is None:
        return
    if part in required():
        pytest.fail(f"{part} is required by this run (${REQUIRE_ENV}) but missing: {why}",
                    pytrace=False)
    pytest.skip(why)
