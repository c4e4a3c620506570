"""Zarr stores on object storage, against a real S3-protocol server (issue 40).

moto's server mode (``moto[server]``: a Werkzeug HTTP server speaking the
S3 protocol) runs on 127.0.0.1 for the module; ultrafs reaches it through
s3fs and botocore exactly as it reaches AWS or MinIO (nothing is mocked in
the client).  The round trip: ``ingest`` writes ``s3://bucket/...zarr``,
``select``, ``evaluate``, ``predict``, ``path``, ``report`` and ``info``
read it, on the threaded scheduler and on a ``LocalCluster`` of process
workers that open it themselves; the models are those of the same file
ingested locally, bit for bit.  The hostile cases: an unpublished prefix,
a corrupted chunk object, an edited metadata object, a dead server and a
server that accepts connections but never answers, each one line within
the stated bound.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from tests.test_hostile import error_line, invoke
from ultrafs.datasets.planted import make_planted_problem

pytest.importorskip("moto.server", reason="moto[server] is a test dependency")
pytest.importorskip("s3fs", reason="s3fs is the cloud extra")

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1"}
SELECT = ["--B", "2", "--max-iter", "2"]


def _server():
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, f"http://{host}:{port}"


def serve_s3(root, bucket):
    """A fixture's body: the credentials in the environment, a running
    S3-protocol server with ``bucket``, and the LIBSVM files
    ``root/train.svm`` and ``root/test.svm``; yields ``{"endpoint", "root",
    "fs", "option"}``, then stops the server and restores the environment."""
    saved = {key: os.environ.get(key) for key in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    server, endpoint = _server()
    problem = make_planted_problem(n_samples=300, n_features=60, n_relevant=5, n_test=100,
                                   seed=4)
    dump_svmlight_file(problem.X_train, problem.y_train, str(root / "train.svm"),
                       zero_based=False)
    dump_svmlight_file(problem.X_test, problem.y_test, str(root / "test.svm"),
                       zero_based=False)
    from ultrafs.store.object_store import filesystem

    fs, _ = filesystem(f"s3://{bucket}", {"endpoint_url": endpoint})
    if not fs.exists(bucket):
        fs.mkdir(bucket)
    try:
        yield {"endpoint": endpoint, "root": root, "fs": fs,
               "option": ["--storage-option", f"endpoint_url={endpoint}"]}
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A running S3-protocol server with a bucket, its endpoint, the LIBSVM
    files and their local stores."""
    for served in serve_s3(tmp_path_factory.mktemp("s3"), "bucket"):
        for name in ("train", "test"):
            result = invoke(["ingest", served["root"] / f"{name}.svm",
                             served["root"] / f"{name}.zarr"])
            assert result.exit_code == 0, result.output
        yield served


def ingested(s3, name, source="train", *, bucket="bucket", suffix=".zarr", options=()):
    """``ingest`` of ``source``.svm to ``s3://bucket/name``+``suffix``: its URL."""
    url = f"s3://{bucket}/{name}{suffix}"
    result = invoke(["ingest", s3["root"] / f"{source}.svm", url, *options, *s3["option"]])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.strip().splitlines()[-1])["output"] == url
    return url


def model_of(result):
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def check_select_evaluate_predict(s3, remote, local, tmp_path):
    """``select``, ``evaluate`` and ``predict`` on the ``(train, test)``
    stores at URLs give what they give on the ``local`` pair, bit for bit;
    returns the path of the model file selected from the remote train store."""
    (train, test), (local_train, local_test) = remote, local
    option = s3["option"]
    far = model_of(invoke(["select", "--data", train, *option, *SELECT, "--out", "-"]))
    here = model_of(invoke(["select", "--data", local_train, *SELECT, "--out", "-"]))
    for key in ("features", "coef", "intercept", "classes", "batches"):
        assert far[key] == here[key], key
    model = tmp_path / "model.json"
    assert invoke(["select", "--data", train, *option, *SELECT, "--out", model]).exit_code == 0
    evaluated = invoke(["evaluate", "--model", model, "--data", test, *option])
    assert evaluated.exit_code == 0, evaluated.output
    assert evaluated.stdout == invoke(["evaluate", "--model", model, "--data",
                                       local_test]).stdout
    for data, out in ((test, tmp_path / "remote.tsv"), (local_test, tmp_path / "local.tsv")):
        result = invoke(["predict", "--model", model, "--data", data, "--out", out,
                         *(option if data == test else [])])
        assert result.exit_code == 0, result.output
    assert (tmp_path / "remote.tsv").read_bytes() == (tmp_path / "local.tsv").read_bytes()
    return model


