"""Reading the group and tree files of the command line.

``--groups FILE``: which features form which groups.

- text (any other suffix): one ``FEATURE_ID GROUP_ID`` pair per line
  (separated by spaces, a tab or a comma; ``#`` starts a comment; blank
  lines skipped); a feature may appear in several groups;
- ``.npy``: an int array of one group id per column (negative: in no
  group), or an (N, 2) int array of ``(feature id, group id)`` rows;
- ``.parquet``: integer columns ``feature`` and ``group``.

``--tree FILE``: the parent of every node, ``-1`` for a root; nodes
``0 .. m - 1`` are the data's columns in order, the others inner nodes
(:mod:`ultrafs.features.tree`).  Text: one integer per line (``#``
comments, blank lines skipped); ``.npy``: a 1-D int array.

Every malformed file is refused with one line naming the path and, for
text, the line.
"""

from __future__ import annotations

import os
from array import array

import numpy as np

from ultrafs.errors import InputFormatError
from ultrafs.store.input_files import check_regular, open_regular

__all__ = ["read_groups_file", "read_tree_file", "MAX_GROUP_FILE_BYTES",
           "MAX_GROUP_TEXT_BYTES", "MAX_GROUP_ROWS", "MAX_LINE_CHARS", "MAX_ID"]

#: largest .npy group or tree file read: its array is held whole (4 GiB)
MAX_GROUP_FILE_BYTES = 4 * 2**30
#: largest text group or tree file: its values take at most 4 bytes of
#: memory per byte of text ("1 2" lines: two int64 per 4 bytes), so 4 GiB
#: too; 1 GiB holds about 60 million ``FEATURE GROUP`` lines, twice kddb's
#: 30 million features
MAX_GROUP_TEXT_BYTES = 2**30
#: most rows of a Parquet groups file (two int64 each: 4 GiB)
MAX_GROUP_ROWS = 2**28
#: longest line of a text group or tree file (two ids and a comment); a
#: longer one is refused before it is split into fields
MAX_LINE_CHARS = 65536
#: largest magnitude of an id (feature, group or node): a store's ids are
#: below 2**62 (``store/metadata.py``), and beyond int64 numpy cannot hold one
MAX_ID = 2**62


def _size_text(n_bytes):
    return f"{n_bytes / 2**30:g} GiB" if n_bytes >= 2**30 else f"{n_bytes:,} bytes"


def _check_file(path, what, limit):
    path = os.fspath(path)
    size = check_regular(path, f"{what} file").st_size
    if size > limit:
        raise InputFormatError(f"{path}: the {what} file is {size:,} bytes, more than "
                               f"the {_size_text(limit)} a {what} file of this form may "
                               "hold")
    return path


def _integer_array(array_, path, what):
    array_ = np.asarray(array_)
    if array_.dtype.kind not in "iu":
        raise InputFormatError(f"{path}: the {what} array must hold integers, "
                               f"not {array_.dtype}")
    if array_.size:
        low, high = array_.min(), array_.max()
        for value in (low, high):
            if abs(int(value)) > MAX_ID:
                raise InputFormatError(f"{path}: the {what} array holds {int(value)}, "
                                       f"out of range (ids lie within ±2**62)")
    return array_.astype(np.int64)


