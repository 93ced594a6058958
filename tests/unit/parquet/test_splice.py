"""Tests for the footer splicer (pybloom_async.parquet.splice).

The splicer sets ColumnMetaData fields 14/15 in an encoded FileMetaData and must keep
every other byte. What the tests check, on real footers (parquet-testing files and files
pyarrow, DuckDB and Spark write) and on crafted ones:

* an empty mapping returns the input; splicing a file's own filter locations back in
  returns the input byte for byte (the writers encode canonically, as we do);
* after setting locations in every chunk, an independent decode of the whole thrift
  tree (thrift's ``TCompactProtocol``, every field, known or not, in wire order) equals
  the original tree with fields 14/15 set in place; our decoder and pyarrow read the
  new values, and pyarrow reads the same rows from the file;
* fields we do not model (in ColumnMetaData and FileMetaData, of every thrift type, with
  ids above 15 and in long-form headers) survive, and their bytes appear verbatim;
* header deltas are rewritten exactly where an inserted field changes them (table);
* encrypted footers are refused; every truncation, hostile sizes and depths, and random
  or mutated bytes give ParquetFormatError, quickly and without large allocations.
"""

from __future__ import annotations

import io
import re
import struct
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.corpus import too_large_to_decode
from support.writers import WrittenFiles
from thrift.protocol.TCompactProtocol import TCompactProtocol
from thrift.Thrift import TType
from thrift.transport.TTransport import TMemoryBuffer

from pybloom_async.errors import (
    EncryptedFileError,
    InvalidArgumentError,
    ParquetFormatError,
    PyBloomError,
)
from pybloom_async.parquet import decode_file_metadata, parse_footer_tail
from pybloom_async.parquet.splice import MAX_DEPTH, splice_bloom_filter_locations

# --------------------------------------------------------------------------- thrift trees

# ("struct", [(fid, ttype, value), ...]), ("list", etype, [...]), ("map", ...) or a scalar
Tree = Any


def read_tree(data: bytes) -> tuple[Tree, int]:
    """Decode a whole compact-protocol struct with thrift itself: (tree, bytes consumed)."""
    buf = TMemoryBuffer(data)
    tree = _read_value(TCompactProtocol(buf), TType.STRUCT)
    return tree, buf._buffer.tell()


def _read_value(p: TCompactProtocol, ttype: int) -> Tree:
    if ttype == TType.STRUCT:
        p.readStructBegin()
        fields = []
        while True:
            _, ftype, fid = p.readFieldBegin()
            if ftype == TType.STOP:
                break
            fields.append((fid, ftype, _read_value(p, ftype)))
            p.readFieldEnd()
        p.readStructEnd()
        return ("struct", fields)
    if ttype in (TType.LIST, TType.SET):
        etype, size = p.readListBegin()
        items = [_read_value(p, etype) for _ in range(size)]
        p.readListEnd()
        return ("list", etype, items)
    if ttype == TType.MAP:
        ktype, vtype, size = p.readMapBegin()
        pairs = [(_read_value(p, ktype), _read_value(p, vtype)) for _ in range(size)]
        p.readMapEnd()
        return ("map", ktype, vtype, pairs)
    reader = {
        TType.BOOL: p.readBool,
        TType.BYTE: p.readByte,
        TType.I16: p.readI16,
        TType.I32: p.readI32,
        TType.I64: p.readI64,
        TType.DOUBLE: p.readDouble,
        TType.STRING: p.readBinary,
    }[ttype]
    return reader()


def write_tree(tree: Tree) -> bytes:
    """Encode a tree with thrift's own compact writer (canonical headers)."""
    buf = TMemoryBuffer()
    _write_value(TCompactProtocol(buf), TType.STRUCT, tree)
    return bytes(buf.getvalue())


