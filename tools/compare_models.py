"""Compare the models of two versions of ultrafs: same features, same weights?

Usage::

    # two model files, pair by pair (exit 1 when the ids of a pair differ)
    python tools/compare_models.py BEFORE.json AFTER.json [...pairs]
    # one .npz per code root (run with that root first on the path)
    python tools/compare_models.py fit --root /work/main --out base.npz
    python tools/compare_models.py fit --root /work/wt-x --out new.npz
    # compare: exit 1 when a model differs beyond --rtol
    python tools/compare_models.py compare base.npz new.npz [--rtol 0]
    # or both at once (each fit in its own process)
    python tools/compare_models.py both /work/main /work/wt-x [--rtol 0]

``fit`` runs FGM (binary, with the refit; and K = 3 classes), the l1 path,
MSLR, SKLR (CGD, FISTA, two-stage) and GSR-FS on the first rows of a
small real dataset (a9a from /work/shared/data; the 3-class problem is
a9a's rows split by a column) through :mod:`ultrafs.api`, with fixed
settings and the synchronous scheduler, and stores every model's
features, weights, intercept and objective-like numbers.  ``compare``
reports per method and array: equal bit for bit, or the largest relative
difference.  Nothing here depends on the version beyond the public API
both roots share.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

DATA = Path(os.environ.get("ULTRAFS_DATA", "/work/shared/data")) / "a9a.svm.bz2"
ROWS = 3000


def _load():
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(str(DATA), n_features=123)
    X = X[:ROWS].tocsr().astype(np.float64)
    y = np.where(y[:ROWS] > 0, 1.0, -1.0)
    return X, y


def _feature_array(features):
    """Feature ids as an int64 array: plain ids as they are; pairs (degree 2,
    groups) as rows ``[j, k]``, a single id padded with -1."""
    if all(isinstance(f, (int, np.integer)) for f in features):
        return np.asarray(features, dtype=np.int64)
    rows = [[int(f), -1] if isinstance(f, (int, np.integer))
            else [int(v) for v in f] + [-1] * (2 - len(f)) for f in features]
    return np.asarray(rows, dtype=np.int64).reshape(-1, 2)


def _model_arrays(prefix, model, out):
    out[f"{prefix}/features"] = _feature_array(model.features)
    out[f"{prefix}/coef"] = np.asarray(model.coef, dtype=np.float64)
    out[f"{prefix}/intercept"] = np.atleast_1d(np.asarray(model.intercept, dtype=np.float64))
    refit = getattr(model, "refit", None)
    if refit:
        out[f"{prefix}/refit_coef"] = np.asarray(refit.get("coef", []), dtype=np.float64)
        out[f"{prefix}/refit_intercept"] = np.atleast_1d(
            np.asarray(refit.get("intercept", 0.0), dtype=np.float64))
    history = getattr(model, "history", None) or []
    objectives = [h.get("objective") for h in history if isinstance(h, dict)
                  and h.get("objective") is not None]
    if objectives:
        out[f"{prefix}/objectives"] = np.asarray(objectives, dtype=np.float64)


def fit_all(out_path):
    """Fit every method; write their arrays to ``out_path`` (.npz)."""
    import ultrafs
    from ultrafs import api

    X, y = _load()
    out = {}
    sync = {"scheduler": "synchronous"}
    classes = np.where(y > 0, 2, 0) + (X[:, 0].toarray().ravel() > 0)   # K classes
    classes = np.searchsorted(np.unique(classes), classes).astype(np.int64)
    small_X, small_y = X[:1000], y[:1000]

    def method(name, data, labels, **options):
        """``api.fit(name, ...)``; a tree from before issue 36 (no ``api.fit``)
        through its ``select_<name>`` with the old keyword names."""
        if hasattr(api, "fit"):
            return api.fit(name, data, labels, **options)
        if "n_features_to_select" in options:
            options["features"] = options.pop("n_features_to_select")
        return getattr(api, f"select_{name}")(data, labels, **options)

    def l1_path(prefix):
        path = api.l1_path(X, y, n_lambdas=8, lambda_min_ratio=0.05, **sync)
        for k in range(len(path.lambdas)):
            out[f"{prefix}/{k}/columns"] = np.asarray(path.columns[k])
            out[f"{prefix}/{k}/coef"] = np.asarray(path.coefs[k], dtype=np.float64)
            out[f"{prefix}/{k}/intercept"] = np.atleast_1d(float(path.intercepts[k]))
        out[f"{prefix}/objectives"] = np.asarray([r["objective"] for r in path.records])

    runs = [
        ("fgm", lambda: api.select(X, y, B=5, C=1.0, max_iter=4, refit=True, **sync)),
        ("fgm_multiclass", lambda: api.select(X, classes, B=5, C=1.0, max_iter=3, **sync)),
        ("fgm_squared_hinge", lambda: api.select(X, y, B=4, C=1.0, max_iter=3,
                                                 loss="squared-hinge", **sync)),
        ("fgm_C_auto", lambda: api.select(small_X, small_y, B=4, C="auto", cv=3,
                                          max_iter=3, refit=True, **sync)),
        ("fgm_poly2", lambda: api.select(small_X, small_y, B=5, max_iter=3, poly=2,
                                         **sync)),
        ("fgm_weighted", lambda: api.select(X, y, B=5, max_iter=3,
                                            class_weight="balanced", **sync)),
        ("l1_path", None),
        ("mslr", lambda: method("mslr", X, y, B=5, C=1.0, max_iter=3, **sync)),
        ("sklr_cgd", lambda: method("sklr", small_X, small_y, n_components=200, seed=0,
                                    solver="cgd")),
        ("sklr_fista", lambda: method("sklr", small_X, small_y, n_components=200, seed=0,
                                      solver="fista")),
        ("sklr_two_stage", lambda: method("sklr", small_X, small_y, n_components=200,
                                          seed=0, solver="cgd", two_stage=0.1)),
        ("gsrfs", lambda: method("gsrfs", X, y, n_features_to_select=10, lam=1.0, **sync)),
        ("gsrfs_objective_stop", lambda: method("gsrfs", X, y, n_features_to_select=10,
                                                lam=1.0, stop="objective", **sync)),
        ("l1_select", lambda: method("l1", X, y, n_features_to_select=12, **sync)),
    ]
    for name, run in runs:
        try:                     # a method that fails is recorded, not fatal
            if run is None:
                l1_path(name)
            else:
                _model_arrays(name, run(), out)
        except Exception as exc:  # noqa: BLE001 - reported by compare
            out[f"{name}/error"] = np.asarray(f"{type(exc).__name__}: {exc}")

    out["meta/ultrafs"] = np.asarray(str(Path(ultrafs.__file__).resolve()))
    np.savez(out_path, **out)
    return out_path


def compare_files(before, after):
    """One pair of model files: ids identical, coefficients bit-identical?"""
    a, b = (json.load(open(path)) for path in (before, after))
    same_ids = a["features"] == b["features"]
    line = {"ids_identical": same_ids,
            "coef_bit_identical": a["coef"] == b["coef"],
            "intercept_bit_identical": a["intercept"] == b["intercept"],
            "n_features": len(b["features"])}
    if same_ids:
        ca, cb = np.asarray(a["coef"], float), np.asarray(b["coef"], float)
        scale = max(float(np.max(np.abs(ca))) if ca.size else 0.0, 1e-300)
        line["max_relative_coef_diff"] = float(np.max(np.abs(ca - cb))) / scale \
            if ca.size else 0.0
    return line


def _compare_file_pairs(argv):
    if len(argv) < 2 or len(argv) % 2:
        print("python tools/compare_models.py BEFORE.json AFTER.json [...pairs]",
              file=sys.stderr)
        return 2
    ok = True
    for before, after in zip(argv[::2], argv[1::2]):
        result = compare_files(before, after)
        ok &= result["ids_identical"]
        print(f"{after}: {json.dumps(result)}")
    return 0 if ok else 1


def compare(a_path, b_path, rtol=0.0):
    """Print per array: ``identical`` or the largest relative difference.

    Returns
    -------
    bool
        Whether every array is within ``rtol`` (0: bit for bit).
    """
    a, b = np.load(a_path), np.load(b_path)
    keys = sorted((set(a.files) | set(b.files)) - {"meta/ultrafs"})
    print(f"A: {a['meta/ultrafs']}\nB: {b['meta/ultrafs']}")
    ok = True
    report = {}
    for key in keys:
        if key not in a.files or key not in b.files:
            where, arrays = ("A", a) if key in a.files else ("B", b)
            report[key] = f"only in {where}" + (
                f": {arrays[key]}" if key.endswith("/error") else "")
            ok = False
            continue
        x, z = a[key], b[key]
        if x.shape != z.shape:
            report[key] = f"shape {x.shape} vs {z.shape}"
            ok = False
        elif x.dtype.kind == "U":
            same = str(x) == str(z)
            report[key] = f"{'same' if same else 'different'} error: {x} / {z}"
            ok = False
        elif x.dtype.kind in "fc":
            if np.array_equal(x, z):
                report[key] = "identical"
            else:
                scale = np.maximum(np.abs(x), np.abs(z))
                diff = float(np.max(np.abs(x - z) / np.where(scale > 0, scale, 1.0)))
                report[key] = f"max rel diff {diff:.3g}"
                ok = ok and diff <= rtol
        else:
            same = np.array_equal(x, z)
            report[key] = "identical" if same else "DIFFERENT"
            ok = ok and same
    width = max(map(len, keys)) if keys else 0
    for key in keys:
        print(f"{key:<{width}}  {report[key]}")
    print("all identical" if all(v == "identical" for v in report.values())
          else ("within rtol" if ok else "DIFFERENCES beyond rtol"))
    return ok


def _fit_in(root, out):
    env = dict(os.environ, PYTHONPATH=str(root))
    subprocess.run([sys.executable, __file__, "fit", "--root", str(root), "--out", str(out)],
                   check=True, env=env)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in ("fit", "compare", "both", "-h", "--help"):
        return _compare_file_pairs(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    fit = sub.add_parser("fit")
    fit.add_argument("--root", required=True, help="the ultrafs checkout to import")
    fit.add_argument("--out", required=True)
    cmp = sub.add_parser("compare")
    cmp.add_argument("a")
    cmp.add_argument("b")
    cmp.add_argument("--rtol", type=float, default=0.0)
    both = sub.add_parser("both")
    both.add_argument("root_a")
    both.add_argument("root_b")
    both.add_argument("--rtol", type=float, default=0.0)
    args = parser.parse_args(argv)
    if args.command == "fit":
        sys.path.insert(0, str(Path(args.root).resolve()))
        import ultrafs

        where = Path(ultrafs.__file__).resolve()
        if Path(args.root).resolve() not in where.parents:
            raise SystemExit(f"imported {where}, not from {args.root}: set PYTHONPATH")
        fit_all(args.out)
        print(json.dumps({"root": args.root, "out": args.out}))
        return 0
    if args.command == "compare":
        return 0 if compare(args.a, args.b, args.rtol) else 1
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a.npz", Path(tmp) / "b.npz"
        _fit_in(args.root_a, a)
        _fit_in(args.root_b, b)
        return 0 if compare(a, b, args.rtol) else 1


if __name__ == "__main__":
    sys.exit(main())
