"""Other explainers (peers) graded against what each promises.

- :mod:`.adapters`: how a peer is plugged in (:mod:`.adapters.base`), and the adapters of
  PyXAI, Anchors, RFxpl, solbert and any command.
- :mod:`.grading` (``rfcircuits verify-peer``), :mod:`.fuzz` (``rfcircuits fuzz --adapter``),
  :mod:`.repro` (a grading as a repro file) and :mod:`.report` (a grading as one HTML page,
  ``verify-peer --html``).
- :mod:`.promises`: the verdicts; :mod:`.minimality`: minimality over threshold conditions;
  :mod:`.modelling` and :mod:`.unreachable`: findings that rest on how a peer models the
  forest, told apart from broken promises.
- :mod:`.sklearn_model`: a scikit-learn model of a forest file, for peers that need one.
"""
