"""Parse LIBSVM / svmlight text held in a uint8 buffer.

The kernel reads a buffer of complete lines (the caller cuts the stream at
a newline) and returns labels, per-row entry counts, column numbers and
values.  It follows ``sklearn.datasets.load_svmlight_file`` token for token:

- lines are separated by ``\\n``; tokens by ASCII whitespace
  (space, ``\\t``, ``\\r``, ``\\v``, ``\\f``);
- ``#`` ends the useful part of a line (comments); blank lines are skipped;
- the first token is the label, every other token is ``index:value``.

Numbers are converted exactly as ``float()`` (i.e. ``strtod``) would:
decimal tokens with at most 18 significant digits, an integer mantissa
below 2**53 and a decimal exponent within [-22, 22] are converted with one
correctly rounded multiplication or division by an exact power of ten
(Clinger's fast path).  Any other token (more digits, large exponents,
``nan``, ``1_000``, garbage...) is reported back as a *fallback* token so
that the caller converts it with Python's ``float()`` (or reports the
error), which keeps the result bit-identical to scikit-learn.

:func:`format_binary_rows` goes the other way for binary rows (the
kddb-like generator's LIBSVM text): integer labels and ``index:1`` entries.
"""

import numba
import numpy as np

__all__ = [
    "parse_libsvm_lines",
    "parse_decimal",
    "format_binary_rows",
    "OK",
    "ERR_MALFORMED_FEATURE",
    "ERR_INDEX_ZERO",
    "ERR_NEGATIVE_INDEX",
    "ERR_DUPLICATE_INDEX",
    "ERR_QID",
    "ERR_INDEX_TOO_LARGE",
    "FALLBACK_LABEL",
]

#: status codes returned in ``status[0]``
OK = 0
ERR_MALFORMED_FEATURE = 1
ERR_INDEX_ZERO = 2
ERR_NEGATIVE_INDEX = 3
ERR_DUPLICATE_INDEX = 4
ERR_QID = 5
ERR_INDEX_TOO_LARGE = 6

#: ``fallback[k, 2]`` for a label token is ``FALLBACK_LABEL - row``
FALLBACK_LABEL = -1

_NEWLINE = 10
_HASH = 35
_COLON = 58
_PLUS = 43
_MINUS = 45
_DOT = 46
_ZERO = 48
_ONE = 49
_NINE = 57

#: largest index accepted (keeps column numbers far from int64 overflow)
_MAX_INDEX = 1 << 62
#: integers up to 2**53 are exact doubles
_MAX_EXACT_MANTISSA = 1 << 53
#: significant digits that always fit an int64 mantissa
_MAX_DIGITS = 18

_POW10 = np.array([1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
                   1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
                   1e20, 1e21, 1e22], dtype=np.float64)
_POW10_INT = np.array([10 ** k for k in range(19)], dtype=np.int64)

# byte kinds for the token scan (one table lookup per byte)
_KIND_OTHER, _KIND_COLON, _KIND_END = 0, 1, 2
_BYTE_KIND = np.zeros(256, dtype=np.uint8)
_BYTE_KIND[[32, 9, 11, 12, 13, 10, 35]] = _KIND_END     # whitespace, newline, '#'
_BYTE_KIND[58] = _KIND_COLON


@numba.njit(cache=True, nogil=True, inline="always")
def _is_space(c):
    # ASCII whitespace except the newline, as bytes.split() sees it
    return c == 32 or c == 9 or c == 11 or c == 12 or c == 13


@numba.njit(cache=True, nogil=True, inline="always")
def _is_digit(c):
    return _ZERO <= c <= _NINE


