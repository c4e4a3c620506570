"""ultrafs: out-of-core feature selection for sparse binary and multi-class classification
(and, with GSR-FS, regression).

The public objects are imported lazily so that ``import ultrafs`` (and the
CLI's ``--help``) stays instant.
"""

# ``ultrafs.kernels`` lives in the top-level folder ``kernels/`` (setuptools
# ``package-dir`` in pyproject.toml maps it for wheels, sdists and editable
# installs). In the source tree, ``ultrafs/kernels`` is a relative symlink to
# ``../kernels``, so that Python started in the repo root, which imports this
# folder rather than an installed ultrafs, finds the kernels too. A symlink
# was chosen over import hooks or ``__path__`` edits here: no code runs at
# import, every tool (pytest, IDEs, type checkers) sees the installed
# layout, and builds ignore it (setuptools takes the package from
# ``kernels/`` through ``package-dir`` and copies no link; the wheel and the
# sdist hold each kernel file once). A checkout without symlink support
# (git's core.symlinks=false) only loses the repo-root case: install with
# ``pip install -e .`` there.

__version__ = "0.1.0"

__all__ = ["FGMClassifier", "L1LogisticRegression", "MSLRClassifier",
           "SparseKernelLogisticRegression", "GSRFSSelector", "Model",
           "InMemoryStore", "open_store", "select", "__version__"]

_LAZY = {
    "FGMClassifier": ("ultrafs.sklearn", "FGMClassifier"),
    "L1LogisticRegression": ("ultrafs.sklearn", "L1LogisticRegression"),
    "MSLRClassifier": ("ultrafs.sklearn", "MSLRClassifier"),
    "SparseKernelLogisticRegression": ("ultrafs.sklearn",
                                       "SparseKernelLogisticRegression"),
    "GSRFSSelector": ("ultrafs.sklearn", "GSRFSSelector"),
    "Model": ("ultrafs.model", "Model"),
    "InMemoryStore": ("ultrafs.store", "InMemoryStore"),
    "open_store": ("ultrafs.store", "open_store"),
    "select": ("ultrafs.api", "select"),
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'ultrafs' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
