"""Thrift specs for the subset of ``parquet.thrift`` that pybloom-async reads.

The classes below follow the layout of thrift's generated Python code: a
class per struct with a ``thrift_spec`` tuple indexed by field id, where each
entry is ``(field_id, ttype, attribute, type_arguments, default)``. The
``thrift`` package's compact-protocol decoder (its ``fastbinary`` C extension,
or the pure-Python protocol, see :data:`.thrift.THRIFT_DECODER`) fills them in.
Only the fields we use are listed; every other field id maps to ``None`` (or
lies past the end of the tuple), and the decoder skips such fields without
building anything for them.

Field ids, types and names are those of apache/parquet-format
``src/main/thrift/parquet.thrift``. Strings are declared ``BINARY`` so that the
decoder hands us bytes: what invalid UTF-8 becomes (a clear error, or a
replacement character) is decided by the code that reads the field, not by a
``UnicodeDecodeError`` from inside the decoder.

These classes are raw wire shapes with every field optional; :mod:`.decode`
checks them and turns them into the package's immutable, typed objects. Nothing
outside ``pybloom_async.parquet`` should use them. The footer's structs are here, with
the base struct and the spec builders; the page structs (page headers, the page index)
are :mod:`.page_specs`.

The specs below are the subset a writer of the tests' footers needs, and the
widest a decoder may read. :mod:`.decode` decodes a footer in passes that each
read less (:func:`decode_args` derives them): the C decoder skips the fields a
spec leaves out without building a Python object for them, and building those
objects, not reading bytes, is what a decode costs.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any, ClassVar

from thrift.protocol.TBase import TBase
from thrift.Thrift import TType


class Struct(SimpleNamespace, TBase):  # type: ignore[misc]  # thrift has no type hints
    """Base of the wire structs: fields absent from the wire read as ``None``.

    The C decoder builds nested structs by calling the class with one keyword
    argument per field it found; ``SimpleNamespace`` stores them in C, which
    measured about twice as fast as a Python ``__init__`` on footers with
    hundreds of thousands of column chunks. Fields it did not find fall back to
    the class attributes, all ``None``. The pure-Python decoder instead calls the
    class with no arguments and then ``TBase.read``, which sets attributes.
    """

    thrift_spec: ClassVar[tuple[Any, ...]] = ()


def install_spec(cls: type[Struct], *fields: tuple[int, int, str, Any]) -> None:
    """Install ``cls.thrift_spec``, a tuple indexed by field id.

    ``fields`` are ``(field_id, ttype, attribute, type_arguments)``; the spec is
    a tuple indexed by field id, ``None`` where a field is not read.
    """
    size = max((f[0] for f in fields), default=0) + 1
    table: list[tuple[int, int, str, Any, None] | None] = [None] * size
    for fid, ttype, name, args in fields:
        if getattr(cls, name, "missing") is not None:
            raise AssertionError(f"{cls.__name__}.{name} has no None default")
        table[fid] = (fid, ttype, name, args, None)
    cls.thrift_spec = tuple(table)


def struct_args(cls: type[Struct]) -> list[Any]:
    # The decoder's type arguments for a struct field: [class, spec].
    return [cls, cls.thrift_spec]


def list_of(ttype: int, args: Any = None) -> tuple[int, Any, bool]:
    """The decoder's type arguments of a ``list<ttype>`` (``args``: the elements' own)."""
    return _list_of(ttype, args)


def decode_args(cls: type[Struct], keep: Iterable[str] | None = None, **args: Any) -> list[Any]:
    """The decoder's type arguments (``[class, spec]``) for a subset of ``cls``'s fields.

    Parameters
    ----------
    cls:
        A wire struct; the decoder builds it with one keyword argument per field
        found, so fields it does not read keep the class default, ``None``.
    keep:
        The fields to read (default: all of the spec's); the decoder skips the
        others.
    args:
        New type arguments for some kept fields, e.g. ``meta_data=[Other, spec]``
        to build a nested struct as another class or from a smaller spec.

    Raises
    ------
    AssertionError
        A name is not a field of ``cls``'s spec (a misspelt field would
        otherwise be silently skipped).
    """
    names = {entry[2] for entry in cls.thrift_spec if entry is not None}
    wanted = names if keep is None else set(keep)
    unknown = (wanted | set(args)) - names
    if unknown:
        raise AssertionError(f"{cls.__name__} has no fields {sorted(unknown)}")
    if set(args) - wanted:
        raise AssertionError(f"{cls.__name__}: type arguments given for unread fields")
    spec: list[Any] = []
    for entry in cls.thrift_spec:
        if entry is None or entry[2] not in wanted:
            spec.append(None)
        elif entry[2] in args:
            spec.append((entry[0], entry[1], entry[2], args[entry[2]], entry[4]))
        else:
            spec.append(entry)
    while spec and spec[-1] is None:  # ids past the end are skipped all the same
        spec.pop()
    return [cls, tuple(spec)]


def _list_of(ttype: int, args: Any = None) -> tuple[int, Any, bool]:
    # (element ttype, element type arguments, immutable?) -- immutable would
    # give tuples, but the pure-Python decoder ignores it for structs, so we
    # ask for lists everywhere and convert once in decode.py.
    return (ttype, args, False)


BINARY = "BINARY"


class Empty(Struct):
    """An empty struct (``StringType``, ``MilliSeconds``...), read for its presence."""


class Union(Struct):
    """Base of thrift unions; exactly one member should be set."""

    def members_set(self) -> list[str]:
        """Names of the members present on the wire, in the spec's order."""
        # Only fields found on the wire are ever stored on the instance (the
        # rest fall back to the class's None), so this is usually one item.
        found = [name for name, value in vars(self).items() if value is not None]
        if len(found) > 1:
            order = {f[2]: f[0] for f in self.thrift_spec if f is not None}
            found.sort(key=lambda name: order.get(name, len(order)))
        return found


