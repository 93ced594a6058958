"""Spark writer options that make parquet-java write Bloom filters, checked as Spark would."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from ..checks import integer, probability
from ..errors import InvalidArgumentError

# ---- writer options ------------------------------------------------------------------

#: parquet-java's default ``parquet.bloom.filter.max.bytes``
#: (``ParquetProperties.DEFAULT_MAX_BLOOM_FILTER_BYTES``): the size of every filter
#: whose column has no expected NDV.
DEFAULT_WRITER_MAX_BYTES = 1024 * 1024
# parquet-java's BlockSplitBloomFilter bounds (LOWER_BOUND_BYTES, UPPER_BOUND_BYTES). A
# max.bytes outside the open interval between them is silently ignored (the constructor
# keeps 128 MiB), and one that is not a power of two yields a bitset of that odd size,
# which the Parquet spec does not allow: only powers of two in [64, 64 MiB] do what
# they say.
_JAVA_MIN_BYTES = 32
_JAVA_MAX_BYTES = 128 * 1024 * 1024
# Per-column NDV for parquet-java is a Java long, but its sizing multiplies it by -8
# before anything else; keep it far from overflow (filters top out at 128 MiB, reached
# near 117 million values at fpp 0.01, so larger values change nothing anyway).
_MAX_NDV = 2**31 - 1

_ENABLED = "parquet.bloom.filter.enabled#{}"
_NDV = "parquet.bloom.filter.expected.ndv#{}"
_FPP = "parquet.bloom.filter.fpp#{}"
_MAX_BYTES = "parquet.bloom.filter.max.bytes"


def _check_ndv(value: object, column: str | None) -> int:
    # Distinct values per row group, up to parquet-java's int.
    return integer("ndv", value, minimum=1, maximum=_MAX_NDV, column=column)


def _check_max_bytes(max_bytes: object) -> int:
    max_bytes = integer("max_bytes", max_bytes)
    if not (_JAVA_MIN_BYTES < max_bytes < _JAVA_MAX_BYTES and max_bytes & (max_bytes - 1) == 0):
        raise InvalidArgumentError(
            "max_bytes must be a power of two from 64 to 67108864: parquet-java ignores "
            "values outside that range and writes a bitset of any other size as is, "
            "which the Parquet spec does not allow",
            value=max_bytes,
        )
    return max_bytes


def check_column(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"a column name must be a non-empty str, not {name!r}")
    return name


# Long because: the docstring documents every Spark option it sets (57 lines); the code is 42.
def bloom_writer_options(
    columns: Sequence[str] | Mapping[str, int | None],
    *,
    fpp: float = 0.01,
    ndv: int | None = None,
    max_bytes: int | None = None,
) -> dict[str, str]:
    """The parquet-java writer options that give the chosen columns Bloom filters.

    Pass them to Spark's writer: ``df.write.options(**opts).parquet(path)`` (they reach
    the Hadoop configuration of the write), or set them with the ``spark.hadoop.``
    prefix on the session.

    Traps (each checked against Spark by ``tests/integration/test_spark.py``):

    * **Sizing comes from ndv, not from the data.** A column without an expected NDV
      gets a filter of ``max_bytes`` (1 MiB unless set) in *every* row group, whatever
      it holds. Give ``ndv`` as the number of distinct values of one *row group*
      (not of the table); :func:`writer_filter_bytes` tells the size it leads to.
    * **Tiny files and row groups bloat.** Each row group carries its own filter per
      column, sized as above: a file of N row groups holds N filters per column, so
      many small files (or a small ``parquet.block.size``) multiply the overhead; a
      1,000-row file with one unsized filter weighs over 1 MiB.
    * **INT96 timestamps get no filter.** Spark writes timestamps as INT96 by default,
      and parquet-java keeps INT96 chunks dictionary-encoded; it writes no filter for
      a chunk whose pages are all dictionary-encoded (``ParquetFileWriter``: "write
      bloom filter if one of data pages is not dictionary encoded"). So only row
      groups whose dictionary overflows (``parquet.dictionary.page.size``, 1 MiB:
      about 87,000 distinct INT96 values) get one. Set
      ``spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS`` (or turn the
      dictionary off for the column: ``parquet.enable.dictionary#col=false``).
      The same rule drops the filter of any low-cardinality column that stays
      dictionary-encoded.
    * **BOOLEAN filters are empty.** parquet-java writes them but never inserts a
      value (readers here ignore them); do not ask for them.

    Parameters
    ----------
    columns:
        Column names (Parquet paths, ``a.b`` for nested fields), or a mapping from
        column name to its expected NDV per row group (None: unsized).
    fpp:
        Target false-positive probability of every filter, in (0, 1).
    ndv:
        Expected distinct values per row group for every column of a list (not
        allowed with a mapping).
    max_bytes:
        ``parquet.bloom.filter.max.bytes``: the cap on every filter of the write, and
        the size of unsized ones. A power of two from 64 B to 64 MiB; default:
        parquet-java's 1 MiB.

    Returns
    -------
    dict of str to str
        ``parquet.bloom.filter.enabled#col``, ``parquet.bloom.filter.fpp#col``,
        ``parquet.bloom.filter.expected.ndv#col`` (when known) and
        ``parquet.bloom.filter.max.bytes`` (when given).

    Raises
    ------
    InvalidArgumentError
        No column, a column twice or not a non-empty str, ``columns`` given as one
        str, ``ndv`` both per column and for all, or a value out of range.
    """
    if isinstance(columns, (str, bytes)):
        raise InvalidArgumentError(
            f"columns must be a list of names or a mapping, not one str ({columns!r}): "
            f"write [{columns!r}]"
        )
    sizes: dict[str, int | None] = {}
    if isinstance(columns, Mapping):
        if ndv is not None:
            raise InvalidArgumentError(
                "ndv is given both per column (the mapping) and for all columns (ndv=)"
            )
        for name, value in columns.items():
            sizes[check_column(name)] = None if value is None else _check_ndv(value, name)
    else:
        if not isinstance(columns, Iterable):
            raise InvalidArgumentError(
                f"columns must be a list of names or a mapping, not {type(columns).__name__}"
            )
        common = None if ndv is None else _check_ndv(ndv, None)
        for name in columns:
            if check_column(name) in sizes:
                raise InvalidArgumentError("column given twice", column=name)
            sizes[name] = common
    if not sizes:
        raise InvalidArgumentError("no column given")
    rate = probability("fpp", fpp)
    options: dict[str, str] = {}
    for name, size in sizes.items():
        options[_ENABLED.format(name)] = "true"
        options[_FPP.format(name)] = repr(rate)
        if size is not None:
            options[_NDV.format(name)] = str(size)
    if max_bytes is not None:
        options[_MAX_BYTES] = str(_check_max_bytes(max_bytes))
    return options


def writer_filter_bytes(ndv: int | None, fpp: float = 0.01, max_bytes: int | None = None) -> int:
    """The bitset size parquet-java gives each filter written with these options.

    Follows parquet-java 1.17 (``ColumnValueCollector.initBloomFilter``,
    ``BlockSplitBloomFilter.optimalNumOfBits`` and ``initBitset``) step by step, its
    rounding included, so the figure matches the files Spark writes: multiply by row
    groups and filtered columns for a file's filter overhead.

    Parameters
    ----------
    ndv:
        Expected distinct values per row group; None: no NDV given (the maximum size).
    fpp, max_bytes:
        As for :func:`bloom_writer_options` (``max_bytes`` None: 1 MiB).

    Raises
    ------
    InvalidArgumentError
        A value out of the ranges :func:`bloom_writer_options` accepts.
    """
    rate = probability("fpp", fpp)
    cap = DEFAULT_WRITER_MAX_BYTES if max_bytes is None else _check_max_bytes(max_bytes)
    if ndv is None:
        return cap
    n = _check_ndv(ndv, None)
    m = -8 * n / math.log(1 - math.pow(rate, 1.0 / 8))
    num_bits = int(m) if m < 2**31 else 2**31 - 1  # Java's (int) cast saturates
    if num_bits > _JAVA_MAX_BYTES << 3 or m < 0:
        num_bits = _JAVA_MAX_BYTES << 3
    # parquet-java masks with ~BITS_PER_BLOCK (~256), not ~255: kept as it is, since the
    # power-of-two rounding below absorbs the difference only most of the time.
    num_bits = (num_bits + 255) & ~256
    num_bits = max(num_bits, _JAVA_MIN_BYTES << 3)
    num_bytes = max(num_bits // 8, _JAVA_MIN_BYTES)
    if num_bytes & (num_bytes - 1):
        num_bytes = 1 << num_bytes.bit_length()
    return min(num_bytes, cap)
