"""Puffin files: what we write is what the spec lays out (pyiceberg's reader agrees), and the
footer reader checks every size before it trusts it."""

from __future__ import annotations

import struct

import pytest

from pybloom_async.errors import ParquetFormatError
from pybloom_async.lake.puffin import (
    MAGIC,
    PuffinBlob,
    decode_footer,
    encode_puffin,
    footer_bounds,
)


def _blobs() -> list[PuffinBlob]:
    return [
        PuffinBlob("a-type", (1, 2), 7, 3, properties={"k": "v"}, payload=b"first blob"),
        PuffinBlob("b-type", (), 7, 3, compression_codec="zstd", payload=b"\x00" * 5),
    ]


def test_round_trip() -> None:
    data, footer_size, placed = encode_puffin(_blobs(), {"created-by": "me"})
    assert data[:4] == MAGIC and data[-4:] == MAGIC
    assert [(b.offset, b.length) for b in placed] == [(4, 10), (14, 5)]
    start, end = footer_bounds(len(data), footer_size, "f")
    assert (start, end) == (19, len(data))
    blobs, properties = decode_footer(data[start:], len(data), "f")
    assert properties == {"created-by": "me"}
    assert blobs == placed
    assert [data[b.offset : b.offset + b.length] for b in blobs] == [b"first blob", b"\x00" * 5]


def test_pyicebergs_reader_reads_it() -> None:
    pytest.importorskip("pyiceberg")
    from pyiceberg.table.puffin import PuffinFile

    data, _, _ = encode_puffin(_blobs()[:1], {"created-by": "me"})
    puffin = PuffinFile(data)
    (blob,) = puffin.footer.blobs
    assert (blob.type, blob.fields, blob.snapshot_id, blob.sequence_number) == (
        "a-type",
        [1, 2],
        7,
        3,
    )
    assert puffin.get_blob_payload(blob) == b"first blob"
    assert puffin.footer.properties == {"created-by": "me"}


def test_damage_is_refused_by_name() -> None:
    data, footer_size, _ = encode_puffin(_blobs(), {})
    footer = data[-footer_size:]
    for bad, match in [
        (b"XXXX" + footer[4:], "bad magic"),
        (footer[:-4] + b"XXXX", "bad magic"),
        (footer[:-12] + struct.pack("<i", 3) + footer[-8:], "payload size"),
        (footer[:-8] + b"\x01\x00\x00\x00" + footer[-4:], "compressed"),
        (footer.replace(b'"offset":4,', b'"offset":0,'), "outside"),
        (footer.replace(b'"length":5', b'"length":9'), "outside"),
        (footer.replace(b'"blobs"', b'"blobz"'), "malformed"),
    ]:
        with pytest.raises(ParquetFormatError, match=match):
            decode_footer(bad, len(data) - len(footer) + len(bad), "f.stats")
    for size, match in [(3, "does not fit"), (len(data), "does not fit")]:
        with pytest.raises(ParquetFormatError, match=match):
            footer_bounds(len(data), size, "f.stats")