class TimeUnit(Union):
    """``union TimeUnit``."""

    MILLIS: Empty | None = None
    MICROS: Empty | None = None
    NANOS: Empty | None = None


class DecimalType(Struct):
    """``struct DecimalType``."""

    scale: int | None = None
    precision: int | None = None


class TimeType(Struct):
    """``struct TimeType``; ``struct TimestampType`` has the same fields and ids."""

    isAdjustedToUTC: bool | None = None
    unit: TimeUnit | None = None


class IntType(Struct):
    """``struct IntType``."""

    bitWidth: int | None = None
    isSigned: bool | None = None


class LogicalType(Union):
    """``union LogicalType``; members 16-19 are recognised by presence only."""

    STRING: Empty | None = None
    MAP: Empty | None = None
    LIST: Empty | None = None
    ENUM: Empty | None = None
    DECIMAL: DecimalType | None = None
    DATE: Empty | None = None
    TIME: TimeType | None = None
    TIMESTAMP: TimeType | None = None
    INTEGER: IntType | None = None
    UNKNOWN: Empty | None = None
    JSON: Empty | None = None
    BSON: Empty | None = None
    UUID: Empty | None = None
    FLOAT16: Empty | None = None
    VARIANT: Empty | None = None
    GEOMETRY: Empty | None = None
    GEOGRAPHY: Empty | None = None
    VECTOR: Empty | None = None


class SchemaElement(Struct):
    """``struct SchemaElement``."""

    type: int | None = None
    type_length: int | None = None
    repetition_type: int | None = None
    name: bytes | None = None
    num_children: int | None = None
    converted_type: int | None = None
    scale: int | None = None
    precision: int | None = None
    field_id: int | None = None
    logicalType: LogicalType | None = None


class Statistics(Struct):
    """``struct Statistics``."""

    max: bytes | None = None
    min: bytes | None = None
    null_count: int | None = None
    distinct_count: int | None = None
    max_value: bytes | None = None
    min_value: bytes | None = None
    is_max_value_exact: bool | None = None
    is_min_value_exact: bool | None = None
    nan_count: int | None = None


class PageEncodingStats(Struct):
    """``struct PageEncodingStats``."""

    page_type: int | None = None
    encoding: int | None = None
    count: int | None = None


class SizeStatistics(Struct):
    """``struct SizeStatistics``: a chunk's unencoded sizes and level histograms."""

    unencoded_byte_array_data_bytes: int | None = None
    repetition_level_histogram: list[int] | None = None
    definition_level_histogram: list[int] | None = None