@numba.njit(cache=True, nogil=True)
def parse_decimal(buf, start, stop):
    """Convert ``buf[start:stop]`` to a float when the fast path is exact.

    Parameters
    ----------
    buf : ndarray of uint8
        Text.
    start, stop : int
        Token bounds.

    Returns
    -------
    ok : bool
        False when the token is not a plain decimal number or falls
        outside the exact fast path; the caller must then use ``float()``.
    value : float
        The correctly rounded double (valid only when ``ok``).
    """
    i = start
    negative = False
    if i < stop and (buf[i] == _PLUS or buf[i] == _MINUS):
        negative = buf[i] == _MINUS
        i += 1
    mantissa = np.int64(0)
    n_digits = 0            # significant digits folded into the mantissa
    pending_zeros = 0       # zeros seen after the last nonzero digit
    n_fraction = 0          # digits after the decimal point
    seen_digit = False
    too_long = False
    in_fraction = False
    while i < stop:
        c = buf[i]
        if _is_digit(c):
            seen_digit = True
            if in_fraction:
                n_fraction += 1
            d = c - _ZERO
            if d == 0:
                if n_digits > 0:
                    pending_zeros += 1
            elif n_digits + pending_zeros + 1 > _MAX_DIGITS:
                too_long = True
            else:
                mantissa = mantissa * _POW10_INT[pending_zeros + 1] + d
                n_digits += pending_zeros + 1
                pending_zeros = 0
        elif c == _DOT and not in_fraction:
            in_fraction = True
        else:
            break
        i += 1
    if not seen_digit:
        return False, 0.0
    exponent = 0
    if i < stop and (buf[i] == 101 or buf[i] == 69):  # 'e' or 'E'
        i += 1
        exp_negative = False
        if i < stop and (buf[i] == _PLUS or buf[i] == _MINUS):
            exp_negative = buf[i] == _MINUS
            i += 1
        if i >= stop or not _is_digit(buf[i]):
            return False, 0.0
        while i < stop and _is_digit(buf[i]):
            if exponent < 100000:
                exponent = exponent * 10 + (buf[i] - _ZERO)
            i += 1
        if exp_negative:
            exponent = -exponent
    if i != stop or too_long:
        return False, 0.0
    if mantissa == 0:
        return True, -0.0 if negative else 0.0
    if mantissa > _MAX_EXACT_MANTISSA:
        return False, 0.0
    power = exponent - n_fraction + pending_zeros
    value = np.float64(mantissa)
    if 0 < power <= 22:
        value = value * _POW10[power]
    elif -22 <= power < 0:
        value = value / _POW10[-power]
    elif power != 0:
        return False, 0.0
    return True, -value if negative else value


@numba.njit(cache=True, nogil=True)
def _grow_rows(arr, new_len):
    out = np.empty((new_len, arr.shape[1]), dtype=arr.dtype)
    # loops, not out[:len(arr)] = arr: numba's array-to-slice assignment
    # costs about 2 s of compilation the first time in a process (issue 35)
    for i in range(arr.shape[0]):
        for j in range(arr.shape[1]):
            out[i, j] = arr[i, j]
    return out


@numba.njit(cache=True, nogil=True)
def _has_duplicate(columns, start, stop):
    """Whether ``columns[start:stop]`` holds a repeated value; returns it."""
    row_cols = np.sort(columns[start:stop])
    for k in range(1, row_cols.shape[0]):
        if row_cols[k] == row_cols[k - 1]:
            return True, row_cols[k]
    return False, np.int64(0)


@numba.njit(cache=True, nogil=True)
def _skip_to_line_end(buf, i):
    n = buf.shape[0]
    while i < n and buf[i] != _NEWLINE:
        i += 1
    return i


