"""Every method × every face: the table of docs/METHODS.md, one test per cell.

:data:`CELLS` says, for each registered method and each face of
:data:`FACES`, whether the face works (``yes``: what works, in a short
phrase) or is refused (``no``: the refusal, exactly as the code prints
it).  ``test_face[METHOD-FACE]`` checks its cell: it exercises the face on
tiny data and checks a real result, or triggers the refusal and checks
that it is one line, with no traceback, that says exactly
:attr:`Cell.text`.  ``test_the_doc_table_is_the_test_table`` parses the
table of docs/METHODS.md and checks each cell's status word and refusal
against :data:`CELLS`, so the document cannot drift.

The ``scheduler=Client`` cells use the session's real 2-worker
``LocalCluster`` (``local_cluster_client`` of tests/conftest.py), so they
are marked ``slow``; every other cell runs in-process on a problem of 120
rows and 12 columns.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import pickle
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.cli_tools import assert_one_line_error, run
from ultrafs.methods.registry import get_method, method_names, method_of_params

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "METHODS.md"

#: the faces: test id -> column of docs/METHODS.md's table
FACES = {
    "cli": "CLI",
    "estimator": "estimator",
    "progress": "progress",
    "report": "report",
    "sample_weight": "sample_weight",
    "class_weight": "class_weight",
    "multiclass": "K ≥ 3 classes",
    "checkpoint": "checkpoint/resume",
    "scheduler": "scheduler=Client",
    "clone_pickle_search": "clone/pickle/GridSearchCV",
    "evaluate_predict": "evaluate/predict of its output",
}

#: the registered methods when this module was collected (the built-in
#: ones; a method a test registers later has no cells)
METHODS = tuple(method_names())


@dataclass(frozen=True)
class Cell:
    """One cell of the table.

    Attributes
    ----------
    works : bool
        The face works (``yes``) or is refused (``no``).
    text : str
        ``yes``: what works, in a few words; ``no``: the refusal, exactly
        as printed (after ``Error: `` on the command line).
    """

    works: bool
    text: str


def yes(text):
    """A cell that works: ``text`` says what, in a few words."""
    return Cell(True, text)


def no(message):
    """A refused cell: ``message`` as the command line prints it."""
    return Cell(False, message)


def _checkpoint_refusal(method):
    return (f"--checkpoint applies to --method fgm, not --method {method} "
            f"({method} commits no loop state to resume from)")


def _two_classes_refusal(problem):
    return (f"{problem} needs two classes; the data has 3 "
            f"(K classes: --method fgm or --method mslr or --method gsrfs)")


_PROGRESS = yes("`--progress` / `verbose=1`: one line per phase on stderr when piped")
_REPORT = yes("`ultrafs report MODEL`: HTML naming the method and its objective")
_SAMPLE_WEIGHT = "`fit(X, y, sample_weight=w)`: integer weights = repeated rows"
_CLASS_WEIGHT = "`class_weight={label: w}`: a class's rows weighted w"
_SCHEDULER = "its passes run on the Client's cluster; the same model as threads"
_SEARCH = "`clone`, `pickle` (fitted too), `GridSearchCV(cv=2)`"
_EVALUATE = "`ultrafs evaluate` / `ultrafs predict` on its model file"

CELLS = {
    # ------------------------------------------------------------ FGM
    ("fgm", "cli"): yes("`ultrafs select --method fgm`"),
    ("fgm", "estimator"): yes("`FGMClassifier`: predict, predict_proba, transform"),
    ("fgm", "progress"): _PROGRESS,
    ("fgm", "report"): _REPORT,
    ("fgm", "sample_weight"): yes(_SAMPLE_WEIGHT),
    ("fgm", "class_weight"): yes(_CLASS_WEIGHT),
    ("fgm", "multiclass"): yes("one feature set shared by the K classes "
                                "(multinomial or one-vs-rest)"),
    ("fgm", "checkpoint"): yes("`--checkpoint DIR --resume` (`--C auto` too): an interrupted "
                               "run ends with the uninterrupted model"),
    ("fgm", "scheduler"): yes(_SCHEDULER),
    ("fgm", "clone_pickle_search"): yes(_SEARCH),
    ("fgm", "evaluate_predict"): yes(_EVALUATE),
    # ------------------------------------------------------------ ℓ1-LR path
    ("l1", "cli"): yes("`ultrafs select --method l1 --n-features-to-select K`; "
                       "`ultrafs path`"),
    ("l1", "estimator"): yes("`L1LogisticRegression`: predict, predict_proba, transform"),
    ("l1", "progress"): yes(_PROGRESS.text),
    ("l1", "report"): _REPORT,
    ("l1", "sample_weight"): yes(_SAMPLE_WEIGHT),
    ("l1", "class_weight"): yes(_CLASS_WEIGHT),
    ("l1", "multiclass"): no(_two_classes_refusal("ℓ1 logistic regression")),
    ("l1", "checkpoint"): no(_checkpoint_refusal("l1")),
    ("l1", "scheduler"): yes(_SCHEDULER),
    ("l1", "clone_pickle_search"): yes(_SEARCH),
    ("l1", "evaluate_predict"): yes("its model file, and a chosen point of a path file "
                                    "(`ultrafs path`)"),
    # ------------------------------------------------------------ MSLR
    ("mslr", "cli"): yes("`ultrafs select --method mslr`"),
    ("mslr", "estimator"): yes("`MSLRClassifier`: predict, predict_proba, transform"),
    ("mslr", "progress"): _PROGRESS,
    ("mslr", "report"): _REPORT,
    ("mslr", "sample_weight"): yes(_SAMPLE_WEIGHT),
    ("mslr", "class_weight"): yes(_CLASS_WEIGHT),
    ("mslr", "multiclass"): yes("one-vs-rest with one shared support"),
    ("mslr", "checkpoint"): no(_checkpoint_refusal("mslr")),
    ("mslr", "scheduler"): yes(_SCHEDULER),
    ("mslr", "clone_pickle_search"): yes(_SEARCH),
    ("mslr", "evaluate_predict"): yes(_EVALUATE),
    # ------------------------------------------------------------ SKLR
    ("sklr", "cli"): yes("`ultrafs select --method sklr`"),
    ("sklr", "estimator"): yes("`SparseKernelLogisticRegression`: predict, predict_proba "
                               "(a kernel basis: no column selection)"),
    ("sklr", "progress"): _PROGRESS,
    ("sklr", "report"): _REPORT,
    ("sklr", "sample_weight"): yes(_SAMPLE_WEIGHT),
    ("sklr", "class_weight"): yes(_CLASS_WEIGHT),
    ("sklr", "multiclass"): no(_two_classes_refusal("sparse kernel logistic regression")),
    ("sklr", "checkpoint"): no(_checkpoint_refusal("sklr")),
    ("sklr", "scheduler"): yes("accepted; no Dask passes (it fits in this process): "
                               "the same model as threads"),
    ("sklr", "clone_pickle_search"): yes(_SEARCH),
    ("sklr", "evaluate_predict"): yes(_EVALUATE + " (the basis is rebuilt)"),
    # ------------------------------------------------------------ GSR-FS
    ("gsrfs", "cli"): yes("`ultrafs select --method gsrfs`"),
    ("gsrfs", "estimator"): yes("`GSRFSSelector`: a selector (transform, get_support, "
                                "scores_, ranking_)"),
    ("gsrfs", "progress"): _PROGRESS,
    ("gsrfs", "report"): _REPORT,
    ("gsrfs", "sample_weight"): yes(_SAMPLE_WEIGHT),
    ("gsrfs", "class_weight"): yes(_CLASS_WEIGHT),
    ("gsrfs", "multiclass"): yes("K classes as K one-hot target columns"),
    ("gsrfs", "checkpoint"): no(_checkpoint_refusal("gsrfs")),
    ("gsrfs", "scheduler"): yes(_SCHEDULER),
    ("gsrfs", "clone_pickle_search"): yes(_SEARCH + ", in a Pipeline before a classifier"),
    ("gsrfs", "evaluate_predict"): yes(_EVALUATE),
}

# ------------------------------------------------------------ each method's quick run
#: command-line options of a quick run of each method
CLI_ARGS = {
    "fgm": ["--B", 3, "--max-iter", 2, "--C", 10],
    "l1": ["--n-features-to-select", 4],
    "mslr": ["--B", 3, "--max-iter", 2],
    "sklr": ["--n-components", 60],
    "gsrfs": ["--n-features-to-select", 3],
}

#: estimator parameters of a quick fit
QUICK = {
    "fgm": {"B": 3, "max_iter": 2, "C": 10.0},
    "l1": {"n_features_to_select": 4},
    "mslr": {"B": 3, "max_iter": 2},
    "sklr": {"n_components": 60},
    "gsrfs": {"n_features_to_select": 3},
}

#: estimator parameters of a fit solved tightly enough that two fits of
#: the same problem (weights or repeated rows) agree to 1e-6, with nothing
#: computed from the rows' distinct values (GSR-FS's column scales, SKLR's σ)
TIGHT = {
    "fgm": {"B": 3, "max_iter": 2, "C": 10.0, "inner_tol": 1e-9, "inner_kkt_tol": 1e-9,
            "inner_max_iter": 10000},
    "l1": {"n_features_to_select": 4, "tol": 1e-9, "max_iter": 1000},
    "mslr": {"B": 3, "max_iter": 2, "inner_tol": 1e-10},
    # σ given: its default, the median distance of the rows, differs for repeated rows
    "sklr": {"n_components": 60, "sigma": 4.0, "tol": 1e-10, "max_iter": 100000},
    "gsrfs": {"n_features_to_select": 3, "scale": "none", "tol": 1e-10, "max_iter": 5000},
}

#: a grid of two points for GridSearchCV
GRIDS = {
    "fgm": {"B": [2, 3]},
    "l1": {"n_features_to_select": [3, 4]},
    "mslr": {"B": [2, 3]},
    "sklr": {"lambda_ratio": [0.05, 0.1]},
    "gsrfs": {"n_features_to_select": [2, 3]},
}

RELEVANT = (1, 4, 7)


# ------------------------------------------------------------ data
@dataclass
class Problem:
    """A planted binary problem (labels "no" / "yes"), its 3-class sibling,
    and Zarr stores of them (labels -1 / +1 and 0, 1, 2)."""

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    y3: np.ndarray
    train: Path
    test: Path
    train3: Path
    folder: Path


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    from ultrafs.store.writers.zarr_writer import write_store

    rng = np.random.default_rng(11)
    n, m = 240, 12
    X = rng.standard_normal((n, m))
    w = np.zeros(m)
    w[list(RELEVANT)] = [1.5, -1.5, 1.5]
    label = X @ w + 0.2 * rng.standard_normal(n) > 0
    y = np.where(label, "yes", "no")
    y3 = np.asarray(["a", "b", "c"])[np.argmax(X[:, list(RELEVANT)] * [1, -1, 1], axis=1)]
    folder = tmp_path_factory.mktemp("faces")
    half = n // 2
    signs = np.where(label, 1.0, -1.0)
    write_store(folder / "train.zarr", X[:half], signs[:half])
    write_store(folder / "test.zarr", X[half:], signs[half:])
    codes = np.unique(y3, return_inverse=True)[1].astype(np.float64)
    write_store(folder / "train3.zarr", X[:half], codes[:half])
    return Problem(X[:half], y[:half], X[half:], y[half:], y3[:half],
                   folder / "train.zarr", folder / "test.zarr", folder / "train3.zarr",
                   folder)


_MODEL_FILES = {}


def model_file(method, problem):
    """The model file of ``ultrafs select --method METHOD`` (its quick run) on
    the training store, written once per module."""
    path = problem.folder / f"{method}.model.json"
    if _MODEL_FILES.get(method) != path:
        run("select", "--data", problem.train, "--method", method, *CLI_ARGS[method],
            "--out", path, "--overwrite")
        _MODEL_FILES[method] = path
    return path


def estimator(method, **params):
    from ultrafs.sklearn import estimator_class

    return estimator_class(method)(**params)


def fitted_output(est, X):
    """What a fitted estimator computes of X: its decision values, or a
    selector's scores."""
    if hasattr(est, "decision_function"):
        return np.asarray(est.decision_function(X))
    return np.asarray(est.scores_)


