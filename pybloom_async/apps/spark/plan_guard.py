"""Why Spark 4.1 to 4.3 get no pushed filters: one read plan shared by every use of a DataFrame.

These Spark versions keep the read plan (partitions and read function) that the last
filter pushdown made on the relation (``PythonDataSourceV2``), not on the scan, and hand
it to every later scan of the DataFrame that runs no pushdown of its own: a second query
with other filters, an unfiltered count, the other side of a self-join or union, a
``cache()``. Such a scan runs no Python code of ours, so nothing here can see it happen;
and the planner cannot tell which query it plans for (no execution id reaches it, and
``explain()`` plans before any exists). A plan made from Spark's pushed filters would then
be read by queries it was not made for, and return too few rows. Spark 5.0 keeps the plan
on its scan (SPARK-58551).

So on those versions the data source takes none of Spark's filters: it hands them all
back, Spark evaluates them on the rows read, and the plan depends only on the DataFrame's
own definition (its sources and options, the ``where`` option included). Every plan of a
DataFrame is then the same plan, and every use of it reads the right row groups. What
prunes there is the ``where`` option, given per query
(``spark.read.format("pybloom").option("where", ...).load(path)``), or
``lookup_on_spark``.
"""

from __future__ import annotations

__all__ = ["FIXED_SPARK", "plans_shared"]

#: The first Spark whose Python data source scans keep their own read plan (SPARK-58551).
FIXED_SPARK = (5, 0)


def plans_shared(version: tuple[int, ...]) -> bool:
    """Whether Spark ``version`` shares one read plan between the uses of a DataFrame
    (every version before 5.0 that has the API, 4.1 to 4.3 so far): there, pushed
    filters must not prune."""
    return tuple(version[:2]) < FIXED_SPARK
