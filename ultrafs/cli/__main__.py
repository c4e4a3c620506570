"""``python -m ultrafs.cli``: the ``ultrafs`` command."""

from ultrafs.cli import main

if __name__ == "__main__":  # pragma: no cover
    main()
