"""Partition columns in a predicate: a file's ``key=value`` folders decide their leaves.

A listed file below ``key=value`` folders (:mod:`pybloom_async.io.partitions`) has those
columns with one value for all its rows, and its path wins over a column of the same
name inside it. So each leaf of the predicate on such a column is decided for the file
as a whole, before its footer is read, and the predicate left over (the *residual*) is
what its row groups and rows are pruned and matched with:

* the residual is FALSE: no row can match; the file is never opened, and gets no
  verdict (as the files a Delta or Iceberg table's own first stage rules out);
* TRUE: every row matches (the predicate reads partition columns only): every row
  group is kept, with the rule ``partition``;
* else a predicate on the file's own columns, pruned and matched as any predicate.

A leaf compares the folder's value, read as its column's type, with the literals read by
the one rule of literals (:func:`pybloom_async.pruning.literals.encode_literal`): a literal
that is not a value of the type is the same :class:`~pybloom_async.errors.PredicateError`
as for a column in a file. Every operator holds as it does for rows (SQL's three-valued
logic over the predicate's normal form, NOT on the leaves only): ``=``, ``IN`` and the
ranges with a NULL on either side match nothing, ``<=> NULL`` and ``IS NULL`` match a NULL
value (``__HIVE_DEFAULT_PARTITION__``), ``!=`` and ``NOT IN`` never match a NULL; a range
is decided by the value's place in the type's order, as the statistics of a column
holding that one value would decide it.

The types are given, or inferred from every value a column has in the files listed. A run
that has the whole listing before it reads a file (lookup, pruned_dataset) settles them
first (:meth:`PartitionPredicate.settle`) and decides exactly. ``prune`` reads files as
they are listed, before every value is known: it decides a leaf under each type the
column may still take (the value's own, or string), so that it rules a file out only
when no type could match, and keeps it otherwise (a superset, never a false negative).
Folders are skipped before they are listed only when the types are given (inferred types
depend on every folder's value).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import PredicateError, PyBloomError, UnsupportedTypeError
from ..io.base import FileInfo, location_text
from ..io.files import FileStream
from ..io.partitions import FolderFilter, Pairs, partition_of
from ..predicate import And, Between, Compare, Eq, In, IsNotNull, Not, NotIn, Or, Predicate
from ..read.reader import OpenedFile
from ..read.run import Run
from ..tasks.workers import for_each
from ..values import NeverPrunes, Probe
from ..values.encode import encode_value
from .bounds import View, bounds_of, decide
from .leaves import Variant, leaf_column
from .literals import encode_literal
from .partition_types import (
    STRING,
    Partitioning,
    PartitionType,
    infer_type,
    typed_value,
    value_type,
)
from .verdicts import Rule, Verdict

if TYPE_CHECKING:
    from ..parquet import Schema
    from .api import CompiledPredicate


@dataclass(frozen=True)
class FileDecision:
    """What a file's partition values leave of the predicate: ``ruled_out`` (FALSE: no
    row can match), else ``compiled``, the residual (None: TRUE, every row matches).
    ``unchecked``: the predicate's leaves on the file's own columns that the residual left
    out (``p = 'a' OR x = 1`` where ``p`` is ``'a'``): their literals are still typed by
    the columns of the file when it is read."""

    ruled_out: bool
    compiled: CompiledPredicate | None
    unchecked: tuple[Predicate, ...] = ()


def _encodings(value: Any, kind: PartitionType, key: str) -> frozenset[bytes] | None:
    """The stored encodings of one partition value (None: it equals nothing, NaN)."""
    encoded = encode_value(value, kind.descriptor(key))
    return frozenset(encoded.alternatives) if isinstance(encoded, Probe) else None


def _leaf(leaf: Predicate, value: Any, kind: PartitionType, compiled: CompiledPredicate) -> bool:
    """Whether a normal form's leaf is TRUE for a partition value of ``kind`` (None: NULL):
    SQL's three-valued logic, floats as IEEE 754 (NaN equals nothing, lies in no range,
    and is unequal to everything), as rows are matched. A range's leaf is the run's
    (``compiled``).

    Raises
    ------
    PredicateError
        A literal is not a value of the type.
    """
    return _truth(leaf, value, kind, compiled) is True


def _truth(
    p: Predicate, value: Any, kind: PartitionType, compiled: CompiledPredicate
) -> bool | None:
    """A leaf's three-valued truth for one partition value (None: unknown, NULL)."""
    if isinstance(p, Not):
        inner = _truth(p.child, value, kind, compiled)
        return None if inner is None else not inner
    if isinstance(p, IsNotNull):
        return value is not None
    if isinstance(p, NotIn):
        inner = _equal(In(p.column, p.values), value, kind)
        return None if inner is None else not inner
    if isinstance(p, Compare) and p.op == "!=":
        inner = _equal(Eq(p.column, p.value), value, kind)
        return None if inner is None else not inner
    if isinstance(p, Between):
        ends = [_in_range(p, p.low, "low", value, kind, compiled),
                _in_range(p, p.high, "high", value, kind, compiled)]  # fmt: skip
        return False if False in ends else (None if None in ends else True)
    if isinstance(p, Compare):
        return _in_range(p, p.value, "", value, kind, compiled)
    assert isinstance(p, (Eq, In)), type(p).__name__
    return _equal(p, value, kind)


