"""``scripts/dead_exports.py`` finds dead names under the rule that only facades declare
``__all__`` (docs/development.md): a facade name nothing else uses, and a module's
top-level name that nothing uses, not even the module itself."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

import pybloom_async

SCRIPT = Path(pybloom_async.__file__).parent.parent / "scripts" / "dead_exports.py"

pytestmark = pytest.mark.skipif(
    not SCRIPT.is_file() or shutil.which("git") is None, reason="scripts/ or git is absent"
)


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dead_exports", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dead_names_are_found(tmp_path: Path) -> None:
    files = {
        "pybloom_async/__init__.py": (
            "from .core import used_by_the_facade, unused_public\n"
            "__all__ = ['unused_public', 'used_by_the_facade']\n"
        ),
        "pybloom_async/core.py": (
            "LIMIT = 3\n"
            "def helper() -> int:\n    return LIMIT\n"
            "def dead() -> int:\n    return 1\n"
            "def used_by_the_facade() -> int:\n    return helper()\n"
            "def unused_public() -> int:\n    return 2\n"
            "def _private() -> int:\n    return 0\n"
        ),
        "pybloom_async/sub/__init__.py": "from .inner import passed_on as passed_on\n",
        "pybloom_async/sub/inner.py": "def passed_on() -> None: ...\n",
        "tests/test_it.py": "from pybloom_async import used_by_the_facade\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    # helper and LIMIT are used by their module; unused_public and passed_on only by the
    # __init__ that passes them on.
    assert script().dead_exports(tmp_path) == [
        ("pybloom_async/core.py", "dead", 1),
        ("pybloom_async/core.py", "unused_public", 1),
        ("pybloom_async/sub/inner.py", "passed_on", 1),
    ]
