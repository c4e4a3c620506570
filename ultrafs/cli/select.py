"""``ultrafs select``: FGM, ℓ1-LR, MSLR, sparse kernel LR or GSR-FS on a
store; writes the model as JSON."""

from __future__ import annotations

import contextlib
import sys
import time

import click

from ultrafs.cli.data import held_out_scores, held_out_split, resolve_data_path
from ultrafs.cli.errors import one_line_errors
from ultrafs.cli.fgm import fgm_options, run_select
from ultrafs.cli.options import LABEL_OPTION, l1_path_options, with_options
from ultrafs.cli.output import emit_json, model_output
from ultrafs.cli.scheduler import scheduler_for_run
from ultrafs.cli.summary import print_summary, select_summary
from ultrafs.cli.terminal import format_seconds, progress_enabled
from ultrafs.cli.types import MAX_COUNT, CandidatesType, RetrainCType


#: FGM options that mean nothing to ``select --method l1``
_FGM_ONLY = ("B", "C", "validation_fraction", "cv", "class_weight", "max_iter", "tol",
             "no_intercept", "inner_tol", "inner_kkt_tol", "inner_solver", "poly",
             "gamma", "coef0", "groups_path", "tree_path", "kernel", "kernel_q",
             "kernel_n", "kernel_period", "refit", "refit_C", "memory_limit",
             "checkpoint", "resume", "loss")
_L1_ONLY = ("features", "screening", "basic", "n_lambdas", "lambda_min_ratio",
            "lambda_max_ratio")
_MSLR_ONLY = ("retrain_C", "no_retrain")
_GSRFS_ONLY = ("gsrfs_r", "gsrfs_p", "gsrfs_lam", "gsrfs_candidates", "gsrfs_stop",
               "gsrfs_eps", "gsrfs_scale")
_SKLR_ONLY = ("basis", "n_components", "sigma", "solver", "lam_ratio", "two_stage",
              "mfista_scaling", "seed")
#: FGM options ``select --method sklr`` keeps: --max-iter (the solver's cap),
#: --tol (its duality-gap certificate), --no-intercept, --validation-fraction
_NOT_SKLR = tuple(name for name in _FGM_ONLY
                  if name not in ("max_iter", "tol", "no_intercept", "validation_fraction"))
#: FGM options that mean nothing to ``select --method mslr`` (it keeps --B,
#: --C, --max-iter, --tol, --no-intercept (of the retraining), --poly,
#: --gamma, --coef0, --validation-fraction and the run options)
#: options ``select --method gsrfs`` refuses: FGM's but --max-iter, --tol,
#: --no-intercept and --validation-fraction; l1's but --features; mslr's and
#: sklr's
_NOT_GSRFS = (tuple(name for name in _FGM_ONLY
                    if name not in ("max_iter", "tol", "no_intercept",
                                    "validation_fraction"))
              + tuple(name for name in _L1_ONLY if name != "features")
              + _MSLR_ONLY + _SKLR_ONLY)
_NOT_MSLR = ("cv", "class_weight", "inner_tol", "inner_kkt_tol", "inner_solver",
             "groups_path", "tree_path", "kernel", "kernel_q", "kernel_n",
             "kernel_period", "refit", "refit_C", "memory_limit", "checkpoint",
             "resume", "loss")


def _given(name):
    """Whether option ``name`` was set on the command line or by environment."""
    from click.core import ParameterSource

    source = click.get_current_context().get_parameter_source(name)
    return source not in (None, ParameterSource.DEFAULT)


def _option_text(name):
    if name.startswith("gsrfs_"):
        return "--" + name[len("gsrfs_"):]
    return "--" + {"B": "B", "C": "C", "groups_path": "groups", "tree_path": "tree",
                   "kernel_q": "q", "refit_C": "refit-C", "retrain_C": "retrain-C"}.get(name, name).replace("_", "-")


