"""Run report (`ultrafs.report.build_report`): HTML + PNG figures."""

import html
import os
import re
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from ultrafs import report as report_module  # noqa: E402
from ultrafs.api import select  # noqa: E402
from ultrafs.errors import UltraFSError, UltraFSWarning  # noqa: E402
from ultrafs.model import Model  # noqa: E402
from ultrafs.report import build_report  # noqa: E402
from ultrafs.store.writers.zarr_writer import write_store  # noqa: E402
from ultrafs.datasets.planted import make_planted_problem  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def problem():
    return make_planted_problem(n_samples=200, n_features=40, n_relevant=6,
                                n_test=200, seed=3)


@pytest.fixture(scope="module")
def linear_model(problem):
    return select(problem.X_train, problem.y_train, B=3, max_iter=4, tol=0.0)


@pytest.fixture(scope="module")
def poly_model(problem):
    return select(problem.X_train[:, :10], problem.y_train, B=3, max_iter=3,
                  tol=0.0, poly=2)


@pytest.fixture(scope="module")
def stores(problem, tmp_path_factory):
    root = tmp_path_factory.mktemp("report-stores")
    return {
        "test": write_store(root / "test.zarr", problem.X_test, problem.y_test),
        "test10": write_store(root / "test10.zarr", problem.X_test[:, :10],
                              problem.y_test),
        # fewer columns than the linear model uses: some features are absent
        "narrow": write_store(root / "narrow.zarr", problem.X_test[:, :5],
                              problem.y_test),
        "train": write_store(root / "train.zarr", problem.X_train, problem.y_train),
        "train10": write_store(root / "train10.zarr", problem.X_train[:, :10],
                               problem.y_train),
    }


@pytest.fixture(scope="module")
def refit_model(stores):
    """A binary model with its refit, fitted on the training store itself."""
    return select(stores["train"], B=3, max_iter=4, tol=0.0, refit=True)


def _check_png(path):
    import matplotlib.image

    with open(path, "rb") as fh:
        assert fh.read(8) == PNG_SIGNATURE
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[2] in (3, 4)
    assert image.shape[0] >= 200 and image.shape[1] >= 400
    assert np.ptp(image[..., :3]) > 0  # not a blank canvas


def _referenced_files(page):
    return re.findall(r'<img src="([^"]+)"', page)


def _check_links(page, directory):
    srcs = _referenced_files(page)
    assert srcs
    for src in srcs:
        assert "/" not in src  # relative, next to the page
        assert os.path.isfile(os.path.join(directory, html.unescape(src)))
    return srcs


def _no_temporaries(directory):
    return [name for name in os.listdir(directory) if name.startswith(".tmp")]


def test_report_with_test_store(linear_model, stores, tmp_path):
    out = tmp_path / "report.html"
    with warnings.catch_warnings():
        warnings.simplefilter("error", UltraFSWarning)  # nothing is absent
        result = build_report(linear_model, out, test_store=stores["test"])

    assert result["html"] == str(out)
    assert set(result["figures"]) == {"objective", "timing", "features", "accuracy"}
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["report.html", "report_objective.png", "report_timing.png",
         "report_features.png", "report_accuracy.png"])
    for path in result["figures"].values():
        _check_png(path)

    page = out.read_text(encoding="utf-8")
    srcs = _check_links(page, tmp_path)
    assert sorted(srcs) == sorted(os.path.basename(p)
                                  for p in result["figures"].values())
    for table in ("parameters-table", "history-table", "features-table",
                  "accuracy-table"):
        assert f'id="{table}"' in page

    data = result["data"]
    t = len(linear_model.batches) - 1
    assert data["iteration"] == [r["iteration"] for r in linear_model.history]
    assert data["n_features"] == [3, 6, 9, 12]
    assert set(data["phases"]) == {"score_seconds", "materialize_seconds",
                                   "solve_seconds"}
    # top features: sorted by |weight|, ids of the model, all in the page
    top = data["top_features"]
    assert len(top) == len(linear_model.features)  # fewer than top=30
    weights = np.abs([r["weight"] for r in top])
    assert np.all(np.diff(weights) <= 0)
    assert sorted(r["id"] for r in top) == sorted(linear_model.features)
    features_table = page[page.index('id="features-table"'):]
    features_table = features_table[:features_table.index("</table>")]
    for row in top:
        assert f'<td class="text">{row["id"]}</td>' in features_table
    # accuracy vs features: one row per k, equal to evaluating truncated models
    assert [r["n_batches"] for r in data["accuracy"]] == list(range(1, t + 1))
    for k, row in enumerate(data["accuracy"], start=1):
        expected = linear_model.truncated(k).evaluate_store(stores["test"])
        assert row["n_features"] == expected["n_features_model"] == 3 * k
        assert row["accuracy"] == expected["accuracy"]
        assert row["auc"] == expected["auc"]
        assert f"<td>{row['accuracy']:.4f}</td>" in page
    assert data["accuracy"][-1]["accuracy"] > 0.75
    assert not _no_temporaries(tmp_path)


