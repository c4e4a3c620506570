"""kddb-like synthetic stores: Zipf-distributed sparse binary rows, planted labels.

:func:`make_kddb_like` writes an ultrafs column store (``docs/FORMAT.md``)
that imitates the shape of kddb (KDD Cup 2010, ~29 binary features per row
among millions of columns, heavily skewed column frequencies) and labels it
with a planted sparse model that has both linear and degree-2 (cross)
terms, so that a benchmark can count how many planted features a selector
recovers.

Generative model
----------------
*Columns.*  Column *rank* ``r`` (0 = most frequent) is drawn with
probability ``p_r ∝ 1 / (r + 1) ** zipf_exponent``.  Ranks are mapped to
column numbers by a seeded random permutation (``shuffle_columns=True``,
the default), so that frequent columns are spread over the whole id range
as in real data; with ``shuffle_columns=False`` column ``r`` is rank ``r``.

*Rows.*  Row ``i`` asks for ``K_i ~ Poisson(nnz_per_row)`` features,
clipped to ``[1, n_features]``, and gets a weighted sample of ``K_i``
distinct ranks without replacement (successive sampling: draw with the
probabilities above, drop the ranks the row already has, draw again for
the missing ones, and after a few rounds draw directly among the ranks the
row lacks; :func:`sample_row_sets`).  All values are 1 (binary store).

*Planted model.*  ``n_linear`` single features and ``n_cross`` pairs, all
on distinct columns, none on the most frequent column (rank 0, present in
almost every row):

Expected row frequencies ``f_r`` come from Rosén's approximation of
successive sampling (:meth:`ZipfColumns.expected_frequency`, within a few
percent of the measured ones).

- linear features are drawn among the ranks ``1..R`` whose expected row
  frequency is at least :data:`LINEAR_MIN_FREQUENCY`, with probability
  ``∝ 1 / (rank + 1)`` (log-uniform in rank: a few head features that
  appear in a large share of rows and cover most rows, and a tail of rarer
  ones that are harder to find);
- pair members are drawn uniformly among the remaining ranks whose
  expected row frequency lies in ``[CROSS_MIN_FREQUENCY,
  CROSS_MAX_FREQUENCY]``, then paired at random.  Independent columns
  with such frequencies co-occur in only ``f_j f_k`` of the rows, so
  co-occurrence is *injected*: in a row that holds the more frequent
  member ``j`` (the *source*) but not ``k``, ``k`` is added with
  probability ``q = (c - f_j f_k) / (f_j (1 - f_k))`` (clipped to
  ``[0, 1]``), which makes the expected share of rows holding both equal
  to ``c = min_cooccurrence`` (unless ``f_j < c``, or ``f_j f_k > c``
  already).  The realised counts are recorded in the store attributes
  (with ``c = 1 %`` and 10^5 rows: 0.93 % to 1.32 % of the rows).

When a frequency window holds too few ranks (small ``n_features``), the
most frequent unused ranks after rank 0 fill in.  Weights have random
signs and magnitudes uniform in ``[1, 2]``.

*Labels.*  ``score_i = Σ_j w_j x_ij + Σ_(j,k) w_jk x_ij x_ik``;
``y_i = +1`` if ``score_i + noise · ε_i > t`` else ``−1`` with
``ε_i ~ N(0, 1)``.  The threshold ``t`` (:func:`balanced_threshold`) is
computed from the training scores: among the cuts that leave between 40 %
and 60 % of the rows below, the one with the fewest rows within reach of
the noise.  Scores are sums of a few weights, so they cluster in atoms
(e.g. every row without a planted feature scores exactly 0); a plain
median would cut through such an atom and make its labels pure noise.
A test split uses the same model and the training threshold.

Reproducibility
---------------
Everything is drawn from ``numpy.random.SeedSequence(seed)`` streams: one
for the model and the column permutation, one per chunk of ``chunk_rows``
rows (training and test chunks apart).  The same arguments give
bit-identical arrays on the same platform, whatever the memory budget and
the number of threads (``n_threads`` workers generate chunks, which are
consumed in chunk order); ``chunk_rows`` is part of the definition of the
random streams (recorded in the ``generator`` attribute), so changing it
changes the data.

Memory and speed
----------------
Rows are generated ``chunk_rows`` at a time by ``n_threads`` worker
threads (at most ``2 n_threads`` chunks in flight) and fed, in chunk order,
to the external transpose of LIBSVM ingest
(:class:`ultrafs.store.writers.external_transpose.ExternalTranspose`), which spills
sorted runs to disk; the store is then written one column group at a time
through :class:`ultrafs.store.writers.zarr_writer.StoreWriter` (atomic
publish), with the LIBSVM text, when asked for, written by a helper thread
meanwhile.  Memory is bounded by design:

- ``memory_budget``: the transpose's buffer and the spare array of its
  radix sort (0.8 of it), then, while writing, the last run (kept in
  memory) and two column groups (at most ``budget / 100`` entries and
  ``budget / 128`` columns each);
- O(n_features), 16 bytes per column while a split is generated: the
  cumulative weights (float64) and the permutation (int32), dropped while a
  store is written and rebuilt for the test split, and the column counts
  (int32); 8 bytes per column (the int64 column offsets) while a store is
  written; at the start only, the expected frequencies (two float64
  arrays) while the model is planted;
- O(n_samples), 8 bytes per row: the noiseless scores while generating
  (for the threshold; the noisy ones go to a file), then the float64
  labels while writing;
- the guide table of the rank draws (16 MB) and the chunks in flight
  (about 100 bytes per entry each).

Ranks are drawn through the guide table (:func:`ultrafs.kernels.sampling.search_right`:
the integers ``searchsorted`` gives, about four times faster than sorting
the draws first), and each row's draws are sorted by
:func:`~ultrafs.kernels.sampling.sort_grouped`.  Measured on 2 cores at
kddb's width (29,890,095 columns, default budget): see ``bench/README.md``
(``bench/kddb_ingest.py``).

Store attributes
----------------
Besides the format's attributes (``id_offset`` is 0: ids are column
numbers), each store holds ``generator`` (the arguments, and ``split``:
``"train"`` or ``"test"``) and ``planted``: ``linear`` (ids), ``cross``
(pairs ``[j, k]``, ``j < k``), ``weights`` (``{"linear": [...], "cross":
[...]}``), ``threshold``, ``noise``, ``cross_source`` and
``cross_injection`` (see above), ``linear_counts`` and ``cross_counts``
(rows of that store holding each feature / both members of each pair),
and the frequency ranks of the planted columns.  The training store is
published before the test split is generated.
"""

