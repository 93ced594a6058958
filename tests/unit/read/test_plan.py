"""Tests for the pure read planner: every rule table-driven, the invariants fuzzed.

The fuzz tests run the two planning rounds against a synthetic file whose every byte is
known, "fetch" by slicing it, and check that each located filter reads back the exact file
bytes, so a wrong offset anywhere in the bookkeeping fails them.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pybloom_async.errors import InvalidArgumentError, ParquetFormatError, SourceError
from pybloom_async.read.bitset_plan import BitsetPlan, HeaderInfo, plan_bitset_reads
from pybloom_async.read.plan import (
    DEFAULT_PLAN_CONFIG,
    MIN_FILTER_BYTES,
    FilterStatus,
    PlanConfig,
    ReadPlan,
    plan_filter_reads,
)
from pybloom_async.read.ranges import BufferLike, ByteRange, merge_ranges

R = ByteRange
KiB = 1024
MiB = 1024 * KiB

# A small configuration so that table rows can reach every limit with small numbers.
SMALL = PlanConfig(
    max_hole_bytes=16,
    max_range_bytes=400,
    guess_bytes=128,
    max_filter_bytes=1024,
    max_header_bytes=32,
)


def synthetic_file(size: int) -> bytes:
    """Bytes whose value depends on position, so a shifted slice never compares equal."""
    return bytes((i * 7 + i // 251) % 256 for i in range(size))


def fetch_round_one(plan: ReadPlan[Any], data: bytes) -> dict[ByteRange, BufferLike]:
    fetched: list[BufferLike] = [data[r.start : r.end] for r in plan.fetches]
    return plan.buffers(fetched, data[plan.tail.start :])


def fetch_round_two(
    plan: BitsetPlan[Any], data: bytes, previous: dict[ByteRange, BufferLike]
) -> dict[ByteRange, BufferLike]:
    return plan.buffers([data[r.start : r.end] for r in plan.fetches], previous)


# --------------------------------------------------------------------------- merge_ranges


@pytest.mark.parametrize(
    ("ranges", "max_hole", "max_size", "expected"),
    [
        pytest.param([], 10, 100, [], id="empty"),
        pytest.param([(0, 10)], 10, 100, [R(0, 10)], id="single"),
        pytest.param([(5, 5), (7, 7)], 10, 100, [], id="empty-ranges-dropped"),
        pytest.param([(0, 10), (10, 20)], 0, 100, [R(0, 20)], id="touching-merge-with-zero-hole"),
        pytest.param([(0, 10), (11, 20)], 0, 100, [R(0, 10), R(11, 20)], id="one-byte-hole"),
        pytest.param([(0, 10), (15, 20)], 5, 100, [R(0, 20)], id="hole-at-limit"),
        pytest.param([(0, 10), (16, 20)], 5, 100, [R(0, 10), R(16, 20)], id="hole-over-limit"),
        pytest.param([(15, 20), (0, 10)], 5, 100, [R(0, 20)], id="unsorted-input"),
        pytest.param([(0, 10), (0, 10)], 0, 100, [R(0, 10)], id="duplicates"),
        pytest.param([(0, 10), (10, 20)], 0, 20, [R(0, 20)], id="size-at-limit"),
        pytest.param([(0, 10), (10, 20)], 0, 19, [R(0, 10), R(10, 20)], id="size-over-limit"),
        pytest.param([(0, 10), (5, 30)], 0, 8, [R(0, 30)], id="overlap-always-joins"),
        pytest.param([(0, 10), (2, 4)], 0, 100, [R(0, 10)], id="contained"),
        pytest.param(
            [(0, 5), (6, 100), (101, 105)],
            1,
            10,
            [R(0, 5), R(6, 100), R(101, 105)],
            id="oversized-stands-alone",
        ),
        pytest.param(
            [(0, 4), (5, 9), (10, 14)], 1, 9, [R(0, 9), R(10, 14)], id="greedy-left-to-right"
        ),
        pytest.param(
            [(0, 10), (20, 30), (1000, 1010)],
            MiB,
            16 * MiB,
            [R(0, 1010)],
            id="object-store-defaults",
        ),
    ],
)
def test_merge_ranges_table(
    ranges: list[tuple[int, int]], max_hole: int, max_size: int, expected: list[ByteRange]
) -> None:
    assert merge_ranges(ranges, max_hole, max_size) == expected


@pytest.mark.parametrize(
    ("ranges", "max_hole", "max_size", "match"),
    [
        ([(5, 3)], 0, 10, "0 <= start <= end"),
        ([(-1, 3)], 0, 10, "0 <= start <= end"),
        ([(1.0, 3)], 0, 10, "non-int"),
        ([(True, 3)], 0, 10, "non-int"),
        ([(1,)], 0, 10, "pair"),
        ([(0, 1)], -1, 10, "max_hole"),
        ([(0, 1)], 0, 0, "max_size"),
    ],
)
def test_merge_ranges_rejects(
    ranges: list[tuple[int, int]], max_hole: int, max_size: int, match: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        merge_ranges(ranges, max_hole, max_size)


def check_merged(
    inputs: Sequence[tuple[int, int]], merged: Sequence[ByteRange], max_hole: int, max_size: int
) -> None:
    """The merge_ranges contract, checked from scratch."""
    wanted = sorted((s, e) for s, e in inputs if e > s)
    for a, b in pairwise(merged):
        assert a.end <= b.start, "outputs sorted and disjoint"
    for s, e in wanted:
        holders = [m for m in merged if m.start <= s and e <= m.end]
        assert len(holders) == 1, f"input {(s, e)} in exactly one output"
    for m in merged:
        inside = [(s, e) for s, e in wanted if m.start <= s and e <= m.end]
        assert inside, "no output without an input"
        assert m.start == min(s for s, _ in inside) and m.end == max(e for _, e in inside)
        # Walk the union of the inputs inside m; every uncovered run is a hole.
        reach = inside[0][1]
        holes = []
        for s, e in inside[1:]:
            if s > reach:
                holes.append(s - reach)
            reach = max(reach, e)
        assert all(h <= max_hole for h in holes), "holes within the limit"
        if m.length > max_size:
            # Only overlapping inputs may exceed the size limit: no hole and no touching join.
            assert not holes
            reach = inside[0][1]
            for s, e in inside[1:]:
                assert s < reach, "an oversized output is one run of overlapping inputs"
                reach = max(reach, e)
    for a, b in pairwise(merged):
        # Greedy maximality: the next output could not have been merged into this one.
        first_end = max(e for s, e in wanted if s == b.start)
        reach = first_end
        for s, e in wanted:
            if b.start <= s < reach:
                reach = max(reach, e)
        assert b.start - a.end > max_hole or reach - a.start > max_size


ranges_strategy = st.lists(
    st.tuples(st.integers(0, 2000), st.integers(0, 300)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=40,
)


@given(ranges=ranges_strategy, max_hole=st.integers(0, 200), max_size=st.integers(1, 600))
def test_merge_ranges_fuzz(ranges: list[tuple[int, int]], max_hole: int, max_size: int) -> None:
    check_merged(ranges, merge_ranges(ranges, max_hole, max_size), max_hole, max_size)


# --------------------------------------------------------------------------- configuration


def test_default_config() -> None:
    config = DEFAULT_PLAN_CONFIG
    assert config.max_hole_bytes == MiB
    assert config.max_range_bytes == 16 * MiB
    assert config.guess_bytes == 256 * KiB
    assert config.max_filter_bytes == 128 * MiB
    assert config.max_serialized_bytes == 128 * MiB + config.max_header_bytes


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_hole_bytes": -1}, "max_hole_bytes"),
        ({"max_range_bytes": 0}, "max_range_bytes"),
        ({"max_filter_bytes": 31}, "max_filter_bytes"),
        ({"max_header_bytes": 14}, "max_header_bytes"),
        ({"guess_bytes": 100, "max_header_bytes": 200}, "guess_bytes"),
        ({"guess_bytes": 1.5}, "must be an int"),
        ({"max_hole_bytes": True}, "must be an int"),
    ],
)
def test_config_rejects(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        PlanConfig(**kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- round 1 rules


@pytest.mark.parametrize(
    ("file_size", "footer_start", "tail_start", "error", "match"),
    [
        (11, 4, 11, ParquetFormatError, "too small"),
        (100, 3, 100, ParquetFormatError, "footer start 3"),
        (100, 93, 100, ParquetFormatError, "footer start 93"),
        (100, -50, 100, ParquetFormatError, "footer start -50"),
        (100, 50, 101, InvalidArgumentError, "tail_start 101"),
        (100, 50, -1, InvalidArgumentError, "tail_start"),
        (100.0, 50, 100, InvalidArgumentError, "file_size"),
    ],
)
def test_geometry_rejects(
    file_size: int, footer_start: int, tail_start: int, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        plan_filter_reads([], file_size=file_size, footer_start=footer_start, tail_start=tail_start)


FOOTER = 10_000
SIZE = 10_100  # footer of 92 bytes, then length and magic


@pytest.mark.parametrize(
    ("offset", "length", "status", "expected"),
    [
        # Absent: no offset, zero or negative; the length does not matter.
        (None, None, FilterStatus.ABSENT, "no bloom filter"),
        (None, 100, FilterStatus.ABSENT, "no bloom filter"),
        (0, 100, FilterStatus.ABSENT, "no bloom filter"),
        (-5, 100, FilterStatus.ABSENT, "no bloom filter"),
        # Offsets must lie in [4, footer_start).
        (1, 100, FilterStatus.UNUSABLE, "inside the leading magic"),
        (3, None, FilterStatus.UNUSABLE, "inside the leading magic"),
        (4, MIN_FILTER_BYTES, FilterStatus.PLANNED, R(4, 4 + MIN_FILTER_BYTES)),
        (FOOTER, 100, FilterStatus.UNUSABLE, "at or past the footer start"),
        (FOOTER + 50, None, FilterStatus.UNUSABLE, "at or past the footer start"),
        # Lengths: positive, room for header + one block, within the limit and the file.
        (100, 0, FilterStatus.UNUSABLE, "length 0 is not positive"),
        (100, -1, FilterStatus.UNUSABLE, "length -1 is not positive"),
        (100, MIN_FILTER_BYTES - 1, FilterStatus.UNUSABLE, "cannot hold a header"),
        (100, MIN_FILTER_BYTES, FilterStatus.PLANNED, R(100, 100 + MIN_FILTER_BYTES)),
        (100, FOOTER - 100, FilterStatus.PLANNED, R(100, FOOTER)),
        (100, FOOTER - 99, FilterStatus.UNUSABLE, "runs past the footer start"),
        (FOOTER - MIN_FILTER_BYTES, 2 * MIN_FILTER_BYTES, FilterStatus.UNUSABLE, "runs past"),
        # No length: a guess, clipped to the footer; refused when no filter fits.
        (100, None, FilterStatus.PLANNED, R(100, 612)),
        (FOOTER - 500, None, FilterStatus.PLANNED, R(FOOTER - 500, FOOTER)),
        (FOOTER - MIN_FILTER_BYTES, None, FilterStatus.PLANNED, R(FOOTER - 47, FOOTER)),
        (FOOTER - MIN_FILTER_BYTES + 1, None, FilterStatus.UNUSABLE, "fewer than the smallest"),
    ],
)
def test_round_one_rules(
    offset: int | None, length: int | None, status: FilterStatus, expected: str | ByteRange
) -> None:
    config = PlanConfig(guess_bytes=512, max_header_bytes=64)
    plan = plan_filter_reads(
        [("k", offset, length)],
        file_size=SIZE,
        footer_start=FOOTER,
        tail_start=SIZE,
        config=config,
    )
    (entry,) = plan.filters
    assert entry.status is status
    assert (entry.key, entry.offset, entry.length) == ("k", offset, length)
    if isinstance(expected, str):
        assert entry.read is None
        assert entry.reason is not None and expected in entry.reason
        assert plan.fetches == ()
    else:
        assert entry.reason is None
        assert entry.read is not None and entry.read.range == expected
        assert entry.guessed is (length is None)
        assert plan.fetches == (expected,)


def test_length_limit() -> None:
    """A length above header max + max_filter_bytes is unusable even inside the file."""
    limit = SMALL.max_serialized_bytes
    plan = plan_filter_reads(
        [("over", 100, limit + 1), ("at", 2000, limit)],
        file_size=SIZE,
        footer_start=FOOTER,
        tail_start=SIZE,
        config=SMALL,
    )
    over, at = plan.filters
    assert over.status is FilterStatus.UNUSABLE
    assert over.reason is not None and f"above the limit of {limit} bytes" in over.reason
    assert at.status is FilterStatus.PLANNED
    assert plan.fetches == (R(2000, 2000 + limit),)


@pytest.mark.parametrize(
    ("item", "match"),
    [
        (("k", 1.5, None), "bloom_filter_offset must be an int"),
        (("k", 100, True), "bloom_filter_length must be an int"),
        (("k", "100", 50), "bloom_filter_offset must be an int"),
        (("k", 100), "triple"),
    ],
)
def test_round_one_rejects_wrong_types(item: tuple[object, ...], match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        plan_filter_reads(
            [item],  # type: ignore[arg-type]
            file_size=SIZE,
            footer_start=FOOTER,
            tail_start=SIZE,
        )


def test_tail_serves_filters_inside_it() -> None:
    plan = plan_filter_reads(
        [
            ("inside", 9000, 100),
            ("edge", 8000, 100),  # starts exactly at tail_start
            ("straddles", 7950, 100),
            ("guess-inside", 9500, None),
        ],
        file_size=SIZE,
        footer_start=FOOTER,
        tail_start=8000,
        config=SMALL,
    )
    inside, edge, straddles, guess = plan.filters
    assert plan.tail == R(8000, SIZE)
    for entry in (inside, edge, guess):
        assert entry.read is not None and entry.read.pieces[0].buffer == plan.tail
    # A range only partly in the tail is fetched whole, so it stays one zero-copy buffer.
    assert plan.fetches == (R(7950, 8050),)
    assert straddles.read is not None and straddles.read.pieces[0].buffer == R(7950, 8050)
    assert guess.read is not None and guess.read.range == R(9500, 9500 + SMALL.guess_bytes)


def test_guess_stops_at_next_filter_but_keeps_a_header() -> None:
    plan = plan_filter_reads(
        [
            ("a", 100, None),  # next wanted filter at 180: guess clipped there
            ("b", 180, 60),
            ("c", 1000, None),  # next at 1010 is closer than a header: keep 32 bytes
            ("d", 1010, None),  # next usable is at 5000, beyond the guess
            ("x", 1050, 10),  # unusable: does not clip d's guess
            ("e", 5000, 100),
        ],
        file_size=SIZE,
        footer_start=FOOTER,
        tail_start=SIZE,
        config=SMALL,
    )
    ranges = {f.key: f.read.range for f in plan.filters if f.read is not None}
    assert ranges == {
        "a": R(100, 180),
        "b": R(180, 240),
        "c": R(1000, 1000 + SMALL.max_header_bytes),
        "d": R(1010, 1010 + SMALL.guess_bytes),
        "e": R(5000, 5100),
    }
    assert plan.filters[4].status is FilterStatus.UNUSABLE
    # a and b touch and fit one range; c and d overlap and join; e stands apart.
    assert plan.fetches == (R(100, 240), R(1000, 1138), R(5000, 5100))


def test_merging_respects_hole_and_size() -> None:
    plan = plan_filter_reads(
        [
            ("a", 100, 100),
            ("b", 216, 100),  # hole 16 = limit: merged with a
            ("c", 333, 100),  # hole 17: new range
            ("d", 433, 100),
            ("e", 533, 100),
            ("f", 633, 100),  # c..e = 300, adding f makes 400 = limit; g would overflow
            ("g", 733, 60),
            ("big", 1000, 900),  # larger than max_range_bytes: alone
            ("h", 1900, 50),
        ],
        file_size=SIZE,
        footer_start=FOOTER,
        tail_start=SIZE,
        config=SMALL,
    )
    assert plan.fetches == (R(100, 316), R(333, 733), R(733, 793), R(1000, 1900), R(1900, 1950))
    located = {f.key: f.read.pieces[0].buffer for f in plan.filters if f.read is not None}
    assert located["b"] == R(100, 316)
    assert located["g"] == R(733, 793)
    assert located["big"] == R(1000, 1900)


def test_views_are_zero_copy_slices() -> None:
    data = synthetic_file(SIZE)
    plan = plan_filter_reads(
        [("a", 100, 100), ("b", 250, 100), ("t", 9500, 100)],
        file_size=SIZE,
        footer_start=FOOTER,
        tail_start=9000,
        config=PlanConfig(max_hole_bytes=100),
    )
    buffers = fetch_round_one(plan, data)
    for entry in plan.filters:
        assert entry.read is not None and entry.read.zero_copy
        view = entry.read.view(buffers)
        assert view.readonly
        assert view.obj is buffers[entry.read.pieces[0].buffer]
        assert bytes(view) == data[entry.read.range.start : entry.read.range.end]


def test_buffers_are_checked() -> None:
    plan = plan_filter_reads(
        [("a", 100, 100)], file_size=SIZE, footer_start=FOOTER, tail_start=9000
    )
    tail = bytes(SIZE - 9000)
    with pytest.raises(SourceError, match="returned 99 bytes, expected 100"):
        plan.buffers([bytes(99)], tail)
    with pytest.raises(SourceError, match="expected 1100"):
        plan.buffers([bytes(100)], tail[1:])
    with pytest.raises(InvalidArgumentError, match="got 0 buffers for 1"):
        plan.buffers([], tail)
    entry = plan.filters[0]
    assert entry.read is not None
    with pytest.raises(InvalidArgumentError, match="no buffer was given"):
        entry.read.view({})
    with pytest.raises(InvalidArgumentError, match="holds 3 bytes"):
        entry.read.view({R(100, 200): b"abc"})


# --------------------------------------------------------------------------- round 2 rules


def round_one(
    wanted: list[tuple[str, int | None, int | None]],
    tail_start: int = SIZE,
    config: PlanConfig = SMALL,
) -> ReadPlan[str]:
    return plan_filter_reads(
        wanted, file_size=SIZE, footer_start=FOOTER, tail_start=tail_start, config=config
    )


@pytest.mark.parametrize(
    ("length", "header", "expected"),
    [
        # Known length: header + numBytes must equal it.
        (116, HeaderInfo(20, 96), R(120, 216)),
        (116, (20, 96), R(120, 216)),  # the pair decode_header returns
        (116, HeaderInfo(20, 64), "does not match bloom_filter_length 116"),
        (116, HeaderInfo(20, 128), "does not match bloom_filter_length 116"),
        # numBytes: a positive multiple of 32 within max_filter_bytes.
        (None, HeaderInfo(20, 0), "not a positive multiple of the 32-byte block"),
        (None, HeaderInfo(20, -32), "not a positive multiple"),
        (None, HeaderInfo(20, 33), "not a positive multiple"),
        (None, HeaderInfo(20, 2048), "above the limit of 1024 bytes"),
        (None, HeaderInfo(20, 2**31 - 32), "above the limit of 1024 bytes"),
        (None, HeaderInfo(20, 1024), R(120, 1144)),
        # Header length within max_header_bytes (it came from the guess, so it fits in it).
        (200, HeaderInfo(40, 160), "header of 40 bytes is above the limit of 32"),
        (225, HeaderInfo(33, 192), "header of 33 bytes is above the limit of 32"),
        (224, HeaderInfo(32, 192), R(132, 324)),
        # A decode failure is a reason, not an exception.
        (None, "truncated varint", "bloom filter header: truncated varint"),
    ],
)
def test_round_two_rules(
    length: int | None, header: HeaderInfo | tuple[int, int] | str, expected: str | ByteRange
) -> None:
    plan = round_one([("k", 100, length)])
    bitsets = plan_bitset_reads(plan, [header])
    (entry,) = bitsets.filters
    if isinstance(expected, str):
        assert entry.status is FilterStatus.UNUSABLE
        assert entry.reason is not None and expected in entry.reason
        assert entry.bitset is None
        assert bitsets.fetches == (), "nothing is fetched for an unusable filter"
    else:
        assert entry.status is FilterStatus.READY
        assert entry.bitset is not None and entry.bitset.range == expected
        assert (entry.header_len, entry.num_bytes) == tuple(header)


def test_round_two_past_footer_is_unusable() -> None:
    plan = round_one([("k", FOOTER - 100, None)])
    entry = plan_bitset_reads(plan, [HeaderInfo(20, 96)]).filters[0]
    assert entry.status is FilterStatus.UNUSABLE
    assert entry.reason is not None and "past the footer start 10000" in entry.reason
    one_past = plan_bitset_reads(plan, [HeaderInfo(5, 96)]).filters[0]
    assert one_past.status is FilterStatus.UNUSABLE
    ok = plan_bitset_reads(plan, [HeaderInfo(4, 96)]).filters[0]
    assert ok.status is FilterStatus.READY
    assert ok.bitset is not None and ok.bitset.range == R(FOOTER - 96, FOOTER)


def test_round_two_skips_bytes_held_in_the_middle() -> None:
    """A bitset running over another filter's buffer fetches the gaps on both sides only."""
    plan = round_one([("a", 100, None), ("b", 300, 60)])
    assert plan.fetches == (R(100, 228), R(300, 360))
    bitsets = plan_bitset_reads(plan, [HeaderInfo(20, 512), HeaderInfo(28, 32)])
    assert bitsets.filters[1].status is FilterStatus.READY
    assert bitsets.fetches == (R(228, 300), R(360, 632))
    a = bitsets.filters[0].bitset
    assert a is not None
    assert [p.buffer for p in a.pieces] == [R(100, 228), R(228, 300), R(300, 360), R(360, 632)]