def _write_value(p: TCompactProtocol, ttype: int, value: Tree) -> None:
    if ttype == TType.STRUCT:
        p.writeStructBegin("s")
        for fid, ftype, v in value[1]:
            p.writeFieldBegin("f", ftype, fid)
            _write_value(p, ftype, v)
            p.writeFieldEnd()
        p.writeFieldStop()
        p.writeStructEnd()
    elif ttype in (TType.LIST, TType.SET):
        _, etype, items = value
        p.writeListBegin(etype, len(items))
        for item in items:
            _write_value(p, etype, item)
        p.writeListEnd()
    elif ttype == TType.MAP:
        _, ktype, vtype, pairs = value
        p.writeMapBegin(ktype, vtype, len(pairs))
        for k, v in pairs:
            _write_value(p, ktype, k)
            _write_value(p, vtype, v)
        p.writeMapEnd()
    else:
        writer = {
            TType.BOOL: p.writeBool,
            TType.BYTE: p.writeByte,
            TType.I16: p.writeI16,
            TType.I32: p.writeI32,
            TType.I64: p.writeI64,
            TType.DOUBLE: p.writeDouble,
            TType.STRING: p.writeBinary,
        }[ttype]
        writer(value)


def field(struct_tree: Tree, fid: int) -> Tree:
    (value,) = [v for f, _, v in struct_tree[1] if f == fid]
    return value


def column_metas(tree: Tree) -> Iterator[tuple[int, int, Tree]]:
    """(row group, column index, ColumnMetaData tree) for every chunk with meta_data."""
    for rg, group in enumerate(field(tree, 4)[2]):
        for ci, chunk in enumerate(field(group, 1)[2]):
            metas = [v for f, _, v in chunk[1] if f == 3]
            if metas:
                yield rg, ci, metas[0]


def with_locations(meta: Tree, offset: int, length: int) -> Tree:
    """What the splicer should make of a ColumnMetaData: 14/15 set before the first id > 15."""
    kept = [f for f in meta[1] if f[0] not in (14, 15)]
    at = next((i for i, f in enumerate(kept) if f[0] > 15), len(kept))
    new = [(14, TType.I64, offset), (15, TType.I32, length)]
    return ("struct", kept[:at] + new + kept[at:])


def expected_tree(tree: Tree, locations: dict[tuple[int, int], tuple[int, int]]) -> Tree:
    """The original tree with the locations applied (rebuilt, the input left alone)."""
    fields = []
    for fid, ftype, value in tree[1]:
        if fid == 4:
            groups = []
            for rg, group in enumerate(value[2]):
                gfields = []
                for gfid, gtype, gvalue in group[1]:
                    if gfid == 1:
                        chunks = []
                        for ci, chunk in enumerate(gvalue[2]):
                            loc = locations.get((rg, ci))
                            cfields = [
                                (cf, ct, with_locations(cv, *loc) if cf == 3 and loc else cv)
                                for cf, ct, cv in chunk[1]
                            ]
                            chunks.append(("struct", cfields))
                        gvalue = ("list", gvalue[1], chunks)
                    gfields.append((gfid, gtype, gvalue))
                groups.append(("struct", gfields))
            value = ("list", value[1], groups)
        fields.append((fid, ftype, value))
    return ("struct", fields)


# --------------------------------------------------------------------------- real footers


def footer_bytes(data: bytes) -> bytes:
    location = parse_footer_tail(data, len(data))
    return bytes(location.metadata_bytes(data))


def with_footer(data: bytes, footer: bytes) -> bytes:
    start = len(data) - 8 - struct.unpack("<I", data[-8:-4])[0]
    return data[:start] + footer + struct.pack("<I", len(footer)) + b"PAR1"


def same_rows(a: bytes, b: bytes) -> bool:
    """pyarrow reads the same table from both files (compared as Arrow IPC: NaN == NaN)."""

    def ipc(data: bytes) -> bytes:
        try:
            table = pq.read_table(io.BytesIO(data))
        except (pa.ArrowException, OSError) as exc:
            return f"error {type(exc).__name__}".encode()  # the same error both times
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return bytes(sink.getvalue())

    return ipc(a) == ipc(b)


def parquet_testing_files(root: Path) -> list[Path]:
    return sorted((root / "data").glob("*.parquet"))


