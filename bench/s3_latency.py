"""Scoring passes over a Zarr store on a real S3-protocol server, with a
fixed delay added to every request (issue 40, item 2).

Does a pass over ``s3://`` see through the latency of an object store?
moto's server mode (``moto[server]``) serves the store on 127.0.0.1; a TCP
proxy in front of it (:class:`DelayProxy`, asyncio) holds every HTTP
request ``d`` milliseconds before forwarding it, as a distant server
would, and counts the requests.  The pass is one worst-case analysis
(``k = 30`` candidates, the scoring pass FGM, MSLR and GSR-FS run) over
``imdb_train_unigram_binary`` (25,000 rows x 74,849 non-empty columns, 3.4M
nonzeros), written with small chunks (65,536 elements) so that a pass
makes a few hundred requests, on the threaded scheduler with 1 and 8
workers and 64 blocks.

Each row: the pass's wall time (median of ``--repeat``), the requests R
it made, the serial model ``T0 + R·d`` (every request waited for in turn
after the undelayed pass T0), and their ratio: how many requests' delays
overlapped.  The peer in the same run is the same store on local disk
(the local pass time and its candidates: the candidates through s3:// must
be the same keys, the quality check).  Peak RSS of this process is
reported (VmHWM).

Run: ``python bench/s3_latency.py [--repeat 3] [--delays 0,5,20,50]``
(needs the test extra: ``pip install '.[test]'``: moto[server], s3fs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR, OUT_DIR, peak_rss_mb  # noqa: E402

K = 30
N_BLOCKS = 64
CHUNK = 1 << 16


class DelayProxy:
    """A TCP proxy to ``upstream`` that holds each request ``delay`` seconds.

    Every chunk of bytes from a client that starts an HTTP request
    (``GET``, ``HEAD``, ``PUT``, ``POST``, ``DELETE``) waits ``delay``
    before it is forwarded; the answers flow back at once.  ``requests``
    counts the requests seen.
    """

    METHODS = (b"GET ", b"HEAD ", b"PUT ", b"POST ", b"DELETE ")

    def __init__(self, upstream_host, upstream_port):
        self.upstream = (upstream_host, upstream_port)
        self.delay = 0.0
        self.requests = 0
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait()

    def _run(self, ready):
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _serve(self, client_reader, client_writer):
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.close()
            return

        async def pump(reader, writer, delayed):
            try:
                while data := await reader.read(1 << 16):
                    if delayed and data.startswith(self.METHODS):
                        self.requests += 1
                        if self.delay:
                            await asyncio.sleep(self.delay)
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                writer.close()

        await asyncio.gather(pump(client_reader, up_writer, True),
                             pump(up_reader, client_writer, False))


def make_stores(folder, endpoint):
    """The local store and its copy published on the server."""
    from sklearn.datasets import load_svmlight_file

    from ultrafs.store import open_store
    from ultrafs.store.object_store import filesystem, publish_store
    from ultrafs.store.writers.zarr_writer import write_store

    X, y = load_svmlight_file(str(DATA_DIR / "imdb_train_unigram_binary.svm.bz2"))
    local = write_store(folder / "imdb.zarr", X.astype(np.float32), y, chunk_size=CHUNK,
                        block_nnz=max(X.nnz // N_BLOCKS, 1))
    fs, _ = filesystem("s3://bench", {"endpoint_url": endpoint})
    fs.mkdir("bench")
    publish_store(local.path, "s3://bench/imdb.zarr", {"endpoint_url": endpoint})
    return open_store(local.path)


def one_pass(store, weights, workers):
    from ultrafs.features.linear import LinearFeatures
    from ultrafs.scoring.worst_case import worst_case_analysis

    block_size = -(-store.n_features // N_BLOCKS)
    started = time.perf_counter()
    found, stats = worst_case_analysis(LinearFeatures(store), weights, K,
                                       block_size=block_size, scheduler="threads",
                                       num_workers=workers)
    return time.perf_counter() - started, found.keys, stats


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--delays", default="0,5,20,50", help="milliseconds, comma-separated")
    parser.add_argument("--workers", default="1,8")
    args = parser.parse_args()
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                      AWS_DEFAULT_REGION="us-east-1")
    from moto.server import ThreadedMotoServer

    from ultrafs.store import open_store

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    proxy = DelayProxy(host, port)
    folder = Path(tempfile.mkdtemp(prefix="s3-latency-"))
    local = make_stores(folder, f"http://{host}:{port}")
    rng = np.random.default_rng(0)
    weights = rng.random(local.n_samples) * local.read_labels()
    workers_list = [int(w) for w in args.workers.split(",")]
    delays = [float(d) / 1e3 for d in args.delays.split(",")]
    rows = []
    for workers in workers_list:
        one_pass(local, weights, workers)
        local_times = [one_pass(local, weights, workers)[0] for _ in range(args.repeat)]
        _, local_keys, stats = one_pass(local, weights, workers)
        base = None
        for delay in delays:
            proxy.delay = delay
            # a fresh store object per setting: its own connections, nothing cached
            remote = open_store("s3://bench/imdb.zarr",
                                storage_options={"endpoint_url": f"http://127.0.0.1:{proxy.port}"})
            one_pass(remote, weights, workers)
            times, requests = [], []
            for _ in range(args.repeat):
                before = proxy.requests
                seconds, keys, _ = one_pass(remote, weights, workers)
                times.append(seconds)
                requests.append(proxy.requests - before)
                assert np.array_equal(keys, local_keys), "s3:// gave other candidates"
            measured = statistics.median(times)
            if delay == 0:
                base = measured
            r = int(statistics.median(requests))
            serial = base + r * delay
            rows.append({"workers": workers, "delay_ms": delay * 1e3,
                         "blocks": stats.n_blocks, "requests": r,
                         "seconds": measured, "seconds_all": times,
                         "local_seconds": statistics.median(local_times),
                         "serial_model": serial, "serial_over_measured": serial / measured,
                         "same_candidates_as_local": True})
            print(f"workers {workers}, delay {delay * 1e3:g} ms: {measured:.3f} s, "
                  f"{r} requests, serial model {serial:.3f} s "
                  f"({serial / measured:.1f}x), local {statistics.median(local_times):.3f} s",
                  flush=True)
    server.stop()
    result = {"rows": rows, "peak_rss_mb": peak_rss_mb(), "n_blocks": N_BLOCKS,
              "chunk_elements": CHUNK, "k": K,
              "store": {"n_samples": local.n_samples, "n_features": local.n_features,
                        "nnz": local.nnz}}
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / "s3_latency.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"peak RSS {result['peak_rss_mb']:.0f} MB; wrote {out}")


if __name__ == "__main__":
    main()
