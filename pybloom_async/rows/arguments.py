"""lookup's arguments, checked once before any file or table is read (lookup,
lookup_batches and plan_lookup share them): the row-reading knobs as one object,
:class:`LookupOptions`, or as keyword arguments of the same names (:class:`LookupOptionsKeywords`,
written once here), beside the run's (:class:`~pybloom_async.RunOptions`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from ..checks import OnError, positive_int, require_pyarrow
from ..errors import InvalidArgumentError
from ..index_policy.choice import IndexChoice, index_choice
from ..predicate import Predicate
from ..pruning.api import CompiledPredicate
from ..pruning.partition_types import Partitioning
from ..read.run import RunKeywords, RunOptions, run_options

#: Largest sum of column-chunk bytes fetched for one file at once (256 MiB). A file's kept
#: chunks beyond it are fetched in several requests, row group by row group, so memory
#: stays bounded; a single row group larger than it is still fetched, on its own.
DEFAULT_MAX_FETCH_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class LookupOptions:
    """How a lookup reads rows; :func:`~pybloom_async.lookup`, ``lookup_batches``,
    ``plan_lookup`` and Spark's ``lookup_on_spark`` take one (``lookup=``), or its fields
    as keyword arguments of the same names (one or the other for each field).

    Parameters
    ----------
    max_fetch_bytes:
        Largest sum of column-chunk bytes fetched for one file at once
        (:data:`~pybloom_async.rows.api.DEFAULT_MAX_FETCH_BYTES`, 256 MiB).
    page_index:
        Where a file has a page index (ColumnIndex/OffsetIndex), fetch and decode only the
        pages whose min/max admit a probed value (default); ``False`` reads the kept row
        groups' whole column chunks.
    partitioning:
        ``"hive"`` (default): ``key=value`` folders below a directory or prefix
        are columns of the files under them, in the result and in ``where``
        (``dt=2026-11-01/country=DE/``; values URL-unescaped,
        ``__HIVE_DEFAULT_PARTITION__`` is NULL; the folder's value wins over a
        column of that name in the file). Their types are inferred from every
        value listed (int64, date32, timestamp[us], else string; see
        :mod:`pybloom_async.pruning.partition_types`), or given: a dict of column names
        to types (``{"dt": "date", "country": "string"}``, pyarrow types too)
        or a ``pyarrow.Schema``, which names the partition columns (then
        folders that cannot match are not even listed). Files whose folders
        rule them out are never opened. None (or False): folders are plain
        folders.
    use_index:
        Which index serves the run: ``"auto"`` (default: the lake index under one directory
        or prefix, or a table's, where there is one), ``"lake"`` (it must be there) or
        ``"none"`` (None too); see ``docs/lake-index.md``, "Which index serves a run".

    Raises
    ------
    InvalidArgumentError
        A field of the wrong kind or out of range (named).
    """

    max_fetch_bytes: int = DEFAULT_MAX_FETCH_BYTES
    page_index: bool = True
    partitioning: Any = "hive"
    use_index: IndexChoice = "auto"

    def __post_init__(self) -> None:
        positive_int("max_fetch_bytes", self.max_fetch_bytes)
        if not isinstance(self.page_index, bool):
            raise InvalidArgumentError("page_index must be True or False", value=self.page_index)
        Partitioning.of(self.partitioning)
        object.__setattr__(self, "use_index", index_choice(self.use_index, sidecar=False))

    def folders(self) -> Partitioning | None:
        """What ``key=value`` folders are (None: plain folders)."""
        return Partitioning.of(self.partitioning)


class LookupOptionsKeywords(TypedDict, total=False):
    """:class:`LookupOptions`' fields as keyword arguments."""

    max_fetch_bytes: int
    page_index: bool
    partitioning: Any
    use_index: IndexChoice | None


class LookupKeywords(RunKeywords, LookupOptionsKeywords, total=False):
    """The keyword arguments lookups take beside their own: the run's options
    (:class:`~pybloom_async.RunOptions`) and the lookup's (:class:`LookupOptions`)."""


_FIELDS = frozenset(f.name for f in dataclasses.fields(LookupOptions))
_DEFAULT = LookupOptions()


def lookup_options(
    lookup: LookupOptions | None, keywords: Mapping[str, Any], caller: str
) -> tuple[LookupOptions, dict[str, Any]]:
    """``lookup`` or the :class:`LookupOptions` of the keyword arguments given, and the
    keyword arguments that are not its fields (the run's, for a lookup).

    Raises
    ------
    InvalidArgumentError
        ``lookup`` is not a LookupOptions, a field is given both in it and as a keyword
        argument, or a value is invalid.
    """
    given = {name: value for name, value in keywords.items() if name in _FIELDS}
    rest = {name: value for name, value in keywords.items() if name not in _FIELDS}
    if lookup is None:
        return (LookupOptions(**given) if given else _DEFAULT), rest
    if not isinstance(lookup, LookupOptions):
        raise InvalidArgumentError(
            f"lookup must be a LookupOptions, not {type(lookup).__name__}", value=lookup
        )
    if given:
        name = sorted(given)[0]
        raise InvalidArgumentError(
            f"{caller}() got {name} twice, in lookup= and as a keyword argument: give it once"
        )
    return lookup, rest


@dataclass(frozen=True)
class LookupArguments:
    """lookup's arguments, checked once before any file or table is read."""

    #: The predicate, compiled once for the run: every step of the lookup shares it.
    compiled: CompiledPredicate
    columns: list[str] | None
    on_error: OnError  # the run's, or a lookup's default: "raise"
    lookup: LookupOptions
    run: RunOptions

    @property
    def predicate(self) -> Predicate:
        """The predicate, as given (parsed)."""
        return self.compiled.predicate

    @property
    def skip(self) -> bool:
        """Whether unreadable files are skipped."""
        return self.on_error == "skip"


def check_arguments(
    where: Predicate | str | CompiledPredicate,
    columns: Sequence[str] | None,
    lookup: LookupOptions | None,
    run: RunOptions | None,
    keywords: Mapping[str, Any],
    caller: str,
) -> LookupArguments:
    """lookup's arguments checked (pyarrow installed, each of the right kind); ``lookup``,
    ``run`` and the call's :class:`LookupKeywords` merged into the lookup's options and the
    run's (:func:`lookup_options`, :func:`~pybloom_async.read.run.run_options`). ``where``
    is compiled here, once for the run (or comes compiled: a Spark plan's).

    Raises
    ------
    InvalidArgumentError
        An argument is of the wrong kind (named), or a knob is given twice.
    TypeError
        A keyword argument lookups do not take.
    PredicateError
        ``where`` is text that does not parse.
    MissingDependencyError
        pyarrow is not installed.
    """
    require_pyarrow("look up rows")
    compiled = where if isinstance(where, CompiledPredicate) else CompiledPredicate(where)
    if columns is not None:
        if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
            raise InvalidArgumentError("columns must be a list of column names", value=columns)
        if len(set(columns)) != len(columns):
            raise InvalidArgumentError("a column is named twice in columns", value=columns)
        columns = list(columns)
    options, rest = lookup_options(lookup, keywords, caller)
    opts = run_options(run, rest, caller)
    return LookupArguments(compiled, columns, opts.on_error or "raise", options, opts)


#: The parameters and errors of ``lookup`` and ``lookup_batches``, added to their docstrings.
LOOKUP_PARAMETERS_DOC = """
    Parameters
    ----------
    sources:
        Files, directories or object-store prefixes (``s3://bucket/table/``);
        directories and prefixes expand to their ``*.parquet`` files. Or a
        table: a ``deltalake.DeltaTable`` (at its loaded version) or a
        ``pyiceberg`` table (its current snapshot): its live files are pruned and
        read as files are, the table's deletes applied (deletion vectors,
        position and equality deletes), partition columns filled in. A table's
        columns are its schema's; ``on_error`` must be ``"raise"``.
    where:
        A predicate built with :func:`pybloom_async.col`, or its text form
        (``"id = 42 AND email IN ('a', 'b')"``).
    columns:
        Top-level columns of the result, in this order (default: every
        top-level column of every file, in the order first seen; a file without
        one gives nulls there). Predicate columns are read even when not listed.
    skipped:
        A list that receives the errors of the files skipped.
    lookup, **keywords:
        How rows are read (:class:`~pybloom_async.LookupOptions`): ``max_fetch_bytes``,
        ``page_index``, ``partitioning`` (``key=value`` folders as columns, by default),
        ``use_index`` (which index serves the run); one object, or its fields as keyword
        arguments (each given once).
    run, **keywords:
        The run's options (:class:`~pybloom_async.RunOptions`): ``on_error``,
        ``concurrency`` (files read at once), ``options`` (object-store options), ``stats``
        (request counters), ``config`` (reader limits), ``reader`` (a long-lived
        :class:`~pybloom_async.BloomReader` whose cache to use and keep filled),
        ``progress``. ``on_error``: ``"raise"`` (a lookup's default): an unreadable file
        (missing, damaged, not Parquet) raises, naming it. ``"skip"``: it is left out,
        logged, and its error appended to ``skipped``.

    Raises
    ------
    PredicateError
        ``where`` is malformed, a literal is not a value of its column's type,
        or a column (of ``where`` or ``columns``) is in none of the files.
    SchemaMismatchError
        Two files give a result column types that do not unify.
    UnsupportedTypeError
        A predicate column is inside a list or map, or its values cannot be
        compared exactly.
    ParquetFormatError, SourceError, SourceNotFoundError
        With ``on_error="raise"``, the first unreadable file (named).
    InvalidArgumentError
        An argument is of the wrong kind or out of range.
    MissingDependencyError
        pyarrow is not installed.
"""