def rich_pyarrow_file(tmp_path: Path) -> Path:
    """A pyarrow file with page indexes, size statistics, sorting columns, key/value metadata,
    nested columns and statistics: footer fields the library does not model."""
    n = 3000
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "s": pa.array([f"v{i % 97}" if i % 5 else None for i in range(n)]),
            "st": pa.array([{"a": i, "b": [i, i + 1]} for i in range(n)]),
            "m": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int32())),
        }
    ).replace_schema_metadata({"owner": "tests", "note": "x" * 300})
    path = tmp_path / "rich.parquet"
    pq.write_table(
        table,
        path,
        row_group_size=1000,
        write_page_index=True,
        sorting_columns=[pq.SortingColumn(0)],
        data_page_size=512,
    )
    return path


@pytest.fixture(scope="module")
def real_files(
    parquet_testing: Path,
    pyarrow_files: WrittenFiles,
    duckdb_files: WrittenFiles,
    tmp_path_factory: pytest.TempPathFactory,
) -> list[Path]:
    return [
        *parquet_testing_files(parquet_testing),
        *pyarrow_files.files,
        *duckdb_files.files,
        rich_pyarrow_file(tmp_path_factory.mktemp("rich")),
    ]


def check_every_chunk(path: Path) -> int:
    """Set distinct locations in every chunk; check trees, our decoder and pyarrow."""
    data = path.read_bytes()
    footer = footer_bytes(data)
    tree, used = read_tree(footer)
    assert used == len(footer)
    locations = {
        (rg, ci): (10_000_000_000 + 1000 * rg + ci, 100 + 7 * ci + rg)
        for rg, ci, _ in column_metas(tree)
    }
    out = splice_bloom_filter_locations(footer, locations, path=str(path))
    new_tree, used = read_tree(out)
    assert used == len(out)
    assert new_tree == expected_tree(tree, locations), path.name
    meta = decode_file_metadata(out)
    for group in meta.row_groups:
        for chunk in group.columns:
            offset, length = locations[(group.index, chunk.column.index)]
            assert (chunk.bloom_filter_offset, chunk.bloom_filter_length) == (offset, length)
    new_file = with_footer(data, out)
    try:
        pq.ParquetFile(io.BytesIO(data))
    except (pa.ArrowException, OSError) as exc:  # pyarrow refuses a few parquet-testing files
        with pytest.raises(type(exc), match=re.escape(str(exc))):
            pq.ParquetFile(io.BytesIO(new_file))
        return len(locations)
    arrow_meta = pq.ParquetFile(io.BytesIO(new_file)).metadata
    for rg, ci in locations:
        chunk = arrow_meta.row_group(rg).column(ci).to_dict()
        assert (chunk["bloom_filter_offset"], chunk["bloom_filter_length"]) == locations[(rg, ci)]
    # The pages are the original's bytes (with_footer); reading them proves the footer
    # still describes them. A file too large to decode is left to the checks above.
    if not too_large_to_decode(arrow_meta):
        assert same_rows(new_file, data), path.name
    return len(locations)


def test_real_footers_every_chunk(real_files: list[Path]) -> None:
    chunks = sum(check_every_chunk(path) for path in real_files)
    assert len(real_files) > 60 and chunks > 900


def test_empty_mapping_returns_the_input(real_files: list[Path]) -> None:
    for path in real_files:
        footer = footer_bytes(path.read_bytes())
        assert splice_bloom_filter_locations(footer, {}) == footer


def existing_locations(footer: bytes) -> dict[tuple[int, int], tuple[int, int]]:
    meta = decode_file_metadata(footer)
    return {
        (g.index, c.column.index): (c.bloom_filter_offset, c.bloom_filter_length)
        for g in meta.row_groups
        for c in g.columns
        if c.bloom_filter_offset is not None and c.bloom_filter_length is not None
    }


