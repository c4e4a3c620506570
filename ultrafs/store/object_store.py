"""Stores at fsspec URLs (``s3://bucket/train.zarr``, ``s3://bucket/train.parquet``):
options, bounded waits, publishing and the published check.

An object store has no rename, so a store cannot appear whole by renaming
a finished folder, as on a local disk.  ``ultrafs ingest`` writes the store
into a local staging folder first (the ordinary writer, checksums and all),
then :func:`publish_store` uploads every object but the store's root
document (a Zarr group's ``zarr.json``, a Parquet-long store's
``_ultrafs.json``: the ``root_document`` parameter) and uploads that one
last: it holds ``complete: true`` and the metadata checksum, and a reader
(:func:`check_published`) refuses a prefix without it in one line.  A store
is thus published by one final metadata write, and a reader sees it whole
or not at all.

Credentials and endpoints come from the usual places: the environment
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``,
``AWS_PROFILE``...: botocore reads them, in the driver and in every worker
process), fsspec's configuration (``FSSPEC_S3_*`` variables, ``~/.config/fsspec``),
or the ``storage_options`` given to :func:`ultrafs.store.open_store` (the
CLI's ``--storage-option KEY=VALUE``), which a store carries to the
workers when it is pickled.

Every request waits a bounded time: for ``s3://``,
:func:`storage_options_for` sets botocore's connect and read timeouts to
``ULTRAFS_STORAGE_TIMEOUT`` seconds (default :data:`DEFAULT_TIMEOUT_S`)
and one attempt per call, which s3fs repeats up to :data:`S3FS_TRIES`
times on connection errors (its own fixed setting), unless the options
given say otherwise; a server that stops answering is one line after
:func:`request_bound_s`, not a hang.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile

from ultrafs.errors import ParameterError, StoreExistsError, StoreFormatError

__all__ = ["staged_upload", "DEFAULT_TIMEOUT_S", "MAX_ATTEMPTS", "S3FS_TRIES", "ENV_TIMEOUT",
           "storage_options_for", "filesystem", "check_published", "ROOT_DOCUMENT", "ROOT_DOCUMENTS",
           "PARQUET_LONG_DOCUMENT", "publish_store", "zarr_store_of",
           "remote_metadata_parts", "parse_storage_options", "request_bound_s",
           "request_or_fail"]

#: seconds a request may take to connect, and to answer (per attempt)
DEFAULT_TIMEOUT_S = 10.0
#: botocore's attempts per call ("standard" retry mode)
MAX_ATTEMPTS = 1
#: the tries s3fs makes of a call that fails to connect or times out
#: (``S3FileSystem.retries``, a class setting), with backoff 0.1·1.7^i s
S3FS_TRIES = 5
#: environment variable that sets the per-request timeout, in seconds
ENV_TIMEOUT = "ULTRAFS_STORAGE_TIMEOUT"
#: the root document whose presence publishes a store (a Zarr group's)
ROOT_DOCUMENT = "zarr.json"
#: the root document of a Parquet-long store
#: (:data:`ultrafs.store.parquet_long.METADATA_FILE`)
PARQUET_LONG_DOCUMENT = "_ultrafs.json"
#: every root document that publishes an ultrafs store, in the order
#: :func:`check_published` looks for them
ROOT_DOCUMENTS = (ROOT_DOCUMENT, PARQUET_LONG_DOCUMENT)


def _timeout() -> float:
    raw = os.environ.get(ENV_TIMEOUT)
    if raw is None:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and 0 < value <= 3600):
        raise ParameterError(f"{ENV_TIMEOUT}={raw!r}: give seconds, a number in (0, 3600]")
    return value


def request_bound_s() -> float:
    """The longest one request to an ``s3://`` store may wait with the
    default options: every try's connect and read timeouts, plus s3fs'
    backoff between tries (under 2 s): 102 s at the default 10 s."""
    return S3FS_TRIES * MAX_ATTEMPTS * 2 * _timeout() + 2.0


def storage_options_for(url, given=None) -> dict:
    """The fsspec options to open ``url`` with: ``given`` over ultrafs' defaults.

    Parameters
    ----------
    url : str
        An fsspec URL (``s3://bucket/x.zarr``).
    given : dict, optional
        The user's options (``--storage-option``, ``storage_options=``);
        each key replaces the default's, except ``config_kwargs``, merged
        key by key.

    Returns
    -------
    dict
        For ``s3://``: botocore's ``connect_timeout``, ``read_timeout``
        and ``retries`` (:data:`MAX_ATTEMPTS`, standard mode); other
        protocols: ``given`` as it is.
    """
    given = dict(given or {})
    if not str(url).startswith(("s3://", "s3a://")):
        return given
    timeout = _timeout()
    config = {"connect_timeout": timeout, "read_timeout": timeout,
              "retries": {"max_attempts": MAX_ATTEMPTS, "mode": "standard"}}
    config.update(given.pop("config_kwargs", None) or {})
    options = {"config_kwargs": config}
    options.update(given)
    return options


def parse_storage_options(pairs) -> dict:
    """``--storage-option KEY=VALUE`` pairs as a dict: each VALUE read as
    JSON when it parses (``true``, ``3``, ``{"region_name": "x"}``), else as
    text (``http://127.0.0.1:9000``)."""
    options = {}
    for pair in pairs or ():
        key, sep, value = str(pair).partition("=")
        if not sep or not key.strip():
            raise ParameterError(f"--storage-option {pair!r}: give KEY=VALUE "
                                 "(e.g. endpoint_url=http://127.0.0.1:9000)")
        try:
            options[key.strip()] = json.loads(value)
        except ValueError:
            options[key.strip()] = value
    return options


def filesystem(url, storage_options=None):
    """``(fs, root)``: the fsspec filesystem of ``url`` and the path in it."""
    import fsspec

    try:
        return fsspec.core.url_to_fs(url, **storage_options_for(url, storage_options))
    except (ImportError, ValueError) as exc:
        raise StoreFormatError(f"{url}: cannot open this URL ({_first_line(exc)}); "
                               "for s3:// install s3fs (pip install 'ultrafs[cloud]')"
                               ) from None


def zarr_store_of(url, storage_options=None, *, read_only=True):
    """zarr-python's store of ``url`` (``FsspecStore``), with the options."""
    from zarr.storage import FsspecStore

    try:
        return FsspecStore.from_url(url, storage_options=storage_options_for(
            url, storage_options), read_only=read_only)
    except (ImportError, ValueError, TypeError) as exc:
        raise StoreFormatError(f"{url}: cannot open this URL ({_first_line(exc)}); "
                               "for s3:// install s3fs (pip install 'ultrafs[cloud]')"
                               ) from None


def _first_line(exc) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def request_or_fail(what, url, call):
    """``call()``, its failures (no answer, refused, denied) one line naming ``url``."""
    try:
        return call()
    except (StoreFormatError, StoreExistsError, ParameterError):
        raise
    except FileNotFoundError:
        raise
    except Exception as exc:  # botocore, aiohttp and fsspec raise many kinds
        raise StoreFormatError(f"{url}: cannot {what} ({_first_line(exc)})") from None


def check_published(url, storage_options=None, root_document=ROOT_DOCUMENT) -> str:
    """Refuse a URL that holds no published store, in one line.

    Parameters
    ----------
    url : str
    storage_options : dict, optional
    root_document : str or tuple of str
        The document whose presence publishes the store (``zarr.json``, a
        Parquet-long store's ``_ultrafs.json``), or several, looked for in
        order (:data:`ROOT_DOCUMENTS`: whichever kind of store it is).

    Returns
    -------
    str
        The root document found.

    Raises
    ------
    StoreFormatError
        Nothing at ``url``; objects but no root document (an ingest still
        uploading, or one interrupted); or the server did not answer
        (within :func:`request_bound_s`).
    """
    documents = (root_document,) if isinstance(root_document, str) else tuple(root_document)
    fs, root = filesystem(url, storage_options)
    fs.invalidate_cache(root)
    for name in documents:
        document = f"{root.rstrip('/')}/{name}"
        if request_or_fail("reach the object store", url, lambda key=document: fs.exists(key)):
            return name
    if request_or_fail("list the object store", url, lambda: bool(_listing(fs, root))):
        raise StoreFormatError(
            f"{url}: not a published store: it holds objects but no {' or '.join(documents)} "
            "at its root (an ingest still uploading, or one interrupted)")
    raise StoreFormatError(f"{url}: not an ultrafs store (no such store)")


def _listing(fs, root):
    """The first level under ``root`` (one listing request), [] when empty."""
    try:
        fs.invalidate_cache(root)
        return fs.ls(root, detail=False)
    except FileNotFoundError:
        return []


def remote_metadata_parts(url, names, storage_options=None):
    """``(name, parsed zarr.json)`` of each array named, read from ``url``
    (those absent skipped): what the metadata checksum covers."""
    fs, root = filesystem(url, storage_options)
    parts = []
    for name in names:
        document = f"{root.rstrip('/')}/{name}/zarr.json"
        try:
            raw = request_or_fail("read the store's metadata", url, lambda: fs.cat_file(document))
        except FileNotFoundError:
            continue
        try:
            parts.append((name, json.loads(raw)))
        except ValueError as exc:
            raise StoreFormatError(f"{url}: corrupt store: cannot read {name}/zarr.json "
                                   f"({exc})") from None
    return parts


def publish_store(local, url, storage_options=None, *, overwrite=False,
                  root_document=ROOT_DOCUMENT) -> None:
    """Upload the finished store folder ``local`` to ``url``, its root
    document last: the store appears whole or not at all.

    Parameters
    ----------
    local : path
        A complete store written by an ultrafs writer.
    url : str
        Where to publish it (``s3://bucket/name.zarr``).
    storage_options : dict, optional
    overwrite : bool
        Replace a store already published at ``url`` (unpublished first,
        by removing its root document, whichever of :data:`ROOT_DOCUMENTS`
        it is, then removed); without it, one line refusing.  Objects under
        ``url`` that are not a published store (an interrupted upload) are
        replaced only with ``overwrite``.
    root_document : str
        The document of ``local`` uploaded last (``zarr.json``, or
        ``_ultrafs.json`` for a Parquet-long store).

    Raises
    ------
    StoreExistsError, StoreFormatError
        One line naming ``url``; after a failed upload the objects written
        are removed (best effort) and nothing is published.
    """
    fs, root = filesystem(url, storage_options)
    root = root.rstrip("/")
    document = f"{root}/{root_document}"
    published, leftovers = _occupant(fs, root, url, overwrite)
    if leftovers:
        if published:
            _refuse_foreign(fs, published, url)
            request_or_fail("unpublish the old store", url, lambda: fs.rm_file(published))
        request_or_fail("remove the old store", url, lambda: fs.rm(root, recursive=True))
    local = os.fspath(local)
    sources, targets = [], []
    for folder, _, files in os.walk(local):
        for name in sorted(files):
            source = os.path.join(folder, name)
            relative = os.path.relpath(source, local).replace(os.sep, "/")
            if relative != root_document:
                sources.append(source)
                targets.append(f"{root}/{relative}")
    try:
        if sources:
            request_or_fail("upload the store", url, lambda: fs.put(sources, targets))
        request_or_fail("publish the store", url, lambda: fs.put_file(
            os.path.join(local, root_document), document))
    except BaseException:
        try:
            fs.rm(root, recursive=True)
        except Exception:  # the server may be gone: the prefix stays unpublished
            pass
        raise


def _occupant(fs, root, url, overwrite):
    """``(published, leftovers)`` at ``root``: the root document of a store
    published there (or None) and whether anything is there at all; one
    line refusing either unless ``overwrite``."""
    fs.invalidate_cache(root)
    published = None
    for name in ROOT_DOCUMENTS:
        if request_or_fail("reach the object store", url,
                           lambda key=f"{root}/{name}": fs.exists(key)):
            published = f"{root}/{name}"
            break
    leftovers = published is not None or request_or_fail(
        "list the object store", url, lambda: bool(_listing(fs, root)))
    if leftovers and not overwrite:
        what = ("already exists" if published else
                "holds objects but no published store (an interrupted ingest?)")
        raise StoreExistsError(f"{url}: {what}: use overwrite=True to replace it")
    return published, leftovers


def _refuse_foreign(fs, document, url) -> None:
    """Refuse to replace a root document that is not an ultrafs store's (a
    Zarr group's attributes, or the Parquet-long metadata, name its format)."""
    try:
        parsed = json.loads(fs.cat_file(document))
        attrs = (parsed.get("attributes", {}) if document.endswith(ROOT_DOCUMENT)
                 else parsed)
        attrs.get("format")
    except (ValueError, AttributeError):
        attrs = {}
    if not str(attrs.get("format", "")).startswith("ultrafs-"):
        raise StoreExistsError(f"{url}: exists and is not an ultrafs store; refusing to "
                               "replace it")


@contextlib.contextmanager
def staged_upload(url, storage_options=None, *, overwrite=False, root_document=ROOT_DOCUMENT):
    """A local folder to write the store of ``url`` in, published on success.

    Refuses at once (before any work) a ``url`` that holds a store or
    objects, unless ``overwrite``; yields the path of a store to create in
    a fresh staging folder (``tempfile``'s, under ``TMPDIR``: it needs the
    store's size on local disk); when the block ends without an error,
    publishes it with :func:`publish_store`, ``root_document`` last
    (``zarr.json``; ``_ultrafs.json`` for a Parquet-long store).  The
    staging folder is removed on every exit: after an error nothing is
    published and nothing is left.
    """
    fs, root = filesystem(url, storage_options)
    root = root.rstrip("/")
    _occupant(fs, root, url, overwrite)      # refused before any work
    staging = tempfile.mkdtemp(prefix="ultrafs-stage-")
    try:
        local = os.path.join(staging, os.path.basename(root) or "store")
        yield local
        publish_store(local, url, storage_options, overwrite=overwrite,
                      root_document=root_document)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
