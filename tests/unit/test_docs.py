"""Documentation that cannot rot: every reference it makes names something that exists.

* Every dotted ``pybloom_async.…`` name in a docstring of the package, in the README or
  in a page of ``docs/`` imports, or is an attribute of what imports (``:mod:`` roles
  must name a module).
* Every Sphinx role in a docstring (``:func:`lookup```, ``:class:`~.io.base.FileInfo```,
  ``:mod:`.pages```) resolves from where it is written: the class, the module, its
  subpackage and sibling modules, then the facade and the builtins.
* The tree in ``docs/architecture.md`` ("The tree") lists every file of the package,
  and every file and folder it lists exists.
* The README keeps its two quick-start commands, and every file it links to exists.

``make docs`` (``mkdocs build --strict``) checks the links between the site's pages and
the API reference directives; these tests check what a site build cannot see.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

import pybloom_async

PACKAGE = Path(pybloom_async.__file__).parent
ROOT = PACKAGE.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
ARCHITECTURE = DOCS / "architecture.md"

pytestmark = pytest.mark.skipif(
    not (ARCHITECTURE.is_file() and README.is_file()), reason="docs/ is not beside the package"
)

# A dotted name starting at the package, not part of a path (csrc/include/pybloom_async.h).
DOTTED = re.compile(r"(?<![\w/.-])pybloom_async(?:\.[A-Za-z_]\w*)+")
# :role:`target`, :role:`~target`, :role:`title <target>`; a target may wrap over lines.
ROLE = re.compile(r":(\w+):`([^`]+)`")
# The files of the package the tree lists (generated build products are not).
PACKAGE_SUFFIXES = {".py", ".pyi", ".typed"}


# ---- resolving names ------------------------------------------------------------------


def _attribute(obj: object, name: str) -> tuple[bool, object]:
    """``obj.name``, or a field declared without a class-level value (dataclass, TypedDict)."""
    try:
        return True, getattr(obj, name)
    except AttributeError:
        pass
    if name in getattr(obj, "__dataclass_fields__", {}) or name in getattr(
        obj, "__annotations__", {}
    ):
        return True, None
    if inspect.isclass(obj):
        # An instance attribute set in a method (self.name = ... / self.name: T = ...).
        for cls in obj.__mro__:
            try:
                source = inspect.getsource(cls)
            except (OSError, TypeError):
                continue
            if re.search(rf"self\.{re.escape(name)}\s*[:=]", source):
                return True, None
    return False, None


def _walk(obj: object, parts: list[str]) -> tuple[bool, object]:
    for name in parts:
        found, obj = _attribute(obj, name)
        if not found:
            return False, None
    return True, obj


def resolve_absolute(dotted: str) -> tuple[bool, object]:
    """Import the longest module prefix of ``dotted``, then take attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        return _walk(module, parts[i:])
    return False, None


def resolve_role(target: str, scopes: list[object], package: str) -> tuple[bool, object]:
    """A role's target as Sphinx would look it up from a docstring.

    ``.x.y`` is relative to ``package`` (one dot: the package itself, as in an import);
    ``pybloom_async.x`` and other importable dotted names are absolute; a bare name is
    looked up in ``scopes`` (innermost first), then the facade, then the builtins.
    """
    if target.startswith("."):
        dots = len(target) - len(target.lstrip("."))
        base = package.split(".")
        base = base[: len(base) - dots + 1]
        return resolve_absolute(".".join([*base, target[dots:]]))
    parts = target.split(".")
    for scope in [*scopes, pybloom_async, builtins]:
        found, obj = _walk(scope, parts)
        if found:
            return found, obj
    return resolve_absolute(target)


def role_target(text: str) -> str:
    """The object a role names: ``~`` and a ``title <target>`` form removed, calls too."""
    text = re.sub(r"\s+", "", text.split("<", 1)[-1].rstrip(">")) if "<" in text else text
    return re.sub(r"\s+", "", text).lstrip("~").removesuffix("()")


# ---- where the references are ---------------------------------------------------------


