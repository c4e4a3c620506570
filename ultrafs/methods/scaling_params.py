"""The ``standardize`` parameter, shared by the methods that offer it (FGM,
ℓ1-LR, MSLR): declared once (the rule: :mod:`ultrafs.features.scaling`).

This module imports nothing heavy (``ultrafs select --help`` reads it).
"""

from __future__ import annotations

from ultrafs.methods.params import param

__all__ = ["standardize_param", "STANDARDIZE_DEFAULT"]

#: off: scaling changes the model, so it is asked for (issue 38 chooses the
#: default by measurement)
STANDARDIZE_DEFAULT = False


def standardize_param():
    """``standardize``: divide every column by its root mean square."""
    return param(STANDARDIZE_DEFAULT, "Divide every column by its root mean square over "
                 "the rows before fitting (one pass; no centring, so sparse data stays "
                 "sparse; degree-2 features are products of scaled columns). The "
                 "model's weights are on the original scale: it predicts on raw data.",
                 kind="bool", option="--standardize/--no-standardize")