@numba.njit(cache=True, nogil=True)
def parse_libsvm_lines(buf, zero_based):
    """Parse complete LIBSVM lines.

    Parameters
    ----------
    buf : ndarray of uint8, shape (n_bytes,)
        Complete lines; the last one may lack its newline.
    zero_based : bool
        If False, index ``k`` is column ``k - 1`` and index 0 is an error.

    Returns
    -------
    labels : ndarray of float64, shape (n_rows,)
        Label of each row (0.0 where the label is a fallback token).
    row_nnz : ndarray of int64, shape (n_rows,)
        Number of entries of each row.
    row_lines : ndarray of int64, shape (n_rows,)
        Line (0-based, within ``buf``) of each row.
    columns : ndarray of int64, shape (nnz,)
        Column numbers, row after row, in file order within a row.
    values : ndarray of float64, shape (nnz,)
        Values (0.0 where the value is a fallback token).
    fallback : ndarray of int64, shape (n_fallback, 4)
        Tokens to convert with ``float()``: ``start, stop, target, line``;
        ``target >= 0`` is an entry of ``values``, ``target < 0`` is the
        label of row ``FALLBACK_LABEL - target``.
    status : ndarray of int64, shape (5,)
        ``code, line, token_start, token_stop, detail``; ``code == OK``
        on success, else the first error met (``detail`` holds the
        duplicated or offending index).
    n_lines : int
        Number of lines consumed (newlines, plus a final unterminated one).
    """
    n = buf.shape[0]
    n_newlines = 0
    n_colons = 0
    for i in range(n):
        if buf[i] == _NEWLINE:
            n_newlines += 1
        elif buf[i] == _COLON:
            n_colons += 1
    row_cap = n_newlines + 1
    labels = np.zeros(row_cap, dtype=np.float64)
    row_nnz = np.zeros(row_cap, dtype=np.int64)
    row_lines = np.zeros(row_cap, dtype=np.int64)
    columns = np.empty(n_colons, dtype=np.int64)
    values = np.zeros(n_colons, dtype=np.float64)
    fallback = np.empty((16, 4), dtype=np.int64)
    status = np.zeros(5, dtype=np.int64)
    n_fallback = 0
    n_rows = 0
    nnz = 0
    line = 0
    offset = 1 if not zero_based else 0
    i = 0
    while i < n:
        # ---- skip leading whitespace; blank or comment-only line
        while i < n and _is_space(buf[i]):
            i += 1
        if i >= n:
            break
        if buf[i] == _NEWLINE or buf[i] == _HASH:
            i = _skip_to_line_end(buf, i) + 1
            line += 1
            continue
        # ---- label
        start = i
        while i < n and not _is_space(buf[i]) and buf[i] != _NEWLINE \
                and buf[i] != _HASH:
            i += 1
        ok, label = parse_decimal(buf, start, i)
        if not ok:
            if n_fallback == fallback.shape[0]:
                fallback = _grow_rows(fallback, 2 * n_fallback)
            fallback[n_fallback, 0] = start
            fallback[n_fallback, 1] = i
            fallback[n_fallback, 2] = FALLBACK_LABEL - n_rows
            fallback[n_fallback, 3] = line
            n_fallback += 1
            label = 0.0
        labels[n_rows] = label
        row_lines[n_rows] = line
        row_start = nnz
        previous = np.int64(-1)
        in_order = True
        # ---- features
        while True:
            while i < n and _is_space(buf[i]):
                i += 1
            if i >= n or buf[i] == _NEWLINE or buf[i] == _HASH:
                break
            start = i
            colon = -1
            while i < n:                            # to the end of the token
                kind = _BYTE_KIND[buf[i]]
                if kind == _KIND_OTHER:
                    i += 1
                elif kind == _KIND_COLON:
                    if colon < 0:
                        colon = i
                    i += 1
                else:                               # space, newline or '#'
                    break
            stop = i
            if stop - start >= 4 and buf[start] == 113 and buf[start + 1] == 105 \
                    and buf[start + 2] == 100 and buf[start + 3] == _COLON:
                status[1] = line
                status[2] = start
                status[3] = stop
                status[0] = ERR_QID                              # "qid:"
                return (labels[:n_rows], row_nnz[:n_rows], row_lines[:n_rows],
                        columns[:nnz], values[:nnz], fallback[:n_fallback],
                        status, line)
            if colon < 0:
                status[1] = line
                status[2] = start
                status[3] = stop
                status[0] = ERR_MALFORMED_FEATURE
                return (labels[:n_rows], row_nnz[:n_rows], row_lines[:n_rows],
                        columns[:nnz], values[:nnz], fallback[:n_fallback],
                        status, line)
            # index: [+-]?digits
            j = start
            negative = False
            if j < colon and (buf[j] == _PLUS or buf[j] == _MINUS):
                negative = buf[j] == _MINUS
                j += 1
            code = OK
            if j == colon:
                code = ERR_MALFORMED_FEATURE
            index = np.int64(0)
            while j < colon:
                if not _is_digit(buf[j]):
                    code = ERR_MALFORMED_FEATURE
                    break
                if index < _MAX_INDEX:
                    index = index * 10 + (buf[j] - _ZERO)
                j += 1
            if code == OK and index >= _MAX_INDEX:
                code = ERR_INDEX_TOO_LARGE
            if code == OK and negative and index != 0:
                code = ERR_NEGATIVE_INDEX
            if code == OK and index == 0 and not zero_based:
                code = ERR_INDEX_ZERO
            if code != OK:
                status[1] = line
                status[2] = start
                status[3] = stop
                status[0] = code
                status[4] = -index if negative else index
                return (labels[:n_rows], row_nnz[:n_rows], row_lines[:n_rows],
                        columns[:nnz], values[:nnz], fallback[:n_fallback],
                        status, line)
            column = index - offset
            if column == previous:
                status[1] = line
                status[2] = start
                status[3] = stop
                status[0] = ERR_DUPLICATE_INDEX
                status[4] = index
                return (labels[:n_rows], row_nnz[:n_rows], row_lines[:n_rows],
                        columns[:nnz], values[:nnz], fallback[:n_fallback],
                        status, line)
            if column < previous:
                in_order = False
            previous = column
            if stop - colon == 2 and buf[colon + 1] == _ONE:
                ok, value = True, 1.0                   # the usual binary value
            else:
                ok, value = parse_decimal(buf, colon + 1, stop)
            if not ok:
                if n_fallback == fallback.shape[0]:
                    fallback = _grow_rows(fallback, 2 * n_fallback)
                fallback[n_fallback, 0] = colon + 1
                fallback[n_fallback, 1] = stop
                fallback[n_fallback, 2] = nnz
                fallback[n_fallback, 3] = line
                n_fallback += 1
                value = 0.0
            columns[nnz] = column
            values[nnz] = value
            nnz += 1
        # ---- end of row
        if not in_order:
            duplicated, column = _has_duplicate(columns, row_start, nnz)
            if duplicated:
                status[0] = ERR_DUPLICATE_INDEX
                status[1] = line
                status[2] = -1
                status[3] = -1
                status[4] = column + offset
                return (labels[:n_rows], row_nnz[:n_rows], row_lines[:n_rows],
                        columns[:nnz], values[:nnz], fallback[:n_fallback],
                        status, line)
        row_nnz[n_rows] = nnz - row_start
        n_rows += 1
        if i < n and buf[i] == _HASH:
            i = _skip_to_line_end(buf, i)
        if i < n:              # at a newline
            i += 1
            line += 1
    n_lines = n_newlines
    if n > 0 and buf[n - 1] != _NEWLINE:
        n_lines += 1
    status[0] = OK
    status[1] = 0
    status[2] = 0
    status[3] = 0
    return (labels[:n_rows], row_nnz[:n_rows], row_lines[:n_rows],
            columns[:nnz], values[:nnz], fallback[:n_fallback], status, n_lines)


