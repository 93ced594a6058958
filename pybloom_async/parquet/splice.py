"""Set ``bloom_filter_offset``/``bloom_filter_length`` in an encoded footer, preserving the rest.

Adding filters to an existing file means changing two fields of some
``ColumnMetaData`` structs (field 14, i64 ``bloom_filter_offset``; field 15, i32
``bloom_filter_length``) and nothing else. Decoding the footer into a model and
encoding it again would drop every field the model does not know (size
statistics, geospatial statistics, page index locations, key/value metadata,
fields from newer writers), so this module does not decode: it *walks* the
thrift compact encoding and copies every value verbatim.

That works because compact-protocol containers carry no byte lengths: a struct
is a run of field headers and values ended by a STOP byte, and a list states an
element count. Changing one struct's body changes no byte outside it. Inside a
changed ``ColumnMetaData`` the only bytes re-emitted are field *headers*, and
only where needed: a header holds the field id as a delta from the previous
field's id (thrift's ``TCompactProtocol``, "field id delta"), so inserting
fields 14 and 15 changes the header of the field after them. Every other header
is copied as it was, short or long form.

Every byte is untrusted: nesting depth, varint sizes, string lengths and element
counts are checked against limits and against the bytes that remain before
anything is read past them, nothing is allocated from a length in the input,
and every malformed input raises :class:`~pybloom_async.errors.ParquetFormatError`.
Footers of encrypted files (``encryption_algorithm`` or a footer signing key in
FileMetaData, ``crypto_metadata`` or ``encrypted_column_metadata`` in a column
chunk) are refused with :class:`~pybloom_async.errors.EncryptedFileError`: a
signed plaintext footer would no longer verify after the change.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import NoReturn

from ..errors import EncryptedFileError, InvalidArgumentError, ParquetFormatError

#: Deepest nesting of structs and containers accepted (thrift's own decoder stops at 64).
MAX_DEPTH = 64

# Compact-protocol type nibbles (thrift doc/specs/thrift-compact-protocol.md).
_STOP = 0
_TRUE = 1
_FALSE = 2
_BYTE = 3
_I16 = 4
_I32 = 5
_I64 = 6
_DOUBLE = 7
_BINARY = 8
_LIST = 9
_SET = 10
_MAP = 11
_STRUCT = 12
_UUID = 13

# Field ids from apache/parquet-format parquet.thrift.
_FMD_ROW_GROUPS = 4
_FMD_ENCRYPTION_ALGORITHM = 8
_FMD_FOOTER_SIGNING_KEY = 9
_RG_COLUMNS = 1
_CC_META_DATA = 3
_CC_CRYPTO_METADATA = 8
_CC_ENCRYPTED_METADATA = 9
_CMD_BLOOM_OFFSET = 14
_CMD_BLOOM_LENGTH = 15

_I64_MAX = 2**63 - 1
_I32_MAX = 2**31 - 1
# Longest varints: 3 bytes hold 16 bits, 5 hold 32, 10 hold 64.
_VARINT_I16 = 3
_VARINT_I32 = 5
_VARINT_I64 = 10


@dataclass(frozen=True, slots=True)
class _Field:
    """One field of a struct as found on the wire: its id, type and byte span."""

    fid: int
    ctype: int
    start: int  # first byte of the field header
    value: int  # first byte of the value (== end for booleans, held in the header)
    end: int  # one past the value


class _Cursor:
    """A read position in the footer bytes; every read is bounds-checked."""

    __slots__ = ("buf", "end", "path", "pos")

    def __init__(self, buf: bytes, path: str | None) -> None:
        self.buf = buf
        self.pos = 0
        self.end = len(buf)
        self.path = path

    def fail(self, message: str) -> NoReturn:
        raise ParquetFormatError(
            f"malformed footer (FileMetaData): {message} at byte {self.pos}", path=self.path
        )

    def byte(self) -> int:
        if self.pos >= self.end:
            self.fail("it ends in the middle of a value (truncated?)")
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def skip(self, n: int) -> None:
        if n > self.end - self.pos:
            self.fail(f"a value needs {n} bytes but only {self.end - self.pos} remain")
        self.pos += n

    def varint(self, max_bytes: int) -> int:
        """An unsigned LEB128 varint of at most ``max_bytes`` bytes."""
        result = 0
        shift = 0
        for _ in range(max_bytes):
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
        self.fail(f"a varint is longer than {max_bytes} bytes")

    def count(self, what: str, min_size: int) -> int:
        """A length or element count; each unit takes at least ``min_size`` bytes."""
        n = self.varint(_VARINT_I32)
        if n > _I32_MAX or n * min_size > self.end - self.pos:
            self.fail(f"{what} of {n} does not fit in the {self.end - self.pos} bytes left")
        return n


def _zigzag_decode(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def _fields(cur: _Cursor, depth: int) -> Iterator[tuple[int, int, int]]:
    """Walk one struct's field headers: yields ``(field id, type, header start)``.

    The caller consumes each value before asking for the next header; the walk
    ends after the STOP byte.
    """
    if depth > MAX_DEPTH:
        cur.fail(f"structures are nested deeper than {MAX_DEPTH} levels")
    last = 0
    while True:
        start = cur.pos
        b = cur.byte()
        ctype = b & 0x0F
        if ctype == _STOP:
            return
        if ctype > _UUID:
            cur.fail(f"unknown field type {ctype}")
        delta = b >> 4
        fid = last + delta if delta else _zigzag_decode(cur.varint(_VARINT_I16))
        if not -(2**15) <= fid < 2**15:
            cur.fail(f"field id {fid} does not fit in 16 bits")
        last = fid
        yield fid, ctype, start


def _skip_value(cur: _Cursor, ctype: int, depth: int) -> None:
    """Move past one value of compact type ``ctype`` (a field's value or an element)."""
    if ctype in (_TRUE, _FALSE):
        return  # a boolean field's value is its header's type
    if ctype == _BYTE:
        cur.skip(1)
    elif ctype in (_I16, _I32, _I64):
        cur.varint(_VARINT_I16 if ctype == _I16 else _VARINT_I32 if ctype == _I32 else _VARINT_I64)
    elif ctype == _DOUBLE:
        cur.skip(8)
    elif ctype == _UUID:
        cur.skip(16)
    elif ctype == _BINARY:
        cur.skip(cur.count("a string length", 1))
    elif ctype in (_LIST, _SET):
        etype, size = _list_header(cur, depth)
        for _ in range(size):
            _skip_element(cur, etype, depth + 1)
    elif ctype == _MAP:
        if depth > MAX_DEPTH:
            cur.fail(f"structures are nested deeper than {MAX_DEPTH} levels")
        size = cur.count("a map size", 2)
        if size:
            types = cur.byte()
            ktype, vtype = types >> 4, types & 0x0F
            for _ in range(size):
                _skip_element(cur, ktype, depth + 1)
                _skip_element(cur, vtype, depth + 1)
    elif ctype == _STRUCT:
        for _fid, ftype, _start in _fields(cur, depth):
            _skip_value(cur, ftype, depth + 1)
    else:
        cur.fail(f"unknown value type {ctype}")


def _skip_element(cur: _Cursor, etype: int, depth: int) -> None:
    """Move past one list, set or map element (booleans take one byte there)."""
    if etype in (_TRUE, _FALSE):
        cur.skip(1)
    elif _BYTE <= etype <= _UUID:
        _skip_value(cur, etype, depth)
    else:
        cur.fail(f"unknown element type {etype}")


def _list_header(cur: _Cursor, depth: int) -> tuple[int, int]:
    """A list or set header: ``(element type, size)``; every element takes >= 1 byte."""
    if depth > MAX_DEPTH:
        cur.fail(f"structures are nested deeper than {MAX_DEPTH} levels")
    b = cur.byte()
    etype = b & 0x0F
    size = b >> 4
    if size == 15:
        size = cur.count("a list size", 1)
    elif size > cur.end - cur.pos:
        cur.fail(f"a list size of {size} does not fit in the {cur.end - cur.pos} bytes left")
    if size and not _TRUE <= etype <= _UUID:
        cur.fail(f"unknown list element type {etype}")
    return etype, size


def _struct_list(cur: _Cursor, ctype: int, depth: int, what: str) -> int:
    """The size of a list of structs at a field of type ``ctype`` (the path we descend)."""
    if ctype != _LIST:
        cur.fail(f"{what} is not a list (type {ctype})")
    etype, size = _list_header(cur, depth)
    if size and etype != _STRUCT:
        cur.fail(f"{what} holds elements of type {etype}, not structs")
    return size


# ---- encoding the changed struct ----------------------------------------------------


def _varint_bytes(n: int) -> bytes:
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _zigzag(n: int, bits: int) -> int:
    return ((n << 1) ^ (n >> (bits - 1))) & ((1 << bits) - 1)


def _header(fid: int, previous: int, ctype: int) -> bytes:
    """A field header as thrift writes it: short form when the delta is 1..15."""
    delta = fid - previous
    if 0 < delta <= 15:
        return bytes([(delta << 4) | ctype])
    return bytes([ctype]) + _varint_bytes(_zigzag(fid, 16))


def _column_meta_body(
    buf: bytes, fields: list[_Field], offset: int, length: int
) -> list[bytes | memoryview]:
    """ColumnMetaData's fields with 14/15 set: other fields verbatim, headers fixed up."""
    view = memoryview(buf)
    kept = [
        (f, prev)
        for f, prev in zip(fields, [0, *(g.fid for g in fields)], strict=False)
        if f.fid not in (_CMD_BLOOM_OFFSET, _CMD_BLOOM_LENGTH)
    ]
    at = next((i for i, (f, _) in enumerate(kept) if f.fid > _CMD_BLOOM_LENGTH), len(kept))
    out: list[bytes | memoryview] = []
    previous = 0
    for i in range(len(kept) + 1):
        if i == at:
            out.append(_header(_CMD_BLOOM_OFFSET, previous, _I64))
            out.append(_varint_bytes(_zigzag(offset, 64)))
            out.append(_header(_CMD_BLOOM_LENGTH, _CMD_BLOOM_OFFSET, _I32))
            out.append(_varint_bytes(_zigzag(length, 32)))
            previous = _CMD_BLOOM_LENGTH
        if i == len(kept):
            break
        f, original_previous = kept[i]
        if original_previous == previous:
            out.append(view[f.start : f.end])  # the header still encodes the right id
        else:
            out.append(_header(f.fid, previous, f.ctype))
            out.append(view[f.value : f.end])
        previous = f.fid
    out.append(b"\x00")  # STOP
    return out


# ---- the walk down to ColumnMetaData ------------------------------------------------


def _check_locations(
    locations: Mapping[tuple[int, int], tuple[int, int]],
) -> dict[tuple[int, int], tuple[int, int]]:
    checked: dict[tuple[int, int], tuple[int, int]] = {}
    for key, value in locations.items():
        try:
            rg, column = key
            offset, length = value
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                f"locations map (row group, column index) to (offset, length), got {key!r}: "
                f"{value!r}"
            ) from None
        for name, n, low, high in (
            ("row group", rg, 0, _I32_MAX),
            ("column index", column, 0, _I32_MAX),
            ("bloom_filter_offset", offset, 0, _I64_MAX),
            ("bloom_filter_length", length, 1, _I32_MAX),
        ):
            if isinstance(n, bool) or not isinstance(n, int) or not low <= n <= high:
                raise InvalidArgumentError(f"{name} must be an int in [{low}, {high}], got {n!r}")
        checked[(rg, column)] = (offset, length)
    return checked