def test_own_locations_give_identical_bytes(
    parquet_testing: Path, pyarrow_files: WrittenFiles, duckdb_files: WrittenFiles
) -> None:
    """Writers' footers with filters: splicing their own 14/15 back changes no byte."""
    files = [
        *pyarrow_files.files,
        *duckdb_files.files,
        parquet_testing / "data" / "data_index_bloom_encoding_with_length.parquet",
    ]
    for path in files:
        footer = footer_bytes(path.read_bytes())
        own = existing_locations(footer)
        assert own, path
        assert splice_bloom_filter_locations(footer, own) == footer, path.name


@pytest.mark.spark
def test_spark_footers(spark_files: WrittenFiles) -> None:
    for path in spark_files.files:
        footer = footer_bytes(path.read_bytes())
        assert splice_bloom_filter_locations(footer, existing_locations(footer)) == footer
        assert check_every_chunk(path) > 0


def test_adding_a_length_where_only_the_offset_is(parquet_testing: Path) -> None:
    """parquet-testing's file without bloom_filter_length: 15 is inserted after 14."""
    path = parquet_testing / "data" / "data_index_bloom_encoding_stats.parquet"
    footer = footer_bytes(path.read_bytes())
    (chunk,) = decode_file_metadata(footer).row_groups[0].columns
    assert chunk.bloom_filter_offset is not None and chunk.bloom_filter_length is None
    out = splice_bloom_filter_locations(footer, {(0, 0): (chunk.bloom_filter_offset, 2064)})
    (new,) = decode_file_metadata(out).row_groups[0].columns
    assert (new.bloom_filter_offset, new.bloom_filter_length) == (chunk.bloom_filter_offset, 2064)
    tree, _ = read_tree(footer)
    assert read_tree(out)[0] == expected_tree(tree, {(0, 0): (chunk.bloom_filter_offset, 2064)})
    # The struct grew by the new field only: header (1 byte) + zigzag varint of 2064 (2 bytes).
    assert len(out) == len(footer) + 3


# --------------------------------------------------------------------------- crafted footers

I32, I64, BIN, BOOL, LIST, STRUCT = TType.I32, TType.I64, TType.STRING, TType.BOOL, TType.LIST, 12


def meta_fields(*extra: tuple[int, int, Tree], ids: tuple[int, ...] = ()) -> list[Any]:
    """A ColumnMetaData's required fields (1-9), plus ``extra``, sorted by id."""
    base = [
        (1, I32, 2),
        (2, LIST, ("list", I32, [0, 3])),
        (3, LIST, ("list", BIN, [b"c"])),
        (4, I32, 1),
        (5, I64, 10),
        (6, I64, 100),
        (7, I64, 90),
        (9, I64, 4),
    ]
    fields = [f for f in base if not ids or f[0] in ids] + list(extra)
    return sorted(fields, key=lambda f: f[0])


def file_tree(meta: list[Any], *file_extra: tuple[int, int, Tree], chunk_extra: Any = ()) -> Tree:
    """A FileMetaData tree: one INT64 column ``c``, one row group, one chunk."""
    schema = (
        "list",
        STRUCT,
        [
            ("struct", [(4, BIN, b"schema"), (5, I32, 1)]),
            ("struct", [(1, I32, 2), (3, I32, 0), (4, BIN, b"c")]),
        ],
    )
    chunk = ("struct", [(2, I64, 4), (3, STRUCT, ("struct", meta)), *chunk_extra])
    group = ("struct", [(1, LIST, ("list", STRUCT, [chunk])), (2, I64, 100), (3, I64, 10)])
    fields = [
        (1, I32, 2),
        (2, LIST, schema),
        (3, I64, 10),
        (4, LIST, ("list", STRUCT, [group])),
        *file_extra,
    ]
    return ("struct", sorted(fields, key=lambda f: f[0]))


