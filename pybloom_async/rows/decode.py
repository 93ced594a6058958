"""A kept row group's fetched bytes decoded and matched: the columns a file's rows are read
with (the predicate's first, the others only where a row matches), the predicate evaluated
on the decoded data, and the matching rows shaped as the result.

The I/O that brings the bytes is :mod:`.fetch`'s; the plan (:mod:`.plan`) says what to read.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ParquetFormatError, PyBloomError
from ..predicate import iter_leaves
from ..pruning.in_lists import sorted_unique
from ..read.ranges import HeldBytes
from .arrow import bool_array, constant_bools, empty_table, int64_array, numpy_of, rows_at
from .chunk import Chunks
from .keyed import Keys, answered_by_key, key_of, key_rows, key_rows_many
from .match import computable, evaluate, leaf_array
from .pages import GroupPages
from .plan import (
    Fetched,
    FileMatch,
    FilePlan,
    Job,
    TableFile,
    read_columns,
    row_numbers,
    rows_where,
)
from .schema import conform
from .take import paged_table, stacked, take_columns, take_many


def where_columns(plan: FilePlan, job: Job) -> list[str]:
    """The columns the file's rows are matched on (none when every row matches: a scan, or
    its partition values make the predicate TRUE)."""
    where = rows_where(plan, job)
    return [] if where is None else list(dict.fromkeys(p.column for p in iter_leaves(where)))


@dataclass(frozen=True)
class ReadColumns:
    """The columns read of one file (pyarrow's names, and their leaves): the predicate's
    (``first``: decoded first) and the others (``rest``: only where a row matches)."""

    names: list[str]
    leaves: list[int]
    first: list[str]
    first_leaves: list[int]
    rest: list[str]
    rest_leaves: list[int]


def read_columns_of(plan: FilePlan, job: Job, table: TableFile | None = None) -> ReadColumns:
    on = where_columns(plan, job)
    if table is not None:  # the columns its deletes compare are read with the predicate's
        on += [c for c in table.columns if c not in on]
    names, leaves = read_columns(plan, job.wanted(plan), on)
    schema = plan.schema
    present = [c for c in on if c in schema]
    tops = {schema.column(c).path_parts[0] for c in present}
    # A scan, or its partition values: all first (but for a table's deleted rows).
    every_row = rows_where(plan, job) is None and table is None
    first = [c for c in names if c in tops or c in present or every_row]
    rest = [c for c in names if c not in first]

    return ReadColumns(names, leaves, first, leaves_of(plan, first), rest, leaves_of(plan, rest))


#: Row groups decoded in one call come to at most this many bytes of the columns decoded,
#: uncompressed (a row group above it is decoded alone): the per-call cost (the reader, the
#: predicate's arrays, the mask) is paid once for many small row groups, and what is
#: decoded at once stays bounded by this, not by the bytes fetched (``max_fetch_bytes``).
DECODE_BATCH_BYTES = 16 << 20


def decode_batches(plan: FilePlan, groups: Sequence[int], leaves: Sequence[int]) -> list[list[int]]:
    """``groups`` (in order) in runs decoded together (see :data:`DECODE_BATCH_BYTES`)."""
    runs: list[list[int]] = []
    size = 0
    for group in groups:
        need = sum(plan.chunk(group, leaf).total_uncompressed_size for leaf in leaves)
        if not runs or size + need > DECODE_BATCH_BYTES:
            runs.append([])
            size = 0
        runs[-1].append(group)
        size += need
    return runs


@dataclass(frozen=True)
class Matches:
    """Row groups' predicate columns decoded together (in order) and matched: the matching
    rows (``table``), where each lies among the row groups' rows (``taken``, ascending), and
    where each row group starts among them (``starts``, one more than the row groups)."""

    groups: Sequence[int]
    table: Any
    taken: Any
    starts: Any

    def of(self) -> Any:
        """Each match's place in :attr:`groups`."""
        return np.searchsorted(self.starts, self.taken, side="right") - 1

    def per_group(self) -> list[tuple[int, Any, Any]]:
        """Per row group with a match: the row group, its matches' rows in ``table`` (a
        slice), and their row numbers in the row group."""
        if not self.taken.size:
            return []
        of = self.of()
        bounds = np.flatnonzero(np.diff(of)) + 1
        found = []
        lows, highs = np.concatenate(([0], bounds)), np.concatenate((bounds, [len(of)]))
        for lo, hi in zip(lows, highs, strict=True):
            i = int(of[lo])
            rows = self.taken[lo:hi] - self.starts[i]
            found.append((self.groups[i], self.table.slice(int(lo), int(hi - lo)), rows))
        return found


def match_row_groups(
    fetched: Fetched, groups: Sequence[int], columns: ReadColumns, job: Job, match: FileMatch
) -> Matches:
    """Row groups' predicate columns decoded in one call (not one per row group: the reader,
    the predicate's arrays and the mask are made once) and the predicate evaluated on them;
    or, for a lookup by key, only the rows whose key matches (:func:`keyed_matches`)."""
    plan = fetched.plan
    sizes = [plan.metadata.row_groups[g].num_rows for g in groups]
    starts = np.array([0, *itertools.accumulate(sizes)], dtype=np.int64)  # one numpy call
    found = keyed_matches(fetched, groups, starts, columns, job, match)
    if found is not None:
        return found
    table = computable(fetched.read_row_groups(groups, columns=columns.first, use_threads=False))
    positions = None
    if match.table is not None:
        positions = np.concatenate(
            [match.positions(g, np.arange(n)) for g, n in zip(groups, sizes, strict=True)]
        )
    rows, taken = matched_rows(table, plan, job, match, positions)
    return Matches(groups, rows, taken, starts)


def keys_of(plan: FilePlan, job: Job, match: FileMatch) -> Keys | None:
    """The keys the file's rows are found by (:func:`keyed_matches`); None: they are not
    (no equality or IN list on a column the C matcher reads)."""
    where = rows_where(plan, job)
    if where is None:
        return None
    return key_of(plan, where, match.leaves)


def keyed_matches(
    fetched: Fetched,
    groups: Sequence[int],
    starts: Any,
    columns: ReadColumns,
    job: Job,
    match: FileMatch,
) -> Matches | None:
    """:func:`match_row_groups` for a predicate with an equality or IN list on a key the C
    matcher reads (:mod:`.keyed`): the rows whose key matches are found in the key chunk's
    pages, the predicate's columns taken at those rows only (:mod:`.take`), and the
    predicate evaluated on them (a table's data file: and its deletes applied to them, by
    their positions in the file). None when a chunk is not read so (pyarrow decodes them)."""
    plan, held = fetched.plan, fetched.held
    keys = keys_of(plan, job, match)
    if keys is None:
        return None
    many = key_rows_many(plan, held, groups, keys)
    if many is not None:
        with many[2]:
            at_once = _keyed_at_once(fetched, groups, starts, columns, job, match, keys, many)
        if at_once is not None:
            return at_once
    parts, candidates, positions = [], [], []
    for group, start in zip(groups, starts, strict=False):
        found = key_rows(plan, held, group, keys)
        if found is None:
            return None
        rows, chunk = found
        if rows.size:
            taken = take_columns(plan, held, group, columns.first, rows, {keys.column: chunk})
            if len(taken) != len(columns.first):
                return None
            parts.append(pa.table([taken[n] for n in columns.first], names=columns.first))
            candidates.append(rows + start)
            positions.append(match.positions(group, rows))
    none = np.zeros(0, dtype=np.int64)
    if not parts:  # no key found: no row, whatever the rest of the predicate says
        empty = _no_rows(plan.arrow_schema, columns.first)
        return None if empty is None else Matches(groups, empty, none, starts)
    table = computable(pa.concat_tables(parts))
    at = np.concatenate(candidates)
    in_file = None if match.table is None else np.concatenate(positions) if positions else none
    if answered_by_key(rows_where(plan, job), keys):
        return _live_matches(groups, table, at, starts, match, in_file)
    rows, taken = matched_rows(table, plan, job, match, in_file)
    return Matches(groups, rows, at[taken], starts)


def _live_matches(
    groups: Sequence[int], table: Any, at: Any, starts: Any, match: FileMatch, in_file: Any
) -> Matches:
    """The rows matched by key, each of which holds the predicate (:func:`answered_by_key`):
    a table's deleted rows dropped (``in_file``: their positions in the file), as
    :func:`row_mask` drops them."""
    live = None if match.table is None else match.table.live(table, in_file)
    if live is None:
        return Matches(groups, table, at, starts)
    kept = np.flatnonzero(live)
    return Matches(groups, rows_at(table, kept), at[kept], starts)


def _keyed_at_once(
    fetched: Fetched,
    groups: Sequence[int],
    starts: Any,
    columns: ReadColumns,
    job: Job,
    match: FileMatch,
    keys: Keys,
    many: tuple[Any, Any, Chunks],
) -> Matches | None:
    """:func:`keyed_matches` of row groups whose key chunks were matched in one call
    (:func:`.keyed.key_rows_many`): the predicate's columns taken at every match in one
    call per column (None: a column is not read so)."""
    plan, held = fetched.plan, fetched.held
    rows, counts, chunks = many
    none = np.zeros(0, dtype=np.int64)
    if not rows.size:  # no key found: no row, whatever the rest of the predicate says
        empty = _no_rows(plan.arrow_schema, columns.first)
        return None if empty is None else Matches(groups, empty, none, starts)
    hit = np.flatnonzero(counts)
    hit_groups = [groups[i] for i in hit.tolist()]
    taken = take_many(plan, held, groups, rows, counts, [keys.column], {keys.column: chunks})
    others = [name for name in columns.first if name != keys.column]
    more = take_many(plan, held, hit_groups, rows, counts[hit], others) if others else {}
    if taken is None or more is None:
        return None
    taken.update(more)
    table = computable(pa.table([taken[n] for n in columns.first], names=columns.first))
    at = rows + np.repeat(starts[: len(groups)], counts.astype(np.int64))
    in_file = None
    if match.table is not None:
        bounds = np.concatenate(([0], np.cumsum(counts.astype(np.int64))))
        in_file = np.concatenate(
            [match.positions(groups[i], rows[bounds[i] : bounds[i + 1]]) for i in hit.tolist()]
        )
    if answered_by_key(rows_where(plan, job), keys):
        return _live_matches(groups, table, at, starts, match, in_file)
    found, taken_at = matched_rows(table, plan, job, match, in_file)
    return Matches(groups, found, at[taken_at], starts)


def _no_rows(schema: pa.Schema, names: Sequence[str]) -> Any | None:
    """The (computable) table of ``schema``'s columns ``names`` with no rows: one per
    schema and names (tables are values), as most files a key is looked up in have none.
    None when a name is a leaf inside a struct (``s.x``: pyarrow reads it as ``s`` with
    only that field, and its decode makes that table)."""
    key = (schema, tuple(names))
    found = _NO_ROWS.get(key)
    if found is None:
        if any(schema.get_field_index(name) < 0 for name in names):
            return None
        found = computable(empty_table(schema).select(list(names)))
        if len(_NO_ROWS) >= 64:
            _NO_ROWS.clear()
        _NO_ROWS[key] = found
    return found


#: :func:`_no_rows`'s tables.
_NO_ROWS: dict[tuple[Any, tuple[str, ...]], Any] = {}


def matched_rows(
    table: Any, plan: FilePlan, job: Job, match: FileMatch, positions: Any = None
) -> tuple[Any, Any]:
    """The rows of a decoded (computable) table where the predicate is TRUE (NULL is not),
    and their row numbers in it (numpy int64): Arrow's own ``indices_nonzero``, read as a
    numpy view (a boolean array's ``to_numpy`` imports pandas, see :mod:`.arrow`). Its
    uint64 is viewed as int64, as every row number is held: numpy makes float64 of uint64
    and int64 mixed."""
    taken = numpy_of(pc.indices_nonzero(row_mask(table, plan, job, match, positions)))
    taken = taken.view(np.int64)
    return rows_at(table, taken), taken


def named_failure(decode: Callable[[list[int]], Any], plan: FilePlan, groups: list[int]) -> Any:
    """``decode(groups)``; when it fails, the error names the row group that fails: each is
    decoded alone to find it (the first, if none fails alone).

    Raises
    ------
    PyBloomError
        A row group cannot be decoded (naming it).
    """
    try:
        return decode(groups)
    except (PyBloomError, OSError, pa.ArrowException) as exc:
        if len(groups) > 1:
            for group in groups:
                named_failure(decode, plan, [group])
        raise format_error(exc, plan, groups[0]) from None


def decode_row_groups(
    fetched: Fetched, groups: Sequence[int], columns: ReadColumns, job: Job, match: FileMatch
) -> Any:
    """Decode row groups (in order), keep the rows where the predicate holds, shape them as
    the result: one table, of the file's ``fetched`` bytes.

    The predicate's columns are decoded first (:func:`match_row_groups`), and the others
    only at the matching rows of the row groups that hold one (:func:`other_columns`): a
    row group kept by a filter's false positive (about 1 in 100 per probed value) costs the
    decode of its predicate columns only.
    """
    rest, plan = columns.rest, fetched.plan
    if rows_where(plan, job) is None and match.table is None:  # a scan, or partition values
        first = fetched.read_row_groups(groups, columns=columns.first, use_threads=False)
        table = computable(first)
        if rest:
            more = fetched.read_row_groups(groups, columns=rest, use_threads=False)
            table = _joined(table, computable(more))
        return shaped(table, plan, job)
    found = match_row_groups(fetched, groups, columns, job, match)
    table = found.table
    if rest and found.taken.size:
        table = _joined(table, other_columns(fetched, found, rest))
    return shaped(table, plan, job)


def other_columns(fetched: Fetched, found: Matches, names: list[str]) -> Any:
    """The columns ``names`` at the matching rows of ``found``: taken from their chunks'
    pages by the C decoder (:mod:`.take`) where it reads them, else decoded by pyarrow
    (whole chunks of the row groups with a match) and taken."""
    hits = found.per_group()
    plan, held = fetched.plan, fetched.held
    # Each column of every row group with a match in one C call where it reads them all;
    # the others row group by row group (the page walk, or pyarrow below).
    hit_groups = [group for group, _, _ in hits]
    every, counts = stacked([r for _, _, r in hits])
    parts: dict[str, Any] = {}
    for name in names:
        many = take_many(plan, held, hit_groups, every, counts, [name])
        if many is not None:
            parts[name] = many[name]
    left = [n for n in names if n not in parts]
    if left:
        taken = [take_columns(plan, held, group, left, rows) for group, _, rows in hits]
        native = [n for n in left if all(n in t for t in taken)]
        parts.update({n: pa.chunked_array([t[n] for t in taken]) for n in native})
    decoded = [n for n in names if n not in parts]
    if decoded:
        # The matches' row groups decoded, and where each match lies in their rows.
        of = found.of()
        hit = sorted_unique(of)  # (np.unique imports numpy.ma on first use: 0.05-0.09 s)
        sizes = np.diff(found.starts)
        hit_starts = np.zeros(len(found.groups), dtype=np.int64)
        hit_starts[hit] = np.concatenate(([0], np.cumsum(sizes[hit])[:-1]))
        groups = [found.groups[i] for i in hit]
        more = fetched.read_row_groups(groups, columns=decoded, use_threads=False)
        at = found.taken - found.starts[of] + hit_starts[of]
        more = computable(more).take(int64_array(at))
        parts.update(zip(more.column_names, more.columns, strict=True))
    return pa.table([parts[n] for n in names], names=names)


def decode_pages_of(
    selected: GroupPages,
    plan: FilePlan,
    job: Job,
    match: FileMatch,
    held: HeldBytes,
) -> Any:
    """:func:`decode_row_groups` for a row group read through its page index (the rows of
    ``selected.rows``, in order)."""
    table = paged_table(plan, held, selected)
    positions = match.positions(selected.group, row_numbers(selected.rows))
    return matching(table, plan, job, match, None, positions)


def matching(
    table: Any,
    plan: FilePlan,
    job: Job,
    match: FileMatch,
    others: Callable[[], Any] | None = None,
    positions: Any = None,
) -> Any:
    """The rows of a decoded table where the predicate holds, shaped as the result.

    ``others``, if given, decodes the result's remaining columns: called only when a
    row matches. ``positions``: each row's ordinal in the file (a table's data file).
    """
    table = computable(table)
    if rows_where(plan, job) is None and match.table is None:  # a scan, or partition values
        more = others() if others is not None else None
        if more is not None:
            table = _joined(table, computable(more))
        return shaped(table, plan, job)
    mask = row_mask(table, plan, job, match, positions)
    if others is not None and pc.any(mask).as_py():
        more = others()
        if more is not None:
            table = _joined(table, computable(more))
    return shaped(table.filter(mask), plan, job)


def _joined(table: Any, more: Any) -> Any:
    """``table`` with the columns of ``more`` (the same rows) appended."""
    for name, column in zip(more.column_names, more.columns, strict=True):
        table = table.append_column(more.schema.field(name), column)
    return table


def shaped(rows: Any, plan: FilePlan, job: Job) -> Any:
    """Matching rows shaped as the result, once its schema is known."""
    if job.schema is None:
        return rows
    return conform(rows, plan, job.schema, job.names or [])


def row_mask(table: Any, plan: FilePlan, job: Job, match: FileMatch, positions: Any = None) -> Any:
    """Where the file's predicate is TRUE on a decoded (computable) table, and for a table's
    data file (``positions``: each row's ordinal in the file) where the row is live."""
    where = rows_where(plan, job)
    if where is None:  # a scan, or its partition values make the predicate TRUE for every row
        mask = constant_bools(table.num_rows, True)
    else:
        schema = plan.schema
        arrays = {}
        for leaf in iter_leaves(where):
            if leaf.column not in arrays and leaf.column in schema:
                arrays[leaf.column] = leaf_array(table, schema.column(leaf.column), leaf.column)
        if match.table is not None:
            arrays.update(match.table.values(table.num_rows))
        mask = evaluate(where, table, match.leaves, arrays)
    if match.table is not None and pc.any(mask).as_py():
        # Deleted rows are dropped from the matches (none: the deletes are not needed).
        live = match.table.live(table, positions)
        if live is not None:
            mask = pc.and_kleene(mask, bool_array(live))
    return mask


def format_error(exc: BaseException, plan: FilePlan, group: int) -> PyBloomError:
    if isinstance(exc, PyBloomError):
        return exc.with_context(path=plan.path, row_group=group)
    return ParquetFormatError(
        f"the row group cannot be decoded: {exc}", path=plan.path, row_group=group
    )


def leaves_of(plan: FilePlan, names: Sequence[str]) -> list[int]:
    """The leaves of pyarrow's column names (a top-level column, or a dotted leaf)."""
    return list(plan.schema.leaves_under(names))
