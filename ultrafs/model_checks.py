"""Reading and validating a model file: the format's constants and checks.

:func:`read_model_text` reads the bytes of a model file (a regular file of
at most :data:`MAX_MODEL_BYTES`, UTF-8); :func:`validated_fields` checks
every field of the parsed JSON object and returns the
:class:`~ultrafs.model.Model` constructor arguments, or raises one
:class:`~ultrafs.errors.InputFormatError` naming the file. The format
itself is described in :mod:`ultrafs.model`.
"""

from __future__ import annotations

import os
import re

import numpy as np

from ultrafs.errors import InputFormatError
from ultrafs.store.input_files import open_regular
from ultrafs.json_fields import InvalidField as _Invalid  # becomes InputFormatError
from ultrafs.json_fields import integer as _int
from ultrafs.json_fields import is_int as _is_int
from ultrafs.json_fields import is_real as _is_real
from ultrafs.json_fields import real as _real
from ultrafs.json_fields import show as _show
from ultrafs.store.targets import MAX_CLASSES

__all__ = ["MODEL_FORMAT", "MODEL_VERSION", "READABLE_VERSIONS", "SIGNED_VERSION",
           "TARGETS", "MAX_MODEL_BYTES", "MAX_FEATURE_ID", "MAX_WEIGHT", "PREDICTORS",
           "read_model_text", "validated_fields", "check_fingerprint"]

MODEL_FORMAT = "ultrafs-model"
#: version 3: a content fingerprint (:mod:`ultrafs.model_fingerprint`),
#: ``batches`` and ``target`` required
MODEL_VERSION = 3
#: model format versions this ultrafs reads (1 and 2 as dicts, or as files
#: once re-signed: they carry no fingerprint)
READABLE_VERSIONS = (1, 2, 3)
#: the first version whose files carry a fingerprint
SIGNED_VERSION = 3
#: largest weight or intercept (absolute value): with data values up to
#: 1e100 and fewer than 2**62 features, a decision value stays below
#: 1e100 * 1e100 * 2**62 < 1e219, far from float64's 1.8e308, so it cannot
#: overflow (larger data values are refused when applied: the decision is
#: checked to be finite); fitted weights are many orders of magnitude
#: smaller
MAX_WEIGHT = 1e100
TARGETS = ("binary", "multiclass", "continuous")
#: largest model (or path) file read, in bytes (checked before reading):
#: 64 MiB hold about 2.5 million weights of a linear model (1.9 million
#: degree-2 pairs), thousands of times what FGM selects (B x T features);
#: the slowest kind to check, degree-2 pairs, loads and reports in under
#: 20 s at this size on a busy 2-core machine (256 MiB took a minute:
#: a hostile file must be refused or read within 30 s)
MAX_MODEL_BYTES = 64 * 2**20
#: largest feature id of a model file (ids are int64 store ids)
MAX_FEATURE_ID = 2**62
#: which weights of a model predict: FGM's own, or its refit's
PREDICTORS = ("selection", "refit")


def read_model_text(path, limit):
    """The text of a model file: a regular file of at most ``limit`` bytes, UTF-8.

    The file is opened without blocking and checked open (a FIFO, socket or
    device is refused before a byte is read, :func:`open_regular`), then
    read up to its own size plus one byte, so the buffer is the file's
    size, not ``limit``.
    """
    if os.path.isdir(path):
        raise InputFormatError(f"{path}: is a directory, not a model file")
    with open_regular(path, "model file") as fh:
        size = os.fstat(fh.fileno()).st_size
        too_large = (f"{path}: model file larger than the {_size_text(limit)} limit "
                     "(MAX_MODEL_BYTES); not read")
        if size > limit:
            raise InputFormatError(too_large)
        try:
            raw = fh.read(size + 1)
            if len(raw) > size:                  # grew since it was opened
                raw += fh.read(limit + 1 - len(raw))
        except OSError as exc:
            raise InputFormatError(
                f"{path}: cannot read the model file ({exc.strerror})") from None
    if len(raw) > limit:
        raise InputFormatError(too_large)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFormatError(
            f"{path}: not a JSON model file (byte {exc.start} is not UTF-8)") from None