UNKNOWN_VALUES: list[tuple[int, int, Tree]] = [
    (16, STRUCT, ("struct", [(1, I64, 7), (2, LIST, ("list", I64, [1, 2, 3]))])),
    (17, TType.DOUBLE, 2.5),
    (18, BOOL, True),
    (19, BOOL, False),
    (20, TType.BYTE, -3),
    (21, TType.I16, -300),
    (22, TType.MAP, ("map", BIN, I64, [(b"k1", 1), (b"k2", -2)])),
    (23, TType.SET, ("list", I32, [5, 6])),
    (40, LIST, ("list", BOOL, [True, False, True])),
    (200, BIN, b"\x00\xff" * 20),
    (30000, STRUCT, ("struct", [(1, STRUCT, ("struct", [(1, BIN, b"deep")]))])),
]


def test_unknown_fields_survive() -> None:
    """Fields the library does not model, in ColumnMetaData, ColumnChunk and FileMetaData."""
    meta = meta_fields(*UNKNOWN_VALUES, (8, LIST, ("list", STRUCT, [])))
    tree = file_tree(
        meta,
        (5, LIST, ("list", STRUCT, [("struct", [(1, BIN, b"k"), (2, BIN, b"v")])])),
        (6, BIN, b"writer 1.0"),
        (7, LIST, ("list", STRUCT, [("struct", [(1, STRUCT, ("struct", []))])])),
        (99, BIN, b"future"),
        (1000, TType.MAP, ("map", I32, STRUCT, [(1, ("struct", [(1, BOOL, True)]))])),
        chunk_extra=[(4, I64, 1234), (5, I32, 56), (6, I64, 789), (7, I32, 10), (77, BIN, b"u")],
    )
    footer = write_tree(tree)
    out = splice_bloom_filter_locations(footer, {(0, 0): (4321, 2064)})
    assert read_tree(out)[0] == expected_tree(tree, {(0, 0): (4321, 2064)})
    # The unknown fields' value bytes are in the output verbatim.
    for _, ftype, value in UNKNOWN_VALUES:
        encoded = write_tree(("struct", [(1, ftype, value)]))[1:-1]  # value without header/STOP
        assert encoded in out
    decoded = decode_file_metadata(out).row_groups[0].columns[0]
    assert (decoded.bloom_filter_offset, decoded.bloom_filter_length) == (4321, 2064)


def test_unknown_fields_in_a_pyarrow_written_file(tmp_path: Path) -> None:
    """A real file whose footer gained unknown fields still reads, before and after."""
    path = rich_pyarrow_file(tmp_path)
    data = path.read_bytes()
    tree, _ = read_tree(footer_bytes(data))
    # pyarrow writes fields the library does not model: size statistics (ColumnMetaData 16),
    # page index locations (ColumnChunk 4-7), sorting columns (RowGroup 4), column orders.
    assert {16} <= {f for _, _, meta in column_metas(tree) for f, _, _ in meta[1]}
    extra = (60, STRUCT, ("struct", [(1, BIN, b"future stats"), (2, I64, 9)]))
    grown = expected_tree(tree, {})
    for _rg, _ci, meta in column_metas(grown):
        meta[1].append(extra)
    grown[1].append((70, BIN, b"future file field"))
    footer = write_tree(grown)
    locations = {(rg, ci): (123, 45) for rg, ci, _ in column_metas(grown)}
    out = splice_bloom_filter_locations(footer, locations)
    assert read_tree(out)[0] == expected_tree(grown, locations)
    assert same_rows(with_footer(data, out), data)


# Field id sequences of a ColumnMetaData -> the ids after splicing.
HEADER_CASES = [
    pytest.param((1, 2, 3, 4, 5, 6, 7, 9), id="required-only"),
    pytest.param((1, 2, 3, 4, 5, 6, 7, 9, 12, 13), id="stats-and-encoding-stats"),
    pytest.param((1, 2, 3, 4, 5, 6, 7, 9, 14, 15), id="replace-both"),
    pytest.param((1, 2, 3, 4, 5, 6, 7, 9, 14), id="replace-offset-only"),
    pytest.param((1, 2, 3, 4, 5, 6, 7, 9, 15), id="replace-length-only"),
    pytest.param((1, 2, 3, 4, 5, 6, 7, 9, 16, 17), id="insert-before-16"),
    pytest.param((1, 2, 3, 4, 5, 6, 7, 9, 14, 15, 16), id="replace-before-16"),
    pytest.param((1, 2, 3, 4, 5, 6, 7, 9, 40), id="delta-over-15-after"),
    pytest.param((1, 2, 3, 4, 5, 6, 7, 9, 15, 14, 16), id="out-of-order"),
    pytest.param((16, 1, 2, 3, 4, 5, 6, 7, 9), id="unknown-first"),
]

