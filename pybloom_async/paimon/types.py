"""Paimon's data types as the file index hashes them, and the C status check of its kernels."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..errors import (
    UnsupportedTypeError,
)

HashArray = npt.NDArray[np.uint64]
BoolArray = npt.NDArray[np.bool_]

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
U64_MASK = 2**64 - 1
# Paimon types without a precision suffix default to these (its type system
# follows Flink's: TIMESTAMP and TIMESTAMP_LTZ mean microsecond precision).
_DEFAULT_TIMESTAMP_PRECISION = 6


# ---- Paimon data types ----------------------------------------------------------


@dataclass(frozen=True)
class PaimonType:
    """A Paimon column type reduced to what FastHash needs."""

    name: str  # canonical root, e.g. "INT", "TIMESTAMP_LTZ"
    family: str  # int | float | double | timestamp | string | binary
    bits: int  # integer width for family "int" (DATE and TIME are 32-bit ints)
    precision: int  # timestamp precision, else -1

    def describe(self) -> str:
        return f"{self.name}({self.precision})" if self.precision >= 0 else self.name


_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64, "DATE": 32, "TIME": 32}
_ALIASES = {
    "INTEGER": "INT",
    "DOUBLE PRECISION": "DOUBLE",
    "TIME WITHOUT TIME ZONE": "TIME",
    "TIME_WITHOUT_TIME_ZONE": "TIME",
    "TIMESTAMP WITHOUT TIME ZONE": "TIMESTAMP",
    "TIMESTAMP_WITHOUT_TIME_ZONE": "TIMESTAMP",
    "TIMESTAMP WITH LOCAL TIME ZONE": "TIMESTAMP_LTZ",
    "TIMESTAMP_WITH_LOCAL_TIME_ZONE": "TIMESTAMP_LTZ",
    "BOOL": "BOOLEAN",
    "DEC": "DECIMAL",
    "NUMERIC": "DECIMAL",
}
_FAMILIES = {
    "TINYINT": "int",
    "SMALLINT": "int",
    "INT": "int",
    "BIGINT": "int",
    "DATE": "int",
    "TIME": "int",
    "FLOAT": "float",
    "DOUBLE": "double",
    "TIMESTAMP": "timestamp",
    "TIMESTAMP_LTZ": "timestamp",
    "CHAR": "string",
    "VARCHAR": "string",
    "STRING": "string",
    "BINARY": "binary",
    "VARBINARY": "binary",
    "BYTES": "binary",
}
# Types Paimon's bloom-filter index refuses when the index is created; the
# messages are those of the UnsupportedOperationException it throws.
_UNSUPPORTED = {
    "BOOLEAN",
    "DECIMAL",
    "ARRAY",
    "MAP",
    "MULTISET",
    "ROW",
    "VARIANT",
    "BLOB",
    "VECTOR",
}
_TYPE_RE = re.compile(
    r"^(?P<root>[A-Z_]+(?: PRECISION)?)(?:\s*\((?P<args>[^()]*)\))?"
    r"(?P<suffix> WITH LOCAL TIME ZONE| WITHOUT TIME ZONE)?$"
)


def _unsupported(data_type: str, root: str) -> UnsupportedTypeError:
    detail = (
        "Does not support decimal" if root == "DECIMAL" else f"Does not support type {root.lower()}"
    )
    return UnsupportedTypeError(
        f"Paimon's bloom-filter index does not support {data_type!r} ({detail})"
    )


def paimon_type_info(data_type: str) -> tuple[str, str]:
    """The canonical root (``"BIGINT"``, ``"DATE"``, ...) and FastHash family of a type name.

    The family is one of ``int``, ``float``, ``double``, ``timestamp``,
    ``string``, ``binary``.

    Raises
    ------
    UnsupportedTypeError
        Not a Paimon type name, or a type the bloom-filter index rejects.
    """
    parsed = parse_paimon_type(data_type, None)
    return parsed.name, parsed.family


def parse_paimon_type(data_type: str, precision: int | None) -> PaimonType:
    """Turn a Paimon type name (``"BIGINT"``, ``"TIMESTAMP(3)"``, ...) into a PaimonType.

    Raises
    ------
    UnsupportedTypeError
        Not a type name, or a type Paimon's bloom-filter index rejects.
    """
    if not isinstance(data_type, str):
        raise UnsupportedTypeError(
            f"data_type must be a Paimon type name such as 'BIGINT', not {type(data_type).__name__}"
        )
    text = " ".join(data_type.strip().upper().split())
    for tail in (" NOT NULL", " NULL"):
        if text.endswith(tail):
            text = text[: -len(tail)]
    head = re.split(r"[<(\s]", text, maxsplit=1)[0]
    if _ALIASES.get(head, head) in _UNSUPPORTED:
        raise _unsupported(data_type, _ALIASES.get(head, head))
    match = _TYPE_RE.match(text)
    if match is None:
        raise UnsupportedTypeError(f"not a Paimon type name: {data_type!r}")
    base = _ALIASES.get(match["root"], match["root"])
    suffix = match["suffix"] or ""
    if suffix and base not in ("TIME", "TIMESTAMP"):
        raise UnsupportedTypeError(f"not a Paimon type name: {data_type!r}")
    root = _ALIASES.get(base + suffix, base)
    family = _FAMILIES.get(root)
    if family is None:
        raise UnsupportedTypeError(f"not a Paimon type name: {data_type!r}")
    declared: int | None = None
    args = match["args"]
    if args is not None:
        if family in ("int", "float", "double") and root != "TIME":
            raise UnsupportedTypeError(f"{root} takes no parameter: {data_type!r}")
        try:
            declared = int(args.strip())
        except ValueError:
            raise UnsupportedTypeError(f"bad parameter in Paimon type {data_type!r}") from None
    if family == "timestamp" or root == "TIME":
        if precision is not None and declared is not None and precision != declared:
            raise UnsupportedTypeError(f"precision={precision} contradicts the type {data_type!r}")
        p = precision if precision is not None else declared
        if p is None:
            p = _DEFAULT_TIMESTAMP_PRECISION if family == "timestamp" else 0
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p <= 9:
            raise UnsupportedTypeError(f"{root} precision must be 0..9, got {p!r}")
        # TIME hashes its millisecond-of-day int whatever its precision.
        ts_precision = p if family == "timestamp" else -1
        return PaimonType(root, family, _INT_BITS.get(root, 64), ts_precision)
    if precision is not None:
        raise UnsupportedTypeError(f"precision applies to TIME and TIMESTAMP, not {root}")
    return PaimonType(root, family, _INT_BITS.get(root, 64), -1)
