"""Command-line interface (click): thin commands over the library.

One module per command (``ingest``, ``info``, ``select``, ``path``,
``predict`` and ``evaluate``, ``report``, ``sign``, ``demo``) over small shared
modules: :mod:`~ultrafs.cli.errors` (one line per error, the exit
status), :mod:`~ultrafs.cli.types` (option value types),
:mod:`~ultrafs.cli.options` (shared options), :mod:`~ultrafs.cli.scheduler`,
:mod:`~ultrafs.cli.terminal`, :mod:`~ultrafs.cli.output`,
:mod:`~ultrafs.cli.data`, :mod:`~ultrafs.cli.summary`,
:mod:`~ultrafs.cli.method_options` (a method's options, generated from its
parameters) and :mod:`~ultrafs.cli.run` (one method run).

Heavy imports happen inside the commands so that ``--help`` is instant.
Errors raised on purpose by ultrafs become one line on stderr and exit
status 1; usage errors exit with status 2.
"""

from __future__ import annotations

import click

from ultrafs.cli import demo, info, ingest, path, predict, report, select, sign


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ultrafs")
def main():
    """ultrafs: select the few features that matter among millions."""
    from ultrafs.allocator import map_large_allocations

    skip_exit_collection()
    map_large_allocations()


exit_collection_skipped = False


def skip_exit_collection():
    """Spare the process its garbage collection at exit (0.3-0.5 s).

    Python's finalization collects every object in a reference cycle; after
    numba, llvmlite and scipy are loaded that takes 0.3-0.5 s, longer than
    opening a store and reading its labels.  ``gc.freeze`` from an atexit
    handler (run once the command is over: its files are written and closed,
    its threads joined; stdout and stderr are still flushed) leaves those
    objects to the operating system.  Nothing changes inside a process that
    goes on after a command (tests, ``CliRunner``): atexit runs at its exit.
    """
    global exit_collection_skipped
    if not exit_collection_skipped:
        import atexit
        import gc

        atexit.register(gc.freeze)
        exit_collection_skipped = True


for command in (ingest.ingest, info.info, select.select_command, path.path_command,
                predict.predict, predict.evaluate, report.report_command, sign.sign_command,
                demo.demo):
    main.add_command(command)
del command
