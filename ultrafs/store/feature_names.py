"""Feature names: validated, written next to a store's data, read lazily by id.

A store may carry a name for any of its feature ids (a vocabulary word, a
DataFrame column).  On disk (Zarr and Parquet-long alike, see
``docs/FORMAT.md``) the names are one UTF-8 text file of ``id<TAB>name``
lines, strictly increasing by id (the user-visible id, ``id_offset``
included), one line per named feature; its SHA-256 is recorded in the
attribute ``feature_names_sha256`` and the number of lines in
``feature_names_count``, which the metadata checksum covers.  Nothing is
read when a store is opened: :func:`lookup_names` streams the file when
names are asked for, keeps only the requested ids (memory in proportion
to the request, not to the vocabulary) and refuses the answer unless the
whole file matches its recorded digest.

Names may not be empty, nor hold a tab or a line break (any character
``str.splitlines`` breaks at), nor be longer than :data:`MAX_NAME_BYTES`
bytes of UTF-8.

User names files (``ultrafs ingest --feature-names FILE``) come in two
forms, told apart by the first line: one name per line, line ``k`` (from
0) naming id ``id_offset + k`` (an empty line leaves that id unnamed), or
``id<TAB>name`` lines for any subset of the ids, in any order.
:func:`stage_names_file` checks such a file and writes the store's form
of it, sorted, in bounded memory (24 bytes per name besides the text).
"""

from __future__ import annotations

import hashlib
import mmap
import os
import shutil
from array import array
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ultrafs.errors import InputFormatError, StoreFormatError
from ultrafs.store.input_files import open_regular

__all__ = ["NAMES_SHA_ATTR", "NAMES_COUNT_ATTR", "MAX_NAME_BYTES", "MAX_NAMES",
           "name_problem", "check_name", "names_of_sequence", "write_names", "StagedNames",
           "stage_names_file", "lookup_names", "check_names_attrs", "compose_name"]

#: attribute holding the SHA-256 (hex) of the names file
NAMES_SHA_ATTR = "feature_names_sha256"
#: attribute holding the number of lines (named features) of the names file
NAMES_COUNT_ATTR = "feature_names_count"
#: longest name accepted, in bytes of UTF-8
MAX_NAME_BYTES = 4096
#: most names a names file may hold: staging keeps 24 bytes per name
#: (id, line, offset), so 3 GiB at this bound; kddb has 30 million columns
MAX_NAMES = 2**27
#: characters a name may not hold: the tab and every line break of str.splitlines
_FORBIDDEN = {"\t": "a tab", "\n": "a line break", "\r": "a line break",
              "\x0b": "a line break", "\x0c": "a line break", "\x1c": "a line break",
              "\x1d": "a line break", "\x1e": "a line break", "\x85": "a line break",
              "\u2028": "a line break", "\u2029": "a line break"}
#: bytes read at a time when a names file is streamed
_READ_BLOCK = 1 << 20
#: largest feature id of a names file (store ids are int64)
_MAX_ID = 2 ** 62


def name_problem(name) -> str | None:
    """Why ``name`` cannot be a feature name, or None when it can."""
    if not isinstance(name, str):
        return f"is a {type(name).__name__}, not a string"
    if not name:
        return "is empty"
    for ch in name:
        if ch in _FORBIDDEN:
            return f"holds {_FORBIDDEN[ch]}"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "is not valid Unicode text (a lone surrogate)"
    if size > MAX_NAME_BYTES:
        return f"is longer than {MAX_NAME_BYTES} bytes"
    return None


def _shown(name) -> str:
    text = repr(name)
    return text if len(text) <= 40 else text[:37] + "..."


def check_name(name, where: str) -> str:
    """``name``, or InputFormatError naming ``where`` and the problem."""
    problem = name_problem(name)
    if problem is not None:
        raise InputFormatError(f"{where}: feature name {_shown(name)} {problem}")
    return name


def names_of_sequence(names, *, id_offset: int, n_ids: int, where: str = "feature_names"):
    """``(id, name)`` pairs of a list of names parallel to the columns.

    Parameters
    ----------
    names : sequence of str or None
        ``names[j]`` names id ``id_offset + j``; None leaves it unnamed.
    id_offset : int
    n_ids : int
        Number of ids (columns of X, empty ones included); ``names`` must
        have that length.
    where : str
        Names the argument in messages.

    Returns
    -------
    pairs : list of (int, str)
        Increasing by id.

    Raises
    ------
    InputFormatError
        One line naming ``where`` and the position of a bad name, or the
        lengths.
    """
    if isinstance(names, (str, bytes)):
        raise InputFormatError(f"{where}: expected a list of names, got a string")
    names = list(names)
    if len(names) != n_ids:
        raise InputFormatError(f"{where}: {len(names)} names for {n_ids} features "
                               "(one per column; None for an unnamed one)")
    pairs = []
    for j, name in enumerate(names):
        if name is None:
            continue
        pairs.append((id_offset + j, check_name(name, f"{where}[{j}]")))
    return pairs


