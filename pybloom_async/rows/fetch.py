"""Reading the matching rows of one file from fetched column chunks, for :mod:`.lookup`.

pyarrow decodes row groups from a file-like object that serves only the bytes
fetched beforehand (:class:`FetchedFile`) and the footer the reader already
holds: a decode never makes a request of its own. The schema rule across files
is documented in :mod:`pybloom_async.lookup`.
"""

from __future__ import annotations

import io
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import (
    ParquetFormatError,
    PredicateError,
    PyBloomError,
    SchemaMismatchError,
    SourceError,
)
from ..io.base import FileInfo
from ..io.identity import SourceIdentity
from ..io.local import LocalFileSource
from ..parquet import FileMetaData, FooterBounds
from ..predicate import Predicate, iter_leaves
from ..read.fetch import Footer
from ..read.ranges import merge_ranges
from ..read.reader import BloomReader
from .match import Leaves, computable, evaluate, leaf_array
from .pages import (
    FilePageIndex,
    GroupPages,
    WholeChunks,
    decode_group,
    file_page_index,
    held_reader,
    index_ranges,
    select_group,
)

__all__ = [
    "FetchedFile",
    "FilePlan",
    "Job",
    "check_predicate_columns",
    "describe",
    "file_tables",
    "result_schema",
]

# ---- reading column chunks from fetched bytes ------------------------------------------


class FetchedFile(io.RawIOBase):
    """A file whose only readable bytes are pieces fetched beforehand.

    pyarrow decodes row groups from it; a read of bytes not fetched is an
    error, so a decode never makes a request of its own.
    """

    def __init__(self, size: int, pieces: Sequence[tuple[int, bytes]], path: str) -> None:
        super().__init__()
        self._size = size
        self._pieces = sorted(pieces)
        self._path = path
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        want = min(len(view), max(0, self._size - self._pos))
        done = 0
        for start, data in self._pieces:
            if done == want:
                break
            at = self._pos + done
            if start <= at < start + len(data):
                n = min(want - done, start + len(data) - at)
                view[done : done + n] = data[at - start : at - start + n]
                done += n
        if done != want:
            raise OSError(
                f"bytes [{self._pos + done}, {self._pos + want}) of {self._path} were not fetched"
            )
        self._pos += done
        return done


@dataclass
class FilePlan:
    """One file after pruning: what reading its rows needs (not the footer's tail bytes)."""

    location: str | FileInfo
    path: str
    metadata: FileMetaData
    footer_location: FooterBounds
    identity: SourceIdentity
    kept: list[int]
    arrow_schema: Any  # pa.Schema of the whole file
    pyarrow_metadata: Any  # pq.FileMetaData decoded from the footer bytes already read
    page_index: FilePageIndex | None = None  # the kept row groups' page index, if any


def _footer_bytes(footer: Footer) -> bytes:
    """The FileMetaData, its length and the magic: the file's last bytes, from the tail."""
    n = footer.location.metadata_length + 8
    return footer.tail[-n:]


def _chunk_range(plan: FilePlan, group: int, leaf: int) -> tuple[int, int]:
    """Bytes of one column chunk, checked against the file (before the footer)."""
    chunk = plan.metadata.row_groups[group].columns[leaf]
    start = chunk.data_page_offset
    dictionary = chunk.dictionary_page_offset
    if dictionary is not None and 0 < dictionary < start:
        start = dictionary
    end = start + chunk.total_compressed_size
    if chunk.file_path is not None:
        raise ParquetFormatError(
            f"the column chunk is stored in another file ({chunk.file_path!r}): not supported",
            path=plan.path,
            row_group=group,
            column=chunk.path,
        )
    if not 4 <= start <= end <= plan.footer_location.metadata_offset:
        raise ParquetFormatError(
            f"column chunk bytes [{start}, {end}) lie outside the file's data",
            path=plan.path,
            row_group=group,
            column=chunk.path,
        )
    return start, end


