"""The parameters of the feature space, shared by the methods that offer
them: degree 2 (FGM, MSLR) and ``standardize``, the columns' scaling (FGM,
ℓ1-LR, MSLR; the rule: :mod:`ultrafs.features.scaling`): declared once,
checked once.

This module imports nothing heavy (``ultrafs select --help`` reads it).
"""

from __future__ import annotations

from ultrafs.methods.params import SpelledParameterError, param

__all__ = ["poly_param", "gamma_param", "coef0_param", "check_degree_two",
           "standardize_param", "STANDARDIZE_DEFAULT"]

#: off: scaling changes the model, so it is asked for (issue 38 chooses the
#: default by measurement)
STANDARDIZE_DEFAULT = False


def poly_param():
    """``poly``: 1 (the columns) or 2 (every degree-2 feature, generated)."""
    return param(1, "2: select among all degree-2 polynomial features (linear, "
                 "squares, crosses) generated on the fly.", kind="int", low=1,
                 cli_type="poly")


def gamma_param():
    """``gamma``: γ of the degree-2 kernel."""
    return param(1.0, "γ of the degree-2 kernel (γ x'z + r)^2.", low=0, low_open=True)


def coef0_param():
    """``coef0``: r of the degree-2 kernel."""
    return param(1.0, "r of the degree-2 kernel.", low=0)


def check_degree_two(params):
    """Refuse ``gamma`` or ``coef0`` set without ``poly=2`` (one line)."""
    for name in ("gamma", "coef0"):
        if params.poly != 2 and getattr(params, name) != 1.0:
            raise SpelledParameterError("{%s} is a parameter of the degree-2 kernel: it "
                                        "applies to {poly} 2" % name)


def standardize_param():
    """``standardize``: divide every column by its root mean square."""
    return param(STANDARDIZE_DEFAULT, "Divide every column by its root mean square over "
                 "the rows before fitting (one pass; no centring, so sparse data stays "
                 "sparse; degree-2 features are products of scaled columns). The "
                 "model's weights are on the original scale: it predicts on raw data.",
                 kind="bool", option="--standardize/--no-standardize")
