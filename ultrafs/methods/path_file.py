"""A path file (``ultrafs path --out``) read back as a sequence of models.

:class:`PathModels` validates the file's own fields on load and builds the
:class:`~ultrafs.model.Model` of any point, validated as a model file is;
:func:`load_model_or_point` is what ``evaluate``, ``predict`` and
``report`` call: a model file's model, or the point of a path file chosen
by λ (a number, or ``min`` / ``1se`` of its cross-validation), by index or
by nonzero count; with none given, the cross-validation's ``lambda_1se``
(glmnet's default), or a one-line refusal naming the options.
"""

from __future__ import annotations

import json
import os

import numpy as np

from ultrafs.errors import InputFormatError
from ultrafs.model import (MODEL_FORMAT, MODEL_VERSION, PATH_FORMAT, PATH_SIGNED_VERSION,
                           PATH_VERSIONS, Model, check_fingerprint, is_path_file,
                           parsed_model_file)

__all__ = ["PathModels", "load_model_or_point"]


def _shown(value) -> str:
    """A value for a message: short, and cheap for any JSON value."""
    if isinstance(value, (list, dict)):
        return f"a JSON {'list' if isinstance(value, list) else 'object'}"
    return json.dumps(value)[:40]


def _finite(value, what, low=None):
    """A finite real number (not a boolean), above ``low`` when given."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not np.isfinite(value) or (low is not None and value <= low):
        bound = "" if low is None else f" > {low:g}"
        raise InputFormatError(f"{what} must be a finite number{bound}, got "
                               f"{_shown(value)}")
    return float(value)


def _count(value, what, high=None):
    """An integer (not a boolean) in ``0 .. high``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 \
            or (high is not None and value > high):
        raise InputFormatError(f"{what} must be an integer in 0 .. "
                               f"{'' if high is None else high}, got "
                               f"{_shown(value)}")
    return int(value)


