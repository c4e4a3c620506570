"""Exception and warning hierarchy of ultrafs.

Every error raised on purpose by ultrafs derives from :class:`UltraFSError`,
which also subclasses :class:`ValueError`, so callers that only know the
builtins still catch them.  The CLI turns them into one clear line and a
non-zero exit status.
"""

__all__ = [
    "UltraFSError",
    "InputFormatError",
    "StoreFormatError",
    "StoreVersionError",
    "StoreExistsError",
    "ParameterError",
    "OutputPathError",
    "ClusterError",
    "UltraFSWarning",
]


class UltraFSError(ValueError):
    """Base class of every error ultrafs raises on purpose."""


class InputFormatError(UltraFSError):
    """An input file (LIBSVM text, model file...) is malformed.

    The message names the file and, where it applies, the line.
    """


class StoreFormatError(UltraFSError, OSError):
    """A path is not an ultrafs store, or the store is corrupt or truncated."""


class StoreVersionError(StoreFormatError):
    """A store was written with a format version this ultrafs cannot read."""


class StoreExistsError(UltraFSError, FileExistsError):
    """An output path exists and overwriting was not requested."""


class ParameterError(UltraFSError):
    """A parameter is out of its domain (B < 1, C <= 0, unknown loss...)."""


class OutputPathError(ParameterError):
    """An output path cannot be written: missing or read-only folder, a
    directory where a file is expected, or one of the run's own inputs."""


class ClusterError(UltraFSError):
    """A dask.distributed cluster cannot run the work: its scheduler does
    not answer, was lost, or no worker is left."""


class UltraFSWarning(UserWarning):
    """Warnings emitted by ultrafs (e.g. model features missing from a store)."""
