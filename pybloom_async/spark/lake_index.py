"""The lake index built on the executors: :func:`build_lake_index_on_spark`.

The same steps as :func:`pybloom_async.build_lake_index`, the per-file work spread over the
executors, and the same segment bytes:

1. each executor surveys its files (:func:`pybloom_async.lake.build.survey_file`: footer and
   row-group filters to fold, or the distinct hashes of the values), kept in Spark's block
   store (memory, then disk); only a summary (sizes, types, whether the filters fold)
   reaches the driver;
2. the driver groups the files into size classes, sorts each by name and decides each
   class's block count B and which files' filters are too small to fold
   (:func:`~pybloom_async.lake.build.mark_fold_problems`);
3. each executor builds its files' filters at their class's B (folded, or from the values:
   :func:`~pybloom_async.lake.build.file_bloom`), the per-file pieces of the segment's
   stripes, and sends them to the driver;
4. the driver places them into the block-major stripes
   (:func:`~pybloom_async.lake.build.encode_class`) and writes each segment atomically.

A file that changed between the two steps fails the build (it would be indexed with the
wrong version).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import numpy as np

from ..checks import OnError, error_policy, integer, on_error_of, probability, require_pyarrow
from ..core.filter import SplitBlockBloomFilter
from ..core.stripes import BLOCK_BYTES
from ..errors import InvalidArgumentError, SourceError
from ..io.base import FileInfo, location_text
from ..io.identity import SourceIdentity
from ..io.store import StoreOptions
from ..lake.build import (
    CLASS_SPAN,
    FOLD_FOOTER_READ,
    LakeBuild,
    check_columns,
    check_present,
    class_groups,
    encode_class,
    file_bloom,
    mark_fold_problems,
    record_outcome,
    settle_file,
    survey_file,
)
from ..lake.material import BuildContext, ColumnMaterial, FileMaterial
from ..lake.segments import write_segment
from ..read.fetch import ReaderConfig
from ..read.run import RunOptions, open_run
from ..tables import TableSource, resolve_table, table_kind, table_root
from ..tasks.workers import for_each
from .common import (
    OptionsArg,
    check_concurrency,
    list_files,
    partition_count,
    spark_context,
    store_options,
)
from .one_line import check_traceback, one_line_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


T = TypeVar("T")

Surveyed = tuple[int, FileMaterial | str]
#: Per file number: its identity as surveyed, and per column the bytes of its filter at the
#: class's B and the reason it is built from values (None: it folds, if it can).
Decisions = dict[int, tuple[SourceIdentity, dict[str, tuple[int, str | None]]]]


@dataclass(frozen=True)
class _Build:
    """What every executor's part of the build shares (pickled into the tasks)."""

    root: str
    columns: tuple[str, ...]
    fpp: float
    ndv: int | dict[str, int] | None
    mode: str
    options: StoreOptions | None
    strict: bool
    concurrency: int | None
    traceback: bool = False

    async def each(self, items: Sequence[Any], work: Any) -> list[Any]:
        config = (
            ReaderConfig(footer_read_bytes=FOLD_FOOTER_READ) if self.mode == "filters" else None
        )
        run = RunOptions(
            options=self.options,
            config=config,
            concurrency=self.concurrency,
            on_error=on_error_of(self.strict),
        )
        cpus = os.cpu_count() or 1
        async with open_run(run, default_concurrency=max(2, cpus)) as r:
            ctx = BuildContext(
                root=self.root, reader=r.reader, columns=self.columns, fpp=self.fpp,
                ndv=self.ndv, mode=self.mode, cpu=anyio.CapacityLimiter(cpus),
                strict=self.strict,
            )  # fmt: skip
            return await for_each(list(items), lambda item: work(ctx, item), r.limit)

    def rows(self, work: Callable[[], list[T]]) -> Iterator[T]:
        """A task's rows: ``work``'s, done when the rows are first asked for, our errors in
        one line (:mod:`.one_line`)."""

        def run() -> Iterator[T]:
            yield from work()

        return one_line_rows(run(), self.traceback)


@dataclass(frozen=True)
class _Survey:
    build: _Build

    def __call__(self, items: Iterable[tuple[int, str | FileInfo]]) -> Iterator[Surveyed]:
        async def one(ctx: BuildContext, item: tuple[int, str | FileInfo]) -> Surveyed:
            return item[0], await survey_file(ctx, item[1])

        return self.build.rows(lambda: anyio.run(self.build.each, list(items), one))


def _summary(row: Surveyed) -> Surveyed:
    number, found = row
    return number, found if isinstance(found, str) else found.summary()


@dataclass(frozen=True)
class _Filters:
    """Each file's filter of each column at its class's size (the pieces of the stripes)."""

    build: _Build
    decisions: Decisions

    def __call__(
        self, rows: Iterable[Surveyed]
    ) -> Iterator[tuple[int, dict[str, tuple[bytes, bool]]]]:
        async def one(
            ctx: BuildContext, row: Surveyed
        ) -> tuple[int, dict[str, tuple[bytes, bool]]]:
            number, f = row
            assert isinstance(f, FileMaterial)
            identity, columns = self.decisions[number]
            if f.identity != identity:
                raise SourceError("the file changed while the lake index was built", path=f.path)
            for name, (_, problem) in columns.items():
                col = f.columns[name]
                if problem is not None and isinstance(col, ColumnMaterial):
                    col.fold_problem = problem
            await settle_file(ctx, f)
            out = {}
            for name, (num_bytes, _) in columns.items():
                col = f.columns[name]
                assert isinstance(col, ColumnMaterial)
                out[name] = (bytes(file_bloom(col, num_bytes).bitset), col.hashes is None)
            return number, out

        wanted = [r for r in rows if r[0] in self.decisions]
        return self.build.rows(lambda: anyio.run(self.build.each, wanted, one))


