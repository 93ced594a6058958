"""Footers that pyarrow refuses: a lookup ends in the file's error, never in the process's end.

pyarrow's C++ metadata classes check some fields only when a Python accessor builds them
(``RowGroupMetaData.column``), and those accessors do not turn the C++ exception into a
Python one: the process aborts. Each case runs the lookup in a fresh interpreter, so an
abort fails the test instead of ending the test run.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pybloom_async import col, prune_sync


def _with_footer(data: bytes, footer: bytes) -> bytes:
    """``data`` (a whole file) with its FileMetaData replaced by ``footer``."""
    (length,) = struct.unpack("<I", data[-8:-4])
    return data[: -8 - length] + footer + struct.pack("<I", len(footer)) + b"PAR1"


def _footer(data: bytes) -> bytes:
    (length,) = struct.unpack("<I", data[-8:-4])
    return data[-8 - length : -8]


def short_histogram_file(path: Path) -> Path:
    """A file whose column ``id`` (optional, so two definition levels) records a
    definition-level histogram of one entry in its size statistics."""
    values = [None if i % 3 == 0 else f"v{i}" for i in range(100)]
    table = pa.table({"id": pa.array(range(100), pa.int64()), "v": values})
    pq.write_table(table, path, write_page_index=True)
    data = path.read_bytes()
    footer = _footer(data)
    # SizeStatistics field 3 (definition_level_histogram): a list of two i64, [0, 100]
    # (zigzag varints 00 and c8 01), then the struct's stop byte. Made a list of one: [100].
    histogram = bytes.fromhex("192600c80100")
    assert footer.count(histogram) == 1
    path.write_bytes(_with_footer(data, footer.replace(histogram, bytes.fromhex("1916c80100"))))
    return path


def non_utf8_name_file(path: Path) -> Path:
    """A file whose second column's name is not UTF-8 (in the schema and the chunk's path)."""
    table = pa.table({"id": pa.array(range(100), pa.int64()), "caf\u00e9": range(100)})
    pq.write_table(table, path)
    data = path.read_bytes()
    footer = _footer(data)
    assert footer.count("caf\u00e9".encode()) == 2
    path.write_bytes(_with_footer(data, footer.replace("caf\u00e9".encode(), b"caf\xff\xfe")))
    return path


HOSTILE = {"short_histogram": short_histogram_file, "non_utf8_name": non_utf8_name_file}
#: What each file's error says.
MESSAGES = {
    "short_histogram": "definition-level histogram has 1 entries, not 2 (row group 0, column 'id')",
    "non_utf8_name": "not UTF-8",
}

_CHILD = textwrap.dedent(
    """
    import sys
    from pybloom_async import ParquetFormatError, col, lookup_sync

    bad, good = sys.argv[1], sys.argv[2]
    try:
        lookup_sync([bad], col("id") == 5)
    except ParquetFormatError as exc:
        assert bad in str(exc), str(exc)
        print("raised:", type(exc).__name__, exc)
    else:
        raise AssertionError("no error")
    skipped = []
    table = lookup_sync([bad, good], col("id") == 5, on_error="skip", skipped=skipped)
    assert table.num_rows == 1, table
    assert len(skipped) == 1 and isinstance(skipped[0], ParquetFormatError), skipped
    print("skipped:", skipped[0])
    """
)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_lookup_of_a_hostile_footer_raises_in_a_fresh_process(name: str, tmp_path: Path) -> None:
    bad = HOSTILE[name](tmp_path / "bad.parquet")
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"id": pa.array(range(100), pa.int64())}), good)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.getcwd(), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(bad), str(good)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert "raised: ParquetFormatError" in proc.stdout
    assert MESSAGES[name] in proc.stdout, proc.stdout


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_prune_keeps_a_hostile_file(name: str, tmp_path: Path) -> None:
    bad = HOSTILE[name](tmp_path / "bad.parquet")
    verdicts = prune_sync([str(bad)], col("id") == 5)
    assert verdicts and all(v.kept for v in verdicts)
