"""Sizes read from a file are refused before anything of that size is allocated or fetched.

Each case is a file (or bytes) claiming gigabytes somewhere: the footer length in the
trailer, ``bloom_filter_length``, a header's ``numBytes``, the element count of a thrift
list, the length of a thrift string, a schema's ``num_children``, a Paimon container's
column count. Each must end in the package's error (or an ``unusable`` filter, for the
reader) and stay small:

* in this process, tracemalloc's peak (every Python and numpy allocation) stays under
  ``PEAK_LIMIT``, and the bytes read stay under a few hundred KiB;
* in a fresh interpreter (:func:`test_cases_in_a_fresh_process`), the address space is
  capped (``RLIMIT_AS``) at what the interpreter holds after a benign warm-up plus 512 MiB,
  so that any attempt to allocate a claimed size of 1 GiB or more fails with MemoryError
  even when the pages would never be touched (which RSS alone would not show), and the
  peak RSS (``ru_maxrss``) grows by less than ``RSS_LIMIT`` over the warm-up's.

Run as a script (``.venv/bin/python tests/robustness/test_untrusted_sizes.py``) to print the
table of figures the README's "Reliability" section shows.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.wire import varint

from pybloom_async import (
    FilterState,
    InvalidFilterError,
    ParquetFormatError,
    ReaderConfig,
    SplitBlockBloomFilter,
    read_bloom_filters,
    read_footer,
)
from pybloom_async.errors import PaimonIndexError
from pybloom_async.io.base import SourceStats
from pybloom_async.paimon.container import FILE_INDEX_MAGIC, parse_paimon_file_index
from pybloom_async.parquet.decode import decode_file_metadata_with
from pybloom_async.read.plan import PlanConfig

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
#: tracemalloc peak allowed per case: a footer read (64 KiB), a guess read (256 KiB), the
#: decoded footer of a small file, and slack; a claimed size is 1 GiB or more.
PEAK_LIMIT = 2 * MiB
#: Peak RSS growth allowed over the warm-up, in the fresh process.
RSS_LIMIT = 32 * MiB
#: Bytes a case may read from its file: the footer read plus a guess read per filter (the
#: files have two).
READ_LIMIT = 64 * KiB + 2 * 256 * KiB


# --------------------------------------------------------------------------- building inputs


def zigzag(n: int) -> bytes:
    return varint((n << 1) ^ (n >> 63))


def header_for(num_bytes: int) -> bytes:
    """A BLOCK / XXHASH / UNCOMPRESSED BloomFilterHeader announcing ``num_bytes``."""
    return b"\x15" + zigzag(num_bytes) + b"\x1c\x1c\x00\x00" * 3 + b"\x00"


def parquet_file(path: Path, *, lengths: bool = True) -> bytes:
    """A small real file with filters on ``id`` (two row groups); its bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"id": pa.array(range(2000), pa.int64())})
    pq.write_table(table, path, row_group_size=1000, bloom_filter_options={"id": True})
    data = path.read_bytes()
    if not lengths:
        from support.writers import strip_bloom_filter_lengths

        data = strip_bloom_filter_lengths(data)
        path.write_bytes(data)
    return data


def footer_of(data: bytes) -> tuple[int, bytes]:
    (n,) = struct.unpack("<I", data[-8:-4])
    return len(data) - 8 - n, data[len(data) - 8 - n : -8]


def with_footer(data: bytes, footer: bytes) -> bytes:
    start, _ = footer_of(data)
    return data[:start] + footer + struct.pack("<I", len(footer)) + b"PAR1"