def _top_level(plan: FilePlan) -> list[str]:
    return [str(name) for name in plan.arrow_schema.names]


def _read_columns(
    plan: FilePlan, projected: Sequence[str], predicate_columns: Sequence[str]
) -> tuple[list[str], list[int]]:
    """pyarrow's column names to read (projected tops, predicate leaves) and their leaves."""
    schema = plan.metadata.schema
    tops = set(_top_level(plan))
    names = [c for c in projected if c in tops]
    for column in predicate_columns:
        if column in schema:
            desc = schema.column(column)
            if desc.path_parts[0] not in names:
                names.append(column)
    leaves = []
    for desc in schema.columns:
        for name in names:
            if desc.path == name or desc.path.startswith(name + "."):
                leaves.append(desc.index)
                break
    return names, leaves


# ---- schemas ---------------------------------------------------------------------------


def _kind(t: Any) -> str:
    """The kind of an Arrow type within which types are promoted to one another."""
    if pa.types.is_dictionary(t):
        return _kind(t.value_type)
    for kind, test in (
        ("integer", pa.types.is_integer),
        ("floating point", pa.types.is_floating),
        ("decimal", pa.types.is_decimal),
        ("text", lambda x: pa.types.is_string(x) or pa.types.is_large_string(x)),
        ("text", pa.types.is_string_view),
        ("binary", lambda x: pa.types.is_binary(x) or pa.types.is_large_binary(x)),
        ("binary", pa.types.is_binary_view),
        ("timestamp", pa.types.is_timestamp),
        ("date", pa.types.is_date),
        ("time", pa.types.is_time),
        ("duration", pa.types.is_duration),
    ):
        if test(t):
            return kind
    return str(t)  # everything else (fixed-size, extension, ...) only unifies with itself


def _unify_field(first: tuple[str, Any], other: tuple[str, Any], name: str) -> Any:
    """The field both files' types promote to, or SchemaMismatchError naming both files."""
    (path_a, a), (path_b, b) = first, other
    if a.type == b.type:
        return a
    unified = _unify_types(a.type, b.type)
    if unified is None:
        raise SchemaMismatchError(
            f"column {name!r} is {a.type} in {path_a} and {b.type} in {path_b}: the types do "
            "not unify (only types of one kind are promoted, at every depth: integers, floats, "
            "decimals, text, ...)"
        )
    return a.with_type(unified)


def _unify_types(a: Any, b: Any) -> Any | None:
    """The type two files' types promote to (None: they do not unify).

    One rule at every depth: struct children (by name; a child one file lacks is
    taken from the other, as a column one file lacks), list items and map keys and
    values are unified as top-level columns are.
    """
    if a == b:
        return a
    if pa.types.is_null(a):
        return b
    if pa.types.is_null(b):
        return a
    # Dictionaries unify by their values, views as the large types.
    a, b = _plain(a), _plain(b)
    if a == b:
        return a
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        return _unify_structs(a, b)
    if _is_list(a) and _is_list(b):
        item = _unify_types(a.value_type, b.value_type)
        if item is None:
            return None
        field = a.value_field.with_type(item).with_nullable(True)
        large = pa.types.is_large_list(a) or pa.types.is_large_list(b)
        return pa.large_list(field) if large else pa.list_(field)
    if pa.types.is_map(a) and pa.types.is_map(b):
        key, item = _unify_types(a.key_type, b.key_type), _unify_types(a.item_type, b.item_type)
        if key is None or item is None:
            return None
        return pa.map_(a.key_field.with_type(key), a.item_field.with_type(item).with_nullable(True))
    if _kind(a) != _kind(b) or {a, b} == {pa.int64(), pa.uint64()}:
        return None  # other kinds; no 64-bit integer type holds both
    try:
        merged = pa.unify_schemas(
            [pa.schema([("x", a)]), pa.schema([("x", b)])], promote_options="permissive"
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    return merged.field(0).type


def _is_list(t: Any) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t))


