"""``ultrafs info``: a store's metadata as JSON."""

from __future__ import annotations

import json

import click

from ultrafs.cli.data import resolve_data_path
from ultrafs.cli.errors import one_line_errors
from ultrafs.cli.options import LABEL_OPTION, STORAGE_OPTION


@click.command()
@click.argument("store_path", metavar="STORE", type=click.Path())
@LABEL_OPTION
@STORAGE_OPTION
@one_line_errors
def info(store_path, label, storage_options):
    """Print a store's metadata as JSON (Zarr, Parquet long or wide; a LIBSVM
    file: its cached store, ingested once and reused)."""
    from ultrafs.store import open_store

    store = open_store(resolve_data_path(store_path), label=label,
                       storage_options=storage_options)
    click.echo(json.dumps(shown_description(store.describe()), indent=1, default=str))


def shown_description(described: dict) -> dict:
    """What ``info`` prints of :meth:`describe`: the attribute ``binary``
    (every stored value is 1) shown as ``binary_values``, not to be read as
    the target's type (``target``) beside it. ``describe()`` itself (and the
    checkpoint fingerprints hashed from it) keeps the store's name."""
    return {("binary_values" if key == "binary" else key): value
            for key, value in described.items()}
