"""The recipes of docs/ARCHITECTURE.md, run.

* "Add a loss": a smoothed hinge loss whose kernels and class live in this
  module only is registered with ``register_loss``, and then reaches every
  face without an edit anywhere else: the CLI's ``--loss`` choices,
  ``ultrafs select/predict/evaluate``, ``FGMClassifier``, the model file
  (``probabilistic`` read from the registry), the datafit and solver
  contract suites, and every registered solver that fits its problems
  (the registry contract: APG, proximal Newton, FISTA and its scalings,
  CGD, SGD-C, two-stage; the l1 path's logistic kernel and SimpleMKL's
  squared hinge refuse it).
* "Add a feature space": a space registered with
  ``register_feature_space`` passes the feature-space contract and is
  rebuilt from a model file's ``feature_space`` spec for prediction.
* The layers: no package imports a layer above it (the table of
  docs/ARCHITECTURE.md).

Every registration is undone after each test (the registries are
snapshotted and restored), so other test modules see the built-in members
only.
"""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from numba import njit
from scipy.optimize import check_grad, minimize_scalar

from ultrafs import FGMClassifier, InMemoryStore
from ultrafs.cli import main
from ultrafs.errors import InputFormatError, ParameterError
from ultrafs.features import (FEATURE_SPACES, LinearFeatures, build_feature_space,
                              feature_space_from_spec, register_feature_space)
from ultrafs.methods.fgm import fit_fgm
from ultrafs.model import Model
from ultrafs.solvers.apg import solve
from ultrafs.solvers.losses import (Loss, get_loss, loss_names, register_loss,
                                    registered_losses, unregister_loss)
from ultrafs.solvers.registry import SOLVERS
from ultrafs.store.base import ColumnBlock
from ultrafs.store.writers.zarr_writer import write_store

try:
    from feature_space_contract import FeatureSpaceContract
    from solver_contracts import (DatafitContract, RegistryContract, SolverContract,
                                  fgm_problem, l1_problem)
except ImportError:  # pragma: no cover - run from the repository root
    from tests.feature_space_contract import FeatureSpaceContract
    from tests.solver_contracts import (DatafitContract, RegistryContract, SolverContract,
                                        fgm_problem, l1_problem)

ROOT = Path(__file__).resolve().parents[1]
LOSS = "smooth-hinge"
SPACE = "scaled-columns-test"


# ------------------------------------------------------------ a new loss
# Kernels as kernels/losses.py writes them: raw arrays in, no ultrafs import.
# (cache=False: numba's cache is for the package's kernels, not tests.)
@njit(nogil=True)
def _smooth_hinge_point(z):
    """``(l(z), dl/dz)`` at the margin ``z = y f``.

    ``l(z) = 1/2 - z`` for ``z <= 0``, ``(1 - z)^2 / 2`` for ``0 < z < 1``,
    0 for ``z >= 1``.
    """
    if z <= 0.0:
        return 0.5 - z, -1.0
    if z < 1.0:
        m = 1.0 - z
        return 0.5 * m * m, -m
    return 0.0, 0.0


@njit(nogil=True)
def smooth_hinge_value(y, f):
    """``sum_i l(y_i f_i)``."""
    total = 0.0
    for i in range(len(y)):
        total += _smooth_hinge_point(y[i] * f[i])[0]
    return total


@njit(nogil=True)
def smooth_hinge_value_derivative(y, f, out):
    """Write ``dl/df`` into ``out``; return ``sum_i l``."""
    total = 0.0
    for i in range(len(y)):
        value, slope = _smooth_hinge_point(y[i] * f[i])
        total += value
        out[i] = y[i] * slope
    return total


@njit(nogil=True)
def smooth_hinge_derivative(y, f, out):
    """Write ``dl/df = y l'(y f)`` into ``out``; return it."""
    for i in range(len(y)):
        out[i] = y[i] * _smooth_hinge_point(y[i] * f[i])[1]
    return out


