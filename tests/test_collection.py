"""The suite's collection is deterministic.

pytest-xdist has every worker collect the suite and stops with "Different
tests were collected between gw0 and gw1" when two workers disagree, so a
test id made from the clock, a random draw, a memory address or a hash
seed fails a run by chance. Here the suite is collected twice in fresh
processes that differ in every such source: the clock (moved by days and
a fraction of a second, ``tests/clock_shift.py``), Python's hash seed,
and the addresses and OS entropy of a new process. The two lists of test
ids must be the same, in the same order, with no id twice.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _collect(shift: float, hash_seed: int) -> list[str]:
    env = dict(os.environ, ULTRAFS_CLOCK_SHIFT=repr(shift), PYTHONHASHSEED=str(hash_seed),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "tests"),
                                                        os.environ.get("PYTHONPATH")])))
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist",
         "-p", "no:cacheprovider", "-p", "clock_shift", "tests"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.slow
def test_two_collections_give_the_same_ids():
    first = _collect(0.0, 1)
    second = _collect(9 * 86400 + 1.5, 2)
    assert len(first) > 1000
    assert len(set(first)) == len(first), "a test id occurs twice"
    differing = sorted(set(first) ^ set(second))
    assert not differing, f"{len(differing)} ids differ, e.g. {differing[:5]}"
    assert first == second, "the same ids in another order"
    # every test the quick subset leaves out by name still exists
    from conftest import SLOW_TESTS, function_id

    functions = {function_id(nodeid) for nodeid in first}
    assert SLOW_TESTS <= functions, sorted(SLOW_TESTS - functions)
