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

import numpy as np

from ultrafs.errors import InputFormatError

__all__ = ["read_groups_file", "read_tree_file", "MAX_GROUP_FILE_BYTES"]

#: largest group or tree file read (a guard against the wrong file: 4 GiB)
MAX_GROUP_FILE_BYTES = 4 * 2**30


def _check_file(path, what):
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise InputFormatError(f"{path}: no such {what} file")
    size = os.path.getsize(path)
    if size > MAX_GROUP_FILE_BYTES:
        raise InputFormatError(f"{path}: the {what} file is {size:,} bytes, more than "
                               f"the {MAX_GROUP_FILE_BYTES:,} a {what} file may hold")
    return path


def _integer_array(array, path, what):
    array = np.asarray(array)
    if array.dtype.kind not in "iu":
        raise InputFormatError(f"{path}: the {what} array must hold integers, "
                               f"not {array.dtype}")
    return array.astype(np.int64)


def _load_npy(path, what):
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise InputFormatError(f"{path}: not a readable .npy {what} file "
                               f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
                               ) from None


def _text_rows(path, n_fields, what):
    """Rows of ``n_fields`` integers of a text file."""
    values = []
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                text = line.split("#", 1)[0].replace(",", " ").split()
                if not text:
                    continue
                if len(text) != n_fields:
                    raise InputFormatError(
                        f"{path}, line {number}: expected {n_fields} integer"
                        f"{'s' if n_fields > 1 else ''} ({what}), got {len(text)} fields")
                try:
                    values.append([int(v) for v in text])
                except ValueError:
                    raise InputFormatError(f"{path}, line {number}: not an integer: "
                                           f"{line.strip()[:60]!r}") from None
    except UnicodeDecodeError:
        raise InputFormatError(f"{path}: not a text {what} file (not UTF-8)") from None
    if not values:
        raise InputFormatError(f"{path}: the {what} file holds no entry")
    return np.asarray(values, dtype=np.int64).reshape(-1, n_fields)


def read_groups_file(path):
    """Groups from a file: ``("labels", array)`` (one group id per column)
    or ``("pairs", (feature_ids, group_ids))``.

    Raises
    ------
    InputFormatError
        One line naming the path (and line) for a malformed file.
    """
    path = _check_file(path, "groups")
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
            table = pq.read_table(path, columns=["feature", "group"])
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
    path = _check_file(path, "tree")
    if path.endswith(".npy"):
        array = _integer_array(_load_npy(path, "tree"), path, "tree")
        if array.ndim != 1:
            raise InputFormatError(f"{path}: the tree must be a 1-D parent list, "
                                   f"got shape {array.shape}")
        return array
    return _text_rows(path, 1, "the parent of each node")[:, 0]
