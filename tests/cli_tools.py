"""What the command-line tests share: running ``ultrafs`` in-process, and the
shape of a one-line error."""

from click.testing import CliRunner

from ultrafs.cli import main


def run(*args, ok=True):
    """``ultrafs ARGS`` through click's runner (80 columns); asserts success if ``ok``."""
    result = CliRunner().invoke(main, [str(a) for a in args], prog_name="ultrafs",
                                terminal_width=80)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def assert_one_line_error(result, *fragments):
    """Non-zero exit, a single 'Error: ...' line naming the problem, no traceback."""
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert not isinstance(result.exception, (AssertionError, TypeError, KeyError))
    lines = [ln for ln in result.output.strip().splitlines() if ln.startswith("Error")]
    assert len(lines) == 1, result.output
    for fragment in fragments:
        assert fragment in lines[0], result.output