def _null_truth(p: Predicate) -> bool | None:
    """A leaf's three-valued truth where its column is NULL whatever its type (a field
    below a partition column, a NULL partition value before the types are known)."""
    if isinstance(p, Not):
        inner = _null_truth(p.child)
        return None if inner is None else not inner
    if isinstance(p, IsNotNull):
        return False
    if isinstance(p, Eq) and p.null_safe:
        return p.value is None  # NULL <=> NULL, and NULL <=> v is FALSE
    return None  # =, IN, NOT IN, !=, ranges: unknown


def _equal(leaf: Eq | In, value: Any, kind: PartitionType) -> bool | None:
    """``=``, ``<=>`` or ``IN``, three-valued."""
    desc = kind.descriptor(leaf.column)
    literals = (leaf.value,) if isinstance(leaf, Eq) else leaf.values
    encoded = [encode_literal(v, desc) for v in literals if v is not None]  # raises first
    null_safe = isinstance(leaf, Eq) and leaf.null_safe
    if null_safe and leaf.value is None:  # type: ignore[union-attr]
        return value is None
    if value is None:
        return False if null_safe else None
    mine = _encodings(value, kind, leaf.column)
    found = False
    if mine is not None:  # NaN equals nothing
        for literal in encoded:
            if isinstance(literal, Probe) and mine & set(literal.alternatives):
                found = True
                break
            floats = kind.name in ("float32", "float64")
            if isinstance(literal, NeverPrunes) and not floats:
                raise UnsupportedTypeError(
                    f"the literal cannot be compared exactly: {literal.reason}", column=leaf.column
                )
    if found:
        return True
    return None if len(encoded) < len(literals) else False  # x IN (1, NULL): unknown


def _in_range(
    test: Compare | Between,
    literal: Any,
    end: Variant,
    value: Any,
    kind: PartitionType,
    compiled: CompiledPredicate,
) -> bool | None:
    """``<``, ``<=``, ``>`` or ``>=`` (or a BETWEEN's ``end``, whose ``literal`` it is),
    three-valued: the value's place against the literal's, as statistics of a column
    holding that one value would decide it."""
    desc = kind.descriptor(test.column)
    leaf = compiled.leaf(test, desc, end)  # raises: not a value of the type
    if literal is None or value is None:
        return None
    if leaf.never_prunes is not None or leaf.unordered is not None:
        return False  # a NaN literal: no value lies in its range
    mine = _encodings(value, kind, test.column)
    if mine is None:
        return False  # a NaN value lies in no range
    raw = min(mine)
    bounds, typed = bounds_of(leaf, raw, raw)
    view = View(bounds, typed, all_null=False, null_count=0, nan_free=True)
    return not decide(leaf, view).excluded


def _substitute(p: Predicate, decided: Mapping[int, bool]) -> Predicate | bool:
    """``p`` (a normal form) with the decided leaves replaced by their truth, simplified
    (SQL's AND and OR; with NOT only on leaves, a NULL leaf is as FALSE for which rows are
    TRUE)."""
    if not isinstance(p, (And, Or)):
        return decided.get(id(p), p)
    if isinstance(p, (And, Or)):
        short = isinstance(p, Or)  # OR: a TRUE part decides; AND: a FALSE part does
        rest: list[Predicate] = []
        for child in p.children:
            part = _substitute(child, decided)
            if part is short:
                return short
            if not isinstance(part, bool):
                rest.append(part)
        if not rest:
            return not short
        return Or.of(*rest) if short else And.of(*rest)
    raise PredicateError(f"unsupported predicate {type(p).__name__}")


def _leaves(p: Predicate) -> list[Predicate]:
    """A normal form's leaves (each a comparison, or the NOT the normal form keeps)."""
    if isinstance(p, (And, Or)):
        return [leaf for child in p.children for leaf in _leaves(child)]
    return [p]


