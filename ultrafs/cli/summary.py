"""What a person reads after ``select``: ``(name, text)`` lines, printed
as a table on a terminal, else the scores alone on stderr."""

from __future__ import annotations

import os
import time

import click

from ultrafs.cli.terminal import format_seconds


def print_summary(lines, scores, out, summary, started):
    """The scores, time and model path after ``lines``: as a table on a
    terminal, else the accuracies alone on stderr."""
    for name, record in scores.items():
        where = record.get("data", "held-out rows")
        if "accuracy" in record:
            lines.append((f"{name.replace('_', '-')} accuracy",
                          f"{record['accuracy']:.4f} on {where}"))
        else:
            lines.append((f"{name.replace('_', '-')} RMSE",
                          f"{record['rmse']:.6g} (R² {record['r2']:.4f}) on {where}"))
    lines.append(("time", format_seconds(time.perf_counter() - started)))
    if out != "-":
        lines.append(("model", os.fspath(out)))
    if summary:
        width = max(len(name) for name, _ in lines) + 2
        click.echo("\n".join(f"{name:<{width}}{text}" for name, text in lines))
    else:
        for name, text in lines:
            if name.endswith(("accuracy", "RMSE")):
                click.echo(f"{name}: {text}", err=True)
