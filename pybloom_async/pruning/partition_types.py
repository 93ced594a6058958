"""Hive partition columns' types: given (:class:`Partitioning`) or inferred from the values.

The ``key=value`` folders a listing found (``io/partitions.py``) are columns of the types
:class:`PartitionType` names: given (:class:`Partitioning`: a mapping of names to types, or
a ``pyarrow.Schema``), or inferred from every value a column has in the files listed
(:func:`infer_type`): ``int64`` when each value is a decimal integer written canonically
(``-7``, ``0``, ``2026``; not ``007`` or ``+1``) within int64, ``date32`` when each is a
date ``YYYY-MM-DD``, ``timestamp[us]`` when each is a date and time
``YYYY-MM-DD HH:MM:SS[.ffffff]`` (or with ``T``), else ``string``. NULLs take no part; a
column of NULLs only is a string.

This module knows nothing of predicates: ``pruning/partitions.py`` decides which folders
and files a predicate rules out, from the values typed here.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from ..errors import InvalidArgumentError, SchemaMismatchError
from ..io.partitions import Pairs
from ..parquet import ColumnDescriptor
from ..parquet.logical import LogicalKind, LogicalType, TimeUnit

_INTEGERS = {f"{s}int{b}": (b, s == "") for b in (8, 16, 32, 64) for s in ("", "u")}
_UNITS = {"s": None, "ms": TimeUnit.MILLIS, "us": TimeUnit.MICROS, "ns": TimeUnit.NANOS}
_TIMESTAMP = re.compile(r"timestamp\[(s|ms|us|ns)(?:, tz=(.+))?\]")
_DECIMAL = re.compile(r"decimal128\((\d+), ?(\d+)\)")
_CANONICAL_INT = re.compile(r"-?(0|[1-9][0-9]{0,18})")
_DATE_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_STAMP_TEXT = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2})[ T]([0-9]{2}:[0-9]{2}:[0-9]{2})(\.[0-9]{1,6})?"
)
_ALIASES = {
    "str": "string", "utf8": "string", "large_utf8": "large_string", "boolean": "bool",
    "float": "float32", "double": "float64", "date": "date32", "date32[day]": "date32",
    "timestamp": "timestamp[us]",
}  # fmt: skip
_NAMES = "int8..int64, uint8..uint64, float32, float64, bool, string, large_string, date32, "
_NAMES += "timestamp[s|ms|us|ns] (', tz=...' inside), decimal128(p, s)"


@dataclass(frozen=True)
class PartitionType:
    """The type of a partition column: its Arrow name (``int64``, ``date32``, ...)."""

    name: str

    def __post_init__(self) -> None:
        self.descriptor("check")  # an unknown name fails here

    def descriptor(self, key: str) -> ColumnDescriptor:
        """The Parquet column a value of this type would be stored in: literals are read
        for it by the one rule of :mod:`pybloom_async.values.encode`."""
        name = self.name
        if name in _INTEGERS:
            bits, signed = _INTEGERS[name]
            logical = LogicalType(LogicalKind.INTEGER, bit_width=bits, is_signed=signed)
            return ColumnDescriptor.of("INT64" if bits == 64 else "INT32", logical, path=key)
        if name in ("string", "large_string"):
            return ColumnDescriptor.of("BYTE_ARRAY", LogicalType(LogicalKind.STRING), path=key)
        if name == "bool":
            return ColumnDescriptor.of("BOOLEAN", path=key)
        if name in ("float32", "float64"):
            return ColumnDescriptor.of("FLOAT" if name == "float32" else "DOUBLE", path=key)
        if name == "date32":
            return ColumnDescriptor.of("INT32", LogicalType(LogicalKind.DATE), path=key)
        stamp = _TIMESTAMP.fullmatch(name)
        if stamp is not None:
            unit = _UNITS[stamp.group(1)]
            if unit is None:  # seconds: stored as milliseconds, as Arrow writes them
                unit = TimeUnit.MILLIS
            logical = LogicalType(
                LogicalKind.TIMESTAMP, unit=unit, is_adjusted_to_utc=stamp.group(2) is not None
            )
            return ColumnDescriptor.of("INT64", logical, path=key)
        decimal = _DECIMAL.fullmatch(name)
        if decimal is not None:
            precision, scale = int(decimal.group(1)), int(decimal.group(2))
            if not 1 <= precision <= 38 or not 0 <= scale <= precision:
                raise InvalidArgumentError(f"not a decimal type: {name}", value=name)
            logical = LogicalType(LogicalKind.DECIMAL, scale=scale, precision=precision)
            return ColumnDescriptor.of("FIXED_LEN_BYTE_ARRAY", logical, type_length=16, path=key)
        raise InvalidArgumentError(
            f"{name!r} is not a partition column type; the types are: {_NAMES}", value=name
        )

    def parse(self, text: str) -> Any:
        """A folder's value as a Python value of this type.

        Raises
        ------
        ValueError
            The text is not a value of the type.
        """
        name = self.name
        if name in _INTEGERS:
            number = int(text.strip())
            bits, signed = _INTEGERS[name]
            low, high = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
            if not low <= number < high:
                raise ValueError(f"out of the range of {name}")
            return number
        if name in ("string", "large_string"):
            return text
        if name == "bool":
            lowered = text.strip().lower()
            if lowered not in ("true", "false"):
                raise ValueError("not true or false")
            return lowered == "true"
        if name in ("float32", "float64"):
            return float(text)
        if name == "date32":
            return datetime.date.fromisoformat(text.strip())
        stamp = _TIMESTAMP.fullmatch(name)
        if stamp is not None:
            value = datetime.datetime.fromisoformat(text.strip())
            if stamp.group(2) is not None and value.tzinfo is None:
                value = value.replace(tzinfo=datetime.timezone.utc)
            return value
        try:
            return Decimal(text.strip())
        except InvalidOperation:
            raise ValueError("not a decimal number") from None

    def arrow(self) -> Any:
        """The ``pyarrow.DataType``."""
        import pyarrow as pa

        stamp = _TIMESTAMP.fullmatch(self.name)
        if stamp is not None:
            return pa.timestamp(stamp.group(1), tz=stamp.group(2))
        decimal = _DECIMAL.fullmatch(self.name)
        if decimal is not None:
            return pa.decimal128(int(decimal.group(1)), int(decimal.group(2)))
        return pa.type_for_alias(self.name)


def partition_type(spec: object) -> PartitionType:
    """A type named as text (``"date"``, ``"int64"``, ...) or given as a ``pyarrow.DataType``.

    Raises
    ------
    InvalidArgumentError
        Not one of the partition column types.
    """
    if not isinstance(spec, str):
        if type(spec).__module__.startswith("pyarrow"):
            spec = str(spec)
        else:
            raise InvalidArgumentError(
                f"a partition column's type is a name or a pyarrow type, not {spec!r}", value=spec
            )
    text = spec.strip()
    name = _ALIASES.get(text.lower(), text.lower())
    stamp = _TIMESTAMP.fullmatch(name)
    if stamp is not None and stamp.group(2) is not None:  # a time zone keeps its spelling
        name = f"timestamp[{stamp.group(1)}, tz={text[text.index('tz=') + 3 : -1]}]"
    return PartitionType(name)


STRING = PartitionType("string")
_INFERRED = (PartitionType("int64"), PartitionType("date32"), PartitionType("timestamp[us]"))


def _text_kind(text: str) -> PartitionType:
    if _CANONICAL_INT.fullmatch(text) and -(1 << 63) <= int(text) < (1 << 63):
        return _INFERRED[0]
    try:
        if _DATE_TEXT.fullmatch(text):
            datetime.date.fromisoformat(text)
            return _INFERRED[1]
        if _STAMP_TEXT.fullmatch(text):
            datetime.datetime.fromisoformat(text)
            return _INFERRED[2]
    except ValueError:
        pass
    return STRING


def value_type(text: str) -> PartitionType:
    """The type one value alone is inferred as (see :func:`infer_type`)."""
    return _text_kind(text)


def infer_type(values: Iterable[str | None]) -> PartitionType:
    """The type of a partition column, from all its values (see the module docstring)."""
    found: PartitionType | None = None
    for text in values:
        if text is None:
            continue
        kind = _text_kind(text)
        if found is None:
            found = kind
        elif kind != found:
            return STRING
    return found or STRING


# ---- what the user gives ---------------------------------------------------------------------


@dataclass(frozen=True)
class Partitioning:
    """How ``key=value`` folders become columns: ``types`` given, or None to infer them.

    Made by :meth:`of` from what an entry point's ``partitioning`` argument was given.
    """

    types: Mapping[str, PartitionType] | None = None

    @classmethod
    def of(cls, spec: object) -> Partitioning | None:
        """``"hive"`` or True: inferred; None or False: no partition columns; a mapping of
        column names to types (names, or pyarrow types), or a ``pyarrow.Schema``: those
        columns only, of those types (other ``key=value`` folders are plain folders).

        Raises
        ------
        InvalidArgumentError
            Anything else, or a type that is not one of the partition column types.
        """
        if spec is None or spec is False:
            return None
        if spec is True or spec == "hive":
            return cls()
        if isinstance(spec, Mapping):
            items = list(spec.items())
        elif type(spec).__name__ == "Schema" and type(spec).__module__.startswith("pyarrow"):
            items = [(f.name, f.type) for f in spec]  # type: ignore[attr-defined]
        else:
            raise InvalidArgumentError(
                "partitioning must be 'hive', None, or the partition columns' types (a dict of "
                f"names to types, or a pyarrow.Schema), not {spec!r}",
                value=spec,
            )
        types: dict[str, PartitionType] = {}
        for key, given in items:
            if not isinstance(key, str) or not key:
                raise InvalidArgumentError("a partition column name must be text", value=key)
            types[key] = partition_type(given)
        return cls(types)

    def keys_of(self, pairs: Pairs) -> Pairs:
        """The pairs that are partition columns (with types given: only those named)."""
        if self.types is None:
            return pairs
        return tuple(p for p in pairs if p[0] in self.types)


def typed_value(key: str, text: str | None, kind: PartitionType, path: str) -> Any:
    """A file's partition value as its column's type (None: NULL).

    Raises
    ------
    SchemaMismatchError
        The value is not one of the type given for the column (naming the file).
    """
    if text is None:
        return None
    try:
        return kind.parse(text)
    except ValueError as exc:
        raise SchemaMismatchError(
            f"the partition value {text!r} of {key!r} is not a {kind.name}: {exc}", path=path
        ) from None