class PartitionPredicate:
    """One run's predicate over files that may have partition columns (see the module).

    ``partitioning`` None: folders are plain folders, and every file gets the predicate
    as it is.
    """

    def __init__(self, compiled: CompiledPredicate, partitioning: Partitioning | None) -> None:
        self.compiled = compiled
        self.partitioning = partitioning
        self.leaves = _leaves(compiled.normal)
        self.columns = [leaf_column(leaf) for leaf in self.leaves]
        given = partitioning.types if partitioning is not None else None
        #: The columns' types: given, settled from a whole listing, or None (not yet:
        #: each value may still be of its own type or a string).
        self.types: dict[str, PartitionType] | None = dict(given) if given is not None else None
        #: The partition columns met, in the order first met.
        self.keys: dict[str, None] = dict.fromkeys(given or ())
        # A column the partitioning names is one of every file's (NULL where no folder
        # gives it): no mistake for "no file read has this column", as in a lookup.
        compiled.seen.found_columns(list(self.keys))
        self._decided: dict[Pairs, tuple[bool | None, ...]] = {}
        #: Before the types are settled: each column's type over the values met so far.
        self._joined: dict[str, PartitionType | None] = {}
        self._residuals: dict[tuple[bool | None, ...], FileDecision] = {}
        #: How to list every file again, those the folders ruled out too (None: not
        #: known). Set by an entry point that lists: see :meth:`look_in_ruled_out`.
        self.every: Callable[[], Awaitable[Sequence[str | FileInfo]]] | None = None

    @property
    def active(self) -> bool:
        """Whether folders can give columns at all."""
        return self.partitioning is not None

    def pairs(self, location: object) -> Pairs:
        """The file's partition columns and their values as text."""
        if self.partitioning is None:
            return ()
        return self.partitioning.keys_of(partition_of(location))

    def folder_filter(self) -> FolderFilter | None:
        """What the listing asks of each ``key=value`` folder, when the types are given and
        the predicate reads a partition column (else None: every folder is listed)."""
        if self.partitioning is None or self.partitioning.types is None:
            return None
        if not any(column in self.partitioning.types for column in self.columns):
            return None

        def keep(pairs: Pairs) -> bool:
            known = dict(self.partitioning.keys_of(pairs)) if self.partitioning else {}
            decided = self._outcomes(known, folder=True)
            return _substitute(self.compiled.normal, decided) is not False

        return keep

    def settle(self, files: Iterable[object]) -> None:
        """Take the types of the columns from every value the listed ``files`` have (given
        types stay); from then on every file is decided exactly."""
        if self.partitioning is None:
            return
        values: dict[str, set[str | None]] = {}
        for location in files:
            for key, text in self.pairs(location):
                values.setdefault(key, set()).add(text)
        self.keys.update(dict.fromkeys(values))
        if self.types is None:
            self.types = {key: infer_type(found) for key, found in values.items()}
        self._decided.clear()
        self._residuals.clear()

    def type_of(self, key: str) -> PartitionType:
        """A settled column's type."""
        assert self.types is not None, "settle() first"
        return self.types.get(key, STRING)

    def values(self, location: object, path: str) -> dict[str, Any]:
        """The file's partition values as their columns' types (settled), in path order.

        Raises
        ------
        SchemaMismatchError
            A value is not one of the type given for its column.
        """
        return {
            key: typed_value(key, text, self.type_of(key), path)
            for key, text in self.pairs(location)
        }

    def _outcomes(self, known: Mapping[str, str | None], folder: bool = False) -> dict[int, bool]:
        """Each partition leaf's truth for these values (a folder's: only its keys). A leaf
        below a partition column (``p.x``) names nothing there: NULL, as a column a file
        lacks."""
        decided: dict[int, bool] = {}
        for leaf, column in zip(self.leaves, self.columns, strict=True):
            if column in known:
                decided[id(leaf)] = self._decide(leaf, column, known[column])
            elif column.split(".", 1)[0] in known:
                decided[id(leaf)] = _null_truth(leaf) is True
        return decided

    def _decide(self, leaf: Predicate, column: str, text: str | None) -> bool:
        if self.types is not None:
            kind = self.types.get(column, STRING)
            return _leaf(leaf, typed_value(column, text, kind, ""), kind, self.compiled)
        # Before every value is known: TRUE under some type the column may still take
        # (the value's own, or string); an error only when the literal fits none of them.
        # A NULL says nothing of the type (literals checked at the end).
        if text is None:
            return _null_truth(leaf) is True
        kinds = list(dict.fromkeys([value_type(text), STRING]))
        errors: list[PredicateError] = []
        for kind in kinds:
            try:
                if _leaf(leaf, kind.parse(text), kind, self.compiled):
                    return True
            except PredicateError as exc:
                errors.append(exc)
        if len(errors) == len(kinds):
            raise errors[0]
        return False

    def decide(self, location: object) -> FileDecision:
        """What the file's partition values leave of the predicate.

        Raises
        ------
        PredicateError
            A literal is not a value of a partition column's type.
        SchemaMismatchError
            A value is not one of the type given for its column.
        """
        pairs = self.pairs(location)
        if not pairs:
            return FileDecision(False, self.compiled)
        outcome = self._decided.get(pairs)
        if outcome is None:
            for key, text in pairs:
                self.keys.setdefault(key)
                if self.types is None and text is not None:
                    kind, joined = value_type(text), self._joined.get(key)
                    self._joined[key] = kind if joined in (None, kind) else STRING
            self.compiled.seen.found_columns([k for k, _ in pairs])
            decided = self._outcomes(dict(pairs))
            outcome = tuple(decided.get(id(leaf)) for leaf in self.leaves)
            if len(self._decided) >= 4096:
                self._decided.clear()
            self._decided[pairs] = outcome
        found = self._residuals.get(outcome)
        if found is None:
            decided = {
                id(leaf): o for leaf, o in zip(self.leaves, outcome, strict=True) if o is not None
            }
            residual = _substitute(self.compiled.normal, decided)
            left = set() if isinstance(residual, bool) else {id(p) for p in _leaves(residual)}
            unchecked = tuple(
                leaf
                for leaf, o in zip(self.leaves, outcome, strict=True)
                if o is None and id(leaf) not in left
            )
            if residual is False:
                found = FileDecision(True, None)
            elif residual is True:
                found = FileDecision(False, None, unchecked)
            else:
                assert isinstance(residual, Predicate)
                found = FileDecision(False, self.compiled.narrowed(residual, unchecked))
            self._residuals[outcome] = found
        return found

    def check_literals(self) -> None:
        """Once every file was met: a literal that is not a value of its partition column's
        type (as the values met make it) is an error, as it is for a column in a file.

        Raises
        ------
        PredicateError
            Naming the column, the literal and the forms the type takes.
        """
        types = self.types if self.types is not None else self._joined
        for leaf, column in zip(self.leaves, self.columns, strict=True):
            if column in self.keys:
                kind = types.get(column) or STRING
                self.compiled.leaf(leaf, kind.descriptor(column))  # raises: not of the type

    def partition_columns(self) -> Sequence[str]:
        """The partition columns met so far, in the order first met."""
        return list(self.keys)

    def kept_files(
        self, files: Sequence[str | FileInfo] | FileStream
    ) -> Sequence[str | FileInfo] | FileStream:
        """The files their partition values do not rule out, in order (a stream stays one:
        each is decided as it comes).

        Raises
        ------
        PredicateError
            A literal is not a value of a partition column's type (naming the file).
        """
        if isinstance(files, FileStream):
            return FileStream(self._kept_stream(files), free=files.free)
        return self.kept_list(files)

    def kept_list(self, files: Sequence[str | FileInfo]) -> list[str | FileInfo]:
        """:meth:`kept_files` of a list."""
        return [f for f in files if not self._ruled_out(f)]

    async def _kept_stream(self, files: FileStream) -> AsyncIterator[str | FileInfo]:
        try:
            async for location in files:
                if not self._ruled_out(location):
                    yield location
        finally:
            await files.aclose()

    def ruled_out_of(self, listed: Iterable[str | FileInfo]) -> list[str | FileInfo]:
        """The files of a listing that their folders rule out, in order (a file whose
        folders cannot be decided is not among them: deciding it raised already)."""
        out = []
        for location in listed:
            try:
                if self.pairs(location) and self.decide(location).ruled_out:
                    out.append(location)
            except PyBloomError:
                continue
        return out

    async def look_in_ruled_out(self, run: Run) -> None:
        """Where a predicate column is in none of the files read, read the footers of the
        files the folders ruled out (:attr:`every` listed again) until every predicate
        column is found: a column only other partitions' files have reads as NULL in the
        files read, as a column a file lacks, and is no mistake; one no file of the lake
        has still is ("no file read has this column")."""
        seen = self.compiled.seen
        if self.every is None or seen.complete():
            return
        unread = [c for c in seen.wanted if c not in seen.found]
        ruled_out = self.ruled_out_of(await self.every())

        async def one(location: str | FileInfo) -> tuple[str, Schema] | None:
            if seen.complete():
                return None
            try:
                footer = await run.with_file(location, OpenedFile.footer)
            except PyBloomError:
                return None  # unreadable: it says nothing of the columns
            finally:
                run.done(location)
            seen.add(footer.metadata.schema)
            return location_text(location), footer.metadata.schema

        read = await for_each(ruled_out, one, run.limit)
        self.type_by_ruled_out(unread, [found for found in read if found is not None])

    def type_by_ruled_out(
        self, unread: Sequence[str], footers: Sequence[tuple[str, Schema]]
    ) -> None:
        """Type the literals on each column of ``unread`` (in no file read) by the first of
        ``footers`` (paths and schemas of files the folders ruled out, read for the
        answer's columns, in the listing's order) that has it: a literal typed wrong is an
        error whichever files the folders rule out, as where the table's schema types it.

        Raises
        ------
        PredicateError
            A literal is not a value of its column's type (naming the file).
        """
        for leaf, column in zip(self.leaves, self.columns, strict=True):
            if column in self.keys or column not in unread:
                continue  # (a partition column's literals are typed by its folders)
            for path, schema in footers:
                if column in schema:
                    try:
                        self.compiled.check_literals(schema, (leaf,))
                    except PyBloomError as exc:
                        raise exc.with_context(path=path) from None
                    break

    def count_as_read(self, path: str, schema: Schema) -> None:
        """A file the lake index ruled out counts as read: its columns are found, and they
        type the literals on them, but for the partition columns (their folders type
        those), so that a literal typed wrong is an error whichever files the index rules
        out (``path``: the file's, for the error).

        Raises
        ------
        PredicateError
            A literal is not a value of its column's type (naming the file).
        """
        self.compiled.seen.add(schema)
        leaves = [
            leaf for leaf, c in zip(self.leaves, self.columns, strict=True) if c not in self.keys
        ]
        try:
            self.compiled.check_literals(schema, leaves)
        except PyBloomError as exc:
            raise exc.with_context(path=path) from None

    def _ruled_out(self, location: str | FileInfo) -> bool:
        try:
            return self.decide(location).ruled_out
        except PyBloomError as exc:
            path = location_text(location)
            raise exc.with_context(path=path) from None

    async def prune_file(
        self,
        run: Run,
        location: str | FileInfo,
        prune_one: Callable[[Run, str | FileInfo, CompiledPredicate], Awaitable[list[Verdict]]],
    ) -> list[Verdict]:
        """One file's verdicts: ``prune_one`` with its residual, or every row group kept
        (``Rule.PARTITION``) when the residual is TRUE (its footer read for them, and its
        columns counted as a file read's)."""
        decision = self.decide(location)
        if decision.compiled is not None:
            return await prune_one(run, location, decision.compiled)
        path = location_text(location)

        async def work(file: OpenedFile) -> list[Verdict]:
            footer = await file.footer()
            # A file read: its columns count for "no file read has this column", and type
            # the literals the folders decided without.
            self.compiled.seen.add(footer.metadata.schema)
            self.compiled.check_literals(footer.metadata.schema, decision.unchecked)
            reason = "its partition values make the predicate true for every row"
            return [
                Verdict(path, rg.index, rg.num_rows, True, reason, Rule.PARTITION)
                for rg in footer.metadata.row_groups
            ]

        try:
            return await run.with_file(location, work)
        except PredicateError as exc:
            raise exc.with_context(path=path) from None  # the predicate is wrong, not the file
        except PyBloomError as exc:
            if run.strict:
                raise exc.with_context(path=path) from None
            return [Verdict(path, None, None, True, f"file not pruned: {exc}", Rule.UNREADABLE)]
        finally:
            run.done(location)


async def check_once_decided(
    run: Run,
    compiled: CompiledPredicate,
    partitions: PartitionPredicate | None,
    columns: bool | Callable[[], bool],
    read_ruled_out: bool = True,
) -> None:
    """The checks of a prune once its files are decided (in the files, or by a lake index):
    the literals on the partition columns typed (``partitions``: the run's folders, None
    without); then, where ``columns`` says every file counts as read (asked last when a
    callable), a predicate column in none of them is a mistake. The footers of the files
    the folders ruled out are read for it first (:meth:`PartitionPredicate.look_in_ruled_out`)
    unless ``read_ruled_out`` is False (a prune that reads no file).

    Raises
    ------
    PredicateError
        A literal is not a value of its column's type, or a column is in no file read.
    """
    if partitions is not None:
        partitions.check_literals()
    if columns() if callable(columns) else columns:
        if partitions is not None and read_ruled_out:
            await partitions.look_in_ruled_out(run)
        compiled.seen.check()
