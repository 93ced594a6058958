"""Compaction: the segments of one size class merged into one, newest entry of a file kept."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..checks import path_text
from ..errors import ParquetFormatError, SourceNotFoundError
from ..read.reader import BloomReader
from ..read.run import RunOptions, open_run, run_options
from ..tasks.loops import sync_twin, to_worker
from .format import (
    DigestRecords,
    LakeColumn,
    LakeFile,
    Segment,
    encode_segment,
    stripe_crc_ok,
)
from .segments import (
    LoadedSegment,
    delete_segments,
    list_segments,
    read_segment,
    write_segment,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..read.run import RunKeywords


@dataclass
class LakeCompaction:
    """Segments read, written and removed by a compaction; those left as they are, and why.

    ``left`` maps each segment left to why: alone in its size class (its block
    counts), which is as compact as the index gets, or indexing other columns than
    other segments (``other_columns`` lists those), which never merge: rebuilding the
    index with one set of columns lets them.
    """

    merged: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    files: int = 0
    left: dict[str, str] = field(default_factory=dict)
    other_columns: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "merged": self.merged,
            "written": self.written,
            "files": self.files,
            "left": self.left,
            "other_columns": self.other_columns,
        }


def _columns(seg: Segment) -> tuple[tuple[str, str], ...]:
    """The columns a segment indexes, with their types."""
    return tuple(
        (c.path, f"{c.descriptor.physical_type.name}/{c.descriptor.logical_type}")
        for c in seg.columns
    )


def _shape(seg: Segment) -> tuple[tuple[str, str, int], ...]:
    """What segments must share to be merged: their columns, types and block counts."""
    return tuple((*key, c.num_blocks) for key, c in zip(_columns(seg), seg.columns, strict=True))


def _shape_text(seg: Segment) -> str:
    return ", ".join(f"{c.path} ({c.num_blocks} blocks)" for c in seg.columns) or "no column"


def _why_left(loaded: LoadedSegment, everything: list[LoadedSegment]) -> tuple[str, bool]:
    """Why a segment alone in its shape is left, and whether it indexes other columns."""
    mine = _columns(loaded.segment)
    others = {_columns(g.segment) for g in everything if g is not loaded} - {mine}
    if others:
        other = "; ".join(sorted(", ".join(p for p, _ in cols) or "no column" for cols in others))
        return (
            f"it indexes {', '.join(p for p, _ in mine) or 'no column'}; other segments "
            f"index {other}: only segments of the same columns merge (rebuild the index "
            "with one set of columns to merge them)",
            True,
        )
    return f"the only segment of its size class: {_shape_text(loaded.segment)}", False


class _Read(NamedTuple):
    """A segment's bitsets, each column's a (blocks, files, 32) array, and its digest's
    records: each file's (None: none) with its schema number, and each schema's."""

    bits: list[np.ndarray[Any, Any]]
    records: list[tuple[bytes, int] | None]
    schemas: list[bytes]


async def _stripes(reader: BloomReader, loaded: LoadedSegment) -> _Read:
    """Every column's bitset, each stripe's CRC checked, and the digest's records."""
    seg = loaded.segment
    n = len(seg.files)
    digest = seg.digest
    spans = [] if digest is None else [*filter(None, digest.files), *digest.schemas]
    async with reader.open(loaded.location) as source:
        source.assume_identity(loaded.identity)
        ranges = [c.stripe_range(b, n) for c in seg.columns for b in range(c.num_blocks)]
        end = max((e for _, e in [*ranges, *spans]), default=0)
        whole = await source.read_range(0, end) if end else b""
    records: list[tuple[bytes, int] | None] = [None] * n
    schemas: list[bytes] = []
    if digest is not None:
        for i, (span, schema) in enumerate(zip(digest.files, digest.schema_of, strict=True)):
            record = whole[span[0] : span[1]] if span is not None else b""
            if schema is not None and stripe_crc_ok(record):  # a damaged one is left out
                records[i] = (record, schema)
        schemas = [whole[a:b] for a, b in digest.schemas]
    return _Read(_bitsets(loaded, whole), records, schemas)


def _bitsets(loaded: LoadedSegment, whole: bytes) -> list[np.ndarray[Any, Any]]:
    seg = loaded.segment
    n = len(seg.files)
    out = []
    for col in seg.columns:
        rows = []
        for b in range(col.num_blocks):
            start, end = col.stripe_range(b, n)
            piece = whole[start:end]
            if not stripe_crc_ok(piece):
                raise ParquetFormatError(
                    f"stripe {b} of {col.path} fails its CRC (rebuild this segment)",
                    path=loaded.location,
                )
            rows.append(np.frombuffer(piece[:-4], dtype=np.uint8).reshape(n, 32))
        out.append(np.stack(rows) if rows else np.zeros((0, n, 32), np.uint8))
    return out