# ------------------------------------------------------------ refusals
def assert_refusal(result, cell):
    """A refused command: non-zero exit, one line, no traceback, exactly the cell's text."""
    assert_one_line_error(result, cell.text)
    lines = [ln for ln in result.output.strip().splitlines() if ln.startswith("Error")]
    assert lines == [f"Error: {cell.text}"], result.output


def assert_one_line_exception(excinfo, *fragments):
    message = str(excinfo.value)
    assert "\n" not in message.strip(), message
    for fragment in fragments:
        assert fragment in message, message


# ------------------------------------------------------------ the faces
#: a piped :class:`ultrafs.progress.Phase`'s line: ``NAME: N/M steps in T s; status``
#: or ``NAME: T s; status`` (its name may hold ": ", the context of the phase)
PHASE_LINE = re.compile(
    r"^(\S.*): (?:[\d,]+(?:/[\d,]+)? \S+ in )?\d+(?:\.\d+)? (?:s|min|h)\b", re.M)


def phase_lines(text):
    """The lines of ``text`` that are a piped phase's."""
    return [match.group(0) for match in PHASE_LINE.finditer(text)]


def phase_names(text):
    """The names of the piped phases in ``text``, each without its context
    (``iteration 1 of 2: scoring candidates`` is ``scoring candidates``)."""
    return {match.group(1).rsplit(": ", 1)[-1] for match in PHASE_LINE.finditer(text)}


