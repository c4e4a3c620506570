"""Methods: one file per algorithm of the seeds, each a short orchestration
of a feature space, the scoring passes and a solver.

* :mod:`ultrafs.methods.fgm`: the Feature Generating Machine (seed 003).
* :mod:`ultrafs.methods.refit`: the ℓ2 refit of a selection (``--refit``)
  or of a model's first k batches on a store.
* :mod:`ultrafs.methods.l1_baseline`: scikit-learn's ℓ1-LR at given
  feature counts (loads the training store in memory; the report's
  baseline).
* :mod:`ultrafs.methods.gsrfs`: GSR-FS by IRLS, and its two-stage mode
  (seed 002).
"""
