"""ultrafs/progress.py and the lines built on it: a bar on a terminal, one line
per phase when piped, silence unless a face turned progress on."""

import io
import re

from ultrafs.progress import Phase, format_seconds, is_showing, phase, showing


class Terminal(io.StringIO):
    """A stream that says it is a terminal (what tqdm draws on)."""

    def isatty(self):
        return True


#: a tqdm bar's marks: percentages and bar blocks, rates, the [elapsed<ETA] box
BAR_FRAGMENT = re.compile(r"\d+%\||\|\s|/s\]|\[\d\d:\d\d")


def test_silent_unless_a_face_turned_progress_on():
    stream = io.StringIO()
    assert not is_showing()
    with phase("quiet", 3, stream=stream) as p:
        p.update(3, status="done")
    assert stream.getvalue() == ""
    with showing(True):
        assert is_showing()
        with showing(False):
            with phase("inner off", stream=stream):
                pass
        assert is_showing()                  # restored on leaving
        with phase("on", 2, "point", stream=stream) as p:
            p.update(2)
    assert not is_showing()
    assert stream.getvalue().splitlines() == [stream.getvalue().strip()]
    assert stream.getvalue().startswith("on: 2/2 points in ")


def test_piped_one_line_per_phase_at_its_end():
    stream = io.StringIO()
    p = Phase("choosing C", 5, "point", show=True, stream=stream)
    for k in range(5):
        p.update(1, status=f"best C {k} (held-out accuracy 0.8)")
        assert stream.getvalue() == ""       # nothing while it runs
    p.close()
    p.close()                                # a second close writes nothing
    text = stream.getvalue()
    assert "\r" not in text and not BAR_FRAGMENT.search(text)
    assert text.count("\n") == 1
    assert re.fullmatch(r"choosing C: 5/5 points in \d+\.\d s; best C 4 \(held-out "
                        r"accuracy 0\.8\)\n", text)


def test_uncounted_phase_and_singular_unit():
    stream = io.StringIO()
    with Phase("loading", show=True, stream=stream):
        pass
    assert re.fullmatch(r"loading: \d+\.\d s\n", stream.getvalue())
    stream = io.StringIO()
    with Phase("one", 1, "fit", show=True, stream=stream) as p:
        p.update(1)
    assert stream.getvalue().startswith("one: 1/1 fit in ")


def test_set_total_and_write():
    stream = io.StringIO()
    with Phase("path", 3, "λ", show=True, stream=stream) as p:
        p.update(3)
        p.set_total(5)                       # the path was extended
        p.update(2)
        p.write("a line of its own")
    lines = stream.getvalue().splitlines()
    assert lines[0] == "a line of its own"
    assert lines[1].startswith("path: 5/5 λs in ")
    terminal = Terminal()
    with Phase("path", 3, "λ", show=True, stream=terminal) as p:
        p.set_total(7)
        assert p._bar.total == 7
        p.update(7)
    assert "7/7" in terminal.getvalue()


def test_terminal_draws_the_bar_when_the_phase_opens():
    terminal = Terminal()
    p = Phase("sklr fista", 3000, "iteration", show=True, stream=terminal)
    drawn = terminal.getvalue()
    assert "sklr fista" in drawn and "0/3000" in drawn   # before any step
    p.update(10, status="relative gap 3e-05 (tol 1e-06)")
    p.close()
    assert "\r" in terminal.getvalue()
    assert "relative gap" in terminal.getvalue() or "10/3000" in terminal.getvalue()


def test_nested_phases():
    stream = io.StringIO()
    with Phase("outer", 2, show=True, stream=stream) as outer:
        for k in range(2):
            with Phase(f"inner {k}", 4, "block", show=True, stream=stream) as inner:
                inner.update(4)
            outer.update(1)
    assert [line.split(":")[0] for line in stream.getvalue().splitlines()] == \
        ["inner 0", "inner 1", "outer"]
    terminal = Terminal()
    with Phase("outer", 2, show=True, stream=terminal) as outer:
        with Phase("inner", 4, "block", show=True, stream=terminal) as inner:
            assert inner._bar.pos != outer._bar.pos       # a line of its own
            inner.update(4)
        outer.update(2)
    assert "outer" in terminal.getvalue() and "inner" in terminal.getvalue()


def test_transient_phase_is_silent_when_piped():
    stream = io.StringIO()
    with Phase("product", 8, "row", show=True, stream=stream, transient=True) as p:
        p.update(8)
    assert stream.getvalue() == ""
    terminal = Terminal()
    with Phase("product", 8, "row", show=True, stream=terminal, transient=True,
               delay=0) as p:
        p.update(8)
    assert "product" in terminal.getvalue()


def test_format_seconds():
    assert format_seconds(3.25) == "3.2 s"
    assert format_seconds(42) == "42 s"
    assert format_seconds(125) == "2 min 05 s"
    assert format_seconds(3 * 3600 + 180) == "3 h 03 min"
    assert format_seconds(-1) == "0.0 s"


def test_pass_progress_piped_is_one_line():
    from ultrafs.scoring.progress import PassProgress, run_clock

    stream = io.StringIO()
    with run_clock(3):
        progress = PassProgress("iteration 2 pass phase 1", 3, "_score_block", stream=stream)
        progress._start({})
        for b in range(3):
            progress._posttask(("score_block-x", b), {"nnz": 1000}, {}, {}, 0)
        progress._finish({}, {}, False)
    text = stream.getvalue()
    assert "\r" not in text and text.count("\n") == 1
    assert text.startswith("iteration 2 of 3: scoring candidates: 3/3 blocks in ")
    assert "nnz/s" in text


def test_pass_progress_names_other_passes():
    from ultrafs.scoring.progress import describe_label

    assert describe_label("gsrfs: scoring phase 1") == "gsrfs: scoring"
    assert describe_label("gsrfs: scoring phase 2") == "gsrfs: scoring, pass 2"


def test_ingest_progress_piped_writes_its_last_line_once(tmp_path):
    from ultrafs.cli.terminal import IngestProgress

    path = tmp_path / "x.svm"
    path.write_text("1 1:1\n-1 2:1\n")
    stream = io.StringIO()
    reporter = IngestProgress(path, min_interval=0.0, stream=stream)
    assert not reporter.terminal
    reporter(1)
    reporter(2)
    assert stream.getvalue() == ""
    reporter.finish()
    reporter.finish()
    assert re.fullmatch(r"read x\.svm: 2 rows in \d+\.\d s; 0\.0 MB\n", stream.getvalue())


def test_say_writes_a_line_of_its_own():
    from ultrafs.progress import say

    stream = io.StringIO()
    say("iteration 1: 3 features", stream)
    assert stream.getvalue() == "iteration 1: 3 features\n"
    terminal = Terminal()
    with Phase("ℓ1 path", 4, "λ", show=True, stream=terminal) as p:
        p.update(1)
        say("λ/λ_max 0.95: 1 nonzero", terminal)     # above the bar, which is redrawn
        p.update(3)
    assert "λ/λ_max 0.95: 1 nonzero\n" in terminal.getvalue()
