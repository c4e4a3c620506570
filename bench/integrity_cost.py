"""What the chunk checksums of store format 3 cost a full pass (Zarr).

Writes the same random matrix twice, with the format's codecs (Blosc-LZ4
then CRC-32C) and with Blosc-LZ4 alone, then times a full ``read_range``
pass over the default blocks of each, alternating the two, and reports
the medians in nonzeros per second (page cache warm, reads checked as
always).  ``python integrity_cost.py [--rows N --cols M --nnz Z --rounds R]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np
import scipy.sparse as sp

from common import peak_rss_mb, write_result


def full_pass(path) -> float:
    """Nonzeros per second of one pass over the store's default blocks."""
    from ultrafs.store.zarr_store import ZarrStore

    store = ZarrStore(path)
    started = time.perf_counter()
    bounds = store.default_block_bounds()
    total = 0
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        total += store.read_range(int(lo), int(hi)).nnz
    return total / (time.perf_counter() - started)


def main(argv=None):
    import ultrafs.store.writers.zarr_writer as zarr_writer
    from ultrafs.store import zarr_store

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--cols", type=int, default=200_000)
    parser.add_argument("--nnz", type=int, default=6_000_000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = rng.integers(0, args.rows, args.nnz)
    cols = rng.integers(0, args.cols, args.nnz)
    values = rng.random(args.nnz).astype(np.float32) + 0.1
    X = sp.csr_matrix((values, (rows, cols)), shape=(args.rows, args.cols))
    y = rng.integers(0, 2, args.rows)
    folder = tempfile.mkdtemp(prefix="integrity-cost-")
    checked = zarr_writer.write_store(folder + "/crc.zarr", X, y)
    codecs = zarr_writer.chunk_codecs
    zarr_writer.chunk_codecs = lambda: [zarr_store.chunk_compressor()]      # format 2's codecs
    try:
        plain = zarr_writer.write_store(folder + "/plain.zarr", X, y)
    finally:
        zarr_writer.chunk_codecs = codecs
    with_crc, without = [], []
    for _ in range(args.rounds):
        with_crc.append(full_pass(checked.path))
        without.append(full_pass(plain.path))
    result = {"nnz": int(checked.nnz), "rounds": args.rounds,
              "with_crc_nnz_per_s": statistics.median(with_crc),
              "without_crc_nnz_per_s": statistics.median(without),
              "peak_rss_mb": peak_rss_mb()}
    result["ratio"] = result["with_crc_nnz_per_s"] / result["without_crc_nnz_per_s"]
    print(f"{result['nnz']:,} nonzeros: with CRC-32C {result['with_crc_nnz_per_s'] / 1e6:.0f}M "
          f"nnz/s, without {result['without_crc_nnz_per_s'] / 1e6:.0f}M nnz/s, ratio "
          f"{result['ratio']:.3f}; peak RSS {result['peak_rss_mb']:.0f} MB")
    write_result("integrity_cost", result)


if __name__ == "__main__":
    main()
