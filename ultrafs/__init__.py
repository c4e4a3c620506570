"""ultrafs: out-of-core feature selection for sparse binary classification."""
__version__ = "0.1.0"
