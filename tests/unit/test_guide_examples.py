"""Guides whose examples run: every ``python`` block of each page below is executed, in
order, in one namespace, in an empty working directory (the examples write their own
files and assert what they print), so a guide cannot promise what the library does not do.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"

#: Pages whose every python block is a complete, runnable example.
RUNNABLE = ("guides/predicates.md",)

_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(page: Path) -> list[tuple[int, str]]:
    """Each python block of ``page`` with the line it starts on."""
    text = page.read_text()
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in _BLOCK.finditer(text)]


@pytest.mark.parametrize("name", RUNNABLE)
def test_the_examples_of_the_page_run(name: str, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    page = DOCS / name
    found = blocks(page)
    assert found, f"{name} has no python block"
    namespace: dict[str, object] = {"__name__": "guide"}
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        for line, source in found:
            # Compiled with the page's line numbers, so a failure points into the page.
            code = compile("\n" * (line - 1) + source, str(page), "exec")
            exec(code, namespace)
    finally:
        os.chdir(cwd)


def test_blocks_finds_each_block_and_its_line(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# t\n\n```python\nx = 1\n```\n\ntext\n```sh\nls\n```\n```python\ny = 2\n```\n")
    assert blocks(page) == [(4, "x = 1\n"), (12, "y = 2\n")]
