"""Sphinx roles in the package's docstrings, as links in the API reference.

The docstrings cross-reference with Sphinx roles (``:func:`lookup```,
``:class:`~pybloom_async.io.base.FileInfo```, ``:mod:`.pages```), which Markdown does
not know. This Griffe extension resolves each role from where it is written (the
class, the module, its subpackage and sibling modules, then the facade and the
builtins: :func:`resolve_role`) and writes an optional cross-reference in its place:
a link when the object is rendered on some page of the site, plain code otherwise.

``tests/unit/test_docs.py`` uses the same resolver to fail on a role that names
nothing, so a renamed function breaks the suite, not the reader.
"""

from __future__ import annotations

import ast
import builtins
import functools
import html
import importlib
import inspect
import pkgutil
import re
from types import ModuleType
from typing import Any

# :role:`target`, :role:`~target`, :role:`title <target>`; a target may wrap over lines.
ROLE = re.compile(r":(\w+):`([^`]+)`")
FACADE = "pybloom_async"
# Parameters documented together, numpydoc's "options, stats:" line ("run, **keywords:").
SHARED = re.compile(r"^[ \t]*\**\w+(?:, \**\w+)+:[ \t]*$", flags=re.M)


def _attribute(obj: object, name: str) -> tuple[bool, object]:
    """``obj.name``, or a field declared without a class-level value (dataclass, TypedDict,
    an attribute a method sets on ``self``)."""
    try:
        return True, getattr(obj, name)
    except AttributeError:
        pass
    if name in getattr(obj, "__dataclass_fields__", {}) or name in getattr(
        obj, "__annotations__", {}
    ):
        return True, None
    if inspect.isclass(obj):
        # The methods' source, not the class's: inspect finds a class by its __module__,
        # the facade's for the classes it exports, and a method by its code's file.
        for cls in obj.__mro__:
            for member in vars(cls).values():
                function = getattr(member, "fget", None) or getattr(member, "__func__", member)
                try:
                    source = inspect.getsource(function)
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
    a bare or dotted name is looked up in ``scopes`` (innermost first), then the facade,
    then the builtins, then imported as an absolute name.
    """
    if target.startswith("."):
        dots = len(target) - len(target.lstrip("."))
        base = package.split(".")
        base = base[: len(base) - dots + 1]
        return resolve_absolute(".".join([*base, target[dots:]]))
    parts = target.split(".")
    for scope in [*scopes, importlib.import_module(FACADE), builtins]:
        found, obj = _walk(scope, parts)
        if found:
            return found, obj
    return resolve_absolute(target)


def role_target(text: str) -> str:
    """The object a role names: ``~``, a ``title <target>`` form and ``()`` removed."""
    if "<" in text:
        text = text.split("<", 1)[1].rstrip(">")
    return re.sub(r"\s+", "", text).lstrip("~").removesuffix("()")


def scopes_of(module_name: str, qualname: str = "") -> tuple[list[object], str]:
    """Where a docstring of ``module_name`` (inside the classes of ``qualname``) looks names
    up, innermost first, and the package its relative roles start from."""
    module = importlib.import_module(module_name)
    is_package = hasattr(module, "__path__")
    package = module_name if is_package else module_name.rpartition(".")[0]
    scopes: list[object] = [module]
    obj: object = module
    for name in qualname.split(".") if qualname else []:
        obj = getattr(obj, name, None)
        if inspect.isclass(obj):
            scopes.insert(0, obj)
    if package:
        parent = importlib.import_module(package)
        scopes.append(parent)
        for info in pkgutil.iter_modules(getattr(parent, "__path__", [])):
            sibling = importlib.import_module(f"{package}.{info.name}")
            if sibling is not module:
                scopes.append(sibling)
    return scopes, package


def identifier(obj: object, target: str) -> str:
    """The path the site renders ``obj`` under: the facade's name when it exports it (or
    the class that holds it)."""
    facade = importlib.import_module(FACADE)
    exported = {id(getattr(facade, name)): name for name in getattr(facade, "__all__", [])}
    if id(obj) in exported:
        return f"{FACADE}.{exported[id(obj)]}"
    if isinstance(obj, ModuleType):
        return obj.__name__
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not (isinstance(module, str) and isinstance(qualname, str)):
        return target
    owner, _, rest = qualname.partition(".")
    holder = getattr(importlib.import_module(module), owner, None)
    if rest and id(holder) in exported:
        return f"{FACADE}.{exported[id(holder)]}.{rest}"
    return f"{module}.{qualname}"


def rewrite(text: str, scopes: list[object], package: str) -> str:
    """Each role of ``text`` as an optional cross-reference (code when it names nothing)."""

    def replace(match: re.Match[str]) -> str:
        raw = match.group(2)
        target = role_target(raw)
        shown = target.rsplit(".", 1)[-1] if raw.lstrip().startswith("~") else target
        title = f"<code>{html.escape(shown)}</code>"
        found, obj = resolve_role(target, scopes, package)
        if not found or obj is None:
            return title
        ref = html.escape(identifier(obj, target), quote=True)
        return f'<autoref identifier="{ref}" optional>{title}</autoref>'

    return ROLE.sub(replace, text)


def _docstring_of_its_type(path: str, docstring: str) -> bool:
    """Whether an attribute's docstring is only the one of its value's class (a dataclass
    field whose default is an instance, documented as the class by inspection)."""
    found, value = resolve_absolute(path)
    if not found or value is None:
        return False
    own = inspect.getdoc(type(value)) or ""
    return bool(own) and inspect.cleandoc(docstring) == own


@functools.cache
def _parsed(module_name: str) -> tuple[Any, ast.Module, list[str]] | None:
    """A module, its source's syntax tree and lines (parsed once a build: every attribute
    of a module is looked up in them)."""
    module = importlib.import_module(module_name)
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return None
    return module, ast.parse(source), source.splitlines()


def attribute_doc(module_name: str, name: str) -> str | None:
    """The documentation of a module-level name: the ``#:`` comment above its assignment
    (Sphinx's convention, the package's), or a string right after it; a name the module
    imports is followed to the module it comes from."""
    parsed = _parsed(module_name)
    if parsed is None:
        return None
    module, tree, lines = parsed
    for i, node in enumerate(tree.body):
        if isinstance(node, ast.ImportFrom) and any(
            (a.asname or a.name) == name for a in node.names
        ):
            origin = next(a.name for a in node.names if (a.asname or a.name) == name)
            base = module_name if hasattr(module, "__path__") else module_name.rpartition(".")[0]
            parts = base.split(".")[: len(base.split(".")) - node.level + 1] if node.level else []
            if node.module:
                parts.append(node.module)
            return attribute_doc(".".join(parts), origin)
        targets = (
            node.targets if isinstance(node, ast.Assign)
            else [node.target] if isinstance(node, ast.AnnAssign) else []
        )  # fmt: skip
        if not any(isinstance(t, ast.Name) and t.id == name for t in targets):
            continue
        comment: list[str] = []
        line = node.lineno - 2
        while line >= 0 and lines[line].lstrip().startswith("#:"):
            comment.insert(0, lines[line].lstrip()[2:].strip())
            line -= 1
        if comment:
            return " ".join(comment)
        after = tree.body[i + 1] if i + 1 < len(tree.body) else None
        if (
            isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            return inspect.cleandoc(after.value.value)
        return None
    return None


try:
    from griffe import AliasResolutionError, CyclicAliasError, Docstring, Extension
except ImportError:  # the tests import the resolver without the docs tools
    pass
else:

    class SphinxRoles(Extension):
        """Rewrite the roles of every docstring once the package is loaded."""

        def on_object(self, *, obj: Any, **kwargs: Any) -> None:
            if obj.is_alias:
                return
            if obj.is_attribute and obj.parent is not None and obj.parent.is_module:
                text = attribute_doc(obj.parent.path, obj.name)
                if text is not None:  # inspection sees values, not their comments
                    obj.docstring = Docstring(text, parent=obj)
                    return
            if obj.docstring is None:
                return
            if obj.is_attribute and _docstring_of_its_type(obj.path, obj.docstring.value):
                obj.docstring = None  # inspection's artefact: the value's class documented
                return
            if ROLE.search(obj.docstring.value):
                module = obj.module.path
                qualname = obj.path[len(module) + 1 :] if obj.path != module else ""
                scopes, package = scopes_of(module, qualname)
                obj.docstring.value = rewrite(obj.docstring.value, scopes, package)
            if (obj.is_function or obj.is_class) and SHARED.search(obj.docstring.value):
                _own_annotations(obj)

    def _own_annotations(obj: Any) -> None:
        """Each parameter documented with its own annotation and default.

        The docstrings document related parameters together (``options, stats:``, ``run,
        **keywords:``), as numpydoc allows; Griffe gives all of them the first one's
        annotation and default (``**keywords`` would read ``RunOptions | None = None``).
        """
        try:
            signature = {p.name: p for p in obj.parameters}
        except (AttributeError, AliasResolutionError, CyclicAliasError):
            return  # no parameters, or an __init__ from outside the package (Protocol)
        for section in obj.docstring.parsed:
            if section.kind.value != "parameters":
                continue
            for parameter in section.value:
                own = signature.get(parameter.name.lstrip("*"))
                if own is not None:
                    parameter.annotation = own.annotation
                    # None reads "required": *args and **keywords default to none given.
                    empty = {"variadic positional": "()", "variadic keyword": "{}"}
                    parameter.value = empty.get(own.kind.value, own.default)