def write_names(dest: Path, pairs) -> tuple:
    """Write ``id<TAB>name`` lines (ids strictly increasing, names checked).

    Returns
    -------
    (sha256_hex, count)
    """
    digest = hashlib.sha256()
    count = 0
    previous = None
    with open(dest, "wb") as out:
        for fid, name in pairs:
            if previous is not None and fid <= previous:
                raise ValueError("internal error: feature names not sorted by id")
            previous = fid
            line = f"{int(fid)}\t{name}\n".encode("utf-8")
            digest.update(line)
            out.write(line)
            count += 1
    return digest.hexdigest(), count


@dataclass
class StagedNames:
    """A user names file, checked and rewritten in the store's form.

    Attributes
    ----------
    path : Path
        The staged ``id<TAB>name`` file (sorted by id).
    source : str
        The user's file, for messages.
    sha256 : str
    count : int
        Named features.
    max_id : int
        Largest id named (-1 when none).
    max_id_line : int
        Line of the user's file naming ``max_id``.
    """

    path: Path
    source: str
    sha256: str
    count: int
    max_id: int
    max_id_line: int

    def check_range(self, id_offset: int, id_space: int, hint: str = "") -> None:
        """InputFormatError unless every id lies in ``id_offset .. id_offset + id_space - 1``."""
        last = id_offset + id_space - 1
        if self.max_id > last:
            raise InputFormatError(
                f"{self.source}: line {self.max_id_line}: feature id {self.max_id} is out "
                f"of range (the store's ids are {id_offset}..{last}){hint}")


def stage_names_file(source, dest, *, id_offset: int) -> StagedNames:
    """Check a user names file and write its store form at ``dest``.

    Parameters
    ----------
    source : str or os.PathLike
        UTF-8 text: one name per line (line ``k``, from 0, names id
        ``id_offset + k``; an empty line leaves the id unnamed), or
        ``id<TAB>name`` lines (any subset of ids, any order; blank lines
        skipped).  The form is that of the first line: a tab there means
        ``id<TAB>name``.  A UTF-8 byte-order mark and CRLF line ends are
        accepted.
    dest : str or os.PathLike
        Where to write the sorted ``id<TAB>name`` file.
    id_offset : int
        The store's first id; smaller ids are refused (the upper bound is
        checked by :meth:`StagedNames.check_range` once the width is known).

    Raises
    ------
    InputFormatError
        One line ``"<file>: line N: <problem>"``: not UTF-8, a bad or
        repeated id, an empty name or one with a tab, a line too long; or
        the file cannot be read.
    """
    source_text = os.fspath(source)
    dest = Path(dest)
    unsorted = dest.with_name(dest.name + ".unsorted")
    ids, lines, offsets = array("q"), array("q"), array("q")
    state = {"tabbed": None, "sorted": True}
    try:
        with open_regular(source_text, "feature-names file") as f, \
                open(unsorted, "wb") as out:
            position = 0
            number = 0
            while True:
                raw = f.readline(MAX_NAME_BYTES + 64)
                if not raw:
                    break
                number += 1
                if not raw.endswith(b"\n") and len(raw) >= MAX_NAME_BYTES + 64:
                    raise InputFormatError(f"{source_text}: line {number}: longer than "
                                           f"{MAX_NAME_BYTES} bytes")
                parsed = _parse_user_line(raw, number, source_text, id_offset, state)
                if parsed is None:
                    continue
                fid, name = parsed
                if len(ids) >= MAX_NAMES:
                    raise InputFormatError(f"{source_text}: line {number}: more than "
                                           f"{MAX_NAMES:,} names (MAX_NAMES)")
                if ids and fid <= ids[-1]:
                    if fid == ids[-1]:
                        raise InputFormatError(
                            f"{source_text}: line {number}: feature id {fid} named twice "
                            f"(also line {lines[-1]})")
                    state["sorted"] = False
                line = f"{fid}\t{name}\n".encode("utf-8")
                ids.append(fid)
                lines.append(number)
                offsets.append(position)
                out.write(line)
                position += len(line)
    except OSError as exc:
        _remove(unsorted)
        raise InputFormatError(f"{source_text}: cannot read the feature names "
                               f"({exc.strerror or exc})") from None
    except BaseException:
        _remove(unsorted)
        raise
    try:
        if state["sorted"]:
            os.replace(unsorted, dest)
        else:
            _write_sorted(unsorted, dest, ids, lines, offsets, position, source_text)
    finally:
        _remove(unsorted)
    sha, count = _file_digest(dest)
    id_array = np.frombuffer(ids, dtype=np.int64) if ids else np.zeros(0, np.int64)
    if count:
        top = int(np.argmax(id_array))
        max_id, max_line = int(id_array[top]), int(lines[top])
    else:
        max_id, max_line = -1, 0
    return StagedNames(dest, source_text, sha, count, max_id, max_line)


