"""Start-up and the fast paths of a standalone run (issue 11).

* A local-scheduler ``select`` imports neither ``dask.distributed`` nor
  ``dask.bag``, and, on a store of format 3, not zarr-python either
  (checked in a fresh process: ``sys.modules``).
* A local pass is a plain Dask graph with the tree of ``dask.bag``'s
  ``reduction``: a merge that records its operands shows the same tree.
* The direct chunk reader of Zarr stores (``zarr_chunks.ChunkReader``)
  reads what zarr-python reads, range by range, and fails where it fails
  with the same messages (missing, damaged, short and long chunk files).
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import partial

import numpy as np
import pytest
import scipy.sparse as sp

from ultrafs.errors import ParameterError, StoreFormatError
from ultrafs.scoring.runner import run_block_tasks
from ultrafs.scoring.scheduling import local_get, resolve_scheduler
from ultrafs.store.writers.zarr_writer import write_store
from ultrafs.store import zarr_chunks, zarr_store
from ultrafs.store.zarr_store import ZarrStore


def small_problem(kind, seed=3):
    """About 600 entries over 80 rows and 70 columns (some empty)."""
    rng = np.random.default_rng(seed)
    X = sp.random(80, 70, density=0.11, random_state=seed, format="csc",
                  dtype=np.float32)
    X.data = (X.data * 10 + 0.5).astype(np.float32)
    if kind == "binary":
        X.data[:] = 1
    if kind == "sparse":                  # ids spread over 2**32: the sparse layout
        coo = X.tocoo()
        spread = np.sort(rng.choice(2 ** 32, X.shape[1], replace=False))
        X = sp.csr_matrix((coo.data, (coo.row, spread[coo.col])),
                          shape=(X.shape[0], 2 ** 32))
    y = np.where(np.arange(80) % 3 == 0, 1.0, -1.0)
    return X, y


def write_small(path, kind="valued"):
    X, y = small_problem(kind)
    return write_store(path, X, y, chunk_size=16, block_nnz=90, command="test")


def zarr_python(monkeypatch):
    """Make every store open through zarr-python (the path before issue 11)."""
    monkeypatch.setattr(zarr_chunks.ChunkReader, "from_document",
                        classmethod(lambda cls, folder, doc: None))
    monkeypatch.setattr(zarr_store, "_plain_group_attrs", lambda path: None)


def everything(store):
    """What a reader serves: every block, the targets, the column ids."""
    blocks = []
    for lo, hi in zip(store.default_block_bounds()[:-1], store.default_block_bounds()[1:]):
        block = store.read_range(int(lo), int(hi))
        blocks.append((block.indptr.tolist(), block.indices.tolist(),
                       None if block.data is None else block.data.tolist()))
    columns = store.read_columns(np.arange(store.n_features)[::-3])
    ids = store.column_ids
    return (blocks, columns.indptr.tolist(), columns.indices.tolist(),
            store.read_targets().tolist(), None if ids is None else ids.tolist())


# ------------------------------------------------------------------ imports
SELECT_IN_A_FRESH_PROCESS = """
import json, sys
from ultrafs.cli import main
sys.argv = ["ultrafs", "select", "--data", sys.argv[1], "--B", "3", "--max-iter", "2",
            "--out", sys.argv[2], "--workers", "2"]
try:
    main()
except SystemExit as exit:
    assert not exit.code, exit.code
names = ("distributed", "dask.bag", "zarr", "pyarrow", "sklearn")
print(json.dumps({name: name in sys.modules for name in names}))
"""


@pytest.mark.parametrize("kind", ["valued", "binary"])
def test_local_select_imports_no_cluster_code_and_no_zarr(tmp_path, kind):
    store = write_small(tmp_path / "s.zarr", kind)
    proc = subprocess.run([sys.executable, "-c", SELECT_IN_A_FRESH_PROCESS,
                           str(store.path), str(tmp_path / "m.json")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    imported = json.loads(proc.stdout.strip().splitlines()[-1])
    assert imported == {"distributed": False, "dask.bag": False, "zarr": False,
                        "pyarrow": False, "sklearn": False}
    assert json.loads((tmp_path / "m.json").read_text())["features"]


PARSE_IN_A_FRESH_PROCESS = """
import json, sys
from ultrafs.cli import main
args = json.loads(sys.argv[1])
if args == ["--help"]:
    try:
        main(args, prog_name="ultrafs")
    except SystemExit as exit:
        assert not exit.code, exit.code
