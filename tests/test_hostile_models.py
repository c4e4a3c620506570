"""Model files that cannot lie (issue 39): every field of every method's
model file, changed by hand, is refused in one line or predicts exactly
what the genuine file predicts.

A module fixture fits a small model of every kind (FGM linear, C auto with
its refit, groups, tree, degree 2, HIK, chi2, multi-class; the l1 path,
MSLR, SKLR with RFF and RBF bases, GSR-FS on classes and on real targets)
on tiny data, and an ℓ1 path file (``ultrafs path --out``, predicted at
its last point), and records what ``ultrafs predict`` writes for each.

The table :data:`EDITS` holds the hand edits (delete a key, null, a text,
a number changed, 1e308, 2**40, a list emptied, shortened or repeated...);
:func:`field_paths` enumerates the fields of a file (every top-level key,
the keys of ``feature_space``, ``params`` and ``refit``, and the first and
last elements of its lists, one level further for pairs).  Each edit of
each field is run twice:

* **as forged** (the fingerprint left as it was): ``predict`` must exit 1
  with one ``Error:`` line naming the file and no traceback, write
  nothing, leave the file and the store as they were, within 30 s; or
  write exactly the genuine predictions (an edit that changes nothing).
* **re-signed deliberately** (``ultrafs sign --in-place``, what a user
  who vouches for an edit does): the field checks behind the fingerprint
  then hold alone. Every edit gives one line (from ``sign`` or from
  ``predict``) or predictions, never a traceback or a hang; and the
  contradictions of :data:`MUST_REFUSE` (ids beyond the data, a feature
  space other than the method's, weights that overflow, no batches, an
  unknown version...) are refused.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import signal
import time

import numpy as np
import pytest
from click.testing import CliRunner

from ultrafs.api import fit
from ultrafs.cli import main
from ultrafs.datasets.planted import make_planted_problem
from ultrafs.model import MAX_MODEL_BYTES, Model
from ultrafs.model_checks import MAX_WEIGHT
from ultrafs.model_fingerprint import fingerprint_of, signed
from ultrafs.store.writers.zarr_writer import write_store

#: seconds a command may run before it counts as a hang
HANG_S = 30

_FGM = dict(B=2, max_iter=2, tol=0.0, C=1.0)
#: kind: (method, data, options); tiny fits, well under a second each once compiled
KINDS = {
    "fgm": ("fgm", "train", _FGM),
    "fgm C auto refit": ("fgm", "train", dict(B=2, max_iter=2, tol=0.0, C="auto",
                                              refit=True)),
    "groups": ("fgm", "train", dict(_FGM, groups=[k // 3 for k in range(12)])),
    "tree": ("fgm", "train", dict(_FGM, tree=[12 + k // 3 for k in range(12)]
                                  + [16, 16, 17, 17, -1, -1])),
    "poly 2": ("fgm", "train", dict(_FGM, poly=2)),
    "hik": ("fgm", "train", dict(_FGM, kernel="hik")),
    "chi2": ("fgm", "train", dict(_FGM, kernel="chi2")),
    "multi-class": ("fgm", "multi", _FGM),
    "l1": ("l1", "train", dict(n_features_to_select=4)),
    "mslr": ("mslr", "train", dict(B=2, max_iter=2)),
    "sklr rff": ("sklr", "train", dict(n_components=30, max_iter=100)),
    "sklr rbf": ("sklr", "train", dict(basis="rbf", max_iter=100)),
    "gsrfs": ("gsrfs", "train", dict(n_features_to_select=4)),
    "gsrfs regression": ("gsrfs", "cont", dict(n_features_to_select=4)),
    # a path file (ultrafs path --out), predicted at its last point
    "l1 path": ("path", "train", ["--n-lambdas", "6"]),
}
#: what predict needs besides --model and --data, by kind
PREDICT_OPTIONS = {"l1 path": ["--point", "-1"]}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """Stores (binary, 3 classes, real targets), every kind's model file and
    the bytes its genuine ``predict`` writes."""
    root = tmp_path_factory.mktemp("hostile-models")
    p = make_planted_problem(n_samples=120, n_features=12, n_relevant=4, n_test=10,
                             seed=5)
    X = np.abs(p.X_train)                   # additive kernels take values >= 0
    rng = np.random.default_rng(0)
    stores = {"train": write_store(root / "train.zarr", X, p.y_train).path,
              "multi": write_store(root / "multi.zarr", X,
                                   rng.integers(0, 3, size=len(X))).path,
              "cont": write_store(root / "cont.zarr", X, X[:, 0] - X[:, 1]
                                  + 0.1 * rng.standard_normal(len(X))).path}
    models = {}
    for kind, (method, data, options) in KINDS.items():
        path = root / f"{kind.replace(' ', '-')}.json"
        if method == "path":
            result = run_cli(["path", "--data", stores[data], *options, "--out", path])
            assert result.exit_code == 0, result.output
        else:
            fit(method, stores[data], **options).save(path)
        out = root / f"{kind.replace(' ', '-')}.tsv"
        result = run_cli(["predict", "--model", path, "--data", stores[data], "--out", out,
                          *PREDICT_OPTIONS.get(kind, [])])
        assert result.exit_code == 0, result.output
        models[kind] = {"path": path, "data": stores[data], "predicted": out.read_bytes()}
    return {"root": root, "models": models, "stores": stores}


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang(f"no answer within {HANG_S} s")


def run_cli(args):
    """``ultrafs ARGS`` in this process, stopped as a hang after ``HANG_S``."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_S)
    try:
        return CliRunner().invoke(main, [str(a) for a in args], prog_name="ultrafs")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def one_line_problem(result, path):
    """None when ``result`` is one refusal naming ``path``, else what is wrong."""
    if isinstance(result.exception, _Hang):
        return "hang"
    if result.exit_code != 1:
        return f"exit {result.exit_code}"
    if "Traceback" in result.output or not isinstance(result.exception, SystemExit):
        return f"traceback ({type(result.exception).__name__}: {result.exception})"
    lines = result.stderr.strip().splitlines()
    if len(lines) != 1 or not lines[0].startswith("Error: ") or str(path) not in lines[0]:
        return f"not one line naming the file: {result.stderr.strip()[:300]!r}"
    return None