def _check_option_pairs(params, fgm=True):
    """Refuse an option that has no effect without another one (one line).

    ``--gamma`` and ``--coef0`` are the degree-2 kernel's (``--poly 2``);
    with FGM, ``--refit-C`` is the refit's C (``--refit``) and ``--cv``
    the folds of ``--C auto``.
    """
    if str(params["poly"]) != "2":
        for name in ("gamma", "coef0"):
            if _given(name):
                raise click.UsageError(f"{_option_text(name)} is a parameter of the "
                                       "degree-2 kernel: it applies to --poly 2")
    if not fgm:
        return
    if _given("refit_C") and not params["refit"]:
        raise click.UsageError("--refit-C is the C of the refit: it needs --refit")
    if _given("cv") and params["C"] != "auto":
        raise click.UsageError("--cv K chooses C on K folds: it needs --C auto")


@click.command("select")
@click.option("--data", "data_path", required=True, type=click.Path(),
              help="Training data: a store (Zarr or Parquet, see `ultrafs ingest`) "
                   "or a LIBSVM file (plain, .gz, .bz2, .xz), ingested once into "
                   "the cache ($ULTRAFS_CACHE_DIR, else ~/.cache/ultrafs) and "
                   "reused.")
@LABEL_OPTION
@fgm_options
@click.option("--test", "test_path", default=None, type=click.Path(),
              help="Labelled store or LIBSVM file: the model's accuracy on it is "
                   "printed and recorded (params.test).")
@click.option("--checkpoint", type=click.Path(file_okay=False), default=None,
              help="Directory where the state is saved after every outer iteration.")
@click.option("--resume", is_flag=True,
              help="Continue from --checkpoint (same data and parameters).")
@click.option("--out", default=None,
              help="Model file to write, or - for stdout. Default: on a terminal "
                   "NAME.model.json in the current folder (NAME: the data's file "
                   "name) and a short summary; otherwise the JSON on stdout.")
@click.option("--overwrite", is_flag=True,
              help="Replace an existing NAME.model.json (the default --out on a "
                   "terminal).")
@click.option("--method", type=click.Choice(["fgm", "l1", "mslr", "sklr", "gsrfs"]),
              default="fgm",
              show_default=True,
              help="fgm: the Feature Generating Machine; l1: ℓ1-logistic "
                   "regression, the model at the first λ of the screened path "
                   "with at least --features nonzero weights; mslr: minimax "
                   "sparse logistic regression (r = --B features per constraint, "
                   "T_m = --max-iter constraints at most, no bias), retrained by "
                   "ℓ2-LR on its selection; sklr: sparse kernel logistic "
                   "regression (seed 001) on random Fourier features or the exact "
                   "RBF kernel columns, λ = --lam-ratio λ_max; gsrfs: GSR-FS "
                   "(seed 002), the ℓ2,r loss on ±1 class codes or real targets "
                   "with ℓ2,p row sparsity, by IRLS; the model keeps the "
                   "--features best-ranked features.")
@click.option("--features", type=click.IntRange(min=1, max=MAX_COUNT), default=None,
              help="--method l1: number of nonzero weights wanted; --method gsrfs: "
                   "number of best-ranked features the model keeps [default: 50].")
@with_options(l1_path_options())
@click.option("--retrain-C", "retrain_C", type=RetrainCType(), default=None,
              help="--method mslr: C of the ℓ2-LR retraining on the selected "
                   "features (a number > 0, or 'auto': chosen on 20% of the rows "
                   "held out) [default: 5, the paper's].")
@click.option("--no-retrain", is_flag=True,
              help="--method mslr: predict with MSLR's own weights (no bias) "
                   "instead of the ℓ2-LR retraining.")
@click.option("--basis", type=click.Choice(["rff", "rbf"]), default=None,
              help="--method sklr: random Fourier features generated on the fly "
                   "from --seed (rff), or the exact RBF kernel columns on the "
                   "training rows (rbf, at most 20,000 rows) [default: rff].")
@click.option("--n-components", type=click.IntRange(min=1, max=2 ** 24), default=None,
              help="--method sklr --basis rff: number D of random features "
                   "[default: 1000].")