def _unify_structs(a: Any, b: Any) -> Any | None:
    fields = {f.name: f for f in a}
    if len(fields) != a.num_fields or len({f.name for f in b}) != b.num_fields:
        return None  # a child named twice: nothing to match by name
    for other in b:
        mine = fields.get(other.name)
        if mine is None:
            fields[other.name] = other.with_nullable(True)
            continue
        unified = _unify_types(mine.type, other.type)
        if unified is None:
            return None
        fields[other.name] = mine.with_type(unified).with_nullable(mine.nullable or other.nullable)
    for name, field in fields.items():
        if b.get_field_index(name) < 0:
            fields[name] = field.with_nullable(True)  # the other file lacks it: nulls there
    return pa.struct(list(fields.values()))


def _plain(t: Any) -> Any:
    if pa.types.is_dictionary(t):
        return _plain(t.value_type)
    if pa.types.is_string_view(t):
        return pa.large_string()
    if pa.types.is_binary_view(t):
        return pa.large_binary()
    return t


def result_schema(
    plans: Sequence[FilePlan], columns: Sequence[str] | None
) -> tuple[Any, list[str]]:
    """The result's schema (see the module docstring) and its column names."""
    names = list(columns) if columns is not None else _top_level(plans[0]) if plans else []
    seen: dict[str, tuple[str, Any]] = {}
    for plan in plans:
        schema = plan.arrow_schema
        for name in names:
            index = schema.get_field_index(name)
            if index < 0:
                continue
            field = schema.field(index)
            if name not in seen:
                seen[name] = (plan.path, field)
            else:
                seen[name] = (seen[name][0], _unify_field(seen[name], (plan.path, field), name))
    missing = [n for n in names if n not in seen]
    if missing and plans:
        shown = ", ".join(_top_level(plans[0])[:20])
        raise PredicateError(
            f"no file read has the column(s) {', '.join(map(repr, missing))} (columns are "
            f"top-level names); the first file has: {shown}"
        )
    fields = [
        seen[n][1].with_nullable(True) if n in seen else pa.field(n, pa.null()) for n in names
    ]
    return pa.schema(fields), names


def check_predicate_columns(where: Predicate, plans: Sequence[FilePlan]) -> None:
    """A predicate column that no file read has as a leaf is a mistake, not an empty answer."""
    if not plans:
        return
    for column in dict.fromkeys(leaf.column for leaf in iter_leaves(where)):
        if not any(column in plan.metadata.schema for plan in plans):
            known = ", ".join(c.path for c in plans[0].metadata.schema.columns[:20])
            raise PredicateError(
                f"no file read has this column; the first file has: {known}", column=column
            )


def describe(
    location: str | FileInfo, footer: Footer, kept: list[int], page_index: bool = False
) -> FilePlan:
    """What reading the rows of the kept row groups needs, from the footer already read.

    With ``page_index``, the places of the file's page index are read too (see
    :mod:`.pages`), and the index bytes the footer's tail already holds are kept.
    A row group of no rows has nothing to read: it is left out (pyarrow writes one
    for an empty table, its chunks at offset 0).

    Raises
    ------
    ParquetFormatError
        pyarrow cannot read the footer.
    """
    groups = footer.metadata.row_groups
    kept = [g for g in kept if groups[g].num_rows != 0]
    try:
        md = pq.read_metadata(pa.BufferReader(_footer_bytes(footer)))
        schema = pq.ParquetFile(FetchedFile(footer.file_size, [], footer.path), metadata=md)
        arrow_schema = schema.schema_arrow
    except (OSError, pa.ArrowException) as exc:
        raise ParquetFormatError(
            f"pyarrow cannot read the footer: {exc}", path=footer.path
        ) from None
    pages = None
    use = page_index and kept and kept[0] < md.num_row_groups
    first = md.row_group(kept[0]) if use else None
    # Files without a page index (pyarrow's default) skip the second footer decode.
    if first is not None and any(
        first.column(i).has_offset_index for i in range(first.num_columns)
    ):
        metadata = _footer_bytes(footer)[:-8]
        bounds = footer.location
        pages = file_page_index(
            metadata, bounds.metadata_offset, footer.tail, footer.tail_start, kept, footer.path
        )
    return FilePlan(
        location,
        footer.path,
        footer.metadata,
        footer.location,
        footer.identity,
        kept,
        arrow_schema,
        md,
        pages,
    )


