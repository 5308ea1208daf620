"""The package's version (stdlib only; the façade and the CLI read it)."""

__version__ = "0.1.0"
