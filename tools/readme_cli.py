"""Regenerate the CLI reference blocks of README.md from ``--help``.

Each block sits after a marker ``<!-- help:COMMAND -->`` and is a fenced
``text`` block; ``tests/test_cli.py`` fails when a block is stale.

Usage: python tools/readme_cli.py
"""

import re
from pathlib import Path

from click.testing import CliRunner

from ultrafs.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def help_text(command: str) -> str:
    """The ``--help`` output of one subcommand, as the console shows it."""
    result = CliRunner().invoke(main, [command, "--help"], prog_name="ultrafs",
                                terminal_width=80)
    return result.output.rstrip()


def main_() -> None:
    text = README.read_text()

    def replace(match):
        command = match.group(1)
        return f"<!-- help:{command} -->\n```text\n{help_text(command)}\n```"

    new = re.sub(r"<!-- help:(\w+) -->\n```text\n.*?\n```", replace, text,
                 flags=re.S)
    README.write_text(new)


if __name__ == "__main__":
    main_()
