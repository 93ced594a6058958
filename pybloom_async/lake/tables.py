"""A lake index that belongs to a table: registered in an Iceberg snapshot, versioned in Delta.

**Iceberg.** The index's segments (the lake index format of ``docs/lake-index.md``,
unchanged) are the blobs of a Puffin file, of type :data:`BLOB_TYPE`, written under the
table's metadata folder and registered with the indexed snapshot as its statistics file
(``table.update_statistics().set_statistics(...)``, a commit of the table's own
library). A lookup or prune finds it in the table metadata already loaded: the newest
statistics file of ours among the current snapshot and its ancestors, so no listing;
one suffix read gives the Puffin footer and the (last) segment's directory, then one
ranged read per probed stripe. The data files added after the indexed snapshot are not
in it: they go through their in-file filters; the files removed since are not among the
table's live files, so never reported.

pyiceberg 0.12 refuses to load a table whose statistics name a blob type it does not know
(its ``BlobMetadata.type`` is a closed list, where the spec allows any): so the table
metadata lists our statistics file with the blob metadata of the other blobs it carries
only, and our blobs are listed by the Puffin file's own footer. A snapshot has one
statistics file: one that another writer registered (theta sketches, say) is copied blob
for blob into ours, so nothing is lost. Our statistics files are named
``pybloom-lake-index-<snapshot id>-<uuid>.stats``: a lookup reads only those.

**Delta.** The segments lie under the table's root, as for a plain lake
(``_bloom_index/_lake.v1/``, which Delta's VACUUM leaves alone: its name starts with
``_``), each recording the table version it indexed. A newer version's added files are
not in it (in-file filters), removed ones are not live (never reported).

A table's data files are never rewritten under their name (both formats), so an index
entry is for a file when its name and size match those the table lists: no stat, no
HEAD.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError, PyBloomError, SourceError
from ..io.base import FileInfo
from ..pruning.api import CompiledPredicate
from ..pruning.verdicts import Verdict, hand_over_by_file
from ..read.reader import BloomReader
from ..read.run import Run, RunOptions, open_run
from ..tables import TableFiles, table_root
from ..tasks.workers import gather
from ..version import __version__
from .puffin import PuffinBlob, decode_footer, encode_puffin, footer_bounds
from .segments import (
    SUFFIX_BYTES,
    LoadedSegment,
    listed_or_reason,
    loaded_or_reason,
    read_segment_in,
)
from .segments import relative_names as relative_to_root

if TYPE_CHECKING:
    from .digest import LakeFiles


#: The Puffin blob type of a lake index segment.
BLOB_TYPE = "pybloom-async-lake-index-v1"
#: The file name prefix of our statistics files (the only ones a lookup reads).
STATS_PREFIX = "pybloom-lake-index-"


def table_index_info(table: TableFiles) -> dict[str, Any]:
    """What an index of ``table`` covers, as its segments' directories record it."""
    if table.kind == "delta":
        return {"format": "delta", "version": table.version if table.version is not None else -1}
    return {"format": "iceberg", "snapshot-id": table.version or 0}


def index_names(table: TableFiles, paths: Sequence[str]) -> list[str | None]:
    """The files' names in a table's index: relative to a Delta table's root, as the
    manifests spell them in an Iceberg table (its files may lie anywhere)."""
    if table.kind == "iceberg":
        return list(paths)
    return relative_to_root(table_root(table), list(paths))


# ---- Iceberg: the statistics file -------------------------------------------------------


def _ours(path: str) -> bool:
    return path.rstrip("/").rsplit("/", 1)[-1].startswith(STATS_PREFIX)


def _iceberg_statistics(table: TableFiles) -> Any | None:
    """Our newest statistics file among the read snapshot and its ancestors (no I/O)."""
    metadata = table.table.metadata
    ours = {s.snapshot_id: s for s in metadata.statistics if _ours(s.statistics_path)}
    snapshot_id = table.version
    seen = set()
    while snapshot_id is not None and snapshot_id not in seen:
        seen.add(snapshot_id)
        if snapshot_id in ours:
            return ours[snapshot_id]
        snapshot = metadata.snapshot_by_id(snapshot_id)
        snapshot_id = None if snapshot is None else snapshot.parent_snapshot_id
    return None


