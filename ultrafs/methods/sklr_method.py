"""Sparse kernel logistic regression (SKLR, seed 001) as a registered method.

Its parameters (:class:`SKLRParams`), its fit (the kernel basis, random
Fourier features or the exact RBF columns, then
:func:`ultrafs.methods.sklr.fit_sklr`), how the result becomes a
:class:`~ultrafs.model.Model`, the CLI's summary lines and the fitted
attributes of its estimator.  The engine is imported when ``fit`` runs:
this module stays light for ``ultrafs select --help``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ultrafs.methods.params import SpelledParameterError, Params, param, specs_of
from ultrafs.methods.registry import HistoryPanel, Method, ReportSpec, register
from ultrafs.methods.weight_params import class_weight_param

__all__ = ["SKLRParams", "SKLR", "fit", "to_model", "summary_lines",
           "estimator_attributes"]

#: the solvers (:data:`ultrafs.solvers.l1_solvers.L1_SOLVERS`, checked by a test)
SOLVERS = ("fista", "mfista", "cgd", "sgd")


@dataclass
class SKLRParams(Params):
    """Sparse kernel LR's parameters (see :func:`ultrafs.methods.sklr.fit_sklr`)."""

    basis: str = param("rff", "rff: random Fourier features of the RBF kernel, "
                       "generated on the fly from --seed (never stored); rbf: the exact "
                       "RBF kernel columns on the training rows (at most 20,000 rows).",
                       kind="choice", words=("rff", "rbf"))
    n_components: int = param(1000, "Number D of random Fourier features (--basis "
                              "rff).", kind="int", low=1, high=2 ** 24)
    sigma: Any = param(None, "Width σ of the kernel exp(-|x - z|^2 / σ^2) [default: the "
                       "median pairwise distance of 1,000 seeded rows].", low=0,
                       low_open=True, none=True)
    solver: str = param("cgd", "The l1 solver: FISTA, multi-scale FISTA, coordinate "
                        "gradient descent or cumulative-penalty SGD.", kind="choice",
                        words=SOLVERS)
    lambda_ratio: float = param(0.1, "λ = lambda_ratio x λ_max (the paper's grid: 0.5, "
                                "0.2, 0.1, 0.05); ignored when --lambda is given.",
                                low=0, high=1, low_open=True,
                                old=("lam_ratio", "--lam-ratio"))
    lam: Any = param(None, "λ itself, absolute (overrides --lambda-ratio).", low=0,
                     low_open=True, none=True, option="--lambda")
    two_stage: Any = param(None, "Re-solve on the support at this fraction of λ (the "
                           "paper's 0.1); not with sgd.", low=0, high=1, low_open=True,
                           none=True)
    fit_intercept: bool = param(True, "Learn an unpenalised bias (--no-intercept: the "
                                "paper's model 2).", kind="bool",
                                option="--fit-intercept/--no-intercept")
    tol: Any = param(None, "The relative duality gap that certifies the solution "
                     "[default: 1e-6; sgd: 1e-2].", low=0, none=True)
    max_iter: Any = param(None, "Iterations of the solver at most [default: fista and "
                          "mfista 3000, cgd 5000; sgd: 10 epochs].", kind="int", low=1,
                          none=True)
    mfista_scaling: Any = param(None, "--solver mfista: the paper's scaling (7) (min, "
                                "default) or (8) (hessian).", kind="choice",
                                words=("min", "hessian"), none=True, old=("scaling",))
    seed: int = param(0, "Seed of Ω and b (recorded in the model), of the median "
                      "heuristic's rows and of SGD-C's permutations.", kind="int", low=0,
                      high=2 ** 63 - 1)
    class_weight: Any = class_weight_param()
    row_chunk: Any = param(None, "Rows per tile of the basis operator.", kind="int",
                           low=1, none=True, cli=False)
    cache_bytes: Any = param(None, "Memory budget of the basis: Φ is held in memory when "
                             "N x D x 8 bytes fit [default: 1 GiB].", kind="int", low=0,
                             none=True, cli=False)

    #: its features are basis functions mixing every input: the estimator
    #: is no selector of input columns
    estimator_selects_columns = False

    def check(self):
        if self.basis == "rbf" and self.n_components != _default("n_components"):
            raise SpelledParameterError("{n_components} is the number of random "
                                    "features: it applies to {basis} rff")
        if self.mfista_scaling is not None and self.solver != "mfista":
            raise SpelledParameterError("{mfista_scaling} applies to {solver} mfista")
        if self.two_stage is not None and self.solver == "sgd":
            raise SpelledParameterError("{two_stage} runs with {solver} fista, mfista or "
                                    "cgd")

    @classmethod
    def estimator_options(cls, options):
        """``n_components`` is ignored by ``basis="rbf"``, ``mfista_scaling``
        by the other solvers and ``two_stage`` by sgd (a search over
        ``basis`` or ``solver`` may hold them fixed)."""
        options = dict(options)
        if options.get("basis") == "rbf":
            options["n_components"] = _default("n_components")
        if options.get("solver") != "mfista":
            options["mfista_scaling"] = None
        if options.get("solver") == "sgd":
            options["two_stage"] = None
        return options


