"""Where the tasks of a long job run (fuzz cases, mutants, corpus cases, an explainer's rows).

- :mod:`._backend_abc`: the interface every backend implements.
- :mod:`.parallel`: worker processes on this machine (``--jobs J``), and the driver of every
  backend; :mod:`.dask_backend`: a Dask cluster (``--dask ADDRESS``).
- :mod:`.explain_rows`: ``rfcircuits explain --jobs J | --dask ADDRESS``.
"""