def _digest(path) -> str:
    """SHA-256 of a file, or of every file under a folder (names and bytes)."""
    digest = hashlib.sha256()
    paths = [path] if os.path.isfile(path) else sorted(
        os.path.join(d, f) for d, _, files in os.walk(path) for f in files)
    for name in paths:
        digest.update(os.path.relpath(name, path).encode())
        with open(name, "rb") as fh:
            digest.update(fh.read())
    return digest.hexdigest()


# ------------------------------------------------------------ the edits
_DELETE = object()


def _changed_number(v):
    return v + 1 if isinstance(v, int) else v * 2 + 1


#: name, applies to (a value), the new value (or _DELETE)
EDITS = [
    ("deleted", lambda v, in_dict: in_dict, lambda v: _DELETE),
    ("null", lambda v, in_dict: v is not None, lambda v: None),
    ("text", lambda v, in_dict: not isinstance(v, str), lambda v: "x"),
    ("bool", lambda v, in_dict: not isinstance(v, bool), lambda v: True),
    ("number changed", lambda v, in_dict: _is_number(v), _changed_number),
    ("negated", lambda v, in_dict: _is_number(v) and v != 0, lambda v: -v),
    ("zero", lambda v, in_dict: _is_number(v) and v != 0, lambda v: 0),
    ("2**40", lambda v, in_dict: _is_number(v), lambda v: 2**40),
    ("1e308", lambda v, in_dict: _is_number(v), lambda v: 1e308),
    ("text changed", lambda v, in_dict: isinstance(v, str), lambda v: v + "x"),
    ("emptied", lambda v, in_dict: isinstance(v, (list, dict)) and v,
     lambda v: type(v)()),
    ("last dropped", lambda v, in_dict: isinstance(v, list) and v, lambda v: v[:-1]),
    ("first repeated", lambda v, in_dict: isinstance(v, list) and v,
     lambda v: v + v[:1]),
    ("reversed", lambda v, in_dict: isinstance(v, list) and len(v) > 1,
     lambda v: v[::-1]),
]


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


