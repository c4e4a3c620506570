"""Ids never cost memory: every estimator and every ``select --method`` on a
matrix 2**31 - 1 columns wide that holds 10 values (issue 39, item 3).

Each run goes in a child process whose address space is capped
(``RLIMIT_AS``), so an allocation per column of the width (8 GiB of int32,
16 GiB of float64, 2 GiB of booleans) fails at once in the child instead
of swapping the machine.  The child reports its peak RSS
(``VmHWM``), held under :data:`RSS_LIMIT_MB` (the issue's bound), and,
for the estimators, the peak of the memory numpy and Python allocated
during the fit and its reads (``tracemalloc``, which sees numpy's arrays
even when the kernel has not backed them yet), held under
:data:`TRACED_LIMIT_MB`.  A per-column array written when read
(``coef_``, ``mslr_coef_``, ``ranking_``, ``scores_``, the support mask)
is refused in one line naming the compact attribute.

The bound holds for a run whose kernels are in numba's on-disk cache: each
measured child follows an unmeasured warm-up child running the same job
(:func:`_warmed`).  A run that compiles holds LLVM's memory as well, once
per machine and the same whatever the width (``FGMClassifier`` from an empty
cache: 449 MB peak, against 316 MB warm): it is not memory per column.  The last tests check
that the compact structures give, on ordinary data, exactly what the dense
ones gave.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

HUGE = 2 ** 31 - 1
#: the child's address space: the numba/LLVM runtime and dask's threads fit
#: (measured VmPeak: 0.75 GiB for an estimator, 0.82 GiB for the CLI, with one
#: numba thread and two malloc arenas), an array per column of HUGE does not
AS_LIMIT = 3 * 2 ** 30
#: peak RSS of a whole run, import of the engine included (issue 39)
RSS_LIMIT_MB = 500
#: peak of what the estimator's fit and reads allocate (tracemalloc, after a
#: warm-up fit on ordinary columns has done the imports; measured: 0.3 MB)
TRACED_LIMIT_MB = 16

_ENV = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
            MALLOC_ARENA_MAX="2")


def _cap():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def _warmed(command, warm_up_command=None, **options):
    """Run ``command`` in a capped child after the same job (or
    ``warm_up_command``) has run once unmeasured, so that the measured child
    loads the compiled kernels from numba's cache instead of compiling them."""
    subprocess.run(warm_up_command or command, capture_output=True, timeout=600,
                   preexec_fn=_cap, env=_ENV, **options)
    return subprocess.run(command, capture_output=True, text=True, timeout=300,
                          preexec_fn=_cap, env=_ENV, **options)


