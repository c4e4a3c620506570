"""LIBSVM files given where a store is expected: ingested once, then reused.

``ultrafs select --data a9a.svm.bz2`` (and ``evaluate``, ``predict``,
``report``) accepts a LIBSVM / svmlight file, plain or compressed. A path
that is not a store (:func:`ultrafs.store.detect.store_kind` refuses it) and
is a regular file whose first bytes are text or gzip / bz2 / xz
(:func:`ultrafs.store.writers.libsvm_reader.detect_compression`) is taken as
LIBSVM: it is ingested into a cache folder the first time and the cached
store is opened on every later call.

The cache
---------
- **Where**: ``$ULTRAFS_CACHE_DIR``, else ``$XDG_CACHE_HOME/ultrafs``, else
  ``~/.cache/ultrafs``; entries lie in its ``libsvm/`` subfolder (the numba
  kernels use ``numba/`` beside it).
- **Key**: the SHA-256 of the file's bytes (streamed, as stored on disk:
  the compressed bytes of a compressed file) and of the ingest settings
  that change the store (``zero_based``, ``dtype``, ``n_features``,
  ``target``). Renaming or moving the file keeps its entry; changing one
  byte makes a new one.
- **Atomic**: the ingest writes below ``ENTRY.tmp-*`` and renames the
  finished store into place (:mod:`ultrafs.atomic`), so an entry is
  complete or absent; a run killed mid-ingest leaves no entry.
- **Concurrent runs**: the ingest of one entry holds an exclusive
  ``flock`` on ``KEY.lock`` beside it; a second run on the same file waits
  for it (saying so on stderr) and then reuses the entry instead of
  ingesting again. The kernel drops the lock of a killed run.
- **Damage**: an entry folder that is not a store (emptied by hand, say) is
  removed and ingested again under the lock; a store whose contents fail
  their checksums is reported by the command that opens it, naming the
  entry, which can be deleted (any entry can: it is only a cache).

Every ingest and every reuse is said in one line on stderr.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

from ultrafs.errors import StoreFormatError

__all__ = ["cache_root", "is_libsvm_file", "file_digest", "cache_key",
           "cached_store_path", "resolve_data", "ENV_CACHE_DIR"]

#: environment variable naming the cache folder
ENV_CACHE_DIR = "ULTRAFS_CACHE_DIR"
#: subfolder of the cache root holding the ingested LIBSVM files
ENTRIES = "libsvm"
#: bumped when the key or the entry layout changes
KEY_VERSION = 1


def cache_root() -> Path:
    """The cache folder (it may not exist yet)."""
    explicit = os.environ.get(ENV_CACHE_DIR, "")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "ultrafs"
    return Path.home() / ".cache" / "ultrafs"


#: decompressed bytes read to find a file's first line of data
SNIFF_BYTES = 2**20


def _first_data_line(path, kind) -> bytes | None:
    """The first line of ``path`` (decompressed) that is not blank or a
    comment, without its comment; None when there is none in the first
    :data:`SNIFF_BYTES` bytes (a longer line is cut there)."""
    import lzma
    import math

    from ultrafs.errors import InputFormatError
    from ultrafs.store.input_files import open_regular
    from ultrafs.store.writers.decompression import open_decompressed

    try:
        # at most SNIFF_BYTES of output: no expansion bound needed here
        with open_decompressed(open_regular(path, "file"), path, kind,
                               ratio=math.inf) as f:
            head = f.read(SNIFF_BYTES)
    except (OSError, EOFError, lzma.LZMAError, InputFormatError):
        return None
    lines = head.split(b"\n")
    for k, line in enumerate(lines):
        text = line.split(b"#", 1)[0].strip()
        if text:
            if k == len(lines) - 1 and len(head) == SNIFF_BYTES:
                # cut by the sniff window: its last token may be partial
                text = text.rsplit(None, 1)[0] if len(text.split()) > 1 else text
            return text
    return None


def _number(token: bytes, parse) -> bool:
    try:
        parse(token)
        return True
    except ValueError:
        return False


def _looks_like_libsvm_line(line: bytes) -> bool:
    """Whether a line reads ``label [qid:Q] index:value ...`` (numbers)."""
    label, *features = line.split()
    if not _number(label, float):
        return False
    for token in features:
        index, colon, value = token.partition(b":")
        if not colon or not _number(value, float):
            return False
        if index != b"qid" and not _number(index, int):
            return False
    return True


def is_libsvm_file(path) -> bool:
    """Whether ``path`` is a regular file that is no store and looks like LIBSVM.

    A store (Zarr or Parquet-long folder, Parquet file) is never LIBSVM;
    neither is a folder, a missing path, a file whose first bytes name
    another format (zip, PNG, zstd...: ``detect_compression`` refuses them)
    nor one whose first line of data does not read ``label index:value
    ...`` (a text file that is something else: it is refused as no store,
    in one line, before any ingest is announced). A file without a line of
    data (empty, comments only) counts as LIBSVM: its ingest says what is
    wrong.
    """
    from ultrafs.store.detect import store_kind
    from ultrafs.store.writers.libsvm_reader import detect_compression
    from ultrafs.errors import InputFormatError

    path = os.fspath(path)
    if "://" in path or not os.path.isfile(path):
        return False
    try:
        store_kind(path)
        return False
    except StoreFormatError:
        pass
    try:
        kind = detect_compression(path)
    except InputFormatError:
        return False
    line = _first_data_line(path, kind)
    return line is None or _looks_like_libsvm_line(line)


def file_digest(path, chunk=4 * 2**20) -> str:
    """SHA-256 of a file's bytes, streamed."""
    from ultrafs.store.input_files import open_regular

    digest = hashlib.sha256()
    with open_regular(path, "file") as f:
        while True:
            block = f.read(chunk)
            if not block:
                break
            digest.update(block)
    return digest.hexdigest()


