"""A predicate's partition leaves decided per file from its folders (pruning/partitions.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pybloom_async import PredicateError, col
from pybloom_async.io.partitions import PartitionedFile
from pybloom_async.predicate import Predicate, parse_predicate
from pybloom_async.pruning.api import CompiledPredicate
from pybloom_async.pruning.partition_types import Partitioning
from pybloom_async.pruning.partitions import PartitionPredicate


def _file(**values: str | None) -> PartitionedFile:
    name = "/".join(f"{k}={v}" for k, v in values.items())
    return PartitionedFile(f"/lake/{name}/p.parquet", 1, partition=tuple(values.items()))


def _decide(where: Predicate | str, files: list[PartitionedFile], settle: bool = True) -> list[str]:
    """Per file: 'out' (ruled out), 'all' (every row), or the residual's text."""
    parts = PartitionPredicate(CompiledPredicate(where), Partitioning())
    if settle:
        parts.settle(files)
    out = []
    for f in files:
        decision = parts.decide(f)
        if decision.ruled_out:
            out.append("out")
        elif decision.compiled is None:
            out.append("all")
        else:
            out.append(decision.compiled.predicate.to_text())
    return out


def test_and_or_and_nulls() -> None:
    days = [_file(dt="2026-11-01"), _file(dt="2026-11-02"), _file(dt=None)]
    assert _decide("dt = '2026-11-02' AND id = 5", days) == ["out", "id = 5", "out"]
    assert _decide("dt = '2026-11-02' OR id = 5", days) == ["id = 5", "all", "id = 5"]
    assert _decide(col("dt").eq_null_safe(None), days) == ["out", "out", "all"]
    assert _decide("dt IN ('2026-11-01', NULL) AND (id = 1 OR dt = '2026-11-02')", days) == [
        "id = 1", "out", "out",
    ]  # fmt: skip
    # a date column: the literal's text is read as a date
    assert _decide(col("dt") == "2026-11-02", days) == ["out", "all", "out"]


def test_before_the_types_are_known_a_file_is_kept_when_some_type_matches() -> None:
    """'012' is 12 when the column is int64, not '12' when it is a string: which it is
    depends on every value; before they are known, the file is kept."""
    files = [_file(c="12"), _file(c="DE")]
    assert _decide("c = '012' AND id = 1", files, settle=False) == ["id = 1", "out"]
    assert _decide("c = '012' AND id = 1", files) == ["out", "out"]  # string: exact
    assert _decide("c = '012' AND id = 1", files[:1]) == ["id = 1"]  # int64: exact


def test_a_literal_not_of_the_type_is_an_error() -> None:
    days = [_file(dt="2026-11-01")]
    with pytest.raises(PredicateError, match="yesterday"):
        _decide("dt = 'yesterday'", days)
    with pytest.raises(PredicateError):
        _decide("dt = true", days, settle=False)  # neither a date nor text
    parts = PartitionPredicate(CompiledPredicate("dt = 'yesterday'"), Partitioning())
    assert parts.decide(days[0]).ruled_out  # as a string it may be: decided later...
    with pytest.raises(PredicateError, match="yesterday"):
        parts.check_literals()  # ...once every value is met


def test_given_types_decide_exactly_and_filter_folders() -> None:
    parts = PartitionPredicate(
        CompiledPredicate(parse_predicate("n = 7 AND id = 1")), Partitioning.of({"n": "int8"})
    )
    keep = parts.folder_filter()
    assert keep is not None
    assert keep((("n", "7"),)) and keep((("n", "007"),)) and not keep((("n", "8"),))
    assert keep((("x", "1"),))  # not a partition column: may match
    assert parts.decide(_file(n="007")).compiled is not None
    off = PartitionPredicate(CompiledPredicate("n = 7"), None)
    assert off.folder_filter() is None and off.decide(_file(n="8")).compiled is not None