def test_round_two_prefers_the_buffer_reaching_furthest() -> None:
    """Where a fetched range and the tail overlap, the tail avoids a join copy."""
    config = PlanConfig(max_hole_bytes=16, guess_bytes=128, max_header_bytes=64)
    plan = round_one([("s", 7950, None)], tail_start=8000, config=config)
    assert plan.fetches == (R(7950, 8078),)
    bitsets = plan_bitset_reads(plan, [HeaderInfo(60, 512)])
    bitset = bitsets.filters[0].bitset
    assert bitsets.fetches == ()
    assert bitset is not None and bitset.zero_copy
    assert bitset.pieces[0].buffer == plan.tail


def test_round_two_fetches_only_missing_bytes() -> None:
    data = synthetic_file(SIZE)
    plan = round_one(
        [
            ("exact", 100, 116),  # bitset fully read in round 1
            ("covered", 1000, None),  # guess [1000, 1128) holds 20 + 96
            ("short", 2000, None),  # guess [2000, 2128), bitset runs to 2532
            ("short2", 2540, None),  # its missing part is near short's: merged
            ("into-tail", 8900, None),  # guess [8900, 9028); rest is in the tail
            ("absent", None, None),
        ],
        tail_start=9000,
    )
    buffers = fetch_round_one(plan, data)
    bitsets = plan_bitset_reads(
        plan,
        [
            HeaderInfo(20, 96),
            HeaderInfo(20, 96),
            HeaderInfo(20, 512),
            HeaderInfo(20, 512),
            HeaderInfo(20, 256),
            None,
        ],
    )
    # short's guess ended where short2 starts; its bitset runs to 2532: [2128, 2532) is
    # missing. short2's runs to 3072 and its guess holds [2540, 2668): [2668, 3072) is
    # missing. The hole between the two (136 bytes) is above max_hole_bytes (16).
    assert bitsets.fetches == (R(2128, 2532), R(2668, 3072))
    all_buffers = fetch_round_two(bitsets, data, buffers)
    by_key = {f.key: f for f in bitsets.filters}
    assert by_key["absent"].status is FilterStatus.ABSENT
    for key in ("exact", "covered"):
        bitset = by_key[key].bitset
        assert bitset is not None and bitset.zero_copy
    short = by_key["short"].bitset
    assert short is not None
    assert [p.buffer for p in short.pieces] == [R(2000, 2128), R(2128, 2532)]
    into_tail = by_key["into-tail"].bitset
    assert into_tail is not None
    assert [p.buffer for p in into_tail.pieces] == [R(8900, 9028), plan.tail]
    for entry in bitsets.filters:
        if entry.bitset is not None:
            r = entry.bitset.range
            assert bytes(entry.bitset.view(all_buffers)) == data[r.start : r.end]