@dataclass(frozen=True)
class Docstring:
    where: str  # path:line
    text: str
    scopes: tuple[object, ...]  # innermost first: classes, the module, its package, siblings
    package: str  # the package relative roles start from


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def docstrings(root: Path = PACKAGE) -> Iterator[Docstring]:
    """Every module, class and function docstring of the package, with its lookup scopes."""
    for path in sorted(root.rglob("*.py")):
        name = module_name(path, root)
        module = importlib.import_module(name)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        siblings = [
            importlib.import_module(f"{package}.{p.stem}")
            for p in sorted(path.parent.glob("*.py"))
            if p.stem != "__init__" and p != path
        ]
        outer: list[object] = [module, importlib.import_module(package), *siblings]
        yield from _docstrings_of(ast.parse(path.read_text()), path, outer, package)


def _docstrings_of(
    node: ast.AST, path: Path, scopes: list[object], package: str
) -> Iterator[Docstring]:
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        text = ast.get_docstring(node, clean=False)
        if text:
            line = getattr(node, "lineno", 1)
            yield Docstring(f"{path.relative_to(ROOT)}:{line}", text, tuple(scopes), package)
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            cls = next((getattr(s, child.name) for s in scopes if hasattr(s, child.name)), None)
            inner = [cls, *scopes] if inspect.isclass(cls) else scopes
            yield from _docstrings_of(child, path, inner, package)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _docstrings_of(child, path, scopes, package)


def pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


# ---- the checks -----------------------------------------------------------------------


def dotted_problems(where: str, text: str) -> list[str]:
    wrong = []
    for match in DOTTED.finditer(text):
        found, _ = resolve_absolute(match.group(0))
        if not found:
            wrong.append(f"{where}: {match.group(0)}")
    return wrong


def role_problems(doc: Docstring) -> list[str]:
    wrong = []
    for role, raw in ROLE.findall(doc.text):
        target = role_target(raw)
        found, obj = resolve_role(target, list(doc.scopes), doc.package)
        if not found:
            wrong.append(f"{doc.where}: :{role}:`{target}` names nothing")
        elif role == "mod" and not isinstance(obj, ModuleType):
            wrong.append(f"{doc.where}: :mod:`{target}` is not a module")
    return wrong


def test_dotted_names_in_docstrings_resolve() -> None:
    wrong = [p for doc in docstrings() for p in dotted_problems(doc.where, doc.text)]
    assert not wrong, "docstrings name what does not exist:\n" + "\n".join(wrong)


def test_dotted_names_in_pages_resolve() -> None:
    wrong = [p for page in pages() for p in dotted_problems(page.name, page.read_text())]
    assert not wrong, "pages name what does not exist:\n" + "\n".join(wrong)


def test_roles_in_docstrings_resolve() -> None:
    wrong = [p for doc in docstrings() for p in role_problems(doc)]
    assert not wrong, "docstring roles that resolve to nothing:\n" + "\n".join(wrong)


# ---- the tree in docs/architecture.md -------------------------------------------------