def _fetch_groups(
    plan: FilePlan, leaves: Sequence[int], max_fetch_bytes: int
) -> Iterator[list[int]]:
    """The kept row groups in runs whose chunks together stay within ``max_fetch_bytes``."""
    run: list[int] = []
    size = 0
    for group in plan.kept:
        need = sum(e - s for s, e in (_chunk_range(plan, group, leaf) for leaf in leaves))
        if run and size + need > max_fetch_bytes:
            yield run
            run, size = [], 0
        run.append(group)
        size += need
    if run:
        yield run


@dataclass(frozen=True)
class Job:
    """What every file's read shares."""

    where: Predicate
    names: list[str]
    schema: Any  # pa.Schema of the result
    max_fetch_bytes: int
    page_index: bool = True  # only the pages that may match, where the file has a page index


def _decode_group(
    pf: Any, plan: FilePlan, group: int, columns: list[str], job: Job, leaves: Leaves
) -> Any:
    """Decode one row group, keep the rows where the predicate holds, shape them as the result.

    The predicate's columns are decoded first and the others only when a row matches: a
    row group kept by a filter's false positive (about 1 in 100 per probed value) costs
    the decode of its predicate columns only.
    """
    schema = plan.metadata.schema
    present = [leaf.column for leaf in iter_leaves(job.where) if leaf.column in schema]
    tops = {schema.column(c).path_parts[0] for c in present}
    first = [c for c in columns if c in tops or c in present]
    rest = [c for c in columns if c not in first]

    def others() -> Any:
        return pf.read_row_group(group, columns=rest, use_threads=False) if rest else None

    table = pf.read_row_group(group, columns=first, use_threads=False)
    return _matching(table, plan, job, leaves, others)


def _decode_pages(
    selected: GroupPages,
    plan: FilePlan,
    job: Job,
    leaves: Leaves,
    pieces: Sequence[tuple[int, bytes]],
) -> Any:
    """:func:`_decode_group` for a row group read through its page index."""
    assert plan.page_index is not None
    table = decode_group(
        selected, plan.page_index, plan.arrow_schema, plan.metadata.schema, held_reader(pieces)
    )
    return _matching(table, plan, job, leaves)


