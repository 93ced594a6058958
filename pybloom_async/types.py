"""Parquet physical types, as the C core and the footer decoder know them."""

from __future__ import annotations

import enum

from .errors import UnsupportedTypeError


class PhysicalType(enum.IntEnum):
    """Parquet physical types; the values are those of ``parquet.thrift``'s ``Type``."""

    BOOLEAN = 0
    INT32 = 1
    INT64 = 2
    INT96 = 3
    FLOAT = 4
    DOUBLE = 5
    BYTE_ARRAY = 6
    FIXED_LEN_BYTE_ARRAY = 7

    @classmethod
    def coerce(cls, value: PhysicalType | str | int) -> PhysicalType:
        """Accept a member, a Parquet type name (any case) or the thrift number.

        Raises
        ------
        UnsupportedTypeError
            The name or number is not a Parquet physical type.
        """
        if isinstance(value, PhysicalType):
            return value
        if isinstance(value, str):
            key = value.strip().upper()
            try:
                return cls[key]
            except KeyError:
                names = ", ".join(m.name for m in cls)
                raise UnsupportedTypeError(
                    f"unknown Parquet physical type {value!r}; expected one of {names}"
                ) from None
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                return cls(value)
            except ValueError:
                raise UnsupportedTypeError(
                    f"unknown Parquet physical type number {value}"
                ) from None
        raise UnsupportedTypeError(
            f"physical type must be a PhysicalType, a name or a number, not {type(value).__name__}"
        )

    @property
    def fixed_width(self) -> int | None:
        """Width in bytes of the PLAIN encoding, or None for variable/parameterised types."""
        return _WIDTHS.get(self)


_WIDTHS = {
    PhysicalType.BOOLEAN: 1,
    PhysicalType.INT32: 4,
    PhysicalType.INT64: 8,
    PhysicalType.INT96: 12,
    PhysicalType.FLOAT: 4,
    PhysicalType.DOUBLE: 8,
}
