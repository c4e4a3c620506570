"""FGM on the command line: its options (``select``, ``demo``) and the run
(progress lines, the scheduler, the structure files)."""

from __future__ import annotations

import contextlib

import click

from ultrafs.cli.options import run_options
from ultrafs.cli.scheduler import scheduler_for_run
from ultrafs.cli.terminal import progress_enabled
from ultrafs.cli.types import (MAX_COUNT, ClassWeightType, CType, SizeType, loss_choice,
                               poly_choice)


def fgm_options(func):
    """Decorator: FGM's options, then the run options (``select``, ``demo``)."""
    options = [
        click.option("--B", "B", type=click.IntRange(min=1, max=MAX_COUNT), default=50,
                     show_default=True, help="Features added per outer iteration."),
        click.option("--C", "C", type=CType(), default="scale", show_default=True,
                     help="Weight of the empirical loss: a number > 0, 'scale' "
                          "(10 / mean over rows of the largest squared value: the "
                          "same model whatever the scale of the rows) or 'auto' "
                          "(chosen on held-out "
                          "rows, see --validation-fraction and --cv)."),
        click.option("--validation-fraction", type=click.FloatRange(0, 1, min_open=True,
                                                                    max_open=True),
                     default=None,
                     help="Share of the rows held out (stratified, seeded by "
                          "--split-seed). With --C auto: the rows C is chosen on "
                          "(default 0.2; 5 folds for at most 10,000 rows), then the "
                          "model is fitted on all rows. Otherwise: the model is "
                          "fitted on the other rows and its accuracy on the held-out "
                          "ones is printed and recorded (params.held_out)."),
        click.option("--cv", type=click.IntRange(min=2, max=MAX_COUNT), default=None,
                     help="--C auto: K stratified folds instead of one hold-out."),
        click.option("--split-seed", type=click.IntRange(min=0), default=0,
                     show_default=True,
                     help="Seed of the held-out split (--validation-fraction) or "
                          "of the --C auto folds."),
        click.option("--loss", type=loss_choice(),
                     default="logistic", show_default=True,
                     help="Loss (K >= 3 classes: multinomial logistic or "
                          "one-vs-rest squared hinge)."),
        click.option("--class-weight", type=ClassWeightType(), default=None,
                     help="Weight the loss of each class: 'balanced' (n / (K x "
                          "the class's count), for imbalanced data) or "
                          "VALUE:WEIGHT,... (class values, e.g. 1:10,-1:1; others "
                          "keep 1). --C auto then scores held-out rows by their "
                          "weighted accuracy."),
        click.option("--max-iter", type=click.IntRange(min=1, max=MAX_COUNT), default=10,
                     show_default=True,
                     help="T: select up to B x T features with a nonzero weight "
                          "(at most 3T outer iterations)."),
        click.option("--tol", type=click.FloatRange(min=0), default=1e-3,
                     show_default=True,
                     help="ε_c of eq. 37; 0 disables it (the loop runs until "
                          "the budget B x T is held)."),
        click.option("--no-intercept", is_flag=True, help="Do not learn a bias."),
        click.option("--inner-tol", type=click.FloatRange(min=0, min_open=True),
                     default=1e-3, show_default=True,
                     help="ε_in of the subproblem solver: the relative decrease "
                          "that triggers its optimality check."),
        click.option("--inner-kkt-tol", type=click.FloatRange(min=0), default=1e-4,
                     show_default=True,
                     help="Relative KKT residual that certifies each subproblem's "
                          "solution; 0 stops on --inner-tol alone (the paper's rule)."),
        click.option("--inner-solver", type=click.Choice(["auto", "apg", "newton", "mkl"]),
                     default="auto", show_default=True,
                     help="Subproblem solver: auto (proximal Newton or APG), or mkl: "
                          "MKL-FGM, SimpleMKL in the dual (the paper's reference; "
                          "squared hinge, two classes, at most 5,000 rows)."),
        click.option("--poly", type=poly_choice(), default="1",
                     show_default=True,
                     help="2: select among all degree-2 polynomial features "
                          "(linear, squares, crosses) generated on the fly."),
        click.option("--gamma", type=click.FloatRange(min=0, min_open=True),
                     default=1.0, show_default=True,
                     help="γ of the degree-2 kernel (γ x'z + r)^2."),
        click.option("--coef0", type=click.FloatRange(min=0), default=1.0,
                     show_default=True, help="r of the degree-2 kernel."),
        click.option("--groups", "groups_path", type=click.Path(dir_okay=False),
                     default=None,
                     help="Select groups of features (B groups per iteration): "
                          "FEATURE_ID GROUP_ID per line (a feature may be in "
                          "several groups), or .npy / .parquet (docs/GROUPS.md)."),
        click.option("--tree", "tree_path", type=click.Path(dir_okay=False),
                     default=None,
                     help="Select nodes of a tree of groups: the parent of every "
                          "node per line (-1: root); nodes 0..m-1 are the columns "
                          "(docs/GROUPS.md)."),
        click.option("--kernel", type=click.Choice(["hik", "chi2", "intersection", "js"]),
                     default=None,
                     help="Select features of an additive kernel: each feature's "
                          "explicit map is a group generated on the fly (hik: q = "
                          "100 levels; the others: 11 columns; docs/ADDITIVE_KERNELS.md)."),
        click.option("--q", "kernel_q", type=click.IntRange(min=1, max=10_000),
                     default=None, help="Levels of the --kernel hik map [default: 100]."),
        click.option("--kernel-n", type=click.IntRange(min=0, max=50), default=None,
                     help="Order n of the --kernel chi2 / intersection / js maps: "
                          "2n+1 columns per feature [default: 5]."),
        click.option("--kernel-period", type=click.FloatRange(min=0, min_open=True),
                     default=None, help="Sampling period L of the chi2 / "
                                        "intersection / js maps [default: 0.315 / "
                                        "0.34 / 0.25, docs/ADDITIVE_KERNELS.md]."),
        *run_options(),
        click.option("--refit", is_flag=True,
                     help="Refit an l2-regularised model of the same loss on the "
                          "selected columns only and predict with it (with --C auto, "
                          "unless FGM's own weights score better on the held-out "
                          "rows)."),
        click.option("--refit-C", "refit_C", type=click.FloatRange(min=0, min_open=True),
                     default=None, help="C of the refit (default: --C; with --C auto "
                                        "chosen on the same held-out rows)."),
        click.option("--progress/--no-progress", default=None,
                     help="Per-iteration progress on stderr (default: when a terminal)."),
        click.option("--memory-limit", type=SizeType(), default=None,
                     help="Memory the run may hold (e.g. 8GB): the loop stops before "
                          "an outer iteration whose projected peak would exceed it, "
                          "keeping the last certified model; the stop reason says so."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@contextlib.contextmanager
def _too_large_C(C):
    """Name ``--C`` when the solver's step bound overflows (C near 1e308)."""
    from ultrafs.errors import ParameterError

    try:
        yield
    except ParameterError as exc:
        if "lipschitz0" not in str(exc) and "Lipschitz" not in str(exc):
            raise
        shown = C if isinstance(C, str) else f"{C:g}"
        raise ParameterError(
            f"--C {shown} is too large for this data: the solver's curvature bound "
            "(C times the loss curvature and the squared column norms) overflows; "
            "use a smaller --C or --C scale") from None


def run_select(store, B, C, loss, max_iter, tol, no_intercept, inner_tol,
                inner_kkt_tol,
                block_size, scheduler, workers, progress, command, poly=1,
                gamma=1.0, coef0=1.0, checkpoint=None, resume=False, refit=False,
                refit_C=None, validation_fraction=None, cv=None, split_seed=0,
                connect_timeout=None, worker_timeout=None, class_weight=None,
                memory_limit=None, groups_path=None, tree_path=None, kernel=None,
                inner_solver="auto", kernel_q=None, kernel_n=None, kernel_period=None):
    from ultrafs.api import select

    from ultrafs.scoring.progress import format_seconds, run_clock

    show = progress_enabled(progress)
    clock = None

    def report(record):
        if clock is not None:
            clock.iteration_done(record["iteration"])
        if show:
            seconds = sum(record.get(f"{phase}_seconds", 0.0)
                          for phase in ("score", "materialize", "solve"))
            left = clock.remaining() if clock is not None else None
            click.echo(
                f"{clock.name(record['iteration'])}: "
                f"{record['n_features']:,} features ({record['n_nonzero']:,} with a "
                f"nonzero weight), objective {record['objective']:.6g}, "
                + (f"{record['pairs_evaluated']:,} of {record['candidates']:,} "
                   "pairs evaluated, " if "pairs_evaluated" in record else "")
                + f"{format_seconds(seconds)} (scoring "
                f"{format_seconds(record['score_seconds'])}, solving "
                f"{format_seconds(record['solve_seconds'])})"
                + ("" if left is None or left <= 0
                   else f"; run ETA {format_seconds(left)}"), err=True)

    structure = _structure(store, groups_path, tree_path, kernel, kernel_q, kernel_n,
                           kernel_period)
    with _too_large_C(C), run_clock(max_iter) as clock, \
            scheduler_for_run(scheduler, connect_timeout,
                               worker_timeout) as dask_scheduler:
        return select(store, B=B, C=C, loss=loss, max_iter=max_iter, tol=tol,
                      fit_intercept=not no_intercept, inner_tol=inner_tol,
                      inner_kkt_tol=inner_kkt_tol or None,
                      block_size=block_size, scheduler=dask_scheduler,
                      num_workers=workers, callback=report, command=command,
                      poly=int(poly), gamma=gamma, coef0=coef0,
                      checkpoint=checkpoint, resume=resume, progress=show,
                      refit=refit, refit_C=refit_C,
                      validation_fraction=validation_fraction, cv=cv, seed=split_seed,
                      class_weight=class_weight, memory_limit=memory_limit,
                      inner_solver=inner_solver, **structure)


def _structure(store, groups_path, tree_path, kernel, kernel_q=None, kernel_n=None,
               kernel_period=None):
    """``select``'s groups / tree / kernel arguments from the options; a
    malformed file or one that does not fit the data is named in one line."""
    from ultrafs.errors import ParameterError

    kernel_params = {}
    if kernel_q is not None:
        if kernel != "hik":
            raise ParameterError("--q is the number of levels of --kernel hik")
        kernel_params["q"] = kernel_q
    for name, value in (("n", kernel_n), ("period", kernel_period)):
        if value is not None:
            if kernel not in ("chi2", "intersection", "js"):
                raise ParameterError(f"--kernel-{name} applies to --kernel chi2, "
                                     "intersection or js")
            kernel_params[name] = value
    structure = {"kernel": kernel, "kernel_params": kernel_params or None}
    if groups_path is not None:
        from ultrafs.features.group_files import read_groups_file
        from ultrafs.features.groups import _group_map

        _, value = read_groups_file(groups_path)
        try:
            structure["groups"] = _group_map(store, value)
        except ParameterError as exc:
            raise ParameterError(f"{groups_path}: {exc}") from None
    if tree_path is not None:
        from ultrafs.features.group_files import read_tree_file
        from ultrafs.features.tree import Tree

        try:
            structure["tree"] = Tree(read_tree_file(tree_path), store.n_features)
        except ParameterError as exc:
            raise ParameterError(f"{tree_path}: {exc}") from None
    return structure