@click.option("--sigma", type=click.FloatRange(0, None, min_open=True), default=None,
              help="--method sklr: width σ of the kernel exp(-|x - z|²/σ²) "
                   "[default: the median pairwise distance of 1,000 seeded rows].")
@click.option("--solver", type=click.Choice(["fista", "mfista", "cgd", "sgd"]),
              default=None,
              help="--method sklr: the ℓ1 solver (FISTA, multi-scale FISTA, "
                   "coordinate gradient descent, cumulative-penalty SGD) "
                   "[default: cgd].")
@click.option("--lam-ratio", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="--method sklr: λ = ρ λ_max (the paper's grid: 0.5, 0.2, 0.1, "
                   "0.05) [default: 0.1].")
@click.option("--two-stage", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="--method sklr: re-solve on the support at this fraction of λ "
                   "(the paper's 0.1); not with sgd.")
@click.option("--mfista-scaling", type=click.Choice(["min", "hessian"]), default=None,
              help="--method sklr --solver mfista: the paper's scaling (7) (min, "
                   "default) or (8) (hessian).")
@click.option("--seed", type=click.IntRange(min=0, max=2 ** 63 - 1), default=None,
              help="--method sklr: seed of Ω and b (recorded in the model), of the "
                   "median heuristic and of SGD-C [default: 0].")
@click.option("--r", "gsrfs_r", type=click.FloatRange(0, 2, min_open=True), default=None,
              help="--method gsrfs: exponent r of the ℓ2,r loss (small: robust to "
                   "outliers; 2: least squares) [default: 1].")
@click.option("--p", "gsrfs_p", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="--method gsrfs: exponent p of the ℓ2,p penalty (small: sparser; "
                   "below 1 nonconvex) [default: 0.5].")
@click.option("--lam", "gsrfs_lam", type=click.FloatRange(0, None, min_open=True),
              default=None,
              help="--method gsrfs: λ, absolute (not divided by the number of "
                   "rows) [default: 1].")
@click.option("--candidates", "gsrfs_candidates", type=CandidatesType(), default=None,
              help="--method gsrfs: the two-stage mode for ultrahigh dimension: one "
                   "streamed scoring pass proposes this many candidates (an "
                   "integer, or 'auto': max(10 x --features, 1000)) and IRLS ranks "
                   "them, with KKT passes adding violators when p = 1 [default: IRLS "
                   "on every feature].")
@click.option("--stop", "gsrfs_stop", type=click.Choice(["stationarity", "objective"]),
              default=None,
              help="--method gsrfs: stop on the stationarity certificate (relative "
                   "gradient over the nonzero rows <= --tol, default 1e-3) or on the "
                   "paper's relative objective change (<= --tol, default 1e-4) "
                   "[default: stationarity].")
@click.option("--eps", "gsrfs_eps", type=click.FloatRange(0, None, min_open=True),
              default=None,
              help="--method gsrfs: the smoothing ε of the loss and the penalty "
                   "[default: 1e-10 x the mean squared target row (loss), "
                   "(1e-12 x the largest ridge row)² (penalty)].")
@click.option("--scale", "gsrfs_scale", type=click.Choice(["auto", "std", "none"]),
              default=None,
              help="--method gsrfs: std ranks on columns divided by their standard "
                   "deviation (the paper z-scores; the intercept does the centring, "
                   "so sparse data stay sparse); none: as stored; auto: std, none "
                   "with --candidates [default: auto].")
