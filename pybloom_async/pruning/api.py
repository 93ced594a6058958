"""Row-group pruning: which row groups (or files) may hold rows matching a predicate.

For every file, each ``=`` / ``IN`` value is converted exactly to the
column's physical type (:func:`pybloom_async.parquet.encode_value`) and
hashed once; then every row group is decided by, in order:

* the type: a value the column cannot hold (out of range, inexact) cannot match;
* the min/max statistics, where the column's sort order is known;
* the Bloom filter, probed in batch for all values left.

AND excludes a row group when any part does, OR when every part does. A row
group is kept whenever the data cannot rule it out: no filter, a damaged
filter, a NaN or NULL probe, a column the file lacks. Each verdict names the
rule that decided it. There are no false negatives: nothing here removes a
row group that holds a matching row.

What the user typed wrong is an error, not an empty answer: a literal that is
not a value of its column's type (see :mod:`pybloom_async.predicate`) and a
column that none of the files read has raise
:class:`~pybloom_async.errors.PredicateError`.
"""

from __future__ import annotations

import bisect
import decimal
import enum
import math
import os
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import anyio
import numpy as np

from ..checks import positive_int
from ..core.hashing import hash_values
from ..errors import (
    InvalidFilterError,
    PredicateError,
    PyBloomError,
    SourceError,
    SourceNotFoundError,
    UnsupportedTypeError,
    ValueEncodingError,
)
from ..io.base import FileInfo, SourceStats
from ..io.listing import list_parquet_files
from ..io.store import StoreOptions
from ..parquet import (
    CannotMatch,
    ColumnChunk,
    ColumnDescriptor,
    Encoded,
    LogicalKind,
    LogicalType,
    NeverPrunes,
    RowGroup,
    Schema,
    TimeUnit,
    WithNanoseconds,
    encode_text,
    encode_value,
    parse_text_value,
)
from ..predicate import And, Eq, In, Or, Predicate, TextLiteral, as_predicate, literal_text
from ..read.reader import (
    BlockingLocalReader,
    BloomFilterRead,
    BloomReader,
    FilterKey,
    FilterState,
    Footer,
    ReaderConfig,
    blocking_local_paths,
    refuse_running_loop,
    run_blocking,
    run_in_new_loop,
)
from ..types import PhysicalType

__all__ = [
    "ProbeResult",
    "Rule",
    "Verdict",
    "probe",
    "probe_sync",
    "prune",
    "prune_paimon",
    "prune_paimon_sync",
    "prune_sync",
]


class Rule(str, enum.Enum):
    """What decided a verdict."""

    BLOOM_FILTER = "bloom_filter"  # the filter rules the value(s) out
    STATISTICS = "statistics"  # min/max rule the value(s) out
    TYPE = "type"  # the column cannot hold the value(s)
    NULLS = "null_count"  # null counts decide (all null / no nulls)
    MAY_MATCH = "may_match"  # the filter (or statistics) admit a value
    NO_FILTER = "no_filter"  # no filter to ask
    UNUSABLE_FILTER = "unusable_filter"  # the filter is damaged
    NEVER_PRUNES = "never_prunes"  # NaN, NULL probes
    MISSING_COLUMN = "missing_column"  # the file lacks the column
    UNREADABLE = "unreadable"  # the file could not be read
    SIDECAR_INDEX = "sidecar_index"  # the file's sidecar index rules the value(s) out
    NO_INDEX = "no_index"  # no usable sidecar index (missing or unreadable): file kept
    STALE_INDEX = "stale_index"  # the data file changed after it was indexed: file kept

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Verdict:
    """Whether one row group may hold matching rows.

    ``row_group`` and ``num_rows`` are None when the whole file could not be
    read (then ``kept`` is True and ``reason`` says why).
    """

    file: str
    row_group: int | None
    num_rows: int | None
    kept: bool
    reason: str
    rule: Rule

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "file": self.file,
            "row_group": self.row_group,
            "num_rows": self.num_rows,
            "kept": self.kept,
            "reason": self.reason,
            "rule": self.rule.value,
        }


