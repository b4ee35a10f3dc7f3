"""Analyses over verdict records (:data:`kbench_lib.scoring.records.SCHEMA` rows): the papers' tables and
figures, failure and fusion patterns, scaling curves, and the interactive explorer.

Each module holds one concern and only computes; the notebooks (04 to 07) call these functions and
draw. Every function that needs data the records may not hold (a column added later, a strategy not
run yet) says so with a :class:`~kbench_lib.analysis.data.NoData` message instead of guessing.

- :mod:`.data`: which records (local runs, committed results), "no data" messages
- :mod:`.results`: correctness, fast_p over p, geometric-mean speedups, speed-of-light fraction, bootstrap CIs
- :mod:`.tables`: CSV and LaTeX tables beside the figures
- :mod:`.failures`: the failure taxonomy (stage, category, compiler-message classes, runtime kinds, threat classes)
- :mod:`.fusion`: what each candidate fused against the reference and torch.compile, from the profiles
- :mod:`.scaling`: best-of-k, refinement turns, evolutionary progress, verifier accuracy, variants, forward/backward
- :mod:`.style`, :mod:`.figures`: the figures (colour-blind-safe, paper widths, PDF and PNG) and ``make figures``
- :mod:`.explorer`: the ipywidgets explorer of notebook 07
"""
