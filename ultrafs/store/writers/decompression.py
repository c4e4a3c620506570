"""Decompression with a bound on how far a file may expand.

A small gzip / bz2 / xz file can expand to gigabytes (a decompression
bomb: gzip reaches about 1000:1, bz2 and xz far more); its ingest used to
run until killed.  Real LIBSVM text compresses far less: measured on the
datasets of ``/work/shared/data`` (bz2), 2.7:1 to 23:1, the most
compressible (mushrooms, one-hot 0/1 features) 54.6:1; gzip -9 and xz -6
of the same text 2.3:1 to 26.7:1; kddb's text about 6:1.

The bound is a ratio, checked while reading: once more than
:data:`GRACE_BYTES` have been decompressed, the decompressed bytes may
not exceed :func:`max_ratio` (default :data:`DEFAULT_MAX_RATIO`) times the
compressed bytes read so far.  A bomb is refused after at most
``GRACE_BYTES`` of output (well under a second), and any file, however
built, costs at most ``ratio × its size + GRACE_BYTES`` of decompression;
there is no cap on the size itself (the mission's inputs reach tens of
GB).  A legitimate file beyond the ratio is read by raising the bound:
``ULTRAFS_MAX_DECOMPRESSION_RATIO=1000`` (or ``off``) in the environment.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import math
import os

from ultrafs.errors import InputFormatError, ParameterError

__all__ = ["ENV_MAX_RATIO", "DEFAULT_MAX_RATIO", "GRACE_BYTES", "max_ratio",
           "open_decompressed", "ExpansionBound"]

#: the environment variable that raises (or, ``off``, lifts) the ratio bound
ENV_MAX_RATIO = "ULTRAFS_MAX_DECOMPRESSION_RATIO"
#: decompressed bytes per compressed byte allowed (3.7 times the most
#: compressible real dataset measured, 54.6:1; a fifth of gzip's maximum)
DEFAULT_MAX_RATIO = 200.0
#: decompressed bytes read before the ratio is checked (small files that
#: expand a lot, such as a short header, cost nothing)
GRACE_BYTES = 64 * 2**20

_OPENERS = {"gzip": gzip.open, "bz2": bz2.open, "xz": lzma.open}
_NAMES = {"gzip": "gzip", "bz2": "bzip2", "xz": "xz"}


def max_ratio(environ=None) -> float:
    """The ratio bound: :data:`ENV_MAX_RATIO` when set, else the default.

    Returns
    -------
    ratio : float
        ``inf`` when the variable is ``off``.

    Raises
    ------
    ParameterError
        The variable is set to anything but a finite number >= 1 or ``off``.
    """
    text = (os.environ if environ is None else environ).get(ENV_MAX_RATIO, "").strip()
    if not text:
        return DEFAULT_MAX_RATIO
    if text.lower() == "off":
        return math.inf
    try:
        ratio = float(text)
    except ValueError:
        ratio = math.nan
    if not (math.isfinite(ratio) and ratio >= 1):
        raise ParameterError(f"{ENV_MAX_RATIO}={text!r} is not a number >= 1 or 'off'")
    return ratio


class ExpansionBound:
    """Counts decompressed bytes against the compressed bytes read.

    Parameters
    ----------
    raw : file object
        The compressed file, read by the decompressor (``raw.tell()`` is
        the compressed bytes consumed so far).
    path : str
        Names the file in the error.
    kind : {"gzip", "bz2", "xz"}
    ratio : float
        Decompressed bytes allowed per compressed byte (``inf``: no bound).
    """

    def __init__(self, raw, path, kind, ratio):
        self.raw = raw
        self.path = path
        self.kind = kind
        self.ratio = ratio
        self.out = 0

    def add(self, n_bytes: int) -> None:
        """Count ``n_bytes`` more of output; InputFormatError beyond the bound."""
        self.out += n_bytes
        if self.out <= GRACE_BYTES or math.isinf(self.ratio):
            return
        read = max(self.raw.tell(), 1)
        if self.out > self.ratio * read:
            raise InputFormatError(
                f"{self.path}: {_NAMES[self.kind]} data expands more than "
                f"{self.ratio:g} times its size ({self.out / 2**20:,.0f} MiB out of "
                f"{read:,} bytes read): a decompression bomb, not read further; "
                f"if the file is legitimate, set {ENV_MAX_RATIO} to a larger ratio "
                "(or 'off')")


class _BoundedReader:
    """A decompressed stream whose ``read`` counts against an ExpansionBound."""

    def __init__(self, stream, bound):
        self._stream = stream
        self._bound = bound

    def read(self, size=-1):
        block = self._stream.read(size)
        self._bound.add(len(block))
        return block

    def close(self):
        try:
            self._stream.close()
        finally:
            self._bound.raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_decompressed(raw, path, kind, ratio=None):
    """A reader of the decompressed bytes of ``raw``, bounded in expansion.

    Parameters
    ----------
    raw : binary file object
        The compressed file (from :func:`ultrafs.store.input_files.open_regular`);
        closed with the reader.
    path : str
        Names the file in messages.
    kind : {"gzip", "bz2", "xz", "none"}
        ``"none"``: ``raw`` itself is returned.
    ratio : float, optional
        The bound; None reads :func:`max_ratio`.

    Returns
    -------
    reader : object with ``read(size)``, ``close()``, usable in ``with``
        ``read`` raises InputFormatError once the bound is passed.
    """
    if kind == "none":
        return raw
    bound = ExpansionBound(raw, str(path), kind, max_ratio() if ratio is None else ratio)
    return _BoundedReader(_OPENERS[kind](raw, "rb"), bound)