@one_line_errors
def select_command(data_path, label, out, test_path, overwrite, method, **params):
    """Select features with FGM (or ℓ1-LR, MSLR) or fit sparse kernel LR; write the model as JSON."""
    from ultrafs.locks import folder_lock
    from ultrafs.outputs import check_output_dir, check_output_file
    from ultrafs.store import open_store

    gsrfs = {name: params.pop(name) for name in _GSRFS_ONLY}
    if method != "gsrfs":
        for name in _GSRFS_ONLY:
            if _given(name):
                raise click.UsageError(f"{_option_text(name)} applies to --method gsrfs")
    else:
        for name in _NOT_GSRFS:
            if _given(name):
                raise click.UsageError(f"{_option_text(name)} does not apply to "
                                       "--method gsrfs")
        return _select_gsrfs(data_path, label, out, test_path, overwrite, gsrfs, params)
    l1 = {name: params.pop(name) for name in _L1_ONLY}
    mslr = {name: params.pop(name) for name in _MSLR_ONLY}
    sklr = {name: params.pop(name) for name in _SKLR_ONLY}
    if method != "sklr":
        for name in _SKLR_ONLY:
            if _given(name):
                raise click.UsageError(f"{_option_text(name)} applies to --method sklr")
    else:
        for name in _L1_ONLY + _MSLR_ONLY:
            if _given(name):
                raise click.UsageError(f"{_option_text(name)} does not apply to "
                                       "--method sklr")
        return _select_sklr(data_path, label, out, test_path, overwrite, sklr, params)
    if method == "l1":
        for name in _MSLR_ONLY:
            if _given(name):
                raise click.UsageError(f"{_option_text(name)} applies to --method mslr")
        return _select_l1(data_path, label, out, test_path, overwrite, l1, params)
    for name in _L1_ONLY:
        if _given(name):
            raise click.UsageError(f"{_option_text(name)} applies to --method l1")
    if method == "mslr":
        return _select_mslr(data_path, label, out, test_path, overwrite, mslr, params)
    for name in _MSLR_ONLY:
        if _given(name):
            raise click.UsageError(f"{_option_text(name)} applies to --method mslr")
    _check_option_pairs(params)
    started = time.perf_counter()
    out, summary = model_output(out, data_path, overwrite)
    check_output_file(out, "--out", [("--data store", data_path),
                                     ("--test store", test_path),
                                     ("--checkpoint folder", params["checkpoint"])])
    lock = contextlib.nullcontext()
    if params["checkpoint"] is not None:
        check_output_dir(params["checkpoint"], "--checkpoint",
                         [("--data store", data_path)])
        lock = folder_lock(params["checkpoint"], "checkpoint folder")
    store = open_store(resolve_data_path(data_path), label=label)
    test_store = None
    if test_path is not None:
        test_store = open_store(resolve_data_path(test_path), label=label)
    fit_store, held_out = store, None
    if params["validation_fraction"] is not None and params["C"] != "auto":
        fit_store, held_out = held_out_split(store, params.pop("validation_fraction"),
                                              params["split_seed"])
        params["validation_fraction"] = None
    with lock:
        model = run_select(fit_store, command=" ".join(["ultrafs"] + sys.argv[1:]),
                            **params)
        scores = held_out_scores(model, held_out, test_store, test_path)
        emit_json(model.to_dict(), out)
    lines = select_summary(model, store, scores, out, time.perf_counter() - started)
    if summary:
        width = max(len(name) for name, _ in lines) + 2
        click.echo("\n".join(f"{name:<{width}}{text}" for name, text in lines))
    else:   # the JSON went to stdout or a file: the scores, one line each
        for name, text in lines:
            if name.endswith(("accuracy", "RMSE")):
                click.echo(f"{name}: {text}", err=True)


def _select_inputs(data_path, label, out, test_path, overwrite, params):
    """What ``select --method l1|mslr`` open before fitting: the output (and
    whether a summary is printed), the stores, and the held-out split of
    ``--validation-fraction``."""
    from ultrafs.outputs import check_output_file
    from ultrafs.store import open_store

    out, summary = model_output(out, data_path, overwrite)
    check_output_file(out, "--out", [("--data store", data_path),
                                     ("--test store", test_path)])
    store = open_store(resolve_data_path(data_path), label=label)
    test_store = None
    if test_path is not None:
        test_store = open_store(resolve_data_path(test_path), label=label)
    fit_store, held_out = store, None
    if params["validation_fraction"] is not None:
        fit_store, held_out = held_out_split(store, params["validation_fraction"],
                                              params["split_seed"])
    return out, summary, store, test_store, fit_store, held_out