VALUES: dict[int, tuple[int, Tree]] = {
    **{fid: (ftype, value) for fid, ftype, value in meta_fields()},
    12: (STRUCT, ("struct", [(3, I64, 0)])),
    13: (LIST, ("list", STRUCT, [("struct", [(1, I32, 0), (2, I32, 0), (3, I32, 1)])])),
    14: (I64, 99),
    15: (I32, 98),
    16: (STRUCT, ("struct", [(1, I64, 5)])),
    17: (BIN, b"geo"),
    40: (BIN, b"far"),
}


@pytest.mark.parametrize("ids", HEADER_CASES)
@pytest.mark.parametrize("location", [(4, 32 + 15), (2**40, 2**31 - 1), (2**63 - 1, 1)])
def test_header_deltas(ids: tuple[int, ...], location: tuple[int, int]) -> None:
    """The output equals thrift's own encoding of the expected struct (canonical headers)."""
    meta = [(fid, *VALUES[fid]) for fid in ids]
    tree = file_tree(meta)
    out = splice_bloom_filter_locations(write_tree(tree), {(0, 0): location})
    expected = expected_tree(tree, {(0, 0): location})
    assert out == write_tree(expected)
    assert out.count(b"\x00") >= 1  # sanity: the STOP bytes are there


def test_long_form_headers_are_kept_where_the_delta_did_not_change() -> None:
    """A writer may use the long header form for small deltas; we copy it as it was."""
    meta = [(fid, *VALUES[fid]) for fid in (1, 2, 3, 4, 5, 6, 7, 9, 12, 17)]
    canonical = write_tree(file_tree(meta))
    # Field 12 (statistics, delta 3 after 9) as 0x0C + zigzag(12) instead of 0x3C.
    long_form = canonical.replace(b"\x3c\x36\x00", b"\x0c\x18\x36\x00", 1)
    assert long_form != canonical
    assert read_tree(long_form)[0] == read_tree(canonical)[0]
    out = splice_bloom_filter_locations(long_form, {(0, 0): (1, 2)})
    assert b"\x0c\x18\x36\x00" in out  # kept verbatim
    assert read_tree(out)[0] == expected_tree(file_tree(meta), {(0, 0): (1, 2)})
    # Field 17 followed 12 with delta 5; after 14/15 it is re-emitted with delta 2.
    from_canonical = splice_bloom_filter_locations(canonical, {(0, 0): (1, 2)})
    assert read_tree(out)[0] == read_tree(from_canonical)[0]


def test_replacing_twice_equals_replacing_once() -> None:
    tree = file_tree(meta_fields(*UNKNOWN_VALUES))
    footer = write_tree(tree)
    once = splice_bloom_filter_locations(footer, {(0, 0): (7, 8)})
    twice = splice_bloom_filter_locations(
        splice_bloom_filter_locations(footer, {(0, 0): (1000, 2000)}), {(0, 0): (7, 8)}
    )
    assert once == twice


def test_trailing_bytes_after_the_struct_are_kept() -> None:
    footer = write_tree(file_tree(meta_fields()))
    out = splice_bloom_filter_locations(footer + b"\xaa\xbb", {(0, 0): (1, 2)})
    assert out.endswith(b"\x00\xaa\xbb")


# --------------------------------------------------------------------------- refusals