#: keys whose items are enumerated (the others are edited as a whole)
_OPENED = {"feature_space", "params", "refit", "points"}


def field_paths(obj, path=(), depth=0):
    """The fields of a model file: (path of keys and indices, value).

    Every top-level key; the keys of ``feature_space``, ``params``,
    ``refit`` (and an RBF space's ``points``); the first and last elements
    of lists, and of theirs (a pair, a row of K weights); the keys of the
    first and last points of a path file's ``path``.
    """
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "fingerprint":
                continue
            yield path + (key,), value
            if depth == 0 or key in _OPENED or isinstance(value, list):
                if key not in ("history", "validation") or depth == 0:
                    yield from field_paths(value, path + (key,), depth + 1)
    elif isinstance(obj, list) and obj and depth < 4:
        for index in sorted({0, len(obj) - 1}):
            yield path + (index,), obj[index]
            if isinstance(obj[index], list) or (
                    isinstance(obj[index], dict) and path and path[-1] == "path"):
                yield from field_paths(obj[index], path + (index,), depth + 1)


def forged(obj, path, new):
    """A copy of ``obj`` with the field at ``path`` replaced (or deleted)."""
    out = copy.deepcopy(obj)
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    if new is _DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return out


def every_edit(obj):
    """(description, forged content) of every edit of every field, each
    content once."""
    seen = {fingerprint_of(obj)}
    for path, value in field_paths(obj):
        in_dict = isinstance(path[-1], str)
        for name, applies, new_value in EDITS:
            if not applies(value, in_dict):
                continue
            content = forged(obj, path, new_value(value))
            key = fingerprint_of(content)
            if key in seen:
                continue
            seen.add(key)
            yield f"{'.'.join(map(str, path))} {name}", content


def _write(path, content):
    path.write_text(json.dumps(content, indent=1, allow_nan=True))


def _predict(env, kind, model_path, out):
    return run_cli(["predict", "--model", model_path, "--data",
                    env["models"][kind]["data"], "--out", out,
                    *PREDICT_OPTIONS.get(kind, [])])


def _check_forged(env, kind, tmp_path, content, resign):
    """None when the forged ``content`` is refused in one line (or, as
    forged, predicts exactly as the genuine file); else the problem."""
    model_path, out = tmp_path / "forged.json", tmp_path / "predicted.tsv"
    if out.exists():
        out.unlink()
    _write(model_path, content)
    if resign:
        before = _digest(model_path)
        started = time.monotonic()
        result = run_cli(["sign", model_path, "--in-place"])
        if result.exit_code != 0:
            problem = one_line_problem(result, model_path)
            if problem is None and _digest(model_path) != before:
                problem = "a refused sign changed the file"
            return problem, "refused"
        if time.monotonic() - started > HANG_S:
            return "sign ran past the hang bound", None
    before = _digest(model_path)
    result = _predict(env, kind, model_path, out)
    if _digest(model_path) != before:
        return "the model file changed", None
    if result.exit_code == 0:
        if resign:
            return None, "predicted"
        if out.read_bytes() != env["models"][kind]["predicted"]:
            return "accepted as forged, with other predictions", None
        return None, "same predictions"
    problem = one_line_problem(result, model_path)
    if problem is None and out.exists():
        problem = "a refusal left predictions behind"
    return problem, "refused"


