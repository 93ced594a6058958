"""Arrow values built from their buffers equal pyarrow's conversion, and a lookup makes
pyarrow import no pandas (where it is installed: the first lookup would pay for it)."""

from __future__ import annotations

import datetime
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pybloom_async.rows.arrow import arrow_scalar, arrow_values, bool_array, int64_array

pa = pytest.importorskip("pyarrow")
np = pytest.importorskip("numpy")


@pytest.mark.parametrize(
    ("values", "arrow_type"),
    [
        ([1, -2, 3], pa.int64()),
        ([0, 255], pa.uint8()),
        ([-(2**31), 2**31 - 1], pa.int32()),
        ([0, 2**64 - 1], pa.uint64()),
        ([1.5, -0.0, float("inf")], pa.float64()),
        ([0.5, -2.0], pa.float32()),
        ([True, False, True], pa.bool_()),
        (["a", "", "ünïcode"], pa.string()),
        (["a", "bc"], pa.large_string()),
        ([b"\x00\xff", b""], pa.binary()),
        ([b"x"], pa.large_binary()),
        ([datetime.date(2024, 1, 2), datetime.date(1969, 12, 31)], pa.date32()),
        # Not built here: pyarrow converts them (the same values).
        ([1, 2], pa.float64()),
        ([datetime.datetime(2024, 1, 1)], pa.timestamp("us")),
        ([b"ab"], pa.binary(2)),
    ],
)
def test_arrow_values_equal_pyarrows(values: list[Any], arrow_type: Any) -> None:
    got = arrow_values(values, arrow_type)
    want = pa.array(values, type=arrow_type)
    assert got.type == want.type and got.equals(want), (got, want)
    assert arrow_scalar(values[0], arrow_type).equals(want[0])


@pytest.mark.parametrize(("values", "arrow_type"), [([2**63], pa.int64()), ([300], pa.int8()),
                                                    ([-1], pa.uint32())])  # fmt: skip
def test_a_value_that_does_not_fit_is_an_overflow(values: list[int], arrow_type: Any) -> None:
    with pytest.raises(OverflowError):
        arrow_values(values, arrow_type)


def test_masks_and_row_numbers() -> None:
    bits = np.array([True, False, True, True, False, False, False, False, True])
    assert bool_array(bits).to_pylist() == bits.tolist()
    assert int64_array(np.array([3, 1], dtype=np.int32)).to_pylist() == [3, 1]
    assert arrow_scalar(None, pa.int32()).is_valid is False
    assert arrow_values([], pa.string()).to_pylist() == []


CHILD = """
import sys
import pybloom_async
from pybloom_async import col, lookup_sync
root = sys.argv[1]
for where in ["id = 5 AND dt = '2024-01-02'", col("id").isin([1, None]), col("s") != "k1",
              "f BETWEEN 0.1 AND 0.2 AND id < 500", "id IN (1, 2) OR s = 'k9'", "NOT (id > 3)",
              "id = 999999"]:  # no row: the empty result
    lookup_sync(root, where)
if len(sys.argv) > 2:  # with a lake index, which probes its stripes
    lookup_sync(root, "id = 5", use_index="lake")
    lookup_sync(root, "id = 999999", use_index="lake")
print("pandas" in sys.modules)
"""


def test_a_lookup_imports_no_pandas(tmp_path: Path) -> None:
    pytest.importorskip("pandas")  # where it is installed, pyarrow would import it
    import pyarrow.parquet as pq

    for day in ["2024-01-01", "2024-01-02"]:
        folder = tmp_path / f"dt={day}"
        folder.mkdir()
        n = 3000
        # "blob" (2.4 MB a file, incompressible) makes the lookups read in two phases.
        rng = random.Random(n)
        blob = pa.array([rng.randbytes(400).hex() for _ in range(n)])
        table = pa.Table.from_arrays(
            [pa.array(np.arange(n)), pa.array([f"k{i}" for i in range(n)]),
             pa.array(np.linspace(0, 1, n)), blob], names=["id", "s", "f", "blob"])  # fmt: skip
        pq.write_table(table, folder / "f.parquet", row_group_size=1000)
    out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    assert out.strip().splitlines()[-1] == "False"
    from pybloom_async import build_lake_index_sync

    build_lake_index_sync(str(tmp_path), ["id"])
    out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), "lake"], check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    assert out.strip().splitlines()[-1] == "False"
