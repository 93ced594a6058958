"""The adaptive suffix: what SuffixLearner proposes after what it saw, and its config."""

from __future__ import annotations

import pytest

from pybloom_async.errors import InvalidArgumentError
from pybloom_async.read.fetch import LOCAL_SUFFIX_BYTES, ReaderConfig
from pybloom_async.read.suffix import SuffixLearner

KiB = 1024
MiB = 1024 * KiB
FLOOR, START, MAX = 64 * KiB, 256 * KiB, 1 * MiB


def learner_after(seen: list[tuple[int, int, int]]) -> SuffixLearner:
    learner = SuffixLearner(START, MAX, floor=FLOOR)
    for file_size, needed_from, footer_start in seen:
        learner.observe(file_size, needed_from, footer_start)
    return learner


SIZE = 10 * MiB
NEAR = (SIZE, SIZE - 20 * KiB, SIZE - 2 * KiB)
FAR = (SIZE, SIZE - 500 * KiB, SIZE - 2 * KiB)


@pytest.mark.parametrize(
    ("seen", "proposal"),
    [
        # Nothing learned: the start.
        ([], START),
        # Filters and footer within a few KiB of the end: never below the floor.
        ([(SIZE, SIZE - 3 * KiB, SIZE - 1 * KiB)], FLOOR),
        # Spark: first filter 86 KB from the end -> 86 KB + 1/8, rounded up to 4 KiB.
        ([(SIZE, SIZE - 86_000, SIZE - 6_000)], 96 * KiB),
        # The distance counts from the file's end whatever the file sizes.
        ([(SIZE, SIZE - 86_000, SIZE - 6_000), (2 * SIZE, 2 * SIZE - 86_000, 2 * SIZE - 6_000)],
         96 * KiB),
        # Filters beyond the maximum: the footer's distance is learned, not the maximum.
        ([(SIZE, SIZE - 5 * MiB, SIZE - 100 * KiB)], 116 * KiB),
        # Filters just within the maximum: the proposal is clamped to it.
        ([(SIZE, SIZE - 1000 * KiB, SIZE - 6_000)], MAX),
        # A footer larger than the maximum: clamped.
        ([(SIZE, SIZE - 3 * MiB, SIZE - 2 * MiB)], MAX),
        # The rare far file (1 in 20) does not grow the read for the others (90th percentile).
        ([NEAR] * 19 + [FAR], FLOOR),
        # ... but a common one does.
        ([NEAR] * 5 + [FAR], 564 * KiB),
        # Offsets beyond the footer start are ignored (the footer is what is needed).
        ([(SIZE, SIZE - 1 * KiB, SIZE - 80 * KiB)], 92 * KiB),
    ],
)  # fmt: skip
def test_proposals(seen: list[tuple[int, int, int]], proposal: int) -> None:
    learner = learner_after(seen)
    assert learner.learned is bool(seen)
    assert learner.propose() == proposal


def test_the_window_forgets_old_layouts() -> None:
    learner = SuffixLearner(START, MAX, floor=FLOOR, window=4)
    for _ in range(4):
        learner.observe(SIZE, SIZE - 600 * KiB, SIZE - 2 * KiB)
    assert learner.propose() > 600 * KiB
    for _ in range(4):
        learner.observe(SIZE, SIZE - 2 * KiB, SIZE - 1 * KiB)
    assert learner.propose() == FLOOR


def test_without_a_floor_the_start_is_the_least() -> None:
    learner = SuffixLearner(START, MAX)
    learner.observe(SIZE, SIZE - 2 * KiB, SIZE - 1 * KiB)
    assert learner.learned and learner.propose() == START


def test_a_known_file_size_bounds_the_proposal() -> None:
    learner = learner_after([(SIZE, SIZE - 200 * KiB, SIZE - 2 * KiB)])
    assert learner.propose(5000) == 5000
    assert learner.propose(3) == 8  # the trailer still fits
    assert learner.propose(SIZE) == learner.propose()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"start": 4, "maximum": MAX}, "start must be >= 8"),
        ({"start": START, "maximum": START - 1}, f"maximum must be >= {START}"),
        ({"start": START, "maximum": MAX, "window": 0}, "window must be a positive int"),
        ({"start": START, "maximum": MAX, "floor": 2 * MAX}, f"floor must be between 8 and {MAX}"),
    ],
)
def test_learner_arguments_are_checked(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        SuffixLearner(**kwargs)


def test_config_expresses_adaptive_and_fixed() -> None:
    default = ReaderConfig()
    assert default.adaptive and default.footer_read_bytes is None
    assert default.adaptive_start == START and default.max_suffix_bytes == MAX
    assert default.min_suffix_bytes == FLOOR
    assert default.first_suffix_bytes == LOCAL_SUFFIX_BYTES  # a local file's first read
    fixed = ReaderConfig(footer_read_bytes=4096)
    assert not fixed.adaptive and fixed.first_suffix_bytes == 4096


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"footer_read_bytes": 4}, "footer_read_bytes must be >= 8"),
        ({"adaptive_start": True}, "adaptive_start must be an int"),
        ({"adaptive_start": 2 * MiB}, f"max_suffix_bytes must be >= {2 * MiB}"),
        ({"max_suffix_bytes": 1000}, f"max_suffix_bytes must be >= {START}"),
        ({"min_suffix_bytes": 4}, "min_suffix_bytes must be >= 8"),
        ({"adaptive_start": 1000}, f"adaptive_start must be >= {FLOOR}"),
    ],
)
def test_config_is_checked(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        ReaderConfig(**kwargs)  # type: ignore[arg-type]