def _select_l1(data_path, label, out, test_path, overwrite, l1, params):
    """``select --method l1``: the ℓ1-LR model with --features nonzero weights."""
    from ultrafs.api import select_l1

    for name in _FGM_ONLY:
        if _given(name):
            raise click.UsageError(f"{_option_text(name)} does not apply to --method l1")
    if l1["features"] is None:
        raise click.UsageError("--method l1 needs --features K")
    started = time.perf_counter()
    out, summary, store, test_store, fit_store, held_out = _select_inputs(
        data_path, label, out, test_path, overwrite, params)
    with scheduler_for_run(params["scheduler"], params["connect_timeout"],
                            params["worker_timeout"]) as dask_scheduler:
        model = select_l1(
            fit_store, features=l1["features"], screening=l1["screening"],
            sequential=not l1["basic"], n_lambdas=l1["n_lambdas"],
            lambda_min_ratio=l1["lambda_min_ratio"],
            lambda_max_ratio=l1["lambda_max_ratio"], block_size=params["block_size"],
            scheduler=dask_scheduler, num_workers=params["workers"],
            command=" ".join(["ultrafs"] + sys.argv[1:]))
    scores = held_out_scores(model, held_out, test_store, test_path)
    emit_json(model.to_dict(), out)
    p = model.params
    lines = [("features selected", f"{len(model.features):,} with a nonzero weight "
              f"(--features {l1['features']}), among {store.n_features:,} columns of "
              f"{store.n_samples:,} rows"),
             ("λ", f"{p['lambda']:.6g} = {p['lambda_ratio']:.4g} λ_max "
              f"(scikit-learn C = {p['C']:.6g})"),
             ("screening", f"{p['screening']} ({'sequential' if p['sequential'] else 'basic'}); "
              f"{sum(r['kkt_violations_found'] for r in model.history)} KKT "
              "violators re-added along the path")]
    print_summary(lines, scores, out, summary, started)


def _select_mslr(data_path, label, out, test_path, overwrite, mslr, params):
    """``select --method mslr``: minimax sparse LR, retrained by ℓ2-LR."""
    from ultrafs.api import select_mslr

    for name in _NOT_MSLR:
        if _given(name):
            raise click.UsageError(f"{_option_text(name)} does not apply to --method mslr")
    if params["C"] == "auto":
        raise click.UsageError("--method mslr takes --C as a number or 'scale' (the "
                               "retraining's C can be chosen: --retrain-C auto)")
    if mslr["no_retrain"] and mslr["retrain_C"] is not None:
        raise click.UsageError("--retrain-C and --no-retrain exclude each other")
    _check_option_pairs(params, fgm=False)
    started = time.perf_counter()
    out, summary, store, test_store, fit_store, held_out = _select_inputs(
        data_path, label, out, test_path, overwrite, params)
    show = progress_enabled(params["progress"])

    def report(record):
        if show:
            click.echo(
                f"iteration {record['iteration']}: {record['n_features']:,} features in "
                f"{record['n_constraints']} constraints, P(v) {record['objective']:.6g} "
                f"(relative gap {record['rel_gap']:.2g}, q {record['q']:.3g}, "
                f"{record['sweeps']:,} sweeps), scoring "
                f"{format_seconds(record['score_seconds'])}, solving "
                f"{format_seconds(record['solve_seconds'])}", err=True)

    C = 10.0 if not _given("C") else params["C"]
    with scheduler_for_run(params["scheduler"], params["connect_timeout"],
                            params["worker_timeout"]) as dask_scheduler:
        model = select_mslr(
            fit_store, B=params["B"], C=C, max_iter=params["max_iter"],
            tol=params["tol"], retrain=not mslr["no_retrain"],
            retrain_C=5.0 if mslr["retrain_C"] is None else mslr["retrain_C"],
            retrain_intercept=not params["no_intercept"], poly=int(params["poly"]),
            gamma=params["gamma"], coef0=params["coef0"],
            block_size=params["block_size"], scheduler=dask_scheduler,
            num_workers=params["workers"], callback=report, progress=show,
            seed=params["split_seed"], command=" ".join(["ultrafs"] + sys.argv[1:]))
    scores = held_out_scores(model, held_out, test_store, test_path)
    emit_json(model.to_dict(), out)
    p = model.params
    last = model.history[-1] if model.history else {}
    lines = [("features selected",
              f"{len(model.features):,} of {p['B'] * p['max_iter']:,} (--B {p['B']} x "
              f"--max-iter {p['max_iter']}) in {len(p['constraints'])} constraints, "
              f"{p['n_active']:,} in constraints of weight > 1e-6; among "
              f"{store.n_features:,} columns of {store.n_samples:,} rows"),
             ("C", f"{p['C']:g} ({p.get('C_rule', 'given')})")]
    if last:
        lines.append(("subproblem", f"P(v) {last['objective']:.6g}, relative duality "
                      f"gap {last['rel_gap']:.2g} "
                      f"({'certified' if last['certified'] else 'NOT certified'})"))
    lines.append(("stopped because", model.stop_reason))
    if model.refit is not None:
        chosen = p.get("retrain_validation")
        lines.append(("retrained", f"ℓ2-LR, C = {p['refit_C']:g}"
                      + (" (chosen on held-out rows)" if chosen else "")
                      + (", with an intercept" if p.get("fit_intercept") else
                         ", no intercept") + "; it predicts"))
    print_summary(lines, scores, out, summary, started)


