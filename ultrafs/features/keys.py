"""The one codec of degree-2 candidate keys.

With m columns, the pair ``(j, k)`` (``k = -1``: the linear term of
column j, ``k = j``: its square, ``j < k``: the cross of columns j and k)
is the key ``j * (m + 1) + (k + 1)``.  The encoding preserves the pair
order (``(j, k) < (j', k')`` lexicographically iff the keys are), so a
score tie is broken by the smaller pair.  Keys depend on m: model files
store pairs, never keys.

The numba kernels keep their own copy of the formula
(:func:`ultrafs.kernels.poly.pair_key`; kernels import nothing of ultrafs);
``tests/test_feature_spaces.py`` checks that the two agree.
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import ParameterError

__all__ = ["PairKeys", "MAX_PAIR_FEATURES"]

_INT64_MAX = int(np.iinfo(np.int64).max)


def _largest_m() -> int:
    """The largest m with m(m+1) + m <= 2**63 - 1."""
    m = int(np.sqrt(float(_INT64_MAX)))
    while m * (m + 1) + m > _INT64_MAX:
        m -= 1
    while (m + 1) * (m + 2) + (m + 1) <= _INT64_MAX:
        m += 1
    return m


#: the most columns a degree-2 space accepts (about 3.04e9)
MAX_PAIR_FEATURES = _largest_m()


class PairKeys:
    """Keys of degree-2 candidates over m columns: ``j * (m + 1) + (k + 1)``.

    Parameters
    ----------
    n_features : int
        m, the number of source columns, ``0 <= m <= MAX_PAIR_FEATURES``
        (so that every key, even of a pair one past the last column,
        ``m(m+1) + m``, fits int64).

    Raises
    ------
    ParameterError
        One line when m is negative or too large for int64 keys.
    """

    def __init__(self, n_features: int):
        m = int(n_features)
        if m < 0:
            raise ParameterError(f"number of columns must be >= 0, got {m}")
        if m > MAX_PAIR_FEATURES:
            raise ParameterError(
                f"degree-2 features of {m} columns overflow int64 keys "
                f"(at most {MAX_PAIR_FEATURES} columns)")
        self.n_features = m
        self.stride = m + 1

    @property
    def n_keys(self) -> int:
        """Keys of valid pairs lie in ``[0, n_keys)`` (``m (m + 1)``)."""
        return self.n_features * self.stride

    def encode(self, first, second) -> np.ndarray:
        """Keys of pairs.

        Parameters
        ----------
        first : int array-like, shape (p,)
            j, with ``0 <= j < m``.
        second : int array-like, shape (p,)
            k: -1 (linear term), j (square) or ``j < k < m`` (cross).

        Returns
        -------
        keys : int64 array, shape (p,)

        Raises
        ------
        ParameterError
            One line when a pair is outside the m columns or not in
            canonical order.
        """
        first = np.asarray(first, dtype=np.int64)
        second = np.asarray(second, dtype=np.int64)
        m = self.n_features
        bad = ((first < 0) | (first >= m) | (second >= m)
               | ((second < first) & (second != -1)))
        if np.any(bad):
            pos = int(np.flatnonzero(np.ravel(bad))[0])
            pair = (int(np.ravel(first)[pos]), int(np.ravel(second)[pos]))
            raise ParameterError(f"pair {pair} is not a degree-2 candidate of "
                                 f"{m} columns")
        return first * self.stride + (second + 1)

    def decode(self, keys):
        """Pairs of keys (inverse of :meth:`encode`).

        Parameters
        ----------
        keys : int64 array-like, shape (p,)
            In ``[0, n_keys)``.

        Returns
        -------
        first, second : int64 arrays, shape (p,)
            ``second == -1`` for a linear term, ``second == first`` for a
            square.

        Raises
        ------
        ParameterError
            One line when a key is outside ``[0, n_keys)``.
        """
        keys = np.asarray(keys, dtype=np.int64)
        if keys.size and (keys.min() < 0 or keys.max() >= self.n_keys):
            raise ParameterError(f"key outside [0, {self.n_keys}) for "
                                 f"{self.n_features} columns")
        return keys // self.stride, keys % self.stride - 1

    def linear(self, columns) -> np.ndarray:
        """Keys of the linear terms of ``columns`` (int64 array)."""
        return np.asarray(columns, dtype=np.int64) * self.stride

    def square(self, columns) -> np.ndarray:
        """Keys of the squares of ``columns`` (int64 array)."""
        columns = np.asarray(columns, dtype=np.int64)
        return columns * self.stride + (columns + 1)

    def __repr__(self):
        return f"PairKeys(n_features={self.n_features})"
