"""for_each: what a run's results leave behind."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from pybloom_async.tasks.workers import for_each


class Result:
    """A result whose release is seen."""


def _collected_garbage() -> Iterator[list[object]]:
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    found: list[object] = []
    try:
        yield found
        gc.collect()
        found.extend(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_results_are_freed_by_reference_counting(stream: bool) -> None:
    """No reference cycle holds what the workers return: a lookup's footers, plans and rows
    are freed as soon as the caller lets go, not left to the cyclic collector (whose full
    passes over them cost a lookup up to a fifth of its time)."""

    async def work(i: int) -> Result:
        return Result()

    async def items() -> object:
        for i in range(20):
            yield i

    garbage = _collected_garbage()
    found = next(garbage)
    results = await for_each(items() if stream else list(range(20)), work, limit=4)
    assert len(results) == 20 and all(isinstance(r, Result) for r in results)
    del results
    next(garbage, None)
    assert not [o for o in found if isinstance(o, Result)]
