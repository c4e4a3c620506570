"""The ``class_weight`` parameter, written once for every method that takes weights.

A method whose ``Method.weights`` is True declares
``class_weight: Any = class_weight_param()`` in its ``Params``: the CLI's
``--class-weight``, the estimator's ``class_weight`` and the model file's
``params`` then come from it, and :func:`ultrafs.api.fit` turns it into
per-sample weights (:func:`ultrafs.methods.targets.sample_weights`).
Light on purpose (imported by the method modules, so by ``--help``).
"""

from __future__ import annotations

from ultrafs.methods.params import param

__all__ = ["class_weight_param"]


def class_weight_param(extra: str = ""):
    """The ``class_weight`` field: None, ``"balanced"`` or ``{class: weight}``.

    Parameters
    ----------
    extra : str
        A sentence the method adds to the help (what else the weights
        change, e.g. a held-out score).
    """
    text = ("Weight the loss of each class: 'balanced' (n / (K x the class's count), "
            "for imbalanced data) or a mapping class value -> weight (CLI: "
            "VALUE:WEIGHT,...; others keep 1); multiplies any sample_weight.")
    return param(None, f"{text} {extra}".strip(), kind="any", none=True,
                 cli_type="class_weight")