async def _iceberg_segments(
    reader: BloomReader, statistics: Any, strict: bool
) -> list[LoadedSegment | str]:
    """The segments in our statistics file: one suffix read for the Puffin footer and the
    last segment's directory; a segment lying further back costs one more ranged read."""
    path = str(statistics.statistics_path)
    size = int(statistics.file_size_in_bytes)
    try:
        start, _ = footer_bounds(size, int(statistics.file_footer_size_in_bytes), path)
        async with reader.open(FileInfo(path, size)) as source:
            tail = await source.read_range(max(0, start - SUFFIX_BYTES), size)
            identity = await source.identity()  # known from the opening: no request
        blobs, _ = decode_footer(tail[start - size :], size, path)
        ours = [b for b in blobs if b.type == BLOB_TYPE]
        if not ours:
            return [f"the statistics file {path} holds no lake index"]
        spans = [(b.offset, b.offset + b.length) for b in ours]
        loaded: list[LoadedSegment | str] = await gather(
            read_segment_in, [(reader, path, identity, span, tail) for span in spans]
        )
        return loaded
    except PyBloomError as exc:
        if strict:
            raise
        return [f"the lake index in {path} is unreadable: {exc}"]


def _field_ids(table: TableFiles, columns: Sequence[str]) -> tuple[int, ...]:
    schema = table.table.schema()
    out = []
    for column in columns:
        try:
            out.append(int(schema.find_field(column).field_id))
        except ValueError:
            pass  # a nested path pyiceberg names otherwise: the blob's properties name it
    return tuple(out)


def register_iceberg_index(
    table: TableFiles, payloads: Sequence[bytes], columns: Sequence[str], files: int
) -> str:
    """Write ``payloads`` (segments) as a Puffin file in the table's metadata folder and
    register it with the indexed snapshot; returns its location. Blocking.

    The snapshot's statistics file, if another writer's, is copied into ours blob for blob
    (ours replaced, if an earlier build's). Written and committed by the table's own
    library (its FileIO and ``update_statistics``); a failed commit removes the file.

    Raises
    ------
    SourceError
        The file cannot be written, or the commit fails.
    """
    from pyiceberg.table.statistics import BlobMetadata, StatisticsFile

    iceberg = table.table
    snapshot = iceberg.metadata.snapshot_by_id(table.version) if table.version else None
    if snapshot is None:
        raise SourceError("the table has no snapshot to index", path=table.name)
    kept: list[tuple[PuffinBlob, bytes]] = []
    listed_types: set[str] = set()
    for existing in iceberg.metadata.statistics:
        if existing.snapshot_id == snapshot.snapshot_id:
            kept = _other_blobs(iceberg, existing)
            listed_types = {str(b.type) for b in existing.blob_metadata}
    properties = {"columns": ",".join(columns), "files": str(files), "created-by":
                  f"pybloom-async {__version__}"}  # fmt: skip
    ours = [
        PuffinBlob(
            BLOB_TYPE, _field_ids(table, columns), snapshot.snapshot_id,
            snapshot.sequence_number or 0, properties=properties, payload=payload,
        )
        for payload in payloads
    ]  # fmt: skip
    copied = [PuffinBlob(**{**_fields(b), "payload": raw}) for b, raw in kept]
    data, footer_size, placed = encode_puffin(
        [*copied, *ours], {"created-by": f"pybloom-async {__version__}"}
    )
    name = f"{STATS_PREFIX}{snapshot.snapshot_id}-{uuid.uuid4()}.stats"
    location = iceberg.location_provider().new_metadata_location(name)
    try:
        with iceberg.io.new_output(location).create(overwrite=False) as out:
            out.write(data)
    except Exception as exc:  # pyiceberg's FileIO raises OSError and its own errors
        raise SourceError(f"cannot write the lake index: {exc}", path=location) from None
    listed = [
        BlobMetadata.model_validate({
            "type": b.type, "snapshot-id": b.snapshot_id, "sequence-number": b.sequence_number,
            "fields": list(b.fields), "properties": dict(b.properties) or None,
        })
        for b in placed[: len(copied)]
        if b.type in listed_types  # the table lists what it listed before, nothing more
    ]  # fmt: skip
    statistics = StatisticsFile.model_validate({
        "snapshot-id": snapshot.snapshot_id, "statistics-path": location,
        "file-size-in-bytes": len(data), "file-footer-size-in-bytes": footer_size,
        "blob-metadata": listed,
    })  # fmt: skip
    try:
        with iceberg.update_statistics() as update:
            update.set_statistics(statistics)
    except Exception as exc:  # the catalog's commit errors
        try:
            iceberg.io.delete(location)
        except Exception:  # the commit's error is the one to report
            pass
        raise SourceError(f"cannot register the lake index: {exc}", path=table.name) from None
    return str(location)