def test_round_two_merges_extra_ranges() -> None:
    config = PlanConfig(
        max_hole_bytes=200, max_range_bytes=10_000, guess_bytes=64, max_header_bytes=32
    )
    plan = round_one([("a", 100, None), ("b", 700, None)], config=config)
    # Round 1 merged nothing: the guesses [100, 164) and [700, 764) are 536 bytes apart.
    assert plan.fetches == (R(100, 164), R(700, 764))
    bitsets = plan_bitset_reads(plan, [HeaderInfo(20, 512), HeaderInfo(20, 512)])
    # Missing [164, 632) and [764, 1232): hole 132 <= 200, so one request.
    assert bitsets.fetches == (R(164, 1232),)


def test_round_two_reuses_another_filters_buffer() -> None:
    """A guess that stopped at the next filter finds its bitset in that filter's range."""
    plan = round_one([("a", 100, None), ("b", 140, 100)])
    assert plan.fetches == (R(100, 240),)
    bitsets = plan_bitset_reads(plan, [HeaderInfo(20, 64), HeaderInfo(20, 80)])
    assert bitsets.fetches == ()
    a = bitsets.filters[0].bitset
    assert a is not None and a.zero_copy and a.range == R(120, 184)


@pytest.mark.parametrize(
    ("headers", "match"),
    [
        ([], "got 0 headers for 2"),
        ([None, None], "was planned but got no header"),
        ([HeaderInfo(20, 96), HeaderInfo(20, 96)], "is absent; its header must be None"),
        ([HeaderInfo(0, 96), None], "header_len 0 is outside"),
        ([HeaderInfo(117, 96), None], "header_len 117 is outside the 116 bytes"),
        ([HeaderInfo(20.0, 96), None], "header_len must be an int"),  # type: ignore[arg-type]
        ([(1, 2, 3), None], "must be a HeaderInfo"),
        ([b"oops", None], "must be a HeaderInfo"),
    ],
)
def test_round_two_rejects_contract_violations(headers: list[object], match: str) -> None:
    plan = round_one([("k", 100, 116), ("none", None, None)])
    with pytest.raises(InvalidArgumentError, match=match):
        plan_bitset_reads(plan, headers)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- fuzzing


