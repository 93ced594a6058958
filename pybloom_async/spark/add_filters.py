"""Filters added to a whole lake on the executors: :func:`add_bloom_filters_on_spark`.

Each executor runs :func:`pybloom_async.add_bloom_filters_sync` on its files, so each file
is rewritten as the local call rewrites it, byte for byte and atomically (a temporary file
renamed over it locally, one PUT on an object store; a file that changed meanwhile is left
as it was). Paths inside a Delta or Iceberg table are refused on the driver before any file
is read, as the local call refuses them (:mod:`pybloom_async.rewrite.guard`): a table's
files change only by a commit of its library (``add_bloom_filters(table)``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..checks import OnError, error_policy, integer, positive_int, probability, require_pyarrow
from ..core.sizes import DEFAULT_MAX_BYTES, MIN_BYTES
from ..errors import InvalidArgumentError, PyBloomError
from ..io.base import FileInfo, location_text
from ..io.store import StoreOptions
from ..rewrite.add_filters import DEFAULT_ADD_MAX_BYTES, add_bloom_filters_sync
from ..rewrite.guard import TableGuard, shared_guard
from ..tables import table_kind
from .common import (
    OptionsArg,
    PathsArg,
    files_frame,
    list_files,
    store_options,
    unique_files,
)
from .one_line import check_traceback, one_line_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


AddRow = tuple[str, bool | None, int | None, int | None, int | None, int | None, str | None]


def add_filters_schema() -> StructType:
    """The schema of :func:`add_bloom_filters_on_spark`'s DataFrame.

    ``file`` string, ``written`` boolean (False: no chunk needed a filter, the file was
    left alone), ``bytes_before`` and ``bytes_after`` long (file sizes), ``filters`` int
    (filters added), ``filter_bytes`` long, ``error`` string (null on success; the other
    columns are null then).
    """
    from pyspark.sql.types import (
        BooleanType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    return StructType(
        [
            StructField("file", StringType(), nullable=False),
            StructField("written", BooleanType(), nullable=True),
            StructField("bytes_before", LongType(), nullable=True),
            StructField("bytes_after", LongType(), nullable=True),
            StructField("filters", IntegerType(), nullable=True),
            StructField("filter_bytes", LongType(), nullable=True),
            StructField("error", StringType(), nullable=True),
        ]
    )


@dataclass(frozen=True)
class _AddTask:
    """What one partition does: add the filters to its files, one after another."""

    columns: tuple[str, ...]
    ndv: int | None
    fpp: float
    max_bytes: int
    replace: bool
    options: StoreOptions | None
    strict: bool
    traceback: bool = False

    def _one(self, location: str | FileInfo) -> AddRow:
        path = location_text(location)
        try:
            done = add_bloom_filters_sync(
                path, list(self.columns), ndv=self.ndv, fpp=self.fpp, max_bytes=self.max_bytes,
                replace=self.replace, options=self.options,
            )  # fmt: skip
        except PyBloomError as exc:
            if self.strict:
                raise exc.with_context(path=path) from None
            return (path, None, None, None, None, None, f"{type(exc).__name__}: {exc}")
        return (
            path, done.written, done.bytes_before, done.bytes_after, len(done.filters),
            done.filter_bytes, None,
        )  # fmt: skip

    def __call__(self, items: Iterable[str | FileInfo]) -> Iterator[AddRow]:
        return one_line_rows(self._rows(items), self.traceback)

    def _rows(self, items: Iterable[str | FileInfo]) -> Iterator[AddRow]:
        # One guard for the partition: each folder is looked at once for all its files.
        with shared_guard(TableGuard(self.options)):
            for location in items:
                yield self._one(location)


def _checked(
    columns: str | Sequence[str], ndv: int | None, fpp: float, max_bytes: int
) -> tuple[str, ...]:
    """The arguments checked as :func:`pybloom_async.add_bloom_filters` checks them."""
    names = columns.split(",") if isinstance(columns, str) else list(columns)
    if not all(isinstance(n, str) for n in names):
        raise InvalidArgumentError("columns are names (str), e.g. ['id', 'email'] or 'id,email'")
    cleaned = tuple(dict.fromkeys(n.strip() for n in names if n.strip()))
    if not cleaned:
        raise InvalidArgumentError("no columns given")
    if ndv is not None:
        positive_int("ndv", ndv)
    probability("fpp", fpp)
    integer("max_bytes", max_bytes, minimum=MIN_BYTES, maximum=DEFAULT_MAX_BYTES)
    require_pyarrow("add Bloom filters")
    return cleaned


# Long because: the docstring documents every parameter and error (44 lines); the code is 29.
def add_bloom_filters_on_spark(
    spark: SparkSession,
    paths: PathsArg,
    columns: str | Sequence[str],
    *,
    ndv: int | None = None,
    fpp: float = 0.01,
    max_bytes: int = DEFAULT_ADD_MAX_BYTES,
    replace: bool = False,
    options: OptionsArg = None,
    on_error: OnError | None = None,
    strict: bool | None = None,
    num_partitions: int | None = None,
    traceback: bool = False,
) -> DataFrame:
    """Add a Bloom filter per row group to the named columns of every file, on the executors.

    The driver lists directories and prefixes and refuses, before any file is read, a path
    inside a Delta or Iceberg table; each task rewrites its files one after another with
    :func:`pybloom_async.add_bloom_filters_sync` (the same bytes as the local call, each
    file replaced atomically). The DataFrame is lazy: the files are rewritten when an
    action runs (``collect``), and again at each action unless it is cached (a second
    run skips the chunks that have a filter, unless ``replace``).

    Parameters
    ----------
    spark:
        A classic SparkSession.
    paths:
        Files, directories or object-store prefixes (listed on the driver).
    columns, ndv, fpp, max_bytes, replace, options:
        As for :func:`pybloom_async.add_bloom_filters`.
    on_error:
        ``"skip"`` (default): a file that cannot be rewritten is reported in its row's
        ``error``; ``"raise"``: the first one fails the job.
    strict:
        Deprecated: ``strict=True`` is ``on_error="raise"`` (a DeprecationWarning).
    num_partitions:
        Tasks to spread the files over (default: the context's parallelism).
    traceback:
        True: an error of ours in a task (with ``on_error="raise"``) reaches the user with its
        Python traceback (default: its one line inside Spark's exception,
        :mod:`.one_line`).

    Returns
    -------
    pyspark.sql.DataFrame
        One row per file, columns as :func:`add_filters_schema`.

    Raises
    ------
    InvalidArgumentError
        A table object (use ``add_bloom_filters(table)``: one commit), a path inside a
        table folder, or an argument out of range.
    SourceNotFoundError, SourceError
        A directory or prefix cannot be listed.
    """
    if table_kind(paths) is not None:
        raise InvalidArgumentError(
            "a table's files change only by one commit of its library: "
            "add_bloom_filters(table) adds their filters that way"
        )
    names = _checked(columns, ndv, fpp, max_bytes)
    raises = error_policy(on_error, strict) == "raise"
    store = store_options(options)
    given = [paths] if isinstance(paths, (str, os.PathLike, FileInfo)) else list(paths)
    guard = TableGuard(store)
    for path in given:  # a folder inside a table, or a table's own folder
        text = location_text(path)
        if not text.lower().endswith(".parquet"):
            guard.check(text, folder=True)
    # Listed as they are; the guard refuses a table's files with what rewriting would do.
    files = unique_files(list_files(paths, store, table_files=True))
    guard.check_all(location_text(f) for f in files)
    task = _AddTask(
        names, ndv, float(fpp), int(max_bytes), bool(replace), store, raises,
        check_traceback(traceback),
    )  # fmt: skip
    schema = add_filters_schema()
    return files_frame(spark, files, task, schema, num_partitions)
