"""Seeded generators of synthetic problems (no download, ever).

* :mod:`ultrafs.datasets.planted`: the FGM paper's §8.2 Gaussian problem
  and a multi-class variant with planted features.
* :mod:`ultrafs.datasets.kddb_like`: out-of-core kddb-like sparse stores,
  drawn from the generative model of :mod:`ultrafs.datasets.kddb_model`.
* :mod:`ultrafs.datasets.gsrfs_synthetic`: GSR-FS's paper generator.
"""
