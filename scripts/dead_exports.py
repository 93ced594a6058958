"""List the package's dead names: public ones no other file uses, internal ones nothing uses.

    python scripts/dead_exports.py [ROOT]

Only the facades (``pybloom_async`` and ``pybloom_async.spark``) declare ``__all__``: the
layers are internal, and their top-level names (functions, classes, constants not
``_``-prefixed) are what the other layers import. A name is dead when:

* it is in a facade's ``__all__`` and no other tracked file (package, tests, bench,
  docs, ...) holds it as a word;
* it is defined at a module's top level, the module mentions it once (its definition)
  and no other tracked file holds it as a word.

A package ``__init__`` that re-exports a name (``from .x import name as name``) counts as a
user only when a third file uses it too. Each line: the module, the name, and how often
the module itself mentions it. Exit status 1 when any is found.
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


def _reexported(text: str) -> list[str]:
    """The names a module imports to pass on: ``__all__``, or ``from .x import y as y``."""
    names = _exported(text)
    for node in ast.parse(text).body:
        if isinstance(node, ast.ImportFrom):
            names += [a.name for a in node.names if a.asname == a.name]
    return names


def _defined(text: str) -> list[str]:
    """The module's own top-level names that are not ``_``-prefixed."""
    names = []
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in names if not n.startswith("_")]


def dead_exports(root: Path) -> list[tuple[str, str, int]]:
    """(module file, name, mentions in the module) for every dead name."""
    texts = _tracked(root)
    sources = {
        f: t for f, t in texts.items() if f.startswith("pybloom_async/") and f.endswith(".py")
    }
    passed_on = {f: _reexported(t) for f, t in sources.items()}
    found = []
    for module, text in sorted(sources.items()):
        exported = _exported(text)
        for name in sorted(set(exported) | set(_defined(text))):
            word = re.compile(rf"\b{re.escape(name)}\b")
            mentions = len(word.findall(text))
            if name not in exported and mentions > 1:
                continue  # an internal name its own module uses
            users = [f for f, t in texts.items() if f != module and word.search(t)]
            used = any(
                not (f.endswith("__init__.py") and name in passed_on.get(f, []))
                or any(g not in (f, module) for g in users)
                for f in users
            )
            if not used:
                found.append((module, name, mentions))
    return found


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    found = dead_exports(root)
    for module, name, mentions in found:
        print(f"{module}\t{name}\t{mentions}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
