"""A flat column chunk read in C, a whole chunk per call (``pba_chunk_*``, ``csrc/rows/chunk.c``).

The walk of :mod:`.page_walk` makes a few calls and objects per page, each holding the
interpreter. Here one call reads the page headers of a chunk, and one call per use finds
its rows whose key is one of a few (:meth:`Chunk.match`) or takes its values at given rows
(:meth:`Chunk.take`): the pages that hold a wanted row are decompressed in C, once per
chunk, and read there. cffi releases the interpreter around each call, so the chunks of a
run are read on every core.

Every method returns None where the C reader does not read the chunk (a codec the library
was built without, :func:`codec_available`; a page kind, encoding or layout it does not
read; bytes that are not what the headers say): the caller reads it another way, which
names what is wrong. Nothing here raises for what a file holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._native import ffi, lib

#: Byte arrays taken from one chunk total at most this (more: the chunk is read another way).
MAX_TAKEN_BYTES = 256 << 20


def codec_available(codec: int) -> bool:
    """Whether pages of ``codec`` (Parquet's CompressionCodec) are decompressed in C."""
    found = _CODECS.get(codec)
    if found is None:
        found = bool(lib.pba_codec_available(codec))
        if len(_CODECS) < 64:  # codecs a footer names: a handful, but numbers are untrusted
            _CODECS[codec] = found
    return found


#: What :func:`codec_available` found, by codec number (the library's build fixes it).
_CODECS: dict[int, bool] = {}


#: A chunk as :meth:`Chunks.open` takes it: its pages' bytes, codec, rows and uncompressed
#: size as its footer says; then, for some of its pages (chosen by an offset index), each
#: page's rows as the index says (a numpy ``uint32`` array), or None for a whole chunk.
ChunkPart = tuple[memoryview, int, int, int] | tuple[memoryview, int, int, int, Any]


def _described(
    spec: Any,
    data: memoryview,
    codec: int,
    width: int,
    optional: bool,
    num_rows: int,
    limit: int,
    page_rows: Any = None,
) -> Any:
    """``spec`` (a ``pba_chunk``) filled for the chunk whose pages are ``data``: the cdata
    of its bytes (and of ``page_rows``, each page's rows), to keep alive with the reader;
    None when it is not read here (a codec not built in, a row count or size the reader
    does not take)."""
    if not codec_available(codec) or not 0 <= num_rows < 1 << 31 or limit < 0:
        return None
    source = ffi.from_buffer("uint8_t[]", data)
    spec.data, spec.len, spec.codec = source, len(data), codec
    spec.width, spec.optional, spec.num_rows, spec.limit = width, int(optional), num_rows, limit
    if page_rows is None:
        return source
    rows = ffi.from_buffer("uint32_t[]", page_rows)
    spec.page_rows, spec.n_page_rows = rows, len(page_rows)
    return source, rows


class Chunk:
    """One chunk's C reader, opened at once (its page headers read): a :class:`Chunks` of
    one, whose calls it makes. The pages it decompressed are freed with it."""

    def __init__(self, chunks: Chunks) -> None:
        self._chunks = chunks
        self.width, self.num_rows = chunks.width, chunks.num_rows[0]

    @classmethod
    def of(cls, chunks: Chunks | None) -> Chunk | None:
        """The one chunk of ``chunks``, its reader opened now (None: ``chunks`` is None, or
        the reader does not open: the chunk is not read here)."""
        return cls(chunks) if chunks is not None and chunks.opened() else None

    @property
    def pages_read(self) -> int:
        """How many of its data pages have been read (each is decompressed once)."""
        return self._chunks.pages_read

    def match(self, keys: Any) -> Any:
        """The rows (ascending, numpy int64) whose value is one of ``keys`` (a ``pba_keys *``
        of this chunk's width), or None."""
        found = self._chunks.match(keys)
        return found[0] if found is not None else None

    def take(self, rows: Any) -> tuple[Any, Any, Any] | None:
        """The values at ``rows`` (strictly ascending numpy int64, each below the row
        group's rows), or None: a numpy ``uint8`` of 1 for a present value and 0 for a NULL;
        fixed width, the values' bytes (``n * width``, zeros for a NULL) and None; byte
        arrays, their bytes and Arrow's offsets (int64, ``n + 1``)."""
        return self._chunks.take(rows, np.array([len(rows)], dtype=np.uint64))


class Chunks:
    """C chunk readers over many chunks of one column (a file's row groups), each use one
    call for them all (``pba_chunks_*``): the readers are opened by the first call and kept
    for the next, so a key chunk matched is taken from without reading its pages again.
    Closed by :meth:`Chunks.close` (or when collected)."""

    def __init__(self, specs: Any, sources: list[Any], width: int, num_rows: list[int]) -> None:
        self._specs, self._sources, self.width, self.num_rows = specs, sources, width, num_rows
        n = len(num_rows)
        self._readers = ffi.new("pba_chunk_reader *[]", n)
        self._closed_when_collected = ffi.gc(self._readers, _closer(n))
        self._failed = ffi.new("size_t *")

    @classmethod
    def open(cls, parts: Sequence[ChunkPart], width: int, optional: bool) -> Chunks | None:
        """The chunks ``parts`` (each its pages' bytes, codec, row group's rows and
        uncompressed size as its footer says: its pages decompress to no more; or some of
        its pages, their rows and each page's: :data:`ChunkPart`), or None: one is not read
        here. ``width``: 4 or 8 for fixed-width values, 0 for byte arrays."""
        specs = ffi.new("pba_chunk[]", len(parts))
        sources = []  # the chunks' bytes, alive with the readers
        for spec, part in zip(specs, parts, strict=True):
            data, codec, num_rows, limit = part[:4]
            page_rows = part[4] if len(part) > 4 else None
            source = _described(spec, data, codec, width, optional, num_rows, limit, page_rows)
            if source is None:
                return None
            sources.append(source)
        return cls(specs, sources, width, [p[2] for p in parts])

    def match(self, keys: Any) -> tuple[Any, Any] | None:
        """The rows whose value is one of ``keys`` (a ``pba_keys *``): every chunk's in
        turn (numpy int64, each ascending) and how many are each chunk's (numpy uint64);
        None: a chunk is not read here."""
        rows = np.empty(max(sum(self.num_rows), 1), dtype=np.uint32)
        counts = np.zeros(len(self.num_rows), dtype=np.uint64)
        status = lib.pba_chunks_match(
            self._specs,
            len(self.num_rows),
            keys,
            ffi.from_buffer("uint32_t[]", rows),
            len(rows),
            ffi.from_buffer("uint64_t[]", counts),
            self._readers,
            self._failed,
        )
        if status != 0:
            return None
        return rows[: int(counts.sum())].astype(np.int64), counts

    def take(self, rows: Any, counts: Any) -> tuple[Any, Any, Any] | None:
        """The values at ``rows`` (each chunk's ``counts`` of them in turn, numpy int64 and
        uint64; each chunk's strictly ascending), as :meth:`Chunk.take` gives them for one
        chunk; None: a chunk is not read here."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        counts = np.ascontiguousarray(counts, dtype=np.uint64)
        n = len(rows)
        if len(counts) != len(self.num_rows) or int(counts.sum()) != n:
            return None
        valid = np.empty(n, dtype=np.uint8)
        values = np.empty(n * self.width, dtype=np.uint8) if self.width else None
        offsets = None if self.width else np.empty(n + 1, dtype=np.int64)
        u8 = "uint8_t[]"
        status = lib.pba_chunks_take(
            self._specs,
            len(self.num_rows),
            ffi.from_buffer("int64_t[]", rows),
            ffi.from_buffer("uint64_t[]", counts),
            ffi.from_buffer(u8, valid),
            ffi.NULL if values is None else ffi.from_buffer(u8, values),
            ffi.NULL if offsets is None else ffi.from_buffer("int64_t[]", offsets),
            self._readers,
            self._failed,
        )
        if status != 0:
            return None
        if offsets is None:
            return valid, values, None
        size = int(offsets[-1])
        if size > MAX_TAKEN_BYTES:
            return None
        data = np.empty(size, dtype=np.uint8)
        gathered = lib.pba_chunks_gather(
            self._readers, len(self.num_rows), ffi.from_buffer(u8, data), size
        )
        return (valid, data, offsets) if gathered == 0 else None

    def opened(self) -> bool:
        """Whether every chunk's reader opens now (its page headers read): False when one
        does not, which is then not read here."""
        for i in range(len(self.num_rows)):
            if self._readers[i] == ffi.NULL:
                reader = ffi.addressof(self._readers, i)
                if lib.pba_chunk_open(ffi.addressof(self._specs, i), reader) != 0:
                    return False
        return True

    @property
    def pages_read(self) -> int:
        """How many data pages the open readers have read (each is decompressed once)."""
        readers = (self._readers[i] for i in range(len(self.num_rows)))
        return sum(int(lib.pba_chunk_pages_read(r)) for r in readers if r != ffi.NULL)

    def close(self) -> None:
        """Frees the readers and the pages they decompressed (again: nothing)."""
        lib.pba_chunks_close(self._readers, len(self.num_rows))

    def __enter__(self) -> Chunks:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _closer(n: int) -> Any:
    def close(readers: Any) -> None:
        lib.pba_chunks_close(readers, n)

    return close