def _size_text(n_bytes) -> str:
    """``256 MiB`` for a byte count."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= size and n_bytes % size == 0:
            return f"{n_bytes // size} {unit}"
    return f"{n_bytes} bytes"


_LOSS_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")


def _reals(value, what, shape) -> np.ndarray:
    """A (nested) list of finite real numbers of a given shape, as float64."""
    if not isinstance(value, list):
        raise _Invalid(f"{what} must be a list of numbers, got {_show(value)}")
    if len(shape) == 1 and len(value) == shape[0] and all(
            type(v) is float for v in value):     # the common case, at array speed
        result = np.array(value, dtype=np.float64)
        if np.all(np.isfinite(result)) and (
                not result.size or np.max(np.abs(result)) <= MAX_WEIGHT):
            return result
    try:
        array = np.array(value, dtype=object)
    except ValueError:                       # ragged at a deeper level
        array = np.empty(0, dtype=object)
    if array.shape != shape:
        wanted = " x ".join(map(str, shape))
        raise _Invalid(f"{what} must hold {wanted} numbers (one per "
                       f"{'feature' if len(shape) == 1 else 'feature and class'}), "
                       f"got {_shape_text(value)}")
    for item in array.flat:
        if not _is_real(item):
            raise _Invalid(f"{what} must hold numbers only, found {_show(item)}")
    try:
        result = array.astype(np.float64)
    except OverflowError:
        result = np.full(shape, np.inf)
    if not np.all(np.isfinite(result)):
        raise _Invalid(f"{what} holds a value that is not finite")
    if result.size and np.max(np.abs(result)) > MAX_WEIGHT:
        raise _Invalid(f"{what} holds {_show(float(result.flat[np.argmax(np.abs(result))]))}, "
                       f"beyond the {MAX_WEIGHT:g} bound of a weight (MAX_WEIGHT)")
    return result


def _shape_text(value) -> str:
    """``3`` or ``3 x 2`` or ``a ragged list`` for a message."""
    if not isinstance(value, list):
        return _show(value)
    inner = {len(v) if isinstance(v, list) else None for v in value}
    if not value or inner == {None}:
        return f"{len(value)}"
    if len(inner) == 1 and None not in inner:
        return f"{len(value)} x {inner.pop()}"
    return "a ragged list"


def _str(value, what) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"{what} must be a string, got {_show(value)}")
    return value


def _list(value, what) -> list:
    if not isinstance(value, list):
        raise _Invalid(f"{what} must be a list, got {_show(value)}")
    return value


def _dict(value, what) -> dict:
    if not isinstance(value, dict):
        raise _Invalid(f"{what} must be a JSON object, got {_show(value)}")
    return value


def validated_fields(obj, where, *, verify=False) -> dict:
    """The :class:`Model` constructor arguments of a parsed model file.

    Parameters
    ----------
    obj : object
        The parsed JSON.
    where : str
        Names the file (or the point of a path file) in the error.
    verify : bool
        A file read from disk: its fingerprint must match its content
        (:func:`check_fingerprint`); files of versions 1 and 2, written
        before fingerprints, are refused with the way to re-sign them.
        Dicts built in memory (a path file's points) are not verified.

    Raises
    ------
    InputFormatError
        One line, ``where`` then the first problem found: every field is
        checked first (so the message names the field), then the
        fingerprint.
    """
    if not isinstance(obj, dict) or obj.get("format") != MODEL_FORMAT:
        raise InputFormatError(f"{where}: not an ultrafs model file")
    version = obj.get("format_version")
    if not _is_int(version) or version not in READABLE_VERSIONS:
        raise InputFormatError(
            f"{where}: model format version {_show(version)} is not supported "
            f"(this ultrafs reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))})")
    try:
        fields = _fields(obj, version)
    except _Invalid as exc:
        raise InputFormatError(f"{where}: invalid model file: {exc}") from None
    if verify:
        check_fingerprint(obj, where)
    return fields


def check_fingerprint(obj, where, kind="model file", signed_version=SIGNED_VERSION) -> None:
    """Refuse a model (or path) file whose content does not match its fingerprint.

    Parameters
    ----------
    obj : dict
        The parsed file.
    where : str
        The file, as named.
    kind : {"model file", "path file"}
        For messages.
    signed_version : int
        The first format version of ``kind`` that carries a fingerprint.

    Raises
    ------
    InputFormatError
        One line naming ``where``: no fingerprint (a file of version 1 or
        2, or one whose fingerprint was removed), a malformed one, or one
        that does not match the content (edited by hand, truncated,
        assembled); each says how to re-sign a file the user trusts.
    """
    from ultrafs.model_fingerprint import FINGERPRINT_KEY, fingerprint_of, is_fingerprint

    resign = f"if you trust its content, re-sign it: ultrafs sign {where}"
    version = obj.get("format_version")
    value = obj.get(FINGERPRINT_KEY)
    if value is None:
        if version < signed_version:
            raise InputFormatError(
                f"{where}: {kind} of format version {version} has no fingerprint "
                f"(written before ultrafs checked them), so its content cannot be "
                f"verified: {resign}")
        raise InputFormatError(f"{where}: invalid {kind}: no 'fingerprint' "
                               f"(removed by hand?): {resign}")
    if not is_fingerprint(value):
        raise InputFormatError(f"{where}: invalid {kind}: fingerprint must be "
                               f"'sha256:' and 64 hex digits, got {_show(value)}")
    if value != fingerprint_of(obj):
        raise InputFormatError(
            f"{where}: {kind} content does not match its fingerprint (edited by "
            f"hand, truncated or copied wrongly?): {resign}")


def _fields(obj, version) -> dict:
    required = ("features", "coef", "classes", "intercept", "loss")
    if version >= SIGNED_VERSION:
        required += ("batches", "target")
    missing = [key for key in required if key not in obj]
    if missing:
        raise _Invalid(f"no {', '.join(repr(k) for k in missing)}")
    target = obj.get("target", "binary") if version >= 2 else "binary"
    if target not in TARGETS:
        raise _Invalid(f"unknown target {_show(target)} (expected "
                       f"{' or '.join(TARGETS)})")
    space = _feature_space(obj.get("feature_space", {"kind": "linear"}))
    params = _params(obj.get("params", {}))
    features = _features(obj["features"], space)
    classes = _classes(obj["classes"], target)
    shape = (len(features), len(classes)) if target == "multiclass" else (len(features),)
    coef = _reals(obj["coef"], "coef", shape)
    intercept = _intercept(obj["intercept"], target, len(classes), "intercept")
    loss = _loss(obj["loss"], target)
    batch_key = "batches" if version >= 2 else "groups"
    batches = _batches(obj.get(batch_key, [0, len(features)]), batch_key,
                       len(features))
    refit, predictor = _read_refit(obj, shape, target, len(classes))
    names = _feature_names(obj.get("feature_names"), len(features))
    check_consistency(params, space, features, target, loss)
    return {"features": features, "coef": coef, "intercept": intercept,
            "batches": batches, "loss": loss, "classes": classes,
            "feature_space": space, "params": params,
            "history": _history(obj.get("history", [])),
            "stop_reason": _str(obj.get("stop_reason", ""), "stop_reason"),
            "target": target, "refit": refit, "predictor": predictor,
            "feature_names": names}


def _feature_names(value, n_features):
    """``feature_names``: absent/null, or one name (string) or null per feature."""
    from ultrafs.store.feature_names import name_problem

    if value is None:
        return None
    names = _list(value, "feature_names")
    if len(names) != n_features:
        raise _Invalid(f"feature_names must hold {n_features} names (one per feature), "
                       f"got {len(names)}")
    for k, name in enumerate(names):
        if name is None:
            continue
        problem = name_problem(name)
        if problem is not None:
            raise _Invalid(f"feature_names[{k}] {_show(name)} {problem}")
    return list(names)




def _feature_space(value) -> dict:
    """``feature_space``: a registered kind and its parameters, each checked
    by the kind's ``check_spec_value`` (finite numbers unless it says more)."""
    from ultrafs.features import FEATURE_SPACES

    spec = dict(_dict(value, "feature_space"))
    kind = spec.setdefault("kind", "linear")
    if not isinstance(kind, str) or kind not in FEATURE_SPACES:
        raise _Invalid(f"unknown feature space kind {_show(kind)} (known: "
                       f"{', '.join(sorted(FEATURE_SPACES))})")
    cls = FEATURE_SPACES[kind]
    names = cls.spec_params
    extra = sorted(set(spec) - set(names) - {"kind"})
    if extra:
        raise _Invalid(f"feature space {kind!r} takes no parameter {extra[0]!r}")
    # a parameter added to a kind later has the value files without it meant
    spec = {**getattr(cls, "spec_defaults", {}), **spec}
    for name in names:
        if name not in spec:
            raise _Invalid(f"feature space {kind!r} lacks its parameter {name!r}")
        try:
            spec[name] = cls.check_spec_value(name, spec[name])
        except ValueError as exc:
            raise _Invalid(f"feature_space {name} {exc}") from None
    return spec


def _features(value, space) -> list:
    """Feature ids in the form of the space ``space`` (a checked
    ``feature_space``; ``FeatureSpace.id_key``: integers in
    ``0..MAX_FEATURE_ID``, degree 2 also ``[j, k]``...), none twice, and
    within what its spec allows (``check_feature_ids``)."""
    from ultrafs.features import FEATURE_SPACES

    cls = FEATURE_SPACES[space["kind"]]
    features = _list(value, "features")
    if space["kind"] == "linear" and _plain_ids(features) is not None:
        return list(features)        # the checks below would all pass
    seen = set()
    for k, fid in enumerate(features):
        what = f"features[{k}]"
        try:
            key = cls.id_key(fid)
        except ValueError as exc:
            raise _Invalid(f"{what} {exc}, got {_show(fid)}") from None
        for v in cls.source_ids(fid):
            _int(v, what, 0, MAX_FEATURE_ID)
        if key in seen:
            raise _Invalid(f"feature id {_show(fid)} appears twice")
        seen.add(key)
    try:
        cls.check_feature_ids(space, features)
    except ValueError as exc:
        raise _Invalid(str(exc)) from None
    return list(features)


def _plain_ids(features):
    """The ids as int64 when every one is a Python int in
    ``0..MAX_FEATURE_ID`` and none repeats (a linear model's ids, checked at
    array speed: a model of millions of features loads in seconds); None
    otherwise (the loop of :func:`_features` then names the first problem)."""
    if not all(type(fid) is int for fid in features):
        return None
    try:
        ids = np.fromiter(features, dtype=np.int64, count=len(features))
    except OverflowError:
        return None
    ordered = np.sort(ids)
    if ids.size and (ordered[0] < 0 or ordered[-1] > MAX_FEATURE_ID
                     or np.any(ordered[1:] == ordered[:-1])):
        return None
    return ids


def _classes(value, target) -> list:
    """Class values: distinct, increasing, all numbers or all strings, K of them."""
    from ultrafs.store.feature_names import name_problem

    classes = _list(value, "classes")
    if all(isinstance(c, str) for c in classes) and classes:
        for k, name in enumerate(classes):
            problem = name_problem(name)
            if problem is not None:
                raise _Invalid(f"classes[{k}] {_show(name)} {problem}")
        out = list(classes)
    else:
        out = [_real(c, f"classes[{k}]") for k, c in enumerate(classes)]
    if target == "binary" and len(out) != 2:
        raise _Invalid(f"a binary model has 2 classes, got {len(out)}")
    if target == "multiclass" and not 3 <= len(out) <= MAX_CLASSES:
        raise _Invalid(f"a multiclass model has 3 to {MAX_CLASSES} classes, "
                       f"got {len(out)}")
    if target == "continuous" and out:
        raise _Invalid(f"a continuous model has no classes, got {len(out)}")
    if any(a >= b for a, b in zip(out, out[1:])):
        raise _Invalid(f"classes must be distinct and increasing, got "
                       f"{_show(classes)}")
    return out


def _intercept(value, target, n_classes, what):
    if target != "multiclass":
        value = _real(value, what)
        if abs(value) > MAX_WEIGHT:
            raise _Invalid(f"{what} {_show(value)} is beyond the {MAX_WEIGHT:g} bound "
                           "of a weight (MAX_WEIGHT)")
        return value
    return _reals(value, what, (n_classes,))


def _loss(value, target) -> str:
    """A loss name.

    A well-formed name this process has not registered is accepted: the
    decision values do not depend on the loss, so such a model still
    predicts (``probabilistic`` is False and probabilities are refused);
    anything that is not a name is refused.
    """
    if not isinstance(value, str) or not _LOSS_NAME.fullmatch(value):
        raise _Invalid(f"loss must be a loss name (such as "
                       f"{' or '.join(_known_losses(target))}), got {_show(value)}")
    return value


def _known_losses(target) -> list:
    from ultrafs.errors import ParameterError
    from ultrafs.solvers.losses import get_loss, loss_names

    if target == "continuous":
        return ["l2r"]
    known = []
    for name in loss_names():
        try:
            get_loss(name, target)
        except ParameterError:
            continue
        known.append(name)
    return known


def _batches(value, what, n_features) -> list:
    """Batch boundaries: 0, non-decreasing integers, ending at ``n_features``."""
    batches = [_int(b, f"{what}[{k}]", 0, n_features)
               for k, b in enumerate(_list(value, what))]
    if batches[:1] != [0] or batches[-1:] != [n_features] or any(
            a > b for a, b in zip(batches, batches[1:])):
        raise _Invalid(f"{what} must rise from 0 to the {n_features} features, "
                       f"got {_show(value)}")
    return batches


def _params(value) -> dict:
    """``params``: the fields that ultrafs reads back are checked."""
    params = dict(_dict(value, "params"))
    if "id_offset" in params:
        _int(params["id_offset"], "params id_offset", 0, 1)
    for name in ("C", "refit_C"):
        if params.get(name) is not None and _real(params[name], f"params {name}") <= 0:
            raise _Invalid(f"params {name} must be > 0, got {_show(params[name])}")
    fingerprint = params.get("data_fingerprint")
    if fingerprint is not None and not (
            isinstance(fingerprint, str) and len(fingerprint) <= 256
            and all(ch in "0123456789abcdef" for ch in fingerprint)):
        raise _Invalid(f"params data_fingerprint must be a hex string, got "
                       f"{_show(fingerprint)}")
    if params.get("validation") is not None:
        _validation(params["validation"])
    return params


def _validation(value) -> None:
    """``params.validation``: the choice of C the report draws."""
    curve = _dict(value, "params validation")
    if curve.get("method") not in ("cv", "holdout"):
        raise _Invalid(f"params validation method must be cv or holdout, got "
                       f"{_show(curve.get('method'))}")
    _real(curve.get("C"), "params validation C")
    for name in ("refit_C", "fraction"):
        if curve.get(name) is not None:
            _real(curve[name], f"params validation {name}")
    if curve.get("folds") is not None:
        _int(curve["folds"], "params validation folds", 1)
    _predictor_name(curve.get("predictor"), "params validation predictor")
    _int(curve.get("seed", 0), "params validation seed")
    for k, point in enumerate(_list(curve.get("points"), "params validation points")):
        point = _dict(point, f"params validation points[{k}]")
        _real(point.get("C"), f"params validation points[{k}] C")
        for name in ("accuracy", "loss"):
            _number(point.get(name), f"params validation points[{k}] {name}")
        if point.get("refit_C") is not None:
            _real(point["refit_C"], f"params validation points[{k}] refit_C")
        _predictor_name(point.get("predictor"), f"params validation points[{k}] predictor")


def _predictor_name(value, what) -> None:
    """An optional ``predictor`` of a validation curve or point."""
    if value is not None and value not in PREDICTORS:
        raise _Invalid(f"{what} must be selection or refit, got {_show(value)}")


def _number(value, what) -> None:
    """A JSON number (NaN and infinities allowed: measurements) or a boolean."""
    if not isinstance(value, (int, float)):
        raise _Invalid(f"{what} must be a number, got {_show(value)}")


def _history(value) -> list:
    """``history``: one JSON object of numbers (or booleans) per iteration."""
    history = _list(value, "history")
    for k, record in enumerate(history):
        record = _dict(record, f"history[{k}]")
        for name, item in record.items():
            _number(item, f"history[{k}] {name}")
        for name in ("iteration", "n_features", "n_nonzero"):
            if name in record:
                _int(record[name], f"history[{k}] {name}")
    return [dict(record) for record in history]


def _read_refit(obj, shape, target, n_classes):
    """The optional ``refit`` and ``predictor`` of a model file, validated."""
    predictor = obj.get("predictor", "selection")
    if predictor not in PREDICTORS:
        raise _Invalid(f"unknown predictor {_show(predictor)} (expected selection "
                       "or refit)")
    raw = obj.get("refit")
    if raw is None:
        if predictor == "refit":
            raise _Invalid("predictor 'refit' but no refit")
        return None, predictor
    raw = _dict(raw, "refit")
    missing = [key for key in ("coef", "intercept", "C") if key not in raw]
    if missing:
        raise _Invalid(f"refit lacks {', '.join(repr(k) for k in missing)}")
    coef = _reals(raw["coef"], "refit coef", shape)
    intercept = _intercept(raw["intercept"], target, n_classes, "refit intercept")
    C = _real(raw["C"], "refit C")
    if C <= 0:
        raise _Invalid(f"refit C must be > 0, got {_show(raw['C'])}")
    return {"coef": coef, "intercept": intercept, "C": C}, predictor


#: the feature spaces each built-in method's models are fitted in (a method
#: not listed, such as FGM or one registered at run time, may use any)
_METHOD_SPACES = {"l1": ("linear",), "mslr": ("linear",), "gsrfs": ("linear",),
                  "sklr": ("rff", "rbf")}
#: FGM's parameters that name its space
_FGM_SPACE_PARAMS = {"poly2": ("gamma", "coef0")}


def check_consistency(params, space, features, target, loss) -> None:
    """Refuse fields that contradict each other (each valid on its own).

    * every source id of every feature lies in ``params.id_range``, the ids
      of the data the model was fitted on (when recorded);
    * the feature space is one the method fits in (``params.method``: l1,
      MSLR and GSR-FS linear, SKLR its ``basis``), and FGM's ``poly``,
      ``space``, ``gamma`` and ``coef0`` are those of ``feature_space``;
    * group and tree node ids below ``params.n_candidates``;
    * FGM's ``params.loss``, when recorded, is ``loss``.

    Raises
    ------
    InvalidField
        Naming the fields that disagree.
    """
    from ultrafs.features import FEATURE_SPACES

    kind = space["kind"]
    cls = FEATURE_SPACES[kind]
    id_range = params.get("id_range")
    if id_range is not None:
        lo, hi = _id_range(id_range)
        if lo < params.get("id_offset", 0):
            raise _Invalid(f"params id_range {_show(id_range)} starts below the "
                           f"params id_offset {params['id_offset']}")
        ids = _plain_ids(features) if kind == "linear" else None
        in_range = ids is not None and (not ids.size or (lo <= ids.min()
                                                         and ids.max() <= hi))
        for k, fid in enumerate([] if in_range else features):
            for v in cls.source_ids(fid):
                if not lo <= int(v) <= hi:
                    raise _Invalid(f"features[{k}] {_show(fid)} reads id {int(v)}, "
                                   f"outside the ids {lo}..{hi} of the data the model "
                                   f"was fitted on (params id_range)")
    method = params.get("method", "fgm")
    if method in _METHOD_SPACES and kind not in _METHOD_SPACES[method]:
        raise _Invalid(f"feature_space {kind!r} is not one a {_show(method)} model is "
                       f"fitted in ({' or '.join(_METHOD_SPACES[method])})")
    if method == "sklr" and params.get("basis") not in (None, kind):
        raise _Invalid(f"feature_space {kind!r} is not the model's params basis "
                       f"{_show(params['basis'])}")
    if method == "fgm":
        _fgm_space_params(params, space)
    for name in ("sigma", "n_components"):
        if name in space and params.get(name) is not None and \
                params[name] != space[name]:
            raise _Invalid(f"feature_space {name} {_show(space[name])} is not the "
                           f"model's params {name} {_show(params[name])}")
    n_units = params.get("n_candidates")
    if n_units is not None and kind in ("groups", "tree"):
        n_units = _int(n_units, "params n_candidates", 0, MAX_FEATURE_ID)
        for k, fid in enumerate(features):
            if int(fid[0]) >= n_units:
                raise _Invalid(f"features[{k}] {_show(fid)}: {kind} node {int(fid[0])} "
                               f"is not below the {n_units} candidates (params "
                               f"n_candidates)")
    if method == "fgm" and params.get("loss") is not None and params["loss"] != loss:
        raise _Invalid(f"loss {_show(loss)} is not the model's params loss "
                       f"{_show(params['loss'])}")


def _id_range(value) -> tuple:
    """``params.id_range``: ``[first, last]`` store ids, first <= last."""
    if not (isinstance(value, list) and len(value) == 2):
        raise _Invalid(f"params id_range must be [first id, last id], got {_show(value)}")
    lo = _int(value[0], "params id_range[0]", 0, MAX_FEATURE_ID)
    hi = _int(value[1], "params id_range[1]", lo, MAX_FEATURE_ID)
    return lo, hi


def _fgm_space_params(params, space) -> None:
    """FGM's ``poly``, ``space``, ``gamma``, ``coef0`` agree with ``feature_space``."""
    kind = space["kind"]
    poly = params.get("poly")
    if poly is not None and (poly == 2) != (kind == "poly2"):
        raise _Invalid(f"feature_space {kind!r} disagrees with the model's params poly "
                       f"{_show(poly)}")
    named = params.get("space")
    if named is not None and named != kind:
        raise _Invalid(f"feature_space {kind!r} is not the model's params space "
                       f"{_show(named)}")
    for name in _FGM_SPACE_PARAMS.get(kind, ()):
        if params.get(name) is not None and params[name] != space[name]:
            raise _Invalid(f"feature_space {name} {_show(space[name])} is not the "
                           f"model's params {name} {_show(params[name])}")
