"""Bounded work on every input (issue 39, item 2).

One table of cases, each run through the CLI: a decompression bomb, a
FIFO, socket or device where a file is read, group and tree files with
ids beyond int64 or too large to read, and hostile numbers (``1e30GB``,
``nan``, ``inf``, ``-1``, ``1e309``, 30 digits, the empty string) in
every kind of option.  Each case asserts the exit status, one ``Error:``
line naming the problem (and the path, for a file), no traceback, no
output written and the inputs untouched.  Cases that could hang (a FIFO
blocks its reader, a bomb runs for minutes) run in a subprocess whose
30 s timeout is the hang guard; the others through click's runner, as
``tests/test_hostile.py`` does.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import socket
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from tests.test_hostile import CLI, error_line, files_under, invoke, leftovers
from ultrafs.cli import main
from ultrafs.datasets.planted import make_planted_problem
from ultrafs.errors import InputFormatError, ParameterError
from ultrafs.store.input_files import open_regular
from ultrafs.store.writers.decompression import (DEFAULT_MAX_RATIO, ENV_MAX_RATIO,
                                                 GRACE_BYTES, max_ratio, open_decompressed)

#: the hang guard of a subprocess case (seconds)
DEADLINE = 30
DATA = Path(os.environ.get("ULTRAFS_DATA", "/work/shared/data"))

#: one LIBSVM row and a long comment: a bomb of few rows, so that the part
#: read before the bound trips costs little memory
_BOMB_LINE = b"1 1:1 2:1 # " + b"x" * 4000 + b"\n"


def _bomb_member(compress):
    """One compressed member of 1 MiB of text; members concatenate (gzip,
    bzip2 and xz all read concatenated streams)."""
    return compress(_BOMB_LINE * (2**20 // len(_BOMB_LINE)))


def write_bomb(path, kind, expanded=2 * GRACE_BYTES):
    """A file of ``kind`` that expands ``expanded`` bytes, about 1000:1 or more."""
    compress = {"gzip": lambda b: gzip.compress(b, 9, mtime=0), "bz2": bz2.compress,
                "xz": lzma.compress}[kind]
    member = _bomb_member(compress)
    copies = expanded // len(_BOMB_LINE * (2**20 // len(_BOMB_LINE))) + 1
    Path(path).write_bytes(member * copies)
    return path


def snapshot(folder):
    """Each regular file's (size, mtime, inode), each other entry's kind."""
    state = {}
    for path in files_under(folder):
        info = os.lstat(path)
        state[path] = ((info.st_size, info.st_mtime_ns, info.st_ino)
                       if os.path.isfile(path) and not os.path.islink(path)
                       else info.st_mode)
    return state


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    r = tmp_path_factory.mktemp("bounds")
    problem = make_planted_problem(n_samples=200, n_features=40, n_relevant=5,
                                   n_test=100, seed=3)
    dump_svmlight_file(problem.X_train, problem.y_train, str(r / "train.svm"),
                       zero_based=False)
    # compiles the parse kernels in-process: no subprocess prints the notice
    assert invoke(["ingest", r / "train.svm", r / "train.zarr"]).exit_code == 0
    result = invoke(["select", "--data", r / "train.zarr", "--B", 3, "--max-iter", 2,
                     "--out", r / "model.json"])
    assert result.exit_code == 0, result.output
    result = invoke(["path", "--data", r / "train.zarr", "--n-lambdas", 4,
                     "--out", r / "path.json"])
    assert result.exit_code == 0, result.output
    os.mkfifo(r / "pipe")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(r / "sock"))
    for kind, suffix in (("gzip", "gz"), ("bz2", "bz2"), ("xz", "xz")):
        write_bomb(r / f"bomb.svm.{suffix}", kind)
    # 260 MiB of one line (the ratio bound lifted by its case)
    (r / "noline.svm.gz").write_bytes(gzip.compress(b"1", mtime=0)
                                      + gzip.compress(b" 1:1" * 2**18, mtime=0) * 260)
    (r / "groups_long_line.txt").write_text("1 0\n" + "1 " * 50000 + "\n")
    (r / "groups_20_digits.txt").write_text("1 0\n2 12345678901234567890\n")
    (r / "groups_20_digit_feature.txt").write_text("99999999999999999999 0\n")
    (r / "groups_negative_20_digits.txt").write_text("1 -99999999999999999999\n")
    (r / "tree_20_digits.txt").write_text("-1\n" * 39 + "99999999999999999999\n")
    np.save(r / "groups_uint64.npy", np.array([0, 2**64 - 1], dtype=np.uint64))
    for name in ("groups_huge.txt", "tree_huge.txt"):
        with open(r / name, "wb") as f:        # sparse: costs no disk
            f.truncate(2**30 + 1)
    yield r
    server.close()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """An ``ULTRAFS_CACHE_DIR`` outside the case folder."""
    return tmp_path_factory.mktemp("cache")


#: sub: run in a subprocess (the hang guard); env: its extra environment;
#: stdin: a file for its standard input; notice: the start of a line a
#: command prints before its work (``select --data FILE.svm`` announces its
#: ingest into the cache), allowed above the error
Case = namedtuple("Case", "name argv code fragments sub env stdin notice",
                  defaults=(False, None, None, None))

SELECT = ["select", "--data", "{r}/train.zarr", "--max-iter", "2", "--out", "{r}/m.json"]
BOMB = ["decompression bomb", "expands more than 200 times", ENV_MAX_RATIO]

FILE_CASES = [
    # ---- decompression bombs: refused within the first 64 MiB of output
    Case("ingest-gzip-bomb", ["ingest", "{r}/bomb.svm.gz", "{r}/o.zarr"], 1,
         ["{r}/bomb.svm.gz", "gzip data"] + BOMB, True),
    Case("ingest-bzip2-bomb", ["ingest", "{r}/bomb.svm.bz2", "{r}/o.zarr"], 1,
         ["{r}/bomb.svm.bz2", "bzip2 data"] + BOMB, True),
    Case("ingest-xz-bomb", ["ingest", "{r}/bomb.svm.xz", "{r}/o.zarr"], 1,
         ["{r}/bomb.svm.xz", "xz data"] + BOMB, True),
    Case("ingest-bomb-on-stdin", ["ingest", "-", "{r}/o.zarr"], 1,
         ["stdin", "gzip data"] + BOMB, True, None, "{r}/bomb.svm.gz"),
    Case("select-data-bomb", ["select", "--data", "{r}/bomb.svm.xz", "--out",
                              "{r}/m.json"], 1, ["{r}/bomb.svm.xz"] + BOMB, True,
         None, None, "ingesting {r}/bomb.svm.xz into the cache"),
    Case("ingest-ratio-setting-not-a-number", ["ingest", "{r}/bomb.svm.gz", "{r}/o.zarr"],
         1, [f"{ENV_MAX_RATIO}='abc'", "not a number >= 1 or 'off'"], True,
         {ENV_MAX_RATIO: "abc"}),
    Case("ingest-ratio-setting-nan", ["ingest", "{r}/bomb.svm.gz", "{r}/o.zarr"],
         1, [f"{ENV_MAX_RATIO}='nan'"], True, {ENV_MAX_RATIO: "nan"}),
    Case("ingest-line-without-end", ["ingest", "{r}/noline.svm.gz", "{r}/o.zarr"], 1,
         ["{r}/noline.svm.gz", "line 1", "longer than 256 MiB"], True,
         {ENV_MAX_RATIO: "off"}),
    # ---- FIFOs, sockets and devices: refused before a byte is read
    Case("ingest-input-fifo", ["ingest", "{r}/pipe", "{r}/o.zarr"], 1,
         ["{r}/pipe", "is a FIFO", "not a regular file"], True),
    Case("ingest-input-socket", ["ingest", "{r}/sock", "{r}/o.zarr"], 1,
         ["{r}/sock", "is a socket", "not a regular file"], True),
    Case("ingest-input-character-device", ["ingest", "/dev/zero", "{r}/o.zarr"], 1,
         ["/dev/zero", "is a character device"], True),
    Case("ingest-feature-names-fifo", ["ingest", "{r}/train.svm", "{r}/o.zarr",
                                       "--feature-names", "{r}/pipe"], 1,
         ["{r}/pipe", "is a FIFO"], True),
    Case("ingest-feature-names-device", ["ingest", "{r}/train.svm", "{r}/o.zarr",
                                         "--feature-names", "/dev/zero"], 1,
         ["/dev/zero", "is a character device"], True),
    Case("select-groups-fifo", SELECT + ["--groups", "{r}/pipe"], 1,
         ["{r}/pipe", "is a FIFO"], True),
    Case("select-tree-fifo", SELECT + ["--tree", "{r}/pipe"], 1,
         ["{r}/pipe", "is a FIFO"], True),
    Case("select-groups-device", SELECT + ["--groups", "/dev/zero"], 1,
         ["/dev/zero", "is a character device"], True),
    Case("select-groups-socket", SELECT + ["--groups", "{r}/sock"], 1,
         ["{r}/sock", "is a socket"], True),
    Case("select-data-fifo", ["select", "--data", "{r}/pipe", "--out", "{r}/m.json"], 1,
         ["{r}/pipe", "not an ultrafs store", "is a FIFO"], True),
    Case("select-data-device", ["select", "--data", "/dev/zero", "--out", "{r}/m.json"], 1,
         ["/dev/zero", "is a character device"], True),
    Case("select-test-fifo", SELECT + ["--test", "{r}/pipe"], 1,
         ["{r}/pipe", "is a FIFO"], True),
    Case("info-fifo", ["info", "{r}/pipe"], 1, ["{r}/pipe", "is a FIFO"], True),
    Case("path-data-fifo", ["path", "--data", "{r}/pipe", "--out", "{r}/p.json"], 1,
         ["{r}/pipe", "is a FIFO"], True),
    Case("evaluate-data-fifo", ["evaluate", "--model", "{r}/model.json", "--data",
                                "{r}/pipe"], 1, ["{r}/pipe", "is a FIFO"], True),
    Case("predict-data-fifo", ["predict", "--model", "{r}/model.json", "--data",
                               "{r}/pipe", "--out", "{r}/p.tsv"], 1,
         ["{r}/pipe", "is a FIFO"], True),
    Case("report-test-fifo", ["report", "{r}/model.json", "--test", "{r}/pipe", "--out",
                              "{r}/r.html"], 1, ["{r}/pipe", "is a FIFO"], True),
    Case("evaluate-model-fifo", ["evaluate", "--model", "{r}/pipe", "--data",
                                 "{r}/train.zarr"], 1, ["{r}/pipe", "not a regular file"],
         True),
    # ---- group and tree files: ids range-checked, size bounded
    Case("select-groups-20-digit-group", SELECT + ["--groups", "{r}/groups_20_digits.txt"],
         1, ["{r}/groups_20_digits.txt", "line 2", "12345678901234567890", "out of range"]),
    Case("select-groups-20-digit-feature",
         SELECT + ["--groups", "{r}/groups_20_digit_feature.txt"], 1,
         ["{r}/groups_20_digit_feature.txt", "line 1", "99999999999999999999",
          "out of range"]),
    Case("select-groups-negative-20-digits",
         SELECT + ["--groups", "{r}/groups_negative_20_digits.txt"], 1,
         ["groups_negative_20_digits.txt", "line 1", "-99999999999999999999"]),
    Case("select-tree-20-digit-parent", SELECT + ["--tree", "{r}/tree_20_digits.txt"], 1,
         ["{r}/tree_20_digits.txt", "line 40", "99999999999999999999", "out of range"]),
    Case("select-groups-npy-beyond-int64", SELECT + ["--groups", "{r}/groups_uint64.npy"],
         1, ["{r}/groups_uint64.npy", "18446744073709551615", "out of range"]),
    Case("select-groups-long-line", SELECT + ["--groups", "{r}/groups_long_line.txt"], 1,
         ["{r}/groups_long_line.txt", "line 2", "longer than 65,536 characters"]),
    Case("select-groups-text-too-large", SELECT + ["--groups", "{r}/groups_huge.txt"], 1,
         ["{r}/groups_huge.txt", "1,073,741,825 bytes", "more than the 1 GiB"]),
    Case("select-tree-text-too-large", SELECT + ["--tree", "{r}/tree_huge.txt"], 1,
         ["{r}/tree_huge.txt", "more than the 1 GiB"]),
]

#: hostile spellings of numbers; each number option gets every one its type refuses
HOSTILE = ["1e30GB", "nan", "inf", "-inf", "-1", "1e309", "9" * 30, ""]
FLOATS = ["1e30GB", "nan", "inf", "-inf", "1e309", ""]


def _numbers(name, argv, option, values, code=2):
    return [Case(f"{name}{option}={value or 'empty'}"[:90], argv + [option, value], code,
                 [option] + ([value] if value else [])) for value in values]


def _number_cases():
    cases = []
    sklr = ["select", "--method", "sklr", "--data", "{r}/train.zarr", "--out", "{r}/m.json"]
    gsrfs = ["select", "--method", "gsrfs", "--data", "{r}/train.zarr", "--out",
             "{r}/m.json"]
    l1 = ["select", "--method", "l1", "--data", "{r}/train.zarr", "--out", "{r}/m.json"]
    path = ["path", "--data", "{r}/train.zarr", "--out", "{r}/p.json"]
    table = [
        # the size option: parsed by dask.utils.parse_bytes, range checked
        ("select", SELECT, "--memory-limit", HOSTILE + ["2PiB", "8XB", "GB", "0.5"]),
        # floats: nan and inf are refused by the type, not later by the method
        ("select", SELECT, "--tol", FLOATS + ["-1"]),
        ("select", SELECT, "--inner-tol", FLOATS + ["-1"]),
        ("select", SELECT, "--inner-kkt-tol", FLOATS),
        ("select", SELECT + ["--poly", "2"], "--gamma", FLOATS + ["-1"]),
        ("select", SELECT + ["--poly", "2"], "--coef0", FLOATS + ["-1"]),
        ("select", SELECT + ["--kernel", "chi2"], "--kernel-period", FLOATS + ["-1"]),
        ("select", SELECT + ["--refit"], "--refit-C", FLOATS + ["-1"]),
        ("select", SELECT, "--validation-fraction", FLOATS + ["-1"]),
        ("select", SELECT, "--connect-timeout", FLOATS + ["-1"]),
        ("select", SELECT, "--worker-timeout", FLOATS + ["-1"]),
        ("select", SELECT, "--C", FLOATS + ["-1"]),
        ("select", SELECT + ["--C", "auto"], "--C-grid", ["1,nan", "1,inf", "1,-1", ""]),
        ("select", SELECT, "--class-weight", ["1:nan", "1:inf", "1:-1", "nan:1"]),
        # integers: 30 digits and negatives
        ("select", SELECT, "--B", HOSTILE),
        ("select", SELECT, "--max-iter", HOSTILE),
        ("select", SELECT, "--inner-max-iter", HOSTILE),
        ("select", SELECT + ["--kernel", "chi2"], "--kernel-n", HOSTILE),
        ("select", SELECT, "--block-size", HOSTILE),
        ("select", SELECT, "--workers", HOSTILE),
        ("select", SELECT, "--seed", HOSTILE),
        ("select", SELECT + ["--C", "auto"], "--cv", HOSTILE),
        ("select", SELECT + ["--kernel", "chi2"], "--q", HOSTILE),
        ("sklr", sklr, "--sigma", FLOATS + ["-1"]),
        ("sklr", sklr, "--lambda-ratio", FLOATS + ["-1"]),
        ("sklr", sklr + ["--solver", "cgd"], "--two-stage", FLOATS + ["-1"]),
        ("sklr", sklr, "--n-components", HOSTILE),
        ("gsrfs", gsrfs, "--r", FLOATS + ["-1"]),
        ("gsrfs", gsrfs, "--p", FLOATS + ["-1"]),
        ("gsrfs", gsrfs, "--lambda", FLOATS + ["-1"]),
        ("gsrfs", gsrfs, "--eps", FLOATS + ["-1"]),
        ("gsrfs", gsrfs, "--n-features-to-select", HOSTILE),
        ("gsrfs", gsrfs, "--candidates", HOSTILE),
        ("gsrfs", gsrfs, "--min-iter", HOSTILE),
        ("l1", l1 + ["--n-features-to-select", "3"], "--lambda-min-ratio",
         FLOATS + ["-1"]),
        ("path", path, "--tol", FLOATS + ["-1"]),
        ("path", path, "--lambda-min-ratio", FLOATS + ["-1"]),
        ("path", path, "--lambda-max-ratio", FLOATS + ["-1"]),
        ("path", path, "--n-lambdas", HOSTILE),
        ("path", path, "--seed", HOSTILE),
        ("path", path, "--cv", HOSTILE),
        ("ingest", ["ingest", "{r}/train.svm", "{r}/o.zarr"], "--n-features",
         HOSTILE + [str(2**62 + 1)]),
        ("ingest", ["ingest", "{r}/train.svm", "{r}/o.zarr"], "--memory-budget", HOSTILE),
        ("ingest", ["ingest", "{r}/train.svm", "{r}/o.zarr"], "--block-nnz", HOSTILE),
        ("evaluate", ["evaluate", "--model", "{r}/path.json", "--data", "{r}/train.zarr"],
         "--point", ["9" * 30, "-" + "9" * 30, "nan", ""]),
        ("predict", ["predict", "--model", "{r}/path.json", "--data", "{r}/train.zarr",
                     "--out", "{r}/p.tsv"], "--n-features-to-select", HOSTILE),
        ("report", ["report", "{r}/path.json", "--out", "{r}/r.html"], "--l1-max-nnz",
         HOSTILE),
        ("report", ["report", "{r}/model.json", "--out", "{r}/r.html"], "--top", HOSTILE),
        ("demo", ["demo", "--dir", "{r}/demo"], "--n-samples", HOSTILE),
        ("demo", ["demo", "--dir", "{r}/demo"], "--seed", HOSTILE),
        ("demo", ["demo", "--dir", "{r}/demo"], "--n-relevant", HOSTILE),
        ("demo", ["demo", "--dir", "{r}/demo"], "--tol", FLOATS),
    ]
    for name, argv, option, values in table:
        cases += _numbers(name, argv, option, values)
    # --lambda of a path file: read with the file (min, 1se or one of its λ),
    # so refused in one line naming it (nan and inf used to match a point)
    for command, extra in (("evaluate", []), ("predict", ["--out", "{r}/p.tsv"])):
        argv = [command, "--model", "{r}/path.json", "--data", "{r}/train.zarr"] + extra
        for case in _numbers(command, argv, "--lambda", FLOATS + ["-1", "0"], code=1):
            cases.append(case._replace(fragments=case.fragments + ["{r}/path.json"]))
    # numbers within their option's range that overflow on this data
    cases.append(Case("select-gamma-overflowing",
                      SELECT + ["--poly", "2", "--gamma", "1e300"], 1,
                      ["numerical overflow", "--gamma"]))
    cases.append(Case("select-gsrfs-eps-singular", gsrfs + ["--eps", "1e-300"], 1,
                      ["not positive definite at eps 1e-300", "choose an eps"]))
    cases.append(Case("select-gsrfs-r-tiny", gsrfs + ["--r", "1e-300"], 2,
                      ["--r", "1e-06<=x<=2"]))
    # a setting read from the environment is a number typed too
    cases.append(Case("select-connect-timeout-env-nan", SELECT, 2, ["--connect-timeout"],
                      True, {"ULTRAFS_CONNECT_TIMEOUT": "nan"}))
    return cases


CASES = FILE_CASES + _number_cases()


def _fill(items, r):
    return [str(item).replace("{r}", str(r)) for item in items]


def _run(case, r, cache):
    """(exit status, stderr, stdout) of a case."""
    argv = _fill(case.argv, r)
    if not case.sub:
        result = invoke(argv)
        if result.exit_code != 0:
            assert result.exception is None or isinstance(result.exception, SystemExit), \
                result.exception
        return result.exit_code, result.stderr, result.stdout
    env = dict(os.environ, ULTRAFS_CACHE_DIR=str(cache), **(case.env or {}))
    stdin = open(_fill([case.stdin], r)[0], "rb") if case.stdin else subprocess.DEVNULL
    try:
        done = subprocess.run(CLI + argv, capture_output=True, text=True, env=env,
                              stdin=stdin, timeout=DEADLINE)
    finally:
        if case.stdin:
            stdin.close()
    return done.returncode, done.stderr, done.stdout


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bounded_case(root, cache, case):
    before = snapshot(root)
    code, stderr, stdout = _run(case, root, cache)
    if case.notice:
        notice = _fill([case.notice], root)[0]
        stderr = "\n".join(line for line in stderr.splitlines()
                           if not line.startswith(notice))
    line = error_line(code, stderr, case.code)
    for fragment in _fill(case.fragments, root):
        assert fragment.lower() in line.lower(), line
    assert stdout.strip() == "" or code == 2, stdout          # no partial output
    assert snapshot(root) == before                            # nothing written, inputs intact
    assert leftovers(root) == []


def _number_options():
    """``{(command, option): click type}`` of every number option: each
    command's, and ``select``'s for every method (its own options)."""
    import click

    from ultrafs.cli.types import SizeType
    from ultrafs.methods.registry import method_names

    kinds = (click.IntRange, click.FloatRange, SizeType)
    found = {}
    context = click.Context(main)
    for name in main.list_commands(context):
        command = main.get_command(context, name)
        groups = ([command.method_params(m) for m in method_names()]
                  if name == "select" else [command.params])
        for params in groups:
            for param in params:
                if isinstance(param, click.Option) and not param.hidden \
                        and isinstance(param.type, kinds):
                    found[(name, param.opts[0])] = param
    return found


def test_every_number_option_refuses_hostile_spellings():
    """The type of every number option, of every command and method, refuses
    nan, infinities, 1e309, a unit, the empty string (and an integer's, 30
    digits): a usage error (click's BadParameter), never a value that fails
    later."""
    import click

    options = _number_options()
    assert len(options) > 60
    accepted = []
    for (name, option), param in sorted(options.items()):
        values = ["nan", "inf", "-inf", "1e309", "", "1e30GB"]
        if not isinstance(param.type, click.FloatRange):   # 1e30 is a float
            values += ["9" * 30, "-" + "9" * 30]
        for value in values:
            try:
                param.type.convert(value, param, None)
            except click.BadParameter:
                continue
            accepted.append(f"{name} {option} {value!r}")
    assert accepted == []


def test_every_number_option_is_in_the_table():
    """Each number option (by its name: demo's are select's) is run through
    the CLI by a case of the table."""
    tested = {option for case in CASES for option in case.argv
              if str(option).startswith("--")}
    missing = sorted({option for _, option in _number_options()} - tested)
    assert missing == []


# ---------------------------------------------- the decompression bound itself
def test_real_files_are_far_below_the_ratio():
    """The datasets of the project expand at most 54.6:1 (mushrooms): the
    default bound, 200:1, leaves them a margin of more than 3."""
    files = sorted(DATA.glob("*.svm.bz2"))
    if not files:
        pytest.skip(f"no datasets in {DATA}")
    mushrooms = DATA / "mushrooms.svm.bz2"
    ratios = {}
    for path in [p for p in files if p.stat().st_size < 2 * 2**20] or files[:1]:
        with bz2.open(path, "rb") as f:
            ratios[path.name] = len(f.read()) / path.stat().st_size
    assert max(ratios.values()) * 3 < DEFAULT_MAX_RATIO, ratios
    if mushrooms.exists():
        assert 50 < ratios["mushrooms.svm.bz2"] < 60


@pytest.mark.parametrize("kind", ["gzip", "bz2", "xz"])
def test_bomb_stops_after_the_grace(tmp_path, kind):
    """A bomb is refused once GRACE_BYTES (plus one read) are decompressed."""
    path = write_bomb(tmp_path / "bomb", kind)
    read = 0
    with pytest.raises(InputFormatError, match="decompression bomb"):
        with open_decompressed(open_regular(path), str(path), kind) as f:
            while f.read(2**20):
                read += 2**20
    assert GRACE_BYTES <= read <= GRACE_BYTES + 2**20


def test_the_bound_can_be_raised_or_lifted(tmp_path, monkeypatch):
    """ULTRAFS_MAX_DECOMPRESSION_RATIO raises the bound (``off`` lifts it):
    the same bomb is then read to its end."""
    path = write_bomb(tmp_path / "bomb.gz", "gzip")
    for setting in ("off", "100000"):
        monkeypatch.setenv(ENV_MAX_RATIO, setting)
        total = 0
        with open_decompressed(open_regular(path), str(path), "gzip") as f:
            while block := f.read(8 * 2**20):
                total += len(block)
        assert total > 2 * GRACE_BYTES - 2**20
    for wrong in ("0", "-5", "nan", "inf", "1e309", "x"):
        monkeypatch.setenv(ENV_MAX_RATIO, wrong)
        with pytest.raises(ParameterError, match=ENV_MAX_RATIO):
            max_ratio()


def test_compressed_real_file_ingests_identically(tmp_path):
    """The bound changes nothing below it: the most compressible real file
    (54.6:1) ingested compressed and plain gives the same store content."""
    source = DATA / "mushrooms.svm.bz2"
    if not source.exists():
        pytest.skip(f"no {source}")
    plain = tmp_path / "mushrooms.svm"
    plain.write_bytes(bz2.decompress(source.read_bytes()))
    gz = tmp_path / "mushrooms.svm.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes(), mtime=0))
    from ultrafs.store import open_store

    fingerprints = set()
    for name, path in (("bz2", source), ("plain", plain), ("gz", gz)):
        result = invoke(["ingest", path, tmp_path / f"{name}.zarr"])
        assert result.exit_code == 0, result.output
        fingerprints.add(open_store(tmp_path / f"{name}.zarr").fingerprint)
    assert len(fingerprints) == 1 and None not in fingerprints


def test_parquet_groups_file_row_bound(tmp_path, monkeypatch):
    """A Parquet groups file of more rows than MAX_GROUP_ROWS is refused from
    its metadata, before its columns are read (the bound, 2**28 rows, is
    lowered here: a file of that size takes gigabytes)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ultrafs.features import group_files

    path = tmp_path / "groups.parquet"
    pq.write_table(pa.table({"feature": np.arange(11), "group": np.arange(11) // 2}), path)
    assert group_files.read_groups_file(path)[0] == "pairs"
    monkeypatch.setattr(group_files, "MAX_GROUP_ROWS", 10)
    with pytest.raises(InputFormatError,
                       match=r"groups.parquet: the groups file has 11 rows, more than the 10"):
        group_files.read_groups_file(path)


def test_feature_names_file_count_bound(tmp_path, monkeypatch):
    """A names file of more names than MAX_NAMES is refused at the first
    name past it, in one line naming the file and line; nothing is left
    (the bound, 2**27 names, is lowered here)."""
    from ultrafs.store import feature_names

    names = tmp_path / "names.txt"
    names.write_text("".join(f"f{k}\n" for k in range(11)))
    monkeypatch.setattr(feature_names, "MAX_NAMES", 10)
    dest = tmp_path / "staged.tsv"
    with pytest.raises(InputFormatError, match=r"names.txt: line 11: more than 10 names"):
        feature_names.stage_names_file(names, dest, id_offset=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["names.txt"]