from __future__ import annotations

import math
import os
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from ultrafs.errors import ParameterError, UltraFSError
from ultrafs.datasets.kddb_model import (DEFAULT_MIN_COOCCURRENCE, DEFAULT_NOISE, ZipfColumns,
                                         balanced_threshold, generate_chunk, plant_model)
# MemoryPlan: the budget split of LIBSVM ingest, reused so both agree on chunk sizes
from ultrafs.store.writers.external_transpose import ExternalTranspose, pack_keys
from ultrafs.store.writers.libsvm import MIN_MEMORY_BUDGET, MemoryPlan, gather_blocks
from ultrafs.store.writers.libsvm_text_writer import LibsvmTextWriter, check_text_output
from ultrafs.store.writers.zarr_writer import StoreWriter, check_output_path, remove_tree
from ultrafs.store.zarr_store import DEFAULT_BLOCK_NNZ

__all__ = ["make_kddb_like", "DEFAULT_NNZ_PER_ROW", "DEFAULT_ZIPF_EXPONENT",
           "DEFAULT_CHUNK_ROWS"]

#: default mean number of features per row (kddb: about 29)
DEFAULT_NNZ_PER_ROW = 29
#: default exponent ``s`` of the Zipf column distribution
DEFAULT_ZIPF_EXPONENT = 1.1
#: default number of planted linear features
DEFAULT_N_LINEAR = 20
#: default number of planted cross pairs
DEFAULT_N_CROSS = 20
#: default rows per chunk (and per random stream)
DEFAULT_CHUNK_ROWS = 8192
#: default memory budget of the transpose (bytes)
DEFAULT_MEMORY_BUDGET = 256 * 2 ** 20
#: most threads generating chunks by default (``n_threads=None``)
MAX_THREADS = 8
# spawn keys of the random streams
_STREAM_MODEL, _STREAM_TRAIN, _STREAM_TEST = 0, 1, 2


