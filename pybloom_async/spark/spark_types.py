"""Arrow result schemas as Spark schemas, the way Spark's own Parquet reader types the columns.

A lookup's result is Arrow (pyarrow's reading of the files, shaped by
:mod:`pybloom_async.rows.schema`); Spark holds fewer types. Each Arrow type maps to the
Spark type Spark's Parquet reader gives the same column, and the rows are cast to it (in
:func:`pybloom_async.rows.schema.conform`, which fails naming the file when a value does not
fit):

* unsigned integers widen: UINT_8 to SMALLINT, UINT_16 to INT, UINT_32 to BIGINT, UINT_64 to
  DECIMAL(20, 0), as Spark reads them; FLOAT16 becomes FLOAT;
* DECIMAL of up to 38 digits stays (wider ones have no Spark type: an error naming the
  column); string and binary views, large and fixed-size binaries become STRING and BINARY;
* timestamps become microseconds: with a time zone (or stored as INT96, which Spark reads
  as instants) TIMESTAMP, without one TIMESTAMP_NTZ; a nanosecond that would be lost fails
  the read rather than being truncated (Spark itself refuses such columns);
* lists, maps and structs keep their shape, every field nullable; dictionaries become their
  values, extension types (UUID) their storage.

pyspark is imported inside the functions only.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..errors import UnsupportedTypeError

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


_MAX_DECIMAL = 38
_WIDER = {
    pa.uint8(): pa.int16(),
    pa.uint16(): pa.int32(),
    pa.uint32(): pa.int64(),
    pa.uint64(): pa.decimal128(20, 0),
    pa.float16(): pa.float32(),
}


def _unsupported(path: str, t: Any, why: str) -> UnsupportedTypeError:
    return UnsupportedTypeError(f"Spark cannot hold this column's type {t}: {why}", column=path)


def _field(name: str, t: Any, path: str, int96: Collection[str]) -> Any:
    return pa.field(name, _arrow_type(t, path, int96), nullable=True)


# Long because: one branch per Arrow type family, in the order the module docstring lists them.
def _arrow_type(t: Any, path: str, int96: Collection[str]) -> Any:
    """The Arrow type of Spark's type for ``t`` (every nested field nullable)."""
    if isinstance(t, pa.ExtensionType):
        return _arrow_type(t.storage_type, path, int96)
    if pa.types.is_dictionary(t):
        return _arrow_type(t.value_type, path, int96)
    if t in _WIDER:
        return _WIDER[t]
    if pa.types.is_decimal(t):
        if t.precision > _MAX_DECIMAL:
            raise _unsupported(path, t, f"Spark decimals have at most {_MAX_DECIMAL} digits")
        return pa.decimal128(t.precision, t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return pa.binary()
    if pa.types.is_date(t):
        return pa.date32()
    if pa.types.is_timestamp(t):
        utc = t.tz is not None or path in int96
        return pa.timestamp("us", "UTC" if utc else None)
    if pa.types.is_time(t):
        return pa.time64("ns")
    if pa.types.is_duration(t):
        return pa.duration("us")
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return pa.list_(_field("element", t.value_type, path, int96))
    if pa.types.is_map(t):
        key = pa.field("key", _arrow_type(t.key_type, path, int96), nullable=False)
        return pa.map_(key, _field("value", t.item_type, path, int96))
    if pa.types.is_struct(t):
        return pa.struct([_field(f.name, f.type, f"{path}.{f.name}", int96) for f in t])
    if (
        pa.types.is_boolean(t)
        or pa.types.is_signed_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_null(t)
    ):
        return t
    raise _unsupported(path, t, "no Spark SQL type holds it")


def spark_arrow_schema(schema: pa.Schema, int96: Collection[str] = ()) -> pa.Schema:
    """The Arrow schema of the Spark rows for a lookup's result ``schema``.

    ``int96``: the dotted paths of the columns stored as INT96 (timestamps Spark reads as
    instants, though pyarrow reads them without a time zone).

    Raises
    ------
    UnsupportedTypeError
        A column's type has no Spark type (naming the column).
    """
    return pa.schema([_field(f.name, f.type, f.name, int96) for f in schema])


def spark_schema(schema: pa.Schema, int96: Collection[str] = ()) -> StructType:
    """The Spark schema of a lookup's result ``schema`` (see :func:`spark_arrow_schema`).

    Raises
    ------
    UnsupportedTypeError
        A column's type has no Spark type (naming the column), or none in the PySpark
        installed (TIME before 4.1).
    """
    import inspect

    from pyspark.sql.pandas.types import from_arrow_schema

    arrow = spark_arrow_schema(schema, int96)
    # A timestamp without a time zone is Spark's TIMESTAMP_NTZ, as its Parquet reader types
    # it: PySpark 4.2 and later convert it so by default, 4.1 only when asked (else
    # TIMESTAMP, an instant, shown shifted by the session's time zone).
    keywords: dict[str, Any] = {}
    if "prefer_timestamp_ntz" in inspect.signature(from_arrow_schema).parameters:
        keywords["prefer_timestamp_ntz"] = True
    try:
        return from_arrow_schema(arrow, **keywords)
    except Exception as exc:  # PySparkTypeError: a type this PySpark lacks
        raise UnsupportedTypeError(f"this PySpark cannot hold the result's types: {exc}") from None


def batch_schema(schema: StructType, *, large_types: bool = False) -> pa.Schema:
    """The Arrow schema Spark expects of the batches of rows of ``schema`` (timestamps in
    UTC, as the Python Data Source API and ``mapInArrow`` take them)."""
    import inspect

    from pyspark.sql.pandas.types import to_arrow_schema

    # PySpark 3.5 takes neither keyword (its timestamps are UTC, its strings small).
    accepted = inspect.signature(to_arrow_schema).parameters
    keywords: dict[str, Any] = {}
    if "timezone" in accepted:
        keywords["timezone"] = "UTC"
    if "prefers_large_types" in accepted:
        keywords["prefers_large_types"] = large_types
    return to_arrow_schema(schema, **keywords)