def set_chunk_field(data: bytes, name: str, value: int | None) -> bytes:
    """Re-encode the footer with one field of row group 0's chunk changed."""
    from thrift.protocol import fastbinary
    from thrift.protocol.TCompactProtocol import TCompactProtocol
    from thrift.transport.TTransport import TMemoryBuffer

    from pybloom_async.parquet import thrift_specs as wire

    _, footer = footer_of(data)
    meta: Any = wire.FileMetaData()
    spec = [wire.FileMetaData, wire.FileMetaData.thrift_spec]
    fastbinary.decode_compact(meta, TCompactProtocol(TMemoryBuffer(footer)), spec)
    setattr(meta.row_groups[0].columns[0].meta_data, name, value)
    return with_footer(data, bytes(fastbinary.encode_compact(meta, spec)))


def filter_offset(data: bytes) -> int:
    from pybloom_async.parquet import decode_file_metadata

    _, footer = footer_of(data)
    offset = decode_file_metadata(footer).row_groups[0].columns[0].bloom_filter_offset
    assert offset is not None
    return offset


BIG = 2**31 - 1  # the largest i32 / list size a compact-protocol writer can state

#: FileMetaData prefixes (thrift compact) that end in a claim of ``BIG`` elements or bytes.
#: version = 1 is ``15 02``; a list field header is ``<delta><9>``, a long list header
#: ``f<type>`` + varint size; a string is its varint length then bytes.
THRIFT_CLAIMS = {
    "list of 2^31-1 schema elements": bytes.fromhex("1502") + b"\x19\xfc" + varint(BIG),
    "list of 2^31-1 row groups": bytes.fromhex("1502191c480172001600") + b"\x19\xfc" + varint(BIG),
    "string of 2^31-1 bytes (created_by)": bytes.fromhex("1502191c480172001600190c")
    + b"\x28"
    + varint(BIG)
    + b"abc",
    "schema num_children 2^31-1": bytes.fromhex("1502191c48017215")
    + zigzag(BIG)
    + b"\x00\x16\x00\x19\x0c\x00",
    "list of 2^31-1 key/value pairs": bytes.fromhex("1502191c480172001600190c")
    + b"\x19\xfc"
    + varint(BIG),
}


# --------------------------------------------------------------------------- the cases

Case = Callable[[Path], str]
CASES: dict[str, Case] = {}


def case(name: str) -> Callable[[Case], Case]:
    def register(fn: Case) -> Case:
        CASES[name] = fn
        return fn

    return register


def _read_filters(path: Path, **kw: Any) -> tuple[dict[Any, Any], SourceStats]:
    stats = SourceStats()
    found = anyio.run(lambda: read_bloom_filters(path, ["id"], stats=stats, **kw))
    assert stats.bytes_read <= READ_LIMIT, stats
    return found, stats


@case("footer length 4 GiB - 1 in a 200-byte file")
def _footer_in_small_file(tmp: Path) -> str:
    path = tmp / "small.parquet"
    path.write_bytes(b"PAR1" + bytes(192) + struct.pack("<I", 2**32 - 1) + b"PAR1")
    with pytest.raises(ParquetFormatError, match="exceeds") as info:
        anyio.run(lambda: read_footer(path))
    assert str(path) in str(info.value)
    return str(info.value.message)


@case("footer length 4 GiB - 1 in a sparse 5 GiB file")
def _footer_in_sparse_file(tmp: Path) -> str:
    path = tmp / "sparse.parquet"
    with path.open("wb") as f:
        f.write(b"PAR1")
        f.truncate(5 * GiB)  # no disk blocks: the size is real, the bytes are holes
        f.seek(5 * GiB - 8)
        f.write(struct.pack("<I", 2**32 - 1) + b"PAR1")
    stats = SourceStats()
    with pytest.raises(ParquetFormatError, match="max_footer_bytes") as info:
        anyio.run(lambda: read_footer(path, stats=stats))
    assert str(path) in str(info.value)
    assert stats.bytes_read == ReaderConfig().first_suffix_bytes
    return str(info.value.message)


@case("bloom_filter_length 2^31 - 1")
def _huge_filter_length(tmp: Path) -> str:
    path = tmp / "length.parquet"
    path.write_bytes(set_chunk_field(parquet_file(path), "bloom_filter_length", BIG))
    found, _ = _read_filters(path)
    read = found[(0, "id")]
    assert read.state is FilterState.UNUSABLE and "limit" in (read.reason or ""), read
    assert found[(1, "id")].state is FilterState.OK
    return read.reason or ""


