"""The run report is right for every method: it names the method and its own
objective, lists only the parameters its Params has, draws only the figures
that apply (no flat zero line, no empty timing frame), names stores by the
file the user gave, and its command prints a summary or JSON."""

import html
import json
import os
import re

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from ultrafs.api import fit  # noqa: E402
from ultrafs.datasets.planted import make_planted_problem  # noqa: E402
from ultrafs.methods.params import specs_of  # noqa: E402
from ultrafs.methods.registry import get_method  # noqa: E402
from ultrafs.report import build_report  # noqa: E402
from ultrafs.store.writers.zarr_writer import write_store  # noqa: E402

#: small fits, seconds each
OPTIONS = {"fgm": dict(B=3, max_iter=3, tol=0.0),
           "l1": dict(n_features_to_select=6),
           "mslr": dict(B=3, max_iter=3),
           "sklr": dict(n_components=200, max_iter=200),
           "gsrfs": dict(n_features_to_select=6)}
#: the figures each method's report draws (with a test store)
FIGURES = {"fgm": {"objective", "timing", "features", "accuracy"},
           "l1": {"objective", "timing", "features"},      # lambda_path: --train
           "mslr": {"objective", "timing", "features", "accuracy"},
           "sklr": {"objective", "basis"},
           "gsrfs": {"objective", "ranking"}}
#: a history field its figure draws, and one it must not
PANELS = {"fgm": ("n_features", None), "l1": ("nnz", "n_features"),
          "mslr": ("n_features", None), "sklr": ("rel_gap", "n_features"),
          "gsrfs": ("stationarity", "n_features")}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    p = make_planted_problem(n_samples=200, n_features=30, n_relevant=5,
                             n_test=150, seed=5)
    root = tmp_path_factory.mktemp("method-reports")
    return {"train": write_store(root / "train.zarr", p.X_train, p.y_train),
            "test": write_store(root / "test.zarr", p.X_test, p.y_test)}


@pytest.fixture(scope="module")
def models(stores):
    return {name: fit(name, stores["train"], **options)
            for name, options in OPTIONS.items()}


def _params_shown(page):
    return set(re.findall(r"<td class=\"text\">params\.([A-Za-z_0-9]+)</td>", page))


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_each_method_gets_its_own_report(name, models, stores, tmp_path):
    model = models[name]
    method = get_method(name)
    result = build_report(model, tmp_path / "r.html", test_store=stores["test"],
                          test_name="my-test.svm")
    page = (tmp_path / "r.html").read_text(encoding="utf-8")

    # the method and its own objective, no other method's
    assert f"<strong>{html.escape(method.display_name)}</strong>" in page
    assert html.escape(method.objective) in page
    others = [m for m in ("fgm", "l1", "mslr", "sklr", "gsrfs") if m != name]
    for other in others:
        assert html.escape(get_method(other).objective) not in page
    if name != "fgm":
        assert r"\frac" not in result["data"]["objective_title"]
        assert result["data"]["objective_title"].startswith(method.display_name)

    # only the figures that apply, each of them drawn
    assert set(result["figures"]) == FIGURES[name]
    assert set(result["figures"]) <= set(method.figures)
    for path in result["figures"].values():
        assert os.path.getsize(path) > 1000
    drawn, absent = PANELS[name]
    assert drawn in result["data"]["series"]
    if absent is not None:
        assert absent not in result["data"]["series"]   # no flat zero line
    if "timing" in result["figures"]:
        assert result["data"]["phases"]
    else:
        assert not result["data"]["phases"]             # no empty timing frame

    # only the parameters its Params has
    specs = specs_of(method.params)
    shown = set(re.findall(r"<td class=\"text\">params\.([A-Za-z_0-9]+)</td>",
                           page.split('id="parameters-table"')[1].split("</table>")[0]))
    assert shown and shown <= set(specs)
    assert shown == {k for k in model.params if k in specs}
    everything = _params_shown(page)
    if "C" not in specs:
        assert "C" not in everything and model.params.get("C") is not None

    # the test store by the name given, never a cache or store path
    assert "my-test.svm (150 samples, 30 columns)" in page
    assert os.fspath(stores["test"].path) not in page
    assert ".cache" not in page
    # the test scores of the whole model are there
    assert result["data"]["accuracy"] and 'id="accuracy-table"' in page
    # wide tables scroll inside the page
    assert page.count('<div class="table-box">') == page.count("<table")


def test_l1_report_marks_the_chosen_lambda(models, tmp_path):
    model = models["l1"]
    result = build_report(model, tmp_path / "r.html")
    data = result["data"]
    assert data["marked"] == pytest.approx(model.params["lambda"])
    assert data["x"] == [pytest.approx(r["lambda"]) for r in model.history]
    assert data["series"]["nnz"][-1] == len(model.features)


