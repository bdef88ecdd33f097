"""Shared pytest hooks."""

from __future__ import annotations

from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the summaries tests record as the ``summary`` property (tests/test_faults.py:
    the number of faults injected), also without ``-s``."""
    for report in terminalreporter.stats.get("passed", []):
        for name, value in report.user_properties:
            if name == "summary":
                terminalreporter.write_line(value)
