"""The lookup command's files read at once (apps/cli_lookup._read_ahead): parts in file
order, at most READ_AHEAD_FILES files and READ_AHEAD_BYTES of kept row groups each, one
file at a time when asked (--limit), files without kept row groups left out."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pybloom_async.apps import cli_lookup
from pybloom_async.apps.cli_lookup import READ_AHEAD_BYTES, READ_AHEAD_FILES


def _plan(name: str, kept: list[int], sizes: list[int]) -> Any:
    groups = [SimpleNamespace(total_byte_size=size) for size in sizes]
    return SimpleNamespace(name=name, kept=kept, metadata=SimpleNamespace(row_groups=groups))


def _names(parts: list[list[Any]]) -> list[list[str]]:
    return [[plan.name for plan in part] for part in parts]


def test_parts_keep_file_order_and_their_bounds() -> None:
    small = [_plan(f"f{i}", [0], [1_000]) for i in range(READ_AHEAD_FILES + 3)]
    parts = cli_lookup._read_ahead(small, READ_AHEAD_FILES)
    assert [len(p) for p in parts] == [READ_AHEAD_FILES, 3]
    assert [name for part in _names(parts) for name in part] == [p.name for p in small]
    half = READ_AHEAD_BYTES // 2
    large = [
        _plan("a", [0, 1], [half, half]),  # its kept row groups fill a part alone
        _plan("pruned", [], [half]),  # nothing kept: not read
        _plan("b", [1], [10, half]),
        _plan("c", [0], [half]),
        _plan("d", [0], [1]),
        _plan("huge", [0], [3 * READ_AHEAD_BYTES]),  # above the bound: a part of its own
    ]
    parts = cli_lookup._read_ahead(large, READ_AHEAD_FILES)
    assert _names(parts) == [["a"], ["b", "c"], ["d"], ["huge"]]
    assert _names(cli_lookup._read_ahead(large, 1)) == [["a"], ["b"], ["c"], ["d"], ["huge"]]