def _default(name):
    return specs_of(SKLRParams)[name][0]


@dataclass
class SKLRFit:
    """What SKLR's fit returns: the solver's result and the basis."""

    result: Any                 # methods.sklr.SKLRResult
    space: Any                  # RandomFourierFeatures or RBFKernelFeatures


def fit(store, targets, params: SKLRParams, execution) -> SKLRFit:
    """Fit sparse kernel LR on the store's basis.

    Parameters
    ----------
    store : ColumnStore
    targets : Targets
        ±1 labels (``kind == "binary"``).
    params : SKLRParams
    execution : Execution
        Its ``progress`` (how the basis is held, the solver's objective and
        duality gap on stderr).

    Returns
    -------
    SKLRFit
    """
    from ultrafs.features import build_feature_space
    from ultrafs.methods.sklr import fit_sklr

    if params.basis == "rff":
        space = build_feature_space(store, "rff", n_components=params.n_components,
                                    sigma=params.sigma, seed=params.seed)
    else:
        space = build_feature_space(store, "rbf", sigma=params.sigma)
    result = fit_sklr(space, targets.y, solver=params.solver,
                      lam_ratio=params.lambda_ratio, lam=params.lam,
                      two_stage=params.two_stage, fit_intercept=params.fit_intercept,
                      tol=params.tol, max_iter=params.max_iter,
                      scaling=params.mfista_scaling, seed=params.seed,
                      row_chunk=params.row_chunk, cache_bytes=params.cache_bytes,
                      progress=execution.progress, sample_weight=targets.sample_weight)
    return SKLRFit(result, space)


def to_model(fitted: SKLRFit, store, targets, params: SKLRParams, execution):
    """The :class:`~ultrafs.model.Model` of a sparse kernel LR fit.

    ``features`` are the basis functions with a nonzero weight
    (random-feature numbers for ``rff``; for ``rbf`` the support points,
    numbered in the order of ``params["support_rows"]``, the training rows
    they are), and ``feature_space`` rebuilds them on any store: the seed
    and σ for ``rff`` (Ω is never written), the support points themselves
    for ``rbf``.
    """
    from ultrafs.methods.sklr import DEFAULT_TOL
    from ultrafs.model import Model

    result, space = fitted.result, fitted.space
    sol = result.solution
    cert = sol.certificate
    recorded = {"method": "sklr", "basis": params.basis, "solver": params.solver,
                "sigma": float(space.sigma), "seed": int(params.seed),
                "n_basis": int(space.n_candidates),
                "lam": result.lam, "lam_max": result.lam_max,
                "lambda_ratio": (result.lam / result.lam_max if result.lam_max > 0
                                 else None),
                "two_stage": params.two_stage,
                "fit_intercept": bool(params.fit_intercept),
                "tol": float(DEFAULT_TOL[params.solver] if params.tol is None
                             else params.tol),
                "converged": bool(sol.converged), "n_iter": int(sol.n_iter),
                "objective": float(cert.primal), "duality_gap": float(cert.gap),
                "rel_gap": float(cert.rel_gap), "kkt": float(cert.kkt),
                "nnz": int(len(result.keys)),
                "nnz_pct": 100.0 * len(result.keys) / max(space.n_candidates, 1),
                "seconds": float(result.seconds), "loss": "logistic", "C": 1.0,
                "id_offset": int(store.id_offset),
                "data_fingerprint": getattr(store, "fingerprint", None),
                **targets.weight_params}
    if params.basis == "rff":
        recorded["n_components"] = int(params.n_components)
        ids = space.feature_ids(result.keys)
        feature_space = space.spec()
    else:
        ids = list(range(len(result.keys)))
        feature_space = space.restricted(result.keys)
        recorded["support_rows"] = [int(k) for k in result.keys]
    if result.stage1 is not None:
        s1 = result.stage1
        recorded["stage1"] = {"lam": result.lam, "nnz": s1.nnz,
                              "n_iter": int(s1.n_iter),
                              "rel_gap": float(s1.certificate.rel_gap),
                              "converged": bool(s1.converged)}
        recorded["lam2"] = result.lam * params.two_stage
    if sol.info.get("eta0") is not None:
        recorded["eta0"] = float(sol.info["eta0"])
    if execution.command:
        recorded["command"] = execution.command
    return Model(
        features=ids,
        coef=result.coef[result.keys],
        intercept=float(result.intercept),
        batches=[0, len(ids)],
        loss="logistic",
        classes=[float(c) for c in store.classes],
        target="binary",
        feature_space=feature_space,
        params=recorded,
        history=result.history,
        stop_reason=result.stop_reason,
    )