@dataclass(frozen=True)
class ProbeResult:
    """Whether one row group's data rules one value out (``excluded``)."""

    file: str
    row_group: int
    column: str
    value: Any
    excluded: bool
    reason: str
    rule: Rule

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``kept`` (not ``excluded``), as in :meth:`Verdict.to_dict`.

        An int value stays a number; other values are shown as text.
        """
        return {
            "file": self.file,
            "row_group": self.row_group,
            "column": self.column,
            "value": self.value if type(self.value) is int else _show(self.value),
            "kept": not self.excluded,
            "reason": self.reason,
            "rule": self.rule.value,
        }


# ---- values -> probe keys ----------------------------------------------------------


def _show(value: Any) -> str:
    if isinstance(value, TextLiteral):
        return value.text
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex()
    return str(value)


def _rounds_decimals(column: ColumnDescriptor) -> bool:
    """A binary floating-point column: a decimal literal means the nearest value of it."""
    lt = column.logical_type
    return column.physical_type in (PhysicalType.FLOAT, PhysicalType.DOUBLE) or (
        lt is not None and lt.kind is LogicalKind.FLOAT16
    )


def _literal(value: Any) -> str:
    """A literal as the text form writes it, cut short for a message."""
    text = literal_text(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


def _encode(value: Any, column: ColumnDescriptor) -> Encoded:
    """A literal's encodings in ``column``, read by the column's type.

    A ``str`` means what the same text in quotes means (``TextLiteral``), so a
    predicate and its text form agree. A literal that is not a value of the
    column's type is the user's mistake; one the column cannot hold is
    ``CannotMatch``; see :mod:`pybloom_async.predicate`.

    Raises
    ------
    PredicateError
        The literal is not a value of the column's type (naming the column,
        the value and the forms the column takes).
    """
    try:
        if isinstance(value, (str, TextLiteral)):
            return encode_text(value.text if isinstance(value, TextLiteral) else value, column)
        if isinstance(value, decimal.Decimal) and _rounds_decimals(column):
            # A literal written as 0.1 means the float nearest to it, as in SQL.
            if not value.is_finite():
                return encode_value(float(value), column)
            return encode_text(str(value), column)
        return encode_value(value, column)
    except (ValueEncodingError, UnsupportedTypeError) as exc:
        raise PredicateError(
            f"{_literal(value)} is not a value of this column: {exc.message}", column=column.path
        ) from None


def _sort_kind(column: ColumnDescriptor) -> str | None:
    """How min/max statistics of the column compare, or None when we do not use them."""
    pt = column.physical_type
    lt = column.logical_type
    kind = lt.kind if lt is not None else None
    if pt in (PhysicalType.INT32, PhysicalType.INT64):
        if kind is LogicalKind.INTEGER and lt is not None and lt.is_signed is False:
            return "uint"
        if kind in (
            None,
            LogicalKind.INTEGER,
            LogicalKind.DECIMAL,
            LogicalKind.DATE,
            LogicalKind.TIME,
            LogicalKind.TIMESTAMP,
        ):
            return "int"
        return None
    if pt in (PhysicalType.FLOAT, PhysicalType.DOUBLE):
        return "float" if kind is None else None
    if pt in (PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY):
        if kind is LogicalKind.DECIMAL:
            return "signed_be"
        if kind in (
            None,
            LogicalKind.STRING,
            LogicalKind.ENUM,
            LogicalKind.JSON,
            LogicalKind.BSON,
            LogicalKind.UUID,
        ):
            return "bytes"
        return None
    return None  # BOOLEAN, INT96: no usable order


def _sort_key(kind: str, raw: bytes, pt: PhysicalType) -> Any:
    if kind == "int":
        return int.from_bytes(raw, "little", signed=True)
    if kind == "uint":
        return int.from_bytes(raw, "little", signed=False)
    if kind == "float":
        return struct.unpack("<f" if pt is PhysicalType.FLOAT else "<d", raw)[0]
    if kind == "signed_be":
        return int.from_bytes(raw, "big", signed=True) if raw else 0
    return bytes(raw)


@dataclass
class _Leaf:
    """One ``=`` / ``IN`` of the predicate, prepared for one file's column."""

    label: str
    column: str
    desc: ColumnDescriptor | None = None
    missing_reason: str | None = None
    null_probe: bool = False
    null_safe: bool = False
    never_prunes: str | None = None
    cannot: list[str] = field(default_factory=list)
    kind: str | None = None
    keys: list[Any] = field(default_factory=list)
    hashes: np.ndarray[Any, Any] = field(default_factory=lambda: np.empty(0, np.uint64))

    @property
    def needs_filter(self) -> bool:
        return (
            self.desc is not None
            and self.desc.physical_type is not PhysicalType.BOOLEAN
            and not self.null_probe
            and self.never_prunes is None
            and len(self.keys) > 0
        )


def _label(p: Eq | In) -> str:
    text = str(p)
    return text if len(text) <= 120 else text[:117] + "..."


LeafCache = dict[tuple[int, ColumnDescriptor], "_Leaf"]


def _prepare(p: Eq | In, footer: Footer, cache: LeafCache | None = None) -> _Leaf:
    """The leaf for one file; files whose column has the same type share one."""
    try:
        desc = footer.metadata.schema.column(p.column)
    except PredicateError as exc:
        return _Leaf(_label(p), p.column, missing_reason=exc.message)
    if cache is None:
        return _build_leaf(p, desc)
    key = (id(p), desc)
    leaf = cache.get(key)
    if leaf is None:
        leaf = cache[key] = _build_leaf(p, desc)
    return leaf


_INT_LIMITS: dict[PhysicalType, tuple[int, int, np.dtype[Any]]] = {
    PhysicalType.INT32: (-(2**31), 2**31 - 1, np.dtype("<i4")),
    PhysicalType.INT64: (-(2**63), 2**63 - 1, np.dtype("<i8")),
}


def _plain_int(desc: ColumnDescriptor) -> bool:
    """INT32/INT64 holding plain signed integers of the full width (no scale, no unit)."""
    if desc.physical_type not in _INT_LIMITS:
        return False
    lt = desc.logical_type
    if lt is None:
        return True
    width = 32 if desc.physical_type is PhysicalType.INT32 else 64
    return lt.kind is LogicalKind.INTEGER and lt.is_signed is True and lt.bit_width == width


def _plain_string(desc: ColumnDescriptor) -> bool:
    lt = desc.logical_type
    return desc.physical_type is PhysicalType.BYTE_ARRAY and (
        lt is None or lt.kind in (LogicalKind.STRING, LogicalKind.ENUM, LogicalKind.JSON)
    )


