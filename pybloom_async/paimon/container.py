"""The Paimon file index container: parse, write and read it; its Bloom filter settings."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import (
    PaimonIndexError,
)
from .filter import DEFAULT_FPP, DEFAULT_ITEMS, BloomFilter64
from .types import INT32_MAX, U64_MASK

#: ``FileIndexFormat`` magic number, the first 8 bytes (big-endian) of a container.
FILE_INDEX_MAGIC = 1493475289347502
#: The only container version Paimon has defined.
FILE_INDEX_VERSION = 1
#: Index-type name of the Bloom filter in a container header.
BLOOM_FILTER_INDEX_TYPE = "bloom-filter"


# ---- the file-index container ---------------------------------------------------------------


@dataclass(frozen=True)
class PaimonIndexEntry:
    """One index of one column in a container header.

    ``start`` is the absolute offset of the payload in the container, or -1 for
    an empty entry (then ``length`` is 0).
    """

    index_type: str
    start: int
    length: int

    @property
    def empty(self) -> bool:
        """True for Paimon's empty marker (start -1, no bytes)."""
        return self.start == -1


@dataclass(frozen=True)
class PaimonIndexColumn:
    """A column of a container header and its index entries, in header order."""

    name: str
    entries: tuple[PaimonIndexEntry, ...]


@dataclass(frozen=True)
class PaimonFileIndex:
    """A parsed Paimon file-index container (``FileIndexFormat`` version 1).

    ``data`` is the whole container; every entry has been checked to lie
    inside it.
    """

    version: int
    head_length: int
    columns: tuple[PaimonIndexColumn, ...]
    redundant_length: int
    data: bytes

    @property
    def total_length(self) -> int:
        """Size of the container in bytes."""
        return len(self.data)

    def payload(self, column: str, index_type: str = BLOOM_FILTER_INDEX_TYPE) -> bytes | None:
        """The payload of one index: None when absent, ``b""`` for an empty entry."""
        for col in self.columns:
            if col.name != column:
                continue
            for entry in col.entries:
                if entry.index_type == index_type:
                    if entry.empty:
                        return b""
                    return self.data[entry.start : entry.start + entry.length]
        return None

    def describe(self) -> list[dict[str, Any]]:
        """One row per index entry, for display (the CLI's ``inspect``).

        Each row has ``column``, ``index_type``, ``start``, ``length`` and
        ``empty``; a bloom-filter row also has ``num_bits``,
        ``num_hash_functions`` and ``bits_set``, or ``error`` when its payload
        is damaged.
        """
        rows: list[dict[str, Any]] = []
        for col in self.columns:
            for entry in col.entries:
                row: dict[str, Any] = {
                    "column": col.name,
                    "index_type": entry.index_type,
                    "start": entry.start,
                    "length": entry.length,
                    "empty": entry.empty,
                }
                if entry.index_type == BLOOM_FILTER_INDEX_TYPE and not entry.empty:
                    try:
                        bloom = BloomFilter64.from_bytes(
                            self.data[entry.start : entry.start + entry.length]
                        )
                    except PaimonIndexError as exc:
                        row["error"] = str(exc)
                    else:
                        row["num_bits"] = bloom.num_bits
                        row["num_hash_functions"] = bloom.num_hash_functions
                        row["bits_set"] = bloom.bits_set
                rows.append(row)
        return rows

    def to_dict(self) -> dict[str, dict[str, bytes]]:
        """``{column: {index_type: payload}}`` with ``b""`` for empty entries."""
        result: dict[str, dict[str, bytes]] = {}
        for col in self.columns:
            per = result.setdefault(col.name, {})
            for entry in col.entries:
                per[entry.index_type] = (
                    b"" if entry.empty else self.data[entry.start : entry.start + entry.length]
                )
        return result


