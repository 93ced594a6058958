"""Pruning whole files by their Paimon file index."""

from __future__ import annotations

import decimal
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import (
    PredicateError,
    PyBloomError,
    SourceNotFoundError,
    UnsupportedTypeError,
    ValueEncodingError,
)
from ..parquet import ColumnDescriptor, LogicalKind, LogicalType, TimeUnit
from ..predicate import (
    And,
    Between,
    Compare,
    Eq,
    In,
    IsNotNull,
    Not,
    NotIn,
    Or,
    Predicate,
    TextLiteral,
    as_predicate,
    normal_form,
)
from ..pruning.literals import literal_of
from ..pruning.verdicts import Rule, Verdict
from ..read.reader import BloomReader
from ..read.run import RunOptions, open_run, run_options
from ..tasks.loops import sync_twin
from ..tasks.workers import for_each
from ..types import PhysicalType
from ..values import WithNanoseconds, parse_text_value

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..read.run import RunKeywords


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
    from .types import paimon_type_info
    from .values import paimon_hash

    root, family = paimon_type_info(paimon_type)

    def wrong(value: Any, detail: str = "") -> PredicateError:
        forms = _paimon_forms(root, family, paimon_type)
        return PredicateError(
            f"{literal_of(value)} is not a {paimon_type} value{detail}; {forms}", column=column
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
    if isinstance(p, (And, Or)):
        parts = [_paimon_tree(c, types) for c in p.children]
        kept = [part for part in parts if part is not None]
        if isinstance(p, And):
            return ("and", *kept) if kept else None  # None: every file may match
        return ("or", *parts) if len(kept) == len(parts) else None
    # Ranges and negations: Paimon's Bloom filters cannot rule a file out (None), but a
    # literal of the wrong kind is still the caller's mistake.
    test = p.child if isinstance(p, Not) else p
    for column, values in _literals_of(test):
        _paimon_literals([v for v in values if v is not None], type_of(column), column)
    return None


def _literals_of(p: Predicate) -> list[tuple[str, tuple[Any, ...]]]:
    if isinstance(p, Between):
        return [(p.column, (p.low, p.high))]
    if isinstance(p, (Compare, Eq)):
        return [(p.column, (p.value,))]
    if isinstance(p, NotIn):
        return [(p.column, p.values)]
    if isinstance(p, IsNotNull):
        return []
    raise PredicateError(f"unsupported predicate {type(p).__name__}")


async def _read_whole(reader: BloomReader, location: str) -> bytes | None:
    def too_large(size: int) -> PyBloomError:
        return PyBloomError(
            f"Paimon index of {size} bytes is above the limit of {MAX_PAIMON_INDEX_BYTES}",
            path=location,
        )

    try:
        async with reader.open(location) as source:
            return await source.read_whole(MAX_PAIMON_INDEX_BYTES, too_large)
    except SourceNotFoundError:
        return None


async def prune_paimon(
    data_files: Sequence[str | os.PathLike[str]],
    where: Predicate | str,
    column_types: Mapping[str, str | tuple[str, int | None]],
    *,
    embedded: Mapping[str, bytes] | None = None,
    run: RunOptions | None = None,
    **keywords: Unpack[RunKeywords],
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
    run, **keywords:
        The run's options (:class:`~pybloom_async.RunOptions`): ``concurrency`` is the
        containers read at once; ``on_error="raise"`` raises on a damaged container
        (default ``"skip"``: the file is kept, with the reason).

    Raises
    ------
    PredicateError
        ``where`` is malformed or names a column without a type.
    InvalidArgumentError
        ``concurrency`` is not a positive int.
    PyBloomError
        With ``on_error="raise"``, the first damaged container or unreadable file.
    """
    from .container import paimon_index_file_name
    from .prune import paimon_prune

    predicate = as_predicate(where)
    tree = _paimon_tree(normal_form(predicate), column_types)
    files = [os.fspath(f) for f in data_files]

    opts = run_options(run, keywords, "prune_paimon")
    strict = opts.raises
    async with open_run(opts) as r:

        async def one(path: str) -> Verdict:
            if tree is None:
                why = "Paimon file indexes answer = and IN only: every file may match"
                return Verdict(path, None, None, True, why, Rule.NEVER_PRUNES)
            try:
                if embedded is not None and path in embedded:
                    container: bytes | None = embedded[path]
                else:
                    index_path = path if path.endswith(".index") else paimon_index_file_name(path)
                    container = await _read_whole(r.reader, index_path)
                keep, reason = paimon_prune(container, tree, column_types, on_error=opts.on_error)
            except PyBloomError as exc:
                if strict:
                    raise exc.with_context(path=path) from None
                return Verdict(path, None, None, True, f"file not pruned: {exc}", Rule.UNREADABLE)
            if container is None:
                rule = Rule.NO_FILTER
            else:
                rule = Rule.MAY_MATCH if keep else Rule.BLOOM_FILTER
            return Verdict(path, None, None, keep, reason, rule)

        return list(await for_each(files, one, r.limit, r.progress))


#: ``prune_paimon`` for scripts (its own event loop; not from inside one).
prune_paimon_sync = sync_twin(prune_paimon)
