"""The data a command reads: ``--data`` resolved to a store (a LIBSVM
file's cached ingest), and the held-out rows of ``--validation-fraction``
with the scores recorded on them and on ``--test``."""

from __future__ import annotations

import os

import click

from ultrafs.cli.terminal import ingest_progress, progress_enabled


def resolve_data_path(path, *, target=None, also_targets=(), progress=None):
    """The store for ``path``: itself, or a LIBSVM file's cached ingest.

    ``also_targets``: other targets whose existing entry serves as well
    (see :func:`ultrafs.store.libsvm_cache.resolve_data`).  ``progress``:
    the command's ``--progress/--no-progress`` (None: whether stderr is a
    terminal).

    See :mod:`ultrafs.store.libsvm_cache`; the ingest (with progress on a
    terminal) and the reuse are each said in one line on stderr.
    """
    if path is None:
        return None
    if not os.path.isfile(os.fspath(path)):
        # a store folder, a URL or a missing path: no LIBSVM file (what
        # is_libsvm_file says first), without importing the ingest (~70 ms)
        return path
    from ultrafs.store.libsvm_cache import is_libsvm_file, resolve_data

    if not is_libsvm_file(path):
        return path
    with ingest_progress(path, progress_enabled(progress)) as reporter:
        options = {} if reporter is None else {"progress": reporter}

        def say(message):
            if reporter is not None:
                reporter.finish()
            click.echo(message, err=True)

        return resolve_data(path, target=target, echo=say, ingest_options=options,
                            also_targets=also_targets)


def held_out_split(store, fraction, seed):
    """The training rows of ``store`` and the held-out ones (stratified, seeded).

    The split is :func:`ultrafs.methods.validation.stratified_split`, the
    one ``--C auto`` chooses C on; real targets (GSR-FS) are split at
    random (seeded).
    """
    import numpy as np

    from ultrafs.methods.targets import classification_targets
    from ultrafs.methods.validation import stratified_split
    from ultrafs.store.rows import RowSubsetStore

    if getattr(store, "target_type", None) == "continuous":
        # real targets (GSR-FS): nothing to stratify, a seeded random split
        n = int(store.n_samples)
        rows = np.random.default_rng(seed).permutation(n)
        k = min(max(1, int(round(fraction * n))), n - 1)
        train, held = np.sort(rows[k:]), np.sort(rows[:k])
        how = "random"
    else:
        y, _ = classification_targets(store)
        train, held = stratified_split(y, fraction, seed)
        how = "stratified"
    click.echo(f"fitting on {len(train):,} of the {store.n_samples:,} rows; {len(held):,} "
               f"({fraction:g}, {how}, --seed {seed}) held out to score "
               "the model", err=True)
    return RowSubsetStore(store, train), {"rows": held, "fraction": float(fraction),
                                          "seed": int(seed), "n_train": len(train),
                                          "store": RowSubsetStore(store, held)}


def _scores_of(metrics):
    """What a held-out record keeps of an evaluation: accuracy and AUC, or
    RMSE and R² for a continuous target."""
    if "accuracy" in metrics:
        return {"accuracy": metrics["accuracy"], "auc": metrics.get("auc")}
    return {"rmse": metrics["rmse"], "r2": metrics["r2"]}


def held_out_scores(model, held_out, test_store, test_path):
    """Score the model on the held-out rows and the --test store; record both."""
    scores = {}
    if held_out is not None:
        metrics = model.evaluate_store(held_out["store"])
        record = {"method": "holdout", "fraction": held_out["fraction"],
                  "seed": held_out["seed"], "n_train": held_out["n_train"],
                  "n_held_out": int(len(held_out["rows"])), **_scores_of(metrics)}
        model.params["held_out"] = record
        scores["held_out"] = record
    if test_store is not None:
        metrics = model.evaluate_store(test_store)
        record = {"data": os.fspath(test_path), "n_samples": metrics["n_samples"],
                  **_scores_of(metrics)}
        model.params["test"] = record
        scores["test"] = record
    return scores
