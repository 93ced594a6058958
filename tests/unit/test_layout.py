"""The layout's rules, checked on the package's own source (docs/architecture.md, "Layers").

The ranks are read from the table in ``docs/architecture.md``, so the page and the code
cannot drift apart: a module may import its own layer and lower ranks only (not a
sibling of the same rank; rank 0's modules are one layer), never another module's
``_private`` name; no file of the
package is over 600 lines, and a function over 80 lines says why in a ``# Long
because:`` comment right above it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import pybloom_async

PACKAGE = Path(pybloom_async.__file__).parent
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
#: Imports the page allows by name: the demo is example code and imports the facade.
ALLOWED = {("apps.demo", "__init__")}

pytestmark = pytest.mark.skipif(
    not ARCHITECTURE.is_file(), reason="docs/architecture.md is not beside the package"
)


def layer_ranks() -> dict[str, int]:
    """Each layer's rank, from the table of the page's "Layers" section."""
    text = ARCHITECTURE.read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    ranks: dict[str, int] = {}
    for rank, cell in re.findall(r"^\| (\d+) \| ([^|]+) \|", section, flags=re.M):
        for name in re.findall(r"`([^`]+)`", cell):
            ranks[name.rstrip("/")] = int(rank)
    assert ranks, "no layer table found in docs/architecture.md"
    return ranks


def sources(root: Path = PACKAGE) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def module_name(path: Path, root: Path = PACKAGE) -> str:
    """``index.prune`` for ``<root>/index/prune.py``; ``__init__`` for the facade."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def layer(module: str) -> str:
    return module.split(".", 1)[0]


def same_layer(a: str, b: str, ranks: dict[str, int]) -> bool:
    """One layer: the same subpackage, or two of rank 0's modules (the vocabulary)."""
    return a == b or ranks[a] == ranks[b] == 0


@dataclass(frozen=True)
class Import:
    line: int
    target: str  # the module imported from, below the package ("" for the package)
    names: tuple[str, ...]


def imports(path: Path, root: Path = PACKAGE) -> list[Import]:
    """The package-internal imports of one file, relative ones resolved (lazy ones too)."""
    here = module_name(path, root)
    if path.name == "__init__.py":
        package = [] if here == "__init__" else here.split(".")
    else:
        package = here.split(".")[:-1]
    found: list[Import] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            elif node.module and node.module.split(".")[0] == "pybloom_async":
                target = node.module.partition(".")[2]
            else:
                continue
            found.append(Import(node.lineno, target, tuple(a.name for a in node.names)))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "pybloom_async":
                    found.append(Import(node.lineno, alias.name.partition(".")[2], ()))
    return found


def targets(imp: Import, ranks: dict[str, int]) -> list[str]:
    """The layers one import reaches: ``from pybloom_async import errors`` reaches
    ``errors``; ``from pybloom_async import prune`` reaches the facade."""
    if imp.target:
        return [layer(imp.target)]
    return [name if name in ranks else "__init__" for name in imp.names] or ["__init__"]


def upward_imports(root: Path, ranks: dict[str, int]) -> list[str]:
    wrong = []
    for path in sources(root):
        here = module_name(path, root)
        mine = layer(here)
        for imp in imports(path, root):
            for there in targets(imp, ranks):
                if same_layer(there, mine, ranks) or (here, there) in ALLOWED:
                    continue
                if ranks[there] >= ranks[mine]:
                    wrong.append(
                        f"{path.relative_to(root)}:{imp.line}: {mine} (rank {ranks[mine]}) "
                        f"imports {there} (rank {ranks[there]})"
                    )
    return wrong


def import_graph(root: Path) -> dict[str, set[str]]:
    """Each module's package-internal imports (lazy ones too), as the modules they load."""
    modules = {module_name(p, root): p for p in sources(root)}
    graph: dict[str, set[str]] = {}
    for here, path in modules.items():
        graph[here] = set()
        for imp in imports(path, root):
            # ``from .x import y`` loads ``x``, and ``x.y`` where ``y`` is a module.
            loaded = [imp.target or "__init__"]
            loaded += [f"{imp.target}.{n}" if imp.target else n for n in imp.names]
            graph[here] |= {m for m in loaded if m in modules and m != here}
    return graph


