"""Seed corpora, built at run time from the parquet-testing files and a few generated inputs.

Nothing here is committed: ``fuzz/run.py`` writes the seeds to ``fuzz/seeds/<target>/``
(gitignored) before each run. Each function yields ``(name, bytes)`` pairs; a missing
parquet-testing checkout only means fewer seeds.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

#: The limit byte (first input byte) that selects the default 128 MiB limit in targets
#: taking one (index 0 of ``targets.MAX_BYTES_CHOICES``).
DEFAULT_LIMIT = b"\x00"


def testdata() -> Path:
    """The shared test-data folder (``PYBLOOM_ASYNC_TESTDATA`` overrides it)."""
    return Path(os.environ.get("PYBLOOM_ASYNC_TESTDATA", REPO.parent / "shared" / "testdata"))


def parquet_files() -> list[Path]:
    """Every file of parquet-testing's ``data/`` and ``bad_data/`` (sorted), if present."""
    root = testdata() / "parquet-testing"
    found: list[Path] = []
    for sub in ("data", "bad_data"):
        folder = root / sub
        if folder.is_dir():
            found += sorted(p for p in folder.iterdir() if p.is_file() and "parquet" in p.name)
    return found


def _footer_of(data: bytes) -> tuple[int, bytes] | None:
    """(footer start, FileMetaData bytes) when the trailer is sane."""
    if len(data) < 12 or data[-4:] != b"PAR1":
        return None
    (n,) = struct.unpack("<I", data[-8:-4])
    if n == 0 or n > len(data) - 12:
        return None
    return len(data) - 8 - n, data[len(data) - 8 - n : -8]


def _chunked_files() -> Iterator[tuple[Path, bytes, bytes, list[Any]]]:
    """(path, file bytes, FileMetaData bytes, each row group's column chunks) of every
    parquet-testing file whose footer and chunks decode (a damaged file of ``bad_data/``
    gives no seeds)."""
    from pybloom_async.parquet import decode_file_metadata

    for path in parquet_files():
        data = path.read_bytes()
        found = _footer_of(data)
        if found is None:
            continue
        try:
            groups = [rg.columns for rg in decode_file_metadata(found[1]).row_groups]
        except Exception:
            continue
        yield path, data, found[1], groups


def footers() -> Iterator[tuple[str, bytes]]:
    """The FileMetaData bytes of every parquet-testing file with a plaintext footer."""
    for path in parquet_files():
        found = _footer_of(path.read_bytes())
        if found is not None:
            yield path.name, found[1]