# Long because: one walk over the encoded footer, copying every byte it does not change; the
# levels (file, row group, chunk, metadata) share the output buffer and the running offsets.
def splice_bloom_filter_locations(
    metadata: bytes | bytearray | memoryview,
    locations: Mapping[tuple[int, int], tuple[int, int]],
    *,
    path: str | None = None,
) -> bytes:
    """Re-encode a FileMetaData with Bloom filter locations set; every other byte kept.

    Parameters
    ----------
    metadata:
        The thrift compact-protocol FileMetaData, exactly as stored in the file
        (bytes after its final STOP byte are kept as they are).
    locations:
        ``{(row group, column index): (bloom_filter_offset, bloom_filter_length)}``;
        the column index is the chunk's position in ``RowGroup.columns``. Fields 14
        and 15 of each named chunk's ColumnMetaData are set, replacing any present.
        An empty mapping validates the footer's structure and returns it unchanged.
    path:
        The file's name, for error messages.

    Returns
    -------
    bytes
        The new FileMetaData. Everything but the named ColumnMetaData structs is
        byte-for-byte identical; inside those, fields 14 and 15 are written (before
        the first field with a higher id) and a field's header is re-emitted only
        where the id before it changed. Every value is copied verbatim.

    Raises
    ------
    ParquetFormatError
        The bytes are not a well-formed compact-protocol FileMetaData (truncated,
        unknown types, over-long varints, sizes beyond the bytes left, nesting
        deeper than :data:`MAX_DEPTH`), or a named chunk has no ``meta_data``.
    EncryptedFileError
        The footer belongs to an encrypted file (plaintext-footer mode).
    InvalidArgumentError
        A location is malformed or names a row group or column the footer lacks.
    """
    wanted = _check_locations(locations)
    buf = bytes(metadata)
    cur = _Cursor(buf, path)
    pieces: list[bytes | memoryview] = []
    copied = 0  # bytes of ``buf`` before this offset are already in ``pieces``
    found: set[tuple[int, int]] = set()
    chunks_per_group: list[int] = []
    seen_row_groups = False

    for fid, ctype, _start in _fields(cur, 0):
        if fid in (_FMD_ENCRYPTION_ALGORITHM, _FMD_FOOTER_SIGNING_KEY):
            raise EncryptedFileError(
                "encrypted files are not supported (the plaintext footer carries encryption "
                "metadata; changing it would break its signature)",
                path=path,
            )
        if fid != _FMD_ROW_GROUPS:
            _skip_value(cur, ctype, 1)
            continue
        if seen_row_groups:
            cur.fail("FileMetaData.row_groups appears twice")
        seen_row_groups = True
        for rg in range(_struct_list(cur, ctype, 1, "FileMetaData.row_groups")):
            seen_columns = False
            for gfid, gtype, _ in _fields(cur, 2):
                if gfid != _RG_COLUMNS:
                    _skip_value(cur, gtype, 3)
                    continue
                if seen_columns:
                    cur.fail(f"RowGroup.columns appears twice in row group {rg}")
                seen_columns = True
                size = _struct_list(cur, gtype, 3, f"RowGroup.columns of row group {rg}")
                chunks_per_group.append(size)
                for column in range(size):
                    target = wanted.get((rg, column))
                    seen_meta = False
                    for cfid, ctype2, _ in _fields(cur, 4):
                        if cfid in (_CC_CRYPTO_METADATA, _CC_ENCRYPTED_METADATA):
                            raise EncryptedFileError(
                                "encrypted files are not supported (column chunk "
                                f"{column} of row group {rg} is encrypted)",
                                path=path,
                            )
                        if cfid != _CC_META_DATA:
                            _skip_value(cur, ctype2, 5)
                            continue
                        if seen_meta:
                            cur.fail(f"ColumnChunk.meta_data appears twice ({rg}, {column})")
                        seen_meta = True
                        if ctype2 != _STRUCT:
                            cur.fail(f"ColumnChunk.meta_data is not a struct ({rg}, {column})")
                        if target is None:
                            _skip_value(cur, _STRUCT, 5)
                            continue
                        body_start = cur.pos
                        fields = []
                        for mfid, mtype, mstart in _fields(cur, 5):
                            value = cur.pos
                            _skip_value(cur, mtype, 6)
                            fields.append(_Field(mfid, mtype, mstart, value, cur.pos))
                        pieces.append(memoryview(buf)[copied:body_start])
                        pieces.extend(_column_meta_body(buf, fields, *target))
                        copied = cur.pos
                        found.add((rg, column))
                    if target is not None and not seen_meta:
                        raise ParquetFormatError(
                            "column chunk has no meta_data to record a Bloom filter in",
                            path=path,
                            row_group=rg,
                            column=f"#{column}",
                        )
            if not seen_columns:
                chunks_per_group.append(0)
    missing = sorted(set(wanted) - found)
    if missing:
        rg, column = missing[0]
        if rg >= len(chunks_per_group):
            raise InvalidArgumentError(
                f"row group {rg} does not exist: the footer has {len(chunks_per_group)}",
                path=path,
            )
        raise InvalidArgumentError(
            f"column index {column} does not exist: row group {rg} has "
            f"{chunks_per_group[rg]} column chunks",
            path=path,
        )
    if not pieces:
        return buf
    pieces.append(memoryview(buf)[copied:])
    return b"".join(pieces)