else:                                  # parse select's options, run nothing
    parent = main.make_context("ultrafs", list(args))
    command = main.get_command(parent, args[0])
    with command.make_context(args[0], list(args[1:]), parent=parent) as ctx:
        parsed = {k: ctx.params[k] for k in ("loss", "poly", "B", "class_weight")}
        print(json.dumps({k: str(v) for k, v in parsed.items()}), file=sys.stderr)
heavy = ("ultrafs.solvers", "ultrafs.features", "ultrafs.kernels", "ultrafs.api",
         "ultrafs.store", "ultrafs.methods", "ultrafs.scoring", "numba", "dask",
         "zarr", "numpy", "scipy", "sklearn")
# the method registry and the method modules (their parameters) are light:
# the options of select are generated from them
light = ("ultrafs.methods", "ultrafs.methods.registry", "ultrafs.methods.params",
         "ultrafs.methods.space_params", "ultrafs.methods.weight_params")
print(json.dumps(sorted(name for name in sys.modules
                        if any(name == h or name.startswith(h + ".") for h in heavy)
                        and name not in light and not name.endswith("_method"))))
"""


@pytest.mark.parametrize("args", [
    ["--help"],
    ["select", "--data", "d.zarr", "--out", "m.json", "--B", "7", "--loss",
     "squared-hinge", "--poly", "2", "--class-weight", "balanced", "--C", "auto"],
    ["select", "--data", "d.zarr", "--out", "m.json"],
])
def test_help_and_option_parsing_import_no_solver(args):
    proc = subprocess.run([sys.executable, "-c", PARSE_IN_A_FRESH_PROCESS,
                           json.dumps(args)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
    if args[0] == "select":
        parsed = json.loads(proc.stderr.strip().splitlines()[-1])
        # an option not given is None: the method's Params default applies
        assert parsed["loss"] == (args[args.index("--loss") + 1] if "--loss" in args
                                  else "None")


NAMES_OF_THE_REGISTRIES = """
import json
from ultrafs.features import FEATURE_SPACES
from ultrafs.solvers.losses import loss_names
print(json.dumps([sorted(loss_names()),
                  sorted(str(c.poly_degree) for c in FEATURE_SPACES.values()
                         if c.poly_degree is not None)]))