@case("header numBytes 2^30, no bloom_filter_length")
def _huge_num_bytes(tmp: Path) -> str:
    path = tmp / "numbytes.parquet"
    data = bytearray(parquet_file(path, lengths=False))
    offset = filter_offset(bytes(data))
    patch = header_for(1 << 30)
    data[offset : offset + len(patch)] = patch
    path.write_bytes(bytes(data))
    found, _ = _read_filters(path)
    read = found[(0, "id")]
    assert read.state is FilterState.UNUSABLE and "limit" in (read.reason or ""), read
    return read.reason or ""


@case("header numBytes 2^27 (the default limit) in a 5 GiB sparse file, limit set to 1 MiB")
def _num_bytes_above_configured_limit(tmp: Path) -> str:
    path = tmp / "configured.parquet"
    data = parquet_file(path, lengths=False)
    start, footer = footer_of(data)
    offset = filter_offset(data)
    # Move the footer to the end of a 5 GiB file: the 128 MiB bitset now fits before it.
    with path.open("wb") as f:
        f.write(data[:start])
        f.seek(offset)
        f.write(header_for(1 << 27))
        f.truncate(5 * GiB - 8 - len(footer))
        f.seek(5 * GiB - 8 - len(footer))
        f.write(footer + struct.pack("<I", len(footer)) + b"PAR1")
    config = ReaderConfig(plan=PlanConfig(max_filter_bytes=1 * MiB))
    found, _ = _read_filters(path, config=config)
    read = found[(0, "id")]
    assert read.state is FilterState.UNUSABLE and "limit" in (read.reason or ""), read
    return read.reason or ""


@case("SplitBlockBloomFilter.from_bytes: header announces 1 GiB, limit 2 GiB, 40 bytes")
def _from_bytes_truncated(tmp: Path) -> str:
    blob = header_for(1 << 30) + bytes(24)
    with pytest.raises(InvalidFilterError, match="truncated") as info:
        SplitBlockBloomFilter.from_bytes(blob, max_bytes=2 * GiB)
    return str(info.value)


def _thrift_case(name: str, claim: bytes) -> Case:
    def run(tmp: Path) -> str:
        messages = []
        for decoder in ("fastbinary", "python"):
            with pytest.raises(ParquetFormatError) as info:
                meta = decode_file_metadata_with(claim, "claim.parquet", decoder)
                _ = meta.key_value_metadata  # decoded lazily by some versions
            messages.append(info.value.message)
        # And through the reader, as the footer of a real file.
        path = tmp / "thrift.parquet"
        path.write_bytes(with_footer(parquet_file(path), claim))
        with pytest.raises(ParquetFormatError) as info:
            anyio.run(lambda: read_footer(path))
        assert str(path) in str(info.value)
        return messages[0]

    return run


for _name, _claim in THRIFT_CLAIMS.items():
    CASES[f"thrift: {_name}"] = _thrift_case(_name, _claim)


@case("Paimon file index: 2^31-1 columns")
def _paimon_columns(tmp: Path) -> str:
    head = struct.pack(">qiii", FILE_INDEX_MAGIC, 1, 28, BIG) + bytes(8)
    with pytest.raises(PaimonIndexError, match="impossible") as info:
        parse_paimon_file_index(head)
    return str(info.value)


# --------------------------------------------------------------------------- tests


@pytest.fixture(autouse=True)
def _need_pyarrow() -> None:
    pytest.importorskip("pyarrow")


