"""Store writers: Zarr and Parquet-long, and LIBSVM ingest.

* :mod:`ultrafs.store.writers.block_writer`: shared staging, checks and
  the atomic publish of a finished store.
* :mod:`ultrafs.store.writers.zarr_writer`: Zarr column stores.
* :mod:`ultrafs.store.writers.parquet_long_writer`: Parquet long tables.
* :mod:`ultrafs.store.writers.libsvm`: LIBSVM/svmlight text to a store,
  reading the text with :mod:`ultrafs.store.writers.libsvm_reader` and
  transposing it with :mod:`ultrafs.store.writers.external_transpose`.
* :mod:`ultrafs.store.writers.libsvm_text_writer`: binary rows to LIBSVM text.
"""
