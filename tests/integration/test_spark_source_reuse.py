"""A ``pybloom`` DataFrame loaded once and used again and again (``-m spark``).

Every use of one loaded DataFrame gives the rows ``spark.read.parquet`` gives on the same
files: a second query with another filter (pushable or not), an unfiltered count and
collect, a self-join, a union, ``cache()``, ``explain()`` then ``collect()``, each after
the DataFrame already answered a filtered query; the same with the ``where`` option,
which prunes every use alike. Spark 4.1 to 4.3 keep one read plan per loaded DataFrame:
there the data source takes no pushed filter, so no use can read another query's plan.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.spark

ROWS = 4_000


@pytest.fixture(scope="module")
def session(spark_session: Any) -> Any:
    import pybloom_async.spark

    pybloom_async.spark.register(spark_session)
    return spark_session


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Two files of ``id`` 0..3999 (and ``k``), row groups of 250 rows, filters on both."""
    root = tmp_path_factory.mktemp("reuse")
    half = ROWS // 2
    for i in range(2):
        ids = list(range(i * half, (i + 1) * half))
        table = pa.table(
            {"id": pa.array(ids, pa.int64()), "k": pa.array([f"k{x % 97}" for x in ids])}
        )
        pq.write_table(
            table, root / f"part-{i}.parquet", row_group_size=250,
            bloom_filter_options={"id": {"ndv": half}, "k": {"ndv": 97}},
        )  # fmt: skip
    return str(root)


def rows(frame: Any) -> list[str]:
    return sorted(repr(tuple(r)) for r in frame.collect())


def _self_join(df: Any) -> Any:
    left = df.where("id < 30").selectExpr("id AS a", "k")
    right = df.where("id >= 3990 OR id = 1500").selectExpr("id AS b", "k")
    return left.join(right, "k")


def _union(df: Any) -> Any:
    return df.where("id = 7").union(df.where("id = 3999")).union(df)


def _explain_then_collect(df: Any) -> Any:
    query = df.where("id = 2500 OR k = 'k3'")
    query.explain()
    df.where("id = 11").collect()  # another plan of the same DataFrame in between
    return query


def _cached(df: Any) -> Any:
    cached = df.cache()
    try:
        assert cached.where("id = 9").count() == 1
        return cached.where("id < 100 OR id > 3950").localCheckpoint()
    finally:
        cached.unpersist()


def _cached_filter(df: Any) -> Any:
    part = df.where("id = 1501").cache()
    try:
        assert part.count() == 1
        return df.where("id != 1501").localCheckpoint()  # every other row
    finally:
        part.unpersist()


#: Each use, after the DataFrame answered ``id = 1500``: (name, DataFrame -> DataFrame).
USES: list[tuple[str, Callable[[Any], Any]]] = [
    ("other filter, not pushable", lambda df: df.where("id = 7 OR id + 0 = 2001")),
    ("other filter, pushable", lambda df: df.where("id = 2001")),
    ("other filter and a range", lambda df: df.where("id > 3000 AND k = 'k5'")),
    ("unfiltered count", lambda df: df.groupBy().count()),
    ("unfiltered collect", lambda df: df),
    ("self-join", _self_join),
    ("union", _union),
    ("cache()", _cached),
    ("cache() of a filtered query", _cached_filter),
    ("explain() then collect()", _explain_then_collect),
]


@pytest.mark.parametrize("where", [None, "id < 3000 OR k = 'k1'"])
def test_every_use_of_one_dataframe_gives_sparks_rows(
    session: Any, lake: str, where: str | None
) -> None:
    """One DataFrame, loaded once, through every use in turn: each gives the rows
    ``spark.read.parquet`` gives (the ``where`` option applied to both)."""
    truth = session.read.parquet(lake)
    ours = session.read.format("pybloom")
    if where is not None:
        truth = truth.where(where)
        ours = ours.option("where", where)
    df = ours.load(lake)
    assert rows(df.where("id = 1500")) == rows(truth.where("id = 1500"))
    wrong = []
    for name, use in USES:
        expected = rows(use(truth))
        try:
            got = rows(use(df))
        except Exception as exc:  # each use reports its own outcome
            lines = str(exc).splitlines()
            ours = [line for line in lines if re.search(r"pybloom_async\.\w+Error", line)]
            wrong.append(f"{name}: {(ours or lines)[0][:200]}")
            continue
        if got != expected:
            shown = f"{len(got)} rows {got[:2]}, spark.read.parquet {len(expected)} {expected[:2]}"
            wrong.append(f"{name}: {shown}")
    assert not wrong, "\n".join(wrong)
    assert df.count() == truth.count() > 3000


def test_the_issues_example(session: Any, lake: str) -> None:
    df = session.read.format("pybloom").load(lake)
    assert df.where("id = 1500").count() == 1
    assert df.where("id = 7 OR id + 0 = 2001").count() == 2
    assert df.count() == ROWS
