"""The public surface is a list this test checks, not whatever the facade happens to hold.

``pybloom_async.__all__`` is the public API (trio's ``_tests/test_exports.py`` idea):

* the facades export exactly the names listed here, ``pybloom_async`` and
  ``pybloom_async.spark`` (a name added or removed is a decision, made in this file too);
* every name in it imports, and ``from pybloom_async import *`` gives exactly those;
* each class and function says it lives where users import it (``__module__`` is the
  facade), and is pickled by that path (Spark pickles settings, plans and predicates);
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
import pickle
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

#: The public API of ``pybloom_async``: one page of names.
FACADE = [
    "AddFiltersResult", "And", "Between", "BloomFilter64", "BloomFilterRead", "BloomReader",
    "ColumnNotFoundError", "CommitConflictError", "Compare", "DEFAULT_MAX_BYTES",
    "EncryptedFileError", "Eq", "EventLoopError", "FilterSizeError", "FilterState",
    "FilterTooLargeError", "Footer", "In", "IndexBuild", "IndexStaleError",
    "InvalidArgumentError", "InvalidFilterError", "IsNotNull", "IsNull", "LakeBuild",
    "LakeCompaction", "LookupOptions", "MIN_BYTES", "MissingDependencyError", "Not", "NotIn", "Or",
    "PaimonFileIndex", "PaimonIndexError", "ParquetFormatError", "PhysicalType", "Predicate",
    "PredicateError", "ProbeResult", "PyBloomError", "ReaderConfig", "Rule", "RunOptions",
    "SchemaMismatchError", "SourceError", "SourceNotFoundError", "SourceStats",
    "SplitBlockBloomFilter", "StoreOptions", "TableFiltersResult", "UnsupportedTypeError",
    "ValueEncodingError", "Verdict", "__version__", "add_bloom_filters",
    "add_bloom_filters_async", "add_bloom_filters_sync", "build_index", "build_index_sync",
    "build_lake_index", "build_lake_index_sync", "col", "compact_lake_index",
    "compact_lake_index_sync", "decode_header", "hash_values", "index_location",
    "is_paimon_file_index", "lookup", "lookup_batches", "lookup_sync", "optimal_num_bytes",
    "paimon_hash", "paimon_may_contain", "paimon_prune", "parse_paimon_file_index",
    "parse_predicate", "probe", "probe_sync", "prune", "prune_paimon", "prune_paimon_sync",
    "prune_sync", "prune_with_index", "prune_with_index_sync", "pruned_dataset",
    "pruned_dataset_sync", "read_bloom_filters", "read_bloom_filters_sync", "read_footer",
    "read_footer_sync", "read_paimon_file_index", "simd_backend", "write_paimon_file_index",
    "xxh64",
]  # fmt: skip
#: The public API of ``pybloom_async.spark``.
SPARK = [
    "DEFAULT_WRITER_MAX_BYTES", "PUSHDOWN_SETTING", "add_bloom_filters_on_spark",
    "add_filters_schema", "bloom_writer_options", "build_index_on_spark",
    "build_lake_index_on_spark", "index_build_schema", "lookup_on_spark", "prune_on_spark",
    "read_surviving", "register", "surviving_files", "verdict_schema", "writer_filter_bytes",
]  # fmt: skip


def facades() -> list[ModuleType]:
    import pybloom_async.spark

    return [pybloom_async, pybloom_async.spark]


def test_the_facades_export_exactly_the_listed_names() -> None:
    import pybloom_async.spark

    assert sorted(pybloom_async.__all__) == FACADE
    assert sorted(pybloom_async.spark.__all__) == SPARK


def test_each_public_name_lives_at_its_public_path() -> None:
    """Reprs, tracebacks, pickles and the docs name ``pybloom_async.X``, not a layer."""
    wrong = []
    for facade in facades():
        for name in facade.__all__:
            obj = getattr(facade, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue  # constants and the version
            if (obj.__module__, obj.__qualname__) != (facade.__name__, name):
                wrong.append(f"{facade.__name__}.{name}: {obj.__module__}.{obj.__qualname__}")
    assert wrong == []


def test_public_classes_and_functions_pickle_by_their_public_path() -> None:
    for facade in facades():
        for name in facade.__all__:
            obj = getattr(facade, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                assert pickle.loads(pickle.dumps(obj)) is obj, name
                assert f"{facade.__name__}\n".encode() in pickle.dumps(obj, protocol=0), name


def test_what_spark_ships_to_its_executors_pickles() -> None:
    """Settings, options, predicates, verdicts and errors round trip through pickle."""
    from pybloom_async.spark.scan import ReadSettings

    store = pybloom_async.StoreOptions(region="eu-west-1", allow_http=True, max_retries=2)
    run = pybloom_async.RunOptions(on_error="raise", concurrency=4, options=store)
    where = pybloom_async.parse_predicate("id = 1 AND (s IN ('a', 'b') OR NOT t < 2.5)")
    rule = pybloom_async.Rule.BLOOM_FILTER
    verdict = pybloom_async.Verdict("f.parquet", 0, 10, False, "absent", rule)
    settings = ReadSettings(options=store, config=pybloom_async.ReaderConfig(), on_error="raise")
    error = pybloom_async.SourceNotFoundError("no such file", path="s3://b/f.parquet")
    for value in [store, run, where, verdict, settings, rule]:
        assert pickle.loads(pickle.dumps(value)) == value
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is pybloom_async.SourceNotFoundError and str(copy) == str(error)


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

    # Its module's names (not the facade's, which its __module__ names).
    names = {**(model or function).__globals__, "pa": pyarrow, "ds": pyarrow.dataset}
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
