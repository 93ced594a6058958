"""Registering the ``pybloom`` data source with a Spark session."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ...errors import InvalidArgumentError
from .common import require_data_source_api

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["PUSHDOWN_SETTING", "register"]

log = logging.getLogger(__name__)

#: The Spark setting that lets a Python data source take the filters of a query.
PUSHDOWN_SETTING = "spark.sql.python.filterPushdown.enabled"


def register(spark: SparkSession, *, filter_pushdown: bool = True) -> None:
    """Register the ``pybloom`` data source with ``spark``.

    Then ``spark.read.format("pybloom").load(path).where(...)`` reads only the row groups
    the Bloom filters (and the lake index, when the root has one) keep.

    Parameters
    ----------
    spark:
        The session (classic or Spark Connect; PySpark and Spark >= 4.1).
    filter_pushdown:
        True (default): set ``spark.sql.python.filterPushdown.enabled=true`` on the
        session, so that Spark's ``.where(...)`` filters reach the pruning. False: leave
        the setting as it is; when it is off, only the ``where`` option prunes, and a
        warning says so.

    Raises
    ------
    MissingDependencyError
        PySpark older than 4.1 (the message names the version needed).
    InvalidArgumentError
        The Spark behind the session is older than 4.1.
    """
    require_data_source_api()
    version = tuple(int(p) for p in str(spark.version).split(".")[:2] if p.isdigit())
    if version < (4, 1):
        raise InvalidArgumentError(
            f"the pybloom data source needs Spark >= 4.1 (Python data source filter pushdown); "
            f"this session's Spark is {spark.version}"
        )
    from .source import PybloomDataSource, PybloomDataSourceWithoutPushdown

    if filter_pushdown:
        spark.conf.set(PUSHDOWN_SETTING, "true")
        pushing = True
    else:
        pushing = str(spark.conf.get(PUSHDOWN_SETTING, "false")).lower() == "true"
    if not pushing:
        log.warning(
            "%s is false: Spark's filters do not reach the pybloom data source, only its "
            "where option prunes (.option('where', ...)); set it to true to push .where()",
            PUSHDOWN_SETTING,
        )
    spark.dataSource.register(PybloomDataSource if pushing else PybloomDataSourceWithoutPushdown)
