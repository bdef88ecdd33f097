"""rfcircuits native engine: random forests as circuits and formal explanations (Ji & Darwiche)."""

__version__ = "0.1.0"
