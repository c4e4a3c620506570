"""The method registry and what the faces build from it: one parameter
object per method (defaults, domains, old names), one estimator base, the
generated options of ``select``."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.base import clone

from ultrafs.api import fit
from ultrafs.cli import main
from ultrafs.errors import ParameterError
from ultrafs.methods.params import REQUIRED, specs_of
from ultrafs.methods.registry import get_method, methods

BUILT_IN = [m.name for m in methods() if m.fit.__module__.startswith("ultrafs.")]


def test_the_built_in_methods_are_registered():
    assert BUILT_IN[0] == "fgm"
    assert {"fgm", "l1", "mslr", "sklr", "gsrfs"} <= set(BUILT_IN)
    with pytest.raises(ParameterError, match="unknown method 'nope'; the methods are: fgm"):
        get_method("nope")


@pytest.mark.parametrize("name", BUILT_IN)
def test_defaults_are_in_their_domains(name):
    from ultrafs.methods.params import check_value

    for field, (default, spec) in specs_of(get_method(name).params).items():
        if default is not REQUIRED:
            assert check_value(field, default, spec) == default, field


@pytest.mark.parametrize("name", BUILT_IN)
def test_old_names_are_refused_with_the_new_one(name):
    method = get_method(name)
    fields = specs_of(method.params)
    for new, (_, spec) in fields.items():
        for old in spec.old:
            python_name = old.lstrip("-").replace("-", "_")
            if python_name in fields:        # only the CLI spelling changed
                continue
            with pytest.raises(ParameterError, match=f"renamed: use {new}"):
                method.make_params(**{python_name: 1})


def test_a_value_outside_its_domain_is_one_line():
    fgm = get_method("fgm")
    with pytest.raises(ParameterError, match=r"^B must be an integer >= 1, got 0$"):
        fgm.make_params(B=0)
    with pytest.raises(ParameterError, match=r"C must be a number > 0 or 'scale' or "
                                             r"'auto', got 'big'"):
        fgm.make_params(C="big")
    with pytest.raises(ParameterError, match="has no parameter 'Bee'"):
        fgm.make_params(Bee=3)


def test_fgm_defaults_are_the_engine_defaults():
    """FGM's Params and fit_fgm / the solver agree on every shared default."""
    from ultrafs.methods.fgm import fit_fgm
    from ultrafs.methods.fgm_method import FGMParams
    from ultrafs.solvers.subproblem import DEFAULT_KKT_TOL

    engine = {n: p.default for n, p in inspect.signature(fit_fgm).parameters.items()}
    for name, (default, _) in specs_of(FGMParams).items():
        if name in engine and name != "C":       # FGM's C defaults to "scale"
            assert engine[name] == default, name
    assert specs_of(FGMParams)["inner_kkt_tol"][0] == DEFAULT_KKT_TOL


def test_execution_keywords_a_method_does_not_use_are_refused():
    X = np.random.default_rng(0).standard_normal((40, 6))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    with pytest.raises(ParameterError, match="checkpoint does not apply to l1"):
        fit("l1", X, y, n_features_to_select=2, checkpoint="somewhere")


@pytest.mark.parametrize("name", BUILT_IN)
def test_each_estimator_takes_its_methods_parameters(name):
    from ultrafs.sklearn import estimator_class
    from ultrafs.sklearn.base import RUN_PARAMETERS, estimator_parameter

    method = get_method(name)
    cls = estimator_class(method)
    assert cls.__name__ == method.estimator
    expected = {estimator_parameter(n) for n in specs_of(method.params)} | set(
        RUN_PARAMETERS)
    assert expected <= set(cls().get_params())
    assert clone(cls()).get_params() == cls().get_params()


@pytest.mark.parametrize("name", BUILT_IN)
def test_every_estimator_comes_from_ultrafs_sklearn_on_the_one_base(name):
    """One base serves every method's estimator; ``ultrafs`` and
    ``ultrafs.sklearn`` export the same class, the one ``estimator_class``
    gives (generated, or GSR-FS's hand-written ranking selector)."""
    import ultrafs
    import ultrafs.sklearn
    from ultrafs.sklearn import estimator_class
    from ultrafs.sklearn.base import MethodEstimator

    method = get_method(name)
    cls = estimator_class(name)
    assert issubclass(cls, MethodEstimator) and cls.method is method
    assert getattr(ultrafs, method.estimator) is cls
    assert getattr(ultrafs.sklearn, method.estimator) is cls
    assert (cls.__module__ == "ultrafs.sklearn") == (not method.estimator_path)
    # a selector-only method's estimator does not predict; the others do
    assert hasattr(cls(), "predict") == (method.estimator_kind != "selector")
    # only a method that takes weights offers fit(..., sample_weight=)
    assert ("sample_weight" in inspect.signature(cls.fit).parameters) == method.weights


def test_estimator_defaults_that_differ_from_the_methods():
    """The ℓ1 path's estimator has scikit-learn's C=1.0 (the method's C is
    None: a count or a C), which a count overrides as before."""
    from ultrafs.sklearn import L1LogisticRegression

    assert L1LogisticRegression().get_params()["C"] == 1.0
    assert get_method("l1").params.__dataclass_fields__["C"].default is None
    X = np.random.default_rng(0).standard_normal((60, 8))
    y = (X[:, 0] - X[:, 1] > 0).astype(int)
    by_count = L1LogisticRegression(n_features_to_select=2, n_lambdas=20).fit(X, y)
    assert by_count.model_.params["n_features_to_select"] == 2
    by_C = L1LogisticRegression().fit(X, y)
    assert by_C.C_ == 1.0


@pytest.mark.parametrize("name", BUILT_IN)
def test_select_help_lists_the_methods_options_only(name):
    from ultrafs.cli.method_options import option_name

    method = get_method(name)
    result = CliRunner().invoke(main, ["select", "--method", name, "--help"],
                                terminal_width=200)
    assert result.exit_code == 0, result.output
    own = {option_name(n, s) for n, (_, s) in specs_of(method.params).items() if s.cli}
    for option in own:
        assert f"{option} " in result.output or f"{option}\n" in result.output, option
    others = {option_name(n, s) for m in methods() if m is not method
              for n, (_, s) in specs_of(m.params).items() if s.cli} - own - {
                  "--validation-fraction"}       # every method's held-out rows
    for option in others:
        assert f"  {option} " not in result.output, option
