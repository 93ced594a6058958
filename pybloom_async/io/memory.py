"""A byte source over bytes in memory."""

from __future__ import annotations

from ..tasks.loops import checkpoint
from .base import ByteSource, SourceStats
from .identity import SourceIdentity

# --------------------------------------------------------------------------- memory


class MemorySource(ByteSource):
    """A source over bytes in memory, for tests and already-downloaded files."""

    def __init__(
        self,
        data: bytes | bytearray | memoryview,
        *,
        path: str = "<memory>",
        stats: SourceStats | None = None,
        etag: str | None = None,
    ) -> None:
        # One copy makes the content immutable, as a file's is between reads.
        self._data = bytes(data)
        super().__init__(path, stats=stats, etag=etag)

    async def _stat(self) -> SourceIdentity:
        return SourceIdentity(self._path, len(self._data), self._etag, None)

    async def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        # Yield once, as a real source would, so callers' cancellation paths are exercised
        # (inline, where nothing else runs, it reads at once).
        await checkpoint()
        return [self._data[start:end] for start, end in ranges]
