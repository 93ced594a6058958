"""What the Spark jobs and the data source share: the driver's blocking calls, the session's
context, file listings, partition counts, the jobs' one DataFrame of rows per file, and the
check of the PySpark version.

pyspark is imported only inside the functions that need it, so importing this module works
without it.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ..checks import positive_int
from ..errors import InvalidArgumentError, MissingDependencyError
from ..io.base import FileInfo, location_text
from ..io.files import expand_paths
from ..io.store import StoreOptions
from ..read.reader import BloomReader
from ..tasks.loops import running_event_loop

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


T = TypeVar("T")
PathsArg = str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo]
OptionsArg = StoreOptions | Mapping[str, Any] | None

#: The PySpark release whose Python Data Source API pushes filters down
#: (``DataSourceReader.pushFilters``, SPARK-49212): the ``pybloom`` data source needs it.
DATA_SOURCE_PYSPARK = (4, 1)


def run_sync(func: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``anyio.run``, also from a thread whose event loop is running (Jupyter)."""
    if running_event_loop() is None:
        return anyio.run(func, *args)
    with ThreadPoolExecutor(1, thread_name_prefix="pybloom-async") as pool:
        return pool.submit(anyio.run, func, *args).result()


def spark_context(spark: SparkSession) -> Any:
    """The session's SparkContext.

    Raises
    ------
    InvalidArgumentError
        A Spark Connect session (it has none).
    """
    try:
        return spark.sparkContext
    except Exception as exc:  # Spark Connect sessions have no SparkContext
        raise InvalidArgumentError(
            f"needs a classic SparkSession with a SparkContext (Spark Connect has none): {exc}"
        ) from None


def store_options(options: OptionsArg) -> StoreOptions | None:
    """Object-store options checked once on the driver (a dict becomes StoreOptions)."""
    return BloomReader(options=options, max_files=0).options


def list_files(
    paths: PathsArg, options: StoreOptions | None, table_files: bool = False
) -> list[str | FileInfo]:
    """Directories and prefixes become their files (on the driver, before anything ships).

    ``table_files``: as for :func:`pybloom_async.io.files.expand_paths`.

    Raises
    ------
    InvalidArgumentError
        ``paths`` is not a path, a URL or a list of them; or (without ``table_files``) a
        path lies in a Delta or Iceberg table's folder, or holds one.
    SourceNotFoundError, SourceError
        A directory or prefix cannot be listed.
    """
    if isinstance(paths, (str, os.PathLike, FileInfo)):
        paths = [paths]
    elif not isinstance(paths, Sequence):
        raise InvalidArgumentError(
            f"paths must be a path, a URL or a list of them, not {type(paths).__name__}"
        )

    async def expand() -> list[str | FileInfo]:
        reader = BloomReader(options=options, max_files=0)
        return await expand_paths(paths, reader, table_files=table_files)

    return run_sync(expand)


def unique_files(files: list[str | FileInfo]) -> list[str | FileInfo]:
    """Each file once, in the order first met."""
    seen: set[str] = set()
    out = []
    for f in files:
        if location_text(f) not in seen:
            seen.add(location_text(f))
            out.append(f)
    return out


def partition_count(spark: SparkSession, items: int, num_partitions: int | None) -> int:
    """Partitions for ``items`` work items: ``num_partitions`` (checked) or the context's
    default parallelism, never more than the items (at least one)."""
    if num_partitions is None:
        parallelism = int(spark_context(spark).defaultParallelism)
        return max(1, min(items, parallelism))
    return max(1, min(items, positive_int("num_partitions", num_partitions)))


def files_frame(
    spark: SparkSession,
    files: Sequence[Any],
    task: Callable[[Iterable[Any]], Iterator[Any]],
    schema: StructType,
    num_partitions: int | None,
) -> DataFrame:
    """The DataFrame of the rows ``task`` yields for ``files``, spread over
    :func:`partition_count` partitions (``task`` runs once per partition, on the executors);
    with no files, an empty one of ``schema`` and no job.

    Raises
    ------
    InvalidArgumentError
        ``num_partitions`` is not a positive int, or a Spark Connect session.
    """
    if not files:
        return spark.createDataFrame([], schema)
    partitions = partition_count(spark, len(files), num_partitions)
    rdd = spark_context(spark).parallelize(files, partitions).mapPartitions(task)
    return spark.createDataFrame(rdd, schema, verifySchema=False)


def check_concurrency(concurrency: int | None) -> int | None:
    """``concurrency`` checked: None or a positive int."""
    return None if concurrency is None else positive_int("concurrency", concurrency)


def pyspark_version() -> tuple[int, int]:
    """The installed PySpark's (major, minor) version.

    Raises
    ------
    MissingDependencyError
        PySpark is not installed.
    """
    try:
        import pyspark
    except ImportError:
        raise MissingDependencyError(
            "PySpark is needed for the Spark integration: install pybloom-async[spark]"
        ) from None
    parts = str(pyspark.__version__).split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        raise MissingDependencyError(
            f"cannot read the PySpark version {pyspark.__version__!r}"
        ) from None


def require_data_source_api(version: tuple[int, int] | None = None) -> None:
    """Refuse, in one line, a PySpark without the Python Data Source API's filter pushdown.

    Raises
    ------
    MissingDependencyError
        The PySpark installed (or ``version``) is older than 4.1.
    """
    have = pyspark_version() if version is None else version
    if have < DATA_SOURCE_PYSPARK:
        need = ".".join(map(str, DATA_SOURCE_PYSPARK))
        raise MissingDependencyError(
            f"the pybloom data source needs PySpark >= {need} (the Python Data Source API "
            f"with filter pushdown); this is PySpark {have[0]}.{have[1]}: upgrade PySpark, "
            "or use lookup_on_spark, which works with it"
        )
