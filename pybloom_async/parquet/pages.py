"""Parquet page headers: the thrift ``PageHeader`` before every page (pure, no I/O).

A column chunk is a run of pages, each a compact-protocol ``PageHeader`` followed by
``compressed_page_size`` bytes. :class:`PageHeaderReader` decodes headers anywhere in
one buffer (one thrift transport for all of them); :func:`decode_page_header` is the
one-off form. :func:`read_page_header` is the fast one: the C decoder
(``csrc/footer/page_header.c``), which reads the values thrift reads where it accepts a
header, and this module's decoder where it refuses one (which names what is wrong). The
fields of data pages (v1 and v2) and dictionary pages are read (:mod:`.page_specs`); an
index page is recognised by ``type`` and its own header skipped.

The bytes are untrusted: decoder limits come from the buffer's size, and every
decoder failure becomes a :class:`~pybloom_async.errors.ParquetFormatError` naming
the file and column. Sizes in a header are returned as found; the caller checks them
against the chunk before using them.
"""

from __future__ import annotations

import struct
from typing import Any, Literal, NamedTuple

from thrift.protocol.TCompactProtocol import TCompactProtocol
from thrift.transport.TTransport import TMemoryBuffer

from .._native import ffi, lib
from ..errors import InvalidArgumentError, ParquetFormatError
from . import page_specs as wire
from .thrift import THRIFT_DECODER, StrictCompactProtocol, describe_decode_error, length_limit

try:
    from thrift.protocol import fastbinary as _fastbinary
except ImportError:  # pragma: no cover - thrift built without its C extension (footer.py)
    _fastbinary = None


#: ``PageType.DATA_PAGE`` of parquet.thrift.
DATA_PAGE = 0


class DataPageV2(NamedTuple):
    """A v2 data page's own header; fields the writer left out are None."""

    num_values: int | None
    num_nulls: int | None
    num_rows: int | None
    encoding: int | None
    definition_levels_byte_length: int | None
    repetition_levels_byte_length: int | None
    is_compressed: bool  # the values are compressed (the levels never are); true if unset


class PageHeader(NamedTuple):
    """One decoded ``PageHeader``; fields the writer left out are None."""

    type: int | None  # a PageType number (DATA_PAGE is 0)
    uncompressed_page_size: int | None
    compressed_page_size: int | None  # the bytes that follow the header
    crc: int | None  # CRC32 of those bytes as thrift's signed i32: compare crc & 0xFFFFFFFF
    num_values: int | None  # from the v1 data page or the dictionary page header
    encoding: int | None  # that header's Encoding number (PLAIN is 0)
    header_length: int  # bytes the header itself took
    definition_level_encoding: int | None = None  # a v1 data page's
    v2: DataPageV2 | None = None  # a v2 data page's header


_ARGS = [wire.PageHeader, wire.PageHeader.thrift_spec]


def _v2(raw: Any) -> DataPageV2:
    return DataPageV2(
        raw.num_values,
        raw.num_nulls,
        raw.num_rows,
        raw.encoding,
        raw.definition_levels_byte_length,
        raw.repetition_levels_byte_length,
        raw.is_compressed is not False,
    )


class PageHeaderReader:
    """Decodes page headers at any offset of one buffer.

    One thrift transport serves every read (it seeks to each offset), so a reader must
    not be shared between threads.

    Parameters
    ----------
    data:
        The bytes holding the pages (a whole small file, or a column chunk); not copied.
    path:
        The file's name, for error messages.
    decoder:
        The thrift decoder: the footer decoder's choice by default (``THRIFT_DECODER``).

    Raises
    ------
    InvalidArgumentError
        ``data`` is not ``bytes``.
    """

    __slots__ = ("_buffer", "_decoder", "_protocol", "_size", "path")

    def __init__(
        self,
        data: bytes,
        *,
        path: str | None = None,
        decoder: Literal["fastbinary", "python"] = THRIFT_DECODER,
    ) -> None:
        if not isinstance(data, bytes):
            raise InvalidArgumentError(f"page data must be bytes, not {type(data).__name__}")
        self.path = path
        self._size = len(data)
        self._decoder = decoder
        self._protocol: Any = self._new_protocol(TMemoryBuffer(data))  # shares the bytes
        self._buffer = self._protocol.trans._buffer

    def _new_protocol(self, transport: TMemoryBuffer) -> Any:
        limit = length_limit(self._size)
        kind = TCompactProtocol if self._decoder == "fastbinary" else StrictCompactProtocol
        return kind(transport, string_length_limit=limit, container_length_limit=limit)

    def read(self, offset: int, *, column: str | None = None) -> PageHeader:
        """Decode the header that starts at ``offset``.

        Raises
        ------
        ParquetFormatError
            ``offset`` lies outside the buffer, or the bytes there are not a valid
            header (truncated, malformed thrift).
        InvalidArgumentError
            ``offset`` is not an int.
        """
        if type(offset) is not int:
            raise InvalidArgumentError(f"offset must be an int, not {type(offset).__name__}")
        if not 0 <= offset < self._size:
            raise ParquetFormatError(
                f"page header offset {offset} lies outside the {self._size} bytes",
                path=self.path,
                column=column,
            )
        buffer = self._buffer
        buffer.seek(offset)
        raw = wire.PageHeader()
        try:
            if self._decoder == "fastbinary":
                _fastbinary.decode_compact(raw, self._protocol, _ARGS)
            else:
                self._protocol.readStruct(raw, wire.PageHeader.thrift_spec)
        except Exception as exc:  # every decoder failure, whatever its type, is a format error
            # The pure-Python protocol keeps state between calls: start the next read afresh.
            self._protocol = self._new_protocol(self._protocol.trans)
            raise ParquetFormatError(
                f"malformed page header at offset {offset}: {describe_decode_error(exc)}",
                path=self.path,
                column=column,
            ) from None
        v1 = raw.data_page_header
        dph = v1 or raw.dictionary_page_header
        v2 = raw.data_page_header_v2
        return PageHeader(
            raw.type,
            raw.uncompressed_page_size,
            raw.compressed_page_size,
            raw.crc,
            None if dph is None else dph.num_values,
            None if dph is None else dph.encoding,
            buffer.tell() - offset,
            None if v1 is None else v1.definition_level_encoding,
            None if v2 is None else _v2(v2),
        )


