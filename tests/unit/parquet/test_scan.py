"""The footer scanner (pybloom_async.parquet.scan, csrc/footer) agrees with the decoder.

On every footer here (the parquet-testing corpus read in place, files pyarrow and DuckDB
write, crafted and mutated ones) the scanner either refuses the footer where the Python
decoder refuses it, with the same error class, or reads exactly the values the decoder
reads: row counts, each chunk's type, value count, statistics, filter and page-index
places, codec and sizes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from thrift.protocol.TCompactProtocol import TCompactProtocol
from thrift.transport.TTransport import TMemoryBuffer

from pybloom_async.errors import EncryptedFileError, ParquetFormatError
from pybloom_async.parquet import THRIFT_DECODER, parse_footer_tail
from pybloom_async.parquet import chunks as chunks_module
from pybloom_async.parquet import decode as decode_module
from pybloom_async.parquet import thrift_specs as wire
from pybloom_async.parquet.decode import decode_file_metadata_with
from pybloom_async.parquet.scan import scan_footer, schema_span
from pybloom_async.parquet.schema_build import schema_from_elements
from pybloom_async.parquet.thrift import decode_struct
from pybloom_async.types import PhysicalType

#: The agreement property, shared with the fuzz target that explores it (fuzz/targets.py).
targets = pytest.importorskip("fuzz.targets")
_SCHEMA_PASS = wire.decode_args(wire.FileMetaData, ("schema",))


def footer_of(data: bytes) -> bytes:
    location = parse_footer_tail(data, len(data))
    return bytes(location.metadata_bytes(data))


def encode(obj: Any) -> bytes:
    buf = TMemoryBuffer()
    obj.write(TCompactProtocol(buf))
    return bytes(buf.getvalue())


def schema_of(footer: bytes) -> tuple[Any, Any]:
    """The schema and the leaves' raw paths the scanner is given, from the decoder's first
    pass over ``footer``."""
    head = wire.FileMetaData()
    decode_struct(footer, head, _SCHEMA_PASS, what="footer", path=None, decoder=THRIFT_DECODER)
    return schema_from_elements(head.schema, None)


def agree(data: bytes, path: str = "t.parquet") -> str:
    return str(targets.scan_agrees(data, path))


# ---- the corpus ------------------------------------------------------------------------


def corpus_footers(parquet_testing: Path, *more: Path) -> Iterator[tuple[str, bytes]]:
    """The name and footer of every file of the corpus (and of ``more``) whose footer can
    be located."""
    files = sorted((parquet_testing / "data").rglob("*.parquet"))
    files += sorted((parquet_testing / "bad_data").glob("*.parquet"))
    for path in (*files, *more):
        try:
            yield path.name, footer_of(path.read_bytes())
        except ParquetFormatError:
            continue


def test_agrees_on_parquet_testing(parquet_testing: Path) -> None:
    outcomes: dict[str, int] = {}
    for name, footer in corpus_footers(parquet_testing):
        outcome = agree(footer, name)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert outcomes.get("read", 0) > 50, outcomes


def test_agrees_on_engines_files(pyarrow_files: Any, duckdb_files: Any) -> None:
    for path in (*pyarrow_files.files, *duckdb_files.files):
        assert agree(footer_of(path.read_bytes()), path.name) == "read"


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"write_statistics": False},
        {"write_page_index": True},
        {"compression": "none", "use_dictionary": False},
        {"bloom_filter_options": {"s": {"ndv": 10}}, "row_group_size": 3},
        {"store_schema": False, "data_page_version": "2.0"},
    ],
)
def test_agrees_on_pyarrow_layouts(tmp_path: Path, options: dict[str, Any]) -> None:
    table = pa.table(
        {
            "i": pa.array([1, None, 3, 4, 5, 6, 7], pa.int64()),
            "s": ["b", "a", None, "z" * 100, "é", "", "q"],
            "f": [1.5, float("nan"), None, -0.0, 2.0, 3.0, 4.0],
            "l": [[1, 2], None, [], [3], [None], [4, 5, 6], [7]],
            "st": [{"x": i, "y": str(i)} for i in range(7)],
            "b": [True, False, None, True, True, False, True],
            "d": pa.array([b"\xff" * 40] * 7, pa.binary(40)),
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, **options)
    assert agree(footer_of(path.read_bytes())) == "read"


# ---- crafted and mutated footers ----------------------------------------------------------


def _chunk(name: str, ptype: int = PhysicalType.INT64, **md: Any) -> wire.ColumnChunk:
    fields: dict[str, Any] = dict(
        type=ptype,
        encodings=[0],
        path_in_schema=[name.encode()],
        codec=1,
        num_values=10,
        total_uncompressed_size=100,
        total_compressed_size=80,
        data_page_offset=4,
    )
    fields.update(md)
    return wire.ColumnChunk(file_offset=0, meta_data=wire.ColumnMetaData(**fields))


def _footer(chunks: list[wire.ColumnChunk], **overrides: Any) -> bytes:
    fields: dict[str, Any] = dict(
        version=2,
        schema=[
            wire.SchemaElement(name=b"root", num_children=2),
            wire.SchemaElement(name=b"a", type=PhysicalType.INT64, repetition_type=1),
            wire.SchemaElement(name=b"b", type=PhysicalType.BYTE_ARRAY, repetition_type=1),
        ],
        num_rows=10,
        row_groups=[wire.RowGroup(columns=chunks, total_byte_size=200, num_rows=10)],
    )
    fields.update(overrides)
    return encode(wire.FileMetaData(**fields))


def _good_chunks() -> list[wire.ColumnChunk]:
    stats = wire.Statistics(min_value=b"a", max_value=b"z", null_count=2, is_max_value_exact=False)
    return [
        _chunk("a", bloom_filter_offset=500, bloom_filter_length=48),
        _chunk("b", PhysicalType.BYTE_ARRAY, statistics=stats, dictionary_page_offset=4),
    ]


@pytest.mark.parametrize(
    ("chunks", "error"),
    [
        (_good_chunks(), None),
        ([_chunk("a"), _chunk("c", PhysicalType.BYTE_ARRAY)], ParquetFormatError),  # path
        ([_chunk("a"), _chunk("b")], ParquetFormatError),  # type
        ([_chunk("a")], ParquetFormatError),  # one chunk short
        ([_chunk("a"), _chunk("b", PhysicalType.BYTE_ARRAY, num_values=-1)], ParquetFormatError),
        ([_chunk("a"), wire.ColumnChunk(file_offset=0)], ParquetFormatError),  # no meta_data
        (
            [_chunk("a"), _chunk("b", PhysicalType.BYTE_ARRAY, path_in_schema=None)],
            ParquetFormatError,
        ),
        (
            [
                _chunk("a"),
                wire.ColumnChunk(
                    meta_data=_chunk("b", PhysicalType.BYTE_ARRAY).meta_data,
                    crypto_metadata=wire.Empty(),
                ),
            ],
            EncryptedFileError,
        ),
        # The details the rows are placed by: read or missing alike (the decoder's chunks
        # pass does not require them).
        ([_chunk("a", encodings=None), _chunk("b", PhysicalType.BYTE_ARRAY)], None),
        ([_chunk("a", encodings=[]), _chunk("b", PhysicalType.BYTE_ARRAY)], None),
        ([_chunk("a", total_uncompressed_size=None), _chunk("b", PhysicalType.BYTE_ARRAY)], None),
        (
            [
                wire.ColumnChunk(file_path=b"other.parquet", meta_data=_chunk("a").meta_data),
                _chunk("b", PhysicalType.BYTE_ARRAY),
            ],
            None,
        ),
    ],
)
def test_crafted_chunks(chunks: list[wire.ColumnChunk], error: type[Exception] | None) -> None:
    data = _footer(chunks)
    assert agree(data) == ("read" if error is None else "refused")
    if error is None:  # places from the records, or from the chunks where they do not place
        meta = _meta(data)
        try:
            expected = [[c.place for c in _meta(data).load().row_groups[0].columns]]
        except ParquetFormatError:  # a detail the rows need is missing: raised alike
            with pytest.raises(ParquetFormatError, match="is missing"):
                meta.chunk_places([0, 1])
        else:
            assert meta.chunk_places([0, 1]) == expected
    if error is not None:
        meta = decode_file_metadata_with(data, None, THRIFT_DECODER, lazy=True)
        with pytest.raises(error):
            meta.row_groups[0].columns  # noqa: B018 - the decoder's own verdict


def test_statistics_read_from_the_footer() -> None:
    data = _footer(_good_chunks())
    meta = decode_file_metadata_with(data, None, THRIFT_DECODER, lazy=True)
    schema, raw_paths = schema_of(data)
    scan = scan_footer(data, schema, raw_paths, [1], groups=1)
    stats = scan.chunks[0][0].statistics
    assert stats is not None
    assert (stats.min_value, stats.max_value, stats.null_count) == (b"a", b"z", 2)
    assert stats.is_max_value_exact is False and stats.is_min_value_exact is None
    assert scan.chunks[0][0].dictionary_page_offset == 4
    assert scan.num_rows == (10,) and scan.schema_elements == 3
    assert meta.row_groups[0].columns[1].statistics == stats


def test_a_chunks_place_comes_from_the_scan_where_it_holds_it() -> None:
    """A chunk's codec, place and sizes are the scanner's when its record holds them all
    (no chunk's details decoded for them); a chunk that lacks one, or names another file,
    is read from the decoded details, which raise or say so as before."""
    data = _footer(
        [
            _chunk("a", dictionary_page_offset=4, data_page_offset=9),
            _chunk("b", PhysicalType.BYTE_ARRAY, encodings=None),
        ]
    )
    meta = decode_file_metadata_with(data, None, THRIFT_DECODER, lazy=True)
    a, b = (meta.chunks_of([0, 1])[0].columns[leaf] for leaf in (0, 1))
    # Decoding the details would refuse b's missing encodings: a's place is the record's.
    assert (a.codec, a.data_page_offset, a.dictionary_page_offset) == (1, 9, 4)
    assert (a.total_compressed_size, a.total_uncompressed_size, a.file_path) == (80, 100, None)
    with pytest.raises(ParquetFormatError, match="encodings"):
        b.data_page_offset  # noqa: B018 - read from the details, which are refused
    elsewhere = _footer(
        [
            wire.ColumnChunk(file_path=b"other.parquet", meta_data=_chunk("a").meta_data),
            _chunk("b", PhysicalType.BYTE_ARRAY),
        ]
    )
    meta = decode_file_metadata_with(elsewhere, None, THRIFT_DECODER, lazy=True)
    assert meta.chunks_of([0])[0].columns[0].file_path == "other.parquet"


def test_more_row_groups_than_expected() -> None:
    groups = [
        wire.RowGroup(columns=_good_chunks(), total_byte_size=1, num_rows=i) for i in range(5)
    ]
    data = _footer(_good_chunks(), row_groups=groups)
    schema, raw_paths = schema_of(data)
    scan = scan_footer(data, schema, raw_paths, [0], groups=1)  # a second call makes room
    assert scan.num_rows == (0, 1, 2, 3, 4)


def mutated_outcomes(
    data: bytes, seed: int, count: int, check: Callable[[bytes], str]
) -> dict[str, int]:
    """``check`` of ``count`` random changes of one to three bytes of ``data``, its outcomes
    counted."""
    rng = random.Random(seed)
    outcomes: dict[str, int] = {}
    for _ in range(count):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        outcome = check(bytes(mutated))
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    return outcomes


def test_truncations_and_mutations_agree() -> None:
    """Every prefix of a footer, and random byte changes: the same verdict as the decoder."""
    data = _footer(_good_chunks(), key_value_metadata=[wire.KeyValue(key=b"k", value=b"v")])
    for end in range(len(data)):
        agree(data[:end])
    outcomes = mutated_outcomes(data, 30, 1500, agree)
    assert outcomes.get("read", 0) > 100 and outcomes.get("refused", 0) > 10, outcomes


def test_deep_nesting_is_refused_not_a_crash() -> None:
    # An unknown field (id 20) holding lists of lists 100 000 deep: refused at depth 64.
    footer = _footer(_good_chunks())
    crafted = footer[:-1] + b"\x09\x28" + b"\x19" * 100_000 + b"\x09" + b"\x00"
    schema, raw_paths = schema_of(footer)
    with pytest.raises(ParquetFormatError, match="nested too deeply"):
        scan_footer(crafted, schema, raw_paths, [0], groups=1)
    assert agree(crafted) == "head"  # the decoder refuses it too


def test_uuid_fields_are_skipped() -> None:
    # thrift 0.25 reads compact type 13 (a UUID, 16 bytes): an unknown field of that type
    # is skipped by the decoder, so the scanner skips it too (the fuzzer found the scanner
    # refusing such a footer as malformed).
    footer = _footer(_good_chunks())
    crafted = footer[:-1] + b"\x0d\x28" + bytes(range(16)) + b"\x00"
    assert agree(crafted) == "read"


def test_an_empty_list_of_no_thrift_type_is_refused() -> None:
    # thrift refuses a list whose element type is none of its own (14, 15), even an empty
    # one; the scanner read such a list in an unknown field (the page_header fuzz target
    # found it in the compact reader the two decoders share).
    footer = _footer(_good_chunks())
    schema, raw_paths = schema_of(footer)
    for elem in (0x0E, 0x0F):
        crafted = footer[:-1] + b"\x09\x28" + bytes([elem]) + b"\x00"
        with pytest.raises(ParquetFormatError, match="malformed"):
            scan_footer(crafted, schema, raw_paths, [0], groups=1)
        assert agree(crafted) == "head"  # the decoder refuses it too
    uuids = footer[:-1] + b"\x09\x28\x0d\x00"  # an empty list of UUIDs: thrift reads it
    assert agree(uuids) == "read"


def test_nesting_is_limited_as_thrift_limits_it() -> None:
    # Lists nested in an unknown field, the deepest holding an i32: thrift reads 62 of them
    # (it counts the i32 too); the scanner read one more (found through the page_header
    # fuzz target, which shares its compact reader).
    footer = _footer(_good_chunks())
    schema, raw_paths = schema_of(footer)

    def nested(k: int) -> bytes:
        return footer[:-1] + b"\x09\x28" + b"\x19" * (k - 1) + b"\x15\x02" + b"\x00"

    assert scan_footer(nested(62), schema, raw_paths, [0], groups=1).num_rows
    with pytest.raises(ParquetFormatError, match="nested too deeply"):
        scan_footer(nested(63), schema, raw_paths, [0], groups=1)
    assert agree(nested(62)) == "read" and agree(nested(63)) == "head"


# ---- FileMetaData.chunks_of: the scanned chunks in the model -------------------------------


def _meta(data: bytes) -> Any:
    return decode_file_metadata_with(data, "t.parquet", THRIFT_DECODER, lazy=True)


@pytest.mark.parametrize("every_first", [False, True], ids=["scanned", "picked"])
def test_chunks_of_equals_the_decoded_chunks(pyarrow_files: Any, every_first: bool) -> None:
    """Scanned for the leaves wanted, or picked from the records of every leaf scanned
    first (as an object store's footer read scans them)."""
    footer = footer_of(pyarrow_files.files[0].read_bytes())
    meta = _meta(footer)
    leaves = len(meta.schema.columns)
    wanted = (0, leaves // 2, leaves - 1)
    if every_first:
        assert meta.chunk_records(range(leaves)) is not None
    scanned = meta.chunks_of(wanted)
    decoded = _meta(footer).row_groups
    assert [g.index for g in scanned] == [g.index for g in decoded]
    for group, full in zip(scanned, decoded, strict=True):
        assert group.num_rows == full.num_rows
        assert sorted(group.columns) == sorted(set(wanted))
        for i, chunk in group.columns.items():
            other = full.columns[i]
            assert chunk == other and chunk.column == other.column
            assert chunk.statistics == other.statistics
            assert chunk.num_values == other.num_values
            assert chunk.bloom_filter_offset == other.bloom_filter_offset
            assert chunk.bloom_filter_length == other.bloom_filter_length
            assert chunk.data_page_offset == other.data_page_offset  # details: decoded
            for place in (
                "offset_index_offset",
                "offset_index_length",
                "column_index_offset",
                "column_index_length",
            ):
                assert getattr(chunk, place) == getattr(other, place), place
    assert meta.chunks_of(reversed(wanted)) is scanned  # kept per set of leaves


def test_records_of_every_leaf_serve_other_sets_with_no_second_scan(
    pyarrow_files: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    footer = footer_of(pyarrow_files.files[0].read_bytes())
    leaves = len(_meta(footer).schema.columns)
    sets = [(0,), (leaves - 1,), (0, leaves // 2, leaves - 1), tuple(range(1, leaves))]
    direct = {key: _meta(footer).chunk_records(key) for key in sets}
    scans: list[tuple[int, ...]] = []
    real = chunks_module.scan_records

    def counted(*args: Any) -> Any:
        scans.append(tuple(args[3]))
        return real(*args)

    monkeypatch.setattr(chunks_module, "scan_records", counted)
    meta = _meta(footer)
    every = meta.chunk_records(range(leaves))
    assert every is not None and scans == [tuple(range(leaves))]
    for key in sets:
        got, expected = meta.chunk_records(key), direct[key]
        assert got is not None and expected is not None
        assert (got.chunks, got.n_groups, got.width) == (
            expected.chunks,
            expected.n_groups,
            expected.width,
        )
    decoded = _meta(footer).row_groups
    assert every.filter_offsets() == [
        c.bloom_filter_offset
        for g in decoded
        for c in g.columns
        if c.bloom_filter_offset is not None
    ]
    assert meta.chunks_of([0])[0].columns[0] == decoded[0].columns[0]
    assert scans == [tuple(range(leaves))]  # one scan served them all


def test_chunks_of_raises_as_the_decoder_for_any_bad_chunk() -> None:
    # Column b's chunk is bad; a's alone is asked for: the footer is refused all the same,
    # with the decoder's own message, as RowGroup.columns refuses it.
    data = _footer([_chunk("a"), _chunk("b", PhysicalType.BYTE_ARRAY, num_values=-1)])
    with pytest.raises(ParquetFormatError) as decoded:
        _meta(data).row_groups[0].columns  # noqa: B018
    with pytest.raises(ParquetFormatError) as scanned:
        _meta(data).chunks_of([0])
    assert str(scanned.value) == str(decoded.value)


def test_chunks_of_takes_the_decoders_chunks_where_the_scanner_refuses() -> None:
    # Names that are not UTF-8 are compared as decoded (U+FFFD) by the decoder, which
    # accepts this footer; the scanner compares bytes and refuses it: the decoder's
    # chunks are used.
    schema = [
        wire.SchemaElement(name=b"root", num_children=2),
        wire.SchemaElement(name=b"\xff", type=PhysicalType.INT64, repetition_type=1),
        wire.SchemaElement(name=b"b", type=PhysicalType.BYTE_ARRAY, repetition_type=1),
    ]
    chunks = [_chunk("a", path_in_schema=[b"\xfe"]), _good_chunks()[1]]
    data = _footer(chunks, schema=schema)
    assert agree(data) == "read-by-decoder"
    meta = _meta(data)
    group = meta.chunks_of([0, 1])[0]
    assert group.columns[1].statistics == meta.row_groups[0].columns[1].statistics


def test_a_row_groups_list_replaced_by_a_later_one_is_read_by_the_decoder() -> None:
    # Thrift keeps the last value of a field read twice. The first row_groups list has a
    # chunk without its type; the second is whole. The scanner stops at the first (it
    # checks chunks as it meets them) and the decoder reads the second: its chunks are used.
    bad = _footer([_chunk("a", type=None), _good_chunks()[1]])
    good = encode(wire.FileMetaData(row_groups=[wire.RowGroup(
        columns=_good_chunks(), total_byte_size=200, num_rows=10)]))  # fmt: skip
    assert bad[-1] == 0 and good[0] == 0x49 and good[-1] == 0  # field 4 (a list), stop
    # The first encoding's stop dropped; field 4 again (delta 0: the long form), then stop.
    data = bad[:-1] + bytes([0x09, 0x08]) + good[1:-1] + b"\x00"
    assert agree(data) == "read-by-decoder"
    meta = _meta(data)
    group = meta.chunks_of([0, 1])[0]
    assert group.columns[1].statistics == meta.row_groups[0].columns[1].statistics
    assert meta.row_groups[0].columns[0].physical_type == PhysicalType.INT64


def test_a_refused_chunk_before_damage_raises_the_decoders_error() -> None:
    # The scanner refuses the encrypted chunk and stops there; the decoder reads on and
    # trips over the damage after it. Either way the footer is refused, with the
    # decoder's error (the scanner's verdict is never the one raised).
    encrypted = wire.ColumnChunk(meta_data=_chunk("a").meta_data, crypto_metadata=wire.Empty())
    data = _footer([encrypted, _good_chunks()[1]])
    # The second chunk's path_in_schema, a list of one binary (field 3, one after the
    # encodings: 0x19, then 0x18, "b"), made a list of one i32: thrift's decoder refuses
    # its element type.
    at = data.index(b"\x19\x18\x01b")
    damaged = data[: at + 1] + b"\x15" + data[at + 2 :]
    assert agree(damaged) == "refused-otherwise"
    with pytest.raises(ParquetFormatError) as decoded:
        _meta(damaged).row_groups[0].columns  # noqa: B018
    with pytest.raises(ParquetFormatError) as scanned:
        _meta(damaged).chunks_of([0])
    assert str(scanned.value) == str(decoded.value)


def test_pruning_builds_only_the_wanted_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pybloom_async import prune_sync
    from pybloom_async.parquet import chunks

    path = tmp_path / "t.parquet"
    table = pa.table({"id": list(range(40)), "s": [str(i) for i in range(40)], "x": [1.0] * 40})
    pq.write_table(table, path, row_group_size=10, bloom_filter_options={"id": {"ndv": 10}})
    made: list[int] = []
    init = chunks.ColumnChunk.__init__

    def counting(self: Any, *args: Any) -> None:
        made.append(args[1].index)
        init(self, *args)

    monkeypatch.setattr(chunks.ColumnChunk, "__init__", counting)
    # The C evaluator of equalities reads the scanner's records in C memory: no chunk object.
    verdicts = prune_sync(str(path), "id = 13")
    assert [v.kept for v in verdicts] == [False, True, False, False]
    assert made == []
    # The Python evaluator (a range): one chunk per row group, of the predicate's column;
    # the others are not decoded.
    verdicts = prune_sync(str(path), "id = 13 AND id <= 13")
    assert [v.kept for v in verdicts] == [False, True, False, False]
    assert made == [0, 0, 0, 0]


def test_a_refusal_names_the_file_and_the_chunk() -> None:
    from pybloom_async._native import lib, status_text

    data = _footer([_chunk("a"), _chunk("b", PhysicalType.BYTE_ARRAY, num_values=-1)])
    schema, raw_paths = schema_of(data)
    with pytest.raises(ParquetFormatError, match="num_values is negative") as refused:
        scan_footer(data, schema, raw_paths, [0], groups=1, path="x.parquet")
    assert (refused.value.path, refused.value.row_group, refused.value.column) == (
        "x.parquet",
        0,
        "b",
    )
    assert status_text(lib.PBA_FOOTER_ERR_DEPTH) == "structures are nested too deeply"
    assert status_text(lib.PBA_PAIMON_ERR_ARG) == "invalid argument"


# ---- schemas shared by their bytes -------------------------------------------------------


def shared(data: bytes, path: str = "t.parquet") -> str:
    return str(targets.shared_schema_agrees(data, path))


def test_schema_span_is_where_the_scanner_finds_the_schema(
    parquet_testing: Path, pyarrow_files: Any, duckdb_files: Any
) -> None:
    """On every file of the corpus and the engines': the span ``schema_span`` finds is the
    scanner's, and the footer decodes the same with its schema shared or alone."""
    compared = 0
    for name, footer in corpus_footers(parquet_testing, *pyarrow_files.files, *duckdb_files.files):
        if shared(footer, name) == "refused":
            continue
        spans = _meta(footer).head_spans()
        if spans is None:
            continue
        assert schema_span(footer) == spans[0], name
        compared += 1
    assert compared > 50


def test_a_footer_sharing_a_known_schema_is_still_checked_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A schema met before is not decoded again, and the rest of the footer is checked
    as ever: an encrypted, negative, truncated or mismatched footer of a known schema
    raises what it raises decoded alone."""
    first = _meta(_footer(_good_chunks()))
    built: list[object] = []
    real = decode_module.schema_from_elements
    monkeypatch.setattr(
        decode_module, "schema_from_elements", lambda *a: built.append(a) or real(*a)
    )
    other = _meta(_footer(_good_chunks(), num_rows=7))
    assert other.schema is first.schema and other.num_rows == 7
    assert built == []  # its first pass skipped the schema's bytes
    damaged = {
        "encrypted": _footer(_good_chunks(), encryption_algorithm=wire.Empty()),
        "negative": _footer(_good_chunks(), num_rows=-1),
        "no version": _footer(_good_chunks(), version=None),
        "one chunk short": _footer(_good_chunks()[:1]),
    }
    for name, data in damaged.items():
        assert schema_span(data) is not None, name  # the schema's bytes are the known ones
        with pytest.raises((ParquetFormatError, EncryptedFileError)):
            _meta(data).load()
    assert built == []
    for name, data in damaged.items():
        assert shared(data) == "refused", name  # and as the footer decoded alone
    truncated = _footer(_good_chunks())[:-3]
    assert schema_span(truncated) is None  # the walk to the struct's end fails first
    with pytest.raises(ParquetFormatError, match=r"t\.parquet"):
        _meta(truncated)


def test_the_last_of_two_schema_fields_is_the_one_shared() -> None:
    # Thrift keeps the last value of a field read twice: a footer whose schema is followed
    # by another (field 2 again, long form) has the second's schema and its bytes' key.
    data = _footer(_good_chunks())
    elements = [
        wire.SchemaElement(name=b"other_root", num_children=2),
        wire.SchemaElement(name=b"a", type=PhysicalType.INT64, repetition_type=1),
        wire.SchemaElement(name=b"b", type=PhysicalType.BYTE_ARRAY, repetition_type=1),
    ]
    second = encode(wire.FileMetaData(schema=elements))
    assert second[0] == 0x29 and second[-1] == 0  # field 2 (a list), stop
    twice = data[:-1] + bytes([0x09, 0x04]) + second[1:-1] + b"\x00"
    start, length = schema_span(twice)  # type: ignore[misc]
    assert start == len(data) + 1 and twice[start : start + length] == second[1:-1]
    assert shared(twice) == "read"
    assert _meta(twice).schema.root.name == "other_root"
    assert _meta(data).schema.root.name == "root"


def test_schema_span_refuses_damage_cleanly() -> None:
    """Every prefix, random byte changes and a schema list of other elements: a span inside
    the footer or None, and the decoder's verdict whether the schema is shared or not."""
    data = _footer(_good_chunks(), key_value_metadata=[wire.KeyValue(key=b"k", value=b"v")])
    for end in range(len(data)):
        span = schema_span(data[:end])
        assert span is None or span[0] + span[1] <= end
        shared(data[:end])
    outcomes = mutated_outcomes(data, 31, 1000, shared)
    assert outcomes.get("read", 0) > 50 and outcomes.get("refused", 0) > 10, outcomes
    # A schema list of i32s (not structs) is malformed to thrift, so to the span too.
    assert schema_span(bytes([0x29, 0x15, 0x02, 0x00])) is None


def corpus_models(
    parquet_testing: Path, pyarrow_files: Any, duckdb_files: Any
) -> Iterator[tuple[str, Any, Any]]:
    """Each footer of the corpus and of the engines' files that decodes lazily: its name, its
    lazy model, and the same footer decoded whole (None where the decoder refuses it)."""
    for name, footer in corpus_footers(parquet_testing, *pyarrow_files.files, *duckdb_files.files):
        try:
            meta = _meta(footer)
        except (ParquetFormatError, EncryptedFileError):
            continue
        try:
            decoded = _meta(footer).load()
        except (ParquetFormatError, EncryptedFileError):
            decoded = None
        yield name, meta, decoded


def test_chunk_places_are_the_decoded_chunks_places(
    parquet_testing: Path, pyarrow_files: Any, duckdb_files: Any
) -> None:
    """``FileMetaData.chunk_places`` (from the scanner's records, no chunk object made)
    equals each decoded chunk's place, on every file of the corpus and the engines'; where
    the decoder refuses the chunks, it raises too."""
    compared = 0
    for name, meta, decoded in corpus_models(parquet_testing, pyarrow_files, duckdb_files):
        leaves = range(len(meta.schema.columns))
        if decoded is None:
            with pytest.raises((ParquetFormatError, EncryptedFileError)):
                meta.chunk_places(leaves)
            continue
        expected = [[c.place for c in group.columns] for group in decoded.row_groups]
        assert meta.chunk_places(leaves) == expected, name
        for group, places in zip(decoded.row_groups, expected, strict=True):
            for chunk, place in zip(group.columns, places, strict=True):
                assert place == (
                    chunk.codec,
                    chunk.data_page_offset,
                    chunk.dictionary_page_offset,
                    chunk.total_compressed_size,
                    chunk.total_uncompressed_size,
                    chunk.num_values,
                )
        compared += 1
    assert compared > 50


def test_one_chunk_and_offset_indexes_are_the_decoded_chunks(
    parquet_testing: Path, pyarrow_files: Any, duckdb_files: Any
) -> None:
    """``FileMetaData.chunk`` (one chunk made from the records of every leaf) is the decoded
    chunk, field by field, and ``offset_indexed`` says whether a row group's decoded chunks
    record an offset index, on every file of the corpus and the engines'; where the decoder
    refuses the chunks, both raise too. Once every leaf's chunks are made, they serve."""
    compared = 0
    for name, meta, decoded in corpus_models(parquet_testing, pyarrow_files, duckdb_files):
        if decoded is None:
            if meta.row_groups:
                with pytest.raises((ParquetFormatError, EncryptedFileError)):
                    meta.chunk(0, 0)
                with pytest.raises((ParquetFormatError, EncryptedFileError)):
                    meta.offset_indexed(0)
            continue
        for group in decoded.row_groups:
            indexed = any(c.has_offset_index for c in group.columns)
            assert meta.offset_indexed(group.index) == indexed, name
            for leaf, other in enumerate(group.columns):
                chunk = meta.chunk(group.index, leaf)
                assert chunk == other and chunk.column == other.column, name
                assert chunk.place == other.place and chunk.file_path == other.file_path
                assert chunk.has_offset_index == other.has_offset_index
                assert chunk.statistics == other.statistics
        compared += 1
    assert compared > 50
    meta = _meta(footer_of(pyarrow_files.files[0].read_bytes()))
    every = meta.chunks_of(range(len(meta.schema.columns)))
    assert meta.chunk(0, 0) is every[0].columns[0]
