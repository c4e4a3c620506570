"""Run report: an HTML page with PNG figures describing a fitted model.

``build_report(model, "out/report.html")`` writes ``out/report.html`` and,
next to it, the PNG figures that apply to the model's method (its
registration: ``Method.figures`` and ``Method.report``):
``out/report_objective.png`` (the method's history: objective and number
of features per outer iteration for FGM, the λ path for the ℓ1 path, the
solver's iterations for SKLR and GSR-FS), ``out/report_timing.png``
(seconds per phase, where the records time phases),
``out/report_features.png`` (top features by ``|weight|``),
``out/report_ranking.png`` (GSR-FS's ranking scores),
``out/report_basis.png`` (SKLR's nonzero basis functions) and, when a
labelled test store is given, ``out/report_accuracy.png`` (test accuracy
and AUC of the model truncated to its first k selection steps; with the
training store too, next to the ℓ2 refit of each prefix and
scikit-learn's ℓ1-LR at the same number of features, a baseline that
loads the training store in memory).  The PNG names are built from the
HTML file's stem, so several reports can share a folder.

The page names the method and its objective (``Method.objective``), lists
the parameters its ``Params`` has, and holds the tables behind the
figures.  The data is gathered by :mod:`ultrafs.report_data`, drawn by
:mod:`ultrafs.report_figures` and written by :mod:`ultrafs.report_html`.
matplotlib is an optional dependency (``pip install 'ultrafs[report]'``),
imported only there and used through its object-oriented API with the Agg
canvas, so the caller's pyplot backend is never touched.
"""

from __future__ import annotations

import os

from ultrafs.errors import UltraFSError
# the curves are computed there; accuracy_curves and accuracy_vs_features
# stay importable from here, the report's public face
from ultrafs.report_curves import (accuracy_curves, accuracy_vs_features, lambda_curve,
                                   n_iterations)
from ultrafs.report_data import (FIGURES, PHASES, figure_data, figures_of, method_name,
                                 method_of, report_spec, store_info)
from ultrafs.report_figures import (plot_accuracy, plot_basis, plot_features,
                                    plot_history, plot_lambda_path, plot_ranking,
                                    plot_timing, plot_validation)
from ultrafs.report_files import report_target, write_report_files
from ultrafs.report_html import html_page, validation_section

__all__ = ["build_report", "accuracy_vs_features", "accuracy_curves", "method_of",
           "method_name", "n_iterations", "PHASES"]

MISSING_MATPLOTLIB = "the report needs matplotlib: pip install 'ultrafs[report]'"

#: the choice-of-C section (kept under its old name for its callers)
_validation_section = validation_section


def _figure_names(model, stem, data, test_store) -> dict:
    """``{figure: PNG name}`` of the figures that apply to ``model`` and have
    data to draw."""
    applies = figures_of(model)
    has = {"objective": True,
           "timing": bool(data["phases"]),
           "features": True,
           "ranking": bool(data["ranking"]),
           "basis": data["basis"] is not None and "n_basis" in model.params,
           "accuracy": test_store is not None,
           "lambda_path": bool(data["lambda_path"]),
           "validation": bool(model.params.get("validation"))}
    return {key: f"{stem}_{key}.png" for key in FIGURES if key in applies and has[key]}


def _draw(key, path, model, data):
    """Draw figure ``key`` of ``model`` to ``path``."""
    spec = report_spec(model)
    if key == "objective":
        plot_history(path, data, spec)
    elif key == "timing":
        plot_timing(path, data, spec)
    elif key == "features":
        plot_features(path, data["top_features"], model.n_outputs)
    elif key == "ranking":
        plot_ranking(path, data["ranking"], model.params.get("n_ranked"),
                     method_name(model))
    elif key == "basis":
        plot_basis(path, data["basis"])
    elif key == "accuracy":
        plot_accuracy(path, data)
    elif key == "lambda_path":
        plot_lambda_path(path, data["lambda_path"], data["marked"])
    elif key == "validation":
        plot_validation(path, data["validation"])


