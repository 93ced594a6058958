"""The ``pybloom`` Python data source (PySpark >= 4.1): Spark's filters pushed to the pruning.

Where each part runs:

* ``schema()`` (when the DataFrame is made, in a Python process of the driver): the read is
  planned (:func:`.planned.plan_source`), each footer read once: the rows' schema follows
  the rule lookups follow (with the ``where`` option, exactly the local lookup's, files
  their ``key=value`` folders rule out left unopened where that rule allows), folders as
  its last columns (the ``partitioning`` option); the plan is kept on the data source,
  which Spark pickles and hands to the planning worker; a table's schema comes from its
  library;
* ``pushFilters`` and ``partitions()`` (when a query is planned, on the driver): on a
  Spark shown to keep each scan's read plan (:data:`.plan_guard.PER_SCAN_PLANS`, none
  yet) the filters Spark pushes that mean exactly what the predicate means
  (:mod:`.pushdown`) are taken and ANDed with the ``where`` option; the others go back to
  Spark, which evaluates them on the rows read. On every other Spark (4.1 to 4.3 share one
  read plan between every use of a loaded DataFrame: :mod:`.plan_guard`), every filter
  goes back to Spark and only the ``where`` option, part of the DataFrame's own
  definition, prunes. The plan ``schema()`` made is used while its files are unchanged
  (:func:`.planned.still_current`: listed again, versions compared, no footer read); else
  the files are pruned again (the lake index first when the root has one:
  :func:`.scan.plan_read`). The kept row groups are cut into tasks by the bytes each
  reads (:func:`.scan.split_tasks`);
* ``read(partition)`` (a Spark task, on an executor): the task's row groups, as Arrow
  batches of the schema (:func:`.reading.read_task`).

Our errors, in each of them, reach the user as their one line inside Spark's exception
(:mod:`.one_line`; the ``traceback`` option keeps the Python traceback).

This module imports ``pyspark.sql.datasource`` and is imported by
:func:`pybloom_async.spark.register` once the PySpark version is checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ..errors import PredicateError
from ..predicate import Predicate, iter_leaves
from ..rows.plan import Job
from .common import pyspark_version, run_sync
from .one_line import asks_traceback, one_line, one_line_rows
from .plan_guard import plans_shared
from .planned import SourcePlan, plan_source, still_current
from .pushdown import conjunction, split_filters
from .reading import read_task
from .scan import FileRead, ReadTask, plan_read, split_tasks
from .source_options import SourceOptions
from .spark_types import batch_schema, spark_schema
from .table_scan import (
    TableTask,
    plan_table,
    read_table_task,
    refuse_table_folder,
    table_ref,
    table_schema,
)

#: The format name: ``spark.read.format("pybloom")``.
NAME = "pybloom"


def _check_columns(where: Predicate, schema: StructType) -> None:
    """A ``where`` column the rows do not have is a mistake, not an empty answer."""
    names = set(schema.names)
    for leaf in iter_leaves(where):
        if leaf.column.split(".")[0] not in names:
            shown = ", ".join(schema.names[:20])
            raise PredicateError(f"no such column; the data has: {shown}", column=leaf.column)


class _Reader(DataSourceReader):
    """Plans on the driver (``partitions``), reads on the executors (``read``).

    ``planned``: the plan ``schema()`` made (:mod:`.planned`), used by ``partitions()``
    while its files are unchanged; never pickled (Spark ships the reader to the executors
    before it plans: the footers go with the tasks that read them, not with every task).
    """

    def __init__(
        self, source: SourceOptions, schema: StructType, planned: SourcePlan | None = None
    ) -> None:
        self.source = source
        self.schema = schema
        self.pushed: list[Predicate] = []
        self.planned = planned
        if source.where is not None:
            _check_columns(source.where, schema)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["planned"] = None
        return state

    def where(self) -> Predicate | None:
        """The predicate: the filters taken from Spark and the ``where`` option, ANDed."""
        own = [self.source.where] if self.source.where is not None else []
        return conjunction([*self.pushed, *own])

    def partitions(self) -> list[InputPartition]:
        with one_line(self.source.traceback):
            return self._partitions()

    def _partitions(self) -> list[InputPartition]:
        source = self.source
        where = self.where()
        rows = batch_schema(self.schema)
        if source.table is not None:
            ref = table_ref(source.table, source.sources, source.version, source.settings.options)
            parts = source.max_partition_bytes, source.min_partitions
            tables = run_sync(plan_table, ref, where, rows, source.settings, *parts)
            return [InputPartition(t) for t in tables]
        planned = self.planned
        if (
            planned is not None
            and planned.where == where
            and run_sync(still_current, planned, source.sources, source.settings)
        ):
            reads, job = list(planned.reads), planned.job.shaped(rows, list(rows.names))
            return self._tasks(reads, job)
        refuse_table_folder(source.sources, source.settings.options)  # a schema given
        reads, job = run_sync(plan_read, source.sources, where, rows, source.settings)
        return self._tasks(reads, job)

    def _tasks(self, reads: list[FileRead], job: Job) -> list[InputPartition]:
        source = self.source
        tasks = split_tasks(reads, source.max_partition_bytes, source.min_partitions, job)
        return [InputPartition(ReadTask(tuple(t), job, source.settings)) for t in tasks]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        task = partition.value
        if isinstance(task, TableTask):
            return one_line_rows(read_table_task(task), self.source.traceback)
        if not isinstance(task, ReadTask):
            return iter(())  # no task at all: Spark reads one empty partition
        return one_line_rows(read_task(task), self.source.traceback)


class _PushdownReader(_Reader):
    def pushFilters(self, filters: list[Any]) -> Iterable[Any]:
        if plans_shared(pyspark_version()):
            # Spark would hand the plan made of these filters to other queries of this
            # DataFrame (see .plan_guard): Spark evaluates them all, nothing is taken.
            return filters
        with one_line(self.source.traceback):
            taken, kept = split_filters(filters, self.schema)
        self.pushed.extend(taken)
        return kept


class PybloomDataSource(DataSource):
    """``spark.read.format("pybloom").load(path)``: Bloom-pruned reads by the ``where``
    option; Spark's filters are pushed down only on a Spark shown to keep each scan's plan
    (none yet: Spark evaluates them all itself, see :mod:`.plan_guard`)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        with one_line(asks_traceback(self.options)):
            return self._schema()

    def _schema(self) -> StructType:
        source = SourceOptions.parse(self.options)
        store = source.settings.options
        if source.table is not None:
            ref = table_ref(source.table, source.sources, source.version, store)
            return spark_schema(table_schema(ref))
        refuse_table_folder(source.sources, store)
        planned = run_sync(plan_source, source.sources, source.where, source.settings)
        schema = spark_schema(planned.schema, planned.int96)
        # Kept for reader(): Spark hands this object, pickled, to the planning worker.
        self._planned = (schema.json(), planned)
        return schema

    def _plan_for(self, schema: StructType) -> SourcePlan | None:
        """The plan schema() made, if ``schema`` is the one it gave; taken off this object,
        which Spark pickles again into the read function of every task."""
        kept = self.__dict__.pop("_planned", None)
        if kept is None or kept[0] != schema.json():
            return None
        planned: SourcePlan = kept[1]
        return planned

    def reader(self, schema: StructType) -> DataSourceReader:
        with one_line(asks_traceback(self.options)):
            source = SourceOptions.parse(self.options)
            return _PushdownReader(source, schema, self._plan_for(schema))


class PybloomDataSourceWithoutPushdown(PybloomDataSource):
    """The data source for sessions whose filter pushdown is off, and for Spark 4.1 to 4.3
    (:mod:`.plan_guard`): only the ``where`` option prunes (Spark refuses a reader that
    pushes filters when the setting is off)."""

    def reader(self, schema: StructType) -> DataSourceReader:
        with one_line(asks_traceback(self.options)):
            source = SourceOptions.parse(self.options)
            return _Reader(source, schema, self._plan_for(schema))