def _select_sklr(data_path, label, out, test_path, overwrite, sklr, params):
    """``select --method sklr``: sparse kernel logistic regression (seed 001)."""
    from ultrafs.api import select_sklr

    for name in _NOT_SKLR:
        if _given(name):
            raise click.UsageError(f"{_option_text(name)} does not apply to --method sklr")
    basis = sklr["basis"] or "rff"
    if basis == "rbf" and sklr["n_components"] is not None:
        raise click.UsageError("--n-components applies to --basis rff")
    solver = sklr["solver"] or "cgd"
    if sklr["mfista_scaling"] is not None and solver != "mfista":
        raise click.UsageError("--mfista-scaling applies to --solver mfista")
    if sklr["two_stage"] is not None and solver == "sgd":
        raise click.UsageError("--two-stage runs with --solver fista, mfista or cgd")
    started = time.perf_counter()
    out, summary, store, test_store, fit_store, held_out = _select_inputs(
        data_path, label, out, test_path, overwrite, params)
    model = select_sklr(
        fit_store, basis=basis,
        n_components=1000 if sklr["n_components"] is None else sklr["n_components"],
        sigma=sklr["sigma"], seed=sklr["seed"] or 0, solver=solver,
        lam_ratio=0.1 if sklr["lam_ratio"] is None else sklr["lam_ratio"],
        two_stage=sklr["two_stage"], fit_intercept=not params["no_intercept"],
        tol=params["tol"] if _given("tol") else None,
        max_iter=params["max_iter"] if _given("max_iter") else None,
        scaling=sklr["mfista_scaling"], command=" ".join(["ultrafs"] + sys.argv[1:]),
        progress=progress_enabled(params["progress"]))
    scores = held_out_scores(model, held_out, test_store, test_path)
    emit_json(model.to_dict(), out)
    p = model.params
    what = (f"{p['n_basis']:,} random Fourier features (seed {p['seed']})"
            if basis == "rff" else f"{p['n_basis']:,} RBF kernel columns (training rows)")
    lines = [("basis", f"{what}, σ = {p['sigma']:.6g}, on {store.n_features:,} "
              f"columns of {store.n_samples:,} rows"),
             ("nonzero weights", f"{p['nnz']:,} ({p['nnz_pct']:.2f}% of the basis)"),
             ("λ", f"{p['lam']:.6g} = {p['lam_ratio']:.4g} λ_max"
              + (f"; stage 2 on the support at λ = {p['lam2']:.6g}"
                 if p.get("lam2") is not None else "")),
             ("solver", f"{solver}: {p['n_iter']:,} "
              f"{'epochs' if solver == 'sgd' else 'iterations'}, relative duality "
              f"gap {p['rel_gap']:.2g} "
              f"({'certified' if p['converged'] else 'NOT certified'} at {p['tol']:g})"),
             ("stopped because", model.stop_reason)]
    print_summary(lines, scores, out, summary, started)


