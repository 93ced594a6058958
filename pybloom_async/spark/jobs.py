"""PySpark: prune files on the executors, and read the ones that may hold matching rows.

* :func:`prune_on_spark` spreads a file list over the executors; each partition runs
  the async reader (:func:`pybloom_async.prune`, the index policy's) over all its files at
  once and yields one row per (file, row group); the lake index, where it serves, is read
  on the driver. :func:`surviving_files` and
  :func:`read_surviving` turn the result into the input of a normal
  ``spark.read.parquet``, so a job opens only the files that may hold a match (the
  ``pybloom`` data source, :func:`pybloom_async.spark.register`, reads only the row
  groups).

The writer options (:func:`pybloom_async.spark.bloom_writer_options`), the index builds
and the lookups on the executors are beside it; :mod:`pybloom_async.spark` is the public
path of all of them.

The executors must import this package: install it where the executors' Python runs,
and point ``PYSPARK_PYTHON`` at that interpreter before the SparkContext starts. Work
shipped to executors (predicates, :class:`~pybloom_async.io.store.StoreOptions`, file
listings) is pickled; object-store credentials given as ``options`` travel with it, so
on a shared cluster prefer credentials the executors find in their own environment
(``options=None``).

pyspark is imported only inside the functions that need it, so ``import
pybloom_async`` works without it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from ..checks import OnError, error_policy, on_error_of
from ..errors import InvalidArgumentError
from ..index_policy.api import prune
from ..index_policy.choice import IndexChoice, index_choice, lake_root_for
from ..io.base import FileInfo, location_text
from ..io.files import found_files
from ..io.store import StoreOptions
from ..predicate import Predicate, as_predicate
from ..pruning.verdicts import Verdict
from ..read.fetch import ReaderConfig
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

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


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
    use_index: IndexChoice  # "sidecar" or "none": a lake index was read on the driver
    traceback: bool = False

    async def _prune(self, files: list[str | FileInfo]) -> list[Verdict]:
        # The policy's prune over the partition's files, as the driver found them (no
        # listing again: a file gone since is kept, unreadable, as prune keeps any file
        # it cannot read), and no lake root: the driver read the lake index.
        return await prune(
            found_files(files),
            self.where,
            use_index=self.use_index,
            on_error=on_error_of(self.strict),
            concurrency=self.concurrency,
            options=self.options,
            config=self.config,
            require_columns=False,  # a partition holds a part of the files
        )

    def __call__(self, items: Iterable[str | FileInfo | VerdictRow]) -> Iterator[VerdictRow]:
        return one_line_rows(self._rows(items), self.traceback)

    def _rows(self, items: Iterable[str | FileInfo | VerdictRow]) -> Iterator[VerdictRow]:
        # A row already decided (by the lake index, on the driver) keeps its place.
        given = list(items)
        files = [f for f in given if not isinstance(f, tuple)]
        if not files:
            yield from (f for f in given if isinstance(f, tuple))
            return
        # What escapes prune fails the task: a predicate wrong for a column's type, or a
        # bug; each unreadable file is already a kept verdict with its reason.
        verdicts = anyio.run(self._prune, files)
        by_file: dict[str, list[Verdict]] = {}
        for v in verdicts:
            by_file.setdefault(v.file, []).append(v)
        for item in given:
            if isinstance(item, tuple):
                yield item
            else:
                yield from (_row(v) for v in by_file.pop(location_text(item), []))
        yield from (_row(v) for rest in by_file.values() for v in rest)


# ---- pruning ---------------------------------------------------------------------------


# Long because: the docstring documents every parameter and error (58 lines); the code is 29.
def prune_on_spark(
    spark: SparkSession,
    paths: PathsArg,
    where: Predicate | str,
    *,
    options: OptionsArg = None,
    use_index: IndexChoice | bool | None = "auto",
    on_error: OnError | None = None,
    strict: bool | None = None,
    num_partitions: int | None = None,
    concurrency: int | None = None,
    config: ReaderConfig | None = None,
    traceback: bool = False,
) -> DataFrame:
    """Decide on the executors which row groups (or files) may hold matching rows.

    The driver expands directories and prefixes into their Parquet files (and, where the
    lake index serves, decides them by it: a file it rules out gets its one row there) and
    spreads the list over ``num_partitions`` partitions; each partition reads all its files
    concurrently with the async reader (:func:`pybloom_async.prune`) and yields one row per
    verdict, with the local function's verdicts, in file order.

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
        Object-store options (:class:`~pybloom_async.io.store.StoreOptions` or a dict
        of its fields), used by the driver's listing and by every executor; None:
        each process reads the standard environment variables.
    use_index:
        Which index serves the run, as for :func:`pybloom_async.prune` (``"auto"``,
        default: the lake index under the one directory or prefix ``paths``, read on the
        driver; ``"lake"``; ``"sidecar"``: each file's sidecar index first, file-level rows
        with ``row_group`` null and rule ``sidecar_index``, ``no_index`` or
        ``stale_index``; ``"none"``). True and False keep their older meaning: the sidecar
        indexes, or none.
    on_error:
        ``"skip"`` (default): an unreadable file, damaged filter or missing column is kept
        with the reason; ``"raise"``: the first one fails the Spark job (Spark reports the
        executor's :class:`~pybloom_async.errors.PyBloomError`, which names the file).
    strict:
        Deprecated: ``strict=True`` is ``on_error="raise"`` (a DeprecationWarning).
    num_partitions:
        Partitions (Spark tasks) to spread the files over; default: the context's
        default parallelism (one task per core), at most one per file.
    concurrency:
        Files read at once within each partition (default: the reader's, 64).
    config:
        Reader limits (:class:`~pybloom_async.read.reader.ReaderConfig`).
    traceback:
        True: an error of ours in a task (with ``on_error="raise"``) reaches the user with its
        Python traceback (default: its one line inside Spark's exception,
        :mod:`.one_line`).

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
    raises = error_policy(on_error, strict) == "raise"
    predicate = as_predicate(where)
    choice = index_choice(use_index, booleans=True)
    store = store_options(options)
    if config is not None and not isinstance(config, ReaderConfig):
        raise InvalidArgumentError(f"config must be a ReaderConfig, not {type(config).__name__}")
    task = _PruneTask(
        predicate, store, raises, check_concurrency(concurrency), config,
        "sidecar" if choice == "sidecar" else "none", check_traceback(traceback),
    )  # fmt: skip
    listed = list_files(paths, store)
    if choice == "sidecar":
        listed = unique_files(listed)  # as prune_with_index does: each file once
    files: list[Any] = listed
    root = lake_root_for(choice, paths)
    if root is not None:
        files = _by_lake_index(root, listed, task, choice)
    schema = verdict_schema()
    return files_frame(spark, files, task, schema, num_partitions)


def _by_lake_index(
    root: str, files: list[str | FileInfo], task: _PruneTask, choice: IndexChoice
) -> list[Any]:
    """The files, those the lake index under ``root`` rules out as their verdict's row (the
    index pass runs on the driver: its listing, directories and stripes, no file read)."""

    async def decide() -> list[Verdict]:
        return await prune(
            root, task.where, use_index=choice, row_groups=False, files=files,
            partitioning=None, on_error=on_error_of(task.strict), options=task.options,
            config=task.config, concurrency=task.concurrency,
        )  # fmt: skip

    ruled_out = {v.file: _row(v) for v in run_sync(decide) if not v.kept}
    return [ruled_out.get(location_text(f), f) for f in files]


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
