"""PySpark: write files with Bloom filters, and prune or index them on the executors.

Three parts, for a pipeline that runs on Spark (install the ``[spark]`` extra):

* :func:`bloom_writer_options` gives the parquet-java writer options that make Spark
  write a Split Block Bloom Filter per row group for chosen columns, and
  :func:`writer_filter_bytes` the size each of those filters will have.
* :func:`prune_on_spark` spreads a file list over the executors; each partition runs
  the async reader (:func:`pybloom_async.pruning.api.prune`) over all its files at once and
  yields one row per (file, row group). :func:`surviving_files` and
  :func:`read_surviving` turn the result into the input of a normal
  ``spark.read.parquet``, so a job opens only the files that may hold a match.
* :func:`build_index_on_spark` builds file-level sidecar indexes
  (:mod:`pybloom_async.index.build`) on the executors.

The executors must import this package: install it where the executors' Python runs,
and point ``PYSPARK_PYTHON`` at that interpreter before the SparkContext starts. Work
shipped to executors (predicates, :class:`~pybloom_async.io.sources.StoreOptions`, file
listings) is pickled; object-store credentials given as ``options`` travel with it, so
on a shared cluster prefer credentials the executors find in their own environment
(``options=None``).

pyspark is imported only inside the functions that need it, so ``import
pybloom_async`` works without it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ...checks import integer, positive_int, probability
from ...errors import InvalidArgumentError
from ...io.base import FileInfo
from ...io.store import StoreOptions
from ...predicate import Predicate, as_predicate
from ...pruning.api import prune
from ...pruning.runner import expand_paths
from ...pruning.verdicts import Rule, Verdict
from ...read.blocking import running_event_loop
from ...read.fetch import ReaderConfig
from ...read.reader import BloomReader

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "DEFAULT_WRITER_MAX_BYTES",
    "bloom_writer_options",
    "build_index_on_spark",
    "index_build_schema",
    "prune_on_spark",
    "read_surviving",
    "surviving_files",
    "verdict_schema",
    "writer_filter_bytes",
]

T = TypeVar("T")
PathsArg = str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo]
OptionsArg = StoreOptions | Mapping[str, Any] | None

# ---- writer options ------------------------------------------------------------------

#: parquet-java's default ``parquet.bloom.filter.max.bytes``
#: (``ParquetProperties.DEFAULT_MAX_BLOOM_FILTER_BYTES``): the size of every filter
#: whose column has no expected NDV.
DEFAULT_WRITER_MAX_BYTES = 1024 * 1024
# parquet-java's BlockSplitBloomFilter bounds (LOWER_BOUND_BYTES, UPPER_BOUND_BYTES). A
# max.bytes outside the open interval between them is silently ignored (the constructor
# keeps 128 MiB), and one that is not a power of two yields a bitset of that odd size,
# which the Parquet spec does not allow: only powers of two in [64, 64 MiB] do what
# they say.
_JAVA_MIN_BYTES = 32
_JAVA_MAX_BYTES = 128 * 1024 * 1024
# Per-column NDV for parquet-java is a Java long, but its sizing multiplies it by -8
# before anything else; keep it far from overflow (filters top out at 128 MiB, reached
# near 117 million values at fpp 0.01, so larger values change nothing anyway).
_MAX_NDV = 2**31 - 1

_ENABLED = "parquet.bloom.filter.enabled#{}"
_NDV = "parquet.bloom.filter.expected.ndv#{}"
_FPP = "parquet.bloom.filter.fpp#{}"
_MAX_BYTES = "parquet.bloom.filter.max.bytes"


def _check_ndv(value: object, column: str | None) -> int:
    # Distinct values per row group, up to parquet-java's int.
    return integer("ndv", value, minimum=1, maximum=_MAX_NDV, column=column)


def _check_max_bytes(max_bytes: object) -> int:
    max_bytes = integer("max_bytes", max_bytes)
    if not (_JAVA_MIN_BYTES < max_bytes < _JAVA_MAX_BYTES and max_bytes & (max_bytes - 1) == 0):
        raise InvalidArgumentError(
            "max_bytes must be a power of two from 64 to 67108864: parquet-java ignores "
            "values outside that range and writes a bitset of any other size as is, "
            "which the Parquet spec does not allow",
            value=max_bytes,
        )
    return max_bytes


def _check_column(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"a column name must be a non-empty str, not {name!r}")
    return name


def bloom_writer_options(
    columns: Sequence[str] | Mapping[str, int | None],
    *,
    fpp: float = 0.01,
    ndv: int | None = None,
    max_bytes: int | None = None,
) -> dict[str, str]:
    """The parquet-java writer options that give the chosen columns Bloom filters.

    Pass them to Spark's writer: ``df.write.options(**opts).parquet(path)`` (they reach
    the Hadoop configuration of the write), or set them with the ``spark.hadoop.``
    prefix on the session.

    Traps (each checked against Spark by ``tests/integration/test_spark.py``):

    * **Sizing comes from ndv, not from the data.** A column without an expected NDV
      gets a filter of ``max_bytes`` (1 MiB unless set) in *every* row group, whatever
      it holds. Give ``ndv`` as the number of distinct values of one *row group*
      (not of the table); :func:`writer_filter_bytes` tells the size it leads to.
    * **Tiny files and row groups bloat.** Each row group carries its own filter per
      column, sized as above: a file of N row groups holds N filters per column, so
      many small files (or a small ``parquet.block.size``) multiply the overhead; a
      1,000-row file with one unsized filter weighs over 1 MiB.
    * **INT96 timestamps get no filter.** Spark writes timestamps as INT96 by default,
      and parquet-java keeps INT96 chunks dictionary-encoded; it writes no filter for
      a chunk whose pages are all dictionary-encoded (``ParquetFileWriter``: "write
      bloom filter if one of data pages is not dictionary encoded"). So only row
      groups whose dictionary overflows (``parquet.dictionary.page.size``, 1 MiB:
      about 87,000 distinct INT96 values) get one. Set
      ``spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS`` (or turn the
      dictionary off for the column: ``parquet.enable.dictionary#col=false``).
      The same rule drops the filter of any low-cardinality column that stays
      dictionary-encoded.
    * **BOOLEAN filters are empty.** parquet-java writes them but never inserts a
      value (readers here ignore them); do not ask for them.

    Parameters
    ----------
    columns:
        Column names (Parquet paths, ``a.b`` for nested fields), or a mapping from
        column name to its expected NDV per row group (None: unsized).
    fpp:
        Target false-positive probability of every filter, in (0, 1).
    ndv:
        Expected distinct values per row group for every column of a list (not
        allowed with a mapping).
    max_bytes:
        ``parquet.bloom.filter.max.bytes``: the cap on every filter of the write, and
        the size of unsized ones. A power of two from 64 B to 64 MiB; default:
        parquet-java's 1 MiB.

    Returns
    -------
    dict of str to str
        ``parquet.bloom.filter.enabled#col``, ``parquet.bloom.filter.fpp#col``,
        ``parquet.bloom.filter.expected.ndv#col`` (when known) and
        ``parquet.bloom.filter.max.bytes`` (when given).

    Raises
    ------
    InvalidArgumentError
        No column, a column twice or not a non-empty str, ``columns`` given as one
        str, ``ndv`` both per column and for all, or a value out of range.
    """
    if isinstance(columns, (str, bytes)):
        raise InvalidArgumentError(
            f"columns must be a list of names or a mapping, not one str ({columns!r}): "
            f"write [{columns!r}]"
        )
    sizes: dict[str, int | None] = {}
    if isinstance(columns, Mapping):
        if ndv is not None:
            raise InvalidArgumentError(
                "ndv is given both per column (the mapping) and for all columns (ndv=)"
            )
        for name, value in columns.items():
            sizes[_check_column(name)] = None if value is None else _check_ndv(value, name)
    else:
        if not isinstance(columns, Iterable):
            raise InvalidArgumentError(
                f"columns must be a list of names or a mapping, not {type(columns).__name__}"
            )
        common = None if ndv is None else _check_ndv(ndv, None)
        for name in columns:
            if _check_column(name) in sizes:
                raise InvalidArgumentError("column given twice", column=name)
            sizes[name] = common
    if not sizes:
        raise InvalidArgumentError("no column given")
    rate = probability("fpp", fpp)
    options: dict[str, str] = {}
    for name, size in sizes.items():
        options[_ENABLED.format(name)] = "true"
        options[_FPP.format(name)] = repr(rate)
        if size is not None:
            options[_NDV.format(name)] = str(size)
    if max_bytes is not None:
        options[_MAX_BYTES] = str(_check_max_bytes(max_bytes))
    return options


def writer_filter_bytes(ndv: int | None, fpp: float = 0.01, max_bytes: int | None = None) -> int:
    """The bitset size parquet-java gives each filter written with these options.

    Follows parquet-java 1.17 (``ColumnValueCollector.initBloomFilter``,
    ``BlockSplitBloomFilter.optimalNumOfBits`` and ``initBitset``) step by step, its
    rounding included, so the figure matches the files Spark writes: multiply by row
    groups and filtered columns for a file's filter overhead.

    Parameters
    ----------
    ndv:
        Expected distinct values per row group; None: no NDV given (the maximum size).
    fpp, max_bytes:
        As for :func:`bloom_writer_options` (``max_bytes`` None: 1 MiB).

    Raises
    ------
    InvalidArgumentError
        A value out of the ranges :func:`bloom_writer_options` accepts.
    """
    rate = probability("fpp", fpp)
    cap = DEFAULT_WRITER_MAX_BYTES if max_bytes is None else _check_max_bytes(max_bytes)
    if ndv is None:
        return cap
    n = _check_ndv(ndv, None)
    m = -8 * n / math.log(1 - math.pow(rate, 1.0 / 8))
    num_bits = int(m) if m < 2**31 else 2**31 - 1  # Java's (int) cast saturates
    if num_bits > _JAVA_MAX_BYTES << 3 or m < 0:
        num_bits = _JAVA_MAX_BYTES << 3
    # parquet-java masks with ~BITS_PER_BLOCK (~256), not ~255: kept as it is, since the
    # power-of-two rounding below absorbs the difference only most of the time.
    num_bits = (num_bits + 255) & ~256
    num_bits = max(num_bits, _JAVA_MIN_BYTES << 3)
    num_bytes = max(num_bits // 8, _JAVA_MIN_BYTES)
    if num_bytes & (num_bytes - 1):
        num_bytes = 1 << num_bytes.bit_length()
    return min(num_bytes, cap)


# ---- schemas -------------------------------------------------------------------------


def verdict_schema() -> StructType:
    """The schema of :func:`prune_on_spark`'s DataFrame.

    ``file`` string, ``row_group`` int and ``num_rows`` long (null for a verdict on the
    whole file), ``kept`` boolean, ``reason`` string, ``rule`` string (a
    :class:`~pybloom_async.pruning.api.Rule` value).
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
            StructField("row_group", IntegerType(), nullable=True),
            StructField("num_rows", LongType(), nullable=True),
            StructField("kept", BooleanType(), nullable=False),
            StructField("reason", StringType(), nullable=False),
            StructField("rule", StringType(), nullable=False),
        ]
    )


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


