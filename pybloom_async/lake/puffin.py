"""Puffin files (Iceberg's container for indexes and statistics): written and their footer read.

The layout (the Puffin spec, https://iceberg.apache.org/puffin-spec/)::

    Magic  Blob_1 ... Blob_n  Footer
    Footer = Magic FooterPayload FooterPayloadSize Flags Magic

``Magic`` is ``PFA1``; ``FooterPayload`` the UTF-8 JSON ``{"blobs": [...], "properties":
{...}}`` (uncompressed here: flag bit 0 clear), ``FooterPayloadSize`` its length (4 bytes,
little-endian), ``Flags`` 4 bytes. Each blob's metadata gives its ``type``, ``fields``
(field ids), ``snapshot-id``, ``sequence-number``, ``offset``, ``length``, optional
``compression-codec`` and ``properties``.

pyiceberg 0.12 reads Puffin files (deletion vectors) but writes none, so the lake index
writes its own here; the footer reader is bounded (sizes checked against the file before
anything is allocated or parsed) and reads what the spec allows, refusing a compressed
footer by name.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ParquetFormatError

MAGIC = b"PFA1"
_TAIL = struct.Struct("<iI4s")  # FooterPayloadSize, Flags, Magic
#: Footers larger than this are refused before they are read (64 MiB).
MAX_FOOTER_BYTES = 64 * 1024 * 1024
_COMPRESSED = 1  # flag byte 0, bit 0: the footer payload is compressed


@dataclass(frozen=True)
class PuffinBlob:
    """One blob: its metadata as the footer lists it (``offset`` and ``length`` relative to
    the file), and, when written, its bytes (already compressed if ``compression_codec``)."""

    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    offset: int = 0
    length: int = 0
    compression_codec: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    payload: bytes = b""

    def metadata(self) -> dict[str, Any]:
        """The blob's entry in the footer's JSON."""
        out: dict[str, Any] = {
            "type": self.type,
            "fields": list(self.fields),
            "snapshot-id": self.snapshot_id,
            "sequence-number": self.sequence_number,
            "offset": self.offset,
            "length": self.length,
        }
        if self.compression_codec is not None:
            out["compression-codec"] = self.compression_codec
        if self.properties:
            out["properties"] = dict(self.properties)
        return out


def encode_puffin(
    blobs: Sequence[PuffinBlob], properties: Mapping[str, str]
) -> tuple[bytes, int, list[PuffinBlob]]:
    """A Puffin file of ``blobs`` (their payloads, in order): ``(bytes, footer size, the
    blobs with their offsets and lengths)``."""
    parts = [MAGIC]
    at = len(MAGIC)
    placed = []
    for blob in blobs:
        placed.append(
            PuffinBlob(
                blob.type, tuple(blob.fields), blob.snapshot_id, blob.sequence_number, at,
                len(blob.payload), blob.compression_codec, dict(blob.properties),
            )
        )  # fmt: skip
        parts.append(blob.payload)
        at += len(blob.payload)
    doc = {"blobs": [b.metadata() for b in placed], "properties": dict(properties)}
    payload = json.dumps(doc, separators=(",", ":")).encode()
    footer = MAGIC + payload + _TAIL.pack(len(payload), 0, MAGIC)
    return b"".join(parts) + footer, len(footer), placed


def footer_bounds(file_size: int, footer_size: int, path: str) -> tuple[int, int]:
    """``[start, end)`` of the footer, as the table metadata records its size; checked.

    Raises
    ------
    ParquetFormatError
        The sizes do not fit a Puffin file.
    """
    smallest = len(MAGIC) + _TAIL.size
    if not smallest <= footer_size <= min(file_size - len(MAGIC), MAX_FOOTER_BYTES + smallest):
        raise ParquetFormatError(
            f"a Puffin footer of {footer_size} bytes does not fit a file of {file_size}",
            path=path,
        )
    return file_size - footer_size, file_size


def decode_footer(
    footer: bytes, file_size: int, path: str
) -> tuple[list[PuffinBlob], dict[str, str]]:
    """The blobs (metadata only) and properties of a Puffin footer, every field checked.

    ``footer`` is the whole footer (from its first magic to the file's end).

    Raises
    ------
    ParquetFormatError
        Bad magic, sizes, flags (a compressed footer), JSON, or a blob outside the file.
    """
    if len(footer) < len(MAGIC) + _TAIL.size or footer[: len(MAGIC)] != MAGIC:
        raise ParquetFormatError("not a Puffin footer (bad magic)", path=path)
    size, flags, magic = _TAIL.unpack(footer[-_TAIL.size :])
    if magic != MAGIC:
        raise ParquetFormatError("not a Puffin file (bad magic)", path=path)
    if size != len(footer) - len(MAGIC) - _TAIL.size:
        raise ParquetFormatError(f"the Puffin footer payload size {size} does not fit", path=path)
    if flags & _COMPRESSED:
        raise ParquetFormatError(
            "the Puffin footer is compressed (LZ4), which is not read here", path=path
        )
    try:
        doc = json.loads(footer[len(MAGIC) : len(MAGIC) + size])
        blobs = [_blob(b, file_size - len(footer)) for b in doc["blobs"]]
        properties = {str(k): str(v) for k, v in (doc.get("properties") or {}).items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ParquetFormatError(f"the Puffin footer is malformed: {exc}", path=path) from None
    return blobs, properties


def _int(value: Any) -> int:
    if type(value) is not int:
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def _blob(doc: Any, data_end: int) -> PuffinBlob:
    offset, length = _int(doc["offset"]), _int(doc["length"])
    if not len(MAGIC) <= offset <= offset + length <= data_end or length < 0:
        raise ValueError(f"blob [{offset}, {offset + length}) lies outside the blobs")
    codec = doc.get("compression-codec")
    if codec is not None and type(codec) is not str:
        raise ValueError(f"bad compression-codec {codec!r}")
    properties = doc.get("properties") or {}
    if not isinstance(properties, dict):
        raise ValueError("properties is not an object")
    return PuffinBlob(
        str(doc["type"]), tuple(_int(f) for f in doc["fields"]), _int(doc["snapshot-id"]),
        _int(doc["sequence-number"]), offset, length, codec,
        {str(k): str(v) for k, v in properties.items()},
    )  # fmt: skip
