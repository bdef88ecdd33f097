"""The independent oracles: every answer of docs/semantics.md computed without the engines'
compilers, encoders or reasoners (they share only the forest data model).

- :mod:`.brute`: by definition, over all worlds (tiny forests).
- :mod:`.bdd`: OBDDs with ``dd`` over a one-hot encoding.
- :mod:`.sat`: PySAT with cardinality encodings and MaxSAT; :mod:`.adders` (binary sums of
  soft votes in CNF) and :mod:`.slices` (Δ tabled on a slice of features) serve it.
"""
