"""Shared pytest hooks."""

from __future__ import annotations

from typing import Any

import pytest

from tests import required


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs(part): the test needs an optional part "
                            "(tests/required.py): skipped without it, failed if required")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip, or fail, a test whose ``needs`` part is missing (:func:`tests.required.need`)."""
    for mark in item.iter_markers("needs"):
        required.need(mark.args[0])


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the summaries tests record as the ``summary`` property (tests/test_faults.py:
    the number of faults injected), also without ``-s``."""
    for report in terminalreporter.stats.get("passed", []):
        for name, value in report.user_properties:
            if name == "summary":
                terminalreporter.write_line(value)
