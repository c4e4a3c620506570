"""The feature-space contract and the registry the faces read.

A feature space says what the candidates of the worst-case analysis are.
It enumerates them for a scoring pass (:meth:`FeatureSpace.find_candidates`),
materialises the selected ones as in-memory columns
(:meth:`FeatureSpace.materialize`) and converts between its opaque int64
*keys* and the *feature ids* users see (model files, CLI output,
``selected_features_``).  Nothing outside a feature space knows how a key
encodes a virtual feature.

Every concrete feature space is registered under its :attr:`~FeatureSpace.kind`
with :func:`register_feature_space`; the kind is recorded in model files
(``{"kind": ..., **parameters}``, see :meth:`FeatureSpace.spec`) and
:data:`FEATURE_SPACES` is what :func:`ultrafs.features.make_feature_space`
and :func:`ultrafs.features.feature_space_from_spec` read.  A new member
subclasses :class:`FeatureSpace`, decorates itself with
:func:`register_feature_space`, is imported by
``ultrafs/features/__init__.py`` and subclasses
``tests/feature_space_contract.py``'s ``FeatureSpaceContract``.
"""

from __future__ import annotations

import abc
import inspect
from typing import ClassVar

import numpy as np

from ultrafs.errors import ParameterError
from ultrafs.store.base import ColumnBlock, ColumnStore

__all__ = ["FeatureSpace", "FEATURE_SPACES", "register_feature_space",
           "feature_space_class", "is_integral"]

#: registered feature spaces, kind -> class
FEATURE_SPACES: dict[str, type["FeatureSpace"]] = {}


def register_feature_space(cls):
    """Class decorator: register a :class:`FeatureSpace` under its ``kind``.

    Parameters
    ----------
    cls : type
        A concrete subclass of :class:`FeatureSpace` with a non-empty
        string ``kind`` not yet taken by another class.

    Returns
    -------
    cls : type
        Unchanged.

    Raises
    ------
    TypeError
        If ``cls`` is not a concrete :class:`FeatureSpace`.
    ValueError
        If ``kind`` is empty or already registered by another class.
    """
    if not (isinstance(cls, type) and issubclass(cls, FeatureSpace)):
        raise TypeError(f"{cls!r} is not a FeatureSpace subclass")
    if inspect.isabstract(cls):
        raise TypeError(f"{cls.__name__} is abstract: "
                        f"{', '.join(sorted(cls.__abstractmethods__))} missing")
    kind = getattr(cls, "kind", None)
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"{cls.__name__}.kind must be a non-empty string")
    known = FEATURE_SPACES.get(kind)
    if known is not None and known is not cls:
        raise ValueError(f"feature space kind {kind!r} is already registered "
                         f"by {known.__module__}.{known.__qualname__}")
    FEATURE_SPACES[kind] = cls
    return cls


def is_integral(value) -> bool:
    """A Python or NumPy integer (``bool`` excluded): a valid id or count."""
    return (isinstance(value, (int, np.integer)) and not isinstance(value, bool))


def feature_space_class(kind) -> type["FeatureSpace"]:
    """The registered class of ``kind``.

    Raises
    ------
    ParameterError
        One line naming the registered kinds when ``kind`` is unknown.
    """
    cls = FEATURE_SPACES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ParameterError(f"unknown feature space {kind!r}; registered: "
                             f"{', '.join(sorted(FEATURE_SPACES))}")
    return cls


