"""Logical types: the LogicalType union and the legacy ConvertedType annotations mapped onto it."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from ..errors import ParquetFormatError, UnsupportedTypeError
from . import thrift_specs as wire


class ConvertedType(enum.IntEnum):
    """The legacy ``ConvertedType`` enum of parquet.thrift (superseded by ``LogicalType``)."""

    UTF8 = 0
    MAP = 1
    MAP_KEY_VALUE = 2
    LIST = 3
    ENUM = 4
    DECIMAL = 5
    DATE = 6
    TIME_MILLIS = 7
    TIME_MICROS = 8
    TIMESTAMP_MILLIS = 9
    TIMESTAMP_MICROS = 10
    UINT_8 = 11
    UINT_16 = 12
    UINT_32 = 13
    UINT_64 = 14
    INT_8 = 15
    INT_16 = 16
    INT_32 = 17
    INT_64 = 18
    JSON = 19
    BSON = 20
    INTERVAL = 21


class TimeUnit(enum.Enum):
    """Unit of a TIME or TIMESTAMP column; the value is the number of units per second."""

    MILLIS = 1_000
    MICROS = 1_000_000
    NANOS = 1_000_000_000

    @property
    def per_second(self) -> int:
        """How many of this unit make one second."""
        return self.value


class LogicalKind(enum.Enum):
    """Which logical type annotates a column (``LogicalType`` members plus legacy-only ones)."""

    STRING = "STRING"
    MAP = "MAP"
    LIST = "LIST"
    ENUM = "ENUM"
    DECIMAL = "DECIMAL"
    DATE = "DATE"
    TIME = "TIME"
    TIMESTAMP = "TIMESTAMP"
    INTEGER = "INTEGER"
    UNKNOWN = "UNKNOWN"  # the NULL type: the column only holds nulls
    JSON = "JSON"
    BSON = "BSON"
    UUID = "UUID"
    FLOAT16 = "FLOAT16"
    VARIANT = "VARIANT"
    GEOMETRY = "GEOMETRY"
    GEOGRAPHY = "GEOGRAPHY"
    VECTOR = "VECTOR"
    # Legacy ConvertedType values with no LogicalType member.
    INTERVAL = "INTERVAL"
    MAP_KEY_VALUE = "MAP_KEY_VALUE"
    # A logicalType union member (or time unit) newer than this library: the
    # column's values must not be interpreted.
    UNRECOGNIZED = "UNRECOGNIZED"


@dataclass(frozen=True, slots=True)
class LogicalType:
    """A resolved logical type; only the parameters of its ``kind`` are set.

    Build parameterised types with :meth:`decimal`, :meth:`time`,
    :meth:`timestamp` and :meth:`integer`; the others with ``LogicalType(kind)``.
    ``legacy`` is true when the type was derived from ``converted_type`` alone.
    """

    kind: LogicalKind
    scale: int | None = None
    precision: int | None = None
    unit: TimeUnit | None = None
    is_adjusted_to_utc: bool | None = None
    bit_width: int | None = None
    is_signed: bool | None = None
    legacy: bool = field(default=False, compare=False)

    @classmethod
    def decimal(cls, precision: int, scale: int, *, legacy: bool = False) -> LogicalType:
        """DECIMAL(precision, scale)."""
        return cls(LogicalKind.DECIMAL, scale=scale, precision=precision, legacy=legacy)

    @classmethod
    def time(cls, unit: TimeUnit, is_adjusted_to_utc: bool, *, legacy: bool = False) -> LogicalType:
        """TIME(isAdjustedToUTC, unit)."""
        return cls(
            LogicalKind.TIME, unit=unit, is_adjusted_to_utc=is_adjusted_to_utc, legacy=legacy
        )

    @classmethod
    def timestamp(
        cls, unit: TimeUnit, is_adjusted_to_utc: bool, *, legacy: bool = False
    ) -> LogicalType:
        """TIMESTAMP(isAdjustedToUTC, unit)."""
        return cls(
            LogicalKind.TIMESTAMP, unit=unit, is_adjusted_to_utc=is_adjusted_to_utc, legacy=legacy
        )

    @classmethod
    def integer(cls, bit_width: int, is_signed: bool, *, legacy: bool = False) -> LogicalType:
        """INTEGER(bitWidth, isSigned)."""
        return cls(LogicalKind.INTEGER, bit_width=bit_width, is_signed=is_signed, legacy=legacy)

    def __str__(self) -> str:
        kind = self.kind
        if kind is LogicalKind.DECIMAL:
            return f"DECIMAL({self.precision}, {self.scale})"
        if kind in (LogicalKind.TIME, LogicalKind.TIMESTAMP):
            unit = self.unit.name if self.unit is not None else "?"
            return f"{kind.name}({unit}, utc={self.is_adjusted_to_utc})"
        if kind is LogicalKind.INTEGER:
            return f"{'INT' if self.is_signed else 'UINT'}({self.bit_width})"
        return kind.name


# Legacy ConvertedType -> LogicalType, from the "backward compatibility" tables
# of LogicalTypes.md. TIME_* and TIMESTAMP_* imply isAdjustedToUTC = true.
_LEGACY: dict[int, LogicalType] = {
    ConvertedType.UTF8: LogicalType(LogicalKind.STRING, legacy=True),
    ConvertedType.MAP: LogicalType(LogicalKind.MAP, legacy=True),
    ConvertedType.MAP_KEY_VALUE: LogicalType(LogicalKind.MAP_KEY_VALUE, legacy=True),
    ConvertedType.LIST: LogicalType(LogicalKind.LIST, legacy=True),
    ConvertedType.ENUM: LogicalType(LogicalKind.ENUM, legacy=True),
    ConvertedType.DATE: LogicalType(LogicalKind.DATE, legacy=True),
    ConvertedType.TIME_MILLIS: LogicalType.time(TimeUnit.MILLIS, True, legacy=True),
    ConvertedType.TIME_MICROS: LogicalType.time(TimeUnit.MICROS, True, legacy=True),
    ConvertedType.TIMESTAMP_MILLIS: LogicalType.timestamp(TimeUnit.MILLIS, True, legacy=True),
    ConvertedType.TIMESTAMP_MICROS: LogicalType.timestamp(TimeUnit.MICROS, True, legacy=True),
    ConvertedType.UINT_8: LogicalType.integer(8, False, legacy=True),
    ConvertedType.UINT_16: LogicalType.integer(16, False, legacy=True),
    ConvertedType.UINT_32: LogicalType.integer(32, False, legacy=True),
    ConvertedType.UINT_64: LogicalType.integer(64, False, legacy=True),
    ConvertedType.INT_8: LogicalType.integer(8, True, legacy=True),
    ConvertedType.INT_16: LogicalType.integer(16, True, legacy=True),
    ConvertedType.INT_32: LogicalType.integer(32, True, legacy=True),
    ConvertedType.INT_64: LogicalType.integer(64, True, legacy=True),
    ConvertedType.JSON: LogicalType(LogicalKind.JSON, legacy=True),
    ConvertedType.BSON: LogicalType(LogicalKind.BSON, legacy=True),
    ConvertedType.INTERVAL: LogicalType(LogicalKind.INTERVAL, legacy=True),
}

_PLAIN_MEMBERS = {
    "STRING": LogicalKind.STRING,
    "MAP": LogicalKind.MAP,
    "LIST": LogicalKind.LIST,
    "ENUM": LogicalKind.ENUM,
    "DATE": LogicalKind.DATE,
    "UNKNOWN": LogicalKind.UNKNOWN,
    "JSON": LogicalKind.JSON,
    "BSON": LogicalKind.BSON,
    "UUID": LogicalKind.UUID,
    "FLOAT16": LogicalKind.FLOAT16,
    "VARIANT": LogicalKind.VARIANT,
    "GEOMETRY": LogicalKind.GEOMETRY,
    "GEOGRAPHY": LogicalKind.GEOGRAPHY,
    "VECTOR": LogicalKind.VECTOR,
}

# LogicalType is immutable: one shared instance per parameterless kind.
_PLAIN_TYPES = {name: LogicalType(kind) for name, kind in _PLAIN_MEMBERS.items()}

_UNRECOGNIZED = LogicalType(LogicalKind.UNRECOGNIZED)


def _time_unit(unit: wire.TimeUnit | None) -> TimeUnit | None:
    if unit is None:
        return None
    members = unit.members_set()
    if len(members) != 1:
        # No member we know (a unit added after this library) or a malformed
        # union: LogicalTypes.md says unknown units are unsupported features.
        return None
    return TimeUnit[members[0]]


def resolve_logical(
    element: wire.SchemaElement, where: str, path: str | None
) -> LogicalType | None:
    """Merge ``logicalType`` and ``converted_type`` into one LogicalType (or None)."""
    lt = element.logicalType
    if lt is not None:
        members = lt.members_set()
        if len(members) > 1:
            raise ParquetFormatError(
                f"schema element {where}: logicalType union has {len(members)} members set "
                f"({', '.join(members)})",
                path=path,
            )
        if not members:
            # A union member newer than parquet.thrift as we know it.
            return _UNRECOGNIZED
        name = members[0]
        plain = _PLAIN_TYPES.get(name)
        if plain is not None:
            return plain
        if name == "DECIMAL":
            dec = lt.DECIMAL
            if dec is None or dec.scale is None or dec.precision is None:
                raise ParquetFormatError(
                    f"schema element {where}: DECIMAL logical type without scale or precision",
                    path=path,
                )
            return LogicalType.decimal(dec.precision, dec.scale)
        if name in ("TIME", "TIMESTAMP"):
            tt = lt.TIME if name == "TIME" else lt.TIMESTAMP
            unit = _time_unit(tt.unit if tt is not None else None)
            if tt is None or unit is None or tt.isAdjustedToUTC is None:
                return _UNRECOGNIZED
            if name == "TIME":
                return LogicalType.time(unit, tt.isAdjustedToUTC)
            return LogicalType.timestamp(unit, tt.isAdjustedToUTC)
        # INTEGER: the only member left.
        it = lt.INTEGER
        if it is None or it.bitWidth is None or it.isSigned is None:
            raise ParquetFormatError(
                f"schema element {where}: INTEGER logical type without bitWidth or isSigned",
                path=path,
            )
        return LogicalType.integer(it.bitWidth, it.isSigned)
    ct = element.converted_type
    if ct is None:
        return None
    if ct == ConvertedType.DECIMAL:
        if element.precision is None:
            raise ParquetFormatError(
                f"schema element {where}: DECIMAL converted type without precision", path=path
            )
        # LogicalTypes.md: "If not specified, the scale is 0."
        scale = element.scale if element.scale is not None else 0
        return LogicalType.decimal(element.precision, scale, legacy=True)
    # An unknown converted type number annotates nothing we can use (the enum
    # "should not be extended", parquet.thrift); the descriptor keeps the number.
    return _LEGACY.get(ct)


# Enum lookups by dict: ``Enum(value)`` is a Python-level call, and every
# schema element of every footer goes through these.
_CONVERTED: dict[int, int] = {m.value: m for m in ConvertedType}


def logical_of_converted(value: int | None) -> int | None:
    if value is None:
        return None
    return _CONVERTED.get(value, value)


# ---- logical types as text ------------------------------------------------------------

_SIMPLE_KINDS = {
    k.value: k
    for k in (
        LogicalKind.STRING,
        LogicalKind.ENUM,
        LogicalKind.JSON,
        LogicalKind.BSON,
        LogicalKind.UUID,
        LogicalKind.DATE,
        LogicalKind.FLOAT16,
        LogicalKind.UNKNOWN,
    )
}
_PARAM_RE = re.compile(r"^(DECIMAL|INTEGER|TIME|TIMESTAMP)\(([A-Z0-9]+),(-?[0-9a-z]+)\)$")


def logical_text(lt: LogicalType | None, path: str) -> str:
    """The text form of a logical type recorded in indexes (\"\" for none).

    Raises
    ------
    UnsupportedTypeError
        A logical type with no text form.
    """
    if lt is None:
        return ""
    kind = lt.kind
    if kind.value in _SIMPLE_KINDS:
        return kind.value
    if kind is LogicalKind.DECIMAL and lt.precision is not None and lt.scale is not None:
        return f"DECIMAL({lt.precision},{lt.scale})"
    if kind is LogicalKind.INTEGER and lt.bit_width is not None and lt.is_signed is not None:
        return f"INTEGER({lt.bit_width},{str(lt.is_signed).lower()})"
    if (
        kind in (LogicalKind.TIME, LogicalKind.TIMESTAMP)
        and lt.unit is not None
        and lt.is_adjusted_to_utc is not None
    ):
        return f"{kind.value}({lt.unit.name},{str(lt.is_adjusted_to_utc).lower()})"
    raise UnsupportedTypeError(f"logical type {lt} cannot be recorded in an index", column=path)


def parse_logical(text: str) -> LogicalType | None:
    """The inverse of :func:`logical_text`; ValueError for anything else."""
    if not text:
        return None
    if text in _SIMPLE_KINDS:
        return LogicalType(_SIMPLE_KINDS[text])
    m = _PARAM_RE.match(text)
    if m is None:
        raise ValueError(f"unknown logical type {text!r}")
    name, first, second = m.groups()
    if name == "DECIMAL":
        precision, scale = int(first), int(second)
        if not (0 < precision <= 1000 and 0 <= scale <= precision):
            raise ValueError(f"invalid decimal {text!r}")
        return LogicalType.decimal(precision, scale)
    if second not in ("true", "false"):
        raise ValueError(f"invalid flag in {text!r}")
    flag = second == "true"
    if name == "INTEGER":
        width = int(first)
        if width not in (8, 16, 32, 64):
            raise ValueError(f"invalid integer width in {text!r}")
        return LogicalType.integer(width, flag)
    if first not in TimeUnit.__members__:
        raise ValueError(f"invalid time unit in {text!r}")
    unit = TimeUnit[first]
    return LogicalType.time(unit, flag) if name == "TIME" else LogicalType.timestamp(unit, flag)