def _matching(
    table: Any, plan: FilePlan, job: Job, leaves: Leaves, others: Callable[[], Any] | None = None
) -> Any:
    """The rows of a decoded table where the predicate holds, shaped as the result.

    ``others``, if given, decodes the result's remaining columns: called only when a
    row matches.
    """
    table = computable(table)
    schema = plan.metadata.schema
    arrays = {}
    for leaf in iter_leaves(job.where):
        if leaf.column not in arrays and leaf.column in schema:
            arrays[leaf.column] = leaf_array(table, schema.column(leaf.column), leaf.column)
    mask = evaluate(job.where, table, leaves, arrays)
    if others is not None and pc.any(mask).as_py():
        more = others()
        if more is not None:
            more = computable(more)
            for name, column in zip(more.column_names, more.columns, strict=True):
                table = table.append_column(more.schema.field(name), column)
    rows = table.filter(mask)
    out = []
    for field in job.schema:
        if field.name in rows.column_names and field.name in plan.arrow_schema.names:
            out.append(rows.column(field.name))
        else:
            out.append(pa.nulls(rows.num_rows, field.type))
    result = pa.Table.from_arrays(out, names=job.names)
    try:
        return result.cast(job.schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise SchemaMismatchError(
            f"a column's values do not fit the result type: {exc}", path=plan.path
        ) from None


async def _read(reader: BloomReader, plan: FilePlan, wanted: Sequence[tuple[int, int]]) -> Any:
    """The byte ranges of one file, merged into one request: ``[(start, bytes), ...]``."""
    config = reader.config.plan
    merged = merge_ranges(wanted, config.max_hole_bytes, config.max_range_bytes)
    if not merged:
        return []
    async with reader.open(plan.location) as source:
        # The bytes of the version whose footer was read. A local file's identity comes
        # free with its opening; a store pins reads to the ETag instead.
        if isinstance(source, LocalFileSource):
            if await source.identity() != plan.identity:
                raise SourceError("the file changed after its footer was read", path=plan.path)
        else:
            source.assume_identity(plan.identity)
        data = await source.read_ranges([(r.start, r.end) for r in merged])
    return [(r.start, d) for r, d in zip(merged, data, strict=True)]


async def _select_pages(
    reader: BloomReader, plan: FilePlan, job: Job, names: list[str], read: list[int]
) -> dict[int, GroupPages]:
    """Per kept row group its page selection; groups missing read whole chunks."""
    index = plan.page_index
    if not job.page_index or index is None:
        return {}
    schema = plan.metadata.schema
    predicate = [
        schema.column(p.column).index for p in iter_leaves(job.where) if p.column in schema
    ]
    pieces = list(index.held)
    pieces += await _read(reader, plan, index_ranges(index, plan.kept, read, predicate))

    def select() -> dict[int, GroupPages]:
        found: dict[int, GroupPages] = {}
        cache: dict[int, Any] = {}
        serve = held_reader(pieces)
        for group in plan.kept:
            try:
                found[group] = select_group(
                    index, group, job.where, schema, names, serve, plan.path, cache
                )
            except WholeChunks:
                pass  # this group reads whole chunks
        return found

    return await anyio.to_thread.run_sync(select)


async def file_tables(reader: BloomReader, plan: FilePlan, job: Job) -> AsyncGenerator[Any, None]:
    """The matching rows of one file, one table per kept row group."""
    columns, leaf_indexes = _read_columns(
        plan, job.names, [leaf.column for leaf in iter_leaves(job.where)]
    )
    leaves = Leaves(plan.metadata.schema, plan.path)
    selected = await _select_pages(reader, plan, job, columns, leaf_indexes)
    size = plan.footer_location.file_size
    for groups in _fetch_groups(plan, leaf_indexes, job.max_fetch_bytes):
        wanted = []
        for g in groups:
            pages = selected.get(g)
            if pages is not None:
                wanted.extend(pages.ranges())
            else:
                wanted.extend(_chunk_range(plan, g, leaf) for leaf in leaf_indexes)
        pieces = await _read(reader, plan, wanted)
        pf = pq.ParquetFile(FetchedFile(size, pieces, plan.path), metadata=plan.pyarrow_metadata)
        for group in groups:
            try:
                pages = selected.get(group)
                group_pf, table = pf, None
                if pages is not None:
                    if not pages.rows:
                        continue  # no page may hold a match
                    try:
                        table = await anyio.to_thread.run_sync(
                            _decode_pages, pages, plan, job, leaves, pieces
                        )
                    except WholeChunks:  # the pages did not decode as indexed: whole chunks
                        whole = await _read(
                            reader, plan, [_chunk_range(plan, group, x) for x in leaf_indexes]
                        )
                        group_pf = pq.ParquetFile(
                            FetchedFile(size, whole, plan.path), metadata=plan.pyarrow_metadata
                        )
                if table is None:
                    table = await anyio.to_thread.run_sync(
                        _decode_group, group_pf, plan, group, columns, job, leaves
                    )
            except PyBloomError as exc:
                raise exc.with_context(path=plan.path, row_group=group) from None
            except (OSError, pa.ArrowException) as exc:
                raise ParquetFormatError(
                    f"the row group cannot be decoded: {exc}", path=plan.path, row_group=group
                ) from None
            yield table
