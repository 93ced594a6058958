"""The end of a Parquet file: magic bytes, the footer length and where the footer lies."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import EncryptedFileError, InvalidArgumentError, ParquetFormatError

MAGIC = b"PAR1"
#: Trailing magic of files whose footer is encrypted (Parquet modular encryption).
ENCRYPTED_MAGIC = b"PARE"
#: The footer length (4 bytes) and the trailing magic (4 bytes).
TRAILER_SIZE = 8
#: Leading magic + trailer; a footer needs at least one byte more.
MIN_FILE_SIZE = len(MAGIC) + TRAILER_SIZE


@dataclass(frozen=True, slots=True)
class FooterBounds:
    """Where the FileMetaData lies in a file, from the file's last 8 bytes.

    ``metadata_offset`` and ``metadata_length`` are absolute: the thrift bytes
    are ``file[metadata_offset : metadata_offset + metadata_length]``, which
    always ends 8 bytes before ``file_size``.
    """

    file_size: int
    metadata_offset: int
    metadata_length: int
    leading_magic_checked: bool

    @property
    def metadata_end(self) -> int:
        """Absolute offset one past the FileMetaData (where the 4-byte length starts)."""
        return self.metadata_offset + self.metadata_length

    def missing_range(self, tail_length: int) -> tuple[int, int] | None:
        """The absolute ``(start, end)`` still needed when the last ``tail_length`` bytes are held.

        Returns ``None`` when that suffix already covers the FileMetaData.
        Fetch the range and pass ``fetched + tail`` to :meth:`metadata_bytes`.
        """
        tail_start = self.file_size - tail_length
        if tail_start <= self.metadata_offset:
            return None
        return (self.metadata_offset, tail_start)

    def metadata_bytes(self, tail: bytes | bytearray | memoryview) -> memoryview:
        """Slice the FileMetaData out of a suffix of the file.

        Parameters
        ----------
        tail:
            The file's last ``len(tail)`` bytes; it must reach back to
            ``metadata_offset`` (see :meth:`missing_range`).

        Raises
        ------
        InvalidArgumentError
            ``tail`` is longer than the file or does not cover the FileMetaData.
        """
        view = memoryview(tail).cast("B")
        if len(view) > self.file_size:
            raise InvalidArgumentError(
                f"tail of {len(view)} bytes is longer than the {self.file_size}-byte file"
            )
        start = self.metadata_offset - (self.file_size - len(view))
        if start < 0:
            raise InvalidArgumentError(
                f"tail of {len(view)} bytes does not reach the footer at offset "
                f"{self.metadata_offset}; fetch missing_range() first"
            )
        return view[start : start + self.metadata_length]


def parse_footer_tail(
    tail: bytes | bytearray | memoryview, file_size: int, *, path: str | None = None
) -> FooterBounds:
    """Validate a file's trailer and locate its FileMetaData.

    Parameters
    ----------
    tail:
        The last ``len(tail)`` bytes of the file: at least 8 (or the whole
        file). When it is the whole file the leading ``PAR1`` is checked too;
        otherwise call :func:`check_leading_magic` if the first bytes are read.
    file_size:
        The file's size in bytes.
    path:
        The file's name, for error messages.

    Raises
    ------
    ParquetFormatError
        The file is too small, a magic number is wrong, or the footer length
        points outside the file.
    EncryptedFileError
        The file ends with ``PARE`` (encrypted footer).
    InvalidArgumentError
        ``tail`` is longer than ``file_size``, or shorter than 8 bytes.
    """
    view = memoryview(tail).cast("B")
    if file_size < 0 or len(view) > file_size:
        raise InvalidArgumentError(
            f"tail of {len(view)} bytes does not fit a file of {file_size} bytes"
        )
    if file_size <= MIN_FILE_SIZE:
        raise ParquetFormatError(
            f"file is {file_size} bytes, too small for Parquet (at least {MIN_FILE_SIZE + 1})",
            path=path,
        )
    if len(view) < TRAILER_SIZE:
        raise InvalidArgumentError(f"need the file's last {TRAILER_SIZE} bytes, got {len(view)}")
    magic = bytes(view[-4:])
    if magic == ENCRYPTED_MAGIC:
        raise EncryptedFileError(
            "encrypted files are not supported (the footer is encrypted: trailing magic PARE)",
            path=path,
        )
    if magic != MAGIC:
        raise ParquetFormatError(
            f"not a Parquet file: trailing magic is {magic!r}, expected {MAGIC!r}", path=path
        )
    (length,) = struct.unpack("<I", view[-8:-4])
    # The FileMetaData sits between the leading magic and the trailer.
    room = file_size - MIN_FILE_SIZE
    if length == 0:
        raise ParquetFormatError("footer length is 0", path=path)
    if length > room:
        raise ParquetFormatError(
            f"footer length {length} exceeds the {room} bytes between the magic numbers",
            path=path,
        )
    checked = False
    if len(view) == file_size:
        check_leading_magic(view[:4], path=path)
        checked = True
    return FooterBounds(
        file_size=file_size,
        metadata_offset=file_size - TRAILER_SIZE - length,
        metadata_length=length,
        leading_magic_checked=checked,
    )


def check_leading_magic(head: bytes | bytearray | memoryview, *, path: str | None = None) -> None:
    """Check that a file starts with ``PAR1``.

    Parameters
    ----------
    head:
        At least the file's first 4 bytes.

    Raises
    ------
    EncryptedFileError
        The file starts with ``PARE`` (encrypted footer).
    ParquetFormatError
        Any other start, or fewer than 4 bytes.
    """
    first = bytes(memoryview(head).cast("B")[:4])
    if first == ENCRYPTED_MAGIC:
        raise EncryptedFileError(
            "encrypted files are not supported (leading magic PARE)", path=path
        )
    if first != MAGIC:
        raise ParquetFormatError(
            f"not a Parquet file: leading magic is {first!r}, expected {MAGIC!r}", path=path
        )
