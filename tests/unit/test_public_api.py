"""The public surface is a list this test checks, not whatever the facade happens to hold.

``pybloom_async.__all__`` is the public API (trio's ``_tests/test_exports.py`` idea):

* every name in it imports, and ``from pybloom_async import *`` gives exactly those;
* nothing else in the facade is public by accident (a name not starting with ``_`` is in
  ``__all__`` or is one of the package's own submodules);
* every name is documented: a docstring of its own (``#:`` comment for constants) and a
  ``::: pybloom_async.NAME`` entry on an API reference page (docs/reference/), and the
  reference documents nothing else from the facade;
* every exception of the hierarchy is exported (the docstrings name them all);
* twins follow one rule: ``X`` is a coroutine function, ``X_sync`` the blocking twin;
* entry points are annotated with what they return (pyarrow types included), never ``Any``.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import typing
from collections.abc import AsyncGenerator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import pybloom_async
from pybloom_async import errors

ROOT = Path(pybloom_async.__file__).parent.parent
REFERENCE = ROOT / "docs" / "reference"
ROLES = ROOT / "docs" / "_ext" / "sphinx_roles.py"
PUBLIC = list(pybloom_async.__all__)
#: Modules beside the facade that the reference documents whole (the Spark data source and
#: jobs run where PySpark is, so the facade does not import them).
PUBLIC_MODULES = {"pybloom_async.spark"}
#: Coroutine functions without a blocking twin, and why.
NO_TWIN = {
    "lookup_batches": "an async generator: streaming batches has no blocking form",
    "add_bloom_filters_async": "the deprecated old name of add_bloom_filters",
}
DEPRECATED = {"add_bloom_filters_async": "add_bloom_filters"}

needs_docs = pytest.mark.skipif(
    not (REFERENCE.is_dir() and ROLES.is_file()), reason="docs/ is not beside the package"
)


def _roles() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sphinx_roles", ROLES)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- what is public -------------------------------------------------------------------


def test_every_name_in_all_imports() -> None:
    assert len(PUBLIC) == len(set(PUBLIC)), "a name is twice in __all__"
    missing = [name for name in PUBLIC if not hasattr(pybloom_async, name)]
    assert not missing
    namespace: dict[str, Any] = {}
    exec("from pybloom_async import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(PUBLIC)


def accidental(module: ModuleType) -> list[str]:
    """Public-looking names of a facade that its ``__all__`` does not list; the package's
    own submodules (bound by importing them) are not names the facade defines."""
    return sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and name not in module.__all__
        and not (isinstance(value, ModuleType) and value.__name__ == f"{module.__name__}.{name}")
    )


def test_nothing_else_is_public_by_accident() -> None:
    assert accidental(pybloom_async) == []


def test_the_accident_check_finds_what_it_looks_for() -> None:
    fake = ModuleType("fake")
    fake.__all__ = ["kept"]  # type: ignore[attr-defined]
    fake.kept = fake.logging = fake._private = 1  # type: ignore[attr-defined]
    fake.sub = ModuleType("fake.sub")  # type: ignore[attr-defined]
    fake.json = ModuleType("json")  # type: ignore[attr-defined]
    assert accidental(fake) == ["json", "logging"]


# ---- documented -----------------------------------------------------------------------


def own_docstring(obj: object) -> str | None:
    """The object's own docstring: not one a dataclass or a base class made up for it."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    if not isinstance(doc, str) or not doc.strip():
        return None
    name = getattr(obj, "__name__", "")
    if inspect.isclass(obj) and doc.startswith(f"{name}("):
        return None  # dataclasses write the signature when a class has no docstring
    return doc


@needs_docs
def test_every_public_name_has_its_own_documentation() -> None:
    roles = _roles()
    undocumented = []
    for name in PUBLIC:
        obj = getattr(pybloom_async, name)
        if inspect.isclass(obj) or callable(obj):
            doc = own_docstring(obj)
        else:  # constants: the #: comment above their assignment, wherever it is
            doc = roles.attribute_doc("pybloom_async", name)
        if not doc:
            undocumented.append(name)
    assert undocumented == []


def reference_entries(pages: list[Path]) -> set[str]:
    """The objects the reference pages render (``::: pybloom_async.lookup``)."""
    found = set()
    for page in pages:
        found.update(re.findall(r"^::: ([\w.]+)\s*$", page.read_text(), flags=re.M))
    return found