def _parse_user_line(raw: bytes, number: int, source: str, id_offset: int, state):
    """``(id, name)`` of one line of a user names file, or None (no name)."""
    if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if raw.endswith(b"\n"):
        raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFormatError(f"{source}: line {number}: not UTF-8 text (byte "
                               f"{exc.start + 1} of the line)") from None
    if state["tabbed"] is None:
        state["tabbed"] = "\t" in text
        state["next_id"] = id_offset
    where = f"{source}: line {number}"
    if not state["tabbed"]:
        fid = state["next_id"]
        state["next_id"] += 1
        if text == "":
            return None
        if "\t" in text:
            raise InputFormatError(
                f"{where}: the name holds a tab (a file of id<TAB>name lines has a tab "
                "on its first line too)")
        return fid, _checked_user_name(text, where)
    if text.strip() == "":
        return None
    id_text, tab, name = text.partition("\t")
    if not tab:
        raise InputFormatError(f"{where}: expected id<TAB>name, found no tab")
    if not (id_text.isascii() and id_text.isdigit()):
        raise InputFormatError(f"{where}: {_shown(id_text)} is not a feature id "
                               "(a non-negative integer)")
    fid = int(id_text)
    if fid < id_offset or fid > _MAX_ID:
        raise InputFormatError(f"{where}: feature id {fid} is out of range (the "
                               f"store's ids start at {id_offset})")
    if "\t" in name:
        raise InputFormatError(f"{where}: the name holds a tab")
    return fid, _checked_user_name(name, where)


def _checked_user_name(name: str, where: str) -> str:
    problem = name_problem(name)
    if problem is not None:
        raise InputFormatError(f"{where}: the name {problem}")
    return name


def _write_sorted(unsorted: Path, dest: Path, ids, lines, offsets, size, source) -> None:
    """Rewrite the staged lines in id order (an argsort and one mapped copy)."""
    id_array = np.frombuffer(ids, dtype=np.int64)
    order = np.argsort(id_array, kind="stable")
    ordered = id_array[order]
    same = np.flatnonzero(ordered[1:] == ordered[:-1])
    if same.size:
        first, second = int(order[same[0]]), int(order[same[0] + 1])
        raise InputFormatError(
            f"{source}: line {lines[second]}: feature id {int(ordered[same[0]])} named "
            f"twice (also line {lines[first]})")
    starts = np.frombuffer(offsets, dtype=np.int64)
    stops = np.append(starts[1:], size)
    with open(unsorted, "rb") as f, open(dest, "wb") as out:
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            for k in order.tolist():
                out.write(mapped[int(starts[k]):int(stops[k])])


def _file_digest(path: Path) -> tuple:
    """SHA-256 (hex) and line count of a file."""
    digest = hashlib.sha256()
    count = 0
    with open(path, "rb") as f:
        while True:
            block = f.read(_READ_BLOCK)
            if not block:
                break
            digest.update(block)
            count += block.count(b"\n")
    return digest.hexdigest(), count