@st.composite
def scenarios(
    draw: st.DrawFn,
) -> tuple[int, int, int, PlanConfig, list[tuple[int, int | None, int | None]]]:
    footer_start = draw(st.integers(4, 6000))
    file_size = footer_start + 8 + draw(st.integers(0, 300))
    tail_start = draw(st.integers(max(0, footer_start - 1500), file_size))
    max_header = draw(st.integers(15, 64))
    config = PlanConfig(
        max_hole_bytes=draw(st.integers(0, 300)),
        max_range_bytes=draw(st.integers(1, 1500)),
        guess_bytes=draw(st.integers(max_header, 600)),
        max_filter_bytes=draw(st.integers(32, 2000)),
        max_header_bytes=max_header,
    )
    offsets = st.one_of(st.none(), st.integers(-10, footer_start + 50))
    lengths = st.one_of(st.none(), st.integers(-10, config.max_serialized_bytes + 50))
    wanted = draw(st.lists(st.tuples(offsets, lengths), max_size=25))
    return (
        file_size,
        footer_start,
        tail_start,
        config,
        [(i, o, n) for i, (o, n) in enumerate(wanted)],
    )


def expected_round_one_status(
    offset: int | None, length: int | None, footer_start: int, config: PlanConfig
) -> FilterStatus:
    """The rules, restated independently of the implementation."""
    if offset is None or offset <= 0:
        return FilterStatus.ABSENT
    if offset < 4 or offset >= footer_start:
        return FilterStatus.UNUSABLE
    if length is None:
        ok = offset + MIN_FILTER_BYTES <= footer_start
    else:
        ok = (
            MIN_FILTER_BYTES <= length <= config.max_serialized_bytes
            and offset + length <= footer_start
        )
    return FilterStatus.PLANNED if ok else FilterStatus.UNUSABLE


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=scenarios(), data=st.data())
def test_plans_fuzz(
    scenario: tuple[int, int, int, PlanConfig, list[tuple[int, int | None, int | None]]],
    data: st.DataObject,
) -> None:
    file_size, footer_start, tail_start, config, wanted = scenario
    content = synthetic_file(file_size)
    plan = plan_filter_reads(
        wanted,
        file_size=file_size,
        footer_start=footer_start,
        tail_start=tail_start,
        config=config,
    )
    assert [f.key for f in plan.filters] == [k for k, _, _ in wanted]

    # Round 1: statuses follow the rules; nothing outside [4, footer_start) or above a limit.
    needs: list[ByteRange] = []
    for entry, (_, offset, length) in zip(plan.filters, wanted, strict=True):
        assert entry.status is expected_round_one_status(offset, length, footer_start, config)
        if entry.status is not FilterStatus.PLANNED:
            assert entry.read is None and entry.reason
            continue
        assert entry.read is not None and offset is not None
        r = entry.read.range
        assert 4 <= r.start == offset < r.end <= footer_start
        if length is None:
            assert r.length <= config.guess_bytes
            assert r.length >= min(config.max_header_bytes, footer_start - offset)
        else:
            assert r.length == length <= config.max_serialized_bytes
        # Exactly one buffer (a fetch or the tail) holds the whole range.
        (piece,) = entry.read.pieces
        assert piece.buffer.contains(r)
        assert piece.buffer == plan.tail or piece.buffer in plan.fetches
        assert (piece.buffer == plan.tail) == plan.tail.contains(r)
        if piece.buffer != plan.tail:
            needs.append(r)
    for f in plan.fetches:
        assert 4 <= f.start < f.end <= footer_start
    check_merged(needs, plan.fetches, config.max_hole_bytes, config.max_range_bytes)

    buffers = fetch_round_one(plan, content)
    for entry in plan.filters:
        if entry.read is not None:
            r = entry.read.range
            assert bytes(entry.read.view(buffers)) == content[r.start : r.end]

    # Round 2 with made-up headers: some consistent, some not, some failing to decode.
    headers: list[HeaderInfo | str | None] = []
    for entry in plan.filters:
        if entry.read is None:
            headers.append(None)
            continue
        header_len = data.draw(st.integers(1, entry.read.range.length))
        if entry.length is not None and data.draw(st.booleans()):
            num_bytes = entry.length - header_len
        else:
            num_bytes = data.draw(st.integers(-64, 3000))
        decoded = data.draw(st.integers(0, 4)) > 0  # one header in five fails to decode
        headers.append(HeaderInfo(header_len, num_bytes) if decoded else "bad")
    bitsets = plan_bitset_reads(plan, headers)

    held = [*plan.fetches, plan.tail]
    extra_needs: list[ByteRange] = []
    for resolved, header in zip(bitsets.filters, headers, strict=True):
        if not isinstance(header, HeaderInfo):
            assert resolved.status is not FilterStatus.READY
            continue
        h, n = header
        assert resolved.offset is not None
        ok = (
            h <= config.max_header_bytes
            and n >= 32
            and n % 32 == 0
            and n <= config.max_filter_bytes
            and resolved.offset + h + n <= footer_start
            and (resolved.length is None or resolved.length == h + n)
        )
        assert (resolved.status is FilterStatus.READY) == ok, (resolved, header)
        if not ok:
            assert resolved.bitset is None and resolved.reason
            continue
        assert resolved.bitset is not None
        r = resolved.bitset.range
        assert r == R(resolved.offset + h, resolved.offset + h + n)
        # Pieces tile the range in order, each inside its buffer.
        assert (
            resolved.bitset.pieces[0].start == r.start and resolved.bitset.pieces[-1].end == r.end
        )
        for p, q in pairwise(resolved.bitset.pieces):
            assert p.end == q.start
        for p in resolved.bitset.pieces:
            assert p.buffer.start <= p.start < p.end <= p.buffer.end
            # Fewest pieces: no buffer holding the piece's first byte reaches further, unless
            # the piece ends the range (any buffer holding all of it is then as good).
            assert p.end == r.end or not any(
                b.start <= p.start < b.end and b.end > p.buffer.end
                for b in [*held, *bitsets.fetches]
            )
        # The uncovered parts are what round 2 had to fetch.
        pos = r.start
        while pos < r.end:
            holder = max(
                (b for b in held if b.start <= pos < b.end), default=None, key=lambda b: b.end
            )
            if holder is not None:
                pos = min(holder.end, r.end)
                continue
            nxt = min((b.start for b in held if b.start > pos), default=r.end)
            extra_needs.append(R(pos, min(nxt, r.end)))
            pos = min(nxt, r.end)
    for f in bitsets.fetches:
        assert 4 <= f.start < f.end <= footer_start
        # Never re-fetch from the start or end of something already held.
        assert not any(b.start <= f.start < b.end for b in held)
        assert not any(b.start < f.end <= b.end for b in held)
    check_merged(extra_needs, bitsets.fetches, config.max_hole_bytes, config.max_range_bytes)

    all_buffers = fetch_round_two(bitsets, content, buffers)
    for resolved in bitsets.filters:
        if resolved.bitset is not None:
            r = resolved.bitset.range
            assert bytes(resolved.bitset.view(all_buffers)) == content[r.start : r.end]


