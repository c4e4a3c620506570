"""The documentation a newcomer walks has no dead relative links.

Every ``[text](path)`` link of README.md, docs/*.md, bench/README.md and
bench/notes/*.md that is not a URL must name a file or folder that exists,
relative to the linking file (an ``#anchor`` after the path is ignored).
Links inside fenced code blocks and inline code spans are not links.
bench/README.md is the benchmarks' index: it links every note under
bench/notes/ and names every script in bench/.
"""
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: the markdown files whose links are checked
DOC_FILES = sorted(
    [REPO / "README.md", REPO / "bench" / "README.md"]
    + list((REPO / "docs").glob("*.md"))
    + list((REPO / "bench" / "notes").glob("*.md"))
)

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
_INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def relative_links(text):
    """The relative link targets of a markdown text, anchors dropped.

    Parameters
    ----------
    text : str
        Markdown source.

    Returns
    -------
    list of str
        Each link target that is not a URL (``scheme:...``) or a bare
        anchor, without its ``#fragment``, in order of appearance.
    """
    text = _CODE_SPAN.sub("", _FENCE.sub("", text))
    targets = _INLINE_LINK.findall(text) + _REFERENCE.findall(text)
    out = []
    for target in targets:
        if _URL.match(target) or target.startswith("#"):
            continue
        out.append(target.split("#", 1)[0])
    return out


def test_the_parser_finds_links_and_skips_code():
    text = (
        "See [a](docs/A.md#x) and [u](https://x.org/y).\n"
        "`[not](a link)` and `Literal[int](0)`\n"
        "```\n[fenced](nope.md)\n```\n"
        "[ref]: ../bench/README.md\n"
        "[anchor](#only)\n"
    )
    assert relative_links(text) == ["docs/A.md", "../bench/README.md"]


def test_the_checked_files_exist():
    names = {p.relative_to(REPO).as_posix() for p in DOC_FILES}
    assert {"README.md", "bench/README.md", "docs/index.md"} <= names
    assert any(n.startswith("bench/notes/") for n in names)


@pytest.mark.parametrize(
    "path", DOC_FILES, ids=[p.relative_to(REPO).as_posix() for p in DOC_FILES])
def test_relative_links_resolve(path):
    missing = [target for target in relative_links(path.read_text(encoding="utf-8"))
               if not (path.parent / target).exists()]
    assert not missing, f"{path.relative_to(REPO)}: dead links {missing}"


def test_bench_index_links_every_note_and_names_every_script():
    index = REPO / "bench" / "README.md"
    text = index.read_text(encoding="utf-8")
    linked = {(index.parent / t).resolve() for t in relative_links(text)}
    notes = set((REPO / "bench" / "notes").glob("*.md"))
    assert notes, "bench/notes/ holds the write-ups"
    unlinked = sorted(p.name for p in notes if p.resolve() not in linked)
    assert not unlinked, f"bench/README.md does not link {unlinked}"
    unnamed = sorted(p.name for p in (REPO / "bench").glob("*.py")
                     if f"`{p.name}`" not in text and f"`bench/{p.name}`" not in text)
    assert not unnamed, f"bench/README.md does not name {unnamed}"


def test_docs_index_lists_every_doc():
    index = REPO / "docs" / "index.md"
    linked = {(index.parent / t).resolve()
              for t in relative_links(index.read_text(encoding="utf-8"))}
    docs = [p for p in (REPO / "docs").glob("*.md") if p.name != "index.md"]
    unlisted = sorted(p.name for p in docs if p.resolve() not in linked)
    assert not unlisted, f"docs/index.md does not list {unlisted}"