def check_cli(method, cell, problem, request):
    from ultrafs.model import Model

    model = Model.load(model_file(method, problem))
    assert method_of_params(model.params).name == method
    assert len(model.features) > 0
    if method == "l1":      # the whole path too
        path = problem.folder / "l1.path.json"
        run("path", "--data", problem.train, "--n-lambdas", 5, "--no-progress",
            "--out", path)
        points = json.loads(path.read_text())["path"]
        lambdas = [point["lambda"] for point in points]
        assert len(lambdas) == 5 and lambdas == sorted(lambdas, reverse=True)
        assert points[-1]["nnz"] >= points[0]["nnz"]


def check_estimator(method, cell, problem, request):
    est = estimator(method, **QUICK[method]).fit(problem.X, problem.y)
    if not hasattr(est, "predict"):           # a selector
        assert est.transform(problem.X_test).shape == (len(problem.X_test), 3)
        assert set(RELEVANT) <= set(np.flatnonzero(est.get_support()).tolist())
        return
    if hasattr(est, "get_support"):
        assert set(RELEVANT) <= set(np.flatnonzero(est.get_support()).tolist())
    accuracy = np.mean(est.predict(problem.X_test) == problem.y_test)
    assert accuracy >= 0.8, accuracy
    proba = est.predict_proba(problem.X_test)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def check_progress(method, cell, problem, request):
    # the estimator's verbose=: the method's own phases (no command around it)
    shown = {}
    for verbose in (1, 0):
        stream = io.StringIO()
        with contextlib.redirect_stderr(stream):
            estimator(method, **QUICK[method], verbose=verbose).fit(problem.X, problem.y)
        shown[verbose] = stream.getvalue()
    assert phase_names(shown[1]), shown[1]
    assert not phase_lines(shown[0]), shown[0]
    # the command line, piped: the same phases, one line each, none redrawn
    args = ["select", "--data", problem.train, "--method", method, *CLI_ARGS[method],
            "--out", problem.folder / f"{method}.progress.json", "--overwrite"]
    loud = run(*args, "--progress")
    assert "\r" not in loud.stderr, "piped progress redraws a line"
    assert phase_names(loud.stderr) & phase_names(shown[1]), loud.stderr
    quiet = run(*args, "--no-progress")
    assert not phase_lines(quiet.stderr), quiet.stderr


