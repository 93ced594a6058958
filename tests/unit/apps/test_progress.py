"""The progress bar over files read as they are listed: one bar whose total grows."""

from __future__ import annotations

import io

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
