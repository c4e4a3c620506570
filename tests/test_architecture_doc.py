"""docs/ARCHITECTURE.md stays short and true to the tree.

* No line is longer than ``MAX_LINE`` characters (short tables and lists,
  not 1,000-character rows).
* Every file path it names in code (inline ```code``` spans and fenced
  diagrams) exists: ``ultrafs/x/y.py``, ``kernels/x.py``, ``tests/x.py``,
  ``tools/x.py``, ``bench/x.py``, ``docs/X.md``, and the short form of a
  package module (``methods/fgm.py`` is ``ultrafs/methods/fgm.py``).
  Templates (``ultrafs/store/<name>.py``) are not paths.
* A name written after a path in one code span (``path.py: name, other``,
  ``tests/x.py::test_name``) occurs in that file.
* Every other code name exists in the code (``ultrafs/``, ``kernels/``,
  ``tests/``, ``tools/``): an inline span that is a name or a call
  (``Model.save``, ``api.fit(method, ...)``: each dotted part), and in the
  diagrams each word shaped like code (``snake_case``, ``CamelCase``).
"""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "ARCHITECTURE.md"
MAX_LINE = 200

#: top-level folders a path may start with, and the packages of ultrafs/
#: that the document names without the ``ultrafs/`` prefix
ROOTS = ("ultrafs", "kernels", "tests", "tools", "bench", "docs")
PACKAGES = ("methods", "store", "scoring", "solvers", "features", "datasets", "sklearn",
            "cli")

_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
_SPAN = re.compile(r"`([^`\n]+)`")
_PATH = re.compile(r"(?<![\w/.<-])((?:%s)/(?:[\w.<>*-]+/)*[\w.<>*-]*)"
                   % "|".join(ROOTS + PACKAGES))
_NAMED = re.compile(r"^(\S+\.py)\s*(?::: ?|: )(.+)$")


def code_texts(text):
    """The code of a markdown text: each fenced block, then each inline span.

    Parameters
    ----------
    text : str
        Markdown source.

    Returns
    -------
    list of str
        The contents of the fenced blocks and of the inline code spans
        outside them, in that order.
    """
    fenced = _FENCE.findall(text)
    rest = _FENCE.sub("", text)
    return fenced + _SPAN.findall(rest)


def named_paths(code):
    """Repository-relative paths named in a piece of code (templates skipped).

    Parameters
    ----------
    code : str

    Returns
    -------
    list of str
        Each path as written, with a trailing ``:`` or ``.`` of prose
        dropped; a short package path (``methods/fgm.py``) is prefixed with
        ``ultrafs/``. Paths holding ``<`` or ``*`` (templates, globs) are
        left out.
    """
    out = []
    for path in _PATH.findall(code):
        path = path.rstrip(":.,")
        if "<" in path or "*" in path or not path:
            continue
        if path.split("/", 1)[0] in PACKAGES:
            path = "ultrafs/" + path
        out.append(path)
    return out


def span_names(code):
    """``(path, [names])`` when a code span is ``path.py: a, b`` or ``path.py::a``.

    Parameters
    ----------
    code : str
        The contents of one inline code span.

    Returns
    -------
    tuple of (str, list of str) or None
    """
    match = _NAMED.match(code.strip())
    if match is None:
        return None
    paths = named_paths(match.group(1))
    if len(paths) != 1:
        return None
    names = [re.sub(r"\(.*$", "", n.strip()) for n in match.group(2).split(",")]
    names = [n.split(".")[-1] for n in names if re.fullmatch(r"[\w.]+(\(.*\))?", n.strip())]
    return paths[0], [n for n in names if n]


def missing_paths(text):
    """Named paths of ``text`` that do not exist under the repository root."""
    return sorted({p for code in code_texts(text) for p in named_paths(code)
                   if not (REPO / p).exists()})


def long_lines(text):
    """``(line number, length)`` of each line longer than :data:`MAX_LINE`."""
    return [(i, len(line)) for i, line in enumerate(text.splitlines(), 1)
            if len(line) > MAX_LINE]


_CALL = re.compile(r"([A-Za-z_][\w.]*)(\(.*\))?")
_CODE_WORD = re.compile(r"\b(?:[A-Za-z]\w*_\w*|[A-Z][a-z0-9]+[A-Z]\w*)\b")


def code_names(text):
    """The code names a markdown text uses, outside ``path: name`` spans.

    Parameters
    ----------
    text : str
        Markdown source.

    Returns
    -------
    set of str
        Each dotted part of an inline span that is a name or a call, and
        each ``snake_case`` / ``CamelCase`` word of the fenced blocks
        (paths removed).
    """
    names = set()
    for block in _FENCE.findall(text):
        names |= set(_CODE_WORD.findall(re.sub(r"\S+\.(?:py|md)\b", "", block)))
    for code in _SPAN.findall(_FENCE.sub("", text)):
        match = _CALL.fullmatch(code.strip())
        if match is not None:
            names |= {part for part in match.group(1).split(".") if part}
    return names


def code_words():
    """Every word of the Python sources of the repository's code and tests."""
    files = [p for p in (REPO / "ultrafs").rglob("*.py") if "kernels" not in p.parts]
    for folder in ("kernels", "tests", "tools"):
        files += (REPO / folder).glob("*.py")
    return {w for path in files for w in re.findall(r"\w+", path.read_text())}


def test_the_checks_catch_what_they_should():
    text = ("ok `ultrafs/api.py` and `methods/fgm.py: fit_fgm`, template\n"
            "`ultrafs/store/<name>.py`, gone `tests/nope_nope.py`, `kernels/gone.py`\n"
            "```\nstore/detect.py  bench/missing.py\n```\n" + "x" * (MAX_LINE + 1) + "\n")
    assert missing_paths(text) == ["bench/missing.py", "kernels/gone.py",
                                   "tests/nope_nope.py"]
    assert long_lines(text) == [(6, MAX_LINE + 1)]
    assert span_names("methods/fgm.py: fit_fgm, FGMRun.query()") == (
        "ultrafs/methods/fgm.py", ["fit_fgm", "query"])
    assert span_names("tests/test_recipes.py::test_layers_point_one_way") == (
        "tests/test_recipes.py", ["test_layers_point_one_way"])
    assert span_names("ultrafs/api.py") is None
    sample = "`Model.save` `api.fit(a, b)` `--loss` `x: y`\n```\nfit_fgm ──▶ TopK  a b\n```\n"
    assert code_names(sample) == {"Model", "save", "api", "fit", "fit_fgm", "TopK"}


def test_no_line_is_over_the_limit():
    assert long_lines(DOC.read_text()) == []


def test_every_named_path_exists():
    assert missing_paths(DOC.read_text()) == []


def test_names_after_a_path_are_in_that_file():
    text = DOC.read_text()
    spans = _SPAN.findall(_FENCE.sub("", text))
    absent = []
    for code in spans:
        found = span_names(code)
        if found is None:
            continue
        path, names = found
        source = (REPO / path).read_text()
        absent += [f"{path}: {n}" for n in names
                   if not re.search(rf"\b{re.escape(n)}\b", source)]
    assert absent == []


def test_every_code_name_exists():
    words = code_words()
    assert sorted(code_names(DOC.read_text()) - words) == []
