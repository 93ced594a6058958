"""The package version, written once: the build reads it from here (pyproject.toml)."""

__version__ = "0.1.0"
