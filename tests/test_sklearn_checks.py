"""Every estimator of :mod:`ultrafs.sklearn` passes scikit-learn's checks.

One instance per registered method, with small but legitimate parameters
so that the many fits of the checks stay quick on their tiny data (the
defaults are not changed for it).  A check that cannot hold for a method
is listed in ``expected_failed_checks`` with its one-line reason; a check
that failed because of a bug was fixed, not listed.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from ultrafs.methods.registry import methods
from ultrafs.sklearn import (
    FGMClassifier,
    GSRFSSelector,
    L1LogisticRegression,
    MSLRClassifier,
    SparseKernelLogisticRegression,
    estimator_class,
)

ESTIMATORS = [
    FGMClassifier(B=2, max_iter=3, scheduler="synchronous"),
    L1LogisticRegression(scheduler="synchronous"),
    MSLRClassifier(B=2, max_iter=2, scheduler="synchronous"),
    # σ given: the default median heuristic measures the rows as they are
    # (weights aside), so only a given σ makes integer weights equal repeated
    # rows, which check_sample_weight_equivalence asks; 10 suits the scale of
    # the checks' blobs (check_class_weight_classifiers)
    SparseKernelLogisticRegression(n_components=20, sigma=10.0),
    GSRFSSelector(2, max_iter=20, scheduler="synchronous"),
]

#: {estimator class name: {check name: why it cannot hold}}
EXPECTED_FAILURES = {}


def expected_failed_checks(estimator):
    return EXPECTED_FAILURES.get(type(estimator).__name__, {})


def test_every_registered_method_is_checked():
    """A method added to the registry gets its estimator checked here."""
    checked = {type(e) for e in ESTIMATORS}
    built_in = [m for m in methods()
                if m.estimator and m.fit.__module__.startswith("ultrafs.")]
    assert {estimator_class(m) for m in built_in} <= checked


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)