def _digest(reads: list[_Read], order: list[tuple[str, tuple[int, int]]]) -> DigestRecords | None:
    """The merged digest: each file's record kept, the schemas of the records kept."""
    schemas: list[bytes] = []
    numbers: dict[tuple[int, int], int] = {}
    files: list[tuple[bytes, int] | None] = []
    for _, (s, f) in order:
        found = reads[s].records[f]
        if found is None:
            files.append(None)
            continue
        record, schema = found
        if (s, schema) not in numbers:
            numbers[(s, schema)] = len(schemas)
            schemas.append(reads[s].schemas[schema])
        files.append((record, numbers[(s, schema)]))
    return DigestRecords(files, schemas) if schemas else None


def _merge(group: list[LoadedSegment], reads: list[_Read]) -> bytes:
    """One segment from several of one shape; a file in several keeps its newest entry."""
    newest: dict[str, tuple[int, int]] = {}
    for s_no, loaded in enumerate(group):  # oldest first
        for f_no, entry in enumerate(loaded.segment.files):
            newest[entry.name] = (s_no, f_no)
    order = sorted(newest.items())
    files: list[LakeFile] = [group[s].segment.files[f] for _, (s, f) in order]
    bits = [r.bits for r in reads]
    columns = []
    for c_no, first in enumerate(group[0].segment.columns):
        picked = [bits[s][c_no][:, f, :] for _, (s, f) in order]
        merged = np.stack(picked, axis=1) if picked else np.zeros((first.num_blocks, 0, 32))
        uncovered = {
            i
            for i, (_, (s, f)) in enumerate(order)
            if f in group[s].segment.columns[c_no].uncovered
        }
        folded = {
            i for i, (_, (s, f)) in enumerate(order) if f in group[s].segment.columns[c_no].folded
        }
        col = LakeColumn(
            first.descriptor,
            first.num_blocks,
            max(g.segment.columns[c_no].ndv for g in group),
            first.fpp,
            0,
            frozenset(uncovered),
            frozenset(folded),
        )
        columns.append((col, np.ascontiguousarray(merged, dtype=np.uint8).tobytes()))
    # A table's segments: the merged one covers the newest version the group covered.
    return encode_segment(files, columns, group[-1].segment.table, _digest(reads, order))


async def compact_lake_index(
    root: str | os.PathLike[str],
    *,
    run: RunOptions | None = None,
    **keywords: Unpack[RunKeywords],
) -> LakeCompaction:
    """Merge the lake index's segments: one per shape (columns and block counts).

    The merged segment is written (atomically) before the old ones are
    removed, so a reader sees the old segments, or the old and the new (the
    same answers), or the new one. ``run`` and the keywords are the run's options
    (:class:`~pybloom_async.RunOptions`: ``options``, ``stats``, ``config``, ``reader``).

    Raises
    ------
    SourceNotFoundError
        There is no segment under ``root``.
    ParquetFormatError
        A segment is damaged (its name is in the message; rebuild it).
    SourceError
        A segment cannot be read, written or removed.
    """
    text = path_text("root", root)
    result = LakeCompaction()
    async with open_run(run_options(run, keywords, "compact_lake_index")) as r:
        rdr = r.reader
        locations = await list_segments(text, rdr)
        if not locations:
            raise SourceNotFoundError("no lake index under this root", path=text)
        loaded = [await read_segment(rdr, loc) for loc in locations]
        groups: dict[Any, list[LoadedSegment]] = {}
        for seg in loaded:
            groups.setdefault(_shape(seg.segment), []).append(seg)
        for group in groups.values():
            if len(group) < 2:
                result.left[group[0].location], other = _why_left(group[0], loaded)
                if other:
                    result.other_columns.append(group[0].location)
                continue
            bits = [await _stripes(rdr, g) for g in group]
            payload = await to_worker(_merge, group, bits)
            written = await to_worker(write_segment, text, payload, rdr.options)
            old = [g.location for g in group]
            await to_worker(delete_segments, old, rdr.options)
            result.merged.extend(old)
            result.written.append(written)
        result.files = sum(len(s.segment.files) for s in loaded)
    return result


compact_lake_index_sync = sync_twin(compact_lake_index)
