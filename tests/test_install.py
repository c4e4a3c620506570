"""The README's two quick-start commands, in sequence, in one fresh venv.

Regression test for two ways an install used to break:

* ``ultrafs demo`` after ``pip install .`` wrote numba's cache into
  ``site-packages/ultrafs/kernels/__pycache__``; the later ``pip install -e``
  left that folder behind, ``site-packages/ultrafs`` became a namespace
  package, and ``from ultrafs import FGMClassifier`` failed anywhere but in
  the repo root. The kernel cache now lives in the user's cache folder.
* after a plain ``pip install .``, Python started in the repo root imports
  the source tree's ``ultrafs/``, which had no ``kernels`` subpackage. The
  tree now has the symlink ``ultrafs/kernels -> ../kernels``.
* the test command installed with ``pip install -e``, which ties the
  install to the checkout: once that moved, ``import ultrafs.kernels``
  failed from any folder. Both commands now install a regular copy.

Speed trick: the venv gets no copy of the heavy dependencies (numpy, numba,
dask, zarr, pyarrow, scikit-learn, pytest...). A ``.pth`` file in it names a
folder of symlinks to every entry of the running interpreter's
site-packages except ultrafs itself and the ``.pth`` files there (so the
running environment's own ultrafs install, editable or not, stays
invisible). pip sees every dependency satisfied and downloads nothing but,
at most, the build backend that pyproject.toml's build-system asks for; it
never touches that folder, which lies outside the venv. The venv is not
made with ``--system-site-packages``: where the running interpreter is the
base one (CI installs into it), that would also run the base's editable
ultrafs hook and hide what the venv installed.

The repository is copied (symlinks kept) so that the in-tree builds' build/
and egg-info folders land in tmp, not in the working tree. numba's cache is
pointed at a tmp ``XDG_CACHE_HOME`` so that the run never fills the user's
cache with entries of a throw-away venv.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.name != "posix", reason="bash and symlinks"),
]

NOTICE = "ultrafs: compiling numba kernels"
TINY_DEMO = ("ultrafs demo --n-samples 200 --n-features 100 --n-relevant 10 "
             "--B 5 --max-iter 2")
TINY_FIT = """
import os, numpy as np, ultrafs
from ultrafs import FGMClassifier
rng = np.random.default_rng(0)
X = rng.standard_normal((120, 30))
y = np.where(X[:, 3] - X[:, 7] > 0, 1, -1)
clf = FGMClassifier(B=2, max_iter=2).fit(X, y)
assert {3, 7} <= set(int(j) for j in clf.selected_features_), clf.selected_features_
import ultrafs.kernels
print("ULTRAFS", ultrafs.__file__)
print("KERNELS", os.path.realpath(ultrafs.kernels.__file__))
"""
FIT = f"python -c {shlex.quote(TINY_FIT)}"   # -c: the current folder comes first
IMPORT_KERNELS = ('python -c "import ultrafs, ultrafs.kernels; '
                  'print(\'ULTRAFS\', ultrafs.__file__)"')


def _quickstart_commands():
    """The bash blocks of the README's quick start, verbatim (two of them)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.split("\n```", 1)[0].strip()
            for block in section.split("```bash\n")[1:]]


def _copy_repo(dest: Path) -> Path:
    """The files a build needs: top-level files, ultrafs/, kernels/, tests/."""
    dest.mkdir()
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist",
                                  ".pytest_cache", ".hypothesis", "*.zarr")
    for entry in REPO.iterdir():
        if entry.is_file() and not entry.is_symlink():
            shutil.copy2(entry, dest / entry.name)
    for name in ("ultrafs", "kernels", "tests"):
        shutil.copytree(REPO / name, dest / name, symlinks=True, ignore=skip)
    return dest


def _dependency_folder(dest: Path) -> Path:
    """Symlinks to the running environment's packages, less ultrafs."""
    dest.mkdir()
    seen = set()
    for folder in map(Path, sys.path):
        if folder.name not in ("site-packages", "dist-packages") or not folder.is_dir():
            continue
        for entry in folder.iterdir():
            name = entry.name
            if (name in seen or name.endswith(".pth") or name.startswith("ultrafs")
                    or name.startswith("__editable__")):
                continue
            seen.add(name)
            (dest / name).symlink_to(entry)
    return dest