def import_cycles(root: Path) -> list[list[str]]:
    """The import graph's cycles: its strongly connected components of two or more modules."""
    graph = import_graph(root)
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        order[v] = low[v] = len(order)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in order:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            component = [stack.pop()]
            while component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in order:
            visit(v)
    return sorted(cycles)


def private_imports(root: Path) -> list[str]:
    wrong = []
    for path in sources(root):
        for imp in imports(path, root):
            private = [n for n in imp.names if n.startswith("_") and not n.startswith("__")]
            if private:
                wrong.append(f"{path.relative_to(root)}:{imp.line}: {', '.join(private)}")
    return wrong


def long_files(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): n
        for p in sources(root)
        if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES
    }


def long_functions(root: Path) -> list[str]:
    """Functions over MAX_FUNCTION_LINES (decorators included) without a comment saying why."""
    wrong = []
    for path in sources(root):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines), str(path))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            assert node.end_lineno is not None
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = node.end_lineno - first + 1
            if length <= MAX_FUNCTION_LINES:
                continue
            above = first - 2  # the line above the function, 0-based
            comment: list[str] = []
            while above >= 0 and lines[above].strip().startswith("#"):
                comment.append(lines[above].strip())
                above -= 1
            if not any(c.startswith("# Long because") for c in comment):
                wrong.append(f"{path.relative_to(root)}:{node.lineno}: {node.name} ({length})")
    return wrong


def test_the_page_names_every_layer() -> None:
    missing = sorted({layer(module_name(p)) for p in sources()} - set(layer_ranks()))
    assert not missing, f"layers missing from docs/architecture.md: {missing}"


def test_imports_point_down_only() -> None:
    wrong = upward_imports(PACKAGE, layer_ranks())
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle_spans_two_layers() -> None:
    """A cycle stays inside one subpackage; the vocabulary's predicate package has none."""
    wrong = [c for c in import_cycles(PACKAGE) if len({layer(m) for m in c}) > 1]
    wrong += [c for c in import_cycles(PACKAGE) if layer(c[0]) == "predicate"]
    assert not wrong, wrong


def test_no_private_name_crosses_modules() -> None:
    wrong = private_imports(PACKAGE)
    assert not wrong, "\n".join(wrong)


def test_no_file_is_over_600_lines() -> None:
    assert not long_files(PACKAGE)


def test_long_functions_say_why() -> None:
    wrong = long_functions(PACKAGE)
    assert not wrong, "functions over 80 lines without '# Long because':\n" + "\n".join(wrong)


def test_each_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    """A small package breaking each rule once: every check names the place."""
    root = tmp_path / "pkg"
    (root / "io").mkdir(parents=True)
    (root / "pruning").mkdir()
    (root / "__init__.py").write_text("from .pruning.api import prune\n")
    (root / "errors.py").write_text("class E(Exception): ...\n")
    (root / "io" / "__init__.py").write_text("")
    (root / "io" / "local.py").write_text(
        "from ..errors import E\n"
        "def f() -> None:\n"
        "    from ..pruning.api import prune  # upward, and lazy\n"
    )
    (root / "pruning" / "__init__.py").write_text("")
    body = "".join(f"    x{i} = {i}\n" for i in range(85))
    (root / "pruning" / "api.py").write_text(
        "from ..io.local import _open, f\n"
        "import pybloom_async.io.local\n"
        f"def prune() -> None:\n{body}"
        f"# Long because: a test of the comment.\ndef fine() -> None:\n{body}" + "\n" * 600
    )
    ranks = {"errors": 0, "io": 4, "pruning": 6, "__init__": 11}
    assert upward_imports(root, ranks) == ["io/local.py:3: io (rank 4) imports pruning (rank 6)"]
    assert private_imports(root) == ["pruning/api.py:1: _open"]
    assert import_cycles(root) == [["io.local", "pruning.api"]]
    assert list(long_files(root)) == ["pruning/api.py"]
    assert long_functions(root) == ["pruning/api.py:3: prune (86)"]
    assert [i.target for i in imports(root / "pruning" / "api.py", root)] == ["io.local"] * 2