"""


def test_static_names_are_the_built_in_registry_members():
    """ultrafs/names.py lists exactly what the registries hold in a fresh process."""
    from ultrafs.names import LOSS_NAMES, POLY_DEGREES

    proc = subprocess.run([sys.executable, "-c", NAMES_OF_THE_REGISTRIES],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    losses, degrees = json.loads(proc.stdout.strip().splitlines()[-1])
    assert list(LOSS_NAMES) == losses
    assert list(POLY_DEGREES) == degrees


def test_a_loaded_registry_adds_its_members_to_the_choices(monkeypatch):
    from ultrafs import cli
    from ultrafs.names import LOSS_NAMES
    from ultrafs.solvers import losses

    command = cli.main.commands["select"]
    with command.make_context("select", ["--data", "d"], resilient_parsing=True) as ctx:
        option = next(p for p in command.get_params(ctx) if p.name == "loss")
    assert option.type.choices == tuple(LOSS_NAMES)       # registry loaded: the same
    monkeypatch.setattr(losses, "loss_names", lambda: ["zeta-loss", *LOSS_NAMES])
    assert option.type.choices == (*LOSS_NAMES, "zeta-loss")
    monkeypatch.delitem(sys.modules, "ultrafs.solvers.losses")
    assert option.type.choices == tuple(LOSS_NAMES)       # not loaded: static names


def test_local_get_names_the_schedulers():
    import dask.local
    import dask.multiprocessing
    import dask.threaded

    assert local_get("threads") is dask.threaded.get
    assert local_get("processes") is dask.multiprocessing.get
    assert local_get("synchronous") is dask.local.get_sync
    with pytest.raises(ParameterError) as local:
        local_get("thread")
    with pytest.raises(ParameterError) as resolved:
        resolve_scheduler("thread")
    assert str(local.value) == str(resolved.value)


# -------------------------------------------------------------- pass graph
def _leaf(block, offset):
    return f"<{block + offset}>"


def _tree(parts):
    """A merge that keeps its operands in order: the string is the tree."""
    return "(" + ",".join(parts) + ")"


@pytest.mark.parametrize("split_every", [2, 3, 8])
def test_local_pass_has_the_tree_of_a_bag_reduction(split_every):
    import dask.bag as db

    for n_blocks in list(range(1, 20)) + [64, 65, 100]:
        blocks = list(range(n_blocks))
        expected = (db.from_sequence(blocks, npartitions=n_blocks)
                    .map(_leaf, offset=10)
                    .reduction(_tree, _tree, split_every=split_every)
                    .compute(scheduler="sync"))
        for scheduler in ("threads", "synchronous", "processes"):
            if scheduler == "processes" and n_blocks not in (5, 65):
                continue
            got = run_block_tasks(blocks, _leaf, _tree, shared={"offset": 10},
                                  scheduler=scheduler, num_workers=2,
                                  split_every=split_every)
            assert got == expected, (n_blocks, scheduler)


def _fails(block):
    if block == 3:
        raise ValueError("block 3 is bad")
    return str(block)


def test_local_pass_raises_the_task_error():
    with pytest.raises(ValueError, match="block 3 is bad"):
        run_block_tasks(list(range(6)), _fails, _tree, scheduler="threads",
                        num_workers=2)


def test_local_pass_reports_progress(capfd):
    run_block_tasks(list(range(12)), partial(_leaf, offset=0), _tree,
                    scheduler="threads", num_workers=2, progress_label="my pass")
    err = capfd.readouterr().err
    assert "my pass: 12/12 blocks in " in err and "\r" not in err   # piped: one line


# ------------------------------------------------------- direct chunk reads
@pytest.mark.parametrize("kind", ["valued", "binary", "sparse"])
def test_direct_reads_are_those_of_zarr_python(tmp_path, kind, monkeypatch):
    import zarr

    store = write_small(tmp_path / "s.zarr", kind)
    meta = ZarrStore(store.path)._meta()
    assert meta.readers is not None
    rng = np.random.default_rng(0)
    for name, reader in meta.readers.items():
        array = zarr.open_array(str(store.path / name), mode="r")
        n = array.shape[0]
        ranges = [(0, n), (0, 16), (16, 32), (15, 17), (n - 1, n), (n - 3, n + 5),
                  (5, 5), (9, 4), (-3, n)]
        ranges += [tuple(sorted(rng.integers(0, n + 1, 2))) for _ in range(40)]
        for lo, hi in ranges:
            got, expected = reader.read(lo, hi), np.asarray(array[lo:hi])
            assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes(), \
                (name, lo, hi)
    direct = everything(ZarrStore(store.path))
    zarr_python(monkeypatch)
    through_zarr = ZarrStore(store.path)
    assert through_zarr._meta().readers is None
    assert everything(through_zarr) == direct


@pytest.mark.parametrize("damage", ["missing", "flipped", "short", "long", "empty",
                                    "folder"])
@pytest.mark.parametrize("array", ["indices", "indptr", "data", "labels"])
def test_damaged_chunks_fail_as_through_zarr_python(tmp_path, damage, array,
                                                    monkeypatch):
    store = write_small(tmp_path / "s.zarr", "valued")
    chunk = store.path / array / "c" / "1"
    raw = chunk.read_bytes()
    if damage == "missing":
        chunk.unlink()
    elif damage == "flipped":
        chunk.write_bytes(raw[:9] + bytes([raw[9] ^ 4]) + raw[10:])
    elif damage == "short":
        chunk.write_bytes(raw[:3])
    elif damage == "long":
        chunk.write_bytes(raw + b"\0" * (200 + len(raw)))
    elif damage == "empty":
        chunk.write_bytes(b"")
    else:
        chunk.unlink()
        chunk.mkdir()

    def outcome():
        try:
            return everything(ZarrStore(store.path))
        except StoreFormatError as exc:
            return f"StoreFormatError: {exc}"

    direct = outcome()
    assert isinstance(direct, str) and "StoreFormatError" in direct
    zarr_python(monkeypatch)
    assert outcome() == direct


def test_checksum_failure_names_the_chunk_problem(tmp_path):
    store = write_small(tmp_path / "s.zarr", "valued")
    chunk = store.path / "indices" / "c" / "0"
    raw = bytearray(chunk.read_bytes())
    raw[-1] ^= 1                          # the stored CRC-32C itself
    chunk.write_bytes(bytes(raw))
    with pytest.raises(StoreFormatError,
                       match="Stored and computed checksum do not match"):
        ZarrStore(store.path).read_range(0, 5)


def test_documents_other_than_the_plain_ones_open_through_zarr_python(tmp_path):
    store = write_small(tmp_path / "s.zarr", "valued")
    expected = everything(ZarrStore(store.path))
    group = store.path / "zarr.json"
    document = json.loads(group.read_text())
    document["consolidated_metadata"] = None       # valid for zarr, not the plain form
    group.write_text(json.dumps(document))
    assert zarr_store._plain_group_attrs(store.path) is None
    assert everything(ZarrStore(store.path)) == expected

    plain = json.loads((store.path / "indices" / "zarr.json").read_text())
    assert zarr_chunks.ChunkReader.from_document(store.path, plain) is not None
    for change in ({"codecs": plain["codecs"][:2]}, {"storage_transformers": [{}]},
                   {"chunk_key_encoding": {"name": "v2"}}, {"shape": [3, 4]},
                   {"data_type": "uint16"}, {"fill_value": "0x7fc00000"},
                   {"must_understand": True}, {"node_type": "group"}):
        assert zarr_chunks.ChunkReader.from_document(
            store.path, {**plain, **change}) is None, change


def test_a_wrapped_zarr_store_reads_through_zarr_python(tmp_path):
    from ultrafs.store.latency import ZarrLatencyStore

    store = write_small(tmp_path / "s.zarr", "binary")
    wrapped = ZarrLatencyStore(store.path)
    assert wrapped._meta().readers is None
    assert everything(wrapped) == everything(ZarrStore(store.path))


# ------------------------------------------------------------------- exit
def test_the_cli_skips_the_exit_collection_without_freezing_now(tmp_path):
    import gc

    from click.testing import CliRunner

    from ultrafs import cli

    store = write_small(tmp_path / "s.zarr", "binary")
    frozen = gc.get_freeze_count()
    result = CliRunner().invoke(cli.main, ["info", str(store.path)])
    assert result.exit_code == 0, result.output
    assert cli.exit_collection_skipped
    assert gc.get_freeze_count() == frozen          # only at the process's exit


EXIT_IN_A_FRESH_PROCESS = """
import atexit, gc, sys
from ultrafs.cli import main
sys.argv = ["ultrafs", "info", sys.argv[1]]
try:
    main()
except SystemExit:
    pass
before = gc.get_freeze_count()
atexit._run_exitfuncs()
print(before, gc.get_freeze_count() > 0)
"""


def test_the_cli_freezes_the_heap_at_exit(tmp_path):
    store = write_small(tmp_path / "s.zarr", "binary")
    proc = subprocess.run([sys.executable, "-c", EXIT_IN_A_FRESH_PROCESS,
                           str(store.path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-2:] == ["0", "True"]