def check_report(method, cell, problem, request):
    out = problem.folder / f"{method}.report.html"
    run("report", model_file(method, problem), "--out", out)
    text = out.read_text()
    shown = get_method(method)
    assert shown.display_name in text
    assert html.escape(shown.objective) in text or shown.objective in text
    if method != "fgm":
        fgm = get_method("fgm").objective
        assert html.escape(fgm) not in text and fgm not in text


def repeated(X, y, counts):
    return np.repeat(X, counts, axis=0), np.repeat(y, counts)


def check_sample_weight(method, cell, problem, request):
    counts = np.random.default_rng(5).integers(1, 4, len(problem.y))
    weighted = estimator(method, **TIGHT[method]).fit(problem.X, problem.y,
                                                      sample_weight=counts.astype(float))
    copies = estimator(method, **TIGHT[method]).fit(*repeated(problem.X, problem.y, counts))
    np.testing.assert_allclose(fitted_output(weighted, problem.X_test),
                               fitted_output(copies, problem.X_test), rtol=1e-6, atol=1e-6)
    plain = estimator(method, **TIGHT[method]).fit(problem.X, problem.y)
    assert not np.allclose(fitted_output(weighted, problem.X_test),
                           fitted_output(plain, problem.X_test), rtol=1e-6, atol=1e-6)


