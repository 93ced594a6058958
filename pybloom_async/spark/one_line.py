"""Our errors in one line inside Spark's exception, the Python traceback only when asked for.

An error raised in a Python worker of Spark (the data source's ``schema``, ``reader`` and
``partitions`` run in one on the driver; its ``read``, and ``lookup_on_spark``'s tasks, on
the executors) reaches the user as the text that PySpark's worker sends the JVM
(``pyspark.util.handle_worker_exception``): the whole Python traceback, or only the
exception's own line (``pybloom_async.errors.PredicateError: ...``) when the worker's
environment has ``SPARK_HIDE_TRACEBACK`` set, as Spark sets it from
``spark.sql.execution.pyspark.udf.hideTraceback.enabled``. Spark wraps that text in its own
exception (``AnalysisException [PYTHON_DATA_SOURCE_ERROR]`` on the driver,
``PythonException`` from a task).

Our errors (:class:`~pybloom_async.errors.PyBloomError`) say in that line what is wrong and
where (the file, the column); the frames of our code say nothing more to the user. So when
one leaves our code in a Spark worker, :func:`one_line` sets ``SPARK_HIDE_TRACEBACK`` in
that worker's process just before the error goes on to PySpark, unless the user asked for
the traceback (the data source's ``traceback`` option, ``lookup_on_spark(traceback=True)``).
A worker ends after an error (PySpark's worker exits once it has reported it), so nothing
else runs with the variable set. Any other exception (a bug of ours, or of Spark) keeps its
traceback, and so does every error outside a Spark worker (``lookup_on_spark`` plans in the
caller's own process, where our error is raised as it is).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar

from ..errors import InvalidArgumentError, PyBloomError

T = TypeVar("T")

#: The data source's option that keeps the Python traceback of our errors: ``true``.
TRACEBACK_OPTION = "traceback"
#: The variable PySpark's worker reads to report an error by its last line only.
HIDE_VARIABLE = "SPARK_HIDE_TRACEBACK"
_RUNTIME = "SPARK_PYTHON_RUNTIME"  # "PYTHON_WORKER" in every Python worker Spark 4.2+ starts
#: What every Python worker of Spark 4.1 has of its factory (how it connects back to the
#: JVM); Spark 4.1 does not set SPARK_PYTHON_RUNTIME.
_FACTORY = (
    "PYTHON_WORKER_FACTORY_SECRET",
    "PYTHON_WORKER_FACTORY_PORT",
    "PYTHON_WORKER_FACTORY_SOCK_PATH",
)


def in_spark_worker() -> bool:
    """Whether this process is a Python worker Spark started (not the user's own)."""
    environ = os.environ
    return environ.get(_RUNTIME) == "PYTHON_WORKER" or any(k in environ for k in _FACTORY)


def asks_traceback(options: Mapping[str, str]) -> bool:
    """Whether the data source's options ask for the traceback (``traceback`` is ``true``;
    any other value is checked, and refused, when the options are parsed)."""
    for key, text in options.items():
        if key.lower() == TRACEBACK_OPTION:
            return str(text).strip().lower() == "true"
    return False


def check_traceback(traceback: object) -> bool:
    """The ``traceback`` argument of the Spark jobs, checked: True or False.

    Raises
    ------
    InvalidArgumentError
        Anything else.
    """
    if not isinstance(traceback, bool):
        raise InvalidArgumentError("traceback must be True or False", value=traceback)
    return traceback


@contextmanager
def one_line(traceback: bool) -> Iterator[None]:
    """Our errors raised inside reach the user in one line (see the module), unless
    ``traceback``."""
    try:
        yield
    except PyBloomError:
        if not traceback and in_spark_worker():
            os.environ[HIDE_VARIABLE] = "1"
        raise


def one_line_rows(rows: Iterator[T], traceback: bool) -> Iterator[T]:
    """``rows``, our errors in reading them in one line (:func:`one_line`)."""
    with one_line(traceback):
        yield from rows
