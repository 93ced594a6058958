"""The file being rewritten: opened once (local or object store), its footer, checked unchanged."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import IO

from ..errors import (
    SourceError,
)
from ..io.identity import SourceIdentity, local_identity
from ..io.objects import open_source
from ..io.store import StoreOptions
from ..parquet.tail import check_leading_magic, parse_footer_tail
from ..read.columns import ColumnReader

# Footer bytes read first from a local file; a larger footer costs one more read.
_TAIL_READ = 64 * 1024
# Copy buffer for the unchanged part of a local file.
_COPY_CHUNK = 8 * 1024 * 1024


# ---- reading the source ---------------------------------------------------------------


@dataclass
class SourceFile:
    """The file being extended: its footer, and how to copy its unchanged bytes."""

    display: str
    size: int
    metadata_offset: int
    metadata: bytes
    fd: int | None = None  # local files: an open descriptor on the file read
    data: bytes | None = None  # object stores: the whole object
    identity: SourceIdentity | None = None  # local files: as opened

    def reader(self) -> ColumnReader:
        if self.data is not None:
            return ColumnReader(self.data)
        return ColumnReader(self.display)

    def copy_prefix(self, f: IO[bytes]) -> None:
        """Write the bytes before the old footer to ``f``, unchanged."""
        if self.data is not None:
            f.write(memoryview(self.data)[: self.metadata_offset])
            return
        assert self.fd is not None
        buf = bytearray(min(_COPY_CHUNK, max(self.metadata_offset, 1)))
        view = memoryview(buf)
        position = 0
        while position < self.metadata_offset:
            want = min(len(buf), self.metadata_offset - position)
            n = os.preadv(self.fd, [view[:want]], position)
            if n <= 0:
                raise SourceError(
                    f"the file ended at byte {position} while being copied (truncated meanwhile?)",
                    path=self.display,
                )
            f.write(view[:n])
            position += n

    def check_unchanged(self) -> None:
        """Raise if the local file was modified or replaced since it was opened."""
        if self.fd is None or self.identity is None:
            return
        try:
            now = os.stat(self.display)
            held = os.fstat(self.fd)
        except OSError as exc:
            raise SourceError(
                f"the file disappeared while filters were added: {exc.strerror}", path=self.display
            ) from exc
        for st in (now, held):
            if local_identity(self.display, st) != self.identity:
                raise SourceError(
                    "the file changed while filters were added; it was left as it is",
                    path=self.display,
                )

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _locate(tail: bytes, size: int, display: str) -> tuple[int, int]:
    location = parse_footer_tail(tail, size, path=display)
    return location.metadata_offset, location.metadata_length


def open_local(path: str) -> SourceFile:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError as exc:
        from ..errors import SourceNotFoundError

        raise SourceNotFoundError("no such file", path=path) from exc
    except OSError as exc:
        raise SourceError(f"cannot open: {exc.strerror}", path=path) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SourceError("not a regular file", path=path)
        size = st.st_size
        tail = os.pread(fd, min(size, _TAIL_READ), max(0, size - _TAIL_READ))
        if len(tail) != min(size, _TAIL_READ):
            raise SourceError("the file is shorter than its size (changing?)", path=path)
        offset, length = _locate(tail, size, path)
        check_leading_magic(os.pread(fd, 4, 0), path=path)
        start = offset - (size - len(tail))
        if start >= 0:
            metadata = tail[start : start + length]
        else:
            metadata = os.pread(fd, length, offset)
            if len(metadata) != length:
                raise SourceError("the file is shorter than its size (changing?)", path=path)
        identity = local_identity(path, st)
        return SourceFile(path, size, offset, metadata, fd=fd, identity=identity)
    except BaseException:
        os.close(fd)
        raise


async def fetch_remote(location: str, options: StoreOptions | None) -> SourceFile:
    """An object, read whole on the caller's event loop."""
    async with open_source(location, options=options) as source:
        size = await source.size()
        data = await source.read_range(0, size)
    offset, length = _locate(data, len(data), location)
    return SourceFile(location, len(data), offset, data[offset : offset + length], data=data)