def _load_npy(path, what):
    try:
        with open_regular(path, f"{what} file") as handle:
            return np.load(handle, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        if isinstance(exc, InputFormatError):
            raise
        raise InputFormatError(f"{path}: not a readable .npy {what} file "
                               f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
                               ) from None


def _text_rows(path, n_fields, what):
    """Rows of ``n_fields`` integers of a text file, shape (N, n_fields).

    A line is at most :data:`MAX_LINE_CHARS` long (one line of 1 GiB used
    to be split whole: tens of GB of strings).
    Each value must lie within ±:data:`MAX_ID`: one line naming the file,
    the line and the value otherwise (a 20-digit id used to be numpy's
    ``OverflowError``).  Values are kept in an int64 ``array``, 8 bytes
    each (a list of lists took about 120 bytes a line).
    """
    values = array("q")
    try:
        with open_regular(path, "file", "r", encoding="utf-8") as handle:
            for number, line in enumerate(iter(lambda: handle.readline(MAX_LINE_CHARS + 1),
                                               ""), start=1):
                if len(line) > MAX_LINE_CHARS:
                    raise InputFormatError(f"{path}, line {number}: longer than "
                                           f"{MAX_LINE_CHARS:,} characters")
                text = line.split("#", 1)[0].replace(",", " ").split()
                if not text:
                    continue
                if len(text) != n_fields:
                    raise InputFormatError(
                        f"{path}, line {number}: expected {n_fields} integer"
                        f"{'s' if n_fields > 1 else ''} ({what}), got {len(text)} fields")
                for token in text:
                    try:
                        value = int(token)
                    except ValueError:
                        raise InputFormatError(f"{path}, line {number}: not an integer: "
                                               f"{line.strip()[:60]!r}") from None
                    if abs(value) > MAX_ID:
                        shown = token if len(token) <= 40 else token[:40] + "..."
                        raise InputFormatError(f"{path}, line {number}: id {shown} is out "
                                               "of range (ids lie within ±2**62)")
                    values.append(value)
    except UnicodeDecodeError:
        raise InputFormatError(f"{path}: not a text {what} file (not UTF-8)") from None
    if not values:
        raise InputFormatError(f"{path}: the {what} file holds no entry")
    return np.frombuffer(values, dtype=np.int64).reshape(-1, n_fields)


def _limit(path):
    return MAX_GROUP_FILE_BYTES if os.fspath(path).endswith(".npy") else MAX_GROUP_TEXT_BYTES


def read_groups_file(path):
    """Groups from a file: ``("labels", array)`` (one group id per column)
    or ``("pairs", (feature_ids, group_ids))``.

    Raises
    ------
    InputFormatError
        One line naming the path (and line) for a malformed file.
    """
    path = _check_file(path, "groups", _limit(path))
    if path.endswith(".npy"):
        array = _integer_array(_load_npy(path, "groups"), path, "groups")
        if array.ndim == 1:
            return "labels", array
        if array.ndim == 2 and array.shape[1] == 2:
            return "pairs", (array[:, 0], array[:, 1])
        raise InputFormatError(f"{path}: the groups array must be 1-D (a group "
                               f"per column) or (N, 2), got shape {array.shape}")
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        try:
            with open_regular(path, "groups file") as handle:
                parquet = pq.ParquetFile(handle)
                if parquet.metadata.num_rows > MAX_GROUP_ROWS:
                    raise InputFormatError(
                        f"{path}: the groups file has {parquet.metadata.num_rows:,} rows, "
                        f"more than the {MAX_GROUP_ROWS:,} a groups file may hold")
                table = parquet.read(columns=["feature", "group"])
        except InputFormatError:
            raise
        except Exception as exc:  # pyarrow raises many kinds on bad files
            raise InputFormatError(f"{path}: not a Parquet groups file with integer "
                                   f"columns 'feature' and 'group' "
                                   f"({str(exc).splitlines()[0][:120]})") from None
        feature = table.column("feature").to_numpy()
        group = table.column("group").to_numpy()
        return "pairs", (_integer_array(feature, path, "feature"),
                         _integer_array(group, path, "group"))
    rows = _text_rows(path, 2, "FEATURE_ID GROUP_ID")
    return "pairs", (rows[:, 0], rows[:, 1])


def read_tree_file(path):
    """The parent list of a tree file (int64, one per node).

    Raises
    ------
    InputFormatError
        One line naming the path (and line) for a malformed file.
    """
    path = _check_file(path, "tree", _limit(path))
    if path.endswith(".npy"):
        array = _integer_array(_load_npy(path, "tree"), path, "tree")
        if array.ndim != 1:
            raise InputFormatError(f"{path}: the tree must be a 1-D parent list, "
                                   f"got shape {array.shape}")
        return array
    return _text_rows(path, 1, "the parent of each node")[:, 0]
