"""Ingest of a LIBSVM / svmlight file into a column store.

:func:`ingest_libsvm` reads the file with
:func:`~ultrafs.store.writers.libsvm_reader.iter_libsvm` (chunks of
complete lines, parsed by a numba kernel; values bit-identical to
``sklearn.datasets.load_svmlight_file``) and turns it into an on-disk
column store with an external transpose
(:class:`~ultrafs.store.writers.external_transpose.ExternalTranspose`):
entries arrive row by row and are buffered as int64 keys
``column << 32 | row`` (plus values); whenever the buffer exceeds its share
of ``memory_budget`` (:class:`MemoryPlan`) it is sorted and spilled as a
*run* to a temporary directory.  The store is then written group of
columns by group of columns, each group gathering its slice of every run
with plain reads, so memory stays bounded whatever the file size.  Two
threads share the work: a helper reads and parses the text while the
caller's thread sorts and spills (the kernels release the GIL), and while
the store is written a helper gathers the next group while the caller
checks, hashes and writes the current one.

:class:`~ultrafs.store.writers.libsvm_text_writer.LibsvmTextWriter` goes
the other way for binary rows (the kddb-like generator's ``--libsvm-out``).

Accepted input (``sklearn.datasets.load_svmlight_file`` is the reference):
``label index:value ... [# comment]`` lines; blank and comment-only lines
are skipped; tokens are separated by ASCII whitespace.  Differences from
scikit-learn, all documented in ``docs/FORMAT.md``: indices within a row
need not be sorted (scikit-learn rejects unsorted rows; duplicates are
rejected by both); ``qid:`` fields are rejected; explicit zeros
(``5:0``) are dropped from the store.  Labels are stored as written; their
target type (binary, multiclass or continuous) is detected or checked by
:func:`~ultrafs.store.targets.encode_targets`.
"""

from __future__ import annotations

import queue
import tempfile
import threading
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ultrafs.errors import InputFormatError, ParameterError
from ultrafs.store.base import sparse_id_layout
from ultrafs.store.metadata import MAX_ID_SPACE
from ultrafs.store.targets import check_target, encode_targets
from ultrafs.store.writers.external_transpose import ExternalTranspose, pack_keys
from ultrafs.store.writers.libsvm_reader import (MAX_COLUMN, LibsvmChunk, detect_compression,
                                                 iter_libsvm, stop_producer, check_value_dtype)
from ultrafs.store.writers.zarr_writer import (StoreWriter, balanced_block_bounds,
                                               check_output_path, remove_tree)
from ultrafs.store.zarr_store import CHUNK_ELEMENTS, DEFAULT_BLOCK_NNZ

__all__ = ["ingest_libsvm", "gather_blocks", "MemoryPlan", "DEFAULT_MEMORY_BUDGET",
           "MIN_MEMORY_BUDGET"]

#: default bound on the memory used by :func:`ingest_libsvm` (bytes)
DEFAULT_MEMORY_BUDGET = 256 * 2 ** 20
#: smallest accepted memory budget (bytes)
MIN_MEMORY_BUDGET = 16 * 2 ** 10