def cache_key(content_digest, *, zero_based=False, dtype="float32", n_features=None,
              target=None) -> str:
    """Name of the entry of a file's content ingested with these settings."""
    settings = {"version": KEY_VERSION, "content": content_digest,
                "zero_based": bool(zero_based), "dtype": str(dtype),
                "n_features": None if n_features is None else int(n_features),
                "target": "auto" if target is None else str(target)}
    text = json.dumps(settings, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def cached_store_path(key) -> Path:
    """Where the entry ``key`` lives (it may not exist)."""
    return cache_root() / ENTRIES / f"{key}.zarr"


def _say(message, echo):
    if echo is None:
        print(message, file=sys.stderr, flush=True)
    else:
        echo(message)


def _is_entry(path: Path) -> bool:
    from ultrafs.store.detect import store_kind

    try:
        return store_kind(path) == "zarr"
    except StoreFormatError:
        return False


def _locked(lock_path: Path, source, echo):
    """An exclusive flock on ``lock_path``; waits (saying so) when held."""
    import contextlib
    import errno
    import fcntl

    @contextlib.contextmanager
    def hold():
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                _say(f"waiting for another ultrafs run that is ingesting {source} "
                     "into the cache", echo)
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    return hold()


def resolve_data(path, *, zero_based=False, dtype="float32", n_features=None,
                 target=None, echo=None, ingest_options=None, also_targets=()) -> str:
    """The store to open for ``path``: itself, or the cached ingest of a LIBSVM file.

    Parameters
    ----------
    path : str
        What the user gave (``--data``, ``--test``...).
    zero_based, dtype, n_features, target
        Ingest settings (see :func:`ultrafs.store.writers.libsvm.ingest_libsvm`);
        part of the key.
    echo : callable, optional
        Writes one line for the user (default: ``print`` to stderr).
    ingest_options : dict, optional
        Further keyword arguments of ``ingest_libsvm`` that do not change
        the store (``memory_budget``, ``progress``...).
    also_targets : sequence of (None or str), optional
        Other targets whose existing entry serves as well, looked for (in
        this order) before the entry of ``target``: ``predict`` asks for
        ``target="none"`` (labels not needed) but reads the features of the
        labelled entry ``select`` made (``also_targets=(None,)``) just as
        well; only ``target`` is ever ingested.

    Returns
    -------
    str
        ``path`` itself when it is not a LIBSVM file (a store, or anything
        :func:`ultrafs.store.open_store` will refuse with its own message),
        else the cached store's path.
    """
    if path is None or not is_libsvm_file(path):
        return path
    from ultrafs.store.writers.libsvm import ingest_libsvm

    digest = file_digest(path)
    for other in also_targets:
        entry = cached_store_path(cache_key(digest, zero_based=zero_based, dtype=dtype,
                                            n_features=n_features, target=other))
        if _is_entry(entry):
            _say(f"reusing the cached store of {path} ({entry})", echo)
            return str(entry)
    key = cache_key(digest, zero_based=zero_based, dtype=dtype, n_features=n_features,
                    target=target)
    entry = cached_store_path(key)
    if _is_entry(entry):
        _say(f"reusing the cached store of {path} ({entry})", echo)
        return str(entry)
    entry.parent.mkdir(parents=True, exist_ok=True)
    with _locked(entry.parent / f"{key}.lock", path, echo):
        if _is_entry(entry):     # another run ingested it while we waited
            _say(f"reusing the cached store of {path} ({entry})", echo)
            return str(entry)
        if os.path.lexists(entry):
            # not a store (damaged by hand): the lock is ours, replace it
            if os.path.isdir(entry) and not os.path.islink(entry):
                shutil.rmtree(entry)
            else:
                os.unlink(entry)
        _say(f"ingesting {path} into the cache ({entry}); later runs on the same "
             "file reuse it", echo)
        ingest_libsvm(path, entry, dtype=dtype, zero_based=zero_based,
                      n_features=n_features, target=target,
                      command=f"ultrafs cache of {os.path.abspath(path)}",
                      **(ingest_options or {}))
    return str(entry)
