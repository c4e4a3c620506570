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
    }


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

    target = "_plot_features" if stage == "render" else "_html_page"
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
