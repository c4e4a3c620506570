"""Test curves of a report: a model's metrics against its number of features.

:func:`accuracy_curves` scores the model truncated to its first k
selection iterations on a labelled test store and, with the training
store, the l2 refit of each prefix and scikit-learn's l1-LR at the same
number of features (:mod:`ultrafs.methods.refit`,
:mod:`ultrafs.methods.l1_baseline`); :mod:`ultrafs.report` draws them.
"""

from __future__ import annotations

import os
import warnings

from ultrafs.errors import InputFormatError, UltraFSWarning

__all__ = ["accuracy_vs_features", "accuracy_curves", "lambda_curve", "n_iterations"]


def n_iterations(model) -> int:
    """Outer iterations of a model: its number of batches."""
    return max(len(model.batches) - 1, 0)


def accuracy_vs_features(model, test_store, *, _stacklevel=2
                         ) -> tuple[list[dict], str | None]:
    """Test metrics of the model truncated to its first k iterations.

    Parameters
    ----------
    model : Model
    test_store : ColumnStore
        Labelled store holding (at least) the model's source columns.

    Returns
    -------
    rows : list of dict
        One row per k = 1..t (t outer iterations): ``n_batches`` (k),
        ``n_features``, ``accuracy``, ``auc`` and, for the logistic loss,
        ``log_loss``.  The truncated models keep the final weights and
        intercept (they are not refitted).
    absent_warning : str or None
        The :class:`~ultrafs.errors.UltraFSWarning` message about model
        features absent from the store, re-emitted once (not once per k).

    See Also
    --------
    accuracy_curves : the same rows next to the refitted prefixes and
        scikit-learn's ℓ1-LR at the same feature counts.
    """
    curves = accuracy_curves(model, test_store, _stacklevel=_stacklevel + 1)
    return curves["plain"], curves["absent_warning"]


def _metrics_row(k, metrics) -> dict:
    row = {"n_batches": k, "n_features": metrics["n_features_model"],
           "accuracy": metrics["accuracy"], "auc": metrics["auc"]}
    if "log_loss" in metrics:
        row["log_loss"] = metrics["log_loss"]
    return row


