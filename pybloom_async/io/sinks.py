"""Writing whole files so that a reader never sees a partial one.

Local files are written to a temporary file in the destination's directory,
flushed to disk (``fsync``), then renamed over the final name (atomic on POSIX
file systems) and the directory is synced, so a crash at any point leaves either
the old file or the complete new one, never a mix, and no partial file under the
final name. Object stores get one PUT, which they make visible atomically.

Temporary files are named ``.<name>.<random>.tmp``: hidden by the Hadoop
convention (leading ``.``), so Spark, Hive and our own listings skip them if a
crash leaves one behind.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterable
from typing import IO

import obstore

from ..errors import InvalidArgumentError, SourceError, SourceNotFoundError
from .address import parse_address
from .failures import map_errors
from .store import StoreOptions, cached_store, check_applicable


def temporary_name(final: str) -> str:
    """A fresh hidden temporary path next to ``final`` (same directory, same file system)."""
    head, tail = os.path.split(final)
    return os.path.join(head, f".{tail}.{secrets.token_hex(6)}.tmp")


def _fsync_dir(directory: str) -> None:
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(directory or ".", flags)
    except OSError:
        return  # some file systems cannot open directories; the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass  # not supported for directories on this file system
    finally:
        os.close(fd)


def write_local_atomic(path: str | os.PathLike[str], write: Callable[[IO[bytes]], None]) -> None:
    """Create or replace the local file ``path`` with what ``write(f)`` writes, atomically.

    ``write`` receives a binary file open on a temporary file in the same
    directory. When it returns, the data is fsynced, renamed over ``path`` and the
    directory entry synced. If ``write`` (or anything after it) fails, the
    temporary file is removed, ``path`` is untouched, and the error propagates.
    A replaced file keeps its permission bits; a new one gets ``0o666`` less the
    umask (not executable), as files written by ``open()`` do.

    Raises
    ------
    SourceError
        The directory does not exist or cannot be written.
    """
    final = os.fspath(path)
    directory = os.path.dirname(final) or "."
    if not os.path.isdir(directory):
        raise SourceError("cannot write: the directory does not exist", path=final)
    tmp = temporary_name(final)
    try:
        mode = os.stat(final).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    try:
        with map_errors(final, "write"):
            # 0o666 & ~umask, as open() and every tool that writes data files: without the
            # mode argument os.open creates 0o777 & ~umask, executable files.
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
            fd = os.open(tmp, flags, 0o666)
            with os.fdopen(fd, "wb") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            if mode is not None:
                os.chmod(tmp, mode)
            os.replace(tmp, final)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def write_atomic(
    location: str | os.PathLike[str],
    data: bytes | bytearray | memoryview | Iterable[bytes],
    *,
    options: StoreOptions | None = None,
) -> None:
    """Write a whole file or object so that readers see the old or the new one, never a part.

    Local paths use :func:`write_local_atomic`; object-store URLs one PUT (the
    store publishes it atomically). ``data`` is bytes or an iterable of byte chunks.

    Raises
    ------
    InvalidArgumentError
        The location is malformed, an HTTP URL (read-only) or the options do not apply.
    SourceError
        The write failed (the message names the location).
    """
    loc = parse_address(location)
    chunks: list[bytes | bytearray | memoryview] = (
        [data] if isinstance(data, (bytes, bytearray, memoryview)) else list(data)
    )
    if loc.kind == "file":

        def write(f: IO[bytes]) -> None:
            for chunk in chunks:
                f.write(chunk)

        write_local_atomic(loc.path, write)
        return
    if loc.kind == "http":
        raise InvalidArgumentError("HTTP locations are read-only", path=loc.display)
    resolved = options or StoreOptions()
    check_applicable(loc, resolved)
    store = cached_store(loc, resolved)
    payload = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    with map_errors(loc.display, "write"):
        obstore.put(store, loc.key, bytes(payload))


def remove_if_present(location: str, *, options: StoreOptions | None = None) -> bool:
    """Remove a file or object; True when it was there, False when it was not.

    On an object store that is a HEAD, then a DELETE when the object exists (stores
    such as S3 answer a DELETE of a missing key as a success).

    Raises
    ------
    InvalidArgumentError
        The location is malformed or an HTTP URL (read-only).
    SourceError
        The removal failed (the message names the location).
    """
    loc = parse_address(location)
    if loc.kind == "http":
        raise InvalidArgumentError("HTTP locations are read-only", path=loc.display)
    try:
        with map_errors(loc.display, "removing"):
            if loc.kind == "file":
                os.remove(loc.path)
            else:
                resolved = options or StoreOptions()
                check_applicable(loc, resolved)
                store = cached_store(loc, resolved)
                obstore.head(store, loc.key)
                obstore.delete(store, loc.key)
    except SourceNotFoundError:
        return False
    return True
