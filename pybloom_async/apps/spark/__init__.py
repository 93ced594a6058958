"""The Spark integration's old import path; the package is :mod:`pybloom_async.spark`.

Names imported from here still work for one release, with a ``DeprecationWarning`` naming
the new path. The implementation moved with them (``pybloom_async.spark.jobs``, ...).
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

#: The names this package used to export, and the module that holds each now.
_MOVED = {
    "DEFAULT_WRITER_MAX_BYTES": ".writer_options",
    "bloom_writer_options": ".writer_options",
    "writer_filter_bytes": ".writer_options",
    "build_index_on_spark": ".indexes",
    "index_build_schema": ".indexes",
    "prune_on_spark": ".jobs",
    "read_surviving": ".jobs",
    "surviving_files": ".jobs",
    "verdict_schema": ".jobs",
}


def __getattr__(name: str) -> Any:
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"pybloom_async.apps.spark.{name} is deprecated: import it from pybloom_async.spark "
        "(this path goes away in the next release)",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(module, "pybloom_async.spark"), name)
