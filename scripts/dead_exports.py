"""List the names of a module's ``__all__`` that no other tracked file uses.

    python scripts/dead_exports.py [ROOT]

A name counts as used when another tracked file (package, tests, bench, docs, ...) holds it
as a word. A package ``__init__`` that re-exports it counts only when a third file uses it
too. Each line: the module, the name, and how often the module itself mentions it (2: its
definition and its ``__all__`` entry, so nothing calls it). Exit status 1 when any is found.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

_TEXT = (".py", ".pyi", ".md", ".toml", ".yml", ".yaml", ".txt", ".cfg", ".c", ".h", ".sh")


def _tracked(root: Path) -> dict[str, str]:
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files"], capture_output=True, text=True, check=True
    ).stdout.split()
    texts = {}
    for name in listed:
        if name.endswith(_TEXT) or name.endswith("Makefile"):
            try:
                texts[name] = (root / name).read_text(encoding="utf-8")
            except (UnicodeDecodeError, FileNotFoundError):
                continue
    return texts


def _exported(text: str) -> list[str]:
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            try:
                return [str(n) for n in ast.literal_eval(value)]
            except ValueError:
                return []
    return []


def dead_exports(root: Path) -> list[tuple[str, str, int]]:
    """(module file, name, mentions in the module) for every unused exported name."""
    texts = _tracked(root)
    modules = {
        f: _exported(t)
        for f, t in texts.items()
        if f.startswith("pybloom_async/") and f.endswith(".py")
    }
    found = []
    for module, names in sorted(modules.items()):
        for name in names:
            word = re.compile(rf"\b{re.escape(name)}\b")
            users = [f for f, t in texts.items() if f != module and word.search(t)]
            used = any(
                not (f.endswith("__init__.py") and name in modules.get(f, []))
                or any(g not in (f, module) for g in users)
                for f in users
            )
            if not used:
                found.append((module, name, len(word.findall(texts[module]))))
    return found


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    found = dead_exports(root)
    for module, name, mentions in found:
        print(f"{module}\t{name}\t{mentions}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
