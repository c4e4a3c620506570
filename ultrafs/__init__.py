"""ultrafs: out-of-core feature selection for sparse binary classification.

The public objects are imported lazily so that ``import ultrafs`` (and the
CLI's ``--help``) stays instant.
"""

__version__ = "0.1.0"

__all__ = ["FGMClassifier", "Model", "InMemoryStore", "open_store", "select",
           "__version__"]

_LAZY = {
    "FGMClassifier": ("ultrafs.estimator", "FGMClassifier"),
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
