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
import functools
import importlib.util
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
ROLES = DOCS / "_ext" / "sphinx_roles.py"

pytestmark = pytest.mark.skipif(
    not (ARCHITECTURE.is_file() and ROLES.is_file() and README.is_file()),
    reason="docs/ is not beside the package",
)

# A dotted name starting at the package, not part of a path (csrc/include/pybloom_async.h).
DOTTED = re.compile(r"(?<![\w/.-])pybloom_async(?:\.[A-Za-z_]\w*)+")
# The files of the package the tree lists (generated build products are not).
PACKAGE_SUFFIXES = {".py", ".pyi", ".typed"}


# ---- resolving names: the site's own resolver (docs/_ext/sphinx_roles.py) ------------


@functools.cache
def roles() -> ModuleType:
    """The resolver, loaded on first use (the module is collected where docs/ is absent)."""
    spec = importlib.util.spec_from_file_location("sphinx_roles", ROLES)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- where the references are ---------------------------------------------------------


@dataclass(frozen=True)
class Docstring:
    where: str  # path:line
    text: str
    module: str
    qualname: str  # the classes and function it documents, "" for the module


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def docstrings(root: Path = PACKAGE) -> Iterator[Docstring]:
    """Every module, class and function docstring of the package."""
    for path in sorted(root.rglob("*.py")):
        yield from _docstrings_of(ast.parse(path.read_text()), path, module_name(path, root), "")


def _docstrings_of(node: ast.AST, path: Path, module: str, qualname: str) -> Iterator[Docstring]:
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        text = ast.get_docstring(node, clean=False)
        if text:
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 1)}"
            yield Docstring(where, text, module, qualname)
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = f"{qualname}.{child.name}" if qualname else child.name
            yield from _docstrings_of(child, path, module, inner)


def pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


# ---- the checks -----------------------------------------------------------------------


def dotted_problems(where: str, text: str) -> list[str]:
    wrong = []
    for match in DOTTED.finditer(text):
        found, _ = roles().resolve_absolute(match.group(0))
        if not found:
            wrong.append(f"{where}: {match.group(0)}")
    return wrong


def role_problems(doc: Docstring) -> list[str]:
    wrong = []
    scopes, package = roles().scopes_of(doc.module, doc.qualname)
    for role, raw in roles().ROLE.findall(doc.text):
        target = roles().role_target(raw)
        found, obj = roles().resolve_role(target, scopes, package)
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


#: An import in a page's example: ``from pybloom_async.x import``, ``import pybloom_async.x``.
EXAMPLE_IMPORT = re.compile(r"^\s*(?:from|import) (pybloom_async(?:\.\w+)*)", flags=re.M)


def private_imports_in(text: str) -> list[str]:
    """The modules an example imports that are not a facade (the layers are internal)."""
    return [
        m for m in EXAMPLE_IMPORT.findall(text) if m not in ("pybloom_async", "pybloom_async.spark")
    ]


def test_examples_import_from_the_public_path() -> None:
    wrong = [f"{page.name}: {m}" for page in pages() for m in private_imports_in(page.read_text())]
    assert not wrong, "examples import internal modules:\n" + "\n".join(wrong)
    example = "from pybloom_async import col\nimport pybloom_async.spark\n  import pybloom_async.io"
    assert private_imports_in(example) == ["pybloom_async.io"]


def test_parameters_documented_together_keep_their_own_types() -> None:
    """``run, **keywords:`` documents two parameters: the reference gives each its own
    annotation and default, where Griffe gives ``**keywords`` those of ``run``."""
    griffe = pytest.importorskip("griffe")
    extensions = griffe.load_extensions(str(ROLES))
    api = griffe.load(
        "pybloom_async.rows.api",
        force_inspection=True,
        extensions=extensions,
        docstring_parser="numpy",
    )
    (section,) = [s for s in api["lookup"].docstring.parsed if s.kind.value == "parameters"]
    table = {p.name: (str(p.annotation), p.value) for p in section.value}
    assert table["run"] == ("RunOptions | None", "None")
    assert table["**keywords"] == ("Unpack[LookupKeywords]", "{}")
    assert table["where"] == ("Predicate | str", None)  # required


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


def test_every_chart_is_shown_on_a_page_of_the_site() -> None:
    """The charts live in docs/img/; a chart no page shows is a figure lost."""
    shown = {
        (page.parent / link).resolve()
        for page in DOCS.rglob("*.md")
        for link in local_links(page.read_text())
    }
    unshown = [p.name for p in sorted((DOCS / "img").glob("*.png")) if p.resolve() not in shown]
    assert unshown == []


# ---- the checks themselves ------------------------------------------------------------


def test_each_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    """Stale names, roles, tree entries and links: each check reports them."""
    text = "See :mod:`pybloom_async.lookup` and pybloom_async.io.sources.StoreOptions."
    assert dotted_problems("x", text) == ["x: pybloom_async.io.sources.StoreOptions"]
    doc = Docstring(
        "x", text + " :func:`nothing_here`, :func:`~.base.FileInfo`", "pybloom_async.io.local", ""
    )
    assert role_problems(doc) == [
        "x: :mod:`pybloom_async.lookup` is not a module",
        "x: :func:`nothing_here` names nothing",
    ]
    wrapped = Docstring(
        "x", ":func:`pybloom_async.pruning.\n   leaves.encode_literal`", "pybloom_async", ""
    )
    assert role_problems(wrapped) == []
    # The site writes each role as a link to the name it is rendered under, or as code.
    scopes, package = roles().scopes_of("pybloom_async.read.reader", "OpenedFile")
    text = ":attr:`stats`, :func:`~pybloom_async.rows.api.lookup`, :meth:`BloomReader.footer`"
    assert roles().rewrite(text + ", :func:`gone`", scopes, package) == (
        '<code>stats</code>, <autoref identifier="pybloom_async.lookup" optional>'
        "<code>lookup</code></autoref>, <autoref "
        'identifier="pybloom_async.BloomReader.footer" optional><code>BloomReader.footer</code>'
        "</autoref>, <code>gone</code>"
    )

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