def _rng(seed: int, *key: int) -> np.random.Generator:
    """The random generator of one stream: ``SeedSequence(seed, spawn_key=key)``."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


# --------------------------------------------------------------------------
# streaming a split into a store
# --------------------------------------------------------------------------
@dataclass
class _ChunkResult:
    """One generated chunk, ready for the transpose (see :func:`_chunk_task`)."""

    first: int
    keys: np.ndarray               # column << 32 | row (split rows), in row order
    scores: np.ndarray             # noiseless scores
    noisy: np.ndarray              # scores + noise
    linear_counts: np.ndarray
    cross_counts: np.ndarray
    text: tuple | None             # (row_nnz int32, columns int32 increasing per row)


def _chunk_task(index, first, n_rows, *, seed, stream, zipf, model, nnz_per_row,
                text) -> _ChunkResult:
    """Generate chunk ``index`` (rows ``first:first + n_rows``); runs in a worker thread.

    A pure function of its arguments: chunk ``index`` draws from its own
    stream ``SeedSequence(seed, spawn_key=(stream, index))``.
    """
    chunk = generate_chunk(_rng(seed, stream, index), n_rows, zipf, model, nnz_per_row)
    columns = zipf.column_of_rank[chunk.ranks]
    keys = pack_keys(columns, (chunk.rows + first).astype(np.int32))
    rows_text = None
    if text:
        by_row = chunk.rows << 32
        by_row |= columns
        by_row.sort()
        rows_text = (np.bincount(chunk.rows, minlength=n_rows).astype(np.int32),
                     by_row.astype(np.int32))          # low 32 bits: the column
    return _ChunkResult(first, keys, chunk.scores, chunk.scores + chunk.noise,
                        chunk.linear_counts, chunk.cross_counts, rows_text)


def _ordered_map(function, jobs, n_threads: int):
    """``function(*job)`` for every job, yielded in job order.

    With ``n_threads > 1`` the calls run in a thread pool, at most
    ``n_threads`` at once and ``n_threads`` finished ones waiting, so
    memory holds about ``2 n_threads`` chunks.  Close the generator
    (``contextlib.closing``) when leaving early: the waiting calls are
    cancelled and the running ones joined.
    """
    if n_threads <= 1:
        for job in jobs:
            yield function(*job)
        return
    with ThreadPoolExecutor(n_threads, thread_name_prefix="ultrafs-kddb") as pool:
        pending = deque()
        try:
            for job in jobs:
                pending.append(pool.submit(function, *job))
                if len(pending) >= 2 * n_threads:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


@dataclass
class _Split:
    """A generated split: transposed entries, scores and, on disk, noisy scores."""

    scores: np.ndarray
    noisy_path: Path
    linear_counts: np.ndarray
    cross_counts: np.ndarray
    rows_path: Path | None          # row-ordered entries for the LIBSVM text
    chunk_sizes: list               # (n_rows, nnz) per chunk, with rows_path


def _generate_split(transpose, n_samples, work_dir, *, seed, stream, chunk_rows, zipf,
                    model, nnz_per_row, n_threads, text) -> _Split:
    """Generate every chunk of one split into ``transpose``.

    Chunks are generated by ``n_threads`` worker threads and consumed in
    order, so the result does not depend on the threads.  Noisy scores
    (and, for the LIBSVM text, each row's columns) go to files in
    ``work_dir``; only the noiseless scores (8 bytes per row, for the
    threshold) stay in memory.
    """
    scores = np.empty(n_samples, dtype=np.float64)
    linear_counts = np.zeros(len(model.linear_ranks), dtype=np.int64)
    cross_counts = np.zeros(len(model.cross_ranks), dtype=np.int64)
    noisy_path = work_dir / "noisy.bin"
    rows_path = work_dir / "rows.bin" if text else None
    chunk_sizes = []
    jobs = ((index, first, min(chunk_rows, n_samples - first))
            for index, first in enumerate(range(0, n_samples, chunk_rows)))
    task = partial(_chunk_task, seed=seed, stream=stream, zipf=zipf, model=model,
                   nnz_per_row=nnz_per_row, text=text)
    with open(noisy_path, "wb") as noisy_file, \
            (open(rows_path, "wb") if text else nullcontext()) as rows_file, \
            closing(_ordered_map(task, jobs, n_threads)) as results:
        for result in results:
            transpose.add_keys(result.keys, None)
            stop = result.first + len(result.scores)
            scores[result.first:stop] = result.scores
            result.noisy.tofile(noisy_file)
            linear_counts += result.linear_counts
            cross_counts += result.cross_counts
            if text:
                row_nnz, columns = result.text
                row_nnz.tofile(rows_file)
                columns.tofile(rows_file)
                chunk_sizes.append((len(row_nnz), len(columns)))
            del result
    transpose.finish()
    return _Split(scores, noisy_path, linear_counts, cross_counts, rows_path, chunk_sizes)


def _read_labels(noisy_path, n_samples, threshold) -> np.ndarray:
    """±1 labels: +1 where ``scores + noise > threshold`` (read a slice at a time)."""
    labels = np.empty(n_samples, dtype=np.float64)
    step = 1 << 20
    with open(noisy_path, "rb") as f:
        for lo in range(0, n_samples, step):
            noisy = np.fromfile(f, dtype=np.float64, count=min(step, n_samples - lo))
            labels[lo:lo + len(noisy)] = np.where(noisy > threshold, 1.0, -1.0)
    return labels


def _write_text(writer, split: _Split, labels, stop) -> None:
    """Write a split's rows as LIBSVM text (runs in a helper thread)."""
    first = 0
    with open(split.rows_path, "rb") as f:
        for n_rows, nnz in split.chunk_sizes:
            if stop.is_set():
                return
            row_nnz = np.fromfile(f, dtype=np.int32, count=n_rows)
            columns = np.fromfile(f, dtype=np.int32, count=nnz)
            indptr = np.zeros(n_rows + 1, dtype=np.int64)
            np.cumsum(row_nnz, out=indptr[1:])
            writer.write_rows(labels[first:first + n_rows].astype(np.int64), indptr, columns)
            first += n_rows


class _Background:
    """``function(stop)`` in a helper thread; :meth:`result` joins it and raises its error."""

    def __init__(self, function, name: str):
        self._stop = threading.Event()
        self._error = None

        def run():
            try:
                function(self._stop)
            except BaseException as exc:      # raised again by result()
                self._error = exc

        self._thread = threading.Thread(target=run, name=name, daemon=True)
        self._thread.start()

    def result(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error

    def cancel(self) -> None:
        self._stop.set()
        self._thread.join()


def _write_split(output, transpose, labels, plan, *, n_features, command, block_nnz,
                 overwrite, attrs, text=None) -> int:
    """Write a transposed split as a binary store; return its nnz.

    ``text`` (a :class:`_Background` writing the LIBSVM text) is joined
    before the store is published, so that its failure leaves no store.
    """
    indptr = transpose.indptr(n_features)
    transpose.release_counts()               # indptr holds the same information
    writer = StoreWriter(output, n_samples=len(labels), n_features=n_features,
                         nnz=int(indptr[-1]), dtype="float32", binary=True, labels=labels,
                         id_offset=0, command=command, block_nnz=block_nnz,
                         overwrite=overwrite, chunk_size=plan.chunk_size, attrs=attrs,
                         labels_source=str(output), indptr=indptr)
    with writer:
        bounds = plan.group_bounds(indptr)
        with closing(gather_blocks(transpose, bounds, indptr, np.float32)) as blocks:
            for first, stop, rows, _ in blocks:
                writer.append(indptr[first:stop + 1] - indptr[first], rows, None)
        if text is not None:
            text.result()
        writer.close()
    return int(indptr[-1])


def _store_split(output, n_samples, *, stream, threshold, plan, common, zipf, attrs_for,
                 libsvm_output=None) -> dict:
    """Generate, label and write one split; return its summary.

    ``threshold`` None computes it from this split's scores (training).
    ``zipf`` is a zero-argument function returning the :class:`ZipfColumns`;
    they are released once the split is generated.  ``libsvm_output``
    also writes the split as LIBSVM text, alongside the store.
    """
    run_dir = Path(tempfile.mkdtemp(prefix=f"{output.name}.runs-", dir=output.parent))
    transpose = ExternalTranspose(run_dir, plan.buffer_bytes, n_columns=common["n_features"])
    text_writer = background = None
    try:
        split = _generate_split(transpose, n_samples, run_dir, stream=stream,
                                seed=common["seed"], chunk_rows=common["chunk_rows"],
                                zipf=zipf(), model=common["model"],
                                nnz_per_row=common["nnz_per_row"],
                                n_threads=common["n_threads"],
                                text=libsvm_output is not None)
        if threshold is None:
            threshold = balanced_threshold(split.scores, common["model"].noise)
        split.scores = None
        labels = _read_labels(split.noisy_path, n_samples, threshold)
        if np.all(labels == labels[0]):
            raise UltraFSError(f"{output}: every generated label is {labels[0]:+.0f}; "
                               "use more samples or planted features")
        if libsvm_output is not None:
            text_writer = LibsvmTextWriter(libsvm_output)
            background = _Background(
                lambda stop: _write_text(text_writer, split, labels, stop), "ultrafs-text")
        nnz = _write_split(output, transpose, labels, plan,
                           n_features=common["n_features"], command=common["command"],
                           block_nnz=common["block_nnz"], overwrite=common["overwrite"],
                           attrs=attrs_for(threshold, split.linear_counts, split.cross_counts),
                           text=background)
        if text_writer is not None:
            text_writer.close()
        n_runs = transpose.n_spilled
    except BaseException:
        if background is not None:
            background.cancel()
        if text_writer is not None:
            text_writer.abort()
        raise
    finally:
        transpose.close()
        remove_tree(run_dir)
    summary = {"output": str(output), "n_samples": int(n_samples), "nnz": nnz,
               "mean_nnz_per_row": nnz / n_samples,
               "positive_fraction": float(np.mean(labels > 0)),
               "threshold": float(threshold), "n_runs": int(n_runs),
               "linear_counts": [int(c) for c in split.linear_counts],
               "cross_counts": [int(c) for c in split.cross_counts]}
    if text_writer is not None:
        summary.update(libsvm_output=str(text_writer.path),
                       libsvm_bytes=int(text_writer.bytes_written))
    return summary


# --------------------------------------------------------------------------
# public entry point
# --------------------------------------------------------------------------
def _check_parameters(n_samples, n_features, nnz_per_row, zipf_exponent, n_linear, n_cross,
                      min_cooccurrence, noise, chunk_rows, memory_budget, n_test, seed,
                      n_threads):
    def integer(name, value, low):
        if isinstance(value, bool) or int(value) != value or value < low:
            raise ParameterError(f"{name} must be an integer >= {low}, got {value!r}")
        return int(value)

    n_samples = integer("n_samples", n_samples, 1)
    n_features = integer("n_features", n_features, 1)
    if n_samples >= 2 ** 31 or n_features >= 2 ** 31:
        raise ParameterError("n_samples and n_features must be below 2**31")
    n_linear = integer("n_linear", n_linear, 0)
    n_cross = integer("n_cross", n_cross, 0)
    if n_linear + n_cross == 0:
        raise ParameterError("the planted model needs n_linear + n_cross >= 1")
    if n_linear + 2 * n_cross > n_features:
        raise ParameterError(f"n_linear + 2 * n_cross = {n_linear + 2 * n_cross} "
                             f"exceeds n_features = {n_features}")
    if not (0 < float(nnz_per_row) <= n_features):
        raise ParameterError(f"nnz_per_row must be in (0, n_features], got {nnz_per_row!r}")
    if not (float(zipf_exponent) >= 0 and math.isfinite(zipf_exponent)):
        raise ParameterError(f"zipf_exponent must be finite and >= 0, got {zipf_exponent!r}")
    if not 0 <= float(min_cooccurrence) <= 1:
        raise ParameterError(f"min_cooccurrence must be in [0, 1], got {min_cooccurrence!r}")
    if not (float(noise) >= 0 and math.isfinite(noise)):
        raise ParameterError(f"noise must be finite and >= 0, got {noise!r}")
    chunk_rows = integer("chunk_rows", chunk_rows, 1)
    if int(memory_budget) < MIN_MEMORY_BUDGET:
        raise ParameterError(f"memory_budget must be at least {MIN_MEMORY_BUDGET} bytes, "
                             f"got {memory_budget}")
    n_test = integer("n_test", n_test, 0)
    seed = integer("seed", seed, 0)
    n_threads = (min(os.cpu_count() or 1, MAX_THREADS) if n_threads is None
                 else integer("n_threads", n_threads, 1))
    return n_samples, n_features, n_linear, n_cross, chunk_rows, n_test, seed, n_threads


def _describe_call(output_path, generator: dict, test_output, libsvm_output) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in generator.items()
                     if k not in ("name", "split"))
    extra = "" if test_output is None else f", test_output={str(test_output)!r}"
    extra += "" if libsvm_output is None else f", libsvm_output={str(libsvm_output)!r}"
    return (f"python: ultrafs.datasets.kddb_like.make_kddb_like({str(output_path)!r}, "
            f"{args}{extra})")


def make_kddb_like(output_path, *, n_samples, n_features, nnz_per_row=DEFAULT_NNZ_PER_ROW,
                   zipf_exponent=DEFAULT_ZIPF_EXPONENT, n_linear=DEFAULT_N_LINEAR,
                   n_cross=DEFAULT_N_CROSS, min_cooccurrence=DEFAULT_MIN_COOCCURRENCE,
                   noise=DEFAULT_NOISE, shuffle_columns=True, seed=0,
                   memory_budget=DEFAULT_MEMORY_BUDGET, chunk_rows=DEFAULT_CHUNK_ROWS,
                   block_nnz=DEFAULT_BLOCK_NNZ, test_output=None, n_test=0,
                   libsvm_output=None, n_threads=None, command=None,
                   overwrite=False) -> dict:
    """Write a kddb-like synthetic store with a planted linear + cross model.

    See the module docstring for the generative model.

    Parameters
    ----------
    output_path : str or os.PathLike
        Training store to create (``docs/FORMAT.md``; binary, ids are
        column numbers, ``id_offset == 0``).
    n_samples, n_features : int
        Shape of the training matrix.
    nnz_per_row : float
        Mean requested features per row (Poisson, clipped to
        ``[1, n_features]``).
    zipf_exponent : float
        Rank ``r`` has probability ``∝ (r + 1) ** -zipf_exponent``.
    n_linear, n_cross : int
        Planted single features and pairs.
    min_cooccurrence : float
        Target share of rows holding both members of a planted pair
        (reached by injection, see the module docstring).
    noise : float
        Standard deviation of the Gaussian noise added to the scores
        (planted weights have magnitudes in ``[1, 2]``).
    shuffle_columns : bool
        Map frequency ranks to columns through a random permutation (True)
        or keep rank ``r`` at column ``r`` (False).
    seed : int
        Seed of every random stream (>= 0).
    memory_budget : int
        Bytes for the external transpose (buffer, sorting, writing); the
        O(n_features) and O(n_samples) arrays and one chunk come on top.
    chunk_rows : int
        Rows generated at once and per random stream (part of the data's
        definition, like ``seed``).
    block_nnz : int
        Target nonzeros per block of the stores' default partition.
    test_output : str, os.PathLike or None
        Test store to create with ``n_test`` rows of the same distribution,
        model and threshold.
    n_test : int
        Rows of the test store (required > 0 with ``test_output``).
    libsvm_output : str, os.PathLike or None
        Also write the training rows as LIBSVM text to this file:
        ``label index:1 ...`` per row, labels ``1`` / ``-1``, 1-based
        indices (index = column + 1) increasing within a row.
        ``ultrafs ingest FILE`` reads it back into the same matrix and
        labels (its feature ids are then the indices: the generator's ids
        plus 1).  Written alongside the store, published under its name
        only when complete.
    n_threads : int or None
        Threads generating chunks (None: the CPU count, at most
        :data:`MAX_THREADS`).  The data do not depend on it.
    command : str or None
        Recorded as ``created_by``; None records the Python call.
    overwrite : bool
        Replace existing ultrafs stores at the output paths.

    Returns
    -------
    summary : dict
        ``output``, ``n_samples``, ``n_features``, ``nnz``,
        ``mean_nnz_per_row``, ``positive_fraction``, ``threshold``,
        ``n_runs`` (spilled runs), ``linear_counts`` / ``cross_counts``
        (training rows holding each planted feature / both members of each
        pair), ``planted`` (the store attribute), ``generator``, ``test``
        (the same keys for the test store, or None), ``seconds``, and with
        ``libsvm_output``: ``libsvm_output`` and ``libsvm_bytes``.

    Raises
    ------
    ParameterError
        For invalid parameters.
    StoreExistsError
        If an output exists and ``overwrite`` is False.
    OutputPathError
        If ``libsvm_output`` is a directory, not a regular file, one of
        the stores, or in a missing folder.
    UltraFSError
        If the labels of a split come out all equal.
    """
    started = time.perf_counter()
    (n_samples, n_features, n_linear, n_cross, chunk_rows, n_test, seed,
     n_threads) = _check_parameters(n_samples, n_features, nnz_per_row, zipf_exponent,
                                    n_linear, n_cross, min_cooccurrence, noise, chunk_rows,
                                    memory_budget, n_test, seed, n_threads)
    output = check_output_path(output_path, overwrite)
    if test_output is not None:
        if n_test < 1:
            raise ParameterError("test_output needs n_test >= 1")
        test_output = check_output_path(test_output, overwrite)
        if test_output == output:
            raise ParameterError("test_output must differ from output_path")
    if libsvm_output is not None:
        libsvm_output = check_text_output(
            libsvm_output, overwrite,
            others=[("training store", output), ("test store", test_output)])
    generator = {"name": "ultrafs.datasets.kddb_like.make_kddb_like",
                 "n_samples": n_samples, "n_features": n_features,
                 "nnz_per_row": float(nnz_per_row), "zipf_exponent": float(zipf_exponent),
                 "n_linear": n_linear, "n_cross": n_cross,
                 "min_cooccurrence": float(min_cooccurrence), "noise": float(noise),
                 "shuffle_columns": bool(shuffle_columns), "seed": seed,
                 "chunk_rows": chunk_rows, "n_test": n_test}
    if command is None:
        command = _describe_call(output, generator, test_output, libsvm_output)

    def build_zipf():
        # the permutation is the model stream's first draw: rebuilding
        # gives the same columns (they are released while a store is written)
        rng = _rng(seed, _STREAM_MODEL)
        return ZipfColumns.build(n_features, zipf_exponent, rng if shuffle_columns else None), rng

    zipf, model_rng = build_zipf()
    model = plant_model(model_rng, zipf.expected_frequency(nnz_per_row), n_linear=n_linear,
                        n_cross=n_cross, min_cooccurrence=min_cooccurrence, noise=noise)
    planted_columns = model.columns(zipf.column_of_rank)
    plan = MemoryPlan(int(memory_budget))
    common = {"seed": seed, "chunk_rows": chunk_rows, "model": model,
              "nnz_per_row": float(nnz_per_row), "command": command,
              "n_features": n_features, "n_threads": n_threads,
              "block_nnz": int(block_nnz), "overwrite": bool(overwrite)}
    planted = {}
    held = [zipf]
    del zipf

    def zipf_once():
        """The columns for one split, not kept beyond it."""
        return held.pop() if held else build_zipf()[0]

    def attrs_for(split_name):
        def attrs(threshold, linear_counts, cross_counts):
            planted[split_name] = model.to_attrs(planted_columns, threshold,
                                                 linear_counts, cross_counts)
            return {"planted": planted[split_name],
                    "generator": dict(generator, split=split_name)}
        return attrs

    summary = _store_split(output, n_samples, stream=_STREAM_TRAIN, threshold=None,
                           plan=plan, common=common, zipf=zipf_once,
                           attrs_for=attrs_for("train"), libsvm_output=libsvm_output)
    test_summary = None
    if test_output is not None:
        test_summary = _store_split(test_output, n_test, stream=_STREAM_TEST,
                                    threshold=summary["threshold"], plan=plan,
                                    common=common, zipf=zipf_once,
                                    attrs_for=attrs_for("test"))
    summary.update(n_features=n_features, planted=planted["train"], generator=generator,
                   test=test_summary, seconds=time.perf_counter() - started)
    return summary