def test_exact_ranges_take_the_rules_of_classify() -> None:
    """plan_filter_reads accepts the usual (offset, length) pairs without calling _classify:
    on every boundary both give the same outcome, reason and range."""
    from pybloom_async.read.plan import _classify

    limit = SMALL.max_serialized_bytes
    offsets = [-1, 0, 1, 3, 4, 5, FOOTER - limit - 1, FOOTER - 48, FOOTER - 47, FOOTER - 1]
    offsets += [FOOTER, FOOTER + 1, True]
    lengths = [-1, 0, 1, MIN_FILTER_BYTES - 1, MIN_FILTER_BYTES, MIN_FILTER_BYTES + 1]
    lengths += [limit - 1, limit, limit + 1, FOOTER, True, None]
    checked = 0
    for offset in offsets:
        for length in lengths:
            wanted = [("f", offset, length)]
            try:
                reference = _classify("f", offset, length, FOOTER, SMALL)
            except InvalidArgumentError:
                with pytest.raises(InvalidArgumentError):
                    round_one(wanted)  # type: ignore[arg-type]
                continue
            (got,) = round_one(wanted).filters  # type: ignore[arg-type]
            if isinstance(reference, ByteRange):
                assert got.status is FilterStatus.PLANNED and got.read is not None
                assert got.read.range == reference, (offset, length)
            elif isinstance(reference, int):  # a guess
                assert got.status is FilterStatus.PLANNED and got.length is None
            else:
                assert (got.status, got.reason) == (reference.status, reference.reason)
            checked += 1
    assert checked > 100