def _sorted_unique(arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The distinct values of a 1-D array, sorted (``np.unique`` without its general machinery)."""
    arr = np.sort(arr)
    if len(arr) > 1:
        differs = arr[1:] != arr[:-1]
        if not differs.all():
            arr = arr[np.concatenate(([True], differs))]
    return arr


_NONE_TYPE = type(None)
#: Up to this many ints, an IN list is sorted and deduplicated in Python, beyond in numpy.
_SMALL_IN_LIST = 1000
_STRING_TYPES = frozenset((str, TextLiteral))


def _fast_alternatives(
    leaf: _Leaf, values: Sequence[Any], desc: ColumnDescriptor, types: set[type]
) -> bool:
    """Vectorised keys and hashes for long IN lists of plain ints or strings.

    Gives exactly what the general path gives (one PLAIN encoding per value),
    without a Python call per value into the encoder. Returns False when the
    values are not all of the simple kind (``types``: the set of their types),
    leaving the general path to decide.
    """
    if len(values) < 64:
        return False
    if types == {int} and _plain_int(desc):
        lo, hi, dtype = _INT_LIMITS[desc.physical_type]
        inside: Sequence[int] = values
        if min(values) < lo or max(values) > hi:
            # Checked here, not left to numpy: numpy 1.x wraps out-of-range ints around.
            inside = [v for v in values if lo <= v <= hi]
            for v in values:
                if not lo <= v <= hi and len(leaf.cannot) < 3:
                    leaf.cannot.append(f"{v}: outside the column's range [{lo}, {hi}]")
        if len(inside) <= _SMALL_IN_LIST:
            # Sorted (as the statistics bisect needs) and distinct; for a short list
            # Python's set and sort cost less than numpy's per-call overhead.
            leaf.keys = sorted(set(inside))
            arr = np.array(leaf.keys, dtype=dtype)
        else:
            arr = _sorted_unique(np.array(inside, dtype=dtype))
            leaf.keys = arr.tolist()
        leaf.hashes = hash_values(arr, desc.physical_type)
        return True
    if types <= _STRING_TYPES and _plain_string(desc):
        texts = [v.text if isinstance(v, TextLiteral) else v for v in values]
        if desc.logical_type is None and any(t[:2] in ("0x", "0X") for t in texts):
            return False  # unannotated binary: 0x... is also probed as the bytes it spells
        try:
            raw = sorted({t.encode() for t in texts})
        except UnicodeEncodeError:
            return False  # lone surrogates: let the encoder explain
        leaf.keys = list(raw)
        leaf.hashes = hash_values(raw, PhysicalType.BYTE_ARRAY)
        return True
    return False


def _build_leaf(p: Eq | In, desc: ColumnDescriptor) -> _Leaf:
    leaf = _Leaf(_label(p), p.column, desc=desc)
    values: Sequence[Any]
    if isinstance(p, Eq):
        if p.value is None:
            leaf.null_probe = True
            leaf.null_safe = p.null_safe
            return leaf
        values = (p.value,)
        types = {type(p.value)}
    else:
        values = p.values
        types = set(map(type, values))
        if _NONE_TYPE in types:
            # NULL in an IN list: nulls never prune.
            leaf.null_probe = True
            return leaf
    leaf.kind = _sort_kind(desc)
    if _fast_alternatives(leaf, values, desc, types):
        return leaf
    alternatives: list[tuple[Any, bytes]] = []
    for value in values:
        encoded = _encode(value, desc)  # PredicateError: not a value of the column's type
        if isinstance(encoded, NeverPrunes):
            leaf.never_prunes = f"{_show(value)}: {encoded.reason}"
            return leaf
        if isinstance(encoded, CannotMatch):
            if len(leaf.cannot) < 3:
                leaf.cannot.append(f"{_show(value)}: {encoded.reason}")
            continue
        for raw in encoded.alternatives:
            sort_key = _sort_key(leaf.kind, raw, desc.physical_type) if leaf.kind else 0
            alternatives.append((sort_key, raw))
    if leaf.kind:
        alternatives.sort(key=lambda a: a[0])
    leaf.keys = [a[0] for a in alternatives]
    # Hashing the PLAIN bytes is what the writer did, whatever the type.
    leaf.hashes = hash_values([a[1] for a in alternatives], PhysicalType.BYTE_ARRAY)
    return leaf


# ---- evaluation ------------------------------------------------------------------------


class _Outcome(NamedTuple):
    excluded: bool
    rule: Rule
    reason: str


_PENDING = object()
#: The first round's outcome for a leaf that only its filter can decide.
_UNDECIDED = _Outcome(False, Rule.MAY_MATCH, "")

#: One file's leaves decided up to their filter: per ``(id(leaf), row group)``, the outcome
#: when the column, types, nulls or statistics already decide, else the ``[lo, hi)`` range of
#: the leaf's sorted keys the filter must be asked about. Filled in the first round (no
#: filters yet) and read in the second, so nothing before the filter is computed twice.
_Decided = dict[tuple[int, int], "_Outcome | tuple[int, int]"]


def _stats_range(leaf: _Leaf, chunk: ColumnChunk) -> tuple[int, int] | None:
    """Indexes [lo, hi) of the leaf's sorted keys inside the chunk's [min, max]."""
    stats = chunk.statistics
    if leaf.kind is None or stats is None or stats.min_value is None or stats.max_value is None:
        return None
    assert leaf.desc is not None
    pt = leaf.desc.physical_type
    try:
        lo_key = _sort_key(leaf.kind, stats.min_value, pt)
        hi_key = _sort_key(leaf.kind, stats.max_value, pt)
    except (struct.error, ValueError):
        return None  # statistics of the wrong width: ignore them
    if isinstance(lo_key, float) and (math.isnan(lo_key) or math.isnan(hi_key)):
        return None
    if lo_key > hi_key:
        return None  # inconsistent statistics are not trusted
    return bisect.bisect_left(leaf.keys, lo_key), bisect.bisect_right(leaf.keys, hi_key)


def _before_filter(leaf: _Leaf, rg: RowGroup) -> _Outcome | tuple[int, int]:
    """What decides a leaf without its filter, or the keys ``[lo, hi)`` left for the filter."""
    if leaf.desc is None:
        return _Outcome(False, Rule.MISSING_COLUMN, f"{leaf.column}: {leaf.missing_reason}")
    chunk = rg.columns[leaf.desc.index]
    stats = chunk.statistics
    if leaf.null_probe:
        if leaf.null_safe and stats is not None and stats.null_count == 0:
            return _Outcome(True, Rule.NULLS, f"{leaf.column} has no nulls (statistics)")
        return _Outcome(False, Rule.NEVER_PRUNES, f"{leaf.label}: NULL probes never prune")
    if leaf.never_prunes is not None:
        return _Outcome(False, Rule.NEVER_PRUNES, leaf.never_prunes)
    if not leaf.keys:
        why = "; ".join(leaf.cannot) or "no value"
        return _Outcome(True, Rule.TYPE, f"{leaf.column} cannot hold {why}")
    if (
        stats is not None
        and stats.null_count is not None
        and chunk.num_values > 0
        and stats.null_count == chunk.num_values
        and leaf.desc.max_repetition_level == 0
    ):
        return _Outcome(True, Rule.NULLS, f"{leaf.column} is all nulls (statistics)")
    span = _stats_range(leaf, chunk)
    if span is None:
        return 0, len(leaf.keys)
    if span[0] >= span[1]:
        return _Outcome(True, Rule.STATISTICS, f"{leaf.label}: outside the min/max statistics")
    return span


def _eval_leaf(
    leaf: _Leaf,
    rg: RowGroup,
    filt: BloomFilterRead | object | None,
    strict: bool,
    path: str,
    decided: _Decided | None = None,
) -> _Outcome:
    if decided is None:
        before = _before_filter(leaf, rg)
    else:
        key = (id(leaf), rg.index)
        found = decided.get(key)
        before = decided[key] = _before_filter(leaf, rg) if found is None else found
    if isinstance(before, _Outcome):
        return before
    if filt is _PENDING:
        return _UNDECIDED
    assert leaf.desc is not None  # else _before_filter decided
    if not isinstance(filt, BloomFilterRead) or filt.state is FilterState.ABSENT:
        return _Outcome(False, Rule.NO_FILTER, f"{leaf.column} has no Bloom filter")
    if leaf.desc.physical_type is PhysicalType.BOOLEAN:
        # parquet-java (Spark) writes a filter for BOOLEAN columns but never
        # inserts into it: an all-zero filter that would exclude everything.
        return _Outcome(
            False, Rule.UNUSABLE_FILTER, f"{leaf.column}: BOOLEAN Bloom filters are not trusted"
        )
    if filt.state is FilterState.UNUSABLE or filt.filter is None:
        if strict:
            raise InvalidFilterError(
                f"unusable Bloom filter: {filt.reason}",
                path=path,
                row_group=rg.index,
                column=leaf.column,
            )
        return _Outcome(
            False, Rule.UNUSABLE_FILTER, f"{leaf.column}: unusable Bloom filter ({filt.reason})"
        )
    lo, hi = before
    if filt.filter.count_hashes(leaf.hashes[lo:hi]) == 0:
        return _Outcome(True, Rule.BLOOM_FILTER, f"{leaf.label}: excluded by the Bloom filter")
    return _Outcome(False, Rule.MAY_MATCH, f"{leaf.label}: the Bloom filter may contain it")


def _evaluate(
    p: Predicate,
    leaves: Mapping[int, _Leaf],
    rg: RowGroup,
    filters: Mapping[FilterKey, BloomFilterRead] | None,
    strict: bool,
    path: str,
    decided: _Decided | None = None,
) -> _Outcome:
    if isinstance(p, (Eq, In)):
        leaf = leaves[id(p)]
        filt: BloomFilterRead | object | None = _PENDING
        if filters is not None:
            filt = filters.get((rg.index, leaf.desc.path)) if leaf.desc is not None else None
        return _eval_leaf(leaf, rg, filt, strict, path, decided)
    if isinstance(p, And):
        kept: list[_Outcome] = []
        for child in p.children:
            out = _evaluate(child, leaves, rg, filters, strict, path, decided)
            if out.excluded:
                return out
            kept.append(out)
        return _Outcome(False, _kept_rule(kept), _join(o.reason for o in kept))
    if isinstance(p, Or):
        outs = []
        for child in p.children:
            out = _evaluate(child, leaves, rg, filters, strict, path, decided)
            if not out.excluded:
                return out
            outs.append(out)
        # Every part excluded it; name the first part's rule.
        return _Outcome(True, outs[0].rule, _join(o.reason for o in outs))
    raise PredicateError(f"unsupported predicate {type(p).__name__}")


def _kept_rule(outs: Sequence[_Outcome]) -> Rule:
    # The most telling reason a row group stays: a damaged filter first.
    for rule in (
        Rule.UNUSABLE_FILTER,
        Rule.MISSING_COLUMN,
        Rule.NO_FILTER,
        Rule.NEVER_PRUNES,
        Rule.MAY_MATCH,
    ):
        if any(o.rule is rule for o in outs):
            return rule
    return outs[0].rule if outs else Rule.MAY_MATCH


def _join(reasons: Any) -> str:
    seen: list[str] = []
    for r in reasons:
        if r and r not in seen:
            seen.append(r)
    text = "; ".join(seen)
    return text if len(text) <= 400 else text[:397] + "..."


def _leaves_of(p: Predicate) -> list[Eq | In]:
    if isinstance(p, (Eq, In)):
        return [p]
    if isinstance(p, (And, Or)):
        out: list[Eq | In] = []
        for c in p.children:
            out.extend(_leaves_of(c))
        return out
    raise PredicateError(f"unsupported predicate {type(p).__name__}")


#: The error on a column no file has lists at most this many of the files' columns...
_SHOWN_COLUMNS = 20
#: ... and counts up to this many distinct ones.
_COUNTED_COLUMNS = 1000


@dataclass
class _ColumnsSeen:
    """Which of the predicate's columns the files read so far have.

    A column that no file read has is a mistake (a typo, a wrong nesting), not
    an empty answer; a column only some files lack keeps those files
    (``Rule.MISSING_COLUMN``). The files' own columns are collected only while
    a predicate column is still unfound, for the error message.
    """

    wanted: tuple[str, ...]
    found: set[str] = field(default_factory=set)
    files: int = 0
    names: dict[str, None] = field(default_factory=dict)  # first seen first

    @classmethod
    def of(cls, where: Predicate) -> _ColumnsSeen:
        return cls(tuple(dict.fromkeys(p.column for p in _leaves_of(where))))

    def add(self, schema: Schema) -> None:
        self.files += 1
        if len(self.found) == len(self.wanted):
            return
        self.found.update(c for c in self.wanted if c not in self.found and c in schema)
        if len(self.found) < len(self.wanted):
            for column in schema.columns:
                if len(self.names) >= _COUNTED_COLUMNS:
                    break
                self.names.setdefault(column.path)

    def check(self) -> None:
        """Raise when at least one file was read and a predicate column is in none of them.

        Raises
        ------
        PredicateError
            Listing the columns the files do have.
        """
        missing = [c for c in self.wanted if c not in self.found]
        if not self.files or not missing:
            return
        names = list(self.names)
        shown = ", ".join(names[:_SHOWN_COLUMNS])
        if len(names) > _SHOWN_COLUMNS:
            count = len(names) if len(names) < _COUNTED_COLUMNS else f"at least {len(names)}"
            shown += f", ... ({count} columns)"
        files = "the file has" if self.files == 1 else f"the {self.files} files have"
        if len(missing) == 1:
            raise PredicateError(
                f"no file read has this column; {files}: {shown}", column=missing[0]
            )
        raise PredicateError(
            f"no file read has the columns {', '.join(map(repr, missing))}; {files}: {shown}"
        )


async def _prune_file(
    reader: BloomReader,
    location: str | FileInfo,
    where: Predicate,
    strict: bool,
    cache: LeafCache,
    seen: _ColumnsSeen,
) -> list[Verdict]:
    path = location.path if isinstance(location, FileInfo) else os.fspath(location)
    try:
        footer = await reader.footer(location)
        leaves = {id(p): _prepare(p, footer, cache) for p in _leaves_of(where)}
        seen.add(footer.metadata.schema)
        if strict:
            for leaf in leaves.values():
                if leaf.desc is None:
                    raise PredicateError(
                        leaf.missing_reason or "no such column", path=path, column=leaf.column
                    )
        row_groups = footer.metadata.row_groups
        # Round 1 without filters: row groups the types and statistics already
        # exclude need no filter read at all; their outcome is final.
        decided: _Decided = {}
        first = [_evaluate(where, leaves, rg, None, strict, path, decided) for rg in row_groups]
        undecided = [
            rg.index for rg, out in zip(row_groups, first, strict=True) if not out.excluded
        ]
        columns = sorted(
            {leaf.desc.path for leaf in leaves.values() if leaf.needs_filter and leaf.desc}
        )
        filters: dict[FilterKey, BloomFilterRead] = {}
        if undecided and columns:
            _, filters = await reader.footer_and_filters(location, columns, undecided)
        verdicts = []
        for rg, out in zip(row_groups, first, strict=True):
            if not out.excluded:
                out = _evaluate(where, leaves, rg, filters, strict, path, decided)
            verdicts.append(
                Verdict(path, rg.index, rg.num_rows, not out.excluded, out.reason, out.rule)
            )
        return verdicts
    except PredicateError as exc:
        # A literal that is not of its column's type (or, strict, a missing column):
        # the predicate is wrong, not the file.
        raise exc.with_context(path=path) from None
    except PyBloomError as exc:
        if strict:
            raise exc.with_context(path=path) from None
        return [Verdict(path, None, None, True, f"file not pruned: {exc}", Rule.UNREADABLE)]


async def _for_each(
    items: Sequence[Any],
    work: Callable[[Any], Any],
    limit: int,
    progress: Callable[[int, int], None] | None = None,
) -> list[Any]:
    """Run ``await work(item)`` for every item, ``limit`` at a time; results in item order.

    ``limit`` workers take the items in turn from one iterator, so the tasks alive at
    once do not grow with the number of items (a task per item, waiting on a limiter,
    cost about 6 KiB each: 60 MiB for 10,000 files). The first PyBloomError (strict
    mode) cancels the rest and is raised as it is, not wrapped in an exception group.
    """
    results: list[Any] = [None] * len(items)
    failure: list[PyBloomError] = []
    done = 0
    feed = iter(enumerate(items))  # shared: next() runs on the event loop, between awaits

    async def worker(scope: anyio.CancelScope) -> None:
        nonlocal done
        for i, item in feed:
            try:
                results[i] = await work(item)
            except PyBloomError as exc:
                failure.append(exc)
                scope.cancel()
                return
            done += 1
            if progress is not None:
                progress(done, len(items))

    async with anyio.create_task_group() as tg:
        for _ in range(min(limit, len(items))):
            tg.start_soon(worker, tg.cancel_scope)
    if failure:
        raise failure[0]
    return results


async def expand_paths(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo],
    reader: BloomReader,
    *,
    unreadable: list[SourceError] | None = None,
) -> list[str | FileInfo]:
    """Files named directly stay as they are; directories and prefixes become their files.

    Each file comes once, with the spelling it was first given: named twice, or
    directly and through its directory, it is not read twice. Local paths are
    compared by their real path (``d/a.parquet``, ``./d/a.parquet`` and a
    symbolic link to it are one file); URLs as written.

    Parameters
    ----------
    unreadable:
        If given, a location that cannot be listed or names no Parquet file (a
        path that does not exist, an empty prefix, a directory or prefix without
        ``*.parquet`` files, a listing refused) is recorded here, as an error
        naming it, instead of raising or adding nothing. Local files named
        directly are checked here too; object-store files named directly are
        not (reading them reports a missing one).

    Raises
    ------
    SourceNotFoundError
        Without ``unreadable``: a path does not exist, or nothing lies under a prefix.
    SourceError
        Without ``unreadable``: listing failed.
    InvalidArgumentError
        A location is not a valid path or URL.
    """
    if isinstance(paths, (str, os.PathLike, FileInfo)):
        paths = [paths]
    out: list[str | FileInfo] = []
    for p in paths:
        if isinstance(p, FileInfo):
            out.append(p)
            continue
        text = os.fspath(p)
        local = "://" not in text
        if (
            text.lower().endswith(".parquet")
            and not text.endswith("/")
            and not (local and unreadable is not None)  # else: checked, as below
        ):
            out.append(text)
            continue
        if local and os.path.isfile(text):
            out.append(text)
            continue
        try:
            found = await list_parquet_files(
                text, options=reader.options, stats=reader.stats, limiter=None
            )
        except SourceError as exc:
            if unreadable is None:
                raise
            exc.with_context(path=text)
            unreadable.append(exc)
            continue
        if not found and unreadable is not None:
            unreadable.append(
                SourceNotFoundError("no Parquet files under this directory or prefix", path=text)
            )
        out.extend(found)
    return _once_each(out)


_File = TypeVar("_File", bound="str | FileInfo")


def _once_each(files: Sequence[_File]) -> list[_File]:
    """Each file once, where it first comes: local paths compared by their real path."""
    seen: set[str] = set()
    real_dirs: dict[str, str] = {}
    out = []
    for entry in files:
        text = entry.path if isinstance(entry, FileInfo) else entry
        key = text if "://" in text else _real_path(text, real_dirs)
        if key not in seen:
            seen.add(key)
            out.append(entry)
    return out


def _real_path(path: str, real_dirs: dict[str, str]) -> str:
    """``os.path.realpath(path)``, resolving each directory once (a listing shares them)."""
    head, name = os.path.split(path)
    real = real_dirs.get(head)
    if real is None:
        real = real_dirs[head] = os.path.realpath(head or os.curdir)
    full = os.path.join(real, name)
    return os.path.realpath(full) if os.path.islink(full) else full


def files_at_once(concurrency: int | None, config: ReaderConfig) -> int:
    """The number of files to read at once: ``concurrency``, or the config's.

    Raises
    ------
    InvalidArgumentError
        ``concurrency`` is not a positive int.
    """
    if concurrency is None:
        return config.concurrency  # checked by ReaderConfig
    return positive_int("concurrency", concurrency)


async def prune(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo],
    where: Predicate | str,
    *,
    strict: bool = False,
    concurrency: int | None = None,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    config: ReaderConfig | None = None,
    reader: BloomReader | None = None,
    progress: Callable[[int, int], None] | None = None,
    require_columns: bool = True,
) -> list[Verdict]:
    """Decide, for every row group of every file, whether it may hold matching rows.

    Parameters
    ----------
    paths:
        Files, directories or object-store prefixes (``s3://bucket/table/``);
        directories and prefixes expand to their ``*.parquet`` files.
    where:
        A predicate built with :func:`pybloom_async.col`, or its text form
        (``"id = 42 AND email IN ('a', 'b')"``).
    strict:
        Raise on an unreadable file, a damaged filter or a missing column
        instead of keeping the row group with a reason.
    concurrency:
        Files read at once (default: the reader config's, 64).
    options:
        Object-store options (endpoint, region, credentials, allow_http, ...);
        by default obstore reads the standard environment variables.
    stats:
        Counts requests and bytes.
    config, reader:
        Reader limits, or a long-lived :class:`BloomReader` whose cache to use.
    progress:
        Called as ``progress(done, total)`` after each file.
    require_columns:
        Raise when a column of ``where`` is in none of the files read (at
        least one read). False when ``paths`` are a part of a larger set whose
        other files may have it. Files that lack a column some other file has
        are kept (``Rule.MISSING_COLUMN``) either way.

    Returns
    -------
    list of Verdict
        In file order, then row-group order.

    Raises
    ------
    PredicateError
        ``where`` is malformed; a literal is not a value of its column's type
        in some file (``'2024/01/05'`` for a DATE; the message names the file,
        column, value and accepted forms), with or without ``strict``; or a
        column is in none of the files read (``require_columns``), the
        message listing the columns they have.
    InvalidArgumentError
        ``concurrency`` is not a positive int.
    PyBloomError
        With ``strict=True``, the first problem met.
    """
    predicate = as_predicate(where)
    rdr = reader or BloomReader(
        config=config or ReaderConfig(), options=options, stats=stats, max_files=1 << 20
    )
    limit = files_at_once(concurrency, rdr.config)  # before any listing
    files = await expand_paths(paths, rdr)
    cache: LeafCache = {}  # values encoded once per column type, not once per file
    seen = _ColumnsSeen.of(predicate)

    async def one(location: str | FileInfo) -> list[Verdict]:
        try:
            return await _prune_file(rdr, location, predicate, strict, cache, seen)
        finally:
            if reader is None:
                # The run's own reader caches a file only while it is pruned (its footer
                # is read, then its filters); kept to the end, every footer and filter of
                # the run would stay in memory: about 5 KiB per small file.
                key = location.path if isinstance(location, FileInfo) else os.fspath(location)
                rdr._drop(key)

    try:
        results = await _for_each(files, one, limit, progress)
    finally:
        if reader is None:
            rdr.clear()
    if require_columns:
        seen.check()
    return [v for per_file in results for v in per_file]


#: Up to this many local files, the *_sync functions read in the calling thread, one file
#: after another, with no event loop (see reader.BlockingLocalReader); more files, or any
#: URL or directory, go through :func:`prune` and its concurrent reads. Starting the loop
#: and its threads costs about as much CPU as pruning a few files from the page cache,
#: while files on a slow disk are better read concurrently: a few is where both meet.
BLOCKING_MAX_FILES = 4


def prune_sync(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo],
    where: Predicate | str,
    **kwargs: Any,
) -> list[Verdict]:
    """:func:`prune` for scripts (not from inside an event loop); the same arguments.

    A few local files (``BLOCKING_MAX_FILES``) are read in the calling thread
    without starting an event loop: the same reader, planner and pruning code,
    the same verdicts, a fraction of the time.

    Raises
    ------
    EventLoopError
        Called from a thread that runs an event loop (Jupyter, async code): use
        ``await prune(...)`` there.
    """
    refuse_running_loop("prune_sync", "prune")
    local = blocking_local_paths(paths, BLOCKING_MAX_FILES) if not kwargs.get("reader") else None
    if local is not None:
        return _prune_blocking(_once_each(local), where, **kwargs)
    return anyio.run(lambda: prune(paths, where, **kwargs))


def _prune_blocking(
    files: Sequence[str],
    where: Predicate | str,
    *,
    strict: bool = False,
    concurrency: int | None = None,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    config: ReaderConfig | None = None,
    progress: Callable[[int, int], None] | None = None,
    require_columns: bool = True,
) -> list[Verdict]:
    """:func:`prune` over local files, one after another, with blocking reads and no loop."""
    predicate = as_predicate(where)
    rdr = BlockingLocalReader(
        config=config or ReaderConfig(), options=options, stats=stats, max_files=1 << 20
    )
    files_at_once(concurrency, rdr.config)  # validated as prune() does; files go one by one
    cache: LeafCache = {}
    seen = _ColumnsSeen.of(predicate)
    out: list[Verdict] = []
    with rdr:
        for done, path in enumerate(files, 1):
            out.extend(run_blocking(_prune_file(rdr, path, predicate, strict, cache, seen)))
            if progress is not None:
                progress(done, len(files))
    if require_columns:
        seen.check()
    return out


def _probe_values(values: Any) -> list[Any]:
    """The values to probe: a str, bytes or any non-iterable is one value, not its items."""
    if isinstance(values, (str, bytes, bytearray, memoryview, TextLiteral)):
        return [values]
    try:
        return list(values)
    except TypeError:  # not iterable: an int, a float, a date, None, ...
        return [values]


async def probe(
    path: str | os.PathLike[str] | FileInfo,
    column: str,
    values: Any,
    *,
    strict: bool = False,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    config: ReaderConfig | None = None,
    reader: BloomReader | None = None,
) -> list[ProbeResult]:
    """For every row group and value, whether the file's data rules the value out.

    Like DuckDB's ``parquet_bloom_probe``, with the same exact conversions and
    statistics checks as :func:`prune`. Text values (``TextLiteral``, or str for
    non-string columns via the CLI) are read by the column's type.

    ``values`` is a list (or any iterable) of values, or one value: a str,
    bytes or any non-iterable value (``probe(path, "id", 42)``) is probed as
    itself, never as its characters or bytes.

    Raises
    ------
    PredicateError
        The column is not in the file (the message lists those it has), or a
        value is not one of the column's type.
    ParquetFormatError, SourceError, ...
        The file cannot be read.
    """
    rdr = reader or BloomReader(config=config or ReaderConfig(), options=options, stats=stats)
    # One open: the footer and the column's filters (PredicateError names an unknown column).
    footer, filters = await rdr.footer_and_filters(path, [column])
    desc = footer.metadata.schema.column(column)
    eqs = [Eq(column, v) for v in _probe_values(values)]
    try:
        leaves = {id(e): _prepare(e, footer) for e in eqs}
    except PredicateError as exc:
        raise exc.with_context(path=footer.path) from None
    out = []
    for rg in footer.metadata.row_groups:
        for e in eqs:
            o = _eval_leaf(
                leaves[id(e)], rg, filters.get((rg.index, desc.path)), strict, footer.path
            )
            out.append(
                ProbeResult(footer.path, rg.index, desc.path, e.value, o.excluded, o.reason, o.rule)
            )
    return out


def probe_sync(
    path: str | os.PathLike[str] | FileInfo, column: str, values: Any, **kwargs: Any
) -> list[ProbeResult]:
    """:func:`probe` for scripts (not from inside an event loop); the same arguments.

    A local file is read in the calling thread without an event loop, as in
    :func:`prune_sync`.

    Raises
    ------
    EventLoopError
        Called from a thread that runs an event loop: use ``await probe(...)`` there.
    """
    refuse_running_loop("probe_sync", "probe")
    if not kwargs.get("reader") and blocking_local_paths(path, 1) is not None:
        with BlockingLocalReader(
            config=kwargs.get("config") or ReaderConfig(),
            options=kwargs.get("options"),
            stats=kwargs.get("stats"),
        ) as reader:
            return run_blocking(probe(path, column, values, **{**kwargs, "reader": reader}))
    return anyio.run(lambda: probe(path, column, values, **kwargs))


# ---- Apache Paimon data files -------------------------------------------------------

#: Containers larger than this are not read (Paimon's are KiB to MiB).
MAX_PAIMON_INDEX_BYTES = 256 * 1024 * 1024


_PAIMON_TIMESTAMP_FORM = "'YYYY-MM-DD[THH:MM[:SS[.ffffff]]][Z|+HH:MM]'"


def _paimon_text_column(root: str, family: str, column: str) -> ColumnDescriptor:
    """The Parquet column type whose text forms a Paimon type's literals take."""
    if root == "DATE":
        return ColumnDescriptor.of(PhysicalType.INT32, LogicalType(LogicalKind.DATE), path=column)
    if root == "TIME":
        logical = LogicalType.time(TimeUnit.MILLIS, False)
        return ColumnDescriptor.of(PhysicalType.INT32, logical, path=column)
    if family == "timestamp":
        logical = LogicalType.timestamp(TimeUnit.MICROS, False)
        return ColumnDescriptor.of(PhysicalType.INT64, logical, path=column)
    if family in ("float", "double"):
        return ColumnDescriptor.of(family.upper(), path=column)
    if family == "string":
        return ColumnDescriptor.of(
            PhysicalType.BYTE_ARRAY, LogicalType(LogicalKind.STRING), path=column
        )
    if family == "binary":
        return ColumnDescriptor.of(PhysicalType.BYTE_ARRAY, path=column)
    return ColumnDescriptor.of(PhysicalType.INT64, path=column)


def _paimon_forms(root: str, family: str, paimon_type: str) -> str:
    """How a value of a Paimon type is written: the text forms, then the Python types."""
    a = "an" if paimon_type[:1].upper() in "AEIOU" else "a"
    if root == "DATE":
        return "a DATE column takes 'YYYY-MM-DD' (datetime.date in Python)"
    if root == "TIME":
        return "a TIME column takes 'HH:MM[:SS[.fff]]' (datetime.time in Python)"
    if family == "timestamp":
        return f"a {paimon_type} column takes {_PAIMON_TIMESTAMP_FORM} (datetime in Python)"
    if family in ("float", "double"):
        return f"a {paimon_type} column takes numbers such as 1.5, NaN or inf (float in Python)"
    if family == "string":
        return f"a {paimon_type} column takes text in single quotes (str in Python)"
    if family == "binary":
        return f"a {paimon_type} column takes binary as X'00ff' or text (bytes in Python)"
    return f"{a} {paimon_type} column takes integers such as 42 (int in Python)"


def _paimon_literals(values: Sequence[Any], paimon_type: str, column: str) -> list[Any]:
    """Read literals as the Python values a Paimon type takes, by the rule of :func:`prune`.

    Text (a ``TextLiteral`` or a str) is read with the same forms as for a
    Parquet column of the same kind. A value of a kind the type cannot take is
    an error; a well-formed one it cannot hold (300 for TINYINT, 1.5 for INT)
    is left to the index, which keeps the file.

    Raises
    ------
    PredicateError
        A literal is not a value of the type (naming the column, the value
        and the forms the type takes).
    """
    from ..paimon.container import paimon_hash, paimon_type_info

    root, family = paimon_type_info(paimon_type)

    def wrong(value: Any, detail: str = "") -> PredicateError:
        forms = _paimon_forms(root, family, paimon_type)
        return PredicateError(
            f"{_literal(value)} is not a {paimon_type} value{detail}; {forms}", column=column
        )

    def read(value: Any) -> Any:
        out = value
        if isinstance(value, (str, TextLiteral)):
            text = value.text if isinstance(value, TextLiteral) else value
            try:
                out = parse_text_value(text, _paimon_text_column(root, family, column))
            except ValueEncodingError:
                raise wrong(value) from None
            if isinstance(out, WithNanoseconds):
                out = out.value  # Paimon keeps microseconds at most and floors the rest
            elif isinstance(out, str) and family == "binary":
                try:
                    out = out.encode("utf-8")
                except UnicodeEncodeError:
                    raise wrong(value, " (the text is not valid UTF-8)") from None
        if isinstance(out, decimal.Decimal):
            if family in ("float", "double"):
                return float(out)
            if out.is_finite() and out == out.to_integral_value():
                return int(out)
        return out

    def checked(value: Any) -> bool:
        # Numbers go to the index as they are: one the type cannot hold keeps the file.
        return value is not None and not (
            family in ("int", "float", "double")
            and isinstance(value, (int, float, decimal.Decimal))
            and not isinstance(value, bool)
        )

    out = [read(v) for v in values]
    kinds = [(v, o) for v, o in zip(values, out, strict=True) if checked(o)]
    try:
        paimon_hash([o for _, o in kinds], paimon_type)  # all at once: the usual case
    except (UnsupportedTypeError, ValueEncodingError):
        for value, o in kinds:  # find the one of the wrong kind, if any
            try:
                paimon_hash([o], paimon_type)
            except UnsupportedTypeError as exc:
                raise wrong(value, f" ({exc.message})") from None
            except ValueEncodingError:
                pass  # well-formed, outside the type's range: the index keeps the file
    return out


def _paimon_tree(p: Predicate, types: Mapping[str, Any]) -> Any:
    def type_of(column: str) -> str:
        t = types.get(column)
        if t is None:
            raise PredicateError("no Paimon type given for this column", column=column)
        return str(t[0] if isinstance(t, tuple) else t)

    if isinstance(p, Eq):
        if p.value is None:
            return ("=", p.column, None)
        (value,) = _paimon_literals([p.value], type_of(p.column), p.column)
        return ("=", p.column, value)
    if isinstance(p, In):
        return ("in", p.column, _paimon_literals(p.values, type_of(p.column), p.column))
    if isinstance(p, And):
        return ("and", *(_paimon_tree(c, types) for c in p.children))
    if isinstance(p, Or):
        return ("or", *(_paimon_tree(c, types) for c in p.children))
    raise PredicateError(f"unsupported predicate {type(p).__name__}")


async def _read_whole(reader: BloomReader, location: str) -> bytes | None:
    from ..errors import SourceNotFoundError

    try:
        async with reader.open(location) as source:
            size = await source.size()
            if size > MAX_PAIMON_INDEX_BYTES:
                raise PyBloomError(
                    f"Paimon index of {size} bytes is above the limit of {MAX_PAIMON_INDEX_BYTES}",
                    path=location,
                )
            return await source.read_range(0, size)
    except SourceNotFoundError:
        return None


async def prune_paimon(
    data_files: Sequence[str | os.PathLike[str]],
    where: Predicate | str,
    column_types: Mapping[str, str | tuple[str, int | None]],
    *,
    embedded: Mapping[str, bytes] | None = None,
    strict: bool = False,
    concurrency: int = 64,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    reader: BloomReader | None = None,
) -> list[Verdict]:
    """Decide which Apache Paimon data files may hold matching rows, from their file indexes.

    Each data file's ``bloom-filter`` index is read from ``<data file>.index``
    next to it, or taken from ``embedded`` (the ``_EMBEDDED_FILE_INDEX`` bytes
    of its manifest entry, keyed by the data file's path). A file without an
    index, with a damaged one, or with columns the index does not cover is
    kept with the reason. Verdicts are per file (``row_group`` is None).

    Parameters
    ----------
    data_files:
        Paths or URLs of Paimon data files (a path ending in ``.index`` is taken
        as the container itself).
    where:
        A predicate or its text form: ``=``, ``IN``, AND, OR.
    column_types:
        Paimon type of every column in ``where`` (``"BIGINT"``, ``"VARCHAR"``,
        ``("TIMESTAMP", 3)``); Paimon's containers do not record types.
    concurrency:
        Containers read at once.

    Raises
    ------
    PredicateError
        ``where`` is malformed or names a column without a type.
    InvalidArgumentError
        ``concurrency`` is not a positive int.
    PyBloomError
        With ``strict=True``, the first damaged container or unreadable file.
    """
    from ..paimon.container import paimon_index_file_name, paimon_prune

    limit = positive_int("concurrency", concurrency)
    predicate = as_predicate(where)
    tree = _paimon_tree(predicate, column_types)
    rdr = reader or BloomReader(options=options, stats=stats, max_files=0)
    files = [os.fspath(f) for f in data_files]

    async def one(path: str) -> Verdict:
        try:
            if embedded is not None and path in embedded:
                container: bytes | None = embedded[path]
            else:
                index_path = path if path.endswith(".index") else paimon_index_file_name(path)
                container = await _read_whole(rdr, index_path)
            keep, reason = paimon_prune(container, tree, column_types, strict=strict)
        except PyBloomError as exc:
            if strict:
                raise exc.with_context(path=path) from None
            return Verdict(path, None, None, True, f"file not pruned: {exc}", Rule.UNREADABLE)
        if container is None:
            rule = Rule.NO_FILTER
        else:
            rule = Rule.MAY_MATCH if keep else Rule.BLOOM_FILTER
        return Verdict(path, None, None, keep, reason, rule)

    return list(await _for_each(files, one, limit))


def prune_paimon_sync(
    data_files: Sequence[str | os.PathLike[str]],
    where: Predicate | str,
    column_types: Mapping[str, str | tuple[str, int | None]],
    **kwargs: Any,
) -> list[Verdict]:
    """:func:`prune_paimon` for scripts: runs its own event loop (not from inside one).

    Raises
    ------
    EventLoopError
        Called from a thread that runs an event loop: use ``await prune_paimon(...)`` there.
    """
    return run_in_new_loop(
        lambda: prune_paimon(data_files, where, column_types, **kwargs),
        caller="prune_paimon_sync",
        instead="prune_paimon",
    )
