"""Pruning with a Paimon file index: may a file contain a value, which files a predicate keeps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..checks import OnError, error_policy, on_error_of
from ..errors import (
    PaimonIndexError,
    PredicateError,
    UnsupportedTypeError,
    ValueEncodingError,
)
from .container import PaimonFileIndex, parse_paimon_file_index
from .filter import BloomFilter64
from .types import parse_paimon_type
from .values import as_list, paimon_hash

# ---- pruning --------------------------------------------------------------------------------

Verdict = tuple[bool, str]
#: A predicate over columns, as plain data:
#: ``{column: values, ...}`` (AND of ``IN`` lists; a scalar is ``=``),
#: ``("=", column, value)``, ``("in", column, values)``,
#: ``("and", p, p, ...)``, ``("or", p, p, ...)``.
Predicate = Mapping[str, Any] | tuple[Any, ...]


def _probe_list(values: Any) -> Any:
    """Values of an IN list: a lone str/bytes/scalar becomes a one-item list."""
    if type(values).__module__.startswith("pyarrow") or isinstance(values, np.ndarray):
        return values
    return as_list(values)


def paimon_may_contain(
    index: bytes | bytearray | memoryview | None,
    data_type: str,
    values: Any,
    precision: int | None = None,
    *,
    on_error: OnError | None = None,
    strict: bool | None = None,
) -> Verdict:
    """Decide whether a data file may hold any of ``values`` in one column (``=`` / ``IN``).

    Answers as Paimon's bloom-filter index reader does, with two deliberate
    differences. A probe of 0.0 or -0.0 on a FLOAT/DOUBLE column checks both
    zeros (Paimon hashes them differently, but IEEE equality treats them as
    equal), which can only keep more files. A filter whose k is 128 or more
    (only absurd fpp settings produce one) is read with the k it was written
    with, where Paimon's reader misreads k and keeps every file; the writer
    set its bits with that k, so the exact answer is still never a false
    negative.

    Parameters
    ----------
    index:
        The column's ``bloom-filter`` payload from the container; ``b""`` for
        an empty entry; None when the container has no such index.
    data_type, precision:
        The column's Paimon type, as for :func:`paimon_hash`.
    values:
        The probed value, or an iterable / numpy / pyarrow array of them (IN).
    on_error:
        ``"skip"`` (default): a damaged filter or a value that cannot be hashed keeps the
        file, with the reason. ``"raise"``: it raises.
    strict:
        Deprecated: ``strict=True`` is ``on_error="raise"`` (a DeprecationWarning).

    Returns
    -------
    (keep, reason)
        ``keep`` is False only when no probed value can be in the file.

    Raises
    ------
    PaimonIndexError, UnsupportedTypeError, ValueEncodingError
        Only with ``on_error="raise"``, for a damaged filter, a type Paimon cannot
        index, or a value that cannot be hashed exactly.
    InvalidArgumentError
        ``on_error`` is not ``"raise"`` or ``"skip"``, or ``strict`` is given with it.
    """
    raises = error_policy(on_error, strict) == "raise"
    if index is None:
        return True, "no bloom-filter index for this column"
    probes = _probe_list(values)
    try:
        ptype = parse_paimon_type(data_type, precision)
        if len(index) == 0:
            # Paimon writes start -1 when it had nothing to index; its reader
            # (EmptyFileIndexReader) answers skip for every equality.
            return False, "empty bloom-filter entry: the column holds no indexed value"
        bloom = BloomFilter64.from_bytes(index)
        answers = bloom.might_contain(probes, ptype.describe())
        if ptype.family in ("float", "double") and not answers.any():
            hashes = paimon_hash(probes, ptype.describe())
            zeros = paimon_hash([0.0, -0.0], ptype.describe())
            if np.isin(hashes, zeros).any() and bloom.test_hashes(zeros).any():
                return True, "bloom filter may contain a signed zero (0.0 / -0.0 are both probed)"
    except (PaimonIndexError, UnsupportedTypeError, ValueEncodingError) as exc:
        if raises:
            raise
        return True, f"kept: {exc}"
    if answers.size == 0:
        return False, "no value probed"
    hit = np.flatnonzero(answers)
    if hit.size:
        first = int(hit[0])
        shown = probes[first] if isinstance(probes, list) else f"#{first}"
        if isinstance(probes, list) and probes[first] is None:
            return True, "null literal: Paimon keeps the file"
        return True, f"bloom filter may contain {shown!r}"
    return False, f"bloom filter excludes all {answers.size} probed value(s)"


def _column_type(column_types: Mapping[str, Any], column: str) -> tuple[str, int | None]:
    try:
        spec = column_types[column]
    except KeyError:
        raise PredicateError(f"no Paimon type given for column {column!r}", column=column) from None
    if isinstance(spec, str):
        return spec, None
    if isinstance(spec, tuple) and len(spec) == 2:
        return str(spec[0]), spec[1]
    raise PredicateError(
        f"type of column {column!r} must be a type name or (type name, precision)", column=column
    )


def paimon_prune(
    container: bytes | bytearray | memoryview | PaimonFileIndex | None,
    predicate: Predicate,
    column_types: Mapping[str, str | tuple[str, int | None]],
    *,
    on_error: OnError | None = None,
    strict: bool | None = None,
) -> Verdict:
    """Decide whether a Paimon data file may match a predicate, from its file-index container.

    ``=`` and ``IN`` consult the column's bloom filter (see
    :func:`paimon_may_contain`); AND skips when any part skips, OR only when
    every part does. A column the container does not index, or an index type
    other than ``bloom-filter``, keeps the file, as Paimon does.

    Parameters
    ----------
    container:
        The container bytes (the ``.index`` file or the manifest's embedded
        bytes), an already parsed :class:`PaimonFileIndex`, or None when the
        data file has no index.
    predicate:
        ``{column: values}`` (AND of IN lists; a scalar means ``=``), or nested
        tuples ``("=", column, value)``, ``("in", column, values)``,
        ``("and", p, ...)``, ``("or", p, ...)``.
    column_types:
        Paimon type of every probed column: a name such as ``"BIGINT"`` or
        ``("TIMESTAMP", 3)``. The container does not record types.
    on_error:
        ``"skip"`` (default): a damaged container, filter or value keeps the file, with
        the reason. ``"raise"``: it raises.
    strict:
        Deprecated: ``strict=True`` is ``on_error="raise"`` (a DeprecationWarning).

    Returns
    -------
    (keep, reason)

    Raises
    ------
    PredicateError
        A malformed predicate, or a column without a type in ``column_types``.
    PaimonIndexError, UnsupportedTypeError, ValueEncodingError
        Only with ``on_error="raise"``.
    InvalidArgumentError
        ``on_error`` is not ``"raise"`` or ``"skip"``, or ``strict`` is given with it.
    """
    raises = error_policy(on_error, strict) == "raise"
    parsed: PaimonFileIndex | None
    if container is None or isinstance(container, PaimonFileIndex):
        parsed = container
    else:
        try:
            parsed = parse_paimon_file_index(container)
        except PaimonIndexError as exc:
            if raises:
                raise
            _walk_predicate(predicate, column_types, None, raises)  # still report bad predicates
            return True, f"kept: {exc}"
    return _walk_predicate(predicate, column_types, parsed, raises)


def _walk_predicate(
    predicate: Predicate,
    column_types: Mapping[str, Any],
    index: PaimonFileIndex | None,
    strict: bool,
) -> Verdict:
    if isinstance(predicate, Mapping):
        parts: list[Any] = [("in", column, values) for column, values in predicate.items()]
        return _walk_predicate(("and", *parts), column_types, index, strict)
    if not isinstance(predicate, tuple) or not predicate or not isinstance(predicate[0], str):
        raise PredicateError(f"malformed Paimon predicate {predicate!r}")
    op = predicate[0].lower()
    if op in ("and", "or"):
        children = predicate[1:]
        if not children:
            raise PredicateError(f"{op.upper()} needs at least one operand")
        verdicts = [_walk_predicate(p, column_types, index, strict) for p in children]
        if op == "and":
            for keep, reason in verdicts:
                if not keep:
                    return False, reason
            return True, "; ".join(reason for _, reason in verdicts)
        if any(keep for keep, _ in verdicts):
            return True, "; ".join(reason for keep, reason in verdicts if keep)
        return False, "; ".join(reason for _, reason in verdicts)
    if op in ("=", "==", "eq", "in"):
        if len(predicate) != 3 or not isinstance(predicate[1], str):
            raise PredicateError(f"{op!r} takes a column name and value(s): {predicate!r}")
        column = predicate[1]
        data_type, precision = _column_type(column_types, column)
        values = [predicate[2]] if op != "in" else predicate[2]
        if index is None:
            return True, f"{column}: no file index"
        payload = index.payload(column)
        keep, reason = paimon_may_contain(
            payload, data_type, values, precision, on_error=on_error_of(strict)
        )
        return keep, f"{column}: {reason}"
    raise PredicateError(f"unsupported operator {predicate[0]!r} (use =, in, and, or)")
