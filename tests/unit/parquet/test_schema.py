"""Tests for rebuilding the schema tree and resolving leaf columns (parquet.schema)."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pybloom_async.errors import (
    ColumnNotFoundError,
    ParquetFormatError,
    PredicateError,
    UnsupportedTypeError,
)
from pybloom_async.parquet import (
    MAX_SCHEMA_DEPTH,
    ColumnDescriptor,
    ConvertedType,
    LogicalKind,
    LogicalType,
    Repetition,
    TimeUnit,
    build_schema,
    decode_file_metadata,
    parse_footer_tail,
)
from pybloom_async.parquet import thrift_specs as wire
from pybloom_async.types import PhysicalType

REQ, OPT, REP = Repetition.REQUIRED, Repetition.OPTIONAL, Repetition.REPEATED
I32, I64, BA = PhysicalType.INT32, PhysicalType.INT64, PhysicalType.BYTE_ARRAY


def group(name: str, children: int, repetition: int | None = REQ, **fields: Any) -> Any:
    return wire.SchemaElement(
        name=name.encode(), num_children=children, repetition_type=repetition, **fields
    )


def leaf(name: str, ptype: int, repetition: int | None = REQ, **fields: Any) -> Any:
    return wire.SchemaElement(name=name.encode(), type=ptype, repetition_type=repetition, **fields)


def logical(**member: Any) -> wire.LogicalType:
    return wire.LogicalType(**member)


def unit(name: str) -> wire.TimeUnit:
    return wire.TimeUnit(**{name: wire.Empty()})


def nested_elements() -> list[Any]:
    """root { id; optional group s { a; b }; tags LIST<string>; m MAP<string, int> }."""
    return [
        group("root", 4, repetition=None),
        leaf("id", I64),
        group("s", 2, OPT),
        leaf("a", I32, OPT),
        leaf("b", BA, REQ, converted_type=ConvertedType.UTF8),
        group(
            "tags",
            1,
            OPT,
            converted_type=ConvertedType.LIST,
            logicalType=logical(LIST=wire.Empty()),
        ),
        group("list", 1, REP),
        leaf("element", BA, OPT, logicalType=logical(STRING=wire.Empty())),
        group("m", 1, OPT, converted_type=ConvertedType.MAP),
        group("key_value", 2, REP),
        leaf("key", BA, REQ, logicalType=logical(STRING=wire.Empty())),
        leaf("value", I32, OPT),
    ]


def test_nested_schema_paths_and_levels() -> None:
    schema = build_schema(nested_elements())
    rows = [
        (
            c.index,
            c.path,
            c.physical_type,
            c.repetition,
            c.max_definition_level,
            c.max_repetition_level,
        )
        for c in schema.columns
    ]
    assert rows == [
        (0, "id", I64, REQ, 0, 0),
        (1, "s.a", I32, OPT, 2, 0),
        (2, "s.b", BA, REQ, 1, 0),
        (3, "tags.list.element", BA, OPT, 3, 1),
        (4, "m.key_value.key", BA, REQ, 2, 1),
        (5, "m.key_value.value", I32, OPT, 3, 1),
    ]
    assert schema.columns[2].logical_type == LogicalType(LogicalKind.STRING)
    assert schema.columns[2].logical_type.legacy
    assert schema.columns[2].converted_type is ConvertedType.UTF8
    root = schema.root
    assert root.name == "root" and root.repetition is None and not root.is_leaf
    assert [child.name for child in root.children] == ["id", "s", "tags", "m"]
    tags = root.children[2]
    assert tags.logical_type == LogicalType(LogicalKind.LIST)
    assert root.children[3].logical_type == LogicalType(LogicalKind.MAP)
    assert tags.children[0].children[0].is_leaf
    assert len(schema) == 6 and list(schema) == list(schema.columns)


def test_column_lookup() -> None:
    schema = build_schema(nested_elements())
    assert schema.column("s.a").index == 1
    assert schema.column(("tags", "list", "element")).index == 3
    assert schema.column(["m", "key_value", "value"]).index == 5
    assert "s.b" in schema and ("s", "b") in schema
    assert "s" not in schema and 3 not in schema
    with pytest.raises(PredicateError, match="no leaf column") as info:
        schema.column("nope")
    assert "tags.list.element" in str(info.value)


def test_leaves_under_column_names() -> None:
    schema = build_schema(nested_elements())
    assert schema.leaves_under(["id"]) == (0,)
    assert schema.leaves_under(["s"]) == (1, 2)  # a top-level column: all its leaves
    assert schema.leaves_under(["m", "s.b"]) == (2, 4, 5)  # in file order
    assert schema.leaves_under(["tags.list"]) == (3,)
    assert schema.leaves_under(["s.a.x", "nope", "i"]) == ()  # no prefix match of a name
    assert schema.leaves_under(("m", "s.b")) is schema.leaves_under(["m", "s.b"])  # once


def test_dotted_names_are_ambiguous_only_as_text() -> None:
    schema = build_schema(
        [
            group("root", 2, None),
            leaf("a.b", I32),
            group("a", 1),
            leaf("b", I32),
        ]
    )
    assert schema.column(("a.b",)).index == 0
    assert schema.column(("a", "b")).index == 1
    with pytest.raises(PredicateError, match="several columns"):
        schema.column("a.b")


def test_the_schema_raises_its_own_error_a_predicate_error() -> None:
    """The parquet layer names the missing column without knowing what a predicate is."""
    schema = build_schema(nested_elements())
    with pytest.raises(ColumnNotFoundError, match="no leaf column"):
        schema.column("nope")
    assert issubclass(ColumnNotFoundError, PredicateError)


# Legacy ConvertedType -> resolved logical type (LogicalTypes.md backward
# compatibility tables).
LEGACY = [
    (ConvertedType.UTF8, BA, LogicalType(LogicalKind.STRING)),
    (ConvertedType.ENUM, BA, LogicalType(LogicalKind.ENUM)),
    (ConvertedType.JSON, BA, LogicalType(LogicalKind.JSON)),
    (ConvertedType.BSON, BA, LogicalType(LogicalKind.BSON)),
    (ConvertedType.DATE, I32, LogicalType(LogicalKind.DATE)),
    (ConvertedType.TIME_MILLIS, I32, LogicalType.time(TimeUnit.MILLIS, True)),
    (ConvertedType.TIME_MICROS, I64, LogicalType.time(TimeUnit.MICROS, True)),
    (ConvertedType.TIMESTAMP_MILLIS, I64, LogicalType.timestamp(TimeUnit.MILLIS, True)),
    (ConvertedType.TIMESTAMP_MICROS, I64, LogicalType.timestamp(TimeUnit.MICROS, True)),
    (ConvertedType.INT_8, I32, LogicalType.integer(8, True)),
    (ConvertedType.INT_16, I32, LogicalType.integer(16, True)),
    (ConvertedType.INT_32, I32, LogicalType.integer(32, True)),
    (ConvertedType.INT_64, I64, LogicalType.integer(64, True)),
    (ConvertedType.UINT_8, I32, LogicalType.integer(8, False)),
    (ConvertedType.UINT_16, I32, LogicalType.integer(16, False)),
    (ConvertedType.UINT_32, I32, LogicalType.integer(32, False)),
    (ConvertedType.UINT_64, I64, LogicalType.integer(64, False)),
    (ConvertedType.INTERVAL, PhysicalType.FIXED_LEN_BYTE_ARRAY, LogicalType(LogicalKind.INTERVAL)),
]


@pytest.mark.parametrize(("converted", "ptype", "expected"), LEGACY)
def test_legacy_converted_types(converted: int, ptype: int, expected: LogicalType) -> None:
    fields = {"type_length": 12} if ptype == PhysicalType.FIXED_LEN_BYTE_ARRAY else {}
    (column,) = build_schema(
        [group("r", 1), leaf("c", ptype, converted_type=converted, **fields)]
    ).columns
    assert column.logical_type == expected
    assert column.logical_type is not None and column.logical_type.legacy
    assert column.converted_type is converted


def test_legacy_decimal_reads_scale_and_precision() -> None:
    (column,) = build_schema(
        [group("r", 1), leaf("d", I64, converted_type=ConvertedType.DECIMAL, precision=18, scale=4)]
    ).columns
    assert column.logical_type == LogicalType.decimal(18, 4)
    # LogicalTypes.md: "If not specified, the scale is 0."
    (column,) = build_schema(
        [group("r", 1), leaf("d", I32, converted_type=ConvertedType.DECIMAL, precision=9)]
    ).columns
    assert column.logical_type == LogicalType.decimal(9, 0)
    with pytest.raises(ParquetFormatError, match="without precision"):
        build_schema([group("r", 1), leaf("d", I32, converted_type=ConvertedType.DECIMAL)])


def test_unknown_converted_type_is_ignored_but_kept() -> None:
    (column,) = build_schema([group("r", 1), leaf("c", I32, converted_type=99)]).columns
    assert column.logical_type is None and column.converted_type == 99


MODERN = [
    (dict(STRING=wire.Empty()), BA, LogicalType(LogicalKind.STRING)),
    (dict(ENUM=wire.Empty()), BA, LogicalType(LogicalKind.ENUM)),
    (dict(JSON=wire.Empty()), BA, LogicalType(LogicalKind.JSON)),
    (dict(BSON=wire.Empty()), BA, LogicalType(LogicalKind.BSON)),
    (dict(UUID=wire.Empty()), PhysicalType.FIXED_LEN_BYTE_ARRAY, LogicalType(LogicalKind.UUID)),
    (
        dict(FLOAT16=wire.Empty()),
        PhysicalType.FIXED_LEN_BYTE_ARRAY,
        LogicalType(LogicalKind.FLOAT16),
    ),
    (dict(DATE=wire.Empty()), I32, LogicalType(LogicalKind.DATE)),
    (dict(UNKNOWN=wire.Empty()), I32, LogicalType(LogicalKind.UNKNOWN)),
    (dict(VARIANT=wire.Empty()), BA, LogicalType(LogicalKind.VARIANT)),
    (dict(GEOMETRY=wire.Empty()), BA, LogicalType(LogicalKind.GEOMETRY)),
    (dict(GEOGRAPHY=wire.Empty()), BA, LogicalType(LogicalKind.GEOGRAPHY)),
    (dict(DECIMAL=wire.DecimalType(scale=2, precision=10)), I64, LogicalType.decimal(10, 2)),
    (
        dict(TIME=wire.TimeType(isAdjustedToUTC=False, unit=unit("NANOS"))),
        I64,
        LogicalType.time(TimeUnit.NANOS, False),
    ),
    (
        dict(TIMESTAMP=wire.TimeType(isAdjustedToUTC=True, unit=unit("MILLIS"))),
        I64,
        LogicalType.timestamp(TimeUnit.MILLIS, True),
    ),
    (
        dict(TIMESTAMP=wire.TimeType(isAdjustedToUTC=False, unit=unit("NANOS"))),
        I64,
        LogicalType.timestamp(TimeUnit.NANOS, False),
    ),
    (dict(INTEGER=wire.IntType(bitWidth=16, isSigned=False)), I32, LogicalType.integer(16, False)),
    # A TimeUnit member newer than this library, and a union with no member we
    # know: both unsupported features, not errors (LogicalTypes.md).
    (
        dict(TIMESTAMP=wire.TimeType(isAdjustedToUTC=True, unit=wire.TimeUnit())),
        I64,
        LogicalType(LogicalKind.UNRECOGNIZED),
    ),
    (dict(), BA, LogicalType(LogicalKind.UNRECOGNIZED)),
]


@pytest.mark.parametrize(("member", "ptype", "expected"), MODERN)
def test_logical_types(member: dict[str, Any], ptype: int, expected: LogicalType) -> None:
    fields = {"type_length": 16} if ptype == PhysicalType.FIXED_LEN_BYTE_ARRAY else {}
    (column,) = build_schema(
        [group("r", 1), leaf("c", ptype, logicalType=logical(**member), **fields)]
    ).columns
    assert column.logical_type == expected
    assert column.logical_type is not None and not column.logical_type.legacy


def test_logical_type_wins_over_converted_type() -> None:
    # A local-time timestamp must also carry TIMESTAMP_MICROS for old readers
    # (LogicalTypes.md); the logical type's isAdjustedToUTC = false is the truth.
    (column,) = build_schema(
        [
            group("r", 1),
            leaf(
                "t",
                I64,
                converted_type=ConvertedType.TIMESTAMP_MICROS,
                logicalType=logical(
                    TIMESTAMP=wire.TimeType(isAdjustedToUTC=False, unit=unit("MICROS"))
                ),
            ),
        ]
    ).columns
    assert column.logical_type == LogicalType.timestamp(TimeUnit.MICROS, False)


@pytest.mark.parametrize(
    ("elements", "message"),
    [
        ([], "empty"),
        ([leaf("r", I32)], "primitive column"),
        ([group("r", -1)], "negative num_children"),
        ([group("r", 2), leaf("a", I32)], "num_children is 2 but only 1"),
        ([group("r", 1), group("g", 2), leaf("a", I32)], "num_children is 2 but only 1"),
        ([group("r", 2), group("g", 1), leaf("a", I32)], "declares more children"),
        (
            [group("r", 2), group("g", 1), leaf("a", I32), leaf("b", I32), leaf("c", I32)],
            "follow the root's last child",
        ),
        ([group("r", 1), wire.SchemaElement(type=I32)], "has no name"),
        ([group("r", 1), leaf("f", PhysicalType.FIXED_LEN_BYTE_ARRAY)], "type_length"),
        (
            [group("r", 1), leaf("f", PhysicalType.FIXED_LEN_BYTE_ARRAY, type_length=-1)],
            "type_length",
        ),
        ([group("r", 1), leaf("x", 8)], "unknown physical type 8"),
        ([group("r", 1), leaf("x", I32, repetition=3)], "repetition type 3"),
        (
            [
                group("r", 1),
                leaf("x", I32, logicalType=logical(STRING=wire.Empty(), JSON=wire.Empty())),
            ],
            "2 members set",
        ),
        (
            [group("r", 1), leaf("x", I32, logicalType=logical(INTEGER=wire.IntType(bitWidth=8)))],
            "without bitWidth or isSigned",
        ),
        (
            [group("r", 1), leaf("x", I32, logicalType=logical(DECIMAL=wire.DecimalType(scale=1)))],
            "without scale or precision",
        ),
    ],
)
def test_invalid_schemas(elements: list[Any], message: str) -> None:
    with pytest.raises(ParquetFormatError, match=message) as info:
        build_schema(elements, path="s.parquet")
    assert "s.parquet" in str(info.value)


def test_leaf_with_zero_children_and_empty_group() -> None:
    schema = build_schema(
        [
            group("r", 2),
            leaf("a", I32, num_children=0),  # some writers set 0 on leaves
            wire.SchemaElement(name=b"empty", repetition_type=OPT),  # a group without children
        ]
    )
    assert [c.path for c in schema.columns] == ["a"]
    assert schema.root.children[1].children == ()
    assert build_schema([group("r", 0)]).columns == ()


def test_missing_repetition_defaults_to_required() -> None:
    (column,) = build_schema([group("r", 1), leaf("a", I32, repetition=None)]).columns
    assert column.repetition is REQ and column.max_definition_level == 0


def test_flba_type_length_and_bit_width_hint() -> None:
    schema = build_schema(
        [
            group("r", 2),
            leaf("f", PhysicalType.FIXED_LEN_BYTE_ARRAY, type_length=16),
            leaf("i", I32, type_length=3),  # on other types a bit-width hint only
        ]
    )
    assert [c.type_length for c in schema.columns] == [16, None]


def _chain(depth: int) -> list[Any]:
    return [group("r", 1, None)] + [group(f"g{i}", 1) for i in range(depth - 1)] + [leaf("x", I32)]


def test_depth_limit() -> None:
    (column,) = build_schema(_chain(MAX_SCHEMA_DEPTH)).columns
    assert len(column.path_parts) == MAX_SCHEMA_DEPTH
    repr(build_schema(_chain(MAX_SCHEMA_DEPTH)))  # the recursive repr stays in bounds
    with pytest.raises(ParquetFormatError, match="nested deeper than"):
        build_schema(_chain(MAX_SCHEMA_DEPTH + 1))


def test_hostile_counts_are_linear() -> None:
    # 200 000 elements whose num_children lie in every way: each is rejected
    # without recursion and in time linear in the list.
    many = [group("r", 200_000)] + [leaf(f"c{i}", I32) for i in range(199_999)]
    started = time.perf_counter()
    with pytest.raises(ParquetFormatError):
        build_schema(many)
    deep = [group("r", 1)] + [group("g", 1) for _ in range(200_000)]
    with pytest.raises(ParquetFormatError):
        build_schema(deep)
    wide = [group("r", 100_000)] + [leaf(f"c{i}", I32) for i in range(100_000)]
    assert len(build_schema(wide)) == 100_000
    # A bound against quadratic work (hours at these sizes), not a timing: about 2 s on
    # a quiet machine, it passed 10 s on a shared one under load.
    assert time.perf_counter() - started < 60


def test_column_descriptor_of() -> None:
    column = ColumnDescriptor.of("int64", LogicalType.integer(64, False), path="a.b")
    assert column.physical_type is I64 and column.path_parts == ("a", "b")
    assert column.path == "a.b" and column.index == 0
    with pytest.raises(UnsupportedTypeError):
        ColumnDescriptor.of("int128")


def test_logical_type_text() -> None:
    assert str(LogicalType.decimal(10, 2)) == "DECIMAL(10, 2)"
    assert str(LogicalType.timestamp(TimeUnit.NANOS, False)) == "TIMESTAMP(NANOS, utc=False)"
    assert str(LogicalType.integer(8, False)) == "UINT(8)"
    assert str(LogicalType(LogicalKind.STRING)) == "STRING"
    assert TimeUnit.MICROS.per_second == 1_000_000


# --- against pyarrow --------------------------------------------------------------

# LogicalKind -> pyarrow's LogicalType.type name.
PYARROW_NAMES = {
    None: "NONE",
    LogicalKind.INTEGER: "INT",
    LogicalKind.UNRECOGNIZED: "UNDEFINED",
}


def _assert_schema_matches_pyarrow(path: Path, name: str) -> int:
    data = path.read_bytes()
    location = parse_footer_tail(data, len(data))
    md = decode_file_metadata(location.metadata_bytes(data), path=name)
    theirs = pq.ParquetFile(path).metadata.schema
    for column in md.schema.columns:
        other = theirs.column(column.index)
        where = (name, column.path)
        assert column.path == other.path, where
        assert column.max_definition_level == other.max_definition_level, where
        assert column.max_repetition_level == other.max_repetition_level, where
        lt = column.logical_type
        kind = lt.kind if lt is not None else None
        assert PYARROW_NAMES.get(kind, kind.name if kind else "NONE") == other.logical_type.type, (
            where
        )
        if lt is not None and lt.kind is LogicalKind.DECIMAL:
            assert (lt.precision, lt.scale) == (other.precision, other.scale), where
        if column.physical_type is PhysicalType.FIXED_LEN_BYTE_ARRAY:
            assert column.type_length == other.length, where
        if lt is not None and lt.kind in (LogicalKind.TIME, LogicalKind.TIMESTAMP):
            theirs_lt = json.loads(other.logical_type.to_json())
            assert lt.is_adjusted_to_utc == theirs_lt["isAdjustedToUTC"], where
            assert lt.unit is not None
            units = {TimeUnit.MILLIS: "milliseconds", TimeUnit.MICROS: "microseconds"}
            assert units.get(lt.unit, "nanoseconds") == theirs_lt["timeUnit"], where
    return len(md.schema.columns)


def test_corpus_schemas_match_pyarrow(parquet_testing: Path) -> None:
    checked = 0
    for path in sorted((parquet_testing / "data").glob("*.parquet")):
        if path.name == "incorrect_map_schema.parquet":  # pyarrow refuses its map
            continue
        checked += _assert_schema_matches_pyarrow(path, path.name)
    assert checked > 500


def test_pyarrow_written_schema_matches(tmp_path: Path) -> None:
    table = pa.table(
        {
            "i8": pa.array([1], pa.int8()),
            "u16": pa.array([1], pa.uint16()),
            "u32": pa.array([1], pa.uint32()),
            "u64": pa.array([1], pa.uint64()),
            "f16": pa.array([1.0], pa.float16()),
            "d32": pa.array([1], pa.decimal128(7, 2)),
            "d_big": pa.array([1], pa.decimal128(30, 5)),
            "date": pa.array([dt.date(2024, 1, 1)]),
            "t_ms": pa.array([dt.time(1)], pa.time32("ms")),
            "t_ns": pa.array([dt.time(1)], pa.time64("ns")),
            "ts_utc": pa.array([dt.datetime(2024, 1, 1)], pa.timestamp("us", tz="UTC")),
            "ts_local": pa.array([dt.datetime(2024, 1, 1)], pa.timestamp("ms")),
            "s": pa.array(["x"]),
            "b": pa.array([b"x"]),
            "fixed": pa.array([b"abc"], pa.binary(3)),
            "lst": pa.array([[1, 2]]),
            "mp": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int32())),
            "st": pa.array([{"x": 1, "y": "z"}]),
            "uuid": pa.array([b"0123456789abcdef"], pa.uuid()),
        }
    )
    path = tmp_path / "types.parquet"
    pq.write_table(table, path)
    assert _assert_schema_matches_pyarrow(path, path.name) == 21
    data = path.read_bytes()
    md = decode_file_metadata(parse_footer_tail(data, len(data)).metadata_bytes(data))
    schema = md.schema
    assert schema.column("u32").logical_type == LogicalType.integer(32, False)
    assert schema.column("u32").physical_type is I32
    assert schema.column("ts_local").logical_type == LogicalType.timestamp(TimeUnit.MILLIS, False)
    assert schema.column("uuid").logical_type == LogicalType(LogicalKind.UUID)
    assert schema.column("d_big").physical_type is PhysicalType.FIXED_LEN_BYTE_ARRAY
    assert schema.column("lst.list.element").max_repetition_level == 1
    assert [c.path for c in schema.columns if c.path.startswith("mp.")] == [
        "mp.key_value.key",
        "mp.key_value.value",
    ]


def test_schema_from_a_footer_builds_its_tree_on_first_use() -> None:
    from pybloom_async.parquet.schema_build import schema_from_elements

    elements = nested_elements()
    eager = build_schema(elements)
    lazy, raw_paths = schema_from_elements(elements, "f.parquet")
    assert lazy.columns == eager.columns
    assert raw_paths == [[p.encode() for p in c.path_parts] for c in eager.columns]
    assert lazy.root == eager.root  # built now
    assert lazy == eager and hash(lazy) == hash(eager)
    assert lazy.root is lazy.root
    assert "Schema(root=SchemaNode(name='root'" in repr(lazy)
    # A group's annotation is checked when the leaves are built, tree or not.
    bad = [group("r", 1), group("g", 1, converted_type=ConvertedType.DECIMAL), leaf("x", I32)]
    with pytest.raises(ParquetFormatError, match="DECIMAL converted type without precision"):
        schema_from_elements(bad, "f.parquet")


def test_column_lookup_by_path_after_the_first() -> None:
    schema = build_schema(nested_elements())
    for column in schema.columns:
        assert schema.column(column.path) is column
        assert schema.column(column.path) is column  # from the index built by the first
    with pytest.raises(PredicateError):
        schema.column("s")