@njit(nogil=True)
def smooth_hinge_dual(y, f, out):
    """Write ``alpha / C = -l'(y f) = min(1, max(0, 1 - y f))``; return it."""
    for i in range(len(y)):
        out[i] = -_smooth_hinge_point(y[i] * f[i])[1]
    return out


@njit(nogil=True)
def smooth_hinge_second_derivative(y, f, out):
    """Write the generalised ``d2l/df2`` (1 where ``0 <= y f < 1``, else 0)
    into ``out``; return it (1 at the kink ``y f = 0``: a Newton model from
    the zero decision is then not flat)."""
    for i in range(len(y)):
        z = y[i] * f[i]
        out[i] = 1.0 if 0.0 <= z < 1.0 else 0.0
    return out


@njit(nogil=True)
def smooth_hinge_value_change(y, f, delta):
    """``sum_i l(y_i (f_i + delta_i)) - l(y_i f_i)``."""
    total = 0.0
    for i in range(len(y)):
        total += (_smooth_hinge_point(y[i] * (f[i] + delta[i]))[0]
                  - _smooth_hinge_point(y[i] * f[i])[0])
    return total


@njit(nogil=True)
def smooth_hinge_curvature_sum(y, f, d):
    """Number of samples with ``0 < y f < 1`` (where ``l'' = 1``)."""
    count = 0.0
    for i in range(len(y)):
        z = y[i] * f[i]
        if 0.0 < z < 1.0:
            count += 1.0
    return count


class SmoothHinge(Loss):
    """Smoothed hinge (quadratic near the hinge); no probabilities."""

    name = LOSS
    target = "binary"
    probabilistic = False
    curvature_bound = 1.0
    _value_kernel = staticmethod(smooth_hinge_value)
    _value_derivative_kernel = staticmethod(smooth_hinge_value_derivative)
    _derivative_kernel = staticmethod(smooth_hinge_derivative)
    _dual_kernel = staticmethod(smooth_hinge_dual)
    _curvature_kernel = staticmethod(smooth_hinge_curvature_sum)
    # second order (proximal Newton, CGD, mfista's Hessian scaling, the
    # exact bias of the l1 solvers)
    _second_derivative_kernel = staticmethod(smooth_hinge_second_derivative)
    _value_change_kernel = staticmethod(smooth_hinge_value_change)

    def dual_value(self, y, f, theta, C, weights=None):
        """The Fenchel dual value at ``theta`` times the dual point of ``f``
        (the l1 solvers' duality gap): ``C sum_i s_i (a_i - a_i^2 / 2)``,
        ``a_i = theta min(1, max(0, 1 - y_i f_i))`` (``l*(-a) = a^2/2 - a``
        on [0, 1]: the hinge's conjugate plus the smoothing's)."""
        a = theta * np.clip(1.0 - y * f, 0.0, 1.0)
        terms = a - 0.5 * a * a
        if weights is not None:
            terms = terms * weights
        return float(C * np.sum(terms))

    def optimal_constant(self, y, n_outputs=1):
        """``1 - n_-/n_+`` when ``n_+ >= n_-``, else ``n_+/n_- - 1`` (exact)."""
        n_pos = int(np.count_nonzero(np.asarray(y) > 0))
        n_neg = len(y) - n_pos
        if n_pos >= n_neg:
            return 0.0 if n_pos == 0 else 1.0 - n_neg / n_pos
        return n_pos / n_neg - 1.0


def _reference_value(y, f):
    z = y * f
    return float(np.sum(np.where(z <= 0, 0.5 - z,
                                 np.where(z < 1, 0.5 * (1 - z) ** 2, 0.0))))


# ----------------------------------------------------- a new feature space
@register_feature_space
class ScaledColumns(LinearFeatures):
    """The store's columns times a constant ``scale`` (a toy new kind).

    Scores and materialised columns both carry the factor, as the
    feature-space contract requires.
    """

    kind = SPACE
    poly_degree = None
    spec_params = ("scale",)

    def __init__(self, store, scale=1.0):
        super().__init__(store)
        scale = float(scale)
        if not (math.isfinite(scale) and scale > 0):
            raise ParameterError(f"scale must be finite and > 0, got {scale!r}")
        self.scale = scale

    def find_candidates(self, weights, k, excluded, run):
        return super().find_candidates(weights * self.scale, k, excluded, run)

    def materialize(self, keys, dtype=np.float64, payload=None):
        block = super().materialize(keys, dtype, payload)
        return ColumnBlock(-1, block.indptr, block.indices,
                           (block.data * self.scale).astype(dtype, copy=False))