# --------------------------------------------------------------------------
# ingest
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class MemoryPlan:
    """How an ingest splits its memory budget."""

    budget: int

    @property
    def buffer_bytes(self) -> int:
        """Buffered entries before a spill (sorting needs about twice that)."""
        return max(int(self.budget * 0.4), 1)

    @property
    def text_block(self) -> int:
        """Bytes of decompressed text parsed at once."""
        return int(min(8 * 2 ** 20, max(16 * 2 ** 10, self.budget // 32)))

    @property
    def group_nnz(self) -> int:
        """Entries per column group while writing the store (~40 bytes each)."""
        return int(max(1024, self.budget // 100))

    @property
    def group_columns(self) -> int:
        """Most columns per group (offsets and counters: ~50 bytes each).

        Bounds a group of wide, nearly empty columns: a test split of
        100,000 kddb rows spreads 2.9M entries over 30M columns.
        """
        return int(max(1024, self.budget // 128))

    def group_bounds(self, indptr) -> np.ndarray:
        """Column groups of about :attr:`group_nnz` entries (a group ends after
        the column that reaches it) and at most :attr:`group_columns` columns."""
        bounds = balanced_block_bounds(indptr, self.group_nnz)
        n_columns = len(indptr) - 1
        width = self.group_columns
        if n_columns > width:
            bounds = np.union1d(bounds, np.arange(width, n_columns, width, dtype=np.int64))
        return bounds

    @property
    def chunk_size(self) -> int:
        """Zarr chunk length (elements): 1M unless the budget is tiny."""
        size = 4096
        while size * 2 <= min(CHUNK_ELEMENTS, self.budget // 64):
            size *= 2
        return size


def _check_ingest_parameters(dtype, n_features, memory_budget, block_nnz):
    dtype = check_value_dtype(dtype)
    if n_features is not None:
        if int(n_features) != n_features or not 0 <= n_features <= MAX_ID_SPACE:
            raise ParameterError(f"n_features must be an integer from 0 to 2**62 (the "
                                 f"store format's bound), got {n_features!r}")
        n_features = int(n_features)
    if int(memory_budget) < MIN_MEMORY_BUDGET:
        raise ParameterError(
            f"memory_budget must be at least {MIN_MEMORY_BUDGET} bytes, got {memory_budget}")
    block_nnz = DEFAULT_BLOCK_NNZ if block_nnz is None else int(block_nnz)
    if block_nnz < 1:
        raise ParameterError(f"block_nnz must be >= 1, got {block_nnz}")
    return dtype, n_features, int(memory_budget), block_nnz


def _describe_call(input_path, output_path, dtype, zero_based, n_features, target):
    extra = "" if n_features is None else f", n_features={n_features}"
    extra += "" if target is None else f", target={target!r}"
    return (f"python: ultrafs.store.writers.libsvm.ingest_libsvm({str(input_path)!r}, "
            f"{str(output_path)!r}, dtype={dtype.name!r}, zero_based={zero_based}{extra})")


def _store_writer(format):
    """The writer class and output-path check of a store ``format``.

    ``"zarr"``: :class:`~ultrafs.store.writers.zarr_writer.StoreWriter`; ``"parquet"``:
    :class:`~ultrafs.store.writers.parquet_long_writer.ParquetLongWriter` (the
    Parquet-long layout).  Both take the same constructor arguments.
    """
    if format == "zarr":
        return StoreWriter, check_output_path
    if format == "parquet":
        from ultrafs.store.writers import parquet_long_writer

        return parquet_long_writer.ParquetLongWriter, parquet_long_writer.check_output_path
    raise ParameterError(f"format must be 'zarr' or 'parquet', got {format!r}")


def _ingest_to_url(input_path, url, storage_options, options, overwrite) -> dict:
    """:func:`ingest_libsvm` into a staging folder, published at ``url``."""
    from ultrafs.store.object_store import staged_upload

    writer_class, _ = _store_writer(options["format"])  # a bad format: before any request
    check_target(options["target"])
    _check_ingest_parameters(options["dtype"], options["n_features"],
                             options["memory_budget"], options["block_nnz"])
    with staged_upload(url, storage_options, overwrite=overwrite,
                       root_document=writer_class.root_document) as local:
        summary = ingest_libsvm(input_path, local, **options)
    summary["output"] = url
    return summary


def ingest_libsvm(input_path, output_path, *, dtype="float32", zero_based=False,
                  n_features=None, memory_budget=DEFAULT_MEMORY_BUDGET, block_nnz=None,
                  command=None, overwrite=False, format="zarr", target=None,
                  progress=None, feature_names=None, storage_options=None) -> dict:
    """Convert a LIBSVM / svmlight file into an on-disk column store.

    Parameters
    ----------
    input_path : str or os.PathLike
        Plain, gzip, bz2 or xz text (detected from the content).
    output_path : str or os.PathLike
        Store directory to create (see ``docs/FORMAT.md``), or the fsspec URL
        of one (``s3://bucket/train.zarr``; ``s3://bucket/train.parquet`` with
        ``format="parquet"``): written in a local staging folder, then
        published with its root document (``zarr.json``, ``_ultrafs.json``)
        last (:mod:`ultrafs.store.object_store`).
    dtype : {"float32", "float64"}
        Value dtype of the store.
    zero_based : bool
        False: file index ``k`` is column ``k - 1`` (feature ids keep the
        file's numbering, ``id_offset == 1``); True: column ``k``
        (``id_offset == 0``).
    n_features : int or None
        Number of columns; None uses the largest index in the file.  An
        explicit value smaller than needed is an error.
    memory_budget : int
        Approximate bound, in bytes, on the memory used for triplets,
        sorting and writing (labels, O(n_samples), and per-column counts,
        O(n_features), come on top).
    block_nnz : int or None
        Target nonzeros per block of the store's default partition.
    command : str or None
        Recorded as ``created_by``; None records the Python call.
    overwrite : bool
        Replace an existing ultrafs store at ``output_path``.
    format : {"zarr", "parquet"}
        Store layout written: Zarr v3, or the Parquet-long table (both in
        ``docs/FORMAT.md``).
    target : None, "auto", "binary", "multiclass" or "continuous"
        Target type of the labels; None (or ``"auto"``) detects it: two
        distinct values are binary, three or more integers multiclass (at
        most :data:`~ultrafs.store.targets.MAX_CLASSES`), anything else
        continuous.  An explicit type must fit the labels.
    progress : callable, optional
        Called with the number of rows parsed so far after every block of
        text (the command line's progress line).
    feature_names : str or os.PathLike, optional
        A UTF-8 names file stored with the data: one name per line, line
        ``k`` (from 0) naming the ``k``-th id (id ``k + 1`` for a 1-based
        file; an empty line leaves it unnamed), or ``id<TAB>name`` lines
        for any subset of ids (the form of the first line decides).
        Checked before the data is read, its ids against ``n_features``
        once that is known (:mod:`ultrafs.store.feature_names`).
    storage_options : dict, optional
        fsspec options of a URL ``output_path`` (``endpoint_url``...).

    Returns
    -------
    summary : dict
        ``input``, ``output``, ``n_samples``, ``n_features``, ``nnz``,
        ``binary``, ``dtype``, ``target``, ``classes`` (``[]`` for a
        continuous target), ``explicit_zeros`` (dropped), ``n_runs`` (runs
        spilled to disk), ``seconds``; ``feature_names`` (the number of
        named features) when a names file was given.

    Raises
    ------
    InputFormatError
        Malformed, binary, empty input, a single label value, labels
        that do not fit ``target``, or a bad names file (one line naming
        the file and, where it applies, the line).  Nothing is left at
        ``output_path``.
    StoreExistsError
        If ``output_path`` exists and ``overwrite`` is False.
    ParameterError
        For an invalid dtype, n_features, memory_budget, block_nnz, format
        or target.
    """
    from ultrafs.store.path_store import is_url

    if is_url(output_path):
        return _ingest_to_url(input_path, output_path, storage_options, dict(
            dtype=dtype, zero_based=zero_based, n_features=n_features,
            memory_budget=memory_budget, block_nnz=block_nnz, command=command,
            format=format, target=target, progress=progress,
            feature_names=feature_names), overwrite)
    if storage_options:
        raise ParameterError(f"{output_path}: storage options apply to URLs (s3://...) only")
    started = time.perf_counter()
    dtype, n_features, memory_budget, block_nnz = _check_ingest_parameters(
        dtype, n_features, memory_budget, block_nnz)
    target = check_target(target)
    writer_class, check_output = _store_writer(format)
    source = Path(input_path)
    output = check_output(output_path, overwrite)
    detect_compression(source)
    if command is None:
        command = _describe_call(source, output, dtype, zero_based, n_features, target)
    plan = MemoryPlan(memory_budget)
    run_dir = Path(tempfile.mkdtemp(prefix=f"{output.name}.runs-", dir=output.parent))
    transpose = ExternalTranspose(run_dir, plan.buffer_bytes)
    try:
        names = None
        if feature_names is not None:
            from ultrafs.store.feature_names import stage_names_file

            names = stage_names_file(feature_names, run_dir / "feature_names.tsv",
                                     id_offset=0 if zero_based else 1)
            if n_features is not None:
                names.check_range(0 if zero_based else 1, n_features)
        stats = _transpose_file(source, transpose, plan, dtype, zero_based, progress)
        labels = stats.pop("labels")
        if len(labels) == 0:
            raise InputFormatError(f"{source}: no samples (empty file)")
        target_type, classes = encode_targets(labels, where=str(source), target=target)
        needed = stats["max_column"] + 1
        if n_features is None:
            n_features = needed
        elif n_features < needed:
            raise InputFormatError(
                f"{source}: n_features={n_features}, but the file has feature index "
                f"{needed - 1 + (0 if zero_based else 1)} (needs {needed} features)")
        if names is not None:
            names.check_range(0 if zero_based else 1, n_features,
                              hint="; give n_features (--n-features) to declare more "
                                   "features than the data uses")
        transpose.finish()
        column_index = None
        if sparse_id_layout(n_features, transpose.n_used_columns()):
            column_ids, used_counts = transpose.used_columns()
            indptr = transpose.compact_indptr(used_counts)
            del used_counts
            column_index = transpose.release_counts_as_index()
        else:
            column_ids = None
            indptr = transpose.indptr(n_features)
        transpose.release_counts()              # indptr holds the same information
        _write_csc(output, transpose, indptr, labels, plan, writer_class, dtype=dtype,
                   column_ids=column_ids, column_index=column_index, id_space=n_features,
                   binary=stats["binary"], target=target_type,
                   id_offset=0 if zero_based else 1,
                   command=command, block_nnz=block_nnz, overwrite=overwrite,
                   feature_names=names,
                   source_attrs={"path": str(source.resolve()),
                                 "bytes": source.stat().st_size,
                                 "format": "libsvm", "zero_based": bool(zero_based),
                                 "explicit_zeros_dropped": stats["explicit_zeros"]})
        n_spilled = transpose.n_spilled
    finally:
        transpose.close()
        remove_tree(run_dir)
    return {"input": str(source), "output": str(output), "n_samples": len(labels),
            "n_features": int(len(indptr) - 1), "nnz": int(indptr[-1]),
            **({} if column_ids is None else {"id_space": int(n_features)}),
            "binary": stats["binary"], "dtype": dtype.name, "target": target_type,
            "classes": [float(c) for c in classes],
            "explicit_zeros": stats["explicit_zeros"], "n_runs": n_spilled,
            **({} if names is None else {"feature_names": names.count}),
            "seconds": time.perf_counter() - started}


@dataclass
class _KeyedChunk:
    """A parsed chunk, its entries packed as keys ``column << 32 | row``."""

    labels: np.ndarray
    keys: np.ndarray
    values: np.ndarray | None      # None: every kept value is 1
    max_column: int
    explicit_zeros: int


def _key_chunk(chunk: LibsvmChunk, n_rows: int) -> _KeyedChunk:
    """Drop explicit zeros and pack the keys ``column << 32 | row``."""
    if n_rows + chunk.n_rows >= 2 ** 31:
        raise InputFormatError("more than 2**31 - 1 samples")
    max_column = int(chunk.columns.max()) if chunk.columns.size else -1
    if max_column > MAX_COLUMN:                  # reported by the consumer
        return _KeyedChunk(chunk.labels, np.zeros(0, np.int64), None, max_column, 0)
    rows = np.repeat(np.arange(n_rows, n_rows + chunk.n_rows, dtype=np.int32),
                     chunk.row_nnz)
    nonzero = chunk.values != 0
    explicit_zeros = 0
    columns, values = chunk.columns, chunk.values
    if not nonzero.all():
        explicit_zeros = int(len(nonzero) - np.count_nonzero(nonzero))
        columns, rows, values = columns[nonzero], rows[nonzero], values[nonzero]
    keys = pack_keys(columns, rows)
    if np.all(values == 1):
        values = None
    return _KeyedChunk(chunk.labels, keys, values, max_column, explicit_zeros)


def _keyed_chunks(source, plan, dtype, zero_based):
    """:func:`iter_libsvm` chunks, keyed (:func:`_key_chunk`), in order."""
    n_rows = 0
    for chunk in iter_libsvm(source, zero_based=zero_based, dtype=dtype,
                             block_size=plan.text_block):
        try:
            sorted_chunk = _key_chunk(chunk, n_rows)
        except InputFormatError as exc:
            raise InputFormatError(f"{source}: {exc}") from None
        n_rows += chunk.n_rows
        yield sorted_chunk


def _in_thread(make_iterator, name: str, depth: int = 2):
    """Yield the items of ``make_iterator()``, produced in a helper thread.

    The helper runs ahead by at most ``depth`` items; its exceptions are
    raised here, in order, after the items produced before them.  Leaving
    the loop early (an exception, ``close()``) stops and joins the helper.
    """
    items = queue.Queue(maxsize=depth)
    stop = threading.Event()
    end = object()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                items.put(item, timeout=0.05)
                return True
            except queue.Full:
                pass
        return False

    def produce():
        try:
            iterator = make_iterator()
            try:
                for item in iterator:
                    if not put((item, None)):
                        return
            finally:
                close = getattr(iterator, "close", None)
                if close is not None:
                    close()
            put((end, None))
        except BaseException as exc:         # handed to the consumer
            put((None, exc))

    worker = threading.Thread(target=produce, name=name, daemon=True)
    worker.start()
    try:
        while True:
            item, exc = items.get()
            if exc is not None:
                raise exc
            if item is end:
                return
            yield item
    finally:
        stop_producer(stop, worker, items)


def _transpose_file(source, transpose, plan, dtype, zero_based, progress=None) -> dict:
    """Parse the whole file into ``transpose``; return labels and counts.

    Reading, parsing and keying each chunk run in a helper thread
    (:func:`_in_thread`; the kernels release the GIL) while this thread
    sorts, counts and spills the buffered keys: both cores busy.
    """
    label_parts = []
    max_column = -1
    n_rows = 0
    explicit_zeros = 0
    binary = True
    with closing(_in_thread(lambda: _keyed_chunks(source, plan, dtype, zero_based),
                            "ultrafs-parse")) as chunks:
        for chunk in chunks:
            label_parts.append(chunk.labels)
            max_column = max(max_column, chunk.max_column)
            if max_column > MAX_COLUMN:
                offset = 0 if zero_based else 1
                raise InputFormatError(
                    f"{source}: feature index {max_column + offset} is larger than "
                    f"the supported maximum {MAX_COLUMN + offset}")
            n_rows += len(chunk.labels)
            if progress is not None:
                progress(n_rows)
            explicit_zeros += chunk.explicit_zeros
            binary = binary and chunk.values is None
            transpose.add_keys(chunk.keys, chunk.values)
            del chunk
    labels = (np.concatenate(label_parts) if label_parts
              else np.zeros(0, dtype=np.float64))
    return {"labels": labels, "max_column": max_column,
            "explicit_zeros": explicit_zeros, "binary": binary}


def _write_csc(output, transpose, indptr, labels, plan, writer_class, *, dtype, binary,
               target, id_offset, command, block_nnz, overwrite, source_attrs,
               column_ids=None, column_index=None, id_space=None,
               feature_names=None) -> None:
    """Write the transposed triplets as a store, one column group at a time."""
    n_features = len(indptr) - 1
    layout = {} if column_ids is None else {"column_ids": column_ids, "id_space": id_space}
    writer = writer_class(output, n_samples=len(labels), n_features=n_features, **layout,
                          nnz=int(indptr[-1]), dtype=dtype, binary=binary, labels=labels,
                          id_offset=id_offset, command=command, block_nnz=block_nnz,
                          overwrite=overwrite, chunk_size=plan.chunk_size,
                          attrs={"source": source_attrs}, labels_source=str(output),
                          target=target, feature_names=feature_names, indptr=indptr)
    with writer:
        bounds = plan.group_bounds(indptr)
        with closing(gather_blocks(transpose, bounds, indptr, dtype, column_ids,
                                   column_index)) as blocks:
            for first, stop, rows, values in blocks:
                if not binary and values is None:
                    values = np.ones(len(rows), dtype=dtype)
                writer.append(indptr[first:stop + 1] - indptr[first], rows,
                              None if binary else values)
        writer.close()


def gather_blocks(transpose, bounds, indptr, value_dtype, column_ids=None,
                  column_index=None):
    """:meth:`ExternalTranspose.iter_blocks`, gathered one block ahead in a helper thread.

    The next block's slices are read and scattered while the caller
    checks, hashes, compresses and writes the current one.  Close the
    generator (``contextlib.closing``) when leaving early.
    """
    return _in_thread(lambda: transpose.iter_blocks(bounds, indptr, value_dtype, column_ids,
                                                    column_index),
                      "ultrafs-gather", depth=1)