def test_encrypted_plaintext_footer(parquet_testing: Path) -> None:
    path = parquet_testing / "data" / "encrypt_columns_plaintext_footer.parquet.encrypted"
    footer = footer_bytes(path.read_bytes())
    with pytest.raises(EncryptedFileError, match="encrypted"):
        splice_bloom_filter_locations(footer, {(0, 0): (1, 2)}, path=str(path))
    with pytest.raises(EncryptedFileError):
        splice_bloom_filter_locations(footer, {})


@pytest.mark.parametrize(
    "tree",
    [
        file_tree(meta_fields(), (8, STRUCT, ("struct", [(1, STRUCT, ("struct", []))]))),
        file_tree(meta_fields(), (9, BIN, b"signing key")),
        file_tree(meta_fields(), chunk_extra=[(8, STRUCT, ("struct", []))]),
        file_tree(meta_fields(), chunk_extra=[(9, BIN, b"ciphertext")]),
    ],
    ids=["encryption_algorithm", "footer_signing_key", "crypto_metadata", "encrypted_metadata"],
)
def test_encryption_fields_are_refused(tree: Tree) -> None:
    with pytest.raises(EncryptedFileError, match="encrypted files are not supported"):
        splice_bloom_filter_locations(write_tree(tree), {(0, 0): (1, 2)}, path="x.parquet")


@pytest.mark.parametrize(
    ("locations", "match"),
    [
        ({(1, 0): (1, 2)}, "row group 1 does not exist: the footer has 1"),
        ({(0, 1): (1, 2)}, "column index 1 does not exist: row group 0 has 1"),
        ({(0, 0): (-1, 2)}, "bloom_filter_offset must be"),
        ({(0, 0): (2**63, 2)}, "bloom_filter_offset must be"),
        ({(0, 0): (1, 0)}, "bloom_filter_length must be"),
        ({(0, 0): (1, 2**31)}, "bloom_filter_length must be"),
        ({(0, 0): (1, True)}, "bloom_filter_length must be"),
        ({(-1, 0): (1, 2)}, "row group must be"),
        ({(0,): (1, 2)}, "locations map"),
        ({(0, 0): 5}, "locations map"),
    ],
)
def test_bad_locations(locations: Any, match: str) -> None:
    footer = write_tree(file_tree(meta_fields()))
    with pytest.raises(InvalidArgumentError, match=match):
        splice_bloom_filter_locations(footer, locations)


def test_chunk_without_meta_data() -> None:
    tree = file_tree(meta_fields())
    chunk = field(field(tree, 4)[2][0], 1)[2][0]
    chunk[1][:] = [f for f in chunk[1] if f[0] != 3]
    footer = write_tree(tree)
    assert splice_bloom_filter_locations(footer, {}) == footer
    with pytest.raises(ParquetFormatError, match="no meta_data"):
        splice_bloom_filter_locations(footer, {(0, 0): (1, 2)})


# --------------------------------------------------------------------------- malformed


def small_real_footers(root: Path) -> list[bytes]:
    names = [
        "alltypes_plain.parquet",
        "data_index_bloom_encoding_with_length.parquet",
        "nested_maps.snappy.parquet",
        "column_chunk_key_value_metadata.parquet",
    ]
    return [footer_bytes((root / "data" / n).read_bytes()) for n in names]


def test_every_truncation_fails(parquet_testing: Path) -> None:
    crafted = write_tree(file_tree(meta_fields(*UNKNOWN_VALUES)))
    for footer in [*small_real_footers(parquet_testing), crafted]:
        for cut in range(len(footer)):
            for locations in ({}, {(0, 0): (1, 2)}):
                with pytest.raises(ParquetFormatError):
                    splice_bloom_filter_locations(footer[:cut], locations)


def _hostile(body: bytes) -> bytes:
    # FileMetaData field 99 (long form header: type, zigzag id) holding ``body``.
    return b"\x09\xc6\x01" + body