def _huge_matrix():
    """The issue's example: 10 rows, 10 values in distinct columns of HUGE."""
    rng = np.random.default_rng(0)
    flat = rng.choice(10 * HUGE, 10, replace=False)
    return sp.coo_matrix((rng.uniform(size=10) + 0.5, (flat % 10, flat // 10)),
                         shape=(10, HUGE)).tocsr()


#: the children's peak RSS: /proc/self/status VmHWM, this process's own
#: high-water mark (getrusage's ru_maxrss is not: Linux keeps it across fork
#: and exec, so a child of a pytest worker grown to 1.1 GB reported 1.1 GB)
_PEAK_RSS = textwrap.dedent("""
    def _peak_rss_mb():
        with open("/proc/self/status") as status:
            return [int(line.split()[1]) / 1024 for line in status
                    if line.startswith("VmHWM")][0]
""")

_ESTIMATOR_CHILD = _PEAK_RSS + textwrap.dedent("""
    import json, sys, tracemalloc
    import numpy as np
    import scipy.sparse as sp
    sys.path.insert(0, sys.argv[3])
    from test_huge_ids import _huge_matrix
    import ultrafs.sklearn as estimators

    name, options = sys.argv[1], json.loads(sys.argv[2])
    X, y = _huge_matrix(), np.array([0, 1] * 5)
    out = {"refused": {}}
    # a fit on 10 ordinary columns first: the imports and compiled kernels
    # it loads are not the huge fit's
    small = sp.random(10, 10, density=0.3, random_state=0, format="csr") + sp.eye(10)
    try:
        getattr(estimators, name)(**options).fit(small.tocsr(), y)
    except Exception:
        pass
    tracemalloc.start()
    try:
        est = getattr(estimators, name)(**options).fit(X, y)
    except Exception as error:      # a refusal: one line, no allocation
        out["fit_error"] = f"{type(error).__name__}: {error}"
    else:
        if hasattr(est, "predict"):
            out["predict"] = est.predict(X).tolist()
            out["decision"] = np.asarray(est.decision_function(X)).tolist()
        if hasattr(est, "transform"):
            out["transform"] = est.transform(X).toarray().tolist()
            out["support"] = est.get_support(indices=True).tolist()
            out["names"] = est.get_feature_names_out().tolist()
        for attribute in ("coef_", "mslr_coef_", "ranking_", "scores_"):
            try:
                getattr(est, attribute)
            except ValueError as error:
                out["refused"][attribute] = str(error)
            except AttributeError:
                pass
        if hasattr(est, "get_support"):
            try:
                est.get_support()
            except ValueError as error:
                out["refused"]["get_support()"] = str(error)
    out["traced_mb"] = tracemalloc.get_traced_memory()[1] / 2 ** 20
    tracemalloc.stop()
    out["rss_mb"] = _peak_rss_mb()
    out["vm_peak_mb"] = [int(line.split()[1]) / 1024 for line in open("/proc/self/status")
                         if line.startswith("VmPeak")][0]
    print(json.dumps(out))
""")


def _run_estimator(name, **options):
    done = _warmed([sys.executable, "-c", _ESTIMATOR_CHILD, name, json.dumps(options),
                    os.path.dirname(__file__)])
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _narrow():
    """The held columns of the huge example, as an ordinary matrix, and their ids."""
    X = _huge_matrix()
    held = np.unique(X.indices)
    narrow = sp.csr_matrix((X.data, np.searchsorted(held, X.indices), X.indptr),
                           shape=(X.shape[0], len(held)))
    return narrow, held


ESTIMATORS = [
    ("FGMClassifier", {}),
    ("L1LogisticRegression", {}),
    ("MSLRClassifier", {}),
    ("GSRFSSelector", {"n_features_to_select": 3}),
    ("SparseKernelLogisticRegression", {"basis": "rbf"}),
]


@pytest.mark.parametrize("name, options", ESTIMATORS,
                         ids=[name for name, _ in ESTIMATORS])
def test_estimator_on_a_huge_width(name, options):
    """Fit, predict, transform and names under the bounds, with the results
    of the same estimator on the held columns alone."""
    out = _run_estimator(name, **options)
    print(name, {k: out[k] for k in ("rss_mb", "traced_mb", "vm_peak_mb")})
    assert "fit_error" not in out, out["fit_error"]
    assert out["rss_mb"] < RSS_LIMIT_MB
    assert out["traced_mb"] < TRACED_LIMIT_MB
    # every per-column array is refused in one line naming the compact view
    for attribute, message in out["refused"].items():
        assert "\n" not in message and "would hold" in message and "use " in message
    if name != "SparseKernelLogisticRegression":
        assert "get_support()" in out["refused"]
    if name in ("FGMClassifier", "L1LogisticRegression", "MSLRClassifier"):
        assert "coef_" in out["refused"]
    if name == "MSLRClassifier":
        assert "mslr_coef_" in out["refused"]
    if name == "GSRFSSelector":
        assert {"coef_", "ranking_", "scores_"} <= set(out["refused"])

    import ultrafs.sklearn as estimators

    narrow, held = _narrow()
    y = np.array([0, 1] * 5)
    reference = getattr(estimators, name)(**options).fit(narrow, y)
    if "predict" in out:
        np.testing.assert_array_equal(out["predict"], reference.predict(narrow))
        np.testing.assert_allclose(out["decision"], reference.decision_function(narrow),
                                   rtol=1e-10, atol=1e-12)
    if "support" in out:
        np.testing.assert_array_equal(out["support"],
                                      held[reference.get_support(indices=True)])
        np.testing.assert_array_equal(out["transform"],
                                      reference.transform(narrow).toarray())
        assert out["names"] == [f"x{j}" for j in out["support"]]


def test_random_fourier_features_refuse_a_huge_width_in_one_line():
    """SKLR's rff basis draws 256 normals per input column and group (its
    model is that draw): a huge width is refused before any allocation."""
    out = _run_estimator("SparseKernelLogisticRegression")
    assert out["fit_error"].startswith("ParameterError: n_inputs 2147483647 is too large")
    assert "rbf basis" in out["fit_error"] and "\n" not in out["fit_error"]
    assert out["rss_mb"] < RSS_LIMIT_MB and out["traced_mb"] < TRACED_LIMIT_MB


# ------------------------------------------------------------------ the CLI
_CLI_CHILD = _PEAK_RSS + textwrap.dedent("""
    import json, sys, tracemalloc
    from ultrafs.cli import main

    def run(args):
        try:
            main(args, prog_name="ultrafs")
        except SystemExit as done:
            return done.code or 0
        return 0

    report, runs = sys.argv[1], json.loads(sys.argv[2])
    code = run(runs[0])
    figures = {"code": code,
               "rss_mb": _peak_rss_mb(),
               "vm_peak_mb": [int(line.split()[1]) / 1024
                              for line in open("/proc/self/status")
                              if line.startswith("VmPeak")][0]}
    if code == 0 and len(runs) > 1:     # again, traced: the imports are done
        tracemalloc.start()
        figures["again_code"] = run(runs[1])
        figures["traced_mb"] = tracemalloc.get_traced_memory()[1] / 2 ** 20
        tracemalloc.stop()
    with open(report, "w") as f:
        json.dump(figures, f)
""")


def _run_cli(tmp_path, *args, again=None):
    """Run ``ultrafs ARGS`` in a capped child; with ``again`` (other args),
    run that too, in the same child, under tracemalloc.  The warm-up child
    writes its outputs (the paths under ``tmp_path`` not yet there) to
    ``tmp_path / "warm-up"``."""
    report = tmp_path / "figures.json"
    runs = [[str(a) for a in args]] + ([[str(a) for a in again]] if again else [])
    warm_up = tmp_path / "warm-up"
    warm_up.mkdir(exist_ok=True)

    def elsewhere(arg):
        path = os.fspath(arg)
        if os.path.dirname(path) == str(tmp_path) and not os.path.lexists(path):
            return str(warm_up / os.path.basename(path))
        return path

    warm_runs = [[elsewhere(a) for a in run] for run in runs]
    done = _warmed([sys.executable, "-c", _CLI_CHILD, str(report), json.dumps(runs)],
                   [sys.executable, "-c", _CLI_CHILD, str(warm_up / "figures.json"),
                    json.dumps(warm_runs)])
    assert report.exists(), done.stderr[-3000:]
    return json.loads(report.read_text()), done


@pytest.fixture(scope="module")
def huge_store(tmp_path_factory):
    """A store ingested by the CLI from a LIBSVM file whose ids reach 2**31 - 1."""
    folder = tmp_path_factory.mktemp("huge")
    X, y = _huge_matrix(), np.array([-1, 1] * 5)
    lines = []
    for i in range(10):
        row = X.getrow(i)
        pairs = sorted(zip(row.indices.tolist(), row.data.tolist()))
        pairs.append((HUGE - 1 - i % 2, 1.0))        # 1-based id HUGE or HUGE - 1
        lines.append(f"{y[i]} " + " ".join(f"{j + 1}:{v!r}" for j, v in pairs))
    (folder / "huge.svm").write_text("\n".join(lines) + "\n")
    figures, done = _run_cli(folder, "ingest", folder / "huge.svm", folder / "huge.zarr")
    assert figures["code"] == 0, done.stderr[-3000:]
    assert figures["rss_mb"] < RSS_LIMIT_MB
    from ultrafs.store import open_store

    store = open_store(str(folder / "huge.zarr"))
    assert store.id_space >= HUGE - 1 and store.n_features <= 12
    return folder / "huge.zarr"


SELECTS = [
    ("fgm", []),
    ("fgm", ["--standardize"]),
    ("l1", ["--n-features-to-select", "3"]),
    ("mslr", []),
    ("sklr", ["--basis", "rbf"]),
    ("gsrfs", []),
]


@pytest.mark.parametrize("method, extra", SELECTS,
                         ids=[" ".join([m, *e]) for m, e in SELECTS])
def test_select_on_a_huge_width(tmp_path, huge_store, method, extra):
    """``select --method M`` on the store, then ``predict`` and ``report``
    with its model, each under the bounds."""
    model, again = tmp_path / "model.json", tmp_path / "again.json"
    select = ["select", "--data", huge_store, "--method", method, *extra]
    figures, done = _run_cli(tmp_path, *select, "--out", model,
                             again=[*select, "--out", again])
    print(method, extra, figures)
    assert figures["code"] == 0 and figures["again_code"] == 0, done.stderr[-3000:]
    assert figures["rss_mb"] < RSS_LIMIT_MB
    assert figures["traced_mb"] < TRACED_LIMIT_MB
    first, second = json.loads(model.read_text()), json.loads(again.read_text())
    assert (first["features"], first["coef"]) == (second["features"], second["coef"])
    features = first["features"]
    assert all(0 <= int(np.max(f)) < 2 ** 31 for f in features if np.size(f))
    predictions = tmp_path / "predictions.tsv"
    figures, done = _run_cli(tmp_path, "predict", "--model", model, "--data", huge_store,
                             "--out", predictions, again=["predict", "--model", model,
                                                          "--data", huge_store, "--out",
                                                          tmp_path / "again.tsv"])
    print("predict", figures)
    assert figures["code"] == 0 and figures["again_code"] == 0, done.stderr[-3000:]
    assert figures["rss_mb"] < RSS_LIMIT_MB
    assert figures["traced_mb"] < TRACED_LIMIT_MB
    assert len(predictions.read_text().splitlines()) >= 10
    figures, done = _run_cli(tmp_path, "report", model, "--test", huge_store, "--train",
                             huge_store, "--out", tmp_path / "report.html")
    print("report", figures)
    assert figures["code"] == 0, done.stderr[-3000:]
    assert figures["rss_mb"] < RSS_LIMIT_MB
    assert (tmp_path / "report.html").exists()


def test_select_sklr_rff_on_a_huge_width_is_one_line(tmp_path, huge_store):
    figures, done = _run_cli(tmp_path, "select", "--data", huge_store, "--method", "sklr",
                             "--out", tmp_path / "model.json")
    assert figures["code"] == 1 and figures["rss_mb"] < RSS_LIMIT_MB
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("Error: n_inputs") and "rbf basis" in lines[-1]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "model.json").exists()


# ------------------------------------- ordinary data: the same results as before
@pytest.fixture(scope="module")
def ordinary():
    rng = np.random.default_rng(5)
    X = sp.random(80, 30, density=0.3, random_state=5, format="csr")
    X.data[:] = rng.normal(size=X.nnz)
    y = np.where(np.asarray(X[:, 2].todense()).ravel() - np.asarray(
        X[:, 5].todense()).ravel() > 0, 1, 0)
    return X, y


def test_mslr_coef_is_the_dense_array_it_was(ordinary):
    from ultrafs.sklearn import MSLRClassifier

    X, y = ordinary
    est = MSLRClassifier(B=3, max_iter=3).fit(X, y)
    own = np.asarray(est.model_.coef, dtype=np.float64).reshape(len(est.model_.features), -1)
    dense = np.zeros((own.shape[1], X.shape[1]))      # the former construction
    dense[:, np.asarray(est.model_.features, dtype=np.int64)] = own.T
    assert est.mslr_coef_.dtype == dense.dtype and est.mslr_coef_.shape == dense.shape
    np.testing.assert_array_equal(est.mslr_coef_, dense)
    np.testing.assert_array_equal(est.get_support(indices=True),
                                  np.flatnonzero(est.get_support()))


@pytest.mark.parametrize("candidates", [None, 12])
def test_gsrfs_attributes_are_the_dense_arrays_they_were(ordinary, candidates):
    from ultrafs.sklearn import GSRFSSelector

    X, y = ordinary
    est = GSRFSSelector(n_features_to_select=5, candidates=candidates,
                        scale="none" if candidates else "auto").fit(X, y)
    result, n = est.result_, X.shape[1]
    ranking = np.full(n, len(result.ranking) + 1, dtype=np.int64)   # the former ones
    ranking[result.ranking] = np.arange(1, len(result.ranking) + 1)
    scores, coef = np.zeros(n), np.zeros((n, result.coef.shape[1]))
    rows = np.arange(n) if result.candidates is None else result.candidates
    scores[rows] = result.row_norms
    coef[rows] = result.coef
    for mine, theirs in ((est.ranking_, ranking), (est.scores_, scores),
                         (est.coef_, np.ascontiguousarray(coef.T))):
        assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
        np.testing.assert_array_equal(mine, theirs)
    mask = np.zeros(n, dtype=bool)
    mask[result.ranking[:5]] = True
    np.testing.assert_array_equal(est.get_support(), mask)
    np.testing.assert_array_equal(est.get_support(indices=True), np.flatnonzero(mask))
    np.testing.assert_array_equal(est.transform(X).toarray(), X[:, mask].toarray())
    assert list(est.get_feature_names_out()) == [f"x{j}" for j in np.flatnonzero(mask)]
    # CSR and CSC inputs fit the same store
    other = GSRFSSelector(n_features_to_select=5, candidates=candidates,
                          scale="none" if candidates else "auto").fit(X.tocsc(), y)
    np.testing.assert_array_equal(other.coef_, est.coef_)
    np.testing.assert_array_equal(other.ranking_, est.ranking_)


def test_kernel_width_over_held_columns_is_bit_identical():
    from ultrafs.features.kernel_width import held_columns, pairwise_distances_of

    rng = np.random.default_rng(2)
    X = sp.random(60, 500, density=0.02, random_state=2, format="csr")
    X.data[:] = rng.normal(size=X.nnz)
    squares = np.asarray(X.multiply(X).sum(axis=1)).ravel()    # the former formula
    d2 = squares[:, None] + squares[None, :] - 2.0 * (X @ X.T).toarray()
    former = np.sqrt(np.maximum(d2[np.triu_indices(60, k=1)], 0.0))
    np.testing.assert_array_equal(pairwise_distances_of(X), former)
    assert held_columns(X).shape == (60, len(np.unique(X.indices)))


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_take_columns_is_scipys_column_indexing(fmt):
    from ultrafs.sklearn.matrices import take_columns

    X = sp.random(40, 70, density=0.1, random_state=4, format=fmt)
    columns = np.array([0, 3, 17, 18, 69])
    taken = take_columns(X, columns)
    assert taken.format == ("csr" if fmt == "coo" else fmt)
    np.testing.assert_array_equal(taken.toarray(), X.tocsr()[:, columns].toarray())
    assert take_columns(X, np.zeros(0, dtype=np.int64)).shape == (40, 0)


_STORE_CHILD = _PEAK_RSS + textwrap.dedent("""
    import json, sys, tracemalloc
    import ultrafs.sklearn as estimators
    from ultrafs.store import open_store

    store = open_store(sys.argv[1])
    out = {}
    for name, options in json.loads(sys.argv[2]):
        make = getattr(estimators, name)
        make(**options).fit(store).predict(store)   # the imports (Zarr's too), unmeasured
        tracemalloc.start()
        est = make(**options).fit(store)
        predictions = est.predict(store)
        if hasattr(est, "transform"):
            est.transform(store)
            est.get_support(indices=True)
            est.get_feature_names_out()
        out[name] = {"traced_mb": tracemalloc.get_traced_memory()[1] / 2 ** 20,
                     "n_features_in": int(est.n_features_in_),
                     "predictions": len(predictions)}
        tracemalloc.stop()
    out["rss_mb"] = _peak_rss_mb()
    print(json.dumps(out))
""")


def test_estimators_fitted_on_a_huge_store(huge_store):
    """The estimators given the store itself (``n_features_in_`` is its id
    space, 2**31): fit, predict, transform under the bounds."""
    chosen = [(name, options) for name, options in ESTIMATORS if name != "GSRFSSelector"]
    done = _warmed([sys.executable, "-c", _STORE_CHILD, str(huge_store),
                    json.dumps(chosen)])
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    print(out)
    assert out["rss_mb"] < RSS_LIMIT_MB
    for name, _ in chosen:
        assert out[name]["n_features_in"] >= HUGE - 1
        assert out[name]["predictions"] == 10
        assert out[name]["traced_mb"] < TRACED_LIMIT_MB