class ColumnMetaData(Struct):
    """``struct ColumnMetaData`` (without its key/value metadata and geospatial statistics)."""

    type: int | None = None
    encodings: list[int] | None = None
    path_in_schema: list[bytes] | None = None
    codec: int | None = None
    num_values: int | None = None
    total_uncompressed_size: int | None = None
    total_compressed_size: int | None = None
    data_page_offset: int | None = None
    index_page_offset: int | None = None
    dictionary_page_offset: int | None = None
    statistics: Statistics | None = None
    encoding_stats: list[PageEncodingStats] | None = None
    bloom_filter_offset: int | None = None
    bloom_filter_length: int | None = None
    size_statistics: SizeStatistics | None = None


class ColumnChunk(Struct):
    """``struct ColumnChunk``; ``crypto_metadata`` is read for its presence only."""

    file_path: bytes | None = None
    file_offset: int | None = None
    meta_data: ColumnMetaData | None = None
    offset_index_offset: int | None = None
    offset_index_length: int | None = None
    column_index_offset: int | None = None
    column_index_length: int | None = None
    crypto_metadata: Empty | None = None


class RowGroup(Struct):
    """``struct RowGroup`` (without ``sorting_columns``)."""

    columns: list[ColumnChunk] | None = None
    total_byte_size: int | None = None
    num_rows: int | None = None
    file_offset: int | None = None
    total_compressed_size: int | None = None
    ordinal: int | None = None


class KeyValue(Struct):
    """``struct KeyValue``."""

    key: bytes | None = None
    value: bytes | None = None


class FileMetaData(Struct):
    """``struct FileMetaData``; ``encryption_algorithm`` is read for its presence only."""

    version: int | None = None
    schema: list[SchemaElement] | None = None
    num_rows: int | None = None
    row_groups: list[RowGroup] | None = None
    key_value_metadata: list[KeyValue] | None = None
    created_by: bytes | None = None
    encryption_algorithm: Empty | None = None


# Specs are installed leaves first, so that a struct's spec can embed the
# (already complete) specs of the structs it contains.
_EMPTY = struct_args(Empty)