class PathModels:
    """A path file (``ultrafs path --out``) as a sequence of models.

    Point ``k`` (0-based, in the file's order: λ decreasing) is the
    :class:`Model` of the ``k``-th λ: its features, weights and intercept,
    validated as a model file is when it is built (:meth:`model`).  The
    file's own fields are checked on load: the format, ``classes``, each
    point's ``lambda`` (finite, > 0, decreasing) and ``nnz``, and the
    cross-validation (``cv``: one point per λ, finite numbers, chosen
    indices on the path).

    Attributes
    ----------
    where : str
        The file, as the user named it (every message starts with it).
    obj : dict
        The parsed file.
    lambdas : float64 array, shape (n_points,)
    nnz : int64 array, shape (n_points,)
    cv : dict or None
    """

    #: the options that pick a point (named by every refusal)
    OPTIONS = ("--lambda X (a λ of the path, or min / 1se of its --cv), --point K or "
               "--n-features-to-select K")

    def __init__(self, obj, where, *, verify=False):
        self.where, self.obj = where, obj
        try:
            self._check()
        except InputFormatError as exc:
            raise InputFormatError(f"{where}: invalid path file: {exc}") from None
        if verify:          # a file from disk: its content as written
            check_fingerprint(obj, where, "path file", PATH_SIGNED_VERSION)

    def check_points(self):
        """Build every point's model (each validated as a model file is)."""
        for index in range(len(self)):
            self.model(index)

    @classmethod
    def load(cls, path, *, max_bytes=None) -> "PathModels":
        """Read and validate a path file, its fingerprint included; one
        :class:`InputFormatError` line naming ``path`` and the problem
        otherwise."""
        path = os.fspath(path)
        obj = parsed_model_file(path, max_bytes)
        if not is_path_file(obj):
            raise InputFormatError(f"{path}: not an ultrafs path file")
        return cls(obj, path, verify=True)

    def _check(self):
        obj = self.obj
        if obj.get("format") != PATH_FORMAT:
            raise InputFormatError("written before path files recorded their classes; "
                                   "write it again with ultrafs path")
        version = obj.get("format_version")
        if isinstance(version, bool) or version not in PATH_VERSIONS:
            raise InputFormatError(f"format version {_shown(version)} is not "
                                   f"supported (this ultrafs reads versions "
                                   f"{', '.join(map(str, PATH_VERSIONS))})")
        if obj.get("method") != "l1":
            raise InputFormatError(f"method must be l1, got "
                                   f"{_shown(obj.get('method'))}")
        steps = obj.get("path")
        if not isinstance(steps, list) or not steps:
            raise InputFormatError("path must be a non-empty list of points")
        lambdas, nnz = [], []
        for k, step in enumerate(steps):
            if not isinstance(step, dict):
                raise InputFormatError(f"path[{k}] must be a JSON object")
            lambdas.append(_finite(step.get("lambda"), f"path[{k}] lambda", 0.0))
            nnz.append(_count(step.get("nnz"), f"path[{k}] nnz"))
        self.lambdas = np.array(lambdas)
        self.nnz = np.array(nnz, dtype=np.int64)
        if np.any(np.diff(self.lambdas) > 0):
            raise InputFormatError("the λ of path must decrease")
        _finite(obj.get("lambda_max"), "lambda_max", 0.0)
        _count(obj.get("n_samples"), "n_samples")
        self.cv = self._checked_cv(obj.get("cv"))

    def _checked_cv(self, cv):
        if cv is None:
            return None
        if not isinstance(cv, dict) or not isinstance(cv.get("points"), list):
            raise InputFormatError("cv must be a JSON object with a points list")
        n = self.lambdas.size
        if len(cv["points"]) != n:
            raise InputFormatError(f"cv has {len(cv['points'])} points for {n} λ")
        if isinstance(cv.get("n_folds"), bool) or _count(cv.get("n_folds"),
                                                           "cv n_folds") < 2:
            raise InputFormatError("cv n_folds must be at least 2")
        for k, point in enumerate(cv["points"]):
            if not isinstance(point, dict):
                raise InputFormatError(f"cv points[{k}] must be a JSON object")
            lam = _finite(point.get("lambda"), f"cv points[{k}] lambda", 0.0)
            if abs(lam - self.lambdas[k]) > 1e-9 * self.lambdas[k]:
                raise InputFormatError(f"cv points[{k}] lambda {lam:.6g} is not the "
                                       f"path's ({self.lambdas[k]:.6g})")
            for name in ("deviance_mean", "deviance_std", "deviance_se",
                         "accuracy_mean", "accuracy_std", "accuracy_se", "nnz_mean"):
                _finite(point.get(name), f"cv points[{k}] {name}", -1e-300)
        for word in ("min", "1se"):
            _count(cv.get(f"index_{word}"), f"cv index_{word}", n - 1)
        return cv

    def __len__(self):
        return int(self.lambdas.size)

    def index(self, *, lambda_=None, point=None, n_features_to_select=None):
        """The point asked for, and how it was chosen (words for people).

        Parameters
        ----------
        lambda_ : float or {"min", "1se"}, optional
            A λ of the path (relative difference at most 1e-5), or the
            cross-validation's ``lambda_min`` / ``lambda_1se``.
        point : int, optional
            0-based index on the path.
        n_features_to_select : int, optional
            The point with the most nonzero weights, at most that many (the
            largest λ among several).

        With none given: the cross-validation's ``lambda_1se`` (glmnet's
        default), or a one-line refusal naming the options.

        Returns
        -------
        index : int
        how : str
        """
        where, n = self.where, len(self)
        given = [v is not None for v in (lambda_, point, n_features_to_select)]
        if sum(given) > 1:
            raise InputFormatError(f"{where}: give one of {self.OPTIONS}, not several")
        if not any(given):
            if self.cv is None:
                raise InputFormatError(
                    f"{where}: a path file of {n} models and no --cv choice: pick one "
                    f"with {self.OPTIONS}")
            lambda_ = "1se"
        if point is not None:
            if not -n <= int(point) < n:
                raise InputFormatError(f"{where}: --point {point} is not a point of "
                                       f"the path (0 .. {n - 1})")
            return int(point) % n, f"point {int(point) % n}"
        if n_features_to_select is not None:
            fits = np.flatnonzero(self.nnz <= int(n_features_to_select))
            if not fits.size:
                raise InputFormatError(
                    f"{where}: every point has more than {n_features_to_select} "
                    f"nonzero weights (the fewest: {int(self.nnz.min())})")
            best = fits[np.argmax(self.nnz[fits])]
            first = int(np.flatnonzero(self.nnz == self.nnz[best])[0])
            return first, (f"the most nonzero weights, at most "
                           f"{n_features_to_select}")
        if isinstance(lambda_, str) and lambda_ in ("min", "1se"):
            if self.cv is None:
                raise InputFormatError(f"{where}: --lambda {lambda_} needs a path "
                                       "written with --cv")
            return int(self.cv[f"index_{lambda_}"]), f"lambda_{lambda_} of the --cv"
        try:
            lam = float(lambda_)
        except (TypeError, ValueError):
            lam = float("nan")
        if not 0 < lam < float("inf"):          # nan and inf matched any point
            raise InputFormatError(f"{where}: --lambda must be a number, min or 1se, "
                                   f"got {lambda_!r}") from None
        close = np.flatnonzero(np.abs(self.lambdas - lam) <= 1e-5 * abs(lam))
        if not close.size:
            nearest = int(np.argmin(np.abs(self.lambdas - lam)))
            raise InputFormatError(
                f"{where}: λ = {lam:.6g} is not a point of the path (the nearest: "
                f"{self.lambdas[nearest]:.6g}, point {nearest})")
        return int(close[0]), f"λ = {self.lambdas[close[0]]:.6g}"

    def model(self, index, how=None) -> Model:
        """The :class:`Model` of point ``index``, validated as a model file is."""
        obj, step = self.obj, self.obj["path"][index]
        features = step.get("features")
        lam = float(self.lambdas[index])
        lambda_max, n = float(obj["lambda_max"]), int(obj["n_samples"]) or 1
        params = {"method": "l1", "lambda": lam, "lambda_ratio": lam / lambda_max,
                  "lambda_max": lambda_max, "C": 1.0 / (n * lam), "C_rule": "path",
                  "loss": "logistic", "fit_intercept": True,
                  "screening": obj.get("screening"), "sequential": obj.get("sequential"),
                  "id_offset": obj.get("id_offset", 0),
                  "data_fingerprint": obj.get("data_fingerprint"),
                  "path_point": int(index), "path_file": self.where}
        if obj.get("id_range") is not None:
            params["id_range"] = obj["id_range"]
        if how:
            params["chosen_by"] = how
        history = {k: v for k, v in step.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)}
        model_obj = {
            "format": MODEL_FORMAT, "format_version": MODEL_VERSION, "target": "binary",
            "features": features, "coef": step.get("coef"),
            "intercept": step.get("intercept"), "loss": "logistic",
            "classes": obj.get("classes"),
            "batches": [0, len(features) if isinstance(features, list) else 0],
            "params": params, "history": [history],
            "stop_reason": f"point {index} of the path file ({how or f'λ = {lam:.6g}'})"}
        try:
            model = Model.from_dict(model_obj, where=f"{self.where} (point {index})")
        except RecursionError:
            raise InputFormatError(f"{self.where}: invalid path file: path[{index}] "
                                   "holds values nested too deeply") from None
        if len(model.features) != int(self.nnz[index]):
            raise InputFormatError(f"{self.where}: invalid path file: path[{index}] "
                                   f"has {len(model.features)} features, nnz "
                                   f"{int(self.nnz[index])}")
        return model


def load_model_or_point(path, *, lambda_=None, point=None, n_features_to_select=None):
    """A model file's :class:`Model`, or the chosen point of a path file.

    Returns
    -------
    model : Model
    chosen : dict or None
        For a path file: ``point``, ``lambda``, ``nnz``, ``chosen_by``.

    Raises
    ------
    InputFormatError
        One line naming ``path``: the file's problem, a point option given
        for a model file, or a path file without a point to take.
    """
    path = os.fspath(path)
    obj = parsed_model_file(path)
    if not is_path_file(obj):
        try:
            model = Model.from_dict(obj, where=path, verify=True)
        except RecursionError:
            raise InputFormatError(
                f"{path}: not a model file (values nested too deeply)") from None
        if any(v is not None for v in (lambda_, point, n_features_to_select)):
            raise InputFormatError(f"{path}: a model file has one model: "
                                   f"{PathModels.OPTIONS} apply to a path file")
        return model, None
    models = PathModels(obj, path, verify=True)
    index, how = models.index(lambda_=lambda_, point=point,
                              n_features_to_select=n_features_to_select)
    return models.model(index, how), {"point": index, "lambda": float(models.lambdas[index]),
                                      "nnz": int(models.nnz[index]), "chosen_by": how}