# the decorator above registered it at import; the fixture below owns it
FEATURE_SPACES.pop(SPACE)


# --------------------------------------------------------------- fixtures
@pytest.fixture(autouse=True)
def registered():
    """Register the new loss and feature space; restore every registry after."""
    saved = {(target, name): get_loss(name, target) for target, name in registered_losses()}
    saved_spaces = dict(FEATURE_SPACES)
    register_loss(SmoothHinge)
    register_feature_space(ScaledColumns)
    try:
        yield
    finally:
        for target, name in registered_losses():
            if (target, name) not in saved:
                unregister_loss(name, target)
        present = set(registered_losses())
        for (target, name), loss in saved.items():
            if (target, name) not in present or get_loss(name, target) is not loss:
                register_loss(loss)
        FEATURE_SPACES.clear()
        FEATURE_SPACES.update(saved_spaces)
    

@pytest.fixture(scope="module")
def planted():
    """A small planted problem: 400 + 400 rows, 60 columns, 6 relevant."""
    rng = np.random.default_rng(3)
    n, m = 800, 60
    relevant = np.array([2, 11, 23, 35, 47, 58])
    w = np.zeros(m)
    w[relevant] = [1.5, -1.2, 1.0, -0.9, 1.3, 0.8]
    X = rng.standard_normal((n, m))
    y = np.where(X @ w + 0.1 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X[:400], y[:400], X[400:], y[400:], relevant


# ------------------------------------------------------------ the loss
def test_registry_and_kernels(rng):
    assert LOSS in loss_names()
    loss = get_loss(LOSS)
    assert isinstance(loss, SmoothHinge)
    y = np.where(rng.random(300) < 0.5, -1.0, 1.0)
    f = rng.normal(scale=2.0, size=300)
    assert loss.value(y, f) == pytest.approx(_reference_value(y, f), rel=1e-13)
    assert check_grad(lambda v: loss.value(y, v), lambda v: loss.derivative(y, v),
                      f) < 1e-5 * max(1.0, np.linalg.norm(loss.derivative(y, f)))
    np.testing.assert_array_equal(loss.derivative(y, f), -y * loss.dual(y, f))
    out = np.empty(300)
    assert loss.value_derivative(y, f, out) == pytest.approx(loss.value(y, f))
    np.testing.assert_array_equal(out, loss.derivative(y, f))
    for n_pos, n_neg in [(30, 70), (50, 50), (91, 9), (0, 5)]:
        labels = np.r_[np.ones(n_pos), -np.ones(n_neg)]
        best = minimize_scalar(lambda c: loss.value(labels, np.full(len(labels), c)),
                               bounds=(-1.0, 1.0), method="bounded",
                               options={"xatol": 1e-10})
        assert loss.optimal_constant(labels) == pytest.approx(best.x, abs=1e-6)
    with pytest.raises(ParameterError, match="has no multiclass version"):
        get_loss(LOSS, "multiclass")


class TestSmoothHingeDatafit(DatafitContract):
    """The datafit contract (tests/solver_contracts.py) on the new loss."""

    loss_name, n_classes = LOSS, 2


class TestAPGOnSmoothHinge(SolverContract):
    """The solver contract with the new loss as its only case."""

    cases = [(LOSS, 2)]

    def solve(self, datafit, block_ptr, **kwargs):
        return solve(datafit, block_ptr, **kwargs)


@pytest.fixture(params=list(SOLVERS))
def solver_name(request):
    return request.param


class TestEverySolverOnSmoothHinge(RegistryContract):
    """The registry contract on every registered solver that fits the new
    loss's problems (FGM's subproblem, the l1 problem with and without
    intercept); the others refuse them in one line."""

    binary_losses = (LOSS,)


def test_the_new_loss_reaches_every_solver_it_fits(rng):
    problems = [fgm_problem(rng, LOSS), l1_problem(rng, LOSS),
                l1_problem(rng, LOSS, fit_intercept=True)]
    fitting = {name for name, entry in SOLVERS.items()
               if any(entry.fits(pb) for pb in problems)}
    assert fitting == {"apg", "newton", "fista", "mfista", "mfista-hessian", "cgd", "sgd",
                       "two-stage"}
    # kernels specialised to one loss refuse it, naming why
    assert "logistic" in SOLVERS["l1-path"].refusal(problems[2])
    assert "squared-hinge" in SOLVERS["mkl"].refusal(problems[0])


def test_cli_select_predict_evaluate(tmp_path, planted):
    X_train, y_train, X_test, y_test, relevant = planted
    train, test = tmp_path / "train.zarr", tmp_path / "test.zarr"
    write_store(train, X_train, y_train, id_offset=1)
    write_store(test, X_test, y_test, id_offset=1)
    loss_option = next(p for p in main.commands["select"].params if p.name == "loss")
    assert LOSS in loss_option.type.choices

    runner = CliRunner()

    def run(*args):
        result = runner.invoke(main, [str(a) for a in args], prog_name="ultrafs")
        assert result.exit_code == 0, result.output
        return result.output

    assert LOSS in run("select", "--help")
    model_path = tmp_path / "model.json"
    run("select", "--data", train, "--loss", LOSS, "--B", 3, "--max-iter", 3,
        "--scheduler", "synchronous", "--no-progress", "--out", model_path)
    saved = json.loads(model_path.read_text())
    assert saved["loss"] == LOSS and saved["params"]["loss"] == LOSS
    assert set(relevant + 1) <= set(saved["features"])          # 1-based ids

    metrics = json.loads(run("evaluate", "--model", model_path, "--data", test))
    assert metrics["accuracy"] > 0.9 and "log_loss" not in metrics
    predictions = json.loads(run("predict", "--model", model_path, "--data", test,
                                 "--format", "json"))
    assert set(predictions) == {"row", "predicted", "decision"}   # no probability
    assert np.mean(np.asarray(predictions["predicted"]) == y_test) == metrics["accuracy"]

    bad = runner.invoke(main, ["select", "--data", str(train), "--loss", "nope"])
    assert bad.exit_code == 2 and LOSS in bad.output            # listed as a choice


def test_estimator_and_model_file(tmp_path, planted, monkeypatch):
    X_train, y_train, X_test, y_test, relevant = planted
    train, test = InMemoryStore(X_train, y_train), InMemoryStore(X_test, y_test)
    clf = FGMClassifier(loss=LOSS, B=3, max_iter=3, scheduler="synchronous")
    clf.fit(train)
    assert set(relevant) <= set(clf.selected_features_.tolist())
    accuracy = clf.score(test, y_test)
    assert accuracy > 0.9
    assert not hasattr(clf, "predict_proba")       # probabilistic: from the registry
    assert clf.model_.loss == LOSS and clf.model_.probabilistic is False

    path = tmp_path / "model.json"
    clf.model_.save(path)
    model = Model.load(path)
    assert model.loss == LOSS and model.features == clf.model_.features
    np.testing.assert_array_equal(model.coef, clf.selected_coef_)
    decision = model.decision_function_store(test)
    np.testing.assert_allclose(decision, clf.decision_function(X_test), rtol=1e-12)
    assert model.evaluate_store(test)["accuracy"] == accuracy
    with pytest.raises(InputFormatError, match="probabilistic loss"):
        model.proba_from_decision(decision)

    # a model file whose loss this process does not know still predicts
    unregister_loss(LOSS)
    unknown = Model.load(path)
    assert unknown.probabilistic is False
    np.testing.assert_array_equal(unknown.decision_function_store(test), decision)


def test_binary_only_loss_refuses_k_classes(rng):
    X = rng.standard_normal((60, 5))
    y = np.arange(60) % 3
    with pytest.raises(ParameterError, match="has no multiclass version"):
        FGMClassifier(loss=LOSS, B=2, max_iter=1).fit(X, y)


# ----------------------------------------------------- the feature space
class TestScaledColumnsContract(FeatureSpaceContract):
    """The feature-space contract (tests/feature_space_contract.py)."""

    def make_space(self, X, y, *, dtype, tmp_path):
        return ScaledColumns(InMemoryStore(X, y, dtype=dtype, id_offset=1), scale=2.5)

    def expand(self, X, space):
        m = X.shape[1]
        return X * 2.5, np.arange(m, dtype=np.int64), [j + 1 for j in range(m)]

    def absent_ids(self, space):
        return [space.store.n_features + 1, 0]


def test_feature_space_from_a_model_spec(tmp_path, planted):
    X_train, y_train, X_test, y_test, relevant = planted
    store = InMemoryStore(X_train, y_train)
    space = build_feature_space(store, SPACE, scale=4.0)
    result = fit_fgm(space, store.read_labels(), B=3, max_iter=3, C=10.0,
                     scheduler="synchronous")
    assert set(relevant) <= set(result.keys.tolist())
    model = Model(features=space.feature_ids(result.keys), coef=result.coef,
                  intercept=-result.bias, batches=result.batch_ptr.tolist(),
                  loss="logistic", classes=[-1.0, 1.0], feature_space=space.spec())
    path = tmp_path / "model.json"
    model.save(path)
    loaded = Model.load(path)
    assert loaded.feature_space == {"kind": SPACE, "scale": 4.0}
    test_store = InMemoryStore(X_test, y_test)
    rebuilt = feature_space_from_spec(test_store, loaded.feature_space)
    assert type(rebuilt) is ScaledColumns and rebuilt.scale == 4.0
    expected = 4.0 * X_test[:, result.keys] @ result.coef - result.bias
    np.testing.assert_allclose(loaded.decision_function_store(test_store), expected,
                               rtol=1e-10, atol=1e-12)


# ------------------------------------------------------- add a method
@pytest.fixture
def corr_method():
    """The method of tests/recipe_method.py, registered for one test."""
    from recipe_method import CORRELATION

    from ultrafs.methods import registry

    registry.register(CORRELATION)
    yield CORRELATION
    registry.unregister(CORRELATION.name)


def test_add_a_method_reaches_every_face(tmp_path, planted, corr_method):
    """A method defined in one new file (tests/recipe_method.py) is offered by
    ``select --method`` and its ``--help``, runs from the CLI, writes a model
    file that ``evaluate``, ``predict`` and ``report`` read, and is a
    scikit-learn estimator: no other file names it."""
    import pickle

    from sklearn.base import clone

    import ultrafs.sklearn
    from ultrafs.report import build_report

    X_train, y_train, X_test, y_test, relevant = planted
    train, test = tmp_path / "train.zarr", tmp_path / "test.zarr"
    write_store(train, X_train, y_train)
    write_store(test, X_test, y_test)
    runner = CliRunner()

    def run(*args, code=0):
        result = runner.invoke(main, [str(a) for a in args], prog_name="ultrafs")
        assert result.exit_code == code, result.output
        return result.output

    # the help wraps at the terminal's width: compare with whitespace folded
    assert "corr: correlation screening" in " ".join(run("select", "--help").split())
    own = run("select", "--method", "corr", "--help")
    assert "--n-features-to-select" in own and "--B " not in own   # only its options
    refused = run("select", "--data", train, "--method", "corr", "--B", 3, code=2)
    assert "--B applies to --method fgm" in refused
    model_path = tmp_path / "corr.json"
    run("select", "--data", train, "--method", "corr", "--n-features-to-select",
        len(relevant), "--no-progress", "--out", model_path)
    saved = Model.load(model_path)
    assert saved.params["method"] == "corr"
    assert sorted(saved.features) == sorted(relevant.tolist())
    metrics = json.loads(run("evaluate", "--model", model_path, "--data", test))
    assert metrics["accuracy"] > 0.9
    predictions = json.loads(run("predict", "--model", model_path, "--data", test,
                                 "--format", "json"))
    assert np.mean(np.asarray(predictions["predicted"]) == y_test) == metrics["accuracy"]

    report = build_report(saved, tmp_path / "report.html", test_store=str(test))
    assert set(report["figures"]) == {"features", "accuracy"}   # the method's figures
    assert "correlation screening" in (tmp_path / "report.html").read_text()

    Estimator = ultrafs.sklearn.CorrelationScreeningClassifier
    clf = Estimator(n_features_to_select=len(relevant))
    assert clone(clf).get_params()["n_features_to_select"] == len(relevant)
    clf.fit(X_train, y_train)
    assert sorted(clf.selected_features_.tolist()) == sorted(relevant.tolist())
    np.testing.assert_allclose(clf.decision_function(X_test),
                               saved.decision_function_store(InMemoryStore(
                                   X_test, y_test)), rtol=1e-10, atol=1e-12)
    assert clf.predict_proba(X_test).shape == (len(y_test), 2)
    assert type(pickle.loads(pickle.dumps(clf))) is Estimator
    # nothing but tests/recipe_method.py names the method
    for path in sorted((ROOT / "ultrafs").rglob("*.py")):
        text = path.read_text()
        assert "recipe_method" not in text and "CorrelationScreening" not in text, path


# --------------------------------------------------------------- layers
#: what each lower layer may import (docs/ARCHITECTURE.md, "Layers");
#: the faces (api, cli, estimator, model, report) may import any of them
ALLOWED = {
    "errors": set(),
    "atomic": set(),
    "signals": set(),
    "outputs": {"errors"},
    "locks": {"errors"},
    "json_fields": set(),
    "rss": set(),
    "allocator": set(),
    "names": set(),
    "progress": set(),
    "store": {"errors", "atomic", "kernels", "ultrafs", "progress"},
    "scoring": {"errors", "kernels", "store", "progress"},
    "solvers": {"errors", "kernels", "progress"},
    "features": {"errors", "kernels", "store", "scoring", "solvers", "progress"},
    "model": {"ultrafs", "errors", "atomic", "json_fields", "kernels", "store",
              "features", "solvers", "model_checks", "model_fingerprint"},
    "model_checks": {"ultrafs", "errors", "json_fields", "store", "solvers", "features",
                     "model_fingerprint"},
    "model_fingerprint": set(),
    "methods": {"errors", "atomic", "json_fields", "rss", "kernels", "store",
                "scoring", "features", "solvers", "model", "model_fingerprint",
                "progress"},
    "datasets": {"errors", "kernels", "store"},
}
FACES = {"api", "cli", "report", "report_curves", "report_path", "sklearn"}
#: the report's own modules (its data, figures and page)
FACES |= {"report_data", "report_figures", "report_html", "report_files"}


def _imported_units(path):
    """First component after ``ultrafs.`` of every import in a file."""
    units = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "ultrafs":
                units.add(parts[1] if len(parts) > 1 else "ultrafs")
    return units


def test_layers_point_one_way():
    package = ROOT / "ultrafs"
    seen = set()
    for path in sorted(package.rglob("*.py")):
        unit = path.relative_to(package).parts[0].removesuffix(".py")
        if unit in ("__init__", "kernels"):
            continue
        seen.add(unit)
        imported = _imported_units(path) - {unit}
        if unit in FACES:
            continue
        assert unit in ALLOWED, f"{unit}: a new layer; add it to docs/ARCHITECTURE.md"
        extra = imported - ALLOWED[unit]
        assert not extra, f"{path.relative_to(ROOT)} imports {sorted(extra)}"
    assert seen == set(ALLOWED) | FACES
    for path in sorted((ROOT / "kernels").glob("*.py")):
        assert not _imported_units(path), f"{path.name} imports ultrafs"
