"""The names the command line offers before any registry is loaded.

``ultrafs --help`` and the parsing of a command's options must not import
the solver stack (the loss registry imports numba and every loss kernel)
nor the feature spaces: the CLI's ``--loss`` and ``--poly`` choices start
from these static lists.  They are the built-in members of the
registries, which ``tests/test_startup.py`` checks in a fresh process
(``solvers.losses.loss_names()`` and the ``poly_degree`` of
``features.FEATURE_SPACES``); a member registered at run time is offered
too, once its registry is loaded (``cli.types.RegistryChoice``).

This module imports nothing.
"""

#: names of the built-in losses (binary and multi-class members share them)
LOSS_NAMES = ("logistic", "squared-hinge")

#: ``poly_degree`` of the built-in feature spaces that have one, as strings
POLY_DEGREES = ("1", "2")