def _recording(func):
    """``func()`` with the UltraFSWarnings it raises recorded, not shown.

    Returns ``(result, messages)``; other warnings go back to the caller's
    filters, once each.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UltraFSWarning)
        result = func()
    ours = [str(w.message) for w in caught if issubclass(w.category, UltraFSWarning)]
    seen = set()
    for w in caught:
        key = (w.category, str(w.message))
        if issubclass(w.category, UltraFSWarning) or key in seen:
            continue
        seen.add(key)
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return result, ours


def accuracy_curves(model, test_store, train_store=None, *, l1_max_nnz=None,
                    train_name=None, _stacklevel=2) -> dict:
    """Test metrics per prefix of k iterations: plain, refitted, ℓ1-LR.

    Parameters
    ----------
    model : Model
    test_store : ColumnStore
        Labelled store holding (at least) the model's source columns.
    train_store : ColumnStore, optional
        The labelled training store (the model's classes).  Needed to fit
        anything: with it, each prefix is also refitted (the ℓ2 refit of
        ``select(refit=True)``, :func:`ultrafs.methods.refit.refit_prefix`,
        ``C`` = the model's ``refit_C``, else its ``C``) and, for binary
        models, scikit-learn's ℓ1-regularised logistic regression
        (liblinear, with intercept) is fitted with ``C`` bisected so that
        its number of nonzero weights equals the prefix's feature count, or
        is the largest count found below it
        (:func:`ultrafs.methods.l1_baseline.l1_logistic_at_counts`).
        **The ℓ1 baseline loads the training store in memory** as a scipy
        CSR matrix; degree-2 models get it on the linear columns only.
    l1_max_nnz : int, optional
        The largest training store (stored values) the ℓ1 baseline loads;
        larger ones are refused in one line before anything is fitted
        (default :data:`ultrafs.methods.l1_baseline.L1_MAX_NNZ`).
    train_name : str, optional
        How the notes name the training store (the file the user gave);
        default: its path.

    Returns
    -------
    dict
        ``plain``: the rows of :func:`accuracy_vs_features` (the model
        truncated to its first k iterations, final weights);
        ``refit``: rows with the same keys plus ``C`` and ``kkt``, or None
        without a training store or for a loss the ℓ2 refit does not fit
        (a note says so); ``l1``: rows with the same keys plus
        ``nnz`` (nonzero weights, <= ``n_features``), ``C`` and
        ``converged``, or None (no training store, or a multi-class
        model); ``notes``: sentences for the reader (what was skipped, the
        in-memory load...); ``absent_warning``: the message about model
        features absent from the test store, or None.

    Raises
    ------
    ParameterError
        The training store's classes are not the model's, or it holds more
        than ``l1_max_nnz`` values (one line).

    Warns
    -----
    UltraFSWarning
        Once per kind: model features absent from the test store, from the
        training store, ℓ1 features absent from the test store.

    Notes
    -----
    Each stage is a :func:`ultrafs.progress.phase` ("test scores", "ℓ2
    refits", "ℓ1 baselines"), shown when the caller turned progress on.
    """
    from ultrafs.methods.l1_baseline import L1_MAX_NNZ, check_in_memory
    from ultrafs.progress import phase

    if model.target == "continuous":
        raise InputFormatError(
            "the report's test curves are accuracies of class labels; this is a "
            "regression model (continuous target): use `ultrafs evaluate` for its "
            "RMSE and R²")
    if l1_max_nnz is None:
        l1_max_nnz = L1_MAX_NNZ
    n_iter = n_iterations(model)
    run_l1 = train_store is not None and model.n_outputs == 1
    if run_l1:   # refuse before any work
        check_in_memory(train_store, l1_max_nnz)

    with phase("test scores", total=n_iter, unit="model") as shown:
        plain, absent = _recording(lambda: [
            _scored(shown, k, model.truncated(k).evaluate_store(test_store))
            for k in range(1, n_iter + 1)])
    # The last one comes from the largest model and names all absentees.
    absent_warning = absent[-1] if absent else None
    emit = [absent_warning] if absent_warning else []
    curves = {"plain": plain, "refit": None, "l1": None, "notes": [],
              "absent_warning": absent_warning}
    refits = _refits(model)
    if train_store is not None and refits:
        curves["refit"], train_absent = _recording(
            lambda: _refit_curve(model, test_store, train_store, n_iter))
        emit += train_absent[-1:]   # the refit's test warnings repeat the plain ones
    elif train_store is not None:
        curves["notes"].append(
            f"No l2 refit: the refit fits the {' and '.join(_refit_losses())} "
            f"losses, and this model's loss is {model.loss}.")
    if train_store is not None:
        if run_l1:
            (curves["l1"], notes), l1_absent = _recording(
                lambda: _l1_curve(model, test_store, train_store, plain, l1_max_nnz,
                                  train_name))
            curves["notes"] += notes
            emit += [f"l1-LR baseline: {m}" for m in l1_absent[-1:]]
        else:
            curves["notes"].append(
                f"The l1-LR baseline is binary only: not fitted for this "
                f"{model.n_outputs}-class model.")
    for message in emit:
        warnings.warn(message, UltraFSWarning, stacklevel=_stacklevel)
    return curves


def _scored(shown, k, metrics) -> dict:
    """The metrics row of prefix ``k``, one step of the phase ``shown``."""
    row = _metrics_row(k, metrics)
    shown.update(1, status=f"k = {k}: accuracy {row['accuracy']:.4f}")
    return row


def _refit_losses() -> list[str]:
    """The losses the ℓ2 refit fits (the registered classification losses)."""
    from ultrafs.solvers.losses import loss_names

    return loss_names()


def _refits(model) -> bool:
    """Whether the ℓ2 refit fits the model's loss."""
    return model.loss in _refit_losses()


def _refit_curve(model, test_store, train_store, n_iter) -> list[dict]:
    """Test metrics of the ℓ2 refit of each prefix (fitted on ``train_store``)."""
    from ultrafs.methods.refit import training_targets
    from ultrafs.progress import phase

    targets = training_targets(model, train_store)
    rows = []
    with phase("ℓ2 refits", total=n_iter, unit="model") as shown:
        for k in range(1, n_iter + 1):
            rows.append(_refit_row(model, test_store, train_store, k, targets))
            shown.update(1, status=f"k = {k}: accuracy {rows[-1]['accuracy']:.4f}")
    return rows


def _refit_row(model, test_store, train_store, k, targets) -> dict:
    """Test metrics of the ℓ2 refit of the first ``k`` steps."""
    import dataclasses

    from ultrafs.methods.refit import refit_prefix

    fitted = refit_prefix(model, train_store, k, targets=targets)
    refitted = dataclasses.replace(
        model.truncated(k), predictor="refit",
        refit={"coef": fitted["coef"], "intercept": fitted["intercept"],
               "C": fitted["C"]})
    row = _metrics_row(k, refitted.evaluate_store(test_store))
    row.update(C=fitted["C"], kkt=fitted["kkt"])
    return row


def _l1_curve(model, test_store, train_store, plain, l1_max_nnz, train_name=None):
    """Test metrics of scikit-learn's ℓ1-LR at each prefix's feature count."""
    from ultrafs.features import make_feature_space
    from ultrafs.methods.l1_baseline import l1_logistic_at_counts, read_csr
    from ultrafs.methods.refit import training_targets
    from ultrafs.model import Model
    from ultrafs.progress import phase

    y, _ = training_targets(model, train_store)
    with phase("ℓ1 baselines: reading the training store", total=1,
               unit="store") as shown:
        X = read_csr(train_store, max_nnz=l1_max_nnz)
        shown.update(1)
    counts = [r["n_features"] for r in plain]
    with phase("ℓ1 baselines", total=len(counts), unit="count") as shown:
        fits = l1_logistic_at_counts(
            X, y, counts, on_count=lambda fit: shown.update(
                1, status=f"{fit['target']} features: {fit['nnz']} nonzero at "
                          f"C = {fit['C']:.3g}"))
    del X
    linear = make_feature_space(train_store, poly=1)
    rows = []
    for prefix, fit in zip(plain, fits):
        baseline = Model(features=linear.feature_ids(fit["columns"]),
                         coef=fit["coef"], intercept=fit["intercept"],
                         batches=[0, len(fit["columns"])], loss="logistic",
                         classes=list(model.classes), feature_space=linear.spec())
        row = _metrics_row(prefix["n_batches"], baseline.evaluate_store(test_store))
        row.update(n_features=fit["target"], nnz=fit["nnz"], C=fit["C"],
                   converged=fit["converged"])
        rows.append(row)
    where = train_name if train_name is not None else getattr(train_store, "path", None)
    notes = [f"The l1-LR baseline (scikit-learn LogisticRegression, liblinear, "
             f"l1 penalty, fit_intercept=True, which liblinear penalises too) is "
             f"fitted on the training store "
             f"{os.fspath(where) + ' ' if where is not None else ''}"
             f"loaded in memory as a CSR matrix "
             f"({int(train_store.n_samples):,} x {int(train_store.n_features):,}, "
             f"{int(train_store.nnz):,} values), C bisected on a log scale so "
             f"that its nonzero weights equal each row's feature count, or are "
             f"the largest count found below it."]
    if model.feature_space.get("kind", "linear") != "linear":
        notes.append(f"The model selects {model.feature_space.get('kind')} features "
                     f"(built from the columns, not the columns themselves); the "
                     f"l1-LR baseline sees the {int(train_store.n_features):,} linear "
                     f"columns only.")
    short = [r["n_batches"] for r in rows if r["nnz"] < r["n_features"]]
    if short:
        notes.append("No C gave l1-LR exactly the row's feature count at k = "
                     + ", ".join(map(str, short)) + " (its row has fewer).")
    unconverged = [r["n_batches"] for r in rows if not r["converged"]]
    if unconverged:
        notes.append("liblinear stopped at max_iter before converging at k = "
                     + ", ".join(map(str, unconverged)) + ".")
    return rows, notes


def lambda_curve(model, test_store, train_store) -> tuple[list[dict], list[str]]:
    """Test metrics along the λ path of an ℓ1-LR model.

    The model keeps the weights of its own λ only; the path's other points
    are solved again on ``train_store`` at the λ its history records
    (:func:`ultrafs.methods.l1_method.l1_path`, the model's screening), and
    each point's model is scored on ``test_store``.

    Returns
    -------
    rows : list of dict
        One per λ, decreasing: ``lambda``, ``nnz``, ``accuracy``, ``auc``
        and ``log_loss``; empty when nothing could be solved (a note says
        why).
    notes : list of str
        Sentences for the reader.
    """
    import numpy as np

    from ultrafs.methods.l1_method import l1_model, l1_path
    from ultrafs.progress import phase

    lambdas = sorted({float(r["lambda"]) for r in model.history if "lambda" in r},
                     reverse=True)
    recorded = model.params.get("data_fingerprint")
    given = getattr(train_store, "fingerprint", None)
    if recorded is not None and given is not None and recorded != given:
        return [], ["No test accuracy along λ: the training store is not the data "
                    "the model was fitted on (their fingerprints differ)."]
    if not lambdas:
        return [], ["No test accuracy along λ: the model records no λ path."]
    with phase("ℓ1 path on the training store", total=len(lambdas),
               unit="λ value") as shown:
        path = l1_path(train_store, lambdas=np.asarray(lambdas),
                       screening=model.params.get("screening", "slores"),
                       sequential=model.params.get("sequential", True),
                       callback=lambda record: shown.update(
                           1, status=f"λ = {record['lambda']:.4g}: "
                                     f"{record['nnz']} nonzero"))
    rows = []
    with phase("test scores along λ", total=len(path.records),
               unit="λ value") as shown:
        for i, record in enumerate(path.records):
            metrics = l1_model(path, i, train_store).evaluate_store(test_store)
            rows.append({"lambda": float(record["lambda"]), "nnz": int(record["nnz"]),
                         "accuracy": metrics["accuracy"], "auc": metrics["auc"],
                         "log_loss": metrics.get("log_loss")})
            shown.update(1, status=f"λ = {record['lambda']:.4g}: accuracy "
                                   f"{metrics['accuracy']:.4f}")
    return rows, [f"The path's {len(rows)} λ were solved again on the training store "
                  f"(the model keeps the weights of its own λ only) and each λ's "
                  f"model scored on the test store."]
