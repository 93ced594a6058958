"""Registering the ``pybloom`` data source with a Spark session."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..errors import InvalidArgumentError
from .common import require_data_source_api
from .plan_guard import plans_shared

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


log = logging.getLogger(__name__)

#: The Spark setting that lets a Python data source take the filters of a query.
PUSHDOWN_SETTING = "spark.sql.python.filterPushdown.enabled"


def register(spark: SparkSession, *, filter_pushdown: bool = True) -> None:
    """Register the ``pybloom`` data source with ``spark``.

    Then ``spark.read.format("pybloom").option("where", ...).load(path)`` reads only the
    row groups the Bloom filters (and the lake index, when the root has one) keep. Spark
    4.1 to 4.3 share one read plan between every use of a loaded DataFrame, and no later
    Spark has been shown not to (:mod:`.plan_guard`): Spark's ``.where(...)`` filters are
    then not pushed (Spark evaluates them on the rows read, exactly), only the ``where``
    option prunes, and a warning says so.

    Parameters
    ----------
    spark:
        The session (classic or Spark Connect; PySpark and Spark >= 4.1).
    filter_pushdown:
        True (default): on a Spark shown to keep each scan's read plan
        (:data:`.plan_guard.PER_SCAN_PLANS`, none yet), set
        ``spark.sql.python.filterPushdown.enabled=true`` on the session, so that Spark's
        ``.where(...)`` filters reach the pruning. False: leave the setting as it is; when
        it is off, only the ``where`` option prunes, and a warning says so. On every other
        Spark the setting is left as it is either way.

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

    shared = plans_shared(version)
    if filter_pushdown and not shared:
        spark.conf.set(PUSHDOWN_SETTING, "true")
        pushing = True
    else:
        pushing = not shared and str(spark.conf.get(PUSHDOWN_SETTING, "false")).lower() == "true"
    if shared:
        log.warning(
            "Spark %s shares one read plan between all the uses of a DataFrame: its .where() "
            "filters are not pushed to the pybloom data source (Spark evaluates them), only "
            "its where option prunes (.option('where', ...), one load per query)",
            spark.version,
        )
    elif not pushing:
        log.warning(
            "%s is false: Spark's filters do not reach the pybloom data source, only its "
            "where option prunes (.option('where', ...)); set it to true to push .where()",
            PUSHDOWN_SETTING,
        )
    spark.dataSource.register(PybloomDataSource if pushing else PybloomDataSourceWithoutPushdown)