def test_round_trip_through_s3(s3, tmp_path):
    """ingest -> select -> evaluate -> predict -> path -> report -> info
    through s3://, each giving what the local store gives, bit for bit."""
    train, test = ingested(s3, "train"), ingested(s3, "test", "test")
    local, local_test = s3["root"] / "train.zarr", s3["root"] / "test.zarr"
    option = s3["option"]
    model = check_select_evaluate_predict(s3, (train, test), (local, local_test), tmp_path)
    paths = {}
    for data, out in ((train, tmp_path / "path_remote.json"),
                      (local, tmp_path / "path_local.json")):
        result = invoke(["path", "--data", data, "--n-lambdas", "5", "--out", out,
                         *(option if data == train else [])])
        assert result.exit_code == 0, result.output
        paths[data] = [(p["features"], p["coef"]) for p in json.loads(out.read_text())["path"]]
    assert paths[train] == paths[local]
    page = tmp_path / "report.html"
    result = invoke(["report", model, "--test", test, *option, "--out", page])
    assert result.exit_code == 0, result.output
    assert page.exists()
    info = invoke(["info", train, *option])
    assert info.exit_code == 0 and "300" in info.output


def test_python_api_and_pickled_store(s3):
    """``open_store(url, storage_options=...)``: the store pickles with its
    options, and ``api.fit`` on it gives the local model."""
    import pickle

    from ultrafs.api import fit
    from ultrafs.store import open_store

    url = ingested(s3, "api")
    store = open_store(url, storage_options={"endpoint_url": s3["endpoint"]})
    copy = pickle.loads(pickle.dumps(store))
    assert copy.storage_options == {"endpoint_url": s3["endpoint"]}
    assert copy.n_samples == 300 and copy.fingerprint == store.fingerprint
    remote = fit("fgm", copy, B=2, max_iter=2)
    here = fit("fgm", str(s3["root"] / "train.zarr"), B=2, max_iter=2)
    assert remote.features == here.features
    np.testing.assert_array_equal(remote.coef, here.coef)


def check_process_workers(s3, url, client, kind):
    """Each of the two worker processes of ``client`` opens the store at
    ``url`` from its URL and options (endpoint and credentials: the
    session's workers may have started before a module set AWS_*), reads
    blocks from the server itself, as a ``kind`` store; the model is the
    threaded one."""
    from ultrafs.api import fit
    from ultrafs.store import open_store

    store = open_store(url, storage_options={
        "endpoint_url": s3["endpoint"], "key": CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "secret": CREDENTIALS["AWS_SECRET_ACCESS_KEY"]})

    def blocks_read_here(store=store):
        block = store.read_range(0, min(5, store.n_features))
        return os.getpid(), int(block.indptr[-1]), type(store).__name__

    answers = client.run(blocks_read_here)
    assert len({pid for pid, _, _ in answers.values()}) == 2
    assert os.getpid() not in {pid for pid, _, _ in answers.values()}
    assert {name for _, _, name in answers.values()} == {kind}
    distributed = fit("fgm", store, B=2, max_iter=2, scheduler=client)
    threaded = fit("fgm", store, B=2, max_iter=2, scheduler="threads")
    assert distributed.features == threaded.features
    np.testing.assert_array_equal(distributed.coef, threaded.coef)


def check_ingest_twice(s3, url, options=()):
    """A second ingest to ``url`` is refused in one line naming it;
    ``--overwrite`` replaces the store (the test file's 100 rows)."""
    result = invoke(["ingest", s3["root"] / "test.svm", url, *options, *s3["option"]])
    assert "already exists" in error_line(result.exit_code, result.stderr, 1)
    assert url in result.stderr
    result = invoke(["ingest", s3["root"] / "test.svm", url, *options, "--overwrite",
                     *s3["option"]])
    assert result.exit_code == 0, result.output
    info = invoke(["info", url, *s3["option"]])
    assert info.exit_code == 0 and '"n_samples": 100' in info.output


def test_process_workers_open_the_store_themselves(s3, local_cluster_client):
    """A LocalCluster of two worker processes: the driver sends the store,
    each worker opens it and reads its blocks from the server."""
    check_process_workers(s3, ingested(s3, "cluster"), local_cluster_client, "ZarrStore")


def test_ingest_refuses_an_existing_store_and_overwrite_replaces_it(s3):
    check_ingest_twice(s3, ingested(s3, "twice"))


def test_write_store_to_a_url_and_a_failed_ingest_leaves_nothing(s3, tmp_path):
    """``write_store(url, X, y)`` publishes what ``write_store(path, ...)``
    writes (same fingerprint); an ingest of a malformed file into s3:// is
    one line and leaves no object under the prefix."""
    from ultrafs.store.writers.zarr_writer import write_store

    rng = np.random.default_rng(0)
    X, y = rng.random((40, 7)), np.array([0, 1] * 20)
    options = {"endpoint_url": s3["endpoint"]}
    remote = write_store("s3://bucket/arrays.zarr", X, y, storage_options=options,
                         command="test")
    here = write_store(tmp_path / "arrays.zarr", X, y, command="test")
    assert remote.fingerprint == here.fingerprint
    np.testing.assert_array_equal(remote.read_labels(), here.read_labels())
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:0.5\n+1 x:y\n")
    result = invoke(["ingest", bad, "s3://bucket/bad.zarr", *s3["option"]])
    line = error_line(result.exit_code, result.stderr, 1)
    assert "bad.svm" in line
    assert s3["fs"].find("bucket/bad.zarr") == []