class FeatureSpace(abc.ABC):
    """Abstract feature space over a :class:`~ultrafs.store.base.ColumnStore`.

    Keys are int64, opaque to every caller, distinct per candidate and
    ranked increasingly by the scoring pass to break score ties; they are
    valid only together with the store (and its column count) they were
    made for.  Feature ids are what users see: JSON-serialisable values
    (an int for a column, ``[j, k]`` for a degree-2 pair...) in the store's
    numbering (``store.id_offset``).

    Subclasses set :attr:`kind` (and :attr:`poly_degree`,
    :attr:`spec_params` where they apply), take the store as the first
    argument of ``__init__`` and implement the abstract members.

    Parameters
    ----------
    store : ColumnStore
        The columns the candidates are made of.
    """

    #: registry name, recorded in model files as ``feature_space["kind"]``
    kind: ClassVar[str] = ""
    #: the ``poly`` value of the faces that selects this space (None: none)
    poly_degree: ClassVar[int | None] = None
    #: constructor parameters recorded in :meth:`spec` (the model-defining
    #: ones; engine knobs such as pruning switches are not recorded)
    spec_params: ClassVar[tuple[str, ...]] = ()

    def __init__(self, store: ColumnStore):
        self.store = store

    # ----------------------------------------------------------- building
    @classmethod
    def from_params(cls, store: ColumnStore, **params) -> "FeatureSpace":
        """Build one from user parameters (what the faces call).

        Parameters
        ----------
        store : ColumnStore
        **params
            Keyword arguments of the constructor (e.g. ``gamma``,
            ``coef0`` for degree 2).

        Raises
        ------
        ParameterError
            One line when a parameter is not one of the constructor's, or
            a value is out of its domain.
        """
        accepted = [name for name in inspect.signature(cls.__init__).parameters
                    if name not in ("self", "store")]
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise ParameterError(
                f"feature space {cls.kind!r} takes no parameter "
                f"{', '.join(map(repr, unknown))}; accepted: "
                f"{', '.join(accepted) or 'none'}")
        return cls(store, **params)

    @classmethod
    def from_spec(cls, store: ColumnStore, spec: dict) -> "FeatureSpace":
        """Rebuild the feature space a model file's ``feature_space`` records.

        Parameters
        ----------
        store : ColumnStore
        spec : dict
            As written by :meth:`spec`: ``{"kind": cls.kind, **params}``.

        Raises
        ------
        ParameterError
            One line when ``spec`` names another kind or lacks one of
            :attr:`spec_params`.
        """
        kind = spec.get("kind", cls.kind)
        if kind != cls.kind:
            raise ParameterError(f"feature space spec of kind {kind!r} given "
                                 f"to {cls.kind!r}")
        missing = [name for name in cls.spec_params if name not in spec]
        if missing:
            raise ParameterError(f"feature space {cls.kind!r} in model lacks "
                                 f"{', '.join(missing)}")
        return cls.from_params(store, **{name: spec[name] for name in cls.spec_params})

    def spec(self) -> dict:
        """Description recorded in model files.

        Returns
        -------
        spec : dict
            ``{"kind": kind, **{name: value for name in spec_params}}``,
            JSON-serialisable; :meth:`from_spec` inverts it.
        """
        return {"kind": self.kind,
                **{name: getattr(self, name) for name in self.spec_params}}

    # ------------------------------------------- model-file ids and specs
    @classmethod
    def id_key(cls, feature_id):
        """Canonical hashable form of a model file's feature id.

        Two ids with the same key are the same feature (a model lists each
        once).  The default accepts an integer ``j`` or a pair ``[j, k]``
        of integers (degree 2: unordered).

        Raises
        ------
        ValueError
            One line when ``feature_id`` is not of this space's form.
        """
        if isinstance(feature_id, (list, tuple)):
            if len(feature_id) != 2 or not all(is_integral(v) for v in feature_id):
                raise ValueError("must be a feature id or a pair [j, k] of ids")
            j, k = (int(v) for v in feature_id)
            return (min(j, k), max(j, k))
        if not is_integral(feature_id):
            raise ValueError("must be an integer or a pair [j, k]")
        return int(feature_id)

    @classmethod
    def source_ids(cls, feature_id) -> list:
        """The store feature ids a model feature is computed from."""
        if isinstance(feature_id, (list, tuple)):
            return [int(v) for v in feature_id]
        return [int(feature_id)]

    @classmethod
    def name_of_id(cls, feature_id, name_of):
        """Display name of a model feature from the names of its source ids
        (``name_of(j)``: a name or None); None unless every source is named."""
        from ultrafs.store.feature_names import compose_name

        return compose_name(feature_id, name_of)

    @classmethod
    def check_feature_ids(cls, spec, feature_ids) -> None:
        """Check a model file's feature ids against its ``feature_space``
        spec (e.g. a generated column within the map's width); the default
        checks nothing.

        Raises
        ------
        ValueError
            One line naming the first feature out of range.
        """

    @classmethod
    def unit_of_id(cls, feature_id):
        """The candidate (group, node, kernel) a model feature belongs to:
        the feature itself unless the space selects groups."""
        return feature_id

    @classmethod
    def check_spec_value(cls, name, value):
        """A model file's ``feature_space[name]``, checked; the default
        accepts a finite real number.

        Raises
        ------
        ValueError
            One line when the value is not of the parameter's form.
        """
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not np.isfinite(value):
            raise ValueError(f"must be a finite number, got {value!r}")
        return value

    # ------------------------------------------------------------- sizes
    @property
    def n_keys(self) -> int:
        """Keys lie in ``0 .. n_keys - 1`` (default: one key per candidate)."""
        return self.n_candidates

    def units_of(self, keys) -> np.ndarray:
        """The candidate (selection unit) each key belongs to.

        A candidate of a group space is a group of several columns (keys);
        the budget of FGM counts candidates with a nonzero weight.  The
        default: every key is its own candidate.

        Returns
        -------
        int64 array, shape (len(keys),)
        """
        return np.asarray(keys, dtype=np.int64)

    def unit_ids(self, units) -> list:
        """User-visible ids of candidates (:meth:`units_of`'s values)."""
        return self.feature_ids(np.asarray(units, dtype=np.int64))

    @property
    def n_samples(self) -> int:
        """Number of rows (samples) of every candidate column."""
        return self.store.n_samples

    @property
    @abc.abstractmethod
    def n_candidates(self) -> int:
        """Number of candidate features (m for linear, m(m+3)/2 for degree 2)."""

    def candidate_blocks(self, block_size=None) -> list:
        """The store's column ranges a streamed pass visits, in order.

        Parameters
        ----------
        block_size : int or None
            Columns per block; None uses the store's own partition.

        Returns
        -------
        blocks : list of (start, stop) tuples of int
            Picklable; empty ranges are dropped.
        """
        bounds = self.store.block_bounds(block_size)
        return [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])
                if hi > lo]

    # ----------------------------------------------------- scoring pass
    @abc.abstractmethod
    def find_candidates(self, weights, k, excluded, run):
        """The ``k`` best candidates of the worst-case analysis.

        A candidate's score is ``s = ||Σ_i x_i A_i||²`` over its column
        ``x`` (map factors included): ``(Σ_i a_i x_i)²`` for 1-D weights,
        ``Σ_c (Σ_i A_ic x_i)²`` for 2-D ones.

        Parameters
        ----------
        weights : float64 array, shape (n_samples,) or (n_samples, K)
            ``alpha * y`` (binary) or the per-class dual weights,
            C-contiguous.
        k : int
            Number wanted, k >= 1.
        excluded : int64 array, sorted, unique
            Keys never returned (already selected).
        run : ultrafs.scoring.runner.BlockRunner
            Runs block tasks on the pass's scheduler; ``run.block_size``
            is the requested block size.

        Returns
        -------
        result : ultrafs.scoring.topk.TopK
            At most ``k`` keys with a positive score, ranked by (score
            decreasing, key increasing); counter ``nnz`` (nonzeros
            streamed) plus space-specific counters; optionally a payload
            for :meth:`materialize`.

        Raises
        ------
        ParameterError
            When the space does not support 2-D weights.
        """

    #: whether :meth:`find_candidates_many` answers its queries in one pass
    shares_passes: ClassVar[bool] = False

    def find_candidates_many(self, queries, run):
        """:meth:`find_candidates` for several queries; a list of results.

        Each query is ``(weights, k, excluded)``, its result the one
        :meth:`find_candidates` gives it.  This default runs one pass per
        query; a space with :attr:`shares_passes` reads its data once for
        all of them (FGM fits of a grid of C in lockstep,
        :mod:`ultrafs.methods.fgm_grid`).
        """
        return [self.find_candidates(weights, k, excluded, run)
                for weights, k, excluded in queries]

    @classmethod
    def find_candidates_across(cls, groups, run):
        """One pass for the queries of several spaces, ``groups`` a list of
        ``(space, queries)``: a list of result lists, or None when the spaces
        cannot share a pass (the default; linear features over row subsets
        of one large store can, :mod:`ultrafs.methods.fgm_grid`)."""
        return None

    # ------------------------------------------------------ materialize
    @abc.abstractmethod
    def materialize(self, keys, dtype=np.float64, payload=None) -> ColumnBlock:
        """Columns of the candidates ``keys``, in the order given.

        Parameters
        ----------
        keys : int64 array, shape (p,)
        dtype : float32 or float64
            Dtype of the returned values.
        payload : dict or None
            What :meth:`find_candidates` attached to its winners; lets a
            space skip reading them again (may be ignored).

        Returns
        -------
        block : ColumnBlock
            ``first_column == -1``, ``indptr`` int64 shape (p + 1,),
            ``indices`` int32 (sorted rows per column), ``data`` of
            ``dtype`` (never None), map factors applied.
        """

    def materialize_compact(self, keys, payload=None) -> ColumnBlock:
        """:meth:`materialize` for the column cache (float64 values).

        A space may return a block without a value per entry where every
        column holds one value (``data`` None, ``column_values`` set:
        degree-2 columns of 0/1 data); this default returns
        :meth:`materialize`'s block.
        """
        return self.materialize(keys, payload=payload)

    @abc.abstractmethod
    def materialize_ids(self, feature_ids, dtype=np.float64) -> ColumnBlock:
        """Like :meth:`materialize` from user-visible ids (for prediction).

        Ids whose source columns are not in the store give empty columns
        (see :meth:`absent_ids`).
        """

    @abc.abstractmethod
    def absent_ids(self, feature_ids) -> list:
        """The ids of ``feature_ids`` whose source columns are not in the store."""

    # -------------------------------------------------------------- ids
    @abc.abstractmethod
    def feature_ids(self, keys) -> list:
        """User-visible ids of ``keys`` (JSON-serialisable), in order.

        Parameters
        ----------
        keys : int64 array, shape (p,)

        Returns
        -------
        ids : list, length p
        """

    @abc.abstractmethod
    def keys_of(self, feature_ids) -> np.ndarray:
        """Keys of user-visible ids: the inverse of :meth:`feature_ids`.

        Returns
        -------
        keys : int64 array, shape (len(feature_ids),)
        """

    def row_max_squares(self, *, block_size=None, scheduler=None,
                        num_workers=None) -> np.ndarray:
        """Largest squared candidate value ``max_f φ_f(x_i)²`` of every sample.

        One streamed pass; used for the data-scaled default of C
        (:func:`ultrafs.methods.validation.default_C`).  Spaces that cannot
        say raise :class:`NotImplementedError`.

        Returns
        -------
        float64 array, shape (n_samples,)
        """
        raise NotImplementedError(
            f"the {self.kind or type(self).__name__} feature space has no row scale")

    def __repr__(self):
        params = ", ".join(f"{name}={getattr(self, name)!r}"
                           for name in self.spec_params)
        return f"{type(self).__name__}({self.store!r}{', ' if params else ''}{params})"
