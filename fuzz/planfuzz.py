"""The read-planner fuzz target: input format, decoder and the properties checked.

An input describes one file and the filters a footer claims for it::

    u8  config     which PlanConfig (small ones whose limits the values reach, and the default)
    u32 size       the file size (reduced modulo the config's file-size cap)
    u32 footer     the FileMetaData length (reduced to fit the file)
    u32 tail       how far before the footer the reader's suffix read starts
    then records of 23 bytes, one per wanted filter:
    i64 offset, i64 length, u16 header_len, u8 flags, u32 num_bytes

``flags`` bit 0: offset absent; bit 1: length absent; bit 2: offset used raw (else reduced
modulo footer_start + 64, so that most offsets land near real filters); bit 3: length raw
(else reduced modulo the serialized-filter limit + 64); bits 4-5: what the header decoder
reported (0, 3: a header; 1: a decode failure; 2: a header consistent with the length);
bit 6: num_bytes raw (else a power of two ``32 << (num_bytes % 24)``).

:func:`encode` writes this format, so seeds are built from real files' footers.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Sequence
from typing import Any

HEAD = struct.Struct("<BIII")
RECORD = struct.Struct("<qqHBI")

F_NO_OFFSET = 1
F_NO_LENGTH = 2
F_RAW_OFFSET = 4
F_RAW_LENGTH = 8
F_HEADER_FAILS = 1 << 4
F_HEADER_MATCHES_LENGTH = 2 << 4
F_RAW_NUM_BYTES = 64

_SYNTHETIC_SIZE = 1 << 20
_synthetic: bytes | None = None


def _configs() -> list[tuple[Any, int]]:
    """(PlanConfig, file-size cap); files under a cap small enough are materialised."""
    from pybloom_async.read.plan import DEFAULT_PLAN_CONFIG, PlanConfig

    return [
        (PlanConfig(16, 400, 128, 1024, 32), 1 << 14),
        (PlanConfig(0, 64, 15, 32, 15), 1 << 12),
        (PlanConfig(300, 1500, 600, 2000, 64), 1 << 16),
        (PlanConfig(1 << 10, 1 << 14, 4096, 1 << 16, 1 << 10), _SYNTHETIC_SIZE),
        (DEFAULT_PLAN_CONFIG, 1 << 40),
        (PlanConfig(1 << 20, 16 << 20, 256 << 10, 128 << 20, 1 << 10), 1 << 62),
    ]


def _content() -> bytes:
    """Bytes whose value depends on their position: a shifted slice never compares equal."""
    global _synthetic
    if _synthetic is None:
        import numpy as np

        i = np.arange(_SYNTHETIC_SIZE, dtype=np.int64)
        _synthetic = ((i * 7 + i // 251) % 256).astype(np.uint8).tobytes()
    return _synthetic


def encode(
    config: int,
    file_size: int,
    footer_length: int,
    tail_extra: int,
    filters: Sequence[tuple[int | None, int | None, int, int, int]],
) -> bytes:
    """An input in the format above; filters are (offset, length, header_len, flags, num_bytes).

    Offsets and lengths are stored raw (the flags gain F_RAW_*), None as absent.
    """
    out = bytearray(HEAD.pack(config, file_size, footer_length, tail_extra))
    for offset, length, header_len, flags, num_bytes in filters:
        flags |= F_RAW_OFFSET | F_RAW_LENGTH
        if offset is None:
            flags |= F_NO_OFFSET
        if length is None:
            flags |= F_NO_LENGTH
        out += RECORD.pack(offset or 0, length or 0, header_len, flags, num_bytes)
    return bytes(out)


def _decode(
    data: bytes,
) -> tuple[Any, int, int, int, list[tuple[int | None, int | None, int, int, int]]] | None:
    if len(data) < HEAD.size:
        return None
    config_id, size_raw, footer_raw, tail_raw = HEAD.unpack_from(data)
    configs = _configs()
    config, cap = configs[config_id % len(configs)]
    file_size = 13 + size_raw % cap if cap < 1 << 32 else 13 + size_raw * (cap >> 32)
    footer_length = 1 + footer_raw % (file_size - 12)
    footer_start = file_size - 8 - footer_length
    tail_start = max(0, footer_start - tail_raw % (footer_start + 1))
    records = []
    body = data[HEAD.size :]
    for pos in range(0, len(body) - RECORD.size + 1, RECORD.size):
        offset_raw, length_raw, header_len, flags, num_raw = RECORD.unpack_from(body, pos)
        offset: int | None = offset_raw
        length: int | None = length_raw
        if not flags & F_RAW_OFFSET:
            offset = offset_raw % (footer_start + 64)
        if not flags & F_RAW_LENGTH:
            length = length_raw % (config.max_serialized_bytes + 64)
        if flags & F_NO_OFFSET:
            offset = None
        if flags & F_NO_LENGTH:
            length = None
        num_bytes = num_raw if flags & F_RAW_NUM_BYTES else 32 << (num_raw % 24)
        records.append((offset, length, header_len, flags, num_bytes))
    return config, file_size, footer_start, tail_start, records


def _expected_status(offset: int | None, length: int | None, footer_start: int, config: Any) -> str:
    """The round-1 rules, restated independently of plan.py."""
    from pybloom_async.read.plan import MIN_FILTER_BYTES

    if offset is None or offset <= 0:
        return "absent"
    if offset < 4 or offset >= footer_start:
        return "unusable"
    if length is None:
        ok = offset + MIN_FILTER_BYTES <= footer_start
    else:
        ok = (
            MIN_FILTER_BYTES <= length <= config.max_serialized_bytes
            and offset + length <= footer_start
        )
    return "planned" if ok else "unusable"


def _union(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    # Overlapping requests are always fetched together; touching ones may be split.
    for start, end in sorted(ranges):
        if out and start < out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(s, e) for s, e in out]


def _check_fetches(
    fetches: Sequence[Any], needs: Sequence[tuple[int, int]], footer_start: int, config: Any
) -> None:
    """Fetches lie in [4, footer_start), are sorted and disjoint, and read only needed
    bytes or holes of at most max_hole_bytes between them; a fetch above max_range_bytes
    is one run of overlapping requests with no hole."""
    previous_end = -1
    for f in fetches:
        assert 4 <= f.start < f.end <= footer_start, (f, footer_start)
        assert f.start >= previous_end, "fetches overlap or are unsorted"
        previous_end = f.end
    pieces = _union(needs)
    for f in fetches:
        inside = [(s, e) for s, e in pieces if f.start <= s and e <= f.end]
        assert inside, f"fetch {f} serves no request"
        assert inside[0][0] == f.start and inside[-1][1] == f.end, f"fetch {f} reads extra bytes"
        for (_, end), (start, _) in itertools.pairwise(inside):
            assert start - end <= config.max_hole_bytes, f"fetch {f} reads a hole too large"
            assert f.end - f.start <= config.max_range_bytes, f"fetch {f} merged past the limit"
    for s, e in pieces:
        assert any(f.start <= s and e <= f.end for f in fetches), f"[{s}, {e}) is not fetched"


def check_plan(data: bytes) -> None:
    """Run both planning rounds on one decoded input and check every property."""
    from pybloom_async.errors import InvalidArgumentError
    from pybloom_async.read.bitset_plan import HeaderInfo, plan_bitset_reads
    from pybloom_async.read.plan import FilterStatus, plan_filter_reads

    decoded = _decode(data)
    if decoded is None:
        return
    config, file_size, footer_start, tail_start, records = decoded
    wanted = [(i, offset, length) for i, (offset, length, *_rest) in enumerate(records)]
    plan = plan_filter_reads(
        wanted, file_size=file_size, footer_start=footer_start, tail_start=tail_start, config=config
    )
    assert [f.key for f in plan.filters] == [k for k, _, _ in wanted]
    limit_read = max(config.guess_bytes, config.max_serialized_bytes)
    needs: list[tuple[int, int]] = []
    for entry, (_, offset, length) in zip(plan.filters, wanted, strict=True):
        assert entry.status.value == _expected_status(offset, length, footer_start, config), (
            entry,
            footer_start,
        )
        if entry.status is not FilterStatus.PLANNED:
            assert entry.read is None and entry.reason
            continue
        assert entry.read is not None and offset is not None
        r = entry.read.range
        assert 4 <= r.start == offset < r.end <= footer_start
        assert r.length <= limit_read
        if length is not None:
            assert r.length == length
        if not plan.tail.contains(r):
            needs.append((r.start, r.end))
    _check_fetches(plan.fetches, needs, footer_start, config)

    materialise = file_size <= _SYNTHETIC_SIZE
    content = _content()
    buffers: dict[Any, Any] = {}
    if materialise:
        buffers = plan.buffers(
            [content[f.start : f.end] for f in plan.fetches], content[tail_start:file_size]
        )
        for entry in plan.filters:
            if entry.read is not None:
                r = entry.read.range
                assert bytes(entry.read.view(buffers)) == content[r.start : r.end]

    headers: list[HeaderInfo | str | None] = []
    for entry, (_, _, header_len_raw, flags, num_bytes) in zip(plan.filters, records, strict=True):
        if entry.read is None:
            headers.append(None)
            continue
        mode = (flags >> 4) & 3
        if mode == 1:
            headers.append("the fuzzer says this header does not decode")
            continue
        # A real decoder cannot consume more bytes than it was given.
        header_len = 1 + header_len_raw % entry.read.range.length
        if mode == 2 and entry.length is not None:
            num_bytes = entry.length - header_len
        headers.append(HeaderInfo(header_len, num_bytes))
    try:
        bitsets = plan_bitset_reads(plan, headers)
    except InvalidArgumentError as exc:  # pragma: no cover - a contract violation is a bug
        raise AssertionError(f"plan_bitset_reads refused valid headers: {exc}") from exc
    round_one = [(f.start, f.end) for f in plan.fetches] + [(tail_start, file_size)]
    for f in bitsets.fetches:
        assert 4 <= f.start < f.end <= footer_start, (f, footer_start)
    ready_ranges = []
    for done, header in zip(bitsets.filters, headers, strict=True):
        if done.status is not FilterStatus.READY:
            assert done.bitset is None
            if isinstance(header, str):
                assert done.status is FilterStatus.UNUSABLE
            continue
        assert isinstance(header, HeaderInfo) and done.offset is not None
        assert done.bitset is not None and done.num_bytes == header.num_bytes
        assert 32 <= header.num_bytes <= config.max_filter_bytes and header.num_bytes % 32 == 0
        assert header.header_len <= config.max_header_bytes
        start = done.offset + header.header_len
        assert done.bitset.range.start == start
        assert done.bitset.range.end == start + header.num_bytes <= footer_start
        if done.length is not None:
            assert header.header_len + header.num_bytes == done.length
        ready_ranges.append((start, start + header.num_bytes))
        for piece in done.bitset.pieces:
            assert piece.buffer in bitsets.fetches or piece.buffer in {
                type(piece.buffer)(*r) for r in round_one
            }
    missing = [r for r in ready_ranges if not any(s <= r[0] and r[1] <= e for s, e in round_one)]
    if not missing:
        assert not bitsets.fetches, "round 2 fetches bytes round 1 already holds"
    if materialise:
        buffers = bitsets.buffers([content[f.start : f.end] for f in bitsets.fetches], buffers)
        for done in bitsets.filters:
            if done.bitset is not None:
                r = done.bitset.range
                assert bytes(done.bitset.view(buffers)) == content[r.start : r.end]
