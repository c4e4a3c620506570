"""What every streaming writer does alike (Zarr and Parquet-long).

The format-specific behaviour (layout, temporary directory contents,
overwrite rules) is tested in ``test_zarr_store.py`` and
``test_parquet_store.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ultrafs.store.parquet_long import ParquetLongStore
from ultrafs.store.writers.parquet_long_writer import ParquetLongWriter
from ultrafs.store.writers.zarr_writer import StoreWriter, balanced_block_bounds
from ultrafs.store.zarr_store import ZarrStore

try:
    from store_contract import make_matrix
except ImportError:                       # tests/ imported as a package
    from tests.store_contract import make_matrix

#: (writer, reader, output name, extra writer arguments)
WRITERS = [
    pytest.param(StoreWriter, ZarrStore, "w.zarr", {}, id="zarr"),
    pytest.param(ParquetLongWriter, ParquetLongStore, "w.pql", {"file_nnz": 30},
                 id="parquet-long"),
]


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.mark.parametrize("writer_class, store_class, name, extra", WRITERS)
def test_writer_streams_any_column_chunks(tmp_path, writer_class, store_class, name, extra):
    X, y = make_matrix("valued", np.float32)
    cuts = [0, 1, 2, 9, 9, 30, 31, X.shape[1]]
    with writer_class(tmp_path / name, n_samples=X.shape[0], n_features=X.shape[1],
                      nnz=X.nnz, dtype="float32", binary=False, labels=y, chunk_size=8,
                      block_nnz=25, command="streamed", **extra) as writer:
        for a, b in zip(cuts[:-1], cuts[1:]):
            lo, hi = X.indptr[a], X.indptr[b]
            writer.append(X.indptr[a:b + 1] - lo, X.indices[lo:hi], X.data[lo:hi])
        path = writer.close()
    store = store_class(path)
    assert (store.to_csc() != X).nnz == 0
    assert store.attrs["created_by"] == "streamed"
    np.testing.assert_array_equal(store.default_block_bounds(),
                                  balanced_block_bounds(X.indptr, 25))
    assert leftovers(tmp_path) == [name]


@pytest.mark.parametrize("writer_class, store_class, name, extra", WRITERS)
def test_writer_rejects_inconsistent_blocks(tmp_path, writer_class, store_class, name, extra):
    X, y = make_matrix("valued", np.float32)
    kwargs = dict(n_samples=X.shape[0], n_features=X.shape[1], nnz=X.nnz,
                  dtype="float32", binary=False, labels=y)
    writer = writer_class(tmp_path / name, **kwargs)
    with pytest.raises(ValueError, match="data is required"):
        writer.append(X.indptr, X.indices)
    with pytest.raises(ValueError, match="exceeds n_features"):
        writer.append(np.zeros(X.shape[1] + 2, dtype=np.int64), [], [])
    with pytest.raises(ValueError, match="invalid CSC block"):
        writer.append([0, 2], [5, 1], [1.0, 2.0])          # rows not increasing
    with pytest.raises(ValueError, match="NaN"):
        writer.append([0, 1], [0], [np.nan])
    with pytest.raises(ValueError, match="incomplete"):
        writer.close()
    assert leftovers(tmp_path) == []
    with pytest.raises(ValueError, match=f"{writer_class.__name__} is closed"):
        writer.append([0, 1], [0], [1.0])
    binary = writer_class(tmp_path / name, **dict(kwargs, binary=True))
    with pytest.raises(ValueError, match="must be None"):
        binary.append([0, 1], [0], [1.0])
    binary.abort()
    assert leftovers(tmp_path) == []
