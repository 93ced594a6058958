"""Entry-point checks: argument values, and entry points that share one argument list."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import pybloom_async as pba
from pybloom_async.checks import integer, positive_int, probability, same_arguments_as, seconds
from pybloom_async.errors import InvalidArgumentError


def test_values_are_checked_with_one_message_form() -> None:
    assert positive_int("concurrency", 3) == 3
    with pytest.raises(InvalidArgumentError, match="concurrency must be"):
        positive_int("concurrency", 0)
    with pytest.raises(InvalidArgumentError, match="must be"):
        positive_int("concurrency", True)  # a bool is a slip, not a count
    assert integer("n", 5, minimum=5, maximum=5) == 5
    with pytest.raises(InvalidArgumentError):
        integer("n", 6, maximum=5)
    with pytest.raises(InvalidArgumentError, match="fpp must be"):
        probability("fpp", 1.0)
    with pytest.raises(InvalidArgumentError, match="timeout must be"):
        seconds("timeout", -1)


def _model(path: str, *, limit: int = 3, strict: bool = False) -> int:
    return limit


def test_same_arguments_as_gives_the_model_s_parameters_and_keeps_the_return() -> None:
    @same_arguments_as(_model)
    def twin(*args: Any, **kwargs: Any) -> str:
        return str(_model(*args, **kwargs))

    signature = inspect.signature(twin)
    assert list(signature.parameters) == ["path", "limit", "strict"]
    assert signature.return_annotation == "str"
    assert twin("p", limit=4) == "4"
    with pytest.raises(TypeError):
        twin("p", limt=4)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "function", [pba.add_bloom_filters, pba.add_bloom_filters_sync, pba.add_bloom_filters_async]
)
def test_add_filters_entry_points_show_their_arguments(function: Any) -> None:
    parameters = inspect.signature(function).parameters
    assert list(parameters) == [
        "path", "columns", "ndv", "fpp", "out", "max_bytes", "replace", "options",
        "require_columns",
    ]  # fmt: skip
    assert parameters["fpp"].default == 0.01


@pytest.mark.parametrize(
    ("twin", "model"),
    [
        (pba.lookup_sync, pba.lookup),
        (pba.pruned_dataset_sync, pba.pruned_dataset),
        (pba.prune_with_index_sync, pba.prune_with_index),
        (pba.build_index_sync, pba.build_index),
        (pba.build_lake_index_sync, pba.build_lake_index),
        (pba.compact_lake_index_sync, pba.compact_lake_index),
        (pba.add_bloom_filters_sync, pba.add_bloom_filters),
    ],
)
def test_sync_twins_show_the_async_entry_points_arguments(twin: Any, model: Any) -> None:
    assert inspect.signature(twin).parameters == inspect.signature(model).parameters
    assert twin.__name__ == f"{model.__name__}_sync"
    assert f"await {model.__name__}(...)" in (twin.__doc__ or "")


def test_prune_sync_shows_prune_s_arguments() -> None:
    parameters = inspect.signature(pba.prune_sync).parameters
    assert parameters == inspect.signature(pba.prune).parameters
    assert {"use_index", "row_groups", "run", "on_file"} <= set(parameters)
    assert parameters["keywords"].kind is inspect.Parameter.VAR_KEYWORD


#: Every public entry point that takes files, called with the file argument replaced.
_TAKING_FILES: dict[str, Any] = {
    "prune_sync": lambda s: pba.prune_sync(s, pba.col("id") == 1),
    "prune_with_index_sync": lambda s: pba.prune_with_index_sync(s, pba.col("id") == 1),
    "lookup_sync": lambda s: pba.lookup_sync(s, pba.col("id") == 1),
    "pruned_dataset_sync": lambda s: pba.pruned_dataset_sync(s, pba.col("id") == 1),
    "build_index_sync": lambda s: pba.build_index_sync(s, ["id"]),
    "read_footer_sync": pba.read_footer_sync,
    "read_bloom_filters_sync": pba.read_bloom_filters_sync,
    "probe_sync": lambda s: pba.probe_sync(s, "id", 1),
    "add_bloom_filters_sync": lambda s: pba.add_bloom_filters_sync(s, "id"),
    "build_lake_index_sync": lambda s: pba.build_lake_index_sync(s, ["id"]),
    "compact_lake_index_sync": pba.compact_lake_index_sync,
}


@pytest.mark.parametrize("bad", [5, b"a.parquet", None, [b"a.parquet"], [5]], ids=repr)
@pytest.mark.parametrize("entry", sorted(_TAKING_FILES))
def test_files_of_the_wrong_kind_are_invalid_arguments(entry: str, bad: Any) -> None:
    """An int, bytes or None where files are wanted: InvalidArgumentError, not TypeError."""
    if isinstance(bad, list) and entry in ("read_footer_sync", "read_bloom_filters_sync"):
        bad = bad[0]  # one location: no list
    with pytest.raises(InvalidArgumentError, match="must be a path or URL"):
        _TAKING_FILES[entry](bad)