def decode_page_header(
    data: bytes, offset: int = 0, *, path: str | None = None, column: str | None = None
) -> PageHeader:
    """Decode the ``PageHeader`` at ``offset`` of ``data``.

    To decode many headers of one buffer, make one :class:`PageHeaderReader`.

    Raises
    ------
    ParquetFormatError
        The offset lies outside ``data``, or the header is truncated or malformed.
    InvalidArgumentError
        ``data`` is not bytes or ``offset`` not an int.
    """
    return PageHeaderReader(data, path=path).read(offset, column=column)


# The fields of a header the C decoder read (pba_page_header.present).
_PH_TYPE = lib.PBA_PH_TYPE
_PH_UNCOMPRESSED = lib.PBA_PH_UNCOMPRESSED_PAGE_SIZE
_PH_COMPRESSED = lib.PBA_PH_COMPRESSED_PAGE_SIZE
_PH_CRC = lib.PBA_PH_CRC
_PH_NUM_VALUES = lib.PBA_PH_NUM_VALUES
_PH_ENCODING = lib.PBA_PH_ENCODING
_PH_DEFINITION_LEVEL_ENCODING = lib.PBA_PH_DEFINITION_LEVEL_ENCODING
_PH_V2 = lib.PBA_PH_V2
_PH_V2_BITS = (
    lib.PBA_PH_V2_NUM_VALUES,
    lib.PBA_PH_V2_NUM_NULLS,
    lib.PBA_PH_V2_NUM_ROWS,
    lib.PBA_PH_V2_ENCODING,
    lib.PBA_PH_V2_DEFINITION_LEVELS_BYTE_LENGTH,
    lib.PBA_PH_V2_REPETITION_LEVELS_BYTE_LENGTH,
)
#: pba_page_header's layout: ``present``, fourteen int32 fields in declaration order, then
#: ``header_length`` (checked against the compiler's layout here).
_RECORD = struct.Struct("=I14i4xQ")
if (
    ffi.sizeof("pba_page_header") != _RECORD.size
    or ffi.offsetof("pba_page_header", "header_length") != _RECORD.size - 8
):  # pragma: no cover - a compiler that lays the struct out otherwise
    raise ImportError("pba_page_header's layout is not the one pages.py reads")


def read_page_header(
    data: bytes | memoryview,
    offset: int = 0,
    *,
    path: str | None = None,
    column: str | None = None,
) -> PageHeader:
    """The ``PageHeader`` at ``offset`` of ``data`` (bytes, or a memoryview of bytes: not
    copied), as :func:`decode_page_header` reads it: decoded in C where the C decoder
    accepts it, else by :class:`PageHeaderReader` from a copy of the bytes from ``offset``.

    Raises
    ------
    ParquetFormatError
        The offset lies outside ``data``, or the header is truncated or malformed.
    """
    size = len(data)
    if 0 <= offset < size:
        out = ffi.new("pba_page_header *")
        held = ffi.from_buffer("uint8_t[]", data)  # keeps the buffer exported during the call
        if lib.pba_page_header_read(held + offset, size - offset, out) == 0:
            return _from_record(_RECORD.unpack(ffi.buffer(out)))
    whole = data if isinstance(data, bytes) else bytes(data)
    return PageHeaderReader(whole, path=path).read(offset, column=column)


def _from_record(h: tuple[int, ...]) -> PageHeader:
    present = h[0]
    v2 = None
    if present & _PH_V2:
        got = [h[8 + i] if present & bit else None for i, bit in enumerate(_PH_V2_BITS)]
        v2 = DataPageV2(got[0], got[1], got[2], got[3], got[4], got[5], bool(h[14]))
    return PageHeader(
        h[1] if present & _PH_TYPE else None,
        h[2] if present & _PH_UNCOMPRESSED else None,
        h[3] if present & _PH_COMPRESSED else None,
        h[4] if present & _PH_CRC else None,
        h[5] if present & _PH_NUM_VALUES else None,
        h[6] if present & _PH_ENCODING else None,
        h[15],
        h[7] if present & _PH_DEFINITION_LEVEL_ENCODING else None,
        v2,
    )
