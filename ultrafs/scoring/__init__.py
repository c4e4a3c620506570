"""Streamed block passes over feature spaces.

* :mod:`ultrafs.scoring.runner`: one Dask task per block, tree-merged.
* :mod:`ultrafs.scoring.topk`: ranked candidates and their merge.
* :mod:`ultrafs.scoring.worst_case`: FGM's worst-case analysis (top-k).
* :mod:`ultrafs.scoring.statistics`: per-feature statistics and keep-masks.
* :mod:`ultrafs.scoring.gram_passes`: GSR-FS's weighted Gram products
  streamed from a store.
* :mod:`ultrafs.scoring.scheduling`, :mod:`ultrafs.scoring.progress`:
  scheduler resolution and progress lines.
"""
