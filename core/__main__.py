"""``python -m rfcircuits``: the command line."""

from rfcircuits.cli import entry

entry()
