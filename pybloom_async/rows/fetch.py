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
    PyBloomError,
    SchemaMismatchError,
    SourceError,
)
from ..io.base import FileInfo
from ..io.identity import SourceIdentity
from ..io.local import LocalFileSource
from ..parquet import FileMetaData, FooterBounds
from ..predicate import Predicate, iter_leaves
from ..pruning.runner import Run, for_each
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
from .schema import check_predicate_columns, result_schema

__all__ = [
    "FetchedFile",
    "FilePlan",
    "Job",
    "check_predicate_columns",
    "describe",
    "file_tables",
    "result_schema",
    "schema_plans",
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


def _where(location: str | FileInfo) -> str:
    return location.path if isinstance(location, FileInfo) else str(location)


async def schema_plans(
    run: Run,
    found: Sequence[str | FileInfo],
    read: Sequence[str | FileInfo],
    plans: Sequence[FilePlan],
    where: Predicate,
    columns: Sequence[str] | None,
) -> list[FilePlan]:
    """The plans the result's schema and the column checks read, in file order.

    ``found`` are the files listed, ``read`` those a lake index left to read (the
    others were never opened), ``plans`` the files read. The answer must not
    depend on what the index rules out, so the footers of files it ruled out are
    read where the schema depends on them: the first file when ``columns`` is not
    given (its columns are the default), and every one of them when a predicate or
    requested column is in no file read (the column may be in one of them, and the
    answer is then no row, not an error). A footer that cannot be read is left out.
    """
    opened = {_where(f) for f in read}
    unread = [f for f in found if _where(f) not in opened]
    if not unread:
        return list(plans)
    extra: dict[str, FilePlan] = {}

    async def one(location: str | FileInfo) -> None:
        try:
            footer = await run.reader.footer(location)
            extra[_where(location)] = describe(location, footer, [])
        except PyBloomError:
            pass  # it holds no row of the answer; a column it alone has stays unknown
        finally:
            run.done(location)

    if columns is None and found and found[0] in unread:
        await one(found[0])
    have = {_where(p.location): p for p in plans} | extra
    leaves = [leaf.column for leaf in iter_leaves(where)]
    if any(all(c not in p.metadata.schema for p in have.values()) for c in leaves) or any(
        all(c not in p.arrow_schema.names for p in have.values()) for c in columns or ()
    ):
        await for_each([f for f in unread if _where(f) not in extra], one, run.limit)
        have |= extra
    return [have[_where(f)] for f in found if _where(f) in have]


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