def _filter_blobs() -> Iterator[tuple[str, bytes]]:
    """Serialized filters: parquet-testing's, those inside its files, and generated ones."""
    from pybloom_async.core.filter import SplitBlockBloomFilter
    from pybloom_async.core.sizes import decode_header

    data_dir = testdata() / "parquet-testing" / "data"
    for name in ("bloom_filter.xxhash.bin", "bloom_filter.bin"):
        if (data_dir / name).exists():
            yield name, (data_dir / name).read_bytes()
    for path, data, footer, groups in _chunked_files():
        footer_start = len(data) - 8 - len(footer)
        for group, chunks in enumerate(groups):
            for chunk in chunks:
                offset = chunk.bloom_filter_offset
                if offset is None or not 4 <= offset < footer_start:
                    continue
                try:
                    header_len, num_bytes = decode_header(data[offset : offset + 64])
                except Exception:
                    continue
                blob = data[offset : offset + header_len + num_bytes]
                yield f"{path.name}-{group}-{chunk.path}", blob
    for size in (32, 64, 256, 1024):
        bloom = SplitBlockBloomFilter(size)
        bloom.insert(list(range(size // 8)), "INT64")
        yield f"generated-{size}", bloom.to_bytes()


def filters() -> Iterator[tuple[str, bytes]]:
    """Seeds of ``filter_from_bytes``: a limit byte, then a serialized filter."""
    for name, blob in _filter_blobs():
        yield name, DEFAULT_LIMIT + blob


def headers() -> Iterator[tuple[str, bytes]]:
    """Seeds of ``bloom_header``: a limit byte, then the first bytes of each filter."""
    for name, blob in _filter_blobs():
        yield name, DEFAULT_LIMIT + blob[:40]
    # Headers with an unknown field a later format version may add (field 5, a struct).
    yield (
        "unknown-field",
        DEFAULT_LIMIT + bytes.fromhex("1580101c1c00001c1c00001c1c00001c150200") + b"\0",
    )


def headers_c() -> Iterator[tuple[str, bytes]]:
    """Seeds of the C header harness: the same headers (its first byte picks a limit too)."""
    yield from headers()


def columns_c() -> Iterator[tuple[str, bytes]]:
    """Seeds of the C column harness (see ``fuzz/c/column.c`` for the layout)."""
    # type, flags, type_length, n (u16), then offsets/data/validity carved from the rest.
    for ptype in range(8):
        for flags in (0, 1, 2, 3):
            yield f"type{ptype}-flags{flags}", bytes([ptype, flags, 4, 8, 0]) + bytes(range(96))


def plain_runs_c() -> Iterator[tuple[str, bytes]]:
    """Seeds of the C PLAIN BYTE_ARRAY harness (see ``fuzz/c/plain.c``): the room for
    hashes, then a run of length-prefixed values (whole, cut short, or too long)."""
    values = [b"", b"a", b"user-17", bytes(range(40))]
    run = b"".join(len(v).to_bytes(4, "little") + v for v in values)
    for room in (255, 4, 3, 0):
        yield f"room{room}", bytes([room]) + run
    yield "cut", bytes([255]) + run[:-3]
    yield "long", bytes([255]) + (1 << 30).to_bytes(4, "little") + b"xyz"


def take_pages_c() -> Iterator[tuple[str, bytes]]:
    """Seeds of the C row-taker harness (see ``fuzz/c/take.c`` for the layout): pages of
    pyarrow's files (levels and values as a data page holds them) and small made ones."""
    rows = b"".join(r.to_bytes(2, "little") for r in (0, 3, 7, 100, 399))
    levels = bytes([0x04 << 1 | 1]) + b"\xff" * 4 + bytes([40 << 1, 1])  # packed, then a run
    plain = b"".join(i.to_bytes(8, "little") for i in range(64))
    arrays = b"".join(len(v).to_bytes(4, "little") + v for v in (b"", b"ab", b"xyz" * 9) * 10)
    indices = bytes([3, 8 << 1 | 1]) + bytes(range(24)) + bytes([50 << 1, 5])
    for flags, width, body in ((0, 7, plain), (1, 7, plain), (4, 0, arrays), (5, 0, arrays)):
        yield f"f{flags}", _take_seed(flags, width, 400, levels, 1, rows, body)
    for flags in (2, 3):
        yield f"dict{flags}", _take_seed(flags, 0, 100, levels, 8, rows, indices)


def _take_seed(
    flags: int, width: int, n: int, levels: bytes, count: int, rows: bytes, body: bytes
) -> bytes:
    head = bytes([flags, width]) + n.to_bytes(2, "little") + bytes([len(rows) // 2])
    head += len(levels).to_bytes(2, "little") + (count - 1).to_bytes(2, "little")
    return head + rows + (levels if flags & 1 else b"") + body


def chunks_c() -> Iterator[tuple[str, bytes]]:
    """Seeds of the C chunk-reader harness (see ``fuzz/c/chunk.c`` for the layout): the
    flat chunks of small files pyarrow writes (snappy and uncompressed, pages v1 and v2,
    dictionaries and PLAIN), each with keys from its values and a few wanted rows, and
    snappy blocks alone."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 300
    table = pa.table(
        {
            "i64": pa.array([i * 7 % 50 for i in range(n)], pa.int64()),
            "i32": pa.array([None if i % 5 == 0 else i for i in range(n)], pa.int32()),
            "s": pa.array([None if i % 7 == 0 else f"v{i % 40}" for i in range(n)]),
            "u": pa.array([f"unique-{i}" for i in range(n)]),
        }
    )
    widths = {"i64": 8, "i32": 4, "s": 0, "u": 0}
    keys = {
        "i64": [(7).to_bytes(8, "little", signed=True), (14).to_bytes(8, "little", signed=True)],
        "i32": [(3).to_bytes(8, "little", signed=True)],
        "s": [b"v1", b"v39"],
        "u": [b"unique-5"],
    }
    rows = b"".join(r.to_bytes(2, "little") for r in (0, 5, 99, 250, 299))
    for compression in ("snappy", "none"):
        for version in ("1.0", "2.0"):
            for options in ({}, {"use_dictionary": False, "data_page_size": 256}):
                sink = io.BytesIO()
                pq.write_table(
                    table, sink, compression=compression, data_page_version=version, **options
                )
                data = sink.getvalue()
                md = pq.ParquetFile(io.BytesIO(data)).metadata
                group = md.row_group(0)
                for i, name in enumerate(table.column_names):
                    chunk = group.column(i)
                    start = chunk.dictionary_page_offset or chunk.data_page_offset
                    body = data[start : start + chunk.total_compressed_size]
                    flags = (
                        int(table.schema.field(name).nullable) | {0: 0, 4: 2, 8: 4}[widths[name]]
                    )
                    codec = 1 if compression == "snappy" else 0
                    head = bytes([flags, codec]) + group.num_rows.to_bytes(2, "little")
                    head += chunk.total_uncompressed_size.to_bytes(4, "little")
                    head += bytes([len(rows) // 2, len(keys[name])])
                    packed = b"".join(
                        k if widths[name] else bytes([len(k)]) + k for k in keys[name]
                    )
                    label = f"{name}-{compression}-{version}-{len(options)}"
                    yield label, head + packed + rows + body
    for size in (0, 1, 100, 5000):
        block = pa.compress(bytes(range(256)) * (size // 256) + b"x" * (size % 256), "snappy")
        yield f"snappy-{size}", b"\x08" + bytes(block)
    # The input that found a leak (a string chunk's dictionary whose entries run past it:
    # the failed read was decompressed again, and its buffer lost, on the next call): as a
    # seed, every fuzz run replays it with the leak checker on.
    yield (
        "leak-dictionary-read-twice",
        bytes.fromhex(
            "01002c0133020000050202763103763339000005006300fa002b011504159c04159c044c1550150012000002"
            "0000007631020000007632020000007633020000007634020000007635020000007636020000007638020000"
            "0076390300000076313003000000763131031000007631320300000076313303000000763135030000007631"
            "3603000000763137030000007631380300000076313903000000763230030000007632320300000076323303"
            "0000007632340300000076323503000000763236030000007632370300000076323903000000763330030000"
            "0076333103000000763332030000007633330300000076333403000000763336030000007633370300000076"
            "3338030000007633390200000076300200000076370300000076313403000000763231030000007632380300"
            "0000763335150015e60315e6032c15d8041510150615061c365628027639180276301111000000270000004d"
            "7ebfdfeff7fbfd7ebfdfeff7fbfd7ebfdfeff7fbfd7ebfdfeff7fbfd7ebfdfeff7fbfd7ebf0f064340200c44"
            "611c48a22c4ce33c50244d54655d58a66d5ce77d602802c24014a38124ca4232ce0345a54455d66562dac675"
            "a7078622100844311a07a22c24d33850544a13655d2696695c777a1f2802813010a371208942328df340a534"
            "5195656299b671a7f781a1180803518c0792280bd9380f14951355599799691bd79d1f188a403010c5681c89"
            "b2904cf34051294d95759958b671dde97da10804c2508cc681240bc934ce1395d24455978965dad69dde0786"
            "40200c44611c48a22c4ce33c100000000000"
        ),
    )


def stripes_c() -> Iterator[tuple[str, bytes]]:
    """Seeds of the C stripe harness (see ``fuzz/c/stripe.c`` for the layout)."""
    # flags, n (u16), hash (u64), then the stripe bytes; bit 5 of flags inserts the hash into
    # some blocks, bit 6 presets some output bytes.
    hash_ = (0x9E3779B97F4A7C15).to_bytes(8, "little")
    body = bytes(range(1, 256, 2)) + bytes(b | 0xF0 for b in range(96))
    for flags in (1, 33, 64 | 33):
        for n in (0, 1, 7, 8, 9, 31, 32, 33, 35, 299):
            yield f"flags{flags}-n{n}", bytes([flags]) + n.to_bytes(2, "little") + hash_ + body


def plans() -> Iterator[tuple[str, bytes]]:
    """Seeds of ``plan``: the real geometry of every parquet-testing file with filters."""
    from . import planfuzz

    for path, data, footer, groups in _chunked_files():
        wanted = [
            (c.bloom_filter_offset, c.bloom_filter_length, 16, 0, 1024)
            for chunks in groups
            for c in chunks
        ]
        if not any(o is not None for o, *_ in wanted):
            continue
        for config in (0, 4):
            # Seeds use the default config (4) and a small one (0) with the file's numbers.
            yield (
                f"{path.name}-{config}",
                planfuzz.encode(config, len(data) - 13, len(footer) - 1, 0, wanted),
            )
    yield (
        "packed",
        planfuzz.encode(
            0,
            4000,
            100,
            4000,
            [(4 + 47 * i, 47 if i % 2 else None, 15, 0, 32) for i in range(20)],
        ),
    )


def reader_scripts() -> Iterator[tuple[str, bytes]]:
    """Seeds of ``reader``: each base file untouched and with one typical kind of damage."""
    from . import readerfuzz

    for i, base in enumerate(readerfuzz.bases()):
        yield f"{base.name}", readerfuzz.encode(i)
        yield f"{base.name}-small", readerfuzz.encode(i, flags=8)
        yield f"{base.name}-header", readerfuzz.encode(i, [(2, 0, 4, 0, b"\xff\xff\xff\xff")])
        yield f"{base.name}-length", readerfuzz.encode(i, [(1, 1, 0, 1 << 40, b"")])
        yield (
            f"{base.name}-stats",
            readerfuzz.encode(i, [(4, 0, 16 | 3, 5, b"\x01\x02\x03")], flags=16),
        )


def lookup_scripts() -> Iterator[tuple[str, bytes]]:
    """Seeds of ``lookup``: each base file untouched under each flag, and damaged in a size
    statistic's definition-level histogram (one entry of two: pyarrow's C++ metadata
    refuses it) and in one byte."""
    import struct

    from . import lookupfuzz

    for i, base in enumerate(lookupfuzz.bases()):
        for flags in (0, 4, 8, 16):
            yield f"base{i}-{flags}", lookupfuzz.encode(i, flags=flags)
        (n,) = struct.unpack("<I", base[-8:-4])
        footer = base[len(base) - 8 - n : -8]
        at = footer.find(bytes.fromhex("192600c801"))  # [0, n] as a list of two i64
        if at >= 0:
            yield f"base{i}-histogram", lookupfuzz.encode(i, [(1, at + 1, 0x16), (2, at + 2, 0)])
        yield f"base{i}-byte", lookupfuzz.encode(i, [(0, n // 2, 3)])


def paimon_indexes() -> Iterator[tuple[str, bytes]]:
    """Seeds of ``paimon_index``: containers written by the package, with real filters."""
    from pybloom_async.paimon.container import write_paimon_file_index
    from pybloom_async.paimon.filter import BloomFilter64

    bloom = BloomFilter64(100, 0.05)
    bloom.add([1, 2, 3], "BIGINT")
    payload = bloom.to_bytes()
    yield "one", write_paimon_file_index({"id": {"bloom-filter": payload}})
    yield (
        "two",
        write_paimon_file_index(
            {"id": {"bloom-filter": payload, "bitmap": b"\x01\x02"}, "név": {"bloom-filter": None}}
        ),
    )
    yield "empty", write_paimon_file_index({})


def page_headers() -> Iterator[tuple[str, bytes]]:
    """The first page headers of every chunk of the first row group of each parquet-testing
    file with a plaintext footer (v1 and v2 data pages, dictionaries, page statistics)."""
    from pybloom_async.parquet import PageHeaderReader

    for path, data, _, groups in _chunked_files():
        reader = PageHeaderReader(data)
        for chunk in groups[0] if groups else []:
            at = chunk.dictionary_page_offset or chunk.data_page_offset
            for n in range(3):
                try:
                    header = reader.read(at)
                except Exception:
                    break
                yield f"{path.name}-{chunk.path}-{n}", data[at : at + header.header_length]
                at += header.header_length + (header.compressed_page_size or 0)


def page_indexes() -> Iterator[tuple[str, bytes]]:
    """Inputs of the ``page_index`` target: a mode byte, then the bytes that mode decodes.

    Mode 0: FileMetaData (every parquet-testing footer); 1: an OffsetIndex; 2: a
    ColumnIndex (the second byte is the page count). The indexes are generated.
    """
    from thrift.protocol.TCompactProtocol import TCompactProtocol
    from thrift.transport.TTransport import TMemoryBuffer

    from pybloom_async.parquet import page_specs as wire

    def encode(obj: object) -> bytes:
        buffer = TMemoryBuffer()
        obj.write(TCompactProtocol(buffer))  # type: ignore[attr-defined]
        return bytes(buffer.getvalue())

    for name, footer in footers():
        yield f"footer-{name}", b"\x00" + footer
    for pages in (1, 3, 17):
        locations = [
            wire.PageLocation(offset=100 + 40 * i, compressed_page_size=40, first_row_index=10 * i)
            for i in range(pages)
        ]
        yield f"offsets-{pages}", b"\x01" + encode(wire.OffsetIndex(page_locations=locations))
        index = wire.ColumnIndex(
            null_pages=[i % 2 == 0 for i in range(pages)],
            min_values=[struct.pack("<q", i) for i in range(pages)],
            max_values=[struct.pack("<q", i + 5) for i in range(pages)],
            boundary_order=1,
            null_counts=[i for i in range(pages)],
        )
        yield f"columns-{pages}", b"\x02" + bytes([pages]) + encode(index)


def lake_segments() -> Iterator[tuple[str, bytes]]:
    """Seeds of ``lake_segment``: lake index segments written by the package."""
    from pybloom_async.lake.format import (
        DigestRecords,
        LakeColumn,
        LakeFile,
        digest_record,
        encode_segment,
    )
    from pybloom_async.parquet import ColumnDescriptor
    from pybloom_async.parquet.logical import LogicalKind, LogicalType
    from pybloom_async.types import PhysicalType

    files = [LakeFile("a.parquet", 10, '"e"', None, 3), LakeFile("d/b.parquet", 7, None, 5, 1)]
    desc = ColumnDescriptor(
        index=0, path_parts=("s",), physical_type=PhysicalType.BYTE_ARRAY, type_length=None,
        max_repetition_level=0, logical_type=LogicalType(LogicalKind.STRING),
    )  # fmt: skip
    col = LakeColumn(desc, 2, 4, 0.01, 0, frozenset({1}), frozenset({0}))
    yield "two-files", encode_segment(files, [(col, bytes(range(128)))])
    yield "no-columns", encode_segment(files[:1], [])
    yield "no-files", encode_segment([], [(col, b"")])
    record = digest_record(b"\x15\x02\x19\x1c\x00")
    digest = DigestRecords([(record, 0), None], [digest_record(b"\x15\x04\x00")])
    yield "digest", encode_segment(files, [(col, bytes(range(128)))], digest=digest)


def footer_scans_c() -> Iterator[tuple[str, bytes]]:
    """Seeds of the C footer-scanner harness (``fuzz/c/footer.c``): each parquet-testing
    footer behind the description of its own leaves (at most 15, names of at most 255
    bytes, paths of at most 7 names), every leaf wanted and only the first."""
    from pybloom_async.errors import PyBloomError
    from pybloom_async.parquet import decode_file_metadata

    for name, footer in footers():
        try:
            columns = decode_file_metadata(footer).schema.columns
        except PyBloomError:
            columns = ()
        if len(columns) > 15:
            continue
        leaves = b""
        for column in columns:
            parts = [p.encode() for p in column.path_parts]
            if len(parts) > 7 or any(len(p) > 255 for p in parts):
                break
            leaves += bytes([int(column.physical_type), len(parts)])
            leaves += b"".join(bytes([len(p)]) + p for p in parts)
        else:
            for mask in (0xFF, 0x01):
                yield f"{name}-{mask}", bytes([len(columns), mask]) + leaves + footer
