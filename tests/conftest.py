"""Shared fixtures: seeds, real data location, a dask LocalCluster."""

import importlib
import os
import sys
from pathlib import Path


def _import_without_assertion_rewriting(*names):
    """Import third-party packages past pytest's assertion-rewriting hook.

    pytest rewrites the asserts of every module of a distribution that
    registers a pytest plugin (zarr registers ``zarr.testing``; hypothesis
    its plugin), not only the plugin: about 150 modules, parsed and compiled
    again in every xdist worker and every run where bytecode is not written
    (``PYTHONDONTWRITEBYTECODE``), about 1 s of each worker's collection.
    Their asserts are not this suite's, so they are imported once here,
    before any test module, with the hook out of ``sys.meta_path``.
    """
    hooks = [h for h in sys.meta_path if type(h).__name__ == "AssertionRewritingHook"]
    for hook in hooks:
        sys.meta_path.remove(hook)
    try:
        for name in names:
            importlib.import_module(name)
    finally:
        sys.meta_path[:0] = hooks


_import_without_assertion_rewriting("zarr", "hypothesis", "hypothesis.strategies")

# Rewriting the asserts of the ~70 test modules is half of a worker's
# collection (3.4 of 7 s of CPU), and every xdist worker does it again. pytest
# keeps the rewritten modules in tests/__pycache__ (git ignores it) unless
# bytecode is not to be written (PYTHONDONTWRITEBYTECODE, as on the CI
# machines): while the suite is collected it is written, so that a later run
# reads it; the setting is restored once collection ends (the tests run
# under the caller's setting).
_DONT_WRITE_BYTECODE = sys.dont_write_bytecode
sys.dont_write_bytecode = False


def pytest_collection_finish(session):
    sys.dont_write_bytecode = _DONT_WRITE_BYTECODE

import numpy as np  # noqa: E402
import pytest  # noqa: E402

DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def pytest_addoption(parser):
    parser.addoption(
        "--full-matrix", action="store_true", default=False,
        help="also generate the cases the contract suites leave out by default "
             "(marked full_matrix; tests/store_contract.py)")


@pytest.fixture
def global_random_seed():
    """Seed of the random tests (override with ULTRAFS_TEST_SEED)."""
    return int(os.environ.get("ULTRAFS_TEST_SEED", "42"))


@pytest.fixture
def rng(global_random_seed):
    return np.random.default_rng(global_random_seed)


@pytest.fixture(scope="session")
def data_dir():
    """The shared real datasets; skips when they are not present."""
    if not DATA_DIR.is_dir():
        pytest.skip(f"shared datasets not found at {DATA_DIR}")
    return DATA_DIR