# --------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True, inline="always")
def _n_digits(value):
    # decimal digits of a non-negative int64
    n = 1
    while value >= 10:
        value //= 10
        n += 1
    return n


@numba.njit(cache=True, nogil=True, inline="always")
def _put_int(out, pos, value):
    # write the decimal digits of value (>= 0) at out[pos:]; return the end
    n = _n_digits(value)
    end = pos + n
    k = end - 1
    while True:
        out[k] = _ZERO + value % 10
        value //= 10
        if value == 0:
            break
        k -= 1
    return end


@numba.njit(cache=True, nogil=True)
def format_binary_rows(labels, indptr, columns, index_offset):
    """LIBSVM text of binary rows: ``label index:1 index:1 ...`` per line.

    Parameters
    ----------
    labels : ndarray of int64, shape (n_rows,)
        Integer labels, written in decimal (``-1``, ``1``, ``3``...).
    indptr : ndarray of int64, shape (n_rows + 1,)
        Row ``i`` holds ``columns[indptr[i]:indptr[i + 1]]``.
    columns : ndarray of int32 or int64, shape (nnz,)
        Column numbers (>= 0), written as ``column + index_offset``.
    index_offset : int
        1 for the usual 1-based files, 0 for 0-based ones.

    Returns
    -------
    text : ndarray of uint8
        One ``\\n``-terminated line per row, the entries in the given order.
    """
    n_rows = labels.shape[0]
    size = 0
    for i in range(n_rows):
        label = labels[i]
        size += _n_digits(-label) + 2 if label < 0 else _n_digits(label) + 1
        for k in range(indptr[i], indptr[i + 1]):
            size += _n_digits(np.int64(columns[k]) + index_offset) + 3
    out = np.empty(size, dtype=np.uint8)
    pos = 0
    for i in range(n_rows):
        label = labels[i]
        if label < 0:
            out[pos] = _MINUS
            pos = _put_int(out, pos + 1, -label)
        else:
            pos = _put_int(out, pos, label)
        for k in range(indptr[i], indptr[i + 1]):
            out[pos] = 32
            pos = _put_int(out, pos + 1, np.int64(columns[k]) + index_offset)
            out[pos] = _COLON
            out[pos + 1] = 49                                 # "1"
            pos += 2
        out[pos] = _NEWLINE
        pos += 1
    return out