@pytest.mark.parametrize(
    ("footer", "match"),
    [
        (b"\x19" * 100_000, "nested deeper than 64"),  # list<list<list<...>>> headers
        (b"\x1c" + b"\x1c" * 100_000, "nested deeper than 64"),  # struct field in struct...
        (_hostile(b"\xf9\xff\xff\xff\xff\x07"), "list size of 2147483647 does not fit"),
        (_hostile(b"\xf9\xff\xff\xff\xff\x0f"), "list size of 4294967295 does not fit"),
        (b"\x18\xff\xff\xff\xff\x07", "string length of 2147483647 does not fit"),
        (b"\x16" + b"\xff" * 20, "varint is longer than 10 bytes"),
        (b"\x15\xff\xff\xff\xff\xff\x01", "varint is longer than 5 bytes"),
        (b"\x0e\x02", "unknown field type 14"),
        (b"\x0f\x02", "unknown field type 15"),
        (_hostile(b"\x2e\x00\x00"), "unknown list element type 14"),
        (b"\x1b\x02\xee\x00\x00\x00", "unknown element type 14"),
        (b"\x05\x80\x80\x80\x01\x00\x00", "varint is longer than 3 bytes"),
        (b"\x05\x80\x80\x04\x00\x00", "does not fit in 16 bits"),
        (b"\x15\x00\x15\x00" + b"\xf5\x00" * 2200, "does not fit in 16 bits"),
        (b"\x49\x1c\x00", "row_groups appears twice|ends in the middle"),
        (b"\x45\x00\x00", "row_groups is not a list"),
        (b"\x49\x15\x00\x00", "holds elements of type 5, not structs"),
        (b"\x49\x1c\x19\x1c\x35\x00\x00\x00\x00", "ColumnChunk.meta_data is not a struct"),
        (b"\x49\x0c\x09\x08\x0c\x00", "FileMetaData.row_groups appears twice"),
        (b"", "ends in the middle"),
    ],
)
def test_hostile_bytes(footer: bytes, match: str) -> None:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(ParquetFormatError, match=match):
            splice_bloom_filter_locations(footer, {}, path="hostile.parquet")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024 + 4 * len(footer)
    # Not a speed test: a generous bound that an unbounded loop over a claimed size breaks.
    assert time.perf_counter() - started < 30


def test_depth_limit_is_exact() -> None:
    """MAX_DEPTH nested structs pass; one more is refused."""

    def nested(levels: int) -> bytes:
        return b"\x1c" * levels + b"\x00" * (levels + 1)

    depth_ok = MAX_DEPTH
    assert splice_bloom_filter_locations(nested(depth_ok), {}) == nested(depth_ok)
    with pytest.raises(ParquetFormatError, match="nested deeper"):
        splice_bloom_filter_locations(nested(depth_ok + 1), {})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_random_bytes(data: bytes) -> None:
    try:
        out = splice_bloom_filter_locations(data, {})
    except (ParquetFormatError, EncryptedFileError):
        return
    assert out == data


@pytest.fixture(scope="module")
def seed_footers(parquet_testing: Path) -> list[bytes]:
    return small_real_footers(parquet_testing)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.integers(0, 3),
    edits=st.lists(
        st.tuples(st.integers(0, 10_000), st.integers(0, 255), st.booleans()), max_size=6
    ),
    target=st.booleans(),
)
def test_mutated_real_footers(
    seed_footers: list[bytes], which: int, edits: list[tuple[int, int, bool]], target: bool
) -> None:
    """Byte flips and insertions in real footers: a result or a PyBloomError, nothing else."""
    data = bytearray(seed_footers[which])
    for pos, value, insert in edits:
        pos %= len(data) + 1
        if insert or pos == len(data):
            data.insert(pos, value)
        else:
            data[pos] = value
    locations = {(0, 0): (5, 6)} if target else {}
    try:
        out = splice_bloom_filter_locations(bytes(data), locations)
    except PyBloomError as exc:
        assert isinstance(exc, (ParquetFormatError, InvalidArgumentError)), exc
        return
    if not target:
        assert out == bytes(data)
    else:
        # Whatever the mutation did, thrift itself reads the result where it read the input.
        try:
            before, _ = read_tree(bytes(data))
        except Exception:
            return
        after, _ = read_tree(out)
        assert after == expected_tree(before, locations)
