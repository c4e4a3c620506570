"""Methods: one file per algorithm of the seeds, each a short orchestration
of a feature space, the scoring passes and a solver.

* :mod:`ultrafs.methods.fgm`: the Feature Generating Machine (seed 003).
"""