def test_a_null_value_says_nothing_of_the_type_before_it_is_known() -> None:
    """Streaming: a NULL folder met before any int one must not take an int literal for a
    mistake (found by the differential test, seed 59)."""
    files = [_file(p="__HIVE_DEFAULT_PARTITION__"), _file(p="0")]
    files = [PartitionedFile(f.path, 1, partition=(("p", None),)) for f in files[:1]] + files[1:]
    assert _decide("p IN (0)", files, settle=False) == ["out", "all"]
    assert _decide("p <=> NULL", files, settle=False) == ["all", "out"]


def test_a_leaf_below_a_partition_column_is_null_there() -> None:
    """``p.x`` where the folder gives ``p``: the path wins over a struct ``p`` inside the
    file, and a partition value has no fields: NULL (only ``<=> NULL`` holds)."""
    files = [_file(p="1"), _file(q="1")]
    assert _decide("p.x = 1", files) == ["out", "p.x = 1"]
    assert _decide("p.x IN (1, 2) OR id = 3", files) == ["id = 3", "p.x IN (1, 2) OR id = 3"]
    assert _decide(col("p.x").eq_null_safe(None), files) == ["all", "p.x IS NULL"]


def test_ranges_and_negations_on_partition_values() -> None:
    """Every operator on a folder's value, as it holds for rows: three-valued, so a NULL
    value (the default partition) matches no range, no ``!=`` and no ``NOT IN``."""
    n = [_file(n="1"), _file(n="5"), _file(n="12"), _file(n=None)]
    assert _decide("n > 4", n) == ["out", "all", "all", "out"]
    assert _decide("n BETWEEN 2 AND 5 AND id = 1", n) == ["out", "id = 1", "out", "out"]
    assert _decide("NOT n BETWEEN 2 AND 5", n) == ["all", "out", "all", "out"]
    assert _decide("n != 5", n) == ["all", "out", "all", "out"]
    assert _decide("n NOT IN (1, 12)", n) == ["out", "all", "out", "out"]
    assert _decide("n NOT IN (1, NULL)", n) == ["out", "out", "out", "out"]
    assert _decide("n IS NOT NULL", n) == ["all", "all", "all", "out"]
    assert _decide("n IS NULL OR n < 2", n) == ["all", "out", "out", "all"]
    assert _decide("NOT (n <=> 5)", n) == ["all", "out", "all", "all"]
    # int64 orders as numbers ('12' > '5'), string as bytes ('12' < '5')
    s = [_file(s="12"), _file(s="5"), _file(s="x")]
    assert _decide("s > '3'", s) == ["out", "all", "all"]
    # a NULL end: BETWEEN NULL AND 5 is never TRUE, its NOT is TRUE where x > 5 is
    assert _decide(~col("n").between(None, 5), n) == ["out", "out", "all", "out"]
    assert _decide(col("n").between(None, 5), n) == ["out", "out", "out", "out"]


def test_a_range_literal_not_of_the_type_is_an_error() -> None:
    with pytest.raises(PredicateError, match="yesterday"):
        _decide("dt < 'yesterday'", [_file(dt="2026-11-01")])
    with pytest.raises(PredicateError, match="abc"):
        _decide("n NOT IN ('abc')", [_file(n="1")])


def test_a_residual_pickles_with_the_leaves_it_must_still_type(tmp_path: Path) -> None:
    """A file's residual (a Spark task may get one) keeps the leaves its folders decided
    without: they are still typed by the file, on either side of a pickle."""
    import pickle

    import pyarrow as pa
    import pyarrow.parquet as pq

    from pybloom_async import read_footer_sync

    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), tmp_path / "f.parquet")
    schema = read_footer_sync(str(tmp_path / "f.parquet")).metadata.schema
    where = "(dt = '2026-11-01' OR id = 'abc') AND dt = '2026-11-01' AND id > 5"
    parts = PartitionPredicate(CompiledPredicate(where), Partitioning())
    parts.settle([_file(dt="2026-11-01")])
    residual = parts.decide(_file(dt="2026-11-01")).compiled
    assert residual is not None and residual.predicate.to_text() == "id > 5"
    for compiled in (residual, pickle.loads(pickle.dumps(residual))):
        assert [p.to_text() for p in compiled.unchecked] == ["id = 'abc'"]
        with pytest.raises(PredicateError, match="'abc'"):
            compiled.check_literals(schema, compiled.unchecked)