@pytest.mark.parametrize("resign", [False, True], ids=["as forged", "re-signed"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_field_edited_by_hand(env, tmp_path, kind, resign):
    """Every single edit of every field: refused in one line, or (as forged)
    exactly the genuine predictions, or (re-signed, the user's deliberate
    act) predictions; never a traceback, a hang or a changed input."""
    genuine = json.loads(env["models"][kind]["path"].read_text())
    store = env["models"][kind]["data"]
    store_before = _digest(store)
    failures, outcomes = [], {}
    for what, content in every_edit(genuine):
        problem, outcome = _check_forged(env, kind, tmp_path, content, resign)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if problem is not None:
            failures.append(f"{what}: {problem}")
    assert not failures, f"{len(failures)} edits:\n" + "\n".join(failures[:30])
    assert _digest(store) == store_before
    assert outcomes.get("refused", 0) > 20
    if not resign:        # the fingerprint refuses every edit that changes a value
        assert outcomes.get("same predictions", 0) <= 2, outcomes


# ------------------------------------------- what the checks refuse alone
def _set(*path_and_value):
    *path, value = path_and_value

    def edit(obj):
        return forged(obj, tuple(path), value)
    return edit


def _first_feature(value):
    def edit(obj):
        out = copy.deepcopy(obj)
        fid = out["features"][0]
        out["features"][0] = [value, *fid[1:]] if isinstance(fid, list) else value
        if isinstance(fid, list) and obj["feature_space"]["kind"] in ("groups", "tree"):
            out["features"][0] = [fid[0], value]
        return out
    return edit


def _weight(where, value):
    def edit(obj):
        out = copy.deepcopy(obj)
        if where == "intercept":
            out["intercept"] = ([value] * len(out["intercept"])
                                if isinstance(out["intercept"], list) else value)
        else:
            out["coef"][0] = ([value] * len(out["coef"][0])
                              if isinstance(out["coef"][0], list) else value)
        return out
    return edit


def _no_features(obj):
    out = copy.deepcopy(obj)
    out["features"] = []
    return out


def _space_degree_2(obj):
    return forged(obj, ("feature_space",), {"kind": "poly2", "gamma": 1.0, "coef0": 1.0})


def _space_linear(obj):
    return forged(obj, ("feature_space",), {"kind": "linear"})


def _string_classes(obj):
    n = len(obj["classes"])
    return forged(obj, ("classes",), ["a\tb"] + [f"c{k}" for k in range(1, n)])


def _fewer_classes(obj):
    return forged(obj, ("classes",), obj["classes"][:-1])


_ID = "outside the ids|must be a column in"
#: name, edit, fragment of the one line (alternatives separated by |), kinds
#: it applies to (None: all)
MUST_REFUSE = [
    ("feature id 2**40", _first_feature(2**40), _ID, None),
    ("feature id 1e9", _first_feature(10**9), _ID, None),
    ("feature id 2**70", _first_feature(2**70), "features[0]", None),
    ("feature id -1", _first_feature(-1), "features[0]", None),
    ("no features (weights left)", _no_features, "coef must hold 0", None),
    ("degree 2 instead", _space_degree_2, "",
     {"fgm", "fgm C auto refit", "groups", "tree", "hik", "chi2", "multi-class", "l1",
      "mslr", "sklr rff", "sklr rbf", "gsrfs", "gsrfs regression"}),
    ("linear instead", _space_linear, "", {"groups", "tree", "poly 2", "hik", "chi2",
                                           "sklr rff", "sklr rbf"}),
    ("format version 4", _set("format_version", 4), "model format version 4", None),
    ("batches removed", _set("batches", _DELETE), "no 'batches'", None),
    ("target removed", _set("target", _DELETE), "", None),
    ("batches past the end", _set("batches", [0, 10**6]), "batches", None),
    ("weight 1e308", _weight("coef", 1e308), "MAX_WEIGHT", None),
    ("weight 2 x MAX_WEIGHT", _weight("coef", 2 * MAX_WEIGHT), "MAX_WEIGHT", None),
    ("intercept 1e308", _weight("intercept", 1e308), "MAX_WEIGHT", None),
    ("string classes with a tab", _string_classes, "classes", None),
    ("a class fewer", _fewer_classes, "classes",
     set(KINDS) - {"gsrfs regression"}),
    ("id range that excludes a feature", _set("params", "id_range", [0, 0]),
     "outside the ids", {"fgm", "fgm C auto refit", "poly 2", "multi-class", "l1",
                         "mslr", "gsrfs", "gsrfs regression", "hik", "chi2"}),
    ("id range reversed", _set("params", "id_range", [11, 0]), "id_range", None),
    ("params poly 2", _set("params", "poly", 2), "params poly",
     {"fgm", "fgm C auto refit", "groups", "tree", "hik", "chi2", "multi-class"}),
    ("params space tree", _set("params", "space", "tree"), "params space",
     {"groups", "hik", "chi2"}),
    ("group node beyond the candidates", _set("params", "n_candidates", 1),
     "n_candidates", {"groups", "tree"}),
    ("params loss other", _set("params", "loss", "squared_hinge"), "params loss",
     {"fgm", "poly 2", "groups"}),
    ("sklr basis other", _set("params", "basis", "rbf"), "basis", {"sklr rff"}),
    ("sklr sigma other", _set("params", "sigma", 1.5), "sigma", {"sklr rff", "sklr rbf"}),
    ("rff components fewer than ids", _set("feature_space", "n_components", 2),
     "n_components|must be a column in", {"sklr rff"}),
    ("refit weight 1e308", lambda obj: forged(obj, ("refit", "intercept"), 1e308),
     "MAX_WEIGHT", {"fgm C auto refit"}),
]


def _point(index, key, value):
    """An edit of one point of a path file (``value``: the new value, or a
    function of the old one)."""
    def edit(obj):
        old = obj["path"][index][key]
        return forged(obj, ("path", index, key), value(old) if callable(value) else value)
    return edit


#: a path file's contradictions (its points are models, checked as such)
PATH_MUST_REFUSE = [
    ("point feature id 2**40", _point(-1, "features", lambda f: [2**40] + f[1:]), _ID),
    ("point feature id -1", _point(-1, "features", lambda f: [-1] + f[1:]), "features[0]"),
    ("point weight 1e308", _point(-1, "coef", lambda c: [1e308] + c[1:]), "MAX_WEIGHT"),
    ("point intercept 1e308", _point(-1, "intercept", 1e308), "MAX_WEIGHT"),
    ("point nnz other", _point(-1, "nnz", lambda n: n + 1), "nnz"),
    ("λ rising", _point(-1, "lambda", 1e9), "must decrease"),
    ("id range that excludes a feature", _set("id_range", [0, 0]), "outside the ids"),
    ("format version 3", _set("format_version", 3), "format version 3"),
    ("method other", _set("method", "fgm"), "method must be l1"),
]
#: the kinds written by fit(...).save: the model files
MODEL_KINDS = [kind for kind, (method, _, _) in KINDS.items() if method != "path"]


def _refusal_cases():
    for name, edit, fragment, kinds in MUST_REFUSE:
        for kind in MODEL_KINDS:
            if kinds is None or kind in kinds:
                yield pytest.param(kind, edit, fragment, id=f"{kind}: {name}")
    for name, edit, fragment in PATH_MUST_REFUSE:
        yield pytest.param("l1 path", edit, fragment, id=f"l1 path: {name}")


@pytest.mark.parametrize("kind, edit, fragment", list(_refusal_cases()))
def test_checks_refuse_what_a_re_signed_file_contradicts(env, tmp_path, kind, edit,
                                                         fragment):
    """Behind the fingerprint: a contradiction is refused even when the user
    re-signs the file (by ``sign`` itself, which checks every field, and by
    ``predict``, ``evaluate`` and ``report`` on a file signed by the
    library's own function)."""
    genuine = json.loads(env["models"][kind]["path"].read_text())
    content = edit(genuine)
    assert fingerprint_of(content) != fingerprint_of(genuine)
    path = tmp_path / "forged.json"
    _write(path, signed(content))
    before = _digest(path)
    result = run_cli(["sign", path, "--in-place"])
    assert one_line_problem(result, path) is None, result.output
    assert _names(result.stderr, fragment), result.stderr
    assert _digest(path) == before
    out, page = tmp_path / "predicted.tsv", tmp_path / "report.html"
    data = env["models"][kind]["data"]
    point = PREDICT_OPTIONS.get(kind, [])
    for command in (["predict", "--model", path, "--data", data, "--out", out, *point],
                    ["evaluate", "--model", path, "--data", data, *point],
                    ["report", path, "--out", page]):
        result = run_cli(command)
        assert one_line_problem(result, path) is None, (command[0], result.output)
        assert _names(result.stderr, fragment), result.stderr
    assert not out.exists() and not page.exists() and _digest(path) == before


def _names(line, fragment) -> bool:
    """Whether ``line`` holds one of the ``|``-separated alternatives."""
    return any(part in line for part in fragment.split("|"))


# ------------------------------------------------------ fingerprint itself
def test_genuine_files_predict_unchanged_after_sign(env, tmp_path):
    """Signing a genuine file changes nothing: same bytes, same predictions."""
    for kind, entry in env["models"].items():
        copy_path = tmp_path / "copy.json"
        copy_path.write_bytes(entry["path"].read_bytes())
        assert run_cli(["sign", copy_path, "--in-place"]).exit_code == 0
        assert json.loads(copy_path.read_text()) == json.loads(entry["path"].read_text())
        out = tmp_path / "p.tsv"
        assert _predict(env, kind, copy_path, out).exit_code == 0
        assert out.read_bytes() == entry["predicted"], kind


def test_reindented_file_keeps_its_fingerprint(env, tmp_path):
    """The fingerprint is of the content, not the layout."""
    entry = env["models"]["multi-class"]
    path = tmp_path / "compact.json"
    path.write_text(json.dumps(json.loads(entry["path"].read_text()),
                               separators=(",", ":")))
    out = tmp_path / "p.tsv"
    assert _predict(env, "multi-class", path, out).exit_code == 0
    assert out.read_bytes() == entry["predicted"]


def _old_version(version):
    def edit(obj):
        out = copy.deepcopy(obj)
        del out["fingerprint"]
        out["format_version"] = version
        if version == 1:
            out["groups"] = out.pop("batches")
        return out
    return edit


@pytest.mark.parametrize("version", [1, 2])
def test_files_written_before_fingerprints(env, tmp_path, version):
    """A file of version 1 or 2 has no fingerprint: refused in one line that
    says how to re-sign it; ``sign`` writes it in the current version, and
    then it predicts exactly as before."""
    entry = env["models"]["fgm"]
    path = tmp_path / "old.json"
    _write(path, _old_version(version)(json.loads(entry["path"].read_text())))
    out = tmp_path / "p.tsv"
    result = _predict(env, "fgm", path, out)
    assert one_line_problem(result, path) is None
    assert "has no fingerprint" in result.stderr and "ultrafs sign" in result.stderr
    assert not out.exists()
    signed_path = tmp_path / "signed.json"
    assert run_cli(["sign", path, "--out", signed_path]).exit_code == 0
    assert json.loads(signed_path.read_text())["format_version"] == 3
    assert _predict(env, "fgm", signed_path, out).exit_code == 0
    assert out.read_bytes() == entry["predicted"]


def test_path_files_written_before_fingerprints(env, tmp_path):
    """A path file of version 1 has no fingerprint: refused in one line
    that says how to re-sign it; ``sign`` checks every point and writes
    version 2, which predicts exactly as before.  An edit of a point is
    refused by the fingerprint."""
    entry = env["models"]["l1 path"]
    genuine = json.loads(entry["path"].read_text())
    old = {k: v for k, v in genuine.items() if k != "fingerprint"}
    old["format_version"] = 1
    path, out = tmp_path / "old.json", tmp_path / "p.tsv"
    _write(path, old)
    result = _predict(env, "l1 path", path, out)
    assert one_line_problem(result, path) is None
    assert "path file of format version 1 has no fingerprint" in result.stderr
    assert "ultrafs sign" in result.stderr and not out.exists()
    signed_path = tmp_path / "signed.json"
    assert run_cli(["sign", path, "--out", signed_path]).exit_code == 0
    assert json.loads(signed_path.read_text()) == genuine
    assert _predict(env, "l1 path", signed_path, out).exit_code == 0
    assert out.read_bytes() == entry["predicted"]
    edited = forged(genuine, ("path", -1, "coef", 0), genuine["path"][-1]["coef"][0] * 2)
    _write(path, edited)
    result = _predict(env, "l1 path", path, tmp_path / "q.tsv")
    assert one_line_problem(result, path) is None
    assert "path file content does not match its fingerprint" in result.stderr


@pytest.mark.parametrize("args, fragment", [
    ([], "give --out FILE"),
    (["--in-place", "--out", "x.json"], "give --out FILE"),
])
def test_sign_needs_one_destination(env, tmp_path, args, fragment):
    path = tmp_path / "m.json"
    path.write_bytes(env["models"]["fgm"]["path"].read_bytes())
    result = run_cli(["sign", path, *args])
    assert result.exit_code == 2 and fragment in result.output
    assert path.read_bytes() == env["models"]["fgm"]["path"].read_bytes()


def test_sign_refuses_its_input_as_output_and_large_files(env, tmp_path):
    path = tmp_path / "m.json"
    path.write_bytes(env["models"]["fgm"]["path"].read_bytes())
    result = run_cli(["sign", path, "--out", path])
    assert result.exit_code == 1 and "Traceback" not in result.output
    large = tmp_path / "large.json"
    with open(large, "wb") as fh:
        fh.truncate(MAX_MODEL_BYTES + 1)
    for command in (["sign", large, "--out", tmp_path / "s.json"],
                    ["report", large, "--out", tmp_path / "r.html"],
                    ["evaluate", "--model", large, "--data", env["stores"]["train"]]):
        result = run_cli(command)
        assert one_line_problem(result, large) is None, result.output
        assert "larger than the 64 MiB limit" in result.stderr
    assert not (tmp_path / "s.json").exists() and not (tmp_path / "r.html").exists()


def test_api_load_checks_the_fingerprint(env, tmp_path):
    """``Model.load`` (the library's reader) refuses an edit as the CLI does;
    ``Model.from_dict`` builds a model from a dict made in memory."""
    from ultrafs.errors import InputFormatError

    genuine = json.loads(env["models"]["fgm"]["path"].read_text())
    content = forged(genuine, ("coef", 0), genuine["coef"][0] + 1.0)
    path = tmp_path / "m.json"
    _write(path, content)
    with pytest.raises(InputFormatError, match="does not match its fingerprint"):
        Model.load(path)
    assert Model.from_dict(content).coef[0] == genuine["coef"][0] + 1.0


def test_string_classes_are_predicted(env, tmp_path):
    """Class labels that are strings (an estimator fitted on them) are
    written as they are, not formatted as numbers."""
    for kind in ("fgm", "multi-class"):
        genuine = json.loads(env["models"][kind]["path"].read_text())
        names = [f"class {k}" for k in range(len(genuine["classes"]))]
        path = tmp_path / "named.json"
        _write(path, signed(forged(genuine, ("classes",), names)))
        out = tmp_path / "p.tsv"
        assert _predict(env, kind, path, out).exit_code == 0
        rows = out.read_text().splitlines()
        assert {row.split("\t")[1] for row in rows[1:]} <= set(names)
        if kind == "multi-class":
            assert "decision_class 0" in rows[0]


def test_other_id_offset_is_refused(env, tmp_path):
    """A model of 0-based ids applied to 1-based data: every column would be
    shifted by one, so it is refused in one line naming the data."""
    from ultrafs.model import WrongIdsError
    from ultrafs.store import open_store

    model = Model.load(env["models"]["fgm"]["path"])
    model.params["id_offset"] = 1
    with pytest.raises(WrongIdsError, match=r"feature ids start at 1 \(params id_offset\), "
                                            r"those of .*train.zarr at 0"):
        model.decision_function_store(open_store(env["stores"]["train"]))


def test_decision_that_overflows_is_refused(env, tmp_path):
    """Weights within MAX_WEIGHT times data values beyond 1e208 overflow:
    one line naming the data, no infinity passed on to the metrics."""
    from ultrafs.errors import InputFormatError
    from ultrafs.store import open_store

    X = np.full((4, 12), 1e300)
    store = open_store(write_store(tmp_path / "huge.zarr", X, np.array([-1, 1, -1, 1]),
                                   dtype=np.float64).path)
    model = Model.load(env["models"]["fgm"]["path"])
    model.coef = np.full_like(model.coef, MAX_WEIGHT)
    model.params["id_offset"] = 0
    with pytest.raises(InputFormatError,
                       match="the model: its decision values are not finite on .*huge"):
        model.evaluate_store(store)
