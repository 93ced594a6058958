"""One error policy for every entry point: ``on_error`` ("raise" or "skip"), held by the
run's options; ``strict`` is its deprecated form (a DeprecationWarning), never given with it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pybloom_async as pba
from pybloom_async import InvalidArgumentError, RunOptions
from pybloom_async.errors import ParquetFormatError, PyBloomError


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int64())}), good)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not a parquet file at all")
    return str(good), str(bad)


def test_run_options_hold_the_policy() -> None:
    assert RunOptions().on_error is None and not RunOptions().raises  # the entry point's
    assert RunOptions(on_error="raise").raises and not RunOptions(on_error="skip").raises
    replaced = dataclasses.replace(RunOptions(on_error="raise"), concurrency=2)
    assert replaced.on_error == "raise" and replaced.concurrency == 2
    with pytest.raises(InvalidArgumentError, match="on_error must be 'raise' or 'skip'") as info:
        RunOptions(on_error="ignore")  # type: ignore[arg-type]
    assert "\n" not in str(info.value)


def test_strict_is_deprecated_and_still_works() -> None:
    with pytest.warns(DeprecationWarning, match="on_error='raise'") as caught:
        run = RunOptions(strict=True)
    assert run.on_error == "raise" and run.raises
    assert caught[0].filename == __file__  # the warning names the caller's line
    with pytest.warns(DeprecationWarning, match="on_error"):
        assert RunOptions(strict=False).on_error == "skip"
    with pytest.raises(InvalidArgumentError, match="give on_error only") as info:
        RunOptions(strict=True, on_error="skip")
    assert "\n" not in str(info.value)
    with pytest.raises(InvalidArgumentError, match="strict must be True or False"):
        RunOptions(strict="yes")  # type: ignore[arg-type]


def test_prune_takes_on_error(files: tuple[str, str]) -> None:
    good, bad = files
    # "skip" (prune's default): the unreadable file is kept, with its reason, never pruned.
    for verdicts in (
        pba.prune_sync([good, bad], "id = 99"),
        pba.prune_sync([good, bad], "id = 99", on_error="skip"),
    ):
        (kept,) = [v for v in verdicts if v.file == bad]
        assert kept.kept and kept.reason
    with pytest.raises(ParquetFormatError, match=r"bad\.parquet"):
        pba.prune_sync([good, bad], "id = 99", on_error="raise")
    with pytest.raises(ParquetFormatError, match=r"bad\.parquet"):
        pba.prune_sync([good, bad], "id = 99", run=RunOptions(on_error="raise"))
    with (
        pytest.warns(DeprecationWarning, match="on_error") as caught,
        pytest.raises(ParquetFormatError),
    ):
        pba.prune_sync([good, bad], "id = 99", strict=True)
    assert caught[0].filename == __file__  # the caller's line: Python's filters show it
    with pytest.raises(InvalidArgumentError, match="give on_error only"):
        pba.prune_sync([good, bad], "id = 99", strict=True, on_error="raise")


def test_the_index_family_takes_on_error(files: tuple[str, str]) -> None:
    good, bad = files
    (built,) = pba.build_index_sync([bad], ["id"])
    assert built.error
    with pytest.raises(PyBloomError):
        pba.build_index_sync([bad], ["id"], on_error="raise")
    with pytest.raises(PyBloomError):
        pba.prune_with_index_sync([good, bad], "id = 1", on_error="raise")


def test_lookups_take_the_same_policy(files: tuple[str, str]) -> None:
    good, bad = files
    with pytest.raises(ParquetFormatError, match=r"bad\.parquet"):  # a lookup's default
        pba.lookup_sync([good, bad], "id = 3")
    skipped: list[PyBloomError] = []
    got = pba.lookup_sync([good, bad], "id = 3", on_error="skip", skipped=skipped)
    assert got.column("id").to_pylist() == [3] and [e.path for e in skipped] == [bad]
    got = pba.lookup_sync([good, bad], "id = 3", run=RunOptions(on_error="skip"))
    assert got.num_rows == 1
    with pytest.warns(DeprecationWarning, match="on_error"):
        assert pba.lookup_sync([good, bad], "id = 3", strict=False).num_rows == 1
    with pytest.raises(InvalidArgumentError, match="on_error must be"):
        pba.lookup_sync([good], "id = 3", on_error="ignore")  # type: ignore[typeddict-item]


def test_paimon_decisions_take_on_error() -> None:
    damaged, where, types = b"junk", ("=", "id", 1), {"id": "INT"}
    keep, reason = pba.paimon_prune(damaged, where, types)  # "skip", the default: kept
    assert keep and reason.startswith("kept:")
    with pytest.raises(pba.PaimonIndexError):
        pba.paimon_prune(damaged, where, types, on_error="raise")
    with pytest.warns(DeprecationWarning, match="on_error"), pytest.raises(pba.PaimonIndexError):
        pba.paimon_prune(damaged, where, types, strict=True)
    with pytest.raises(InvalidArgumentError, match="give on_error only"):
        pba.paimon_prune(damaged, where, types, on_error="skip", strict=False)
    with pytest.raises(InvalidArgumentError, match="on_error must be"):
        pba.paimon_may_contain(None, "INT", [1], on_error="yes")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_the_warning_names_the_callers_line(files: tuple[str, str]) -> None:
    good, _ = files
    with pytest.warns(DeprecationWarning, match="on_error") as caught:
        await pba.prune([good], "id = 99", strict=False)
    assert caught[0].filename == __file__
    with pytest.warns(DeprecationWarning, match="on_error") as caught:
        pba.paimon_prune(None, ("=", "id", 1), {"id": "INT"}, strict=False)
    assert caught[0].filename == __file__
