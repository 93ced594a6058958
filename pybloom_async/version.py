"""The package version, written once: the build reads it from here (pyproject.toml)."""

#: The version of pybloom-async.
__version__ = "0.1.0"
