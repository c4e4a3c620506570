"""Pluggable penalties with their proximal operators.

A penalty ``Omega(w)`` acts on a coefficient vector split into contiguous
blocks by ``block_ptr`` (int64, length ``t + 1``).  Each object offers

``value(coef, block_ptr)``
    ``Omega(coef)``.
``prox(u, step, block_ptr, out=None)``
    ``(w, scale)`` with ``w = argmin_w 1/2 ||w - u||^2 + step * Omega(w)``
    (``step = 1 / tau``).  For a *block-radial* penalty (``block_radial`` is
    True) the solution multiplies each block of ``u`` by one factor and
    ``scale`` (shape ``(t,)``) holds those factors, which lets a solver
    rebuild ``X @ w`` from cached per-block products (paper §5.5); otherwise
    ``scale`` is None.
``prox_1d(value, step, j)`` (separable penalties only, e.g. :class:`L1`)
    the proximal point of one coordinate ``j``, for coordinate descent;
    penalties that are not separable do not define it (a solver that needs
    it says so, see :mod:`ultrafs.solvers.base`).
``subdiff_distance(coef, grad, block_ptr)``
    the distance from ``-grad`` to the subdifferential of ``Omega`` at
    ``coef``, per block, i.e. how far ``coef`` is from the optimality
    condition ``0 in grad + dOmega(coef)`` of ``min Omega + P`` when
    ``grad = grad P(coef)``.

Classes: :class:`L21Squared` (FGM, paper eq. 30 and Algorithm 3),
:class:`L1` (soft-thresholding) and :class:`GroupL1` (group soft-thresholding).
"""

from __future__ import annotations

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.kernels import prox as _k

__all__ = ["Penalty", "L21Squared", "L1", "GroupL1", "PENALTIES"]


def _output(u, out):
    """Return ``out`` or a new float64 buffer shaped like ``u``."""
    return np.empty_like(u, dtype=np.float64) if out is None else out


def _check_alpha(alpha):
    """Return ``alpha`` as a float, rejecting negative or non-finite values."""
    alpha = float(alpha)
    if not np.isfinite(alpha) or alpha < 0:
        raise ParameterError(f"alpha must be finite and >= 0, got {alpha!r}")
    return alpha