def build_report(model, out_html, *, test_store=None, train_store=None, top=30,
                 l1_max_nnz=None, test_name=None, train_name=None) -> dict:
    """Write an HTML run report and its PNG figures.

    Parameters
    ----------
    model : Model or path of a model file
    out_html : str or os.PathLike
        The HTML file to write; its folder must exist.  The figures that
        apply to the model's method go next to it as ``<stem>_<figure>.png``
        (``objective``, ``timing``, ``features``, ``ranking``, ``basis``,
        ``accuracy``, ``validation``); existing files of those names are
        replaced.
    test_store : ColumnStore or path of a store, optional
        A labelled store; adds test accuracy and AUC of the model truncated
        to its first k = 1..t selection steps (one row for a model selected
        in one block).
    train_store : ColumnStore or path of a store, optional
        The labelled training store, with a test store: adds, per prefix,
        the ℓ2 refit of its features and scikit-learn's ℓ1-LR at the same
        number of features (see :func:`accuracy_curves`; **the ℓ1
        baseline loads the training store in memory**).
    l1_max_nnz : int, optional
        Refuse training stores holding more values than this for the ℓ1
        baseline (default
        :data:`ultrafs.methods.l1_baseline.L1_MAX_NNZ`, 2e8).
    top : int
        Number of features (largest ``|weight|``) in the feature figure and
        table.
    test_name, train_name : str, optional
        How the page names the test and training stores (the file the user
        gave, e.g. a LIBSVM file whose store lives in a cache folder);
        default: the store's path.

    Returns
    -------
    report : dict
        ``html``: path of the page; ``figures``: figure name -> PNG path
        (those drawn); ``data``: the figures' data, JSON-serialisable —
        ``iteration``, ``n_features``, ``objective`` (lists over the
        history records), ``x`` and ``series`` (the history figure's axis
        and panels, ``Method.report``), ``marked`` (the chosen λ, or None),
        ``phases`` (phase -> seconds per record), ``ranking``, ``basis``,
        ``method``, ``objective_title``, ``history`` (the
        model's records), ``top_features`` (dicts with ``rank``, ``id``,
        ``label``, ``name`` (None when unnamed), ``weight``, ``iteration``,
        ``position``), ``accuracy``
        (rows of :func:`accuracy_vs_features`, or None),
        ``accuracy_refit`` and ``accuracy_l1`` (the ``refit`` and ``l1``
        rows of :func:`accuracy_curves`, or None), ``accuracy_notes``,
        ``absent_warning`` and ``train_info``.

    Raises
    ------
    UltraFSError
        If matplotlib is not installed, a training store comes without a
        test store, or the training store is refused (other classes, or
        too large for the ℓ1 baseline).

    Warns
    -----
    UltraFSWarning
        Once, when model features are absent from the test store (and
        once per other kind, see :func:`accuracy_curves`).

    Notes
    -----
    All files are rendered in a temporary folder next to ``out_html`` and
    moved in with :func:`os.replace` only once every one of them is
    complete, figures first and the page last.  A failure while rendering
    leaves the target folder untouched; a failure while moving (rare: the
    same file system) removes the files already moved.
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UltraFSError(MISSING_MATPLOTLIB) from None
    from ultrafs.model import Model

    if not isinstance(model, Model):
        model = Model.load(model)
    if int(top) < 0:
        raise UltraFSError(f"top must be >= 0, got {top}")
    if train_store is not None and test_store is None:
        raise UltraFSError("a training store needs a test store: the curves it "
                           "adds are measured on the test store")
    if test_store is not None and isinstance(test_store, (str, os.PathLike)):
        from ultrafs.store import open_store

        test_store = open_store(test_store)
    if train_store is not None and isinstance(train_store, (str, os.PathLike)):
        from ultrafs.store import open_store

        train_store = open_store(train_store)

    out_html, directory, stem = report_target(out_html)
    data = figure_data(model, top)
    test_info = None
    if test_store is not None:
        curves = accuracy_curves(model, test_store, train_store,
                                 l1_max_nnz=l1_max_nnz, train_name=train_name,
                                 _stacklevel=3)
        data.update(accuracy=curves["plain"], accuracy_refit=curves["refit"],
                    accuracy_l1=curves["l1"], accuracy_notes=curves["notes"],
                    absent_warning=curves["absent_warning"])
        test_info = store_info(test_store, test_name)
        if train_store is not None:
            data["train_info"] = store_info(train_store, train_name)
        if train_store is not None and "lambda_path" in figures_of(model):
            data["lambda_path"], data["lambda_notes"] = lambda_curve(
                model, test_store, train_store)
    names = _figure_names(model, stem, data, test_store)

    figures = write_report_files(
        out_html, names, lambda key, path: _draw(key, path, model, data),
        lambda: html_page(model, names, data, f"ultrafs run report: {stem}", test_info))
    return {"html": out_html, "figures": figures, "data": data}