def _select_gsrfs(data_path, label, out, test_path, overwrite, gsrfs, params):
    """``select --method gsrfs``: GSR-FS (seed 002), IRLS ranking of the features."""
    from ultrafs.api import select_gsrfs

    started = time.perf_counter()
    out, summary, store, test_store, fit_store, held_out = _select_inputs(
        data_path, label, out, test_path, overwrite, params)
    features = params["features"] if params["features"] is not None else 50
    with scheduler_for_run(params["scheduler"], params["connect_timeout"],
                            params["worker_timeout"]) as dask_scheduler:
        model = select_gsrfs(
            fit_store, features=features,
            r=1.0 if gsrfs["gsrfs_r"] is None else gsrfs["gsrfs_r"],
            p=0.5 if gsrfs["gsrfs_p"] is None else gsrfs["gsrfs_p"],
            lam=1.0 if gsrfs["gsrfs_lam"] is None else gsrfs["gsrfs_lam"],
            fit_intercept=not params["no_intercept"], eps=gsrfs["gsrfs_eps"],
            tol=params["tol"] if _given("tol") else None,
            stop=gsrfs["gsrfs_stop"] or "stationarity",
            max_iter=params["max_iter"] if _given("max_iter") else None,
            candidates=gsrfs["gsrfs_candidates"], scale=gsrfs["gsrfs_scale"] or "auto",
            block_size=params["block_size"],
            scheduler=dask_scheduler, num_workers=params["workers"],
            command=" ".join(["ultrafs"] + sys.argv[1:]))
    scores = held_out_scores(model, held_out, test_store, test_path)
    emit_json(model.to_dict(), out)
    p = model.params
    targets = {"binary": "two classes (±1 codes, 2 columns)",
               "multiclass": f"{p['n_outputs']} classes (±1 codes)",
               "continuous": "real targets"}[model.target]
    lines = [("data", f"{store.n_samples:,} rows x {store.n_features:,} features, "
              f"{targets}"),
             ("problem", f"ℓ2,{p['r']:g} loss + λ ℓ2,{p['p']:g}^{p['p']:g} rows, "
              f"λ = {p['lam']:g}, " + ("with" if p["fit_intercept"] else "no")
              + " intercept, " + ("columns scaled to unit standard deviation"
                                  if p["scale"] == "std" else "columns as stored"))]
    if p.get("candidates") is not None:
        rounds = p["rounds"]
        lines.append(("two-stage", f"{p['candidates']:,} candidates of "
                      f"{store.n_features:,} after {len(rounds)} round(s)"
                      + (f"; largest KKT ratio outside "
                         f"{rounds[-1]['max_kkt_outside']:.3g}"
                         if "max_kkt_outside" in rounds[-1] else "")))
    lines += [("IRLS", f"{p['solve']} solve, {p['n_iter']:,} iterations, relative "
               f"stationarity {p['stationarity']:.2g} "
               f"({'converged' if p['converged'] else 'NOT converged'})"),
              ("stopped because", model.stop_reason),
              ("selected", f"{len(model.features):,} features (of {p['n_ranked']:,} "
               f"with a nonzero row): " + ", ".join(
                   str(f) for f in model.feature_labels()[:10])
               + (", ..." if len(model.features) > 10 else ""))]
    print_summary(lines, scores, out, summary, started)