@pytest.fixture(scope="session")
def local_cluster_client():
    """A real 2-worker dask.distributed LocalCluster (processes)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=40) as cluster:
        # not the default client: a run given no scheduler uses the active
        # Client (dask's convention), and this one lives for the session
        with Client(cluster, set_as_default=False) as client:
            yield client


#: fixtures whose tests are marked ``slow`` wherever they are: real data
#: files and a real cluster (the marker's meaning, pyproject.toml)
SLOW_FIXTURES = ("data_dir", "local_cluster_client")


#: tests that take seconds each on the 2-core CI machine (measured with
#: ``--durations``; every case of a listed function): marked ``slow`` too,
#: so that ``-m "not slow"`` is the quick subset. tests/test_collection.py
#: checks that every entry still names a test.
SLOW_TESTS = frozenset({
    "tests/test_checkpoint.py::test_resume_in_process_equals_uninterrupted",
    "tests/test_checkpoint.py::test_sigkill_after_second_iteration_then_resume",
    "tests/test_checkpoint.py::test_unreachable_scheduler_fails_fast",
    "tests/test_cli.py::test_report_command",
    "tests/test_cli_cache.py::test_evaluate_predict_and_test_on_libsvm_files",
    "tests/test_collection.py::test_two_collections_give_the_same_ids",
    "tests/test_contracts.py::TestOneVsRestSquaredHinge::test_bias_curvature_bounds_the_curvature",
    "tests/test_distributed.py::test_cluster_result_identical_to_local",
    "tests/test_distributed.py::test_worker_killed_mid_pass",
    "tests/test_estimator_dask.py::test_unreachable_addresses_are_one_bounded_error",
    "tests/test_fgm.py::test_same_model_for_any_block_size_scheduler_and_backend",
    "tests/test_fgm_grid.py::test_folds_in_one_lockstep_are_each_folds_own_fits",
    "tests/test_fgm_grid.py::test_shared_pass_is_the_same_on_every_scheduler",
    "tests/test_group_spaces.py::test_fgm_on_groups_identical_on_every_scheduler_and_block_size",
    "tests/test_gsrfs.py::test_store_operator_on_zarr_gives_the_dense_fit",
    "tests/test_gsrfs.py::test_t5b_small_r_is_robust_to_outliers",
    "tests/test_gsrfs.py::test_t5c_heavy_lambda_keeps_the_relevant_blocks",
    "tests/test_gsrfs.py::test_t5c_heavy_lambda_keeps_the_relevant_blocks_algorithm_1",
    "tests/test_gsrfs.py::test_t8_digits_end_to_end",
    "tests/test_gsrfs.py::test_two_stage_p1_kkt_rounds_reach_the_full_solution",
    "tests/test_gsrfs_faces.py::test_estimator_contract_and_inputs",
    "tests/test_gsrfs_faces.py::test_local_cluster_gives_the_same_two_stage_result",
    "tests/test_gsrfs_faces.py::test_two_stage_on_the_cli_records_its_rounds",
    "tests/test_hostile.py::test_every_worker_lost_mid_pass",
    "tests/test_hostile.py::test_hostile_case",
    "tests/test_hostile.py::test_scheduler_that_never_answers",
    "tests/test_ingest.py::test_big_file_matches_sklearn",
    "tests/test_ingest.py::test_peak_memory_does_not_grow_with_file_size",
    "tests/test_ingest.py::test_real_file_matches_sklearn",
    "tests/test_install.py::test_readme_commands_in_sequence_leave_a_working_install",
    "tests/test_integrity_parquet.py::test_every_bit_flip_is_detected",
    "tests/test_integrity_zarr.py::test_array_metadata_flips_are_detected_or_harmless",
    "tests/test_integrity_zarr.py::test_every_chunk_flip_is_detected",
    "tests/test_integrity_zarr.py::test_group_metadata_flips_are_detected_or_harmless",
    "tests/test_kddb_like.py::test_counts_turn_dense_again",
    "tests/test_latency_store.py::test_pass_through_latency_gives_identical_candidates",
    "tests/test_mslr.py::test_t6_fit_identical_for_every_layout",
    "tests/test_mslr.py::test_t8_synthetic_recovery_against_l1",
    "tests/test_mslr_faces.py::test_block_size_and_schedulers_give_the_same_model",
    "tests/test_parallel_kernels.py::test_augmented_gram",
    "tests/test_parallel_kernels.py::test_constant_column_gram",
    "tests/test_parallel_kernels.py::test_csc_to_csr_is_scipys",
    "tests/test_parallel_kernels.py::test_gram_from_csc_windows_equals_the_csr_gram",
    "tests/test_parallel_kernels.py::test_matvec",
    "tests/test_parallel_kernels.py::test_multi_output_products",
    "tests/test_parallel_kernels.py::test_multiclass_sums",
    "tests/test_parallel_kernels.py::test_rmatvec",
    "tests/test_parallel_kernels.py::test_whole_solve_same_bytes",
    "tests/test_parallel_kernels.py::test_workqueue_layer_with_concurrent_threads",
    "tests/test_penalties.py::test_moreau_projection_matches_brute_force",
    "tests/test_prox_newton.py::test_agrees_with_apg_and_with_scipy",
    "tests/test_sklr_faces.py::test_same_model_for_any_tiling_and_cache",
    "tests/test_sklr_solvers.py::test_t3_t4_agreement_with_liblinear",
    "tests/test_sklr_solvers.py::test_t7_multiscale_no_loss_on_rff",
    "tests/test_slores.py::test_s4_s5_s6_leu",
    "tests/test_slores.py::test_s4_safety_real_sparse",
    "tests/test_slores.py::test_s4_safety_synthetic",
    "tests/test_sparse_ids.py::test_far_ids_cost_neither_memory_nor_time",
    "tests/test_validation.py::test_C_auto_is_deterministic_on_a_local_cluster",
    "tests/test_weighted_gram.py::test_store_operator_any_block_size_and_scheduler",
    "tests/test_zarr_store.py::test_parallel_reads_of_scattered_columns_equal_serial_ones",
})


def function_id(nodeid: str) -> str:
    """``path::[Class::]function`` of a test id (its parameters left out)."""
    return nodeid.split("[", 1)[0]


def pytest_collection_modifyitems(config, items):
    """Mark ``slow`` every test that reads the shared data sets, starts a
    cluster or is listed in :data:`SLOW_TESTS`, so that ``-m "not slow"`` is
    the quick subset (README)."""
    for item in items:
        if (function_id(item.nodeid) in SLOW_TESTS
                or any(name in SLOW_FIXTURES for name in getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.slow)
