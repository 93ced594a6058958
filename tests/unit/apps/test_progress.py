"""The progress bar over files read as they are listed: one bar whose total grows."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pybloom_async.apps.cli import main
from pybloom_async.apps.cli_output import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_growing_total_keeps_one_bar_and_a_new_pass_starts_another() -> None:
    with Progress(Terminal()) as progress:
        progress(1, 2)
        bar = progress.bar
        progress(2, 3)  # listed one more, and done with two
        progress(3, 3)  # all done so far: the listing may still go on
        progress(4, 5)
        assert progress.bar is bar and (bar.n, bar.total) == (4, 5)
        progress(1, 5)  # a second pass over the files
        assert progress.bar is not bar
    assert progress.bar is None


def test_files_read_as_they_are_listed_show_an_open_count_until_the_listing_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No total (and no percentage) is shown before it is known: never 34/34, then 68/68."""
    for i in range(20):
        pq.write_table(pa.table({"id": pa.array([i], pa.int64())}), tmp_path / f"{i:02}.parquet")
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    # One worker: the listing outlasts its first batch of files (with 4, all 20 are taken
    # before the first is done, and the total is known from the start).
    argv = ["prune", str(tmp_path), "--where", "id = 3", "--concurrency", "1", "--summary"]
    assert main(argv, out=io.StringIO()) == 0
    shown = terminal.getvalue()
    totals = {int(m) for m in re.findall(r"\d+/(\d+) \[", shown)}
    assert totals == {20}, shown
    assert re.search(r"\b\d+file \[", shown), shown  # the open count, before the total
    assert "20/20 [" in shown