def tree_entries(page: str) -> set[str]:
    """The paths the page's tree lists (``pybloom_async/io/base.py``, ``csrc/core/``).

    An entry is a name ending in ``/`` or with a suffix, indented two spaces per level;
    a line indented deeper than an entry could be continues the description above.
    """
    block = page.split("## The tree", 1)[1].split("```", 2)[1]
    stack: list[str] = []
    entries = set()
    for line in block.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        name = line.split()[0]
        if indent % 2 or indent // 2 > len(stack):
            continue  # a description's second line
        if not (name.endswith("/") or "." in name):
            continue
        stack = stack[: indent // 2]
        path = "".join(stack) + name
        entries.add(path)
        if name.endswith("/"):
            stack.append(name)
    return entries


def listed_in_tree(entries: set[str], root: Path, package: Path) -> list[str]:
    """The package's files missing from the tree; a subpackage's ``__init__.py`` that only
    re-exports (docstring, imports, ``__all__``) may be left out."""
    missing = []
    for path in sorted(package.rglob("*")):
        if path.suffix not in PACKAGE_SUFFIXES or "__pycache__" in path.parts:
            continue
        relative = path.relative_to(root).as_posix()
        if relative in entries:
            continue
        if path.name == "__init__.py" and path.parent != package and _only_reexports(path):
            continue
        missing.append(relative)
    return missing


def _only_reexports(path: Path) -> bool:
    body = ast.parse(path.read_text()).body
    return all(
        isinstance(node, (ast.Import, ast.ImportFrom))
        or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
        or (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["__all__"]
        )
        for node in body
    )


def stale_in_tree(entries: set[str], root: Path) -> list[str]:
    return sorted(e for e in entries if not (root / e).exists())


def test_the_tree_lists_every_file_of_the_package() -> None:
    missing = listed_in_tree(tree_entries(ARCHITECTURE.read_text()), ROOT, PACKAGE)
    assert not missing, "docs/architecture.md's tree lacks:\n" + "\n".join(missing)


def test_every_entry_of_the_tree_exists() -> None:
    stale = stale_in_tree(tree_entries(ARCHITECTURE.read_text()), ROOT)
    assert not stale, "docs/architecture.md's tree lists what does not exist:\n" + "\n".join(stale)


# ---- the README -----------------------------------------------------------------------


def test_the_readme_quick_start_is_make_demo_and_make_test() -> None:
    """What CI and users run: the quick start's block holds both commands as they are."""
    text = README.read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    assert [c for c in commands if c.startswith("make")] == ["make demo", "make test"]


def local_links(text: str) -> list[str]:
    """Relative link and image targets of a Markdown text (inline and reference style)."""
    targets = re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(
        r"^\[[^\]]+\]:\s*(\S+)", text, flags=re.M
    )
    return [t.split("#", 1)[0] for t in targets if not re.match(r"[a-z]+:|#", t)]


def test_the_readme_links_to_files_that_exist() -> None:
    links = local_links(README.read_text())
    assert any(link.startswith("docs/img/") for link in links), "the README lost its chart"
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, f"the README links to missing files: {missing}"


# ---- the checks themselves ------------------------------------------------------------


def test_each_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    """Stale names, roles, tree entries and links: each check reports them."""
    text = "See :mod:`pybloom_async.lookup` and pybloom_async.io.sources.StoreOptions."
    assert dotted_problems("x", text) == ["x: pybloom_async.io.sources.StoreOptions"]
    roles = text + " :func:`nothing_here`, :func:`~.base.FileInfo`"
    doc = Docstring("x", roles, (), "pybloom_async.io")
    assert role_problems(doc) == [
        "x: :mod:`pybloom_async.lookup` is not a module",
        "x: :func:`nothing_here` names nothing",
    ]
    wrapped = Docstring("x", ":func:`pybloom_async.pruning.\n   leaves.encode_literal`", (), "")
    assert role_problems(wrapped) == []

    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    for name in ["__init__.py", "a.py", "sub/__init__.py", "sub/b.py", "sub/c.py"]:
        (package / name).write_text('"""Doc."""\n')
    (package / "sub" / "__init__.py").write_text("from .b import x\n__all__ = ['x']\n")
    page = (
        "## The tree\n\n```\npkg/\n  __init__.py   the facade\n  a.py          one\n"
        "                wrapped description: not an entry.py\n"
        "  sub/\n    b.py        two\n    gone.py     removed\n```\n"
    )
    entries = tree_entries(page)
    assert entries == {"pkg/", "pkg/__init__.py", "pkg/a.py", "pkg/sub/", "pkg/sub/b.py",
                       "pkg/sub/gone.py"}  # fmt: skip
    assert listed_in_tree(entries, tmp_path, package) == ["pkg/sub/c.py"]
    (package / "sub" / "__init__.py").write_text("x = 1\n")
    assert listed_in_tree(entries, tmp_path, package) == ["pkg/sub/__init__.py", "pkg/sub/c.py"]
    assert stale_in_tree(entries, tmp_path) == ["pkg/sub/gone.py"]
    assert local_links("![c](docs/img/a.png) [x](https://e.org) [y](g.md#s)\n[r]: h.md") == [
        "docs/img/a.png",
        "g.md",
        "h.md",
    ]