def _encode_modified_utf8(text: str) -> bytes:
    """Java's ``DataOutput.writeUTF`` body: modified UTF-8 of the UTF-16 code units.

    U+0000 becomes C0 80 and characters above U+FFFF become two 3-byte
    surrogates, as Java strings hold them.
    """
    out = bytearray()
    for ch in text:
        cp = ord(ch)
        units = (
            [cp]
            if cp <= 0xFFFF
            else [0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)]
        )
        for u in units:
            if 0 < u < 0x80:
                out.append(u)
            elif u < 0x800:
                out += bytes((0xC0 | (u >> 6), 0x80 | (u & 0x3F)))
            else:
                out += bytes((0xE0 | (u >> 12), 0x80 | ((u >> 6) & 0x3F), 0x80 | (u & 0x3F)))
    return bytes(out)


def _decode_modified_utf8(raw: bytes) -> str:
    """Inverse of :func:`_encode_modified_utf8`, as ``DataInput.readUTF`` accepts it.

    Surrogate pairs are joined into one character; a lone surrogate stays a
    lone surrogate (Java strings may hold one).

    Raises
    ------
    PaimonIndexError
        A byte sequence readUTF rejects (bad lead byte, missing continuation).
    """
    if raw.isascii() and 0 not in raw:
        return raw.decode("ascii")
    units: list[int] = []
    i, n = 0, len(raw)
    while i < n:
        b = raw[i]
        if b < 0x80:
            units.append(b)
            i += 1
        elif b >> 5 == 0b110 and i + 1 < n and raw[i + 1] >> 6 == 0b10:
            units.append(((b & 0x1F) << 6) | (raw[i + 1] & 0x3F))
            i += 2
        elif b >> 4 == 0b1110 and i + 2 < n and raw[i + 1] >> 6 == 0b10 and raw[i + 2] >> 6 == 0b10:
            units.append(((b & 0x0F) << 12) | ((raw[i + 1] & 0x3F) << 6) | (raw[i + 2] & 0x3F))
            i += 3
        else:
            raise PaimonIndexError(f"malformed modified UTF-8 name at byte {i}: {raw.hex()}")
    chars: list[str] = []
    j = 0
    while j < len(units):
        u = units[j]
        if 0xD800 <= u < 0xDC00 and j + 1 < len(units) and 0xDC00 <= units[j + 1] < 0xE000:
            chars.append(chr(0x10000 + ((u - 0xD800) << 10) + (units[j + 1] - 0xDC00)))
            j += 2
        else:
            chars.append(chr(u))
            j += 1
    return "".join(chars)