def check_class_weight(method, cell, problem, request):
    weighted = estimator(method, **TIGHT[method], class_weight={"yes": 3.0, "no": 1.0})
    weighted.fit(problem.X, problem.y)
    counts = np.where(problem.y == "yes", 3, 1)
    copies = estimator(method, **TIGHT[method]).fit(*repeated(problem.X, problem.y, counts))
    np.testing.assert_allclose(fitted_output(weighted, problem.X_test),
                               fitted_output(copies, problem.X_test), rtol=1e-6, atol=1e-6)


def check_multiclass(method, cell, problem, request):
    if not cell.works:
        result = run("select", "--data", problem.train3, "--method", method,
                     *CLI_ARGS[method], "--out", problem.folder / "k3.json", ok=False)
        assert_refusal(result, cell)
        with pytest.raises(ValueError) as excinfo:
            estimator(method, **QUICK[method]).fit(problem.X, problem.y3)
        assert_one_line_exception(excinfo, "binary", "FGMClassifier")
        return
    path = problem.folder / f"{method}.k3.json"
    run("select", "--data", problem.train3, "--method", method, *CLI_ARGS[method],
        "--out", path, "--overwrite")
    metrics = json.loads(run("evaluate", "--model", path, "--data", problem.train3).stdout)
    assert metrics["accuracy"] >= 0.7, metrics
    est = estimator(method, **QUICK[method]).fit(problem.X, problem.y3)
    if hasattr(est, "predict"):
        assert set(est.classes_) == {"a", "b", "c"}
        assert np.mean(est.predict(problem.X) == problem.y3) >= 0.7
    else:
        assert set(RELEVANT) <= set(np.flatnonzero(est.get_support()).tolist())


class _Interrupted(Exception):
    """Raised by a run's callback: the run stops where a kill would."""


def check_checkpoint(method, cell, problem, request):
    folder = problem.folder / f"{method}.checkpoint"
    args = ["select", "--data", problem.train, "--method", method, *CLI_ARGS[method],
            "--out", problem.folder / "resumed.json", "--overwrite"]
    if not cell.works:
        assert_refusal(run(*args, "--checkpoint", folder, ok=False), cell)
        return
    from ultrafs.api import fit
    from ultrafs.model import Model

    # FGM's options (the method that resumes), its choice of C included
    options = dict(B=3, max_iter=4, tol=0.0, C="auto")
    whole = fit(method, str(problem.train), **options)
    assert len(whole.history) == 4

    def stop_after_two(record):
        if record["iteration"] == 2:
            raise _Interrupted

    with pytest.raises(_Interrupted):
        fit(method, str(problem.train), **options, checkpoint=folder,
            callback=stop_after_two)
    run("select", "--data", problem.train, "--method", method, "--B", 3, "--max-iter", 4,
        "--tol", 0, "--C", "auto", "--checkpoint", folder, "--resume", "--no-progress",
        "--out", problem.folder / "resumed.json", "--overwrite")
    resumed = Model.load(problem.folder / "resumed.json")
    assert resumed.params["C"] == whole.params["C"]
    assert resumed.features == whole.features
    np.testing.assert_array_equal(resumed.coef, whole.coef)
    assert [h["objective"] for h in resumed.history] == [h["objective"]
                                                        for h in whole.history]


def check_scheduler(method, cell, problem, request):
    client = request.getfixturevalue("local_cluster_client")

    def transitions():
        return client.run_on_scheduler(
            lambda dask_scheduler: dask_scheduler.transition_counter)

    before = transitions()
    remote = estimator(method, **QUICK[method], scheduler=client,
                       block_size=8).fit(problem.X, problem.y)
    if "passes" in get_method(method).execution:
        assert transitions() > before, "no task ran on the cluster"
    local = estimator(method, **QUICK[method], scheduler="threads",
                      block_size=8).fit(problem.X, problem.y)
    np.testing.assert_array_equal(fitted_output(remote, problem.X_test),
                                  fitted_output(local, problem.X_test))


def check_clone_pickle_search(method, cell, problem, request):
    from sklearn.base import clone
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline

    est = estimator(method, **QUICK[method])
    assert clone(est).get_params() == est.get_params()
    grid = GRIDS[method]
    if not hasattr(est, "predict"):             # a selector: before a classifier
        name = type(est).__name__.lower()
        est = make_pipeline(est, LogisticRegression())
        grid = {f"{name}__{key}": values for key, values in grid.items()}
    search = GridSearchCV(est, grid, cv=2).fit(problem.X, problem.y)
    assert len(search.cv_results_["mean_test_score"]) == 2
    best = search.best_estimator_
    copy = pickle.loads(pickle.dumps(best))
    np.testing.assert_array_equal(copy.predict(problem.X_test), best.predict(problem.X_test))
    assert np.mean(best.predict(problem.X_test) == problem.y_test) >= 0.75


