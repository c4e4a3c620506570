"""The registry contract (tests/solver_contracts.py) on every registered solver."""

import pytest

from ultrafs.solvers.registry import SOLVERS

try:
    from solver_contracts import RegistryContract
except ImportError:  # pragma: no cover - run from the repository root
    from tests.solver_contracts import RegistryContract


@pytest.fixture(params=list(SOLVERS))
def solver_name(request):
    return request.param


class TestEveryRegisteredSolver(RegistryContract):
    binary_losses = ("logistic", "squared-hinge")


def test_the_registry_holds_every_solver():
    assert set(SOLVERS) == {"apg", "newton", "mkl", "fista", "mfista", "mfista-hessian",
                            "cgd", "sgd", "two-stage", "l1-path", "smoothing-cd", "irls"}
