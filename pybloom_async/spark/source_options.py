"""The ``pybloom`` data source's options (Spark hands them over as text), checked once.

``spark.read.format("pybloom")`` takes, besides ``load(path)`` (a directory, an object-store
prefix, files, or a table: see ``table``):

===========================  =================================================================
``where``                    a predicate in the text form (:func:`pybloom_async.parse_predicate`)
                             ANDed with the filters Spark pushes: for what Spark cannot push,
                             such as an OR across columns
``table``                    ``delta`` (``load`` gets the table's URI; ``version`` pins one)
                             or ``iceberg`` (``load`` gets ``CATALOG.NAMESPACE.TABLE``)
``on_error``                 what a file that cannot be read does, on the driver and the
                             executors alike: fail the query naming it (default), or
                             ``skip``: leave it out, logged; ``raise``: fail on a required
                             lake index's stale entry or damaged segment too
``strict``                   deprecated: ``true`` is ``on_error`` ``raise`` (not with ``skip``);
                             ``false`` changes nothing
``max_partition_bytes``      bytes to read per Spark task (128 MiB)
``min_partitions``           tasks to spread a large read over, at least (the driver's CPUs)
``concurrency``              files read at once, on the driver and within a task
``max_fetch_bytes``          column-chunk bytes fetched for one file at once (256 MiB)
``page_index``               ``false``: read whole column chunks, not the pages that may match
``index``                    which index serves the plan, as lookup's ``use_index``: ``auto``
                             (default: the lake index under the path, or the table's),
                             ``lake`` (it must be there) or ``none``
``partitioning``             what ``key=value`` folders are, as lookup's argument: ``hive``
                             (default: columns, types inferred), ``none`` (plain folders), or
                             the partition columns' types as a JSON object
                             (``{"dt": "date", "hr": "int32"}``); not with ``table``
``traceback``                ``true``: our errors reach the user with their Python traceback
                             (default: their one line, inside Spark's exception)
``store.<field>``            an object-store option (:class:`~pybloom_async.StoreOptions`:
                             ``store.endpoint``, ``store.region``, ``store.allow_http``...);
                             ``store.extra.<key>`` goes to its ``extra_config``
===========================  =================================================================
"""

from __future__ import annotations

import dataclasses
import json
import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from ..checks import OnError, positive_int
from ..errors import InvalidArgumentError
from ..index_policy.choice import index_choice
from ..io import store as store_module
from ..io.store import StoreOptions, as_store_options
from ..predicate import Predicate, parse_predicate
from ..pruning.partition_types import Partitioning
from ..rows.api import DEFAULT_MAX_FETCH_BYTES, LookupOptions
from .scan import DEFAULT_MAX_PARTITION_BYTES, ReadSettings

TABLE_KINDS = ("delta", "iceberg")
_KNOWN = frozenset(
    {
        "path",
        "paths",
        "where",
        "table",
        "version",
        "strict",
        "on_error",
        "max_partition_bytes",
        "min_partitions",
        "concurrency",
        "max_fetch_bytes",
        "page_index",
        "index",
        "partitioning",
        "traceback",
    }
)
_STORE = "store."
_EXTRA = "store.extra."