def check_evaluate_predict(method, cell, problem, request):
    outputs = [(model_file(method, problem), [])]
    if method == "l1":              # a path file's point
        path = problem.folder / "l1.path.json"
        run("path", "--data", problem.train, "--n-lambdas", 8, "--no-progress",
            "--out", path)
        outputs.append((path, ["--n-features-to-select", 4]))
    for model, point in outputs:
        metrics = json.loads(run("evaluate", "--model", model, "--data", problem.test,
                                 *point).stdout)
        assert metrics["n_samples"] == len(problem.y_test)
        assert metrics["accuracy"] >= 0.75, metrics
        predicted = json.loads(run("predict", "--model", model, "--data", problem.test,
                                   *point, "--format", "json").stdout)
        truth = np.where(problem.y_test == "yes", 1.0, -1.0)
        assert np.mean(np.asarray(predicted["predicted"]) == truth) == pytest.approx(
            metrics["accuracy"])


CHECKS = {
    "cli": check_cli,
    "estimator": check_estimator,
    "progress": check_progress,
    "report": check_report,
    "sample_weight": check_sample_weight,
    "class_weight": check_class_weight,
    "multiclass": check_multiclass,
    "checkpoint": check_checkpoint,
    "scheduler": check_scheduler,
    "clone_pickle_search": check_clone_pickle_search,
    "evaluate_predict": check_evaluate_predict,
}


def _cases():
    for method in METHODS:
        for face in FACES:
            marks = []
            if face == "scheduler":         # the session's LocalCluster
                marks.append(pytest.mark.slow)
            yield pytest.param(method, face, id=f"{method}-{face}", marks=marks)


@pytest.mark.parametrize("method, face", list(_cases()))
def test_face(method, face, problem, request):
    cell = CELLS[(method, face)]
    CHECKS[face](method, cell, problem, request)


# ------------------------------------------------------------ the table itself
def test_every_method_and_face_has_a_cell():
    assert set(CELLS) == {(m, f) for m in METHODS for f in FACES}
    assert set(CHECKS) == set(FACES)
    for key in (CLI_ARGS, QUICK, TIGHT, GRIDS):
        assert set(key) == set(METHODS)


def doc_table(text):
    """The method × face table of docs/METHODS.md.

    Returns
    -------
    header : list of str
        The method columns, in order.
    rows : dict
        ``{face label: [cell text, ...]}``, one cell per method column.
    """
    lines = [ln.strip() for ln in text.splitlines()]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| face |"))
    split = [c.strip() for c in lines[start].strip("|").split("|")]
    header = split[1:]
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return header, rows


def parse_cell(text):
    """``(works, refusal)`` of a cell of the doc's table: its status word
    (``yes`` / ``no``) and the refusal in backticks of a ``no`` cell."""
    status = text.split(":", 1)[0].strip().lower()
    assert status in ("yes", "no"), f"a cell starts with yes: or no:, got {text!r}"
    refusal = None
    if status == "no":
        quoted = re.findall(r"`([^`]+)`", text)
        assert len(quoted) == 1, f"a refusal is one code span: {text!r}"
        refusal = quoted[0]
    return status == "yes", refusal


def render_table():
    """The markdown table of :data:`CELLS` (what docs/METHODS.md holds):
    ``python -m tests.test_method_faces`` prints it."""
    rows = ["| face | " + " | ".join(METHODS) + " |", "|---" * (len(METHODS) + 1) + "|"]
    for face, label in FACES.items():
        cells = []
        for method in METHODS:
            cell = CELLS[(method, face)]
            text = f"yes: {cell.text}" if cell.works else f"no: `{cell.text}`"
            cells.append(text)
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def test_the_doc_table_is_the_test_table():
    text = DOC.read_text(encoding="utf-8")
    header, rows = doc_table(text)
    assert header == list(METHODS)
    assert list(rows) == list(FACES.values())
    labels = {label: face for face, label in FACES.items()}
    for label, cells in rows.items():
        for method, cell_text in zip(header, cells, strict=True):
            cell = CELLS[(method, labels[label])]
            works, refusal = parse_cell(cell_text)
            where = f"docs/METHODS.md, {method} × {label}"
            assert works == cell.works, where
            if not cell.works:
                assert refusal == cell.text, where


if __name__ == "__main__":
    print(render_table())