def _remove(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def place_names(names, dest: Path, *, id_offset: int, id_space: int) -> tuple:
    """Write a writer's ``feature_names`` argument as the store file ``dest``.

    ``names`` is a :class:`StagedNames` (moved in place) or a list of
    ``(id, name)`` pairs from :func:`names_of_sequence`.

    Returns
    -------
    (sha256_hex, count)
    """
    if isinstance(names, StagedNames):
        names.check_range(id_offset, id_space)
        shutil.move(os.fspath(names.path), os.fspath(dest))
        names.path = dest
        return names.sha256, names.count
    return write_names(dest, names)


def check_names_attrs(path, attrs: dict, names_file: Path | None) -> None:
    """Check the names attributes of a store at open (file not read).

    Both or neither of :data:`NAMES_SHA_ATTR` and :data:`NAMES_COUNT_ATTR`;
    a digest of 64 hex digits, a count; the file present (a regular file)
    when recorded.

    Raises
    ------
    StoreFormatError
    """
    sha = attrs.get(NAMES_SHA_ATTR)
    count = attrs.get(NAMES_COUNT_ATTR)
    if sha is None and count is None:
        return
    if not (isinstance(sha, str) and len(sha) == 64
            and all(c in "0123456789abcdef" for c in sha)):
        raise StoreFormatError(f"{path}: attribute {NAMES_SHA_ATTR} is not a SHA-256 "
                               "hex digest")
    if not (isinstance(count, int) and not isinstance(count, bool) and count >= 0):
        raise StoreFormatError(f"{path}: attribute {NAMES_COUNT_ATTR}={count!r} is not "
                               "a count")
    if names_file is not None and not names_file.is_file():
        raise StoreFormatError(f"{path}: missing feature names file {names_file.name}")


def lookup_names(opener, ids, *, sha256: str, count: int, where: str, file_name: str) -> dict:
    """The names of ``ids`` in a store names file: ``{id: name}`` (named ones only).

    Parameters
    ----------
    opener : callable
        Returns a binary file object of the names file.
    ids : iterable of int
        Feature ids wanted.
    sha256, count : the recorded digest and number of lines.
    where, file_name : name the store and the file in messages.

    Notes
    -----
    The file is streamed once, in blocks: every byte goes through the
    digest, and in each block only the wanted ids between its first and
    last id are searched for (the file is sorted by id), so the cost is a
    hash of the file plus a few searches per block, and the memory the
    block plus the answer.  Nothing is returned unless the digest and the
    line count match.

    Raises
    ------
    StoreFormatError
        The file is missing, unreadable, malformed or does not match its
        digest.
    """
    wanted = np.unique(np.asarray(list(ids), dtype=np.int64))
    found = {}
    digest = hashlib.sha256()
    lines = 0
    carry = b""

    def corrupt(problem):
        raise StoreFormatError(f"{where}: corrupt store: {file_name} {problem}")

    try:
        with opener() as f:
            while True:
                block = f.read(_READ_BLOCK)
                if block:
                    digest.update(block)
                text = carry + block
                cut = text.rfind(b"\n") + 1 if block else len(text)
                complete, carry = text[:cut], text[cut:]
                if complete:
                    if not complete.endswith(b"\n"):
                        corrupt("does not end with a line break")
                    lines += complete.count(b"\n")
                    if wanted.size:
                        _find_in_block(complete, wanted, found, corrupt)
                if not block:
                    break
    except OSError as exc:
        raise StoreFormatError(f"{where}: cannot read {file_name}: "
                               f"{exc.strerror or exc}") from None
    if digest.hexdigest() != sha256:
        corrupt(f"does not match its checksum ({NAMES_SHA_ATTR}; the file was "
                "changed after writing)")
    if lines != count:
        corrupt(f"holds {lines} lines, the metadata records {count}")
    return found


def _line_id(line: bytes, corrupt) -> int:
    tab = line.find(b"\t")
    head = line[:tab]
    if tab <= 0 or not head.isdigit():
        corrupt("holds a line that is not id<TAB>name")
    return int(head)


def _find_in_block(block: bytes, wanted: np.ndarray, found: dict, corrupt) -> None:
    """Add the names of the wanted ids held by ``block`` (whole lines) to ``found``."""
    last_start = block.rfind(b"\n", 0, len(block) - 1) + 1
    first_id = _line_id(block[:block.find(b"\n")], corrupt)
    last_id = _line_id(block[last_start:-1], corrupt)
    lo = np.searchsorted(wanted, first_id, side="left")
    hi = np.searchsorted(wanted, last_id, side="right")
    for fid in wanted[lo:hi].tolist():
        key = b"%d\t" % fid
        if block.startswith(key):
            start = 0
        else:
            at = block.find(b"\n" + key)
            if at < 0:
                continue
            start = at + 1
        stop = block.index(b"\n", start)
        try:
            found[fid] = block[start + len(key):stop].decode("utf-8")
        except UnicodeDecodeError:
            corrupt(f"holds a name that is not UTF-8 (id {fid})")


def compose_name(feature, name_of) -> str | None:
    """Name of a model feature from the names of its source ids.

    ``j`` → ``name_of(j)``; ``[j, j]`` → ``"a^2"``; ``[j, k]`` → ``"a*b"``;
    None unless every source id is named.
    """
    if isinstance(feature, (list, tuple)):
        j, k = (int(v) for v in feature)
        a, b = name_of(j), name_of(k)
        if a is None or b is None:
            return None
        return f"{a}^2" if j == k else f"{a}*{b}"
    return name_of(int(feature))