# ---- driver side ---------------------------------------------------------------------


def _run_sync(func: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``anyio.run``, also from a thread whose event loop is running (Jupyter)."""
    if running_event_loop() is None:
        return anyio.run(func, *args)
    with ThreadPoolExecutor(1, thread_name_prefix="pybloom-async") as pool:
        return pool.submit(anyio.run, func, *args).result()


def _context(spark: SparkSession) -> Any:
    try:
        return spark.sparkContext
    except Exception as exc:  # Spark Connect sessions have no SparkContext
        raise InvalidArgumentError(
            f"needs a classic SparkSession with a SparkContext (Spark Connect has none): {exc}"
        ) from None


def _path_of(location: str | FileInfo) -> str:
    return location.path if isinstance(location, FileInfo) else location


def _options(options: OptionsArg) -> StoreOptions | None:
    # BloomReader validates and converts a dict into StoreOptions.
    return BloomReader(options=options, max_files=0).options


def _list_files(paths: PathsArg, options: StoreOptions | None) -> list[str | FileInfo]:
    """Directories and prefixes become their files (on the driver, before anything ships)."""
    if isinstance(paths, (str, os.PathLike, FileInfo)):
        paths = [paths]
    elif not isinstance(paths, Sequence):
        raise InvalidArgumentError(
            f"paths must be a path, a URL or a list of them, not {type(paths).__name__}"
        )

    async def expand() -> list[str | FileInfo]:
        return await expand_paths(paths, BloomReader(options=options, max_files=0))

    return _run_sync(expand)


def _unique(files: list[str | FileInfo]) -> list[str | FileInfo]:
    seen: set[str] = set()
    out = []
    for f in files:
        if _path_of(f) not in seen:
            seen.add(_path_of(f))
            out.append(f)
    return out


def _partitions(spark: SparkSession, files: int, num_partitions: int | None) -> int:
    if num_partitions is None:
        parallelism = int(_context(spark).defaultParallelism)
        return max(1, min(files, parallelism))
    return max(1, min(files, positive_int("num_partitions", num_partitions)))


def _check_concurrency(concurrency: int | None) -> int | None:
    return None if concurrency is None else positive_int("concurrency", concurrency)


# ---- executor side -------------------------------------------------------------------

VerdictRow = tuple[str, int | None, int | None, bool, str, str]


def _row(v: Verdict) -> VerdictRow:
    return (v.file, v.row_group, v.num_rows, v.kept, v.reason, v.rule.value)


@dataclass(frozen=True)
class _PruneTask:
    """What one partition does: prune its files. Pickled by reference to this module."""

    where: Predicate
    options: StoreOptions | None
    strict: bool
    concurrency: int | None
    config: ReaderConfig | None
    use_index: bool

    async def _prune(self, files: list[str | FileInfo]) -> list[Verdict]:
        if self.use_index:
            from ...index.prune import prune_with_index

            return await prune_with_index(
                files,
                self.where,
                options=self.options,
                concurrency=self.concurrency,
                strict=self.strict,
                config=self.config,
                require_columns=False,  # a partition holds a part of the files
            )
        return await prune(
            files,
            self.where,
            strict=self.strict,
            concurrency=self.concurrency,
            options=self.options,
            config=self.config,
            require_columns=False,  # a partition holds a part of the files
        )

    def __call__(self, items: Iterable[str | FileInfo]) -> Iterator[VerdictRow]:
        files = list(items)
        if not files:
            return iter(())
        try:
            verdicts = anyio.run(self._prune, files)
        except Exception:
            # prune keeps the files it cannot read; what still escapes (a file that
            # vanished since the driver listed it, a bug) must not take the partition's
            # other files with it: each file alone, a failing one kept with the reason.
            if self.strict:
                raise
            verdicts = self._one_by_one(files)
        return (_row(v) for v in verdicts)

    def _one_by_one(self, files: list[str | FileInfo]) -> list[Verdict]:
        out: list[Verdict] = []
        for location in files:
            try:
                out.extend(anyio.run(self._prune, [location]))
            except Exception as exc:
                reason = f"file not pruned: {type(exc).__name__}: {exc}"
                out.append(Verdict(_path_of(location), None, None, True, reason, Rule.UNREADABLE))
        return out


# ---- pruning ---------------------------------------------------------------------------


def prune_on_spark(
    spark: SparkSession,
    paths: PathsArg,
    where: Predicate | str,
    *,
    options: OptionsArg = None,
    use_index: bool = False,
    strict: bool = False,
    num_partitions: int | None = None,
    concurrency: int | None = None,
    config: ReaderConfig | None = None,
) -> DataFrame:
    """Decide on the executors which row groups (or files) may hold matching rows.

    The driver expands directories and prefixes into their Parquet files and spreads
    the list over ``num_partitions`` partitions; each partition reads all its files
    concurrently with the async reader (:func:`pybloom_async.pruning.api.prune`, or
    :func:`pybloom_async.index.build.prune_with_index` with ``use_index``) and yields one
    row per verdict, with the local function's verdicts, in file order.

    The DataFrame is lazy, like any other: the files are read when an action runs
    (:func:`surviving_files`, ``collect``, ``write``), and again at each action unless
    it is cached (``.cache()``).

    Parameters
    ----------
    spark:
        A classic SparkSession (not Spark Connect).
    paths:
        Files, directories or object-store prefixes, local or ``s3://``, ``gs://``,
        ``az://``, ``http(s)://`` (object stores are read by the executors with
        ``options``).
    where:
        A :class:`~pybloom_async.predicate.Predicate` or its text form
        (``"id = 42 AND email IN ('a', 'b')"``); parsed on the driver.
    options:
        Object-store options (:class:`~pybloom_async.io.sources.StoreOptions` or a dict
        of its fields), used by the driver's listing and by every executor; None:
        each process reads the standard environment variables.
    use_index:
        Decide files by their sidecar indexes first (file-level rows with
        ``row_group`` null and rule ``sidecar_index``, ``no_index`` or
        ``stale_index``), then the surviving files by their in-file filters.
    strict:
        Fail the Spark job on the first unreadable file, damaged filter or missing
        column (Spark reports the executor's :class:`~pybloom_async.errors.PyBloomError`,
        which names the file) instead of keeping it with the reason.
    num_partitions:
        Partitions (Spark tasks) to spread the files over; default: the context's
        default parallelism (one task per core), at most one per file.
    concurrency:
        Files read at once within each partition (default: the reader's, 64).
    config:
        Reader limits (:class:`~pybloom_async.read.reader.ReaderConfig`).

    Returns
    -------
    pyspark.sql.DataFrame
        Columns as :func:`verdict_schema`. A file that cannot be read is never lost: it
        gets one kept row with ``row_group`` null, rule ``unreadable`` and the reason.

    Raises
    ------
    PredicateError
        ``where`` is malformed.
    SourceNotFoundError, SourceError
        A directory or prefix cannot be listed (on the driver).
    InvalidArgumentError
        Bad options, partitions or concurrency, or a Spark Connect session.
    """
    predicate = as_predicate(where)
    store_options = _options(options)
    if config is not None and not isinstance(config, ReaderConfig):
        raise InvalidArgumentError(f"config must be a ReaderConfig, not {type(config).__name__}")
    task = _PruneTask(
        predicate, store_options, bool(strict), _check_concurrency(concurrency), config,
        bool(use_index),
    )  # fmt: skip
    files = _list_files(paths, store_options)
    if use_index:
        files = _unique(files)  # as prune_with_index does: each file once
    schema = verdict_schema()
    if not files:
        return spark.createDataFrame([], schema)
    partitions = _partitions(spark, len(files), num_partitions)
    rdd = _context(spark).parallelize(files, partitions).mapPartitions(task)
    return spark.createDataFrame(rdd, schema, verifySchema=False)


def surviving_files(verdicts: DataFrame) -> list[str]:
    """The files that may hold matching rows, sorted: the input list of a normal read.

    A file survives unless a verdict on the whole file (``row_group`` null) excludes
    it, or it has row-group verdicts and all of them exclude their row group. Runs one
    Spark job; only the surviving names reach the driver.

    Parameters
    ----------
    verdicts:
        A DataFrame from :func:`prune_on_spark` (any with its ``file``,
        ``row_group`` and ``kept`` columns).
    """
    from pyspark.sql import functions as F

    whole_file = F.col("row_group").isNull()
    per_file = verdicts.groupBy("file").agg(
        F.max(F.when(whole_file & ~F.col("kept"), 1).otherwise(0)).alias("excluded"),
        F.count(F.col("row_group")).alias("groups"),
        F.max(F.when(~whole_file & F.col("kept"), 1).otherwise(0)).alias("group_kept"),
    )
    survivors = per_file.where(
        (F.col("excluded") == 0) & ((F.col("groups") == 0) | (F.col("group_kept") == 1))
    ).select("file")
    return sorted(str(row[0]) for row in survivors.collect())


def read_surviving(
    spark: SparkSession,
    verdicts: DataFrame,
    *,
    schema: StructType | str | None = None,
    read_options: Mapping[str, str] | None = None,
) -> DataFrame:
    """``spark.read.parquet`` of the files that may hold matching rows.

    When no file survives, the result is an empty DataFrame with the data's schema
    (read from the footer of one pruned file, or ``schema``), not an error. Row groups
    inside the surviving files are left to Spark's own Parquet reader, which skips
    them by the same Bloom filters when the predicate is pushed down to it.

    Parameters
    ----------
    spark:
        The session to read with.
    verdicts:
        A DataFrame from :func:`prune_on_spark`.
    schema:
        The data's schema (a StructType or DDL string); default: Spark infers it.
    read_options:
        Options of Spark's Parquet reader (``mergeSchema``, ...).

    Raises
    ------
    InvalidArgumentError
        ``verdicts`` holds no file at all and no ``schema`` is given, so there is no
        schema to give the empty result.
    """
    files = surviving_files(verdicts)
    reader = spark.read
    if read_options:
        reader = reader.options(**dict(read_options))
    if schema is not None:
        reader = reader.schema(schema)
    if files:
        return reader.parquet(*files)
    if schema is not None:
        return spark.createDataFrame([], schema)
    any_file = verdicts.select("file").limit(1).collect()
    if not any_file:
        raise InvalidArgumentError(
            "no file was pruned, so the data's schema is unknown: pass schema="
        )
    # Schema from one footer; limit(0) is optimised to an empty relation, nothing read.
    return reader.parquet(str(any_file[0][0])).limit(0)


# ---- sidecar indexes -------------------------------------------------------------------

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

    async def _build(self, files: list[str | FileInfo]) -> list[BuildRow]:
        from ...index.build import build_index

        built = await build_index(
            files,
            list(self.columns),
            fpp=self.fpp,
            ndv=self.ndv,
            options=self.options,
            concurrency=self.concurrency,
            strict=self.strict,
        )
        return [_build_row(b.to_dict()) for b in built]

    def __call__(self, items: Iterable[str | FileInfo]) -> Iterator[BuildRow]:
        files = list(items)
        if not files:
            return iter(())
        try:
            rows = anyio.run(self._build, files)
        except Exception:
            if self.strict:
                raise
            rows = []  # as in _PruneTask: each file alone, a failure reported in its row
            for location in files:
                try:
                    rows.extend(anyio.run(self._build, [location]))
                except Exception as exc:
                    reason = f"{type(exc).__name__}: {exc}"
                    rows.append((_path_of(location), None, list(self.columns), None, None, reason))
        return iter(rows)


def _build_row(d: Mapping[str, Any]) -> BuildRow:
    return (
        str(d["file"]),
        None if d.get("index") is None else str(d["index"]),
        [str(c) for c in d.get("columns") or ()],
        None if d.get("num_rows") is None else int(d["num_rows"]),
        None if d.get("index_bytes") is None else int(d["index_bytes"]),
        None if d.get("error") is None else str(d["error"]),
    )


def build_index_on_spark(
    spark: SparkSession,
    paths: PathsArg,
    columns: Sequence[str],
    *,
    fpp: float = 0.01,
    ndv: int | Mapping[str, int] | None = None,
    options: OptionsArg = None,
    strict: bool = False,
    num_partitions: int | None = None,
    concurrency: int | None = None,
) -> DataFrame:
    """Build the sidecar index of every file on the executors.

    Each partition runs :func:`pybloom_async.index.build.build_index` over its files
    concurrently; each index lands next to its data file
    (``dir/_bloom_index/name.parquet.index.v1.parquet``), the same bytes a local build
    writes. The DataFrame is computed (and the indexes written) at its first action,
    and again at every action unless it is cached.

    Parameters
    ----------
    spark, paths, options, num_partitions:
        As for :func:`prune_on_spark`.
    columns:
        The columns to index.
    fpp:
        Target false-positive probability of each filter.
    ndv:
        Distinct values per file to size every filter for (an int, or per column);
        default: each file's exact distinct count.
    strict:
        Fail the job on the first file that cannot be indexed, instead of reporting
        it in its row's ``error``.
    concurrency:
        Files indexed at once within each partition (default: the executor's CPUs).

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
    from ...index.build import build_index

    if isinstance(columns, (str, bytes)):
        raise InvalidArgumentError(f"columns must be a list of names, not one str ({columns!r})")
    names = tuple(_check_column(c) for c in columns)
    sizes: int | dict[str, int] | None
    if isinstance(ndv, Mapping):
        sizes = {}
        for name, value in ndv.items():
            sizes[_check_column(name)] = integer("ndv", value, minimum=0, column=str(name))
    else:
        sizes = ndv
    store_options = _options(options)
    limit = _check_concurrency(concurrency)

    async def validate() -> None:
        # build_index checks its arguments before it lists anything: no file, no I/O.
        await build_index([], list(names), fpp=fpp, ndv=sizes, concurrency=limit)

    _run_sync(validate)
    task = _IndexTask(names, float(fpp), sizes, store_options, bool(strict), limit)
    files = _unique(_list_files(paths, store_options))
    schema = index_build_schema()
    if not files:
        return spark.createDataFrame([], schema)
    partitions = _partitions(spark, len(files), num_partitions)
    rdd = _context(spark).parallelize(files, partitions).mapPartitions(task)
    return spark.createDataFrame(rdd, schema, verifySchema=False)
