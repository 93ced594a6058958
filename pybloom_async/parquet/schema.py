"""The Parquet schema: its tree (:class:`SchemaNode`), its leaf columns
(:class:`ColumnDescriptor`: path, physical type, repetition, maximum definition and
repetition levels, one :class:`LogicalType`) and :class:`Schema`, which holds both. The
footer's flat element list is read into them by :mod:`.schema_build`."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ..errors import ColumnNotFoundError
from ..types import PhysicalType
from .logical import LogicalType


class Repetition(enum.IntEnum):
    """``FieldRepetitionType`` of parquet.thrift."""

    REQUIRED = 0
    OPTIONAL = 1
    REPEATED = 2


@dataclass(frozen=True, slots=True)
class SchemaNode:
    """One node of the schema tree (a group, or a primitive leaf)."""

    name: str
    repetition: Repetition | None  # None for the root only
    physical_type: PhysicalType | None  # None for groups
    type_length: int | None
    logical_type: LogicalType | None
    converted_type: int | None  # ConvertedType member, or the raw number if unknown
    field_id: int | None
    children: tuple[SchemaNode, ...] = ()

    @property
    def is_leaf(self) -> bool:
        """True for primitive columns, false for groups."""
        return self.physical_type is not None


@dataclass(frozen=True, slots=True)
class ColumnDescriptor:
    """Everything about one leaf column that pruning and value encoding need.

    ``path`` is the dotted path (``tags.list.element``); ``path_parts`` the same
    path as names, unambiguous even when a name contains a dot. ``index`` is the
    leaf's position, which is also the position of its chunk in every row group.
    """

    index: int
    path_parts: tuple[str, ...]
    physical_type: PhysicalType
    type_length: int | None = None
    repetition: Repetition = Repetition.REQUIRED
    max_definition_level: int = 0
    max_repetition_level: int = 0
    logical_type: LogicalType | None = None
    converted_type: int | None = None
    field_id: int | None = None

    @property
    def path(self) -> str:
        """The dotted column path."""
        return ".".join(self.path_parts)

    @classmethod
    def of(
        cls,
        physical_type: PhysicalType | str | int,
        logical_type: LogicalType | None = None,
        *,
        type_length: int | None = None,
        path: str = "value",
    ) -> ColumnDescriptor:
        """Describe a stand-alone column (no file), e.g. to encode values for a filter.

        Raises
        ------
        UnsupportedTypeError
            ``physical_type`` is not a Parquet physical type.
        """
        return cls(
            index=0,
            path_parts=tuple(path.split(".")),
            physical_type=PhysicalType.coerce(physical_type),
            type_length=type_length,
            logical_type=logical_type,
        )


#: Sets of column names whose leaves a schema keeps (:meth:`Schema.leaves_under`).
_MAX_UNDER = 64


class Schema:
    """The schema tree and its leaf columns in file order.

    Read-only. A schema decoded from a footer builds its tree of
    :class:`SchemaNode` on the first read of :attr:`root` (pruning needs only
    the leaves); the footer's elements were validated when the leaves were.
    """

    __slots__ = ("_build", "_by_path", "_columns", "_root", "_under", "fingerprint")

    def __init__(self, root: SchemaNode, columns: tuple[ColumnDescriptor, ...]) -> None:
        self._root: SchemaNode | None = root
        self._columns = columns
        self._build: Callable[[], SchemaNode] | None = None
        self._by_path: dict[str, list[ColumnDescriptor]] | None = None
        self._under: dict[tuple[str, ...], tuple[int, ...]] = {}
        #: A number the decoder gives each distinct schema it decodes (equal fingerprints,
        #: equal schemas: the decoder shares them); None for a schema built otherwise.
        self.fingerprint: int | None = None

    @classmethod
    def deferred(
        cls, columns: tuple[ColumnDescriptor, ...], build: Callable[[], SchemaNode]
    ) -> Schema:
        """A schema whose tree ``build`` makes on the first read of :attr:`root`."""
        schema = cls.__new__(cls)
        schema._root = None
        schema._columns = columns
        schema._build = build
        schema._by_path = None
        schema._under = {}
        schema.fingerprint = None
        return schema

    @property
    def root(self) -> SchemaNode:
        """The root group of the schema tree."""
        root = self._root
        if root is None:
            assert self._build is not None
            root = self._root = self._build()
            self._build = None
        return root

    @property
    def columns(self) -> tuple[ColumnDescriptor, ...]:
        """The leaf columns, in file order (a leaf's ``index`` is its position here)."""
        return self._columns

    def __iter__(self) -> Iterator[ColumnDescriptor]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, (str, tuple, list)):
            return False
        return bool(self._matches(path))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Schema):
            return NotImplemented
        return self._columns == other._columns and self.root == other.root

    def __hash__(self) -> int:
        return hash(self._columns)

    def __repr__(self) -> str:
        return f"Schema(root={self.root!r}, columns={self._columns!r})"

    def column(self, path: str | Sequence[str]) -> ColumnDescriptor:
        """Find a leaf column by dotted path (``"a.b.c"``) or by its names (``("a", "b.c")``).

        A sequence of names is matched exactly. A dotted string is matched
        against each leaf's dotted path, so it is ambiguous only when names
        themselves contain dots.

        Raises
        ------
        ColumnNotFoundError
            No leaf has this path, or a dotted path matches several leaves (a
            :class:`~pybloom_async.errors.PredicateError`).
        """
        matches = self._matches(path)
        if len(matches) == 1:
            return matches[0]
        shown = path if isinstance(path, str) else ".".join(path)
        if not matches:
            known = ", ".join(c.path for c in self._columns[:20])
            more = ", ..." if len(self._columns) > 20 else ""
            raise ColumnNotFoundError(
                f"no leaf column with this path; the file has: {known}{more}", column=shown
            )
        raise ColumnNotFoundError(
            "the dotted path matches several columns (names contain dots); "
            "pass the path as a sequence of names",
            column=shown,
        )

    def leaves_under(self, names: Sequence[str]) -> tuple[int, ...]:
        """The indexes of the leaves of the columns ``names`` (top-level columns, or dotted
        leaves, as pyarrow names them), in file order; found once per set of names (the
        files of one schema share it)."""
        key = tuple(names)
        found = self._under.get(key)
        if found is None:
            found = tuple(
                d.index
                for d in self._columns
                if any(d.path == n or d.path.startswith(n + ".") for n in key)
            )
            if len(self._under) >= _MAX_UNDER:
                self._under.clear()
            self._under[key] = found
        return found

    def _matches(self, path: str | Sequence[str]) -> list[ColumnDescriptor]:
        if isinstance(path, str):
            by_path = self._by_path
            if by_path is None:
                # Built once: a predicate looks its columns up in every file.
                by_path = {}
                for c in self._columns:
                    by_path.setdefault(c.path, []).append(c)
                self._by_path = by_path
            return by_path.get(path, [])
        parts = tuple(path)
        return [c for c in self._columns if c.path_parts == parts]
