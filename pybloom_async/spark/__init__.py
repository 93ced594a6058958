"""Spark: the ``pybloom`` data source, and the pipeline's jobs on the executors.

Install the ``spark`` extra. The data source (PySpark >= 4.1)::

    import pybloom_async.spark

    pybloom_async.spark.register(spark)
    events = spark.read.format("pybloom").option("where", "user_id = 42")
    rows = events.load("s3://lake/events/")

The ``where`` option prunes; Spark's own ``.where(...)`` filters do not (Spark 4.1 to 4.3
share one read plan between every use of a loaded DataFrame, and no later Spark has been
shown not to: Spark evaluates its filters itself, exactly, and only the option prunes, one
load per query, or ``lookup_on_spark``); the driver prunes (by the lake index when the root has
one, else by each file's own filters) and each task reads only the row groups kept. The
jobs run the rest of the pipeline on the executors: writer options that make Spark write
filters, pruning, lookups, sidecar and lake-wide indexes, and adding filters to an
existing lake; they work with older PySpark too.

``key=value`` folders below the path are columns, as for the local lookup (the
``partitioning`` option and argument), and an error of ours reaches the user as its one
line inside Spark's exception (the ``traceback`` option and argument keep its traceback).

The executors must import this package: install it where their Python runs and point
``PYSPARK_PYTHON`` at that interpreter. PySpark is imported only by the functions that
need it, so importing this module works without it.
"""

from ..exports import publish as _publish
from .add_filters import add_bloom_filters_on_spark, add_filters_schema
from .indexes import build_index_on_spark, index_build_schema
from .jobs import prune_on_spark, read_surviving, surviving_files, verdict_schema
from .lake_index import build_lake_index_on_spark
from .lookup import lookup_on_spark
from .register import PUSHDOWN_SETTING, register
from .writer_options import (
    DEFAULT_WRITER_MAX_BYTES,
    bloom_writer_options,
    writer_filter_bytes,
)

__all__ = [
    "DEFAULT_WRITER_MAX_BYTES",
    "PUSHDOWN_SETTING",
    "add_bloom_filters_on_spark",
    "add_filters_schema",
    "bloom_writer_options",
    "build_index_on_spark",
    "build_lake_index_on_spark",
    "index_build_schema",
    "lookup_on_spark",
    "prune_on_spark",
    "read_surviving",
    "register",
    "surviving_files",
    "verdict_schema",
    "writer_filter_bytes",
]

# Each function is pickled, shown and documented as pybloom_async.spark.<name>.
_publish(globals(), __all__, __name__)
