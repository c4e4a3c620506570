"""Random Fourier features of the Gaussian kernel (seed 001, §3.1; Rahimi–Recht).

Feature ``k`` (``0 .. D - 1``, feature id ``k``) is::

    z_k(x) = sqrt(2/D) cos(ω_k' x + b_k),  ω_k ~ N(0, (2/σ²) I),  b_k ~ U[0, 2π)

so that ``z(x)' z(y) ≈ exp(-||x - y||² / σ²)``.  Ω and b are never stored:
group ``g`` (features ``256 g .. 256 g + 255``) is drawn again from
``SeedSequence([seed, g])`` whenever it is needed
(:func:`~ultrafs.solvers.basis_operator.rff_group`), so ``z_k`` is the same
for every ``D > k`` up to the factor ``sqrt(2/D)``, a model file needs only
``(n_components, sigma, seed, n_inputs)`` and prediction regenerates the
identical Ω.

Row ``j`` of Ω belongs to the store column whose input index (feature id
minus ``id_offset``; see ``features/input_rows.py``) is ``j``.
``n_inputs`` is the training store's id space: a test store with fewer
columns maps by id, and the columns of a store beyond ``n_inputs`` have no
direction and contribute nothing (with a warning).  One group of Ω holds
``n_inputs x 256`` floats: ``n_inputs`` is refused above 256 MiB a group.

``sigma=None`` takes the median heuristic
(:func:`~ultrafs.features.kernel_width.median_sigma`, seeded by ``seed``).
"""

from __future__ import annotations

import warnings

from ultrafs.errors import ParameterError, UltraFSWarning
from ultrafs.features.base import is_integral, register_feature_space
from ultrafs.features.input_rows import store_rows
from ultrafs.features.kernel_basis import (KernelBasisFeatures, checked_int,
                                           checked_sigma)
from ultrafs.features.kernel_width import median_sigma
from ultrafs.solvers.basis_operator import RFFBasis, max_group_inputs

__all__ = ["RandomFourierFeatures", "MAX_COMPONENTS", "MAX_SEED"]

#: largest D accepted
MAX_COMPONENTS = 2 ** 24
#: seeds are integers in 0 .. MAX_SEED
MAX_SEED = 2 ** 63 - 1


@register_feature_space
class RandomFourierFeatures(KernelBasisFeatures):
    """Candidates = ``D`` random Fourier features of the rows (see the module).

    Parameters
    ----------
    store : ColumnStore
    n_components : int, default 1000
        ``D``, in ``1 .. 2**24``.
    sigma : float or None
        Kernel width (``> 0``); None: the median heuristic on the store's rows.
    seed : int, default 0
        Seed of Ω and b (and of the heuristic's subsample), ``0 .. 2**63 - 1``.
    n_inputs : int or None
        Rows of Ω; None: the store's id space.  A model records it.

    Raises
    ------
    ParameterError
        One line for a value out of its domain, or ``n_inputs`` too large
        for one group of Ω (256 MiB).
    """

    kind = "rff"
    spec_params = ("n_components", "sigma", "seed", "n_inputs")

    def __init__(self, store, n_components=1000, sigma=None, seed=0, n_inputs=None):
        super().__init__(store)
        self.n_components = checked_int("n_components", n_components, 1, MAX_COMPONENTS)
        self.seed = checked_int("seed", seed, 0, MAX_SEED)
        self._sigma = None if sigma is None else checked_sigma(sigma)
        n_inputs = store.id_space if n_inputs is None else n_inputs
        if is_integral(n_inputs) and int(n_inputs) > max_group_inputs():
            raise ParameterError(
                f"n_inputs {int(n_inputs)} is too large for random Fourier features: "
                f"one group of 256 directions would exceed 256 MiB (at most "
                f"{max_group_inputs()} inputs; the rbf basis has no such bound)")
        self.n_inputs = checked_int("n_inputs", n_inputs, 1, max_group_inputs())

    @property
    def sigma(self) -> float:
        """The kernel width (the median heuristic's, computed on first use)."""
        if self._sigma is None:
            self._sigma = median_sigma(self.rows, seed=self.seed)
        return self._sigma

    @property
    def n_candidates(self) -> int:
        """``D``."""
        return self.n_components

    def _load_rows(self):
        rows = store_rows(self.store, self.n_inputs)
        if rows.n_dropped:
            warnings.warn(
                f"{rows.n_dropped} stored value(s) of feature ids beyond the "
                f"{self.n_inputs} inputs of the random Fourier features "
                "contribute nothing", UltraFSWarning, stacklevel=3)
        return rows

    def _basis(self):
        return RFFBasis(self.n_inputs, self.n_components, self.sigma, self.seed)

    # ----------------------------------------------------- model files
    @classmethod
    def check_spec_value(cls, name, value):
        """``n_components`` in 1..2**24, ``sigma`` > 0, ``seed`` in
        0..2**63-1, ``n_inputs`` in 1..(the 256 MiB group limit)."""
        if name == "sigma":
            checked_sigma(value, ValueError, name="")
            return value
        bounds = {"n_components": (1, MAX_COMPONENTS), "seed": (0, MAX_SEED),
                  "n_inputs": (1, max_group_inputs())}
        if name not in bounds:
            raise ValueError("is not a parameter of random Fourier features")
        lo, hi = bounds[name]
        if not is_integral(value) or not lo <= value <= hi:
            raise ValueError(f"must be an integer in {lo}..{hi}, got {value!r}")
        return value

    @classmethod
    def check_feature_ids(cls, spec, feature_ids) -> None:
        """Every id is a feature ``0 .. n_components - 1``."""
        cls._check_ids_below(feature_ids, int(spec["n_components"]),
                             f"{spec['n_components']} random features")
