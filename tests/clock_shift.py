"""A pytest plugin that moves this process's clock: ``-p clock_shift``.

``time.time`` and ``time.time_ns`` return the real time plus
``$ULTRAFS_CLOCK_SHIFT`` seconds (a float). Loaded before collection by
``tests/test_collection.py``, so that a test id made from anything that
reads the clock (a gzip header, a timestamp) differs between two
collections and the comparison catches it.
"""

import os
import time

_SHIFT = float(os.environ.get("ULTRAFS_CLOCK_SHIFT", "0"))
_time, _time_ns = time.time, time.time_ns

time.time = lambda: _time() + _SHIFT
time.time_ns = lambda: _time_ns() + int(_SHIFT * 1e9)
