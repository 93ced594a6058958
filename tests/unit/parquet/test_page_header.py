"""The C page header decoder (``read_page_header``) reads what thrift's decoder reads.

On every page header of the parquet-testing corpus and of files pyarrow writes (pages v1
and v2, dictionaries, page statistics, checksums), on crafted headers (fields repeated,
of the wrong wire type, unknown) and on every prefix and random changes of one, the C
decoder either reads the header with the values and length of
:class:`~pybloom_async.parquet.pages.PageHeaderReader`, or falls back to it (which then
raises its own error). The fuzz target ``page_header`` explores the same property.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from thrift.protocol.TCompactProtocol import TCompactProtocol
from thrift.transport.TTransport import TMemoryBuffer

from pybloom_async._native import ffi, lib
from pybloom_async.errors import ParquetFormatError
from pybloom_async.parquet import page_specs as wire
from pybloom_async.parquet.pages import PageHeader, PageHeaderReader, read_page_header


def encode(obj: Any) -> bytes:
    buf = TMemoryBuffer()
    obj.write(TCompactProtocol(buf))
    return bytes(buf.getvalue())


def c_reads(data: bytes) -> bool:
    """Whether the C decoder itself accepts the header at the start of ``data``."""
    out = ffi.new("pba_page_header *")
    return bool(lib.pba_page_header_read(data, len(data), out) == 0)


def same(data: bytes, offset: int = 0) -> PageHeader | None:
    """The header both decoders read at ``offset`` (None: both refuse it)."""
    try:
        expected: PageHeader | None = PageHeaderReader(data).read(offset)
    except ParquetFormatError:
        expected = None
    if expected is None:
        with pytest.raises(ParquetFormatError):
            read_page_header(data, offset)
        assert not c_reads(data[offset:])
        return None
    assert read_page_header(data, offset) == expected
    assert read_page_header(memoryview(data), offset) == expected
    return expected


def headers_of(path: Path) -> Iterator[tuple[bytes, int]]:
    """(file bytes, offset) of every page header of every chunk of a file."""
    data = path.read_bytes()
    meta = pq.ParquetFile(path).metadata
    reader = PageHeaderReader(data)
    for g in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            chunk = meta.row_group(g).column(c)
            at = chunk.dictionary_page_offset or chunk.data_page_offset
            end = at + chunk.total_compressed_size
            while at < end:
                yield data, at
                header = reader.read(at)
                at += header.header_length + (header.compressed_page_size or 0)


# ---- real files ------------------------------------------------------------------------------


def test_every_header_of_parquet_testing(parquet_testing: Path) -> None:
    seen = kinds = 0
    types: set[int] = set()
    for path in sorted((parquet_testing / "data").rglob("*.parquet")):
        try:
            found = list(headers_of(path))
        except Exception:  # a file pyarrow or the reference cannot walk: not this test's
            continue
        for data, at in found:
            header = same(data, at)
            assert header is not None, (path.name, at)
            assert c_reads(data[at:]), (path.name, at)  # the C decoder read it itself
            types.add(header.type or 0)
            seen += 1
        kinds += 1
    assert seen > 1000 and kinds > 50, (seen, kinds)
    assert {0, 2, 3} <= types  # data pages v1, dictionaries and v2 data pages


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"data_page_version": "2.0"},
        {"data_page_version": "2.0", "compression": "none"},
        {"write_page_checksum": True, "write_statistics": True},
        {"use_dictionary": False, "data_page_size": 64},
        {"write_page_index": True, "compression": "zstd"},
    ],
)
def test_every_header_pyarrow_writes(tmp_path: Path, options: dict[str, Any]) -> None:
    table = pa.table(
        {
            "i": pa.array([1, None, 3] * 200, pa.int64()),
            "s": ["b", None, "z" * 100] * 200,
            "l": [[1, 2], None, []] * 200,
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, **options)
    found = list(headers_of(path))
    assert found
    for data, at in found:
        assert same(data, at) is not None
        assert c_reads(data[at:])


# ---- crafted headers ------------------------------------------------------------------------


def _v1() -> bytes:
    return encode(
        wire.PageHeader(
            type=0,
            uncompressed_page_size=100,
            compressed_page_size=80,
            crc=-5,
            data_page_header=wire.DataPageHeader(
                num_values=10, encoding=8, definition_level_encoding=3, repetition_level_encoding=3
            ),
        )
    )


def _v2(**fields: Any) -> bytes:
    v2 = {"num_values": 7, "num_nulls": 2, "num_rows": 7, "encoding": 0}
    v2 |= {"definition_levels_byte_length": 3, "repetition_levels_byte_length": 0}
    v2 |= fields
    return encode(
        wire.PageHeader(
            type=3,
            uncompressed_page_size=50,
            compressed_page_size=40,
            data_page_header_v2=wire.DataPageHeaderV2(**v2),
        )
    )


def test_fields_of_each_kind() -> None:
    v1 = same(_v1())
    assert v1 == PageHeader(0, 100, 80, -5, 10, 8, len(_v1()), 3, None)
    v2 = same(_v2(is_compressed=False))
    assert v2 is not None and v2.v2 is not None
    assert (v2.v2.num_rows, v2.v2.definition_levels_byte_length, v2.v2.is_compressed) == (
        7,
        3,
        False,
    )
    assert v2.num_values is None and v2.encoding is None
    unset = same(_v2())
    assert unset is not None and unset.v2 is not None and unset.v2.is_compressed  # default
    dictionary = encode(
        wire.PageHeader(
            type=2,
            uncompressed_page_size=8,
            compressed_page_size=8,
            dictionary_page_header=wire.DictionaryPageHeader(num_values=1, encoding=0),
        )
    )
    assert same(dictionary) == PageHeader(2, 8, 8, None, 1, 0, len(dictionary), None, None)
    assert same(b"\x00") == PageHeader(None, None, None, None, None, None, 1, None, None)


def test_repeated_wrong_and_unknown_fields() -> None:
    body = _v1()[:-1]
    # A second data page header replaces the first (thrift makes a new object).
    again = body + b"\x0c\x0a" + b"\x15\x04\x00" + b"\x00"  # field 5: num_values 2 only
    header = same(again)
    assert header is not None and header.num_values == 2 and header.encoding is None
    # type as a string (the wrong wire type): skipped as thrift skips it.
    wrong = b"\x18\x03abc" + _v1()[2:]
    assert same(wrong) is not None
    # An unknown field holding a struct and a list: skipped.
    unknown = body + b"\x0c\x28\x19\x35\x02\x04\x06\x00" + b"\x00"
    assert same(unknown) == same(_v1())._replace(header_length=len(unknown))  # type: ignore[union-attr]
    # A v1 and a dictionary page header both: num_values and encoding are the v1's.
    both = body + b"\x0c\x1c\x15\x06\x15\x00\x00" + b"\x00"
    header = same(both)
    assert header is not None and header.num_values == 10 and header.encoding == 8


def test_empty_list_of_no_thrift_type_is_refused() -> None:
    # Found by the page_header fuzz target (see test_fuzz_regressions.py).
    for elem in (0x0E, 0x0F):
        assert same(bytes.fromhex("15048c19") + bytes([elem]) + b"\x00\x00") is None
    assert same(bytes.fromhex("15048c190d0000")) is not None


def test_deep_nesting_is_refused_not_a_crash() -> None:
    deep = b"\x15\x04" + b"\x0c\x28" + b"\x1c" * 100_000 + b"\x00"
    assert same(deep) is None


#: Headers holding, in an unknown field (id 20), ``k`` nested structures of one kind: thrift
#: counts every value it enters toward its depth limit, empty containers and scalars too.
NESTED = {
    "structs": lambda k: b"\x0c\x28" + b"\x1c" * (k - 1) + b"\x00" * k,
    "structs, an i32 inside": lambda k: b"\x0c\x28" + b"\x1c" * (k - 1) + b"\x15\x02" + b"\x00" * k,
    "structs, a bool inside": lambda k: b"\x0c\x28" + b"\x1c" * (k - 1) + b"\x11" + b"\x00" * k,
    "lists, the last empty": lambda k: b"\x09\x28" + b"\x19" * (k - 1) + b"\x05",
    "lists, an i32 inside": lambda k: b"\x09\x28" + b"\x19" * (k - 1) + b"\x15\x02",
    "sets": lambda k: b"\x0a\x28" + b"\x1a" * (k - 1) + b"\x05",
    "maps, the last empty": lambda k: b"\x0b\x28" + b"\x01\x5b\x02" * (k - 1) + b"\x00",
    "maps, an entry inside": lambda k: (
        b"\x0b\x28" + b"\x01\x5b\x02" * (k - 1) + b"\x01\x55\x02\x02"
    ),
    "structs, an empty map inside": lambda k: (
        b"\x0c\x28" + b"\x1c" * (k - 1) + b"\x1b\x00" + b"\x00" * k
    ),
}


@pytest.mark.parametrize("build", NESTED.values(), ids=NESTED.keys())
def test_nesting_is_limited_as_thrift_limits_it(build: Any) -> None:
    # The fuzzer found the C reader one level more lenient for empty containers and for
    # scalars inside the deepest one (the footer scanner shares the reader).
    read = [k for k in range(58, 68) if same(build(k) + b"\x00") is not None]
    assert read and read == list(range(58, read[-1] + 1)) and read[-1] < 64


def test_prefixes_and_mutations_agree() -> None:
    rng = random.Random(31)
    for data in (_v1(), _v2()):
        for end in range(len(data)):
            same(data[:end])
        accepted = 0
        for _ in range(2000):
            mutated = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                mutated[rng.randrange(len(mutated))] = rng.randrange(256)
            accepted += same(bytes(mutated)) is not None
        assert accepted > 200


def test_offsets_and_errors() -> None:
    data = b"junk" + _v1() + b"tail"
    assert read_page_header(data, 4) == PageHeaderReader(data).read(4)
    with pytest.raises(ParquetFormatError, match="outside"):
        read_page_header(data, len(data), path="f.parquet", column="c")
    with pytest.raises(ParquetFormatError, match="malformed page header") as info:
        read_page_header(b"\x15", path="f.parquet", column="c")
    assert "f.parquet" in str(info.value)
