"""Errors a user can cause. The CLI turns :class:`InputError` into a message and exit code 2."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input (file, field, value). The message names where the problem is (the CLI exits 2)."""


class BudgetExceeded(RuntimeError):
    """A compilation stopped on a node budget or a time limit (``--max-nodes`` / ``--timeout``)."""
