"""Feature spaces: what the candidates are.

A feature space (:class:`~ultrafs.features.base.FeatureSpace`) enumerates
candidates for the worst-case analysis (``find_candidates``), materialises
selected candidates as in-memory columns (``materialize``) and converts its
opaque int64 keys to user-visible ids (``feature_ids``).  Nothing outside a
feature space knows how keys encode virtual features.

Every feature space is registered in :data:`FEATURE_SPACES` under its
``kind``; the faces build one with :func:`make_feature_space` (from the
``poly`` parameter), :func:`build_feature_space` (from a kind and its
parameters) or :func:`feature_space_from_spec` (from a model file).
"""

from ultrafs.errors import ParameterError
from ultrafs.features.base import (FEATURE_SPACES, FeatureSpace,
                                   feature_space_class, register_feature_space)
from ultrafs.features.keys import PairKeys
from ultrafs.features.linear import LinearFeatures
from ultrafs.features.poly import PolyFeatures
from ultrafs.features.groups import GroupFeatures
from ultrafs.features.tree import TreeFeatures
from ultrafs.features.additive import (HIKFeatures, Chi2Features,
                                      IntersectionFeatures, JSFeatures)
from ultrafs.features.rff import RandomFourierFeatures
from ultrafs.features.rbf import RBFKernelFeatures

__all__ = ["FeatureSpace", "FEATURE_SPACES", "register_feature_space",
           "LinearFeatures", "PolyFeatures", "GroupFeatures", "TreeFeatures",
           "HIKFeatures", "Chi2Features", "IntersectionFeatures", "JSFeatures",
           "RandomFourierFeatures", "RBFKernelFeatures",
           "PairKeys",
           "make_feature_space",
           "build_feature_space", "feature_space_from_spec"]


def build_feature_space(store, kind, **params) -> FeatureSpace:
    """The feature space of a registered ``kind`` with its parameters.

    Parameters
    ----------
    store : ColumnStore
    kind : str
        A key of :data:`FEATURE_SPACES` (``"linear"``, ``"poly2"``...).
    **params
        Constructor parameters of that kind.

    Raises
    ------
    ParameterError
        Unknown kind (the message lists the registered ones), unknown
        parameter or value out of its domain.
    """
    return feature_space_class(kind).from_params(store, **params)


def make_feature_space(store, poly=1, gamma=1.0, coef0=1.0, groups=None,
                       tree=None, kernel=None, kernel_params=None) -> FeatureSpace:
    """The feature space of a store for the faces' parameters.

    Parameters
    ----------
    store : ColumnStore
    poly : int
        Polynomial degree; selects the registered space whose
        ``poly_degree`` equals it (1: linear, 2: degree-2 features).
    gamma, coef0 : float
        Kernel parameters, passed to the spaces that record them in their
        ``spec_params`` (degree 2); unused for ``poly=1``.
    groups : optional
        Groups of columns (:class:`~ultrafs.features.groups.GroupFeatures`):
        the candidates are the groups.
    tree : optional
        A parent list over the columns and inner nodes
        (:class:`~ultrafs.features.tree.TreeFeatures`): the candidates are
        the tree's nodes.
    kernel : str, optional
        An additive kernel whose per-feature expansions are the candidate
        groups (:mod:`ultrafs.features.additive`): ``"hik"``, ``"chi2"``,
        ``"intersection"`` or ``"js"``.
    kernel_params : dict, optional
        Parameters of ``kernel``: ``q`` (HIK levels, 100), or ``n`` (order,
        5: 2n + 1 columns) and ``period`` (L) of the other maps.

    Raises
    ------
    ParameterError
        One line for a degree no registered space has, parameters out of
        their domain, or structures that do not combine (degree 2 with
        groups, a tree or a kernel; groups with a tree or a kernel).
    """
    given_structures = [name for name, value in (("groups", groups), ("tree", tree),
                                                 ("kernel", kernel))
                        if value is not None]
    if len(given_structures) > 1:
        raise ParameterError(f"{' and '.join(given_structures)} do not combine: "
                             "give one of them")
    if kernel_params and kernel is None:
        raise ParameterError("kernel parameters given without a kernel")
    if given_structures and not (poly == 1 and not isinstance(poly, bool)):
        raise ParameterError(f"{given_structures[0]} do not combine with poly={poly!r}: "
                             "degree-2 candidates are single products, not groups")
    if groups is not None:
        return feature_space_class("groups").from_params(store, groups=groups)
    if tree is not None:
        return feature_space_class("tree").from_params(store, tree=tree)
    if kernel is not None:
        from ultrafs.features.additive import make_additive_space

        return make_additive_space(store, kernel, **(kernel_params or {}))
    degrees = {cls.poly_degree: cls for cls in FEATURE_SPACES.values()
               if cls.poly_degree is not None}
    try:
        cls = None if isinstance(poly, bool) else degrees.get(poly)
    except TypeError:        # unhashable
        cls = None
    if cls is None:
        raise ParameterError(f"poly must be one of "
                             f"{', '.join(map(str, sorted(degrees)))}, got {poly!r}")
    given = {"gamma": gamma, "coef0": coef0}
    return cls.from_params(store, **{name: value for name, value in given.items()
                                     if name in cls.spec_params})


def feature_space_from_spec(store, spec) -> FeatureSpace:
    """Rebuild the feature space recorded in a model file's ``feature_space``.

    Parameters
    ----------
    store : ColumnStore
    spec : dict
        ``{"kind": ..., **params}`` as written by ``FeatureSpace.spec``;
        a missing kind means ``"linear"`` (models of format version 1).

    Raises
    ------
    ParameterError
        One line for an unknown kind (listing the registered ones) or a
        spec lacking a parameter.
    """
    kind = spec.get("kind", "linear")
    cls = feature_space_class(kind)
    return cls.from_spec(store, {**spec, "kind": kind})