def test_report_without_test_store_and_top(linear_model, tmp_path):
    result = build_report(linear_model, tmp_path / "run.html", top=5)
    assert set(result["figures"]) == {"objective", "timing", "features"}
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["run.html", "run_objective.png", "run_timing.png", "run_features.png"])
    for path in result["figures"].values():
        _check_png(path)
    page = (tmp_path / "run.html").read_text(encoding="utf-8")
    _check_links(page, tmp_path)
    assert "accuracy-table" not in page
    assert result["data"]["accuracy"] is None
    assert [r["rank"] for r in result["data"]["top_features"]] == [1, 2, 3, 4, 5]
    assert "Top 5 features" in page


def test_report_from_model_file(linear_model, stores, tmp_path):
    linear_model.save(tmp_path / "model.json")
    result = build_report(str(tmp_path / "model.json"), tmp_path / "r.html",
                          test_store=stores["test"].path)
    assert "accuracy" in result["figures"]
    assert len(result["data"]["accuracy"]) == len(linear_model.batches) - 1


def test_report_degree2(poly_model, stores, tmp_path):
    result = build_report(poly_model, tmp_path / "report.html",
                          test_store=stores["test10"])
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    _check_links(page, tmp_path)
    for path in result["figures"].values():
        _check_png(path)
    pairs = [f for f in poly_model.features if isinstance(f, list)]
    assert pairs, "the degree-2 model should select some cross/square features"
    ids = [r["id"] for r in result["data"]["top_features"]]
    for pair in pairs:
        assert pair in ids
        assert f'<td class="text">[{pair[0]}, {pair[1]}]</td>' in page
    # degree-2 history records (pairs evaluated...) are in the history table
    assert "<th>pairs_evaluated</th>" in page
    assert len(result["data"]["accuracy"]) == len(poly_model.batches) - 1


def test_absent_features_warn_once(linear_model, stores, tmp_path):
    with pytest.warns(UltraFSWarning, match="absent from the store") as record:
        result = build_report(linear_model, tmp_path / "report.html",
                              test_store=stores["narrow"])
    assert len([w for w in record if w.category is UltraFSWarning]) == 1
    assert record[0].filename == __file__  # points at the caller
    assert result["data"]["absent_warning"] in str(record[0].message)
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert html.escape(result["data"]["absent_warning"]) in page


def test_html_is_escaped(linear_model, tmp_path):
    model = linear_model.truncated(len(linear_model.batches) - 1)
    model.params = dict(model.params, command="ultrafs <script>alert('x')</script> & co")
    model.stop_reason = '<b>"stopped"</b>'
    build_report(model, tmp_path / "odd name&.html")
    page = (tmp_path / "odd name&.html").read_text(encoding="utf-8")
    assert "<script>" not in page and "<b>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; co" in page
    assert 'src="odd%20name%26_objective.png"' in page
    assert os.path.isfile(tmp_path / "odd name&_objective.png")


def test_model_without_iterations(stores, tmp_path):
    empty = Model(features=[], coef=np.zeros(0), intercept=0.5, batches=[0],
                  loss="logistic", classes=[-1.0, 1.0])
    result = build_report(empty, tmp_path / "report.html",
                          test_store=stores["test"])
    for path in result["figures"].values():
        _check_png(path)
    assert result["data"]["accuracy"] == []
    assert result["data"]["top_features"] == []


