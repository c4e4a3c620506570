"""Feature spaces: what the candidates are.

A feature space enumerates candidates for the worst-case analysis
(``find_candidates``), materialises selected candidates as in-memory columns
(``materialize``) and converts its opaque int64 keys to user-visible ids
(``feature_ids``).  Nothing outside a feature space knows how keys encode
virtual features.
"""

from ultrafs.errors import ParameterError
from ultrafs.features.linear import LinearFeatures
from ultrafs.features.poly import PolyFeatures

__all__ = ["LinearFeatures", "PolyFeatures", "make_feature_space"]


def make_feature_space(store, poly=1, gamma=1.0, coef0=1.0):
    """The feature space of a store for a polynomial degree (1 or 2)."""
    if poly == 1:
        return LinearFeatures(store)
    if poly == 2:
        return PolyFeatures(store, gamma=gamma, coef0=coef0)
    raise ParameterError(f"poly must be 1 or 2, got {poly!r}")


def feature_space_from_spec(store, spec):
    """Rebuild the feature space recorded in a model file's ``feature_space``."""
    kind = spec.get("kind", "linear")
    if kind == "linear":
        return LinearFeatures(store)
    if kind == "poly2":
        return PolyFeatures(store, gamma=float(spec["gamma"]),
                            coef0=float(spec["coef0"]))
    raise ParameterError(f"unknown feature space {kind!r} in model")
