"""Regenerate the CLI reference blocks of docs/CLI.md from ``--help``.

Each block sits after a marker ``<!-- help:COMMAND -->`` (or
``<!-- help:select --method M -->`` for one method's options) and is a
fenced ``text`` block; ``tests/test_cli.py`` fails when a block is stale
or a registered method has none.

Usage: python tools/readme_cli.py
"""

import re
from pathlib import Path

from click.testing import CliRunner

from ultrafs.cli import main

#: a generated block: its marker names the command (and its arguments)
HELP_BLOCK = r"<!-- help:([\w -]+?) -->\n```text\n.*?\n```"

CLI_DOC = Path(__file__).resolve().parents[1] / "docs" / "CLI.md"


def help_text(command: str) -> str:
    """The ``--help`` output of one subcommand (``"select --method l1"``:
    with its arguments), as the console shows it."""
    result = CliRunner().invoke(main, [*command.split(), "--help"], prog_name="ultrafs",
                                terminal_width=80)
    return result.output.rstrip()


def main_() -> None:
    text = CLI_DOC.read_text()

    def replace(match):
        command = match.group(1)
        return f"<!-- help:{command} -->\n```text\n{help_text(command)}\n```"

    new = re.sub(HELP_BLOCK, replace, text, flags=re.S)
    CLI_DOC.write_text(new)


if __name__ == "__main__":
    main_()