def _venv_site_packages(venv: Path) -> Path:
    paths = sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})
    return Path(paths["purelib"])


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("install")
    base = getattr(sys, "_base_executable", None) or sys.executable
    venv = root / "venv"
    made = subprocess.run([base, "-m", "venv", str(venv)], capture_output=True,
                          text=True, timeout=300)
    if made.returncode != 0:       # e.g. a system Python without ensurepip
        pytest.skip(f"cannot create a venv with pip: {made.stderr.strip()[-300:]}")
    site = _venv_site_packages(venv)
    assert site.is_dir(), site
    deps = _dependency_folder(root / "deps")
    (site / "zz_parent_env.pth").write_text(f"{deps}\n")
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "NUMBA_CACHE_DIR",
                        "PYTEST_ADDOPTS", "PIP_REQUIRE_VIRTUALENV")}
    user_cache = env.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    env.setdefault("PIP_CACHE_DIR", os.path.join(user_cache, "pip"))  # pip's, kept
    env.update(VIRTUAL_ENV=str(venv), PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}",
               XDG_CACHE_HOME=str(root / "cache"), PIP_DISABLE_PIP_VERSION_CHECK="1",
               PYTHONNOUSERSITE="1")
    return {"root": root, "venv": venv, "site": site, "env": env,
            "repo": _copy_repo(root / "repo")}


def sh(v, command, cwd, timeout=300):
    """Run *command* with bash in the venv, as a user would type it."""
    start = time.perf_counter()
    proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=v["env"],
                          capture_output=True, text=True, timeout=timeout)
    print(f"{time.perf_counter() - start:6.1f} s  {command[:70]}")
    if proc.returncode != 0:
        output = proc.stdout + proc.stderr
        if "No matching distribution found for setuptools" in output:
            pytest.skip("the build backend (setuptools) cannot be fetched here")
        pytest.fail(f"`{command}` in {cwd} exited {proc.returncode}:\n"
                    f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def _numba_cache_files(folder: Path):
    return sorted(str(p) for pattern in ("*.nbi", "*.nbc") for p in folder.rglob(pattern))


def test_readme_commands_in_sequence_leave_a_working_install(venv):
    repo, site = venv["repo"], venv["site"]
    work = venv["root"] / "work"
    work.mkdir()

    install_and_demo, install_and_test = _quickstart_commands()
    assert install_and_test.startswith("python -m pip install ")   # same Python
    assert install_and_demo.startswith("python -m pip install ")   # as `python`

    # README command 1, verbatim in the checkout, then a demo elsewhere: the
    # first run compiles (one notice line on stderr), the second reads the
    # cache (no notice)
    cold = sh(venv, install_and_demo, cwd=repo)
    assert cold.stderr.count(NOTICE) == 1, cold.stderr
    assert '"test_accuracy"' in cold.stdout
    # the install works from any folder: `import ultrafs.kernels` outside the repo
    imported = sh(venv, IMPORT_KERNELS, cwd=work)
    assert f"ULTRAFS {site / 'ultrafs' / '__init__.py'}" in imported.stdout
    warm = sh(venv, TINY_DEMO, cwd=work)
    assert NOTICE not in warm.stderr, warm.stderr
    assert (site / "ultrafs" / "kernels" / "__init__.py").is_file()
    assert _numba_cache_files(site / "ultrafs") == []
    assert _numba_cache_files(venv["root"] / "cache" / "ultrafs" / "numba")

    # README command 2: its install verbatim (a regular install too); pytest
    # only collects (the whole suite is this suite)
    install, _ = install_and_test.split(" && ")
    assert " -e " not in f" {install} ", install      # no install tied to the checkout
    sh(venv, f"{install} && python -m pytest --collect-only -q -p no:cacheprovider",
       cwd=repo)
    assert (site / "ultrafs" / "kernels" / "__init__.py").is_file()

    # from anywhere but the repo root: import, fit, --help, a tiny demo
    fitted = sh(venv, FIT, cwd=work)
    assert f"ULTRAFS {site / 'ultrafs' / '__init__.py'}" in fitted.stdout, fitted.stdout
    assert f"KERNELS {os.path.realpath(site / 'ultrafs' / 'kernels')}" in fitted.stdout
    assert "Usage: ultrafs" in sh(venv, "ultrafs --help", cwd=work).stdout
    assert '"test_accuracy"' in sh(venv, TINY_DEMO, cwd=work).stdout

    # a plain install again, then Python started in the repo root: the
    # source tree's ultrafs/ shadows the installed one and must still find
    # its kernels (through the ultrafs/kernels symlink)
    sh(venv, f'pip install -q "{repo}"', cwd=work)
    assert (site / "ultrafs" / "kernels" / "__init__.py").is_file()
    from_root = sh(venv, FIT, cwd=repo)
    assert f"ULTRAFS {repo / 'ultrafs' / '__init__.py'}" in from_root.stdout
    fitted = sh(venv, FIT, cwd=work)
    assert f"ULTRAFS {site / 'ultrafs' / '__init__.py'}" in fitted.stdout
    assert _numba_cache_files(site / "ultrafs") == []
    # the regular install needs no checkout: move it away and import again
    moved = repo.with_name("repo-moved")
    repo.rename(moved)
    try:
        imported = sh(venv, IMPORT_KERNELS, cwd=work)
        assert f"ULTRAFS {site / 'ultrafs' / '__init__.py'}" in imported.stdout
        assert '"test_accuracy"' in sh(venv, TINY_DEMO, cwd=work).stdout
    finally:
        moved.rename(repo)