def measure(fn: Case, tmp: Path) -> tuple[str, int]:
    """Run one case under tracemalloc; (its message, peak bytes)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        message = fn(tmp)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return message, peak


@pytest.mark.parametrize("name", list(CASES))
def test_claim_is_refused_small(name: str, tmp_path: Path) -> None:
    message, peak = measure(CASES[name], tmp_path)
    assert message
    assert peak < PEAK_LIMIT, f"{name}: tracemalloc peak {peak} bytes"


def test_the_thrift_claims_are_the_claims_described() -> None:
    """Each crafted footer is well-formed up to its claim: cut it there and it decodes."""
    assert decode_file_metadata_with(bytes.fromhex("1502191c480172001600190c00"), None, "python")
    # The claim itself is read: the same bytes with a small size decode (or fail later).
    small = THRIFT_CLAIMS["list of 2^31-1 row groups"].replace(
        b"\x19\xfc" + varint(BIG), b"\x19\x0c"
    )
    meta = decode_file_metadata_with(small + b"\x00", None, "fastbinary")
    assert meta.row_groups == ()


def _subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    # glibc reserves 64 MiB of address space per malloc arena and thread; keep it small
    # so the address-space cap measures allocations, not arenas.
    env["MALLOC_ARENA_MAX"] = "2"
    here = Path(__file__).resolve().parent
    paths = (str(here), str(here.parent), env.get("PYTHONPATH"))
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def run_fresh(tmp: Path) -> list[dict[str, Any]]:
    """Run every case in a fresh interpreter under an address-space cap; its report."""
    proc = subprocess.run(
        [sys.executable, __file__, "--measure", str(tmp)],
        capture_output=True,
        text=True,
        env=_subprocess_env(),
        cwd=os.getcwd(),
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report: list[dict[str, Any]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return report


def test_cases_in_a_fresh_process(tmp_path: Path) -> None:
    report = run_fresh(tmp_path)
    assert [r["case"] for r in report] == list(CASES)
    for r in report:
        assert r["ok"], r
        assert r["rss_growth"] < RSS_LIMIT, r
        assert r["tracemalloc_peak"] < PEAK_LIMIT, r


# --------------------------------------------------------------------------- measuring


def _rss_peak() -> int:
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * KiB


def _vm_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * KiB
    raise RuntimeError("no VmSize in /proc/self/status")


def measure_all(tmp: Path) -> list[dict[str, Any]]:
    """Warm up on a benign file, cap the address space, then run every case."""
    warm = tmp / "warm"
    warm.mkdir()
    path = warm / "benign.parquet"
    parquet_file(path)
    anyio.run(lambda: read_bloom_filters(path, ["id"]))
    for fn in CASES.values():  # imports and first-use caches, outside the measurement
        case_dir = warm / str(len(os.listdir(warm)))
        case_dir.mkdir()
        fn(case_dir)
    cap = _vm_size() + 512 * MiB
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    report: list[dict[str, Any]] = []
    for name, fn in CASES.items():
        case_dir = tmp / f"case{len(report)}"
        case_dir.mkdir()
        before = _rss_peak()
        entry: dict[str, Any] = {"case": name}
        try:
            message, peak = measure(fn, case_dir)
            entry.update(ok=True, message=message, tracemalloc_peak=peak)
        except BaseException as exc:  # MemoryError above all: report, do not die
            entry.update(ok=False, message=f"{type(exc).__name__}: {exc}", tracemalloc_peak=0)
        entry["rss_growth"] = _rss_peak() - before
        report.append(entry)
    return report


def main(argv: list[str]) -> None:
    if len(argv) == 3 and argv[1] == "--measure":
        print(json.dumps(measure_all(Path(argv[2]))))
        return
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        report = run_fresh(Path(tmp))
    print("| claim | outcome | tracemalloc peak | RSS growth |")
    print("|---|---|---:|---:|")
    for r in report:
        outcome = r["message"].split(" (file ")[0]
        print(
            f"| {r['case']} | {outcome} | {r['tracemalloc_peak'] / KiB:.0f} KiB | "
            f"{r['rss_growth'] / KiB:.0f} KiB |"
        )


if __name__ == "__main__":
    main(sys.argv)