install_spec(
    TimeUnit,
    (1, TType.STRUCT, "MILLIS", _EMPTY),
    (2, TType.STRUCT, "MICROS", _EMPTY),
    (3, TType.STRUCT, "NANOS", _EMPTY),
)
install_spec(DecimalType, (1, TType.I32, "scale", None), (2, TType.I32, "precision", None))
install_spec(
    TimeType,
    (1, TType.BOOL, "isAdjustedToUTC", None),
    (2, TType.STRUCT, "unit", struct_args(TimeUnit)),
)
# bitWidth is an i8 on the wire (parquet.thrift `1: required i8 bitWidth`).
install_spec(IntType, (1, TType.BYTE, "bitWidth", None), (2, TType.BOOL, "isSigned", None))
install_spec(
    LogicalType,
    (1, TType.STRUCT, "STRING", _EMPTY),
    (2, TType.STRUCT, "MAP", _EMPTY),
    (3, TType.STRUCT, "LIST", _EMPTY),
    (4, TType.STRUCT, "ENUM", _EMPTY),
    (5, TType.STRUCT, "DECIMAL", struct_args(DecimalType)),
    (6, TType.STRUCT, "DATE", _EMPTY),
    (7, TType.STRUCT, "TIME", struct_args(TimeType)),
    (8, TType.STRUCT, "TIMESTAMP", struct_args(TimeType)),
    # 9 is reserved for INTERVAL, which has no LogicalType member.
    (10, TType.STRUCT, "INTEGER", struct_args(IntType)),
    (11, TType.STRUCT, "UNKNOWN", _EMPTY),
    (12, TType.STRUCT, "JSON", _EMPTY),
    (13, TType.STRUCT, "BSON", _EMPTY),
    (14, TType.STRUCT, "UUID", _EMPTY),
    (15, TType.STRUCT, "FLOAT16", _EMPTY),
    # The members below carry parameters we do not need (a spec version, a CRS,
    # an edge algorithm); reading them as Empty skips those fields.
    (16, TType.STRUCT, "VARIANT", _EMPTY),
    (17, TType.STRUCT, "GEOMETRY", _EMPTY),
    (18, TType.STRUCT, "GEOGRAPHY", _EMPTY),
    (19, TType.STRUCT, "VECTOR", _EMPTY),
)
install_spec(
    SchemaElement,
    (1, TType.I32, "type", None),
    (2, TType.I32, "type_length", None),
    (3, TType.I32, "repetition_type", None),
    (4, TType.STRING, "name", BINARY),
    (5, TType.I32, "num_children", None),
    (6, TType.I32, "converted_type", None),
    (7, TType.I32, "scale", None),
    (8, TType.I32, "precision", None),
    (9, TType.I32, "field_id", None),
    (10, TType.STRUCT, "logicalType", struct_args(LogicalType)),
)
install_spec(
    Statistics,
    (1, TType.STRING, "max", BINARY),
    (2, TType.STRING, "min", BINARY),
    (3, TType.I64, "null_count", None),
    (4, TType.I64, "distinct_count", None),
    (5, TType.STRING, "max_value", BINARY),
    (6, TType.STRING, "min_value", BINARY),
    (7, TType.BOOL, "is_max_value_exact", None),
    (8, TType.BOOL, "is_min_value_exact", None),
    (9, TType.I64, "nan_count", None),
)
install_spec(
    PageEncodingStats,
    (1, TType.I32, "page_type", None),
    (2, TType.I32, "encoding", None),
    (3, TType.I32, "count", None),
)
install_spec(
    SizeStatistics,
    (1, TType.I64, "unencoded_byte_array_data_bytes", None),
    (2, TType.LIST, "repetition_level_histogram", _list_of(TType.I64)),
    (3, TType.LIST, "definition_level_histogram", _list_of(TType.I64)),
)
install_spec(
    ColumnMetaData,
    (1, TType.I32, "type", None),
    (2, TType.LIST, "encodings", _list_of(TType.I32)),
    (3, TType.LIST, "path_in_schema", _list_of(TType.STRING, BINARY)),
    (4, TType.I32, "codec", None),
    (5, TType.I64, "num_values", None),
    (6, TType.I64, "total_uncompressed_size", None),
    (7, TType.I64, "total_compressed_size", None),
    # 8: key_value_metadata is not read.
    (9, TType.I64, "data_page_offset", None),
    (10, TType.I64, "index_page_offset", None),
    (11, TType.I64, "dictionary_page_offset", None),
    (12, TType.STRUCT, "statistics", struct_args(Statistics)),
    (13, TType.LIST, "encoding_stats", _list_of(TType.STRUCT, struct_args(PageEncodingStats))),
    (14, TType.I64, "bloom_filter_offset", None),
    (15, TType.I32, "bloom_filter_length", None),
    (16, TType.STRUCT, "size_statistics", struct_args(SizeStatistics)),
)
install_spec(
    ColumnChunk,
    (1, TType.STRING, "file_path", BINARY),
    (2, TType.I64, "file_offset", None),
    (3, TType.STRUCT, "meta_data", struct_args(ColumnMetaData)),
    (4, TType.I64, "offset_index_offset", None),
    (5, TType.I32, "offset_index_length", None),
    (6, TType.I64, "column_index_offset", None),
    (7, TType.I32, "column_index_length", None),
    (8, TType.STRUCT, "crypto_metadata", _EMPTY),
)
install_spec(
    RowGroup,
    (1, TType.LIST, "columns", _list_of(TType.STRUCT, struct_args(ColumnChunk))),
    (2, TType.I64, "total_byte_size", None),
    (3, TType.I64, "num_rows", None),
    # 4: sorting_columns is not read.
    (5, TType.I64, "file_offset", None),
    (6, TType.I64, "total_compressed_size", None),
    (7, TType.I16, "ordinal", None),
)
install_spec(KeyValue, (1, TType.STRING, "key", BINARY), (2, TType.STRING, "value", BINARY))
install_spec(
    FileMetaData,
    (1, TType.I32, "version", None),
    (2, TType.LIST, "schema", _list_of(TType.STRUCT, struct_args(SchemaElement))),
    (3, TType.I64, "num_rows", None),
    (4, TType.LIST, "row_groups", _list_of(TType.STRUCT, struct_args(RowGroup))),
    (5, TType.LIST, "key_value_metadata", _list_of(TType.STRUCT, struct_args(KeyValue))),
    (6, TType.STRING, "created_by", BINARY),
    # 7: column_orders is not read.
    (8, TType.STRUCT, "encryption_algorithm", _EMPTY),
)