@pytest.mark.parametrize("stage", ["render", "html"])
def test_failure_while_rendering_leaves_nothing(linear_model, stores, tmp_path,
                                                monkeypatch, stage):
    (tmp_path / "report.html").write_text("old report")
    before = sorted(os.listdir(tmp_path))

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    target = "plot_features" if stage == "render" else "html_page"
    monkeypatch.setattr(report_module, target, boom)
    with pytest.raises(RuntimeError, match="disk full"):
        build_report(linear_model, tmp_path / "report.html",
                     test_store=stores["test"])
    assert sorted(os.listdir(tmp_path)) == before
    assert (tmp_path / "report.html").read_text() == "old report"


def test_failure_while_moving_rolls_back(linear_model, tmp_path, monkeypatch):
    real_replace = os.replace
    calls = []

    def flaky_replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError("simulated failure")
        return real_replace(src, dst)

    monkeypatch.setattr(report_module.os, "replace", flaky_replace)
    with pytest.raises(OSError, match="simulated"):
        build_report(linear_model, tmp_path / "report.html")
    assert os.listdir(tmp_path) == []


def test_missing_matplotlib(linear_model, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(UltraFSError, match=r"pip install 'ultrafs\[report\]'"):
        build_report(linear_model, tmp_path / "report.html")
    assert os.listdir(tmp_path) == []


def test_negative_top(linear_model, tmp_path):
    with pytest.raises(UltraFSError, match="top"):
        build_report(linear_model, tmp_path / "report.html", top=-1)


def test_missing_output_folder(linear_model, tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        build_report(linear_model, tmp_path / "nowhere" / "report.html")
    assert info.value.filename == str(tmp_path / "nowhere")
    assert os.listdir(tmp_path) == []


# ------------------------------------------- refit and l1-LR next to the model
def _curve_keys(data):
    return [data[key] for key in ("accuracy", "accuracy_refit", "accuracy_l1")]


def test_three_curves_with_a_training_store(refit_model, stores, tmp_path):
    from ultrafs.methods.refit import refit_prefix

    out = tmp_path / "report.html"
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # nothing absent, no sklearn warning
        result = build_report(refit_model, out, test_store=stores["test"],
                              train_store=stores["train"])
    data = result["data"]
    plain, refit, l1 = _curve_keys(data)
    t = len(refit_model.batches) - 1
    counts = [refit_model.batches[k] for k in range(1, t + 1)]
    assert counts == [3, 6, 9, 12]
    for curve in (plain, refit, l1):
        assert [r["n_batches"] for r in curve] == list(range(1, t + 1))
        assert [r["n_features"] for r in curve] == counts
        for r in curve:
            assert 0.5 <= r["accuracy"] <= 1.0 and 0.5 <= r["auc"] <= 1.0
            assert r["log_loss"] > 0        # all three are logistic models
    # the refit: C of the model's refit; at the last prefix it is the model's own
    assert all(r["C"] == refit_model.refit["C"] for r in refit)
    own = refit_model.evaluate_store(stores["test"])     # predicts with the refit
    assert own["predictor"] == "refit"
    for key in ("accuracy", "auc", "log_loss"):
        assert refit[-1][key] == pytest.approx(own[key], abs=1e-8)
    last = refit_prefix(refit_model, stores["train"])
    np.testing.assert_allclose(last["coef"], refit_model.refit["coef"], rtol=0,
                               atol=1e-8)
    assert last["intercept"] == pytest.approx(refit_model.refit["intercept"], abs=1e-8)
    # an earlier prefix is a different refit, on its own columns
    first = refit_prefix(refit_model, stores["train"], 1)
    assert first["coef"].shape == (3,) and first["n_features"] == 3
    # the l1-LR baseline: never more nonzeros than the prefix, C and nnz recorded
    for r in l1:
        assert 0 < r["nnz"] <= r["n_features"]
        assert r["C"] > 0 and r["converged"] is True
    assert l1[-1]["nnz"] == l1[-1]["n_features"]     # found exactly on this problem
    assert any("in memory" in note for note in data["accuracy_notes"])
    # page: one table row per (k, curve), the notes, a JSON-serialisable summary
    page = out.read_text(encoding="utf-8")
    table = page[page.index('id="accuracy-table"'):]
    table = table[:table.index("</table>")]
    assert table.count("<tr>") == 1 + 3 * t
    for label in ("FGM (final weights)", "FGM refit (l2)", "l1-LR (scikit-learn)"):
        assert table.count(f'<td class="text">{html.escape(label)}</td>') == t
    for r in refit + l1:
        assert f"<td>{r['accuracy']:.4f}</td>" in table
    assert "loaded in memory" in page
    _check_png(result["figures"]["accuracy"])
    import json

    json.dumps(data)


def test_plain_model_refit_uses_its_C(linear_model, problem, tmp_path):
    """A model without refit: the prefixes are refitted with its C."""
    from ultrafs.store import InMemoryStore

    train = InMemoryStore(problem.X_train, problem.y_train)
    test = InMemoryStore(problem.X_test, problem.y_test)
    result = build_report(linear_model, tmp_path / "r.html", test_store=test,
                          train_store=train)
    refit = result["data"]["accuracy_refit"]
    assert [r["C"] for r in refit] == [linear_model.params["C"]] * len(refit)
    # the plain curve is unchanged by the training store
    assert result["data"]["accuracy"] == build_report(
        linear_model, tmp_path / "p.html", test_store=test)["data"]["accuracy"]


def test_l1_counts_never_exceed_the_target(rng):
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression

    from ultrafs.methods.l1_baseline import l1_logistic_at_counts

    X = sp.random(300, 80, density=0.1, format="csr", random_state=1)
    w = rng.normal(size=80) * (rng.random(80) < 0.3)
    y = np.where(X @ w + 0.1 * rng.normal(size=300) > 0, 1.0, -1.0)
    counts = [0, 1, 4, 9, 30, 80, 500]
    fits = l1_logistic_at_counts(X, y, counts)
    assert [f["target"] for f in fits] == counts
    for f in fits:
        assert f["nnz"] <= f["target"] and f["nnz"] == len(f["columns"])
        # the recorded C and weights are scikit-learn's fit at that C
        ref = LogisticRegression(solver="liblinear", l1_ratio=1.0, C=f["C"],
                                 tol=1e-4, max_iter=1000, random_state=0).fit(X, y)
        np.testing.assert_array_equal(np.flatnonzero(ref.coef_), f["columns"])
        np.testing.assert_allclose(ref.coef_.ravel()[f["columns"]], f["coef"])
    assert fits[0]["nnz"] == 0
    assert [f["nnz"] for f in fits[1:4]] == [1, 4, 9]
    assert fits[-1]["nnz"] <= 80


def test_l1_baseline_size_limit_refuses(refit_model, stores, tmp_path):
    from ultrafs.errors import ParameterError

    nnz = int(stores["train"].nnz)
    with pytest.raises(ParameterError, match="loads the training store in memory"):
        build_report(refit_model, tmp_path / "report.html", test_store=stores["test"],
                     train_store=stores["train"], l1_max_nnz=nnz - 1)
    assert os.listdir(tmp_path) == []
    # at the limit it runs
    result = build_report(refit_model, tmp_path / "report.html",
                          test_store=stores["test"], train_store=stores["train"],
                          l1_max_nnz=nnz)
    assert len(result["data"]["accuracy_l1"]) == len(refit_model.batches) - 1


def test_training_store_needs_a_test_store_and_the_models_classes(
        refit_model, problem, stores, tmp_path):
    from ultrafs.store import InMemoryStore

    with pytest.raises(UltraFSError, match="needs a test store"):
        build_report(refit_model, tmp_path / "r.html", train_store=stores["train"])
    other = InMemoryStore(problem.X_train, np.where(problem.y_train > 0, 1.0, 0.0))
    with pytest.raises(UltraFSError, match="classes"):
        build_report(refit_model, tmp_path / "r.html", test_store=stores["test"],
                     train_store=other)
    assert os.listdir(tmp_path) == []


def test_degree2_model_l1_on_linear_columns(poly_model, stores, tmp_path):
    result = build_report(poly_model, tmp_path / "report.html",
                          test_store=stores["test10"], train_store=stores["train10"])
    data = result["data"]
    plain, refit, l1 = _curve_keys(data)
    assert [r["n_features"] for r in refit] == [r["n_features"] for r in plain]
    assert [r["n_features"] for r in l1] == [r["n_features"] for r in plain]
    assert all(r["nnz"] <= min(r["n_features"], 10) for r in l1)
    assert any("linear columns only" in note for note in data["accuracy_notes"])
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "linear columns only" in page


def test_multiclass_model_gets_the_refit_and_a_note(tmp_path):
    from ultrafs.datasets.planted import make_planted_multiclass

    p = make_planted_multiclass(300, 30, 6, 3, n_test=150, seed=4)
    train = write_store(tmp_path / "train.zarr", p.X_train, p.y_train)
    test = write_store(tmp_path / "test.zarr", p.X_test, p.y_test)
    model = select(train, B=3, max_iter=2, tol=0.0, refit=True)
    (tmp_path / "out").mkdir()
    result = build_report(model, tmp_path / "out" / "report.html", test_store=test,
                          train_store=train, l1_max_nnz=1)   # no l1: no limit
    data = result["data"]
    assert data["accuracy_l1"] is None
    assert len(data["accuracy_refit"]) == len(model.batches) - 1
    own = model.evaluate_store(test)
    assert data["accuracy_refit"][-1]["accuracy"] == pytest.approx(own["accuracy"],
                                                                  abs=1e-8)
    assert any("binary only" in note for note in data["accuracy_notes"])


def test_cli_report_with_train(refit_model, stores, tmp_path):
    import json

    from click.testing import CliRunner

    from ultrafs.cli import main
    from ultrafs.methods.l1_baseline import L1_MAX_NNZ

    model_path = tmp_path / "model.json"
    refit_model.save(model_path)
    out = tmp_path / "report.html"
    args = ["report", str(model_path), "--test", str(stores["test"].path),
            "--train", str(stores["train"].path), "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    direct = build_report(refit_model, tmp_path / "direct.html",
                          test_store=stores["test"], train_store=stores["train"])
    for key, curve in (("test", "accuracy"), ("test_refit", "accuracy_refit"),
                       ("test_l1", "accuracy_l1")):
        assert summary[key] == direct["data"][curve][-1]
    assert summary["test_l1"]["nnz"] <= summary["test_l1"]["n_features"]
    assert "C" in summary["test_l1"] and "C" in summary["test_refit"]
    assert any("in memory" in note for note in summary["notes"])
    assert os.path.isfile(out)

    # the size limit: one line, non-zero exit, nothing written
    (tmp_path / "small").mkdir()
    refused = CliRunner().invoke(main, args[:-1] + [str(tmp_path / "small" / "r.html"),
                                                    "--l1-max-nnz", "10"])
    assert refused.exit_code == 1
    lines = refused.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    assert "in memory" in lines[0] and "10" in lines[0]
    assert os.listdir(tmp_path / "small") == []
    # --train without --test is a usage error
    usage = CliRunner().invoke(main, ["report", str(model_path), "--train",
                                      str(stores["train"].path), "--out", str(out)])
    assert usage.exit_code == 2 and "--train needs --test" in usage.output
    # the help states the default limit
    help_text = CliRunner().invoke(main, ["report", "--help"],
                                   terminal_width=200).output
    assert f"{L1_MAX_NNZ:,}" in help_text


def test_report_shows_the_choice_of_C(problem, tmp_path):
    model = select(problem.X_train, problem.y_train, B=3, max_iter=2, C="auto",
                   refit=True, cv=3)
    result = build_report(model, tmp_path / "r.html")
    assert "validation" in result["figures"]
    _check_png(result["figures"]["validation"])
    page = (tmp_path / "r.html").read_text()
    assert 'id="validation-table"' in page
    assert "3 stratified folds" in page
    assert page.count(">yes<") == 1
    assert "params.validation" not in page
    curve = result["data"]["validation"]
    assert curve["C"] == model.params["C"] and curve["refit_C"] == model.params["refit_C"]
    # a model without C="auto" has no such section
    plain = build_report(select(problem.X_train, problem.y_train, B=3, max_iter=2),
                         tmp_path / "p.html")
    assert "validation" not in plain["figures"]
