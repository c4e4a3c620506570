"""The "add a method" recipe: a whole selection method in one file.

Correlation screening (sure independence screening, Fan & Lv 2008, on the
column scores FGM's passes compute): one streamed pass keeps the
``n_features_to_select`` columns with the largest ``(Σ_i y_i x_ij)²``, then an
ℓ2-regularised logistic regression is fitted on them.  Registering it is
all it takes: ``ultrafs select --method corr`` (and its ``--help``), the
scikit-learn estimator ``ultrafs.sklearn.CorrelationScreeningClassifier``,
model files, ``evaluate``, ``predict`` and the report find it through the
registry (``tests/test_recipes.py`` checks each face).
"""

from __future__ import annotations

from dataclasses import dataclass

from ultrafs.methods.params import Params, param
from ultrafs.methods.registry import Method


@dataclass
class CorrelationParams(Params):
    """The parameters of correlation screening."""

    n_features_to_select: int = param(10, "Columns kept: those with the largest "
                                      "squared correlation with the ±1 labels.",
                                      kind="int", low=1)
    C: float = param(1.0, "C of the ℓ2-regularised logistic regression on them.",
                     low=0, low_open=True, option="--C")
    fit_intercept: bool = param(True, "Learn a bias.", kind="bool",
                                option="--fit-intercept/--no-intercept")


def fit(store, targets, params, execution):
    """One pass for the scores, one refit on the kept columns."""
    from ultrafs.features import make_feature_space
    from ultrafs.methods.refit import refit_block
    from ultrafs.scoring.worst_case import worst_case_analysis

    features = make_feature_space(store)
    candidates, _ = worst_case_analysis(features, targets.y.astype(float),
                                        params.n_features_to_select,
                                        **execution.passes())
    keys = candidates.keys
    refitted = refit_block(features.materialize(keys), targets.y, loss="logistic",
                           C=params.C, fit_intercept=params.fit_intercept)
    if execution.callback is not None:
        execution.callback({"iteration": 1, "n_features": len(keys),
                            "kkt": refitted["kkt"]})
    return features, keys, refitted


def to_model(result, store, targets, params, execution):
    """A linear model on the kept columns (the refit predicts)."""
    import numpy as np

    from ultrafs.model import Model

    features, keys, refitted = result
    ids = features.feature_ids(keys)
    return Model(features=ids, coef=np.asarray(refitted["coef"], dtype=np.float64),
                 intercept=float(refitted["intercept"]), batches=[0, len(ids)],
                 loss="logistic", classes=targets.classes, target=targets.kind,
                 feature_space=features.spec(),
                 params={"method": "corr", **params.to_dict(),
                         "command": execution.command},
                 history=[{"iteration": 1, "n_features": len(ids),
                           "kkt": float(refitted["kkt"])}],
                 stop_reason=f"kept the {len(ids)} columns of largest (y'x_j)^2")


def summary_lines(model, store):
    return [("features selected", f"{len(model.features):,} of {store.n_features:,} "
             "columns, by their correlation with the labels")]


#: in ultrafs/methods/ this would be ``register(Method(...))``: the test
#: registers it for its own duration (tests/test_recipes.py)
CORRELATION = Method(
    name="corr", display_name="correlation screening",
    description="correlation screening",
    summary="corr: correlation screening, the columns of largest (y'x_j)^2, then "
            "l2-LR on them.",
    params=CorrelationParams, fit=fit, to_model=to_model,
    objective="max over |S| = k of sum_{j in S} (y'x_j)^2, then l2-LR on S",
    estimator="CorrelationScreeningClassifier", summary_lines=summary_lines,
    probabilistic=True, figures=("features", "accuracy"), order=90)
