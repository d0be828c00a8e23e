"""silo_nb's own version (``silo_nb.__version__``, and the ``clientInfo`` it gives agents); it must equal
pyproject.toml's (a test checks)."""

__all__ = ["VERSION"]

VERSION = "0.1.0"
