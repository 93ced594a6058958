"""The footer digest of a lake index: each file's footer kept in its segment, so that a
lookup reads no footer of the files the index covers and finds fresh.

A build records each file's FileMetaData bytes as its writer wrote them (a record: the bytes
zlib-compressed, then their CRC-32) and, per distinct schema, the record of the smallest
footer of that schema (``lake/format.py`` lays them out). A lookup then takes from the
index, beside its verdicts:

* the footers of the files it keeps (one merged read of their records, or none where the
  segment's first read already brought them): pyarrow decodes row groups from those bytes as
  from the file's own footer;
* a footer of each ruled-out file's schema (the schema records lie just before the
  directory, so the segment's first read usually holds them): the result's columns and types
  come from them as from the files' own footers (``rows/footers.py``).

A record that fails its CRC or does not decode is not used: that file's footer is read as
without a digest. Schemas are told apart as the footer decoder and ``rows/plan.py`` tell
them apart (the decoder's schema fingerprint and pyarrow's stored ``ARROW:schema``), within
the process that encodes the segment.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import PyBloomError
from ..io.base import FileInfo, location_text
from ..io.identity import SourceIdentity
from ..pruning.api import CompiledPredicate
from ..pruning.verdicts import Rule, Verdict
from ..read.fetch import Footer, footer_from_metadata
from ..read.ranges import merge_ranges
from ..read.reader import BloomReader
from ..read.run import Run
from ..tasks.workers import gather
from .format import Digest, DigestRecords, digest_record, record_metadata
from .material import FileMaterial
from .prune import IndexEntry, index_pass_run, verdicts_at
from .segments import LoadedSegment

#: Schema keys are numbers the footer decoder gives in one process: a key made in another
#: (a Spark executor's survey) is made again here.
_PROCESS = secrets.token_hex(8)
_ARROW_KEY = "ARROW:schema"


def _schema_key(footer: Footer) -> Hashable | None:
    meta = footer.metadata
    fingerprint = meta.schema.fingerprint
    if fingerprint is None:
        return None
    stored = next((kv.value for kv in meta.key_value_metadata or () if kv.key == _ARROW_KEY), None)
    return (_PROCESS, fingerprint, stored)


def footer_digest(
    footer: Footer, identity: SourceIdentity, immutable: bool
) -> tuple[bytes, Hashable | None] | None:
    """A file's digest record and schema key, when ``footer`` was read from the version
    ``identity`` records (``immutable``: a table's file, known by its size); else None."""
    now = footer.identity
    if immutable:
        same = now.size == identity.size
    else:
        # A local file's tag holds its inode, times and size; a store's is its ETag.
        same = identity.etag is not None and (now.size, now.etag) == (identity.size, identity.etag)
    if not same:
        return None
    metadata = footer.location.metadata_bytes(footer.tail)
    return digest_record(metadata), _schema_key(footer)


def _key_here(f: FileMaterial, record: bytes, key: Hashable | None) -> Hashable | None:
    """The schema key of a file's record in this process (decoded again when made in
    another); None: a schema of its own."""
    if isinstance(key, tuple) and key and key[0] == _PROCESS:
        return key
    try:
        return _schema_key(footer_from_metadata(record_metadata(record, f.path), f.identity))
    except PyBloomError:
        return None


def digest_records(files: Sequence[FileMaterial]) -> DigestRecords | None:
    """The digest of a segment's files (None when no file has a record)."""
    if not any(f.digest is not None for f in files):
        return None
    schemas: list[bytes] = []
    numbers: dict[Hashable, int] = {}
    out: list[tuple[bytes, int] | None] = []
    for f in files:
        if f.digest is None:
            out.append(None)
            continue
        record, key = f.digest
        key = _key_here(f, record, key)
        number = numbers.get(key) if key is not None else None
        if number is None:
            number = len(schemas)
            schemas.append(record)
            if key is not None:
                numbers[key] = number
        elif len(record) < len(schemas[number]):
            schemas[number] = record  # the smallest footer of the schema stands for it
        out.append((record, number))
    return DigestRecords(out, schemas)


@dataclass
class LakeFiles:
    """What the lake index gives a lookup: the files to read, and from its digest the
    footers of those it covers (``footers``, by path) and a footer of the schema of each
    file it rules out (``schemas``: the schema's record, named for that file);
    ``probed``: the kept files whose every leaf the index probed and found may match."""

    kept: list[str | FileInfo]
    footers: dict[str, Footer] = field(default_factory=dict)
    schemas: dict[str, Footer] = field(default_factory=dict)
    probed: set[str] = field(default_factory=set)


#: The digest bytes a segment keeps for later lookups, at most (its first read's, and the
#: records read since); beyond, records are read again.
MAX_HELD_BYTES = 64 * 1024 * 1024


async def _records(
    reader: BloomReader, loaded: LoadedSegment, spans: Sequence[tuple[int, int]]
) -> list[bytes | None]:
    """The records at ``spans`` of a segment: from the bytes it holds (its first read's, and
    the records read before), the rest in one merged read (None for each, when that read
    fails)."""
    held = loaded.memo.get("held", loaded.held)
    missing = [s for s in spans if held.read(*s) is None]
    if missing:
        plan = reader.config.plan
        ranges = merge_ranges(missing, plan.max_hole_bytes, plan.max_range_bytes)
        base = loaded.base
        try:
            async with reader.open(loaded.location) as source:
                source.assume_identity(loaded.identity)
                pieces = await source.read_ranges([(base + a, base + b) for a, b in ranges])
        except PyBloomError:
            return [held.read(*s) for s in spans]
        held = held.plus((a, piece) for (a, _), piece in zip(ranges, pieces, strict=True))
        if sum(b - a for a, b in held.ranges()) <= MAX_HELD_BYTES:
            loaded.memo["held"] = held
    return [held.read(*s) for s in spans]


def _decoded(record: bytes | None, identity: SourceIdentity, where: str) -> Footer | None:
    if record is None:
        return None
    try:
        return footer_from_metadata(record_metadata(record, where), identity)
    except PyBloomError:
        return None  # its footer is read from the file, as without a digest


def _schema_footer(record: bytes | None, where: str) -> Footer | None:
    """A schema record decoded: the footer of a file of that schema (its row groups are not
    the ruled-out file's: only its schema is used)."""
    if record is None:
        return None
    try:
        metadata = record_metadata(record, where)
        # As if a file held its magic and this footer alone.
        identity = SourceIdentity(where, len(metadata) + 12, None, None)
        return footer_from_metadata(metadata, identity)
    except PyBloomError:
        return None


async def _segment_footers(
    reader: BloomReader,
    loaded: LoadedSegment,
    digest: Digest,
    kept: Sequence[tuple[str, IndexEntry]],
    ruled_out: Sequence[tuple[str, IndexEntry]],
    out: LakeFiles,
) -> None:
    """The footers one segment's digest gives: the kept files', the ruled-out files' schemas.

    Each record is decoded once per segment loaded (``LoadedSegment.memo``: a long-lived
    reader keeps them, up to ``max_files`` of them); a record that cannot be used is not
    asked again."""
    memo = loaded.memo
    files = [
        (e.number, e.identity, span)
        for _, e in kept
        if ("file", e.number) not in memo and (span := digest.files[e.number]) is not None
    ]
    numbers = {digest.schema_of[e.number] for _, e in ruled_out}
    wanted = sorted(n for n in numbers if n is not None and ("schema", n) not in memo)
    spans = [span for _, _, span in files] + [digest.schemas[n] for n in wanted]
    records = await _records(reader, loaded, spans) if spans else []
    decoded = {}
    for (number, identity, _), record in zip(files, records[: len(files)], strict=True):
        decoded[number] = _decoded(record, identity, loaded.location)
        if len(memo) < reader.max_files:
            memo[("file", number)] = decoded[number]
    for n, record in zip(wanted, records[len(files) :], strict=True):
        memo[("schema", n)] = _schema_footer(record, loaded.location)
    for path, entry in kept:
        found = decoded.get(entry.number) or memo.get(("file", entry.number))
        if found is not None:
            out.footers[path] = _as(found, entry.identity)
    for path, entry in ruled_out:
        schema = digest.schema_of[entry.number]
        found = None if schema is None else memo.get(("schema", schema))
        if found is not None:
            # Named for the ruled-out file, and its version: only its schema is used.
            out.schemas[path] = _as(found, entry.identity)


def _as(footer: Footer, identity: SourceIdentity) -> Footer:
    """A footer kept in the segment's memo, for the file and version ``identity`` names."""
    if footer.identity == identity:
        return footer
    # (Made directly: dataclasses.replace costs 5 us more a file ruled out.)
    return Footer(identity.path, footer.metadata, footer.location, footer.tail, identity)


async def lake_lookup_files(
    run: Run,
    root: str | os.PathLike[str],
    files: Sequence[str | FileInfo],
    compiled: CompiledPredicate,
    segments: Sequence[FileInfo],
    required: bool = False,
) -> LakeFiles:
    """``files`` less those the lake index under ``root`` rules out (its ``segments``, as
    listed), and what its digest says of them (see :class:`LakeFiles`). The segments the
    run's reader kept are used with no request while they are the version listed.
    ``required`` (``use_index="lake"``): with the run's ``strict``, a stale entry or a
    damaged segment raises, where otherwise the file is left to its own filters
    (:func:`~.prune.index_pass_run`).

    Raises
    ------
    IndexStaleError, PyBloomError
        ``required`` and ``strict``: a file changed since the index was built, or a damaged
        segment.
    """
    reader = run.reader
    if not segments or not files:
        return LakeFiles(list(files))
    async with index_pass_run(run, required) as index_run:
        entries: list[IndexEntry | None] = []
        verdicts = await verdicts_at(index_run, root, files, compiled, segments, entries)
    return await lake_files(reader, files, verdicts, entries)


async def lake_files(
    reader: BloomReader,
    files: Sequence[str | FileInfo],
    verdicts: Sequence[Verdict],
    entries: Sequence[IndexEntry | None],
) -> LakeFiles:
    """The files the verdicts keep, and what the digests of the entries that decided them
    give (see :class:`LakeFiles`)."""
    out = LakeFiles([f for f, v in zip(files, verdicts, strict=True) if v.kept])
    wanted = []
    for f, v, entry in zip(files, verdicts, entries, strict=True):
        if entry is None or entry.loaded.segment.digest is None:
            continue
        path = location_text(f)
        wanted.append((path, entry, v.kept))
        if v.kept and v.rule is Rule.MAY_MATCH:
            out.probed.add(path)
    await _from_digests(reader, wanted, out)
    return out


async def _from_digests(
    reader: BloomReader, wanted: Sequence[tuple[str, IndexEntry, bool]], out: LakeFiles
) -> None:
    """Into ``out``, what the digests give of each file ``wanted`` (its path, its entry,
    and True for its footer, False for its schema's): each segment's at once."""
    by_segment: dict[int, tuple[LoadedSegment, list[Any], list[Any]]] = {}
    for path, entry, footer in wanted:
        _, kept, ruled_out = by_segment.setdefault(id(entry.loaded), (entry.loaded, [], []))
        (kept if footer else ruled_out).append((path, entry))
    await gather(
        _segment_footers,
        [
            (reader, seg, seg.segment.digest, kept, ruled_out, out)
            for seg, kept, ruled_out in by_segment.values()
        ],
    )


async def digest_schemas(
    reader: BloomReader,
    files: Sequence[str | FileInfo],
    verdicts: Sequence[Verdict],
    entries: Sequence[IndexEntry | None],
    every: bool = False,
) -> tuple[int, list[tuple[str, Footer]]]:
    """What the digests say of the files the verdicts rule out (``every``: of every file),
    for a prune, which reads the footers of the files it keeps with their filters, or none
    at all: how many of them have their schema there, and a footer of each schema record
    met, named for the first of its files (in ``files``' order). Only schema records are
    read, usually in the segment's first read already."""
    firsts: dict[tuple[int, int], list[Any]] = {}  # (segment, record): first file, ..., files
    for f, v, e in zip(files, verdicts, entries, strict=True):
        if (v.kept and not every) or e is None or (digest := e.loaded.segment.digest) is None:
            continue
        record = digest.schema_of[e.number]
        if record is not None:
            first = firsts.setdefault((id(e.loaded), record), [location_text(f), e, 0])
            first[2] += 1
    out = LakeFiles([])
    await _from_digests(reader, [(path, e, False) for path, e, _ in firsts.values()], out)
    known, kinds = 0, []
    for path, _, count in firsts.values():
        footer = out.schemas.get(path)
        if footer is not None:
            known += count
            kinds.append((path, footer))
    return known, kinds