class _Cursor:
    """Bounds-checked big-endian reads over the container bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int, what: str) -> bytes:
        if n > len(self.data) - self.pos:
            raise PaimonIndexError(
                f"Paimon file index truncated: {what} needs {n} bytes at offset {self.pos}, "
                f"container has {len(self.data)}"
            )
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def i32(self, what: str) -> int:
        return int(struct.unpack(">i", self.take(4, what))[0])

    def i64(self, what: str) -> int:
        return int(struct.unpack(">q", self.take(8, what))[0])

    def utf(self, what: str) -> str:
        length = int(struct.unpack(">H", self.take(2, what))[0])
        return _decode_modified_utf8(self.take(length, what))

    def remaining(self) -> int:
        return len(self.data) - self.pos


# Long because: one pass over the container in file order (head, entry table, bodies); each check
# guards the read that follows it, and the order is the format's.
def parse_paimon_file_index(data: bytes | bytearray | memoryview) -> PaimonFileIndex:
    """Parse a Paimon file-index container and validate every offset against its size.

    Unknown index types are kept as opaque entries (pruning ignores them).

    Parameters
    ----------
    data:
        The whole container: a ``<data-file>.index`` file, or the
        ``_EMBEDDED_FILE_INDEX`` bytes of a manifest entry.

    Raises
    ------
    PaimonIndexError
        Wrong magic, a version other than 1, a truncated header, negative
        counts, an entry whose bytes lie outside the container (or inside the
        header), a negative length other than the empty marker (start -1,
        length 0), a zero-length bloom-filter entry, a duplicate entry, or a
        malformed column name.
    """
    buf = bytes(data)
    cur = _Cursor(buf)
    magic = cur.i64("magic")
    if magic != FILE_INDEX_MAGIC:
        raise PaimonIndexError(
            f"not a Paimon file index: magic {magic & U64_MASK:#018x}, "
            f"expected {FILE_INDEX_MAGIC:#018x}"
        )
    version = cur.i32("version")
    if version != FILE_INDEX_VERSION:
        raise PaimonIndexError(f"unsupported Paimon file-index version {version} (only 1)")
    head_length = cur.i32("head length")
    if not 0 < head_length <= len(buf):
        raise PaimonIndexError(
            f"Paimon file index head length {head_length} outside the container ({len(buf)} bytes)"
        )
    column_count = cur.i32("column count")
    # A column needs at least a 2-byte name length and a 4-byte index count.
    if column_count < 0 or column_count > cur.remaining() // 6:
        raise PaimonIndexError(f"Paimon file index column count {column_count} is impossible")
    raw_columns: list[tuple[str, list[tuple[str, int, int]]]] = []
    for _ in range(column_count):
        name = cur.utf("column name")
        index_count = cur.i32("index count")
        # An entry needs at least a 2-byte type length, start and length.
        if index_count < 0 or index_count > cur.remaining() // 10:
            raise PaimonIndexError(
                f"Paimon file index: column {name!r} has impossible index count {index_count}"
            )
        entries = []
        for _ in range(index_count):
            index_type = cur.utf("index type")
            start = cur.i32("index start")
            length = cur.i32("index length")
            entries.append((index_type, start, length))
        raw_columns.append((name, entries))
    redundant_length = cur.i32("redundant length")
    if redundant_length < 0:
        raise PaimonIndexError(f"Paimon file index redundant length {redundant_length} < 0")
    cur.take(redundant_length, "redundant bytes")
    if cur.pos > head_length:
        raise PaimonIndexError(
            f"Paimon file index header ends at {cur.pos}, past its head length {head_length}"
        )
    columns = []
    seen: set[tuple[str, str]] = set()
    for name, entries in raw_columns:
        checked = []
        for index_type, start, length in entries:
            where = f"column {name!r}, index {index_type!r}"
            if (name, index_type) in seen:
                raise PaimonIndexError(f"Paimon file index lists {where} twice")
            seen.add((name, index_type))
            if start == -1 and length == 0:
                checked.append(PaimonIndexEntry(index_type, -1, 0))
                continue
            if length < 0:
                raise PaimonIndexError(f"Paimon file index: {where} has negative length {length}")
            if start < head_length or length > len(buf) - start:
                raise PaimonIndexError(
                    f"Paimon file index: {where} spans [{start}, {start + length}) outside "
                    f"the body [{head_length}, {len(buf)})"
                )
            if length == 0 and index_type == BLOOM_FILTER_INDEX_TYPE:
                # Paimon marks an empty bloom filter with start -1; a zero-length
                # payload elsewhere is damage, not an empty entry.
                raise PaimonIndexError(f"Paimon file index: {where} has no bytes")
            checked.append(PaimonIndexEntry(index_type, start, length))
        columns.append(PaimonIndexColumn(name, tuple(checked)))
    return PaimonFileIndex(version, head_length, tuple(columns), redundant_length, buf)


def is_paimon_file_index(data: bytes | bytearray | memoryview) -> bool:
    """True when ``data`` starts with the file-index magic (a cheap sniff, not a validation)."""
    head = bytes(memoryview(data)[:8])
    return len(head) == 8 and struct.unpack(">q", head)[0] == FILE_INDEX_MAGIC


def read_paimon_file_index(data: bytes | bytearray | memoryview) -> dict[str, dict[str, bytes]]:
    """Read a Paimon file-index container into ``{column: {index_type: payload}}``.

    Empty entries map to ``b""``; a ``"bloom-filter"`` payload is what
    :meth:`BloomFilter64.from_bytes` reads. Column order is the header's.

    Raises
    ------
    PaimonIndexError
        As :func:`parse_paimon_file_index`.
    """
    return parse_paimon_file_index(data).to_dict()


def write_paimon_file_index(indexes: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
    """Write a Paimon file-index container (version 1) that Paimon's reader accepts.

    Parameters
    ----------
    indexes:
        ``{column: {index_type: payload}}``; the header and the body follow the
        mapping's order. A payload of ``None`` or ``b""`` is written as an empty
        entry (start -1, length 0). Names may be any Unicode (written as Java's
        modified UTF-8).

    Raises
    ------
    PaimonIndexError
        A name longer than 65535 bytes in modified UTF-8, or a container
        larger than Java's int offsets allow.
    """

    def utf(text: str, what: str) -> bytes:
        if not isinstance(text, str):
            raise PaimonIndexError(f"{what} must be str, not {type(text).__name__}")
        raw = _encode_modified_utf8(text)
        if len(raw) > 0xFFFF:
            raise PaimonIndexError(f"{what} is {len(raw)} bytes in modified UTF-8 (max 65535)")
        return struct.pack(">H", len(raw)) + raw

    encoded: list[tuple[bytes, list[tuple[bytes, bytes | None]]]] = []
    head_length = 8 + 4 + 4 + 4 + 4  # magic, version, head length, column count, redundant
    for column, per in indexes.items():
        name = utf(column, f"column name {column!r}")
        head_length += len(name) + 4
        entries = []
        for index_type, payload in per.items():
            type_raw = utf(index_type, f"index type {index_type!r}")
            head_length += len(type_raw) + 8
            blob = bytes(payload) if payload else None
            entries.append((type_raw, blob))
        encoded.append((name, entries))
    total = head_length + sum(len(b) for _, es in encoded for _, b in es if b)
    if total > INT32_MAX:
        raise PaimonIndexError(f"Paimon file index of {total} bytes exceeds Java int offsets")
    head = bytearray(
        struct.pack(">qiii", FILE_INDEX_MAGIC, FILE_INDEX_VERSION, head_length, len(encoded))
    )
    body = bytearray()
    for name, entries in encoded:
        head += name + struct.pack(">i", len(entries))
        for type_raw, payload in entries:
            if payload is None:
                head += type_raw + struct.pack(">ii", -1, 0)
            else:
                head += type_raw + struct.pack(">ii", head_length + len(body), len(payload))
                body += payload
    head += struct.pack(">i", 0)  # redundant length: v1 carries no extra bytes
    assert len(head) == head_length
    return bytes(head + body)


def paimon_index_file_name(data_file_name: str) -> str:
    """Name of the container Paimon writes next to a data file: ``<name>.index``."""
    return f"{data_file_name}.index"


def paimon_bloom_filter_settings(table_options: Mapping[str, str]) -> dict[str, tuple[int, float]]:
    """The bloom-filter columns of a Paimon table and each one's ``(items, fpp)``.

    Reads ``file-index.bloom-filter.columns`` and the per-column
    ``file-index.bloom-filter.<column>.items`` / ``.fpp`` keys with Paimon's
    defaults (1,000,000 and 0.1). As in Paimon, a per-column key counts only
    when what follows ``file-index.`` splits on dots into exactly
    ``bloom-filter``, the column and the option, so columns with a dot in
    their name always get the defaults.

    Raises
    ------
    PaimonIndexError
        An items value that is not an int or an fpp that is not a number.
    """
    listed = table_options.get(f"file-index.{BLOOM_FILTER_INDEX_TYPE}.columns", "")
    columns = [c.strip() for c in listed.split(",") if c.strip()]
    per_column: dict[str, dict[str, str]] = {}
    for key, value in table_options.items():
        if not key.startswith("file-index."):
            continue
        parts = key[len("file-index.") :].split(".")
        while parts and parts[-1] == "":  # Java's split drops trailing empty strings
            parts.pop()
        if len(parts) == 3 and parts[0] == BLOOM_FILTER_INDEX_TYPE:
            per_column.setdefault(parts[1], {})[parts[2]] = value
    settings: dict[str, tuple[int, float]] = {}
    for column in columns:
        opts = per_column.get(column, {})
        try:
            items = int(opts.get("items", DEFAULT_ITEMS))
            fpp = float(opts.get("fpp", DEFAULT_FPP))
        except ValueError as exc:
            raise PaimonIndexError(
                f"bad bloom-filter option for column {column!r}: {exc}"
            ) from None
        settings[column] = (items, fpp)
    return settings