def _decide(
    good: list[tuple[int, FileMaterial]], build: _Build, size_classes: bool, result: LakeBuild
) -> tuple[list[list[tuple[int, FileMaterial]]], Decisions]:
    """The classes (each sorted by name) and each file's part in its class."""
    files = [f for _, f in good]
    number = {id(f): n for n, f in good}
    groups = class_groups(files, CLASS_SPAN) if size_classes else ([files] if files else [])
    decisions: Decisions = {}
    classes = []
    for group in groups:
        group.sort(key=lambda f: f.name)
        blocks = mark_fold_problems(group, build.columns, build.fpp)
        for f in group:
            record_outcome(f, result)
            columns = {}
            for name, col in f.columns.items():
                if isinstance(col, ColumnMaterial):
                    columns[name] = (blocks[name] * BLOCK_BYTES, col.fold_problem)
            decisions[number[id(f)]] = (f.identity, columns)
        classes.append([(number[id(f)], f) for f in group])
    return classes, decisions


# Long because: the docstring documents every parameter and error (34 lines); the code is 55.
def build_lake_index_on_spark(
    spark: SparkSession,
    root: str | os.PathLike[str] | TableSource,
    columns: Sequence[str] | str,
    *,
    fpp: float = 0.01,
    ndv: int | Mapping[str, int] | None = None,
    mode: str = "values",
    size_classes: bool = True,
    options: OptionsArg = None,
    on_error: OnError | None = None,
    strict: bool | None = None,
    concurrency: int | None = None,
    num_partitions: int | None = None,
    traceback: bool = False,
) -> LakeBuild:
    """Build the lake index of the Parquet files under ``root`` on the executors.

    The same segments as :func:`pybloom_async.build_lake_index`, byte for byte (see the
    module documentation for the steps); the driver writes them, each atomically, to
    ``<root>/_bloom_index/_lake.v1/``. Runs two Spark jobs when called.

    Parameters
    ----------
    spark:
        A classic SparkSession.
    root, columns, fpp, ndv, mode, size_classes:
        As for :func:`pybloom_async.build_lake_index` (a Delta or Iceberg table's live
        files are listed on the driver by its library).
    options, concurrency:
        Object-store options; files surveyed at once within each task.
    on_error:
        ``"skip"`` (default): a file that cannot be indexed is reported in ``LakeBuild.errors``;
        ``"raise"``: the first one fails the build.
    strict:
        Deprecated: ``strict=True`` is ``on_error="raise"`` (a DeprecationWarning).
    num_partitions:
        Tasks to spread the files over (default: the context's parallelism).
    traceback:
        True: an error of ours in a task reaches the user with its Python traceback
        (default: its one line inside Spark's exception, :mod:`.one_line`).

    Returns
    -------
    LakeBuild
        As the local build's: segments written, files indexed, folded, built from values,
        not indexed and why.

    Raises
    ------
    InvalidArgumentError, PredicateError, SourceError
        As for :func:`pybloom_async.build_lake_index`; a file changed during the build.
    """
    wanted = check_columns(columns)
    raises = error_policy(on_error, strict) == "raise"
    if mode not in ("values", "filters"):
        raise InvalidArgumentError(f"mode must be 'values' or 'filters', not {mode!r}")
    if mode == "values":
        require_pyarrow("build a lake index from values")
    store = store_options(options)
    sizes = dict(ndv) if isinstance(ndv, Mapping) else ndv
    build = _Build(
        "", wanted, probability("fpp", fpp), sizes, mode, store, raises,
        check_concurrency(concurrency), check_traceback(traceback),
    )  # fmt: skip
    for column in wanted:  # as the local build checks them, before any work
        value = sizes.get(column) if isinstance(sizes, dict) else sizes
        if value is not None:
            integer("ndv", value, minimum=0, column=column)
    listed: list[str | FileInfo]
    if table_kind(root) is not None:
        table = resolve_table(root, None, store)
        base, listed = table_root(table), list(table.files)
    else:
        base = os.fspath(root)
        listed = list_files(base, store)
    build = dataclasses.replace(build, root=base)
    context = spark_context(spark)
    parts = partition_count(spark, len(listed), num_partitions)
    from pyspark import StorageLevel

    surveyed = context.parallelize(list(enumerate(listed)), parts).mapPartitions(_Survey(build))
    surveyed.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        summaries = sorted(surveyed.map(_summary).collect(), key=lambda r: r[0])
        result = LakeBuild()
        good = []
        for number, found in summaries:
            if isinstance(found, str):
                result.errors[location_text(listed[number])] = found
            else:
                good.append((number, found))
        check_present([f for _, f in good], wanted)
        classes, decisions = _decide(good, build, size_classes, result)
        built = dict(surveyed.mapPartitions(_Filters(build, decisions)).collect())
    finally:
        surveyed.unpersist()
    for group in classes:
        for number, f in group:
            for name, (bitset, folded) in built[number].items():
                col = f.columns[name]
                assert isinstance(col, ColumnMaterial)
                col.bloom = SplitBlockBloomFilter.from_bitset(bitset)
                col.hashes = None if folded else np.empty(0, dtype=np.uint64)
        payload = encode_class([f for _, f in group], wanted, build.fpp, result.fpp_sink())
        result.segments.append(write_segment(base, payload, store))
        result.files += len(group)
    return result