def test_unpublished_store_is_refused(s3):
    """A prefix without its root zarr.json (an upload interrupted before the
    final metadata write) is refused in one line; so is one that holds
    nothing."""
    url = ingested(s3, "unpublished")
    s3["fs"].rm_file("bucket/unpublished.zarr/zarr.json")
    for data, words in ((url, "not a published store"),
                        ("s3://bucket/nothing.zarr", "no such store")):
        result = invoke(["select", "--data", data, *s3["option"], *SELECT])
        line = error_line(result.exit_code, result.stderr, 1)
        assert words in line and data in line


@pytest.mark.parametrize("target, words", [
    ("indices/c/0", "indices"),
    ("labels/zarr.json", "does not match its checksum"),
])
def test_corrupted_object_is_refused(s3, target, words):
    """A flipped byte in a chunk object fails its CRC-32C; an edited array
    metadata object fails the store's metadata checksum: one line each."""
    name = f"corrupt-{target.split('/')[0]}"
    url = ingested(s3, name)
    key = f"bucket/{name}.zarr/{target}"
    raw = bytearray(s3["fs"].cat_file(key))
    if target.endswith(".json"):
        document = json.loads(bytes(raw))
        document.setdefault("attributes", {})["edited"] = True   # zarr reads it happily
        raw = bytearray(json.dumps(document).encode())
    else:
        raw[len(raw) // 2] ^= 0xFF
    s3["fs"].pipe_file(key, bytes(raw))
    result = invoke(["select", "--data", url, *s3["option"], *SELECT])
    line = error_line(result.exit_code, result.stderr, 1)
    assert words in line and url in line


def _cli(args, env, timeout):
    """``ultrafs ARGS`` in a subprocess (a hang is killed by ``timeout``)."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", "from ultrafs.cli import main; main()",
                           *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **env), check=False)
    return done, time.monotonic() - started


def test_dead_server_is_one_line_within_the_bound(s3):
    """The server stops answering: refused connections, and a listener that
    accepts and never answers (reads time out), each one line within
    ``request_bound_s`` at ULTRAFS_STORAGE_TIMEOUT=1."""
    from ultrafs.store.object_store import ENV_TIMEOUT

    server, endpoint = _server()
    from ultrafs.store.object_store import filesystem

    fs, _ = filesystem("s3://gone", {"endpoint_url": endpoint})
    fs.mkdir("gone")
    result = invoke(["ingest", s3["root"] / "test.svm", "s3://gone/test.zarr",
                     "--storage-option", f"endpoint_url={endpoint}"])
    assert result.exit_code == 0, result.output
    server.stop()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)                       # accepts (the kernel's backlog), never answers
    mute = f"http://127.0.0.1:{silent.getsockname()[1]}"
    env = {ENV_TIMEOUT: "1"}
    bound = 5 * 1 * 2 * 1.0 + 2.0            # object_store.request_bound_s() at 1 s
    try:
        for url, where in (("s3://gone/test.zarr", endpoint), ("s3://gone/test.zarr", mute)):
            done, seconds = _cli(["select", "--data", url, "--storage-option",
                                  f"endpoint_url={where}", *SELECT], env, timeout=120)
            line = error_line(done.returncode, done.stderr, 1)
            assert url in line and "cannot" in line, line
            # interpreter start and imports come on top of the requests' bound
            assert seconds < bound + 30, seconds
    finally:
        silent.close()


def test_storage_option_must_be_key_value(s3):
    result = invoke(["select", "--data", "s3://bucket/x.zarr", "--storage-option",
                     "no-equals-sign"])
    line = error_line(result.exit_code, result.stderr, 2)
    assert "KEY=VALUE" in line


def test_storage_options_for_a_local_path_are_refused(s3):
    result = invoke(["select", "--data", s3["root"] / "train.zarr", *s3["option"]])
    line = error_line(result.exit_code, result.stderr, 1)
    assert "storage options apply to URLs" in line


def test_default_bounds_and_user_options_merge():
    from ultrafs.store.object_store import (
        DEFAULT_TIMEOUT_S,
        parse_storage_options,
        request_bound_s,
        storage_options_for,
    )

    options = storage_options_for("s3://b/x.zarr", {"endpoint_url": "http://h:1",
                                                    "config_kwargs": {"read_timeout": 3}})
    assert options["endpoint_url"] == "http://h:1"
    assert options["config_kwargs"]["read_timeout"] == 3
    assert options["config_kwargs"]["connect_timeout"] == DEFAULT_TIMEOUT_S
    assert storage_options_for("gs://b/x.zarr", {"token": "anon"}) == {"token": "anon"}
    assert request_bound_s() == 5 * 2 * DEFAULT_TIMEOUT_S + 2.0
    assert parse_storage_options(["anon=true", "endpoint_url=http://h:9000",
                                  'client_kwargs={"region_name": "x"}']) == {
        "anon": True, "endpoint_url": "http://h:9000", "client_kwargs": {"region_name": "x"}}
