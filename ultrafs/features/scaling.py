"""Column scaling for every method's ``standardize`` option.

The rule (glmnet's ``standardize``, without centring):

* every column ``x_j`` of the store is divided by its root mean square over
  the rows, ``s_j = sqrt(Σ_i x_ij² / n)``; a column of zeros keeps
  ``s_j = 1`` (nothing is divided by zero);
* no column is centred: subtracting the mean would turn every zero of a
  sparse store into a nonzero (an n × m dense matrix out of a store of a
  few nonzeros per row), and the bias of the model absorbs the means
  anyway.  Dense arrays follow the same rule, so that one store gives the
  same model whatever its layout;
* the mean runs over the rows with equal weight, ``sample_weight`` or not
  (the factors describe the data, not the loss);
* generated features are products of scaled columns: a degree-2 cross
  feature ``x_j·x_k`` becomes ``(x_j/s_j)(x_k/s_k)``, i.e. its scale is
  ``s_j·s_k`` (a square ``s_j²``).  The exact root mean square of
  ``x_j·x_k`` needs ``Σ_i x_ij² x_ik²`` for every pair, an m × m Gram of
  squares; the product rule needs the m base scales only, is what the
  cross term's own kernel ``(x'z)²`` of scaled rows generates, and for
  independent columns equals the exact value (``E[x_j²x_k²] =
  E[x_j²]E[x_k²]``).  A group gathers scaled columns.

The factors come from ONE streamed statistics pass
(:func:`ultrafs.scoring.statistics.feature_statistics`, ``sum_squares``:
O(m) memory, any block size, bit for bit) and are applied on every read by
:class:`ultrafs.store.scaled.ScaledColumnStore`, so every feature space,
pass and solver sees the scaled columns without a copy of the data.  A
model fitted on the scaled store reports its weights on the original
scale (:func:`original_scale`): ``w_f / scale_f`` with ``scale_f`` the
product of the factors of feature ``f``'s source columns
(:func:`feature_scales`), so it predicts on raw data and its file needs no
factor to predict (it records those of its features).
"""

from __future__ import annotations

import numpy as np

__all__ = ["column_scales", "standardized", "feature_scales", "original_scale",
           "column_factors", "on_original_scale"]


def column_scales(store, *, block_size=None, scheduler=None, num_workers=None):
    """``s_j = sqrt(Σ_i x_ij² / n)`` of every column (1 for a column of zeros).

    One streamed pass (:func:`ultrafs.scoring.statistics.feature_statistics`);
    identical for any block size, scheduler and worker count.

    Parameters
    ----------
    store : ColumnStore
        n rows, m columns.
    block_size, scheduler, num_workers
        As for the scoring passes.

    Returns
    -------
    scales : float64 array, shape (m,)
        Finite and > 0.
    """
    from ultrafs.progress import is_showing
    from ultrafs.scoring.statistics import feature_statistics

    stats = feature_statistics(store, ("sum_squares",), block_size=block_size,
                               scheduler=scheduler, num_workers=num_workers,
                               progress_label="column scales" if is_showing() else None)
    n = max(int(store.n_samples), 1)
    scales = np.sqrt(np.asarray(stats["sum_squares"], dtype=np.float64) / n)
    # a column of zeros (or one whose squares underflow) is left as it is
    dead = ~(np.isfinite(scales) & (scales > 0))
    scales[dead] = 1.0
    return scales


def standardized(store, *, block_size=None, scheduler=None, num_workers=None):
    """``store`` with every column divided by its :func:`column_scales`.

    Returns
    -------
    scaled : ultrafs.store.scaled.ScaledColumnStore
        Its ``scales`` attribute holds the factors, shape (m,).
    """
    from ultrafs.store.scaled import ScaledColumnStore

    return ScaledColumnStore(store, column_scales(store, block_size=block_size,
                                                  scheduler=scheduler,
                                                  num_workers=num_workers))


def feature_scales(space, feature_ids, scales) -> np.ndarray:
    """The factor each model feature was divided by: the product of its
    source columns' factors (``s_j`` for column j, ``s_j·s_k`` for the
    degree-2 feature ``[j, k]``, ``s_j²`` for ``[j, j]``).

    Parameters
    ----------
    space : FeatureSpace
        The space the ids belong to (its ``store`` numbers the ids, its
        ``source_ids`` names the columns a feature is made of).
    feature_ids : list
        User-visible ids, length p.
    scales : float64 array, shape (m,)
        :func:`column_scales` of ``space.store``.

    Returns
    -------
    float64 array, shape (p,)
    """
    scales = np.asarray(scales, dtype=np.float64)
    out = np.ones(len(feature_ids), dtype=np.float64)
    m = len(scales)
    for pos, fid in enumerate(feature_ids):
        columns = space.store.columns_of(np.asarray(space.source_ids(fid), dtype=np.int64))
        for column in columns.tolist():
            if 0 <= column < m:
                out[pos] *= scales[column]
    return out


def original_scale(coef, factors) -> np.ndarray:
    """Weights of scaled features on the original scale: ``coef / factors``.

    Parameters
    ----------
    coef : array, shape (p,) or (p, K)
    factors : float64 array, shape (p,)

    Returns
    -------
    float64 array, shape of ``coef``
    """
    coef = np.asarray(coef, dtype=np.float64)
    factors = np.asarray(factors, dtype=np.float64)
    return coef / (factors if coef.ndim == 1 else factors[:, None])


def column_factors(store, feature_ids, scales) -> np.ndarray:
    """:func:`feature_scales` of linear features: ``scales`` of the store
    columns of ``feature_ids`` (1 for an id the store lacks).

    Returns
    -------
    float64 array, shape (len(feature_ids),)
    """
    scales = np.asarray(scales, dtype=np.float64)
    columns = store.columns_of(np.asarray(feature_ids, dtype=np.int64).reshape(-1))
    inside = (columns >= 0) & (columns < len(scales))
    return np.where(inside, scales[np.where(inside, columns, 0)], 1.0)


def on_original_scale(model, factors):
    """A model fitted on scaled features, made to predict on raw data.

    Its weights (and its refit's) are divided by ``factors``; its params
    record ``standardize`` and the factors (``feature_scales``, one per
    feature: what the report shows; prediction needs none of them).

    Parameters
    ----------
    model : ultrafs.model.Model
        Changed in place and returned.
    factors : float64 array, shape (n_features_selected,)
    """
    factors = np.asarray(factors, dtype=np.float64)
    model.coef = original_scale(model.coef, factors)
    if model.refit is not None:
        model.refit = {**model.refit, "coef": original_scale(model.refit["coef"], factors)}
    model.params["standardize"] = True
    model.params["feature_scales"] = factors.tolist()
    return model
