"""Sidecar indexes built on the executors: :func:`build_index_on_spark`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from ..checks import OnError, error_policy, integer, on_error_of
from ..errors import InvalidArgumentError
from ..io.base import FileInfo
from ..io.files import found_files
from ..io.store import StoreOptions
from .common import (
    OptionsArg,
    PathsArg,
    check_concurrency,
    files_frame,
    list_files,
    run_sync,
    store_options,
    unique_files,
)
from .one_line import check_traceback, one_line_rows
from .writer_options import check_column

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


def index_build_schema() -> StructType:
    """The schema of :func:`build_index_on_spark`'s DataFrame.

    ``file`` string, ``index`` string (null when none was written), ``columns``
    array of strings, ``num_rows`` long, ``index_bytes`` long (null when none was
    written), ``error`` string (null on success).
    """
    from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

    return StructType(
        [
            StructField("file", StringType(), nullable=False),
            StructField("index", StringType(), nullable=True),
            StructField("columns", ArrayType(StringType(), containsNull=False), nullable=False),
            StructField("num_rows", LongType(), nullable=True),
            StructField("index_bytes", LongType(), nullable=True),
            StructField("error", StringType(), nullable=True),
        ]
    )


BuildRow = tuple[str, str | None, list[str], int | None, int | None, str | None]


@dataclass(frozen=True)
class _IndexTask:
    """What one partition does: build the sidecar indexes of its files."""

    columns: tuple[str, ...]
    fpp: float
    ndv: int | dict[str, int] | None
    options: StoreOptions | None
    strict: bool
    concurrency: int | None
    traceback: bool = False

    async def _build(self, files: list[str | FileInfo]) -> list[BuildRow]:
        from ..index.build import build_index

        # The driver's files as found: none listed again, and each file's failure (one
        # gone since the listing too) is its own row's error, or with strict the task's.
        built = await build_index(
            found_files(files),
            list(self.columns),
            fpp=self.fpp,
            ndv=self.ndv,
            options=self.options,
            concurrency=self.concurrency,
            on_error=on_error_of(self.strict),
        )
        return [_build_row(b.to_dict()) for b in built]

    def __call__(self, items: Iterable[str | FileInfo]) -> Iterator[BuildRow]:
        return one_line_rows(self._rows(items), self.traceback)

    def _rows(self, items: Iterable[str | FileInfo]) -> Iterator[BuildRow]:
        files = list(items)
        if files:
            yield from anyio.run(self._build, files)


def _build_row(d: Mapping[str, Any]) -> BuildRow:
    return (
        str(d["file"]),
        None if d.get("index") is None else str(d["index"]),
        [str(c) for c in d.get("columns") or ()],
        None if d.get("num_rows") is None else int(d["num_rows"]),
        None if d.get("index_bytes") is None else int(d["index_bytes"]),
        None if d.get("error") is None else str(d["error"]),
    )


# Long because: the docstring documents every parameter and error (44 lines); the code is 31.
def build_index_on_spark(
    spark: SparkSession,
    paths: PathsArg,
    columns: Sequence[str],
    *,
    fpp: float = 0.01,
    ndv: int | Mapping[str, int] | None = None,
    options: OptionsArg = None,
    on_error: OnError | None = None,
    strict: bool | None = None,
    num_partitions: int | None = None,
    concurrency: int | None = None,
    traceback: bool = False,
) -> DataFrame:
    """Build the sidecar index of every file on the executors.

    Each partition runs :func:`pybloom_async.index.build.build_index` over its files
    concurrently; each index lands next to its data file
    (``dir/_bloom_index/name.parquet.index.v1.pbi``), the same bytes a local build
    writes. The DataFrame is computed (and the indexes written) at its first action,
    and again at every action unless it is cached.

    Parameters
    ----------
    spark, paths, options, num_partitions:
        As for :func:`~pybloom_async.spark.jobs.prune_on_spark`.
    columns:
        The columns to index.
    fpp:
        Target false-positive probability of each filter.
    ndv:
        Distinct values per file to size every filter for (an int, or per column);
        default: each file's exact distinct count.
    on_error:
        ``"skip"`` (default): a file that cannot be indexed is reported in its row's ``error``;
        ``"raise"``: the first one fails the job.
    strict:
        Deprecated: ``strict=True`` is ``on_error="raise"`` (a DeprecationWarning).
    concurrency:
        Files indexed at once within each partition (default: the executor's CPUs).
    traceback:
        True: an error of ours in a task (with ``on_error="raise"``) reaches the user with its
        Python traceback (default: its one line inside Spark's exception,
        :mod:`.one_line`).

    Returns
    -------
    pyspark.sql.DataFrame
        One row per file, columns as :func:`index_build_schema`; ``error`` is null
        when the index was written.

    Raises
    ------
    InvalidArgumentError
        No column, bad fpp, ndv, options, partitions or concurrency.
    SourceNotFoundError, SourceError
        A directory or prefix cannot be listed (on the driver).
    """
    from ..index.build import build_index

    raises = error_policy(on_error, strict) == "raise"
    if isinstance(columns, (str, bytes)):
        raise InvalidArgumentError(f"columns must be a list of names, not one str ({columns!r})")
    names = tuple(check_column(c) for c in columns)
    sizes: int | dict[str, int] | None
    if isinstance(ndv, Mapping):
        sizes = {}
        for name, value in ndv.items():
            sizes[check_column(name)] = integer("ndv", value, minimum=0, column=str(name))
    else:
        sizes = ndv
    store = store_options(options)
    limit = check_concurrency(concurrency)

    async def validate() -> None:
        # build_index checks its arguments before it lists anything: no file, no I/O.
        await build_index([], list(names), fpp=fpp, ndv=sizes, concurrency=limit)

    run_sync(validate)
    task = _IndexTask(names, float(fpp), sizes, store, raises, limit, check_traceback(traceback))
    files = unique_files(list_files(paths, store))
    schema = index_build_schema()
    return files_frame(spark, files, task, schema, num_partitions)
