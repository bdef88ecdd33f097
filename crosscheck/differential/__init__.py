"""Differential testing: the native engines against the oracles.

- :mod:`.harness`: one forest through the engine and each chosen oracle (``rfcircuits
  crosscheck``).
- :mod:`.strategies`: random small forests and instances; :mod:`.spec_examples`: the worked
  examples with their answers.
- :mod:`.fuzz` (``rfcircuits fuzz``) and :mod:`.shrink`: random cases through the harness,
  failures shrunk and saved.
- :mod:`.mutate` (``rfcircuits mutate``): faults seeded into the engine, counted as fuzz kills
  them; ``EQUIVALENT_MUTANTS.md`` lists the mutants that change no answer, with the argument.
"""