def summary_lines(model, store):
    """What a person reads after ``select --method sklr``: ``(name, text)`` pairs."""
    p = model.params
    solver = p["solver"]
    ratio = p.get("lambda_ratio", p.get("lam_ratio"))     # models before issue 36
    what = (f"{p['n_basis']:,} random Fourier features (seed {p['seed']})"
            if p["basis"] == "rff"
            else f"{p['n_basis']:,} RBF kernel columns (training rows)")
    return [("basis", f"{what}, σ = {p['sigma']:.6g}, on {store.n_features:,} "
             f"columns of {store.n_samples:,} rows"),
            ("nonzero weights", f"{p['nnz']:,} ({p['nnz_pct']:.2f}% of the basis)"),
            ("λ", f"{p['lam']:.6g} = {ratio:.4g} λ_max"
             + (f"; stage 2 on the support at λ = {p['lam2']:.6g}"
                if p.get("lam2") is not None else "")),
            ("solver", f"{solver}: {p['n_iter']:,} "
             f"{'epochs' if solver == 'sgd' else 'iterations'}, relative duality "
             f"gap {p['rel_gap']:.2g} "
             f"({'certified' if p['converged'] else 'NOT certified'} at {p['tol']:g})"),
            ("stopped because", model.stop_reason)]


def estimator_attributes(model, id_offset, n_features_in=None) -> dict:
    """``SparseKernelLogisticRegression``'s fitted attributes besides the
    common ones.

    Its coefficients index basis functions, not input columns: ``_coef``
    (shape (1, n_basis), zeros included) is what the estimator's ``coef_``
    returns, and ``n_iter_`` is the solver's iteration (SGD: epoch) count.

    Returns
    -------
    dict
        ``_coef``, ``support_`` (int64, the basis functions with a nonzero
        weight: random-feature numbers, or training rows for ``rbf``),
        ``sigma_``, ``lam_``, ``lam_max_``, ``duality_gap_`` (relative, at
        the solution), ``n_iter_``.
    """
    import numpy as np

    p = model.params
    if p["basis"] == "rbf":
        support = np.asarray(p["support_rows"], dtype=np.int64)
    else:
        support = np.asarray(model.features, dtype=np.int64)
    coef = np.zeros((1, p["n_basis"]))
    coef[0, support] = model.coef
    return {"_coef": coef, "support_": support, "sigma_": float(p["sigma"]),
            "lam_": float(p["lam"]), "lam_max_": float(p["lam_max"]),
            "duality_gap_": float(p["rel_gap"]), "n_iter_": int(p["n_iter"])}


SKLR = register(Method(
    name="sklr", display_name="sparse kernel LR",
    description="sparse kernel logistic regression",
    summary="sklr: sparse kernel logistic regression (seed 001) on random Fourier "
            "features or the exact RBF kernel columns, λ = lambda_ratio x λ_max.",
    params=SKLRParams, fit=fit, to_model=to_model, targets=("binary",), weights=True,
    execution=("progress",),
    objective="min_w sum_i log(1 + exp(-y_i (phi(x_i)'w + c))) + lambda ||w||_1, phi: "
              "the kernel basis (random Fourier features or RBF kernel columns)",
    estimator="SparseKernelLogisticRegression", estimator_kind="classifier",
    summary_lines=summary_lines, estimator_attributes=estimator_attributes,
    probabilistic=True, figures=("objective", "basis"),
    report=ReportSpec(x="iter", x_label="solver iteration",
                      panels=(HistoryPanel("objective", "objective"),
                              HistoryPanel("rel_gap", "relative duality gap", log=True)),
                      title="Objective and duality gap per solver iteration", steps=""),
    order=30))
