"""A guard against a Spark bug: one read plan shared by every scan of a data source's relation.

Spark 4.1 to 4.3 keep the read plan made with a query's pushed filters on the relation
(``PythonDataSourceV2``), not on the scan, and hand it to every later scan of that
DataFrame: a second query with other filters, the other side of a self-join or union, or a
query with no filter Spark can push then reads the first query's row groups and returns too
few rows. The fix (the plan scoped to its scan) comes with SPARK-58551, in Spark 5.0.

Each relation gets an id when its data source is first pickled (all its plans see the same
one), and each plan records its predicate in a file of the driver's temporary folder (every
plan of a query runs in a Python process of the driver). A relation planned again with
another predicate fails with :data:`REUSE_ERROR`; the same predicate again (``explain()``
then ``collect()``) plans the same row groups and passes. A later query with no filter Spark
can push runs no Python at all and cannot be caught here: load a DataFrame for each query.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path

from ...errors import InvalidArgumentError

__all__ = ["FIXED_SPARK", "REUSE_ERROR", "claim_plan", "guard_needed"]

#: The first Spark whose Python data source scans keep their own read plan (SPARK-58551).
FIXED_SPARK = (5, 0)
REUSE_ERROR = (
    "this pybloom DataFrame was already planned with other filters, and Spark {version} "
    "shares one read plan between all the queries and scans of a DataFrame loaded once "
    "(fixed in Spark 5.0, SPARK-58551): its rows would be wrong; load it again "
    "(spark.read.format('pybloom').load(...)) for each query, and for each side of a join "
    "or union"
)
_FOLDER = "pybloom-spark-plans"
_KEEP_SECONDS = 7 * 24 * 3600


def guard_needed(version: tuple[int, int]) -> bool:
    """Whether Spark ``version`` shares read plans between scans (4.1 up to 5.0)."""
    return version < FIXED_SPARK


def _sweep(folder: Path) -> None:
    """Forget relations planned more than a week ago (their files are a few bytes each)."""
    cutoff = time.time() - _KEEP_SECONDS
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                if entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)


def claim_plan(relation: str, predicate: str, version: str, folder: str | None = None) -> None:
    """Record that ``relation`` is planned with ``predicate`` (its full text, "" for none).

    Raises
    ------
    InvalidArgumentError
        The relation was planned before with another predicate (see the module docs).
    """
    where = Path(folder or tempfile.gettempdir()) / _FOLDER
    where.mkdir(parents=True, exist_ok=True)
    path = where / relation
    data = predicate.encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if path.read_bytes() != data:
            raise InvalidArgumentError(REUSE_ERROR.format(version=version)) from None
        return
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    _sweep(where)