@needs_docs
def test_the_api_reference_documents_exactly_the_public_names() -> None:
    entries = reference_entries(sorted(REFERENCE.glob("*.md")))
    modules = entries & PUBLIC_MODULES
    facade = {e.removeprefix("pybloom_async.") for e in entries - modules if e.count(".") == 1}
    assert sorted(set(PUBLIC) - facade) == [], "public names missing from docs/reference/"
    assert sorted(facade - set(PUBLIC)) == [], "the reference documents non-public names"
    assert modules == PUBLIC_MODULES
    assert {e for e in entries - modules if e.count(".") != 1} == set()


def test_own_docstring_sees_through_made_up_ones() -> None:
    from dataclasses import dataclass

    @dataclass
    class Bare:
        x: int

    class Child(errors.PyBloomError):
        pass

    assert own_docstring(Bare) is None
    assert own_docstring(Child) is None
    assert own_docstring(errors.PyBloomError)


# ---- exceptions -----------------------------------------------------------------------


def test_every_error_of_the_hierarchy_is_exported() -> None:
    defined = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, errors.PyBloomError)
    }
    assert sorted(defined - set(PUBLIC)) == []
    assert pybloom_async.InvalidArgumentError is errors.InvalidArgumentError


# ---- twins ----------------------------------------------------------------------------


def is_async(obj: object) -> bool:
    return inspect.iscoroutinefunction(obj) or inspect.isasyncgenfunction(obj)


def test_twins_follow_one_rule() -> None:
    """``X`` is awaited, ``X_sync`` blocks; no other spelling of a twin is public."""
    for name in PUBLIC:
        obj = getattr(pybloom_async, name)
        if name.endswith("_sync"):
            model = getattr(pybloom_async, name.removesuffix("_sync"), None)
            assert is_async(model), f"{name} has no coroutine function to twin"
            assert not is_async(obj), f"{name} must block, not be awaited"
        elif is_async(obj) and name not in NO_TWIN:
            assert f"{name}_sync" in PUBLIC, f"{name} has no blocking twin"
        assert not name.endswith("_async") or name in DEPRECATED, f"{name}: X and X_sync"


@pytest.mark.anyio
async def test_deprecated_names_warn_naming_the_new_one(tmp_path: Path) -> None:
    for old, new in DEPRECATED.items():
        with (
            pytest.warns(DeprecationWarning, match=rf"await {new}\(\) instead"),
            pytest.raises(pybloom_async.SourceNotFoundError),
        ):
            await getattr(pybloom_async, old)(tmp_path / "absent.parquet", "id")


# ---- return annotations ---------------------------------------------------------------


def returns(function: Any, model: Any = None) -> Any:
    """What ``function`` is annotated to return, evaluated where its model (the coroutine
    function a twin was made from) is defined, with pyarrow's names available."""
    import pyarrow
    import pyarrow.dataset

    home = inspect.getmodule(model or function)
    names = {**vars(home), "pa": pyarrow, "ds": pyarrow.dataset}
    annotation = inspect.signature(function).return_annotation
    return eval(annotation, names) if isinstance(annotation, str) else annotation


def test_no_public_function_returns_any() -> None:
    vague = []
    for name in PUBLIC:
        obj = getattr(pybloom_async, name)
        if callable(obj) and not inspect.isclass(obj):
            annotation = inspect.signature(obj).return_annotation
            if annotation in ("Any", typing.Any, inspect.Signature.empty):
                vague.append(name)
    assert vague == []


def test_rows_and_datasets_are_annotated_with_pyarrow_types() -> None:
    import pyarrow as pa
    import pyarrow.dataset as ds

    from pybloom_async.rows import api, dataset

    assert returns(pybloom_async.lookup) is pa.Table
    assert returns(pybloom_async.lookup_sync, api.lookup) is pa.Table
    assert returns(pybloom_async.pruned_dataset) is ds.Dataset
    assert returns(pybloom_async.pruned_dataset_sync, dataset.pruned_dataset) is ds.Dataset
    assert returns(pybloom_async.lookup_batches) == AsyncGenerator[pa.RecordBatch, None]


def test_importing_the_package_does_not_import_pyarrow() -> None:
    """The annotations name pyarrow under TYPE_CHECKING only: importing stays light."""
    import subprocess
    import sys

    code = "import sys, pybloom_async; print('pyarrow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