class Penalty:
    """Interface of a penalty (see the module docstring)."""

    block_radial = False

    def value(self, coef, block_ptr):
        """Return ``Omega(coef)``."""
        raise NotImplementedError

    def prox(self, u, step, block_ptr, out=None):
        """Return ``(w, scale)``, the proximal point of ``u`` with ``step``."""
        raise NotImplementedError

    def subdiff_distance(self, coef, grad, block_ptr):
        """Return per-block distances from ``-grad`` to ``dOmega(coef)``."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"


class L21Squared(Penalty):
    """``Omega(w) = 1/2 (sum_h ||w_h||_2)^2``, the FGM regulariser (eq. 30).

    Its proximal operator is the Moreau projection of Algorithm 3, computed
    by sorting the ``t`` block norms.
    """

    block_radial = True

    def value(self, coef, block_ptr):
        """Return ``1/2 (sum_h ||coef_h||)^2``.

        Parameters
        ----------
        coef : ndarray of float64, shape (p,)
        block_ptr : ndarray of int64, shape (t + 1,)

        Returns
        -------
        float
        """
        total = float(np.sum(_k.block_norms(coef, block_ptr)))
        return 0.5 * total * total

    def prox(self, u, step, block_ptr, out=None):
        """Return the Moreau projection of ``u`` (Algorithm 3, eq. 34).

        Parameters
        ----------
        u : ndarray of float64, shape (p,)
        step : float
            ``s = 1 / tau`` (positive).
        block_ptr : ndarray of int64, shape (t + 1,)
        out : ndarray of float64, shape (p,), optional
            Buffer for the result; may be ``u``.

        Returns
        -------
        w : ndarray of float64, shape (p,)
        scale : ndarray of float64, shape (t,)
            ``o_h / ||u_h||``, so that ``w_h = scale[h] * u_h``.
        """
        out = _output(u, out)
        scale = _k.l21sq_prox(u, float(step), block_ptr, out)
        return out, scale

    def subdiff_distance(self, coef, grad, block_ptr):
        """Return per-block distances from ``-grad`` to ``dOmega(coef)``.

        With ``S = sum_g ||coef_g||``: for ``coef_h != 0`` the distance is
        ``||grad_h + S coef_h / ||coef_h||||``; for ``coef_h = 0`` it is
        ``max(0, ||grad_h|| - S)``.

        Parameters
        ----------
        coef, grad : ndarray of float64, shape (p,)
        block_ptr : ndarray of int64, shape (t + 1,)

        Returns
        -------
        ndarray of float64, shape (t,)
        """
        norms = _k.block_norms(coef, block_ptr)
        grad_norms = _k.block_norms(grad, block_ptr)
        total = float(np.sum(norms))
        out = np.empty(len(norms), dtype=np.float64)
        for h in range(len(norms)):
            sl = slice(block_ptr[h], block_ptr[h + 1])
            if norms[h] > 0:
                out[h] = np.linalg.norm(grad[sl] + total * coef[sl] / norms[h])
            else:
                out[h] = max(0.0, grad_norms[h] - total)
        return out


class L1(Penalty):
    """``Omega(w) = alpha * ||w||_1``; proximal operator: soft-thresholding.

    Parameters
    ----------
    alpha : float, default 1.0
        Non-negative weight.
    """

    block_radial = False

    def __init__(self, alpha=1.0):
        self.alpha = _check_alpha(alpha)

    def prox_1d(self, value, step, j=0):
        """Return ``soft(value, alpha * step)`` for one coordinate."""
        threshold = self.alpha * float(step)
        if value > threshold:
            return value - threshold
        if value < -threshold:
            return value + threshold
        return 0.0

    def value(self, coef, block_ptr):
        """Return ``alpha * ||coef||_1`` (``block_ptr`` is unused)."""
        return self.alpha * float(np.sum(np.abs(coef)))

    def prox(self, u, step, block_ptr, out=None):
        """Return ``(soft(u, alpha * step), None)``."""
        out = _output(u, out)
        _k.soft_threshold(u, self.alpha * float(step), out)
        return out, None

    def subdiff_distance(self, coef, grad, block_ptr):
        """Return per-block norms of the coordinate-wise distances.

        For ``coef_j != 0``: ``|grad_j + alpha sign(coef_j)|``; for
        ``coef_j = 0``: ``max(0, |grad_j| - alpha)``.
        """
        per_coord = np.where(
            coef != 0,
            np.abs(grad + self.alpha * np.sign(coef)),
            np.maximum(0.0, np.abs(grad) - self.alpha),
        )
        return _k.block_norms(per_coord, block_ptr)

    def __repr__(self):
        return f"L1(alpha={self.alpha!r})"


class GroupL1(Penalty):
    """``Omega(w) = alpha * sum_h ||w_h||_2`` (group lasso).

    Its proximal operator is group soft-thresholding, which is block-radial.

    Parameters
    ----------
    alpha : float, default 1.0
        Non-negative weight.
    """

    block_radial = True

    def __init__(self, alpha=1.0):
        self.alpha = _check_alpha(alpha)

    def value(self, coef, block_ptr):
        """Return ``alpha * sum_h ||coef_h||``."""
        return self.alpha * float(np.sum(_k.block_norms(coef, block_ptr)))

    def prox(self, u, step, block_ptr, out=None):
        """Return ``(w, scale)`` with ``w_h = max(0, 1 - alpha step / ||u_h||) u_h``."""
        out = _output(u, out)
        scale = _k.block_soft_threshold(u, self.alpha * float(step), block_ptr, out)
        return out, scale

    def subdiff_distance(self, coef, grad, block_ptr):
        """Return per-block distances from ``-grad`` to ``dOmega(coef)``."""
        norms = _k.block_norms(coef, block_ptr)
        grad_norms = _k.block_norms(grad, block_ptr)
        out = np.empty(len(norms), dtype=np.float64)
        for h in range(len(norms)):
            sl = slice(block_ptr[h], block_ptr[h + 1])
            if norms[h] > 0:
                out[h] = np.linalg.norm(grad[sl] + self.alpha * coef[sl] / norms[h])
            else:
                out[h] = max(0.0, grad_norms[h] - self.alpha)
        return out

    def __repr__(self):
        return f"GroupL1(alpha={self.alpha!r})"


PENALTIES = {"l21-squared": L21Squared, "l1": L1, "group-l1": GroupL1}
"""Registry of penalty classes by name (every member runs the penalty contract suite)."""
