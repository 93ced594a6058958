"""Why Spark 4.1 to 4.3 get no pushed filters: one read plan shared by every use of a DataFrame.

These Spark versions keep the read plan (partitions and read function) that the last
filter pushdown made on the relation (``PythonDataSourceV2``), not on the scan, and hand
it to every later scan of the DataFrame that runs no pushdown of its own: a second query
with other filters, an unfiltered count, the other side of a self-join or union, a
``cache()``. Such a scan runs no Python code of ours, so nothing here can see it happen;
and the planner cannot tell which query it plans for (no execution id reaches it, and
``explain()`` plans before any exists). A plan made from Spark's pushed filters would then
be read by queries it was not made for, and return too few rows. No Spark release has been
shown here to keep the plan on its scan: pushed filters prune only on a version listed in
:data:`PER_SCAN_PLANS`, which a version joins once the reuse matrix
(``tests/integration/test_spark_source_reuse.py``) passes on it with pushdown on.

So on every other version the data source takes none of Spark's filters: it hands them all
back, Spark evaluates them on the rows read, and the plan depends only on the DataFrame's
own definition (its sources and options, the ``where`` option included). Every plan of a
DataFrame is then the same plan, and every use of it reads the right row groups. What
prunes there is the ``where`` option, given per query
(``spark.read.format("pybloom").option("where", ...).load(path)``), or
``lookup_on_spark``.
"""

from __future__ import annotations

#: The Spark versions (major, minor) shown to keep each scan's read plan on the scan, so
#: that Spark's pushed filters may prune: none yet (4.1 to 4.3 share it; later releases are
#: untested).
PER_SCAN_PLANS: frozenset[tuple[int, int]] = frozenset()


def plans_shared(version: tuple[int, ...]) -> bool:
    """Whether Spark ``version`` may share one read plan between the uses of a DataFrame
    (every version not in :data:`PER_SCAN_PLANS`): there, pushed filters must not prune."""
    return (version[0], version[1]) not in PER_SCAN_PLANS
