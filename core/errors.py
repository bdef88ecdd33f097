"""Errors a user can cause. The CLI turns :class:`InputError` into a message and exit code 2."""

from __future__ import annotations

from collections.abc import Sequence


class InputError(ValueError):
    """Bad input (file, field, value). The message names where the problem is (the CLI exits 2)."""


class BudgetExceeded(RuntimeError):
    """A compilation stopped on a node budget or a time limit (``--max-nodes`` / ``--timeout``).

    Its text speaks to the API; ``cli``, when given, says the same in the command line's
    words (its flags), which :meth:`for_cli` returns."""

    def __init__(self, message: str = "", *, cli: str = "") -> None:
        super().__init__(message)
        self.cli = cli

    def for_cli(self) -> str:
        return self.cli or str(self)


def check_choice(name: str, value: str, choices: Sequence[str]) -> str:
    """``value`` when it is one of ``choices``, else an :class:`InputError` listing them."""
    if value not in choices:
        raise InputError(f"{name} must be one of {', '.join(map(repr, choices))}, "
                         f"not {value!r}")
    return value
