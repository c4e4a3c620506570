"""Every registered datafit, penalty and solver runs its contract suite."""

import pytest

from ultrafs.solvers.apg import SOLVERS, solve
from ultrafs.solvers.losses import registered_losses
from ultrafs.solvers.penalties import PENALTIES

try:
    from solver_contracts import DatafitContract, PenaltyContract, SolverContract
except ImportError:  # pragma: no cover - run from the repository root
    from tests.solver_contracts import DatafitContract, PenaltyContract, SolverContract


def test_every_registered_member_has_a_contract_class():
    covered_losses = {(c.loss_name, c.n_classes > 2) for c in DATAFIT_CLASSES}
    assert covered_losses == {(name, target == "multiclass") for target, name in registered_losses()}
    assert {c.penalty_name for c in PENALTY_CLASSES} == set(PENALTIES)
    assert {c.solver_name for c in SOLVER_CLASSES} == set(SOLVERS)


class TestBinaryLogistic(DatafitContract):
    loss_name, n_classes = "logistic", 2


class TestBinarySquaredHinge(DatafitContract):
    loss_name, n_classes = "squared-hinge", 2


class TestMultinomialLogistic(DatafitContract):
    loss_name, n_classes = "logistic", 4


class TestOneVsRestSquaredHinge(DatafitContract):
    loss_name, n_classes = "squared-hinge", 3


DATAFIT_CLASSES = [TestBinaryLogistic, TestBinarySquaredHinge, TestMultinomialLogistic,
                   TestOneVsRestSquaredHinge]


class TestL21Squared(PenaltyContract):
    penalty_name = "l21-squared"

    def make(self):
        return PENALTIES["l21-squared"]()


class TestL1(PenaltyContract):
    penalty_name = "l1"

    def make(self):
        return PENALTIES["l1"](alpha=0.8)


class TestGroupL1(PenaltyContract):
    penalty_name = "group-l1"

    def make(self):
        return PENALTIES["group-l1"](alpha=0.8)


PENALTY_CLASSES = [TestL21Squared, TestL1, TestGroupL1]


class TestAPG(SolverContract):
    solver_name = "apg"

    def solve(self, datafit, block_ptr, **kwargs):
        return solve(datafit, block_ptr, solver="apg", **kwargs)


class TestProxNewton(SolverContract):
    solver_name = "newton"
    cases = [("logistic", 2), ("squared-hinge", 2)]  # binary datafits only

    def solve(self, datafit, block_ptr, **kwargs):
        return solve(datafit, block_ptr, solver="newton", **kwargs)


class TestSimpleMKL(SolverContract):
    """SimpleMKL (MKL-FGM) solves the binary squared-hinge problem only."""

    solver_name = "mkl"
    cases = [("squared-hinge", 2)]  # the MKL dual of eq. 28: squared hinge, K = 2

    def solve(self, datafit, block_ptr, **kwargs):
        return solve(datafit, block_ptr, solver="mkl", **kwargs)

    def test_missing_capabilities_are_named(self, rng):
        """A penalty without a capability SimpleMKL calls is named in one line.

        (The generic test removes ``prox``, which SimpleMKL never calls: its
        penalty capability is ``subdiff_distance``, for the KKT residual.)
        """
        from ultrafs.errors import ParameterError
        from ultrafs.solvers.penalties import L21Squared

        class NoSubdiff(L21Squared):
            subdiff_distance = None

        datafit, block_ptr = self.problem(rng, "squared-hinge", 2)
        with pytest.raises(ParameterError, match="subdiff_distance"):
            self.solve(datafit, block_ptr, penalty=NoSubdiff())

    def test_refuses_what_it_does_not_solve(self, rng):
        from ultrafs.errors import ParameterError
        from ultrafs.solvers.penalties import L1

        for loss, n_classes, match in [("logistic", 2, "squared-hinge loss only"),
                                       ("squared-hinge", 3, "binary problems only")]:
            datafit, block_ptr = self.problem(rng, loss, n_classes)
            with pytest.raises(ParameterError, match=match):
                self.solve(datafit, block_ptr)
        datafit, block_ptr = self.problem(rng, "squared-hinge", 2)
        with pytest.raises(ParameterError, match="l2,1-squared penalty only"):
            self.solve(datafit, block_ptr, penalty=L1(alpha=0.5))


SOLVER_CLASSES = [TestAPG, TestProxNewton, TestSimpleMKL]