def _fields(blob: PuffinBlob) -> dict[str, Any]:
    return {
        "type": blob.type, "fields": blob.fields, "snapshot_id": blob.snapshot_id,
        "sequence_number": blob.sequence_number, "compression_codec": blob.compression_codec,
        "properties": blob.properties,
    }  # fmt: skip


def _other_blobs(iceberg: Any, statistics: Any) -> list[tuple[PuffinBlob, bytes]]:
    """The blobs of a snapshot's statistics file other than lake indexes, with their bytes."""
    path = str(statistics.statistics_path)
    try:
        with iceberg.io.new_input(path).open() as stream:
            data = stream.read()
    except Exception as exc:  # pyiceberg's FileIO raises OSError and its own errors
        raise SourceError(
            f"cannot read the snapshot's statistics file, which the index would replace: {exc}",
            path=path,
        ) from None
    start, _ = footer_bounds(len(data), int(statistics.file_footer_size_in_bytes), path)
    blobs, _ = decode_footer(data[start:], len(data), path)
    return [(b, data[b.offset : b.offset + b.length]) for b in blobs if b.type != BLOB_TYPE]


# ---- both formats: pruning with it ------------------------------------------------------


async def _loaded(run: Run, table: TableFiles) -> list[LoadedSegment | str] | None:
    """The table's index segments (None: it has none)."""
    reader, strict = run.reader, run.strict
    if table.kind == "iceberg":
        statistics = _iceberg_statistics(table)
        if statistics is None:
            return None
        return await _iceberg_segments(reader, statistics, strict)
    locations = await listed_or_reason(table_root(table), reader, strict)
    if isinstance(locations, str):
        return [locations]
    if not locations:
        return None
    return await gather(loaded_or_reason, [(reader, loc, strict) for loc in locations])


async def _loaded_or_refused(
    run: Run, table: TableFiles, required: bool
) -> list[LoadedSegment | str] | None:
    """:func:`_loaded`, and with ``required`` an error when the table has no lake index but
    live files (a table of no live file needs none: building one writes nothing).

    Raises
    ------
    InvalidArgumentError
        ``required``, no index, and live files.
    """
    loaded = await _loaded(run, table)
    if required and loaded is None and table.files:
        raise InvalidArgumentError(
            f"use_index='lake' but the {table.kind} table {table.name} has no lake index "
            "(build one with build_lake_index, or use 'auto')"
        )
    return loaded


async def prune_table_with_lake_index(
    table: TableFiles,
    compiled: CompiledPredicate,
    *,
    run: RunOptions,
    row_groups: bool,
    on_file: Callable[[list[Verdict]], None] | None = None,
    required: bool = False,
) -> list[Verdict]:
    """The verdicts of the table's live files (after its first stage) from its lake index,
    then with ``row_groups`` the kept files' row groups by their in-file filters.

    Without an index every file is kept (``no_index``) and goes through its in-file
    filters; with ``required`` that is an error. ``on_file`` receives each file's verdicts
    (the result is then empty), as for :func:`pybloom_async.prune`.

    Raises
    ------
    InvalidArgumentError
        ``required`` and the table has no lake index (a table of no live file needs none:
        building one writes nothing, and there is no file to prune).
    """
    from .prune import index_pass_run, row_group_verdicts, verdicts_from_segments

    async with open_run(run) as r, index_pass_run(r, required) as index_run:
        loaded = await _loaded_or_refused(index_run, table, required)
        names = index_names(table, [f.path for f in table.files])
        out = await verdicts_from_segments(
            index_run, table.files, names, loaded or [], compiled, immutable=True
        )
        if row_groups:
            out = await row_group_verdicts(r, table.files, out, compiled, False)
    return hand_over_by_file(out, on_file)


async def table_lake_files(
    run: Run, table: TableFiles, compiled: CompiledPredicate, required: bool = False
) -> LakeFiles:
    """The table's files less those its lake index rules out (all of them without one, or
    with ``required`` an error, as for :func:`prune_table_with_lake_index`), with the
    footers its digest gives of them (``lake/digest.py``)."""
    from .digest import LakeFiles, lake_files
    from .prune import IndexEntry, index_pass_run, verdicts_from_segments

    async with index_pass_run(run, required) as index_run:
        loaded = await _loaded_or_refused(index_run, table, required)
        if loaded is None or not table.files:
            return LakeFiles(list(table.files))
        names = index_names(table, [f.path for f in table.files])
        entries: list[IndexEntry | None] = []
        verdicts = await verdicts_from_segments(
            index_run, table.files, names, loaded, compiled, immutable=True, entries=entries
        )
    return await lake_files(run.reader, table.files, verdicts, entries)
