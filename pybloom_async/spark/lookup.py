"""Lookups on Spark: :func:`lookup_on_spark`, the rows of :func:`pybloom_async.lookup` as a
DataFrame read by the executors.

The driver plans exactly as the local lookup does (:func:`pybloom_async.rows.api.plan_lookup`:
the same files, lake index, pruning, result schema and errors); the kept row groups are cut
into tasks (:func:`.scan.split_tasks`) and each executor reads its task's column chunks
(:mod:`.reading`). The DataFrame comes from ``mapInArrow`` over one row per task, so it
works on every PySpark with it (3.3 and later), without the Python Data Source API.
``key=value`` folders are columns as for the local lookup (``partitioning``): each file's
values travel with its plan and are filled in by the task. An error of ours in a task
reaches the user as its one line inside Spark's exception (:mod:`.one_line`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..checks import OnError, positive_int
from ..errors import InvalidArgumentError, PyBloomError
from ..predicate import Predicate
from ..read.fetch import ReaderConfig
from ..rows.api import Sources, plan_lookup
from ..rows.arguments import LookupOptions, LookupOptionsKeywords, lookup_options
from ..tables import table_kind
from .common import OptionsArg, check_concurrency, run_sync, spark_context, store_options
from .one_line import check_traceback, one_line_rows
from .reading import read_task
from .scan import (
    DEFAULT_MAX_PARTITION_BYTES,
    FileRead,
    ReadSettings,
    ReadTask,
    int96_columns,
    split_tasks,
)
from .spark_types import batch_schema, spark_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from typing_extensions import Unpack


_LARGE_TYPES = "spark.sql.execution.arrow.useLargeVarTypes"


@dataclass(frozen=True)
class _Tasks:
    """What ``mapInArrow`` runs: the task whose number each input row holds."""

    tasks: tuple[ReadTask, ...]
    traceback: bool = False

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            for number in batch.column(0).to_pylist():
                yield from one_line_rows(read_task(self.tasks[int(number)]), self.traceback)


# Long because: the docstring documents every parameter and error (44 lines); the code is 47.
def lookup_on_spark(
    spark: SparkSession,
    sources: Sources,
    where: Predicate | str,
    columns: Sequence[str] | None = None,
    *,
    on_error: OnError | None = None,
    lookup: LookupOptions | None = None,
    options: OptionsArg = None,
    concurrency: int | None = None,
    config: ReaderConfig | None = None,
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES,
    num_partitions: int | None = None,
    traceback: bool = False,
    **keywords: Unpack[LookupOptionsKeywords],
) -> DataFrame:
    """The rows of ``sources`` that satisfy ``where``, exactly, as a DataFrame read by the
    executors: the rows of :func:`pybloom_async.lookup`, in the same order.

    The driver lists the files (and the lake index's segments), prunes them and reads each
    kept file's footer once, as the local lookup does; the kept row groups are cut into
    Spark tasks of at most ``max_partition_bytes``, and each task fetches only its row
    groups' column chunks. The DataFrame is lazy: the rows are read at each action (the
    plan, made now, is reused: a file replaced since fails its read).

    Types are Spark's: see :mod:`pybloom_async.spark.spark_types` (unsigned integers
    widen, UINT_64 becomes DECIMAL(20, 0), timestamps become microseconds).

    Parameters
    ----------
    spark:
        A classic SparkSession.
    sources, where, columns, on_error:
        As for :func:`pybloom_async.lookup` (a Delta or Iceberg table is not taken here:
        read it with the ``pybloom`` data source's ``table`` option).
    lookup, **keywords:
        How rows are read (:class:`~pybloom_async.LookupOptions`, or its fields as keyword
        arguments), as for :func:`pybloom_async.lookup` (``use_index``: which index serves
        the driver's plan): ``key=value`` folders are columns by default, typed by the
        local rule.
    options, concurrency, config:
        Object-store options, files read at once (on the driver and within each task),
        reader limits; as for :func:`pybloom_async.spark.prune_on_spark`.
    max_partition_bytes:
        Bytes to read per Spark task, at most: the kept row groups' column chunks of the
        columns read (a single row group larger than it is a task alone).
    num_partitions:
        Tasks to spread a large read over, at least (default: the context's parallelism).
    traceback:
        True: an error of ours in a task reaches the user with its Python traceback
        (default: its one line inside Spark's exception). An error on the driver is raised
        here, as it is.

    Raises
    ------
    PredicateError, SchemaMismatchError, ParquetFormatError, SourceError
        As for :func:`pybloom_async.lookup`, on the driver.
    UnsupportedTypeError
        A result column has no Spark type (naming it).
    InvalidArgumentError
        A table as ``sources``, a Spark Connect session, or an argument out of range.
    """
    if table_kind(sources) is not None:
        raise InvalidArgumentError(
            "lookup_on_spark reads files; read a Delta or Iceberg table with the pybloom data "
            "source (spark.read.format('pybloom').option('table', 'delta').load(uri))"
        )
    if config is not None and not isinstance(config, ReaderConfig):
        raise InvalidArgumentError(f"config must be a ReaderConfig, not {type(config).__name__}")
    check_traceback(traceback)
    read, unknown = lookup_options(lookup, keywords, "lookup_on_spark")
    if unknown:
        raise TypeError(f"lookup_on_spark() got an unexpected keyword argument {min(unknown)!r}")
    settings = ReadSettings(
        options=store_options(options),
        config=config,
        concurrency=check_concurrency(concurrency),
        on_error=on_error,
        lookup=read,
    )
    context = spark_context(spark)
    skipped: list[PyBloomError] = []

    async def plan() -> Any:
        return await plan_lookup(
            sources,
            where,
            columns,
            skipped=skipped,
            lookup=read,
            run=settings.run(),
        )

    planned = run_sync(plan)
    struct = spark_schema(planned.job.schema, int96_columns(planned.files))
    large = str(spark.conf.get(_LARGE_TYPES, "false")).lower() == "true"
    rows = batch_schema(struct, large_types=large)
    job = planned.job.shaped(rows, list(rows.names))
    reads = [FileRead(p.location, p) for p in planned.files if p.kept]
    if num_partitions is None:
        least = int(context.defaultParallelism)
    else:
        least = positive_int("num_partitions", num_partitions)
    limit = positive_int("max_partition_bytes", max_partition_bytes)
    tasks = split_tasks(reads, limit, least, job)
    if not tasks:
        return spark.createDataFrame([], struct)
    work = _Tasks(tuple(ReadTask(tuple(t), job, settings) for t in tasks), traceback)
    numbers = spark.range(len(tasks), numPartitions=len(tasks))
    return numbers.mapInArrow(work, struct)