def _flag(name: str, text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise InvalidArgumentError(f"option {name} must be true or false, not {text!r}")
    return value == "true"


def _count(name: str, text: str) -> int:
    try:
        number = int(text.strip())
    except ValueError:
        raise InvalidArgumentError(f"option {name} must be a whole number, not {text!r}") from None
    return positive_int(name, number)


def _store_value(field: dataclasses.Field[Any], text: str) -> Any:
    """A store option's text as its field's type (str, bool, int or float)."""
    # Its names are those of the module that defines it: the facade's (its __module__) lack some.
    hint = typing.get_type_hints(StoreOptions, vars(store_module)).get(field.name, str)
    kinds = set(typing.get_args(hint)) or {hint}
    name = f"store.{field.name}"
    if bool in kinds:
        return _flag(name, text)
    if int in kinds:
        return _count(name, text)
    if float in kinds:
        try:
            return float(text)
        except ValueError:
            raise InvalidArgumentError(f"option {name} must be a number, not {text!r}") from None
    return text


def _store_options(options: Mapping[str, str]) -> StoreOptions | None:
    fields = {f.name: f for f in dataclasses.fields(StoreOptions)}
    values: dict[str, Any] = {}
    extra: dict[str, str] = {}
    for key, text in options.items():
        lower = key.lower()
        if lower.startswith(_EXTRA):
            extra[key[len(_EXTRA) :]] = text
        elif lower.startswith(_STORE):
            name = lower[len(_STORE) :]
            if name not in fields or name == "extra_config":
                known = ", ".join(f"store.{n}" for n in sorted(fields) if n != "extra_config")
                raise InvalidArgumentError(f"unknown option {key!r}; store options: {known}")
            values[name] = _store_value(fields[name], text)
    if extra:
        values["extra_config"] = extra
    return as_store_options(values) if values else None


def _sources(options: Mapping[str, str]) -> str | list[str]:
    paths = options.get("paths")
    if paths:
        try:
            found = json.loads(paths)
        except ValueError:
            found = None
        if not isinstance(found, list) or not all(isinstance(p, str) for p in found):
            raise InvalidArgumentError(f"option paths must be a JSON list of paths: {paths!r}")
        path = options.get("path")
        return [*([path] if path else []), *found]
    path = options.get("path")
    if not path:
        raise InvalidArgumentError(
            "the pybloom data source needs a path: spark.read.format('pybloom').load(path)"
        )
    return path


def _partitioning(text: str | None) -> Any:
    """The ``partitioning`` option as lookup's argument of that name (checked)."""
    if text is None or text.strip().lower() == "hive":
        return "hive"
    if text.strip().lower() == "none":
        return None
    try:
        spec = json.loads(text)
    except ValueError:
        spec = None
    if not isinstance(spec, dict) or not spec:
        raise InvalidArgumentError(
            "option partitioning must be hive, none, or the partition columns' types as a "
            f'JSON object ({{"dt": "date"}}), not {text!r}'
        )
    Partitioning.of(spec)  # an unknown type fails here, naming the types
    return spec


@dataclass(frozen=True)
class SourceOptions:
    """One read's options, checked (on the driver; pickled to the executors with the tasks)."""

    sources: str | list[str]
    where: Predicate | None
    table: str | None
    version: int | None
    settings: ReadSettings
    max_partition_bytes: int
    min_partitions: int
    traceback: bool = False

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        """The options Spark hands the data source.

        Raises
        ------
        InvalidArgumentError
            An unknown option, or a value of the wrong kind.
        PredicateError
            ``where`` does not parse.
        """
        for key in options:
            lower = key.lower()
            if lower not in _KNOWN and not lower.startswith(_STORE):
                raise InvalidArgumentError(
                    f"unknown option {key!r} of the pybloom data source; it takes: "
                    f"{', '.join(sorted(_KNOWN))}, store.<field>, store.extra.<key>"
                )
        text = options.get("where")
        where = parse_predicate(text) if text is not None and text.strip() else None
        table = options.get("table")
        if table is not None and table.lower() not in TABLE_KINDS:
            raise InvalidArgumentError(f"option table must be delta or iceberg, not {table!r}")
        version = options.get("version")
        if version is not None and (table or "").lower() != "delta":
            raise InvalidArgumentError("option version applies to table delta only")
        on_error = _on_error(options)
        concurrency = options.get("concurrency")
        partitioning = options.get("partitioning")
        if partitioning is not None and table is not None:
            raise InvalidArgumentError(
                "option partitioning applies to files; a table's partition columns are its own"
            )
        settings = ReadSettings(
            options=_store_options(options),
            concurrency=None if concurrency is None else _count("concurrency", concurrency),
            on_error=on_error,
            lookup=LookupOptions(
                max_fetch_bytes=_count(
                    "max_fetch_bytes",
                    options.get("max_fetch_bytes", str(DEFAULT_MAX_FETCH_BYTES)),
                ),
                page_index=_flag("page_index", options.get("page_index", "true")),
                partitioning=_partitioning(partitioning),
                use_index=index_choice(
                    options.get("index", "auto").strip().lower(),
                    sidecar=False,
                    name="option index",
                ),
            ),
        )
        partitions = options.get("min_partitions", str(os.cpu_count() or 1))
        return cls(
            sources=_sources(options),
            where=where,
            table=None if table is None else table.lower(),
            version=None if version is None else _whole(version),
            settings=settings,
            max_partition_bytes=_count(
                "max_partition_bytes",
                options.get("max_partition_bytes", str(DEFAULT_MAX_PARTITION_BYTES)),
            ),
            min_partitions=_count("min_partitions", partitions),
            traceback=_flag("traceback", options.get("traceback", "false")),
        )


def _on_error(options: Mapping[str, str]) -> OnError | None:
    """The ``on_error`` option, with the deprecated ``strict`` (``true``: ``raise``)."""
    text = options.get("on_error")
    on_error = None if text is None else text.strip().lower()
    if on_error is not None and on_error not in ("raise", "skip"):
        raise InvalidArgumentError(f"option on_error must be raise or skip, not {text!r}")
    if not _flag("strict", options.get("strict", "false")):
        return cast("OnError | None", on_error)
    if on_error == "skip":
        raise InvalidArgumentError(
            "give option on_error only: strict is its deprecated form (strict true is "
            "on_error raise)"
        )
    return "raise"


def _whole(text: str) -> int:
    try:
        number = int(text.strip())
    except ValueError:
        number = -1
    if number < 0:
        raise InvalidArgumentError(f"option version must be a version number >= 0, not {text!r}")
    return number