def test_l1_accuracy_along_lambda_with_the_training_store(models, stores, tmp_path):
    """With the training store the path's λ are solved again and scored on
    the test store; the chosen λ's point is the model itself."""
    model = models["l1"]
    without = build_report(model, tmp_path / "a.html", test_store=stores["test"])
    assert "lambda_path" not in without["figures"]
    assert "give the training store" in (tmp_path / "a.html").read_text()
    result = build_report(model, tmp_path / "r.html", test_store=stores["test"],
                          train_store=stores["train"])
    assert "lambda_path" in result["figures"]
    rows = result["data"]["lambda_path"]
    lambdas = sorted({r["lambda"] for r in model.history}, reverse=True)
    assert [r["lambda"] for r in rows] == pytest.approx(lambdas)
    own = model.evaluate_store(stores["test"])
    assert rows[-1]["nnz"] == len(model.features)
    assert rows[-1]["accuracy"] == pytest.approx(own["accuracy"])
    assert rows[-1]["log_loss"] == pytest.approx(own["log_loss"], rel=1e-4)
    page = (tmp_path / "r.html").read_text()
    assert 'id="lambda-table"' in page and page.count(">yes<") == 1


def test_gsrfs_ranking_and_sklr_basis(models, tmp_path):
    gsrfs = build_report(models["gsrfs"], tmp_path / "g.html")["data"]
    scores = models["gsrfs"].params["scores"]
    assert [r["score"] for r in gsrfs["ranking"]] == scores
    assert [r["id"] for r in gsrfs["ranking"]] == list(models["gsrfs"].features)
    assert 'id="ranking-table"' in (tmp_path / "g.html").read_text()
    sklr = build_report(models["sklr"], tmp_path / "s.html")["data"]
    assert sklr["basis"]["n_basis"] == models["sklr"].params["n_basis"]
    assert len(sklr["basis"]["weights"]) == int(np.count_nonzero(models["sklr"].coef))
    assert '<h2 id="basis">' in (tmp_path / "s.html").read_text()


def test_gsrfs_with_a_training_store_says_why_there_is_no_refit(models, stores, tmp_path):
    result = build_report(models["gsrfs"], tmp_path / "r.html", test_store=stores["test"],
                          train_store=stores["train"], train_name="my-train.svm")
    data = result["data"]
    assert data["accuracy_refit"] is None
    assert any("No l2 refit" in note for note in data["accuracy_notes"])
    assert data["accuracy_l1"] and data["accuracy_l1"][0]["nnz"] <= len(models["gsrfs"].features)
    page = (tmp_path / "r.html").read_text()
    assert "my-train.svm" in page and os.fspath(stores["train"].path) not in page


def test_cli_report_summary_on_a_terminal_json_otherwise(models, stores, tmp_path,
                                                         monkeypatch):
    from click.testing import CliRunner

    from ultrafs.cli import main, terminal

    model_path = tmp_path / "m.json"
    models["fgm"].save(model_path)
    args = ["report", str(model_path), "--test", str(stores["test"].path),
            "--out", str(tmp_path / "r.html"), "--no-progress"]
    piped = CliRunner().invoke(main, args)
    assert piped.exit_code == 0, piped.output
    summary = json.loads(piped.stdout)
    assert summary["html"] == str(tmp_path / "r.html")

    monkeypatch.setattr(terminal, "stdout_is_terminal", lambda: True)
    shown = CliRunner().invoke(main, args)
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.strip().splitlines()
    assert lines[0].split() == ["report", str(tmp_path / "r.html")]
    assert any(line.startswith("test ") and "accuracy" in line for line in lines)
    assert len(lines) < 10 and "{" not in shown.stdout
    as_json = CliRunner().invoke(main, args + ["--json"])
    assert json.loads(as_json.stdout)["test"] == summary["test"]


def test_report_phases_are_shown_when_progress_is_on(models, stores, tmp_path, capsys):
    from ultrafs.progress import showing

    with showing(True):
        build_report(models["fgm"], tmp_path / "r.html", test_store=stores["test"],
                     train_store=stores["train"])
    err = capsys.readouterr().err
    n = len(models["fgm"].batches) - 1
    assert f"test scores: {n}/{n} models" in err
    assert f"ℓ2 refits: {n}/{n} models" in err
    assert f"ℓ1 baselines: {n}/{n} counts" in err
    with showing(False):
        build_report(models["fgm"], tmp_path / "q.html", test_store=stores["test"])
    assert capsys.readouterr().err == ""
