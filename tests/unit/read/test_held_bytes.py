"""Reads that never fetch a byte twice: plan_reads against what is held, and HeldBytes."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pybloom_async.read.ranges import ByteRange, HeldBytes, plan_reads

R = ByteRange


@pytest.mark.parametrize(
    ("wanted", "held", "keep_out", "hole", "expected"),
    [
        # Nothing held: merge_ranges' merging.
        ([(0, 10), (15, 20)], [], [], 10, [R(0, 20)]),
        # Held bytes are not fetched again, and the hole they make is not read over.
        ([(0, 100)], [(40, 60)], [], 1000, [R(0, 40), R(60, 100)]),
        ([(0, 10), (20, 30)], [(12, 14)], [], 1000, [R(0, 10), R(20, 30)]),
        # A wanted range wholly held: no request.
        ([(5, 8)], [(0, 10)], [], 0, []),
        # keep_out: another column's chunk between two wanted ones is never bridged ...
        ([(0, 10), (20, 30)], [], [(10, 20)], 1000, [R(0, 10), R(20, 30)]),
        # ... but bytes of keep_out that are wanted are fetched.
        ([(0, 30)], [], [(10, 20)], 1000, [R(0, 30)]),
        # A hole free of barriers is still read over.
        ([(0, 10), (20, 30)], [], [(40, 50)], 1000, [R(0, 30)]),
    ],
)
def test_plan_reads_table(
    wanted: list[tuple[int, int]],
    held: list[tuple[int, int]],
    keep_out: list[tuple[int, int]],
    hole: int,
    expected: list[ByteRange],
) -> None:
    assert plan_reads(wanted, held, keep_out, hole, 1 << 30) == expected


def _covers(ranges: list[tuple[int, int]]) -> set[int]:
    return {b for s, e in ranges for b in range(s, e)}


_ranges = st.lists(
    st.tuples(st.integers(0, 300), st.integers(0, 40)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(_ranges, _ranges, _ranges, st.integers(0, 64), st.integers(1, 400))
def test_plan_reads_fetches_each_missing_byte_once(
    wanted: list[tuple[int, int]],
    held: list[tuple[int, int]],
    keep_out: list[tuple[int, int]],
    hole: int,
    size: int,
) -> None:
    got = plan_reads(wanted, held, keep_out, hole, size)
    fetched = [(r.start, r.end) for r in got]
    have, want, out = _covers(held), _covers(wanted), _covers(keep_out)
    bytes_fetched = [b for s, e in fetched for b in range(s, e)]
    assert len(bytes_fetched) == len(set(bytes_fetched))  # disjoint requests
    assert want - have <= set(bytes_fetched)  # every missing byte comes
    assert not (set(bytes_fetched) & have)  # no held byte again
    assert not ((set(bytes_fetched) - want) & out)  # no hole over keep_out
    assert all(e > s for s, e in fetched) and fetched == sorted(fetched)


def test_held_bytes_reads_across_pieces_and_refuses_gaps() -> None:
    held = HeldBytes([(10, b"abcd")]).plus([(14, b"efg"), (30, b"xy")])
    assert held.read(11, 16) == b"bcdef"
    assert held.read(30, 32) == b"xy"
    assert held.read(12, 12) == b""
    assert held.read(16, 18) is None  # byte 17 is not held
    assert held.read(5, 11) is None
    assert held.ranges() == [(10, 14), (14, 17), (30, 32)]


def test_held_bytes_matches_the_file_on_random_pieces() -> None:
    rng = random.Random(7)
    file = bytes(rng.randrange(256) for _ in range(500))
    for _ in range(200):
        pieces = []
        for _ in range(rng.randrange(1, 6)):
            a = rng.randrange(500)
            b = rng.randrange(a, 501)
            pieces.append((a, file[a:b]))
        held = HeldBytes(pieces)
        covered = _covers([(a, a + len(d)) for a, d in pieces])
        a = rng.randrange(500)
        b = rng.randrange(a, 501)
        expect = file[a:b] if set(range(a, b)) <= covered else None
        assert held.read(a, b) == expect
