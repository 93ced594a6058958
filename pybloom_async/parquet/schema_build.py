"""The Parquet schema rebuilt from the footer's flat element list.

``FileMetaData.schema`` lists the schema tree in depth-first order; each group
says how many children follow it (``num_children``). This module rebuilds the
tree without recursion, so neither a deep schema nor a lying ``num_children``
can exhaust the stack or index past the list, and resolves every leaf into a
:class:`ColumnDescriptor`: its path, physical type, repetition, maximum
definition and repetition levels, and one :class:`LogicalType` that merges the
modern ``logicalType`` union with the legacy ``converted_type`` enum (following
the compatibility tables of parquet-format ``LogicalTypes.md``)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from ..errors import ParquetFormatError
from ..types import PhysicalType
from . import thrift_specs as wire
from .logical import LogicalType, logical_of_converted, resolve_logical
from .schema import ColumnDescriptor, Repetition, Schema, SchemaNode

#: Deepest group nesting accepted. Real schemas stay far below it (a 3-level
#: LIST adds two levels); the cap keeps a hostile footer from building paths
#: whose total length grows with the square of its size, and keeps the
#: recursive ``repr``/``==`` of the tree well inside Python's recursion limit.
MAX_SCHEMA_DEPTH = 100

REPETITION_BY_NUMBER: dict[int, Repetition] = {m.value: m for m in Repetition}
PHYSICAL_BY_NUMBER: dict[int, PhysicalType] = {m.value: m for m in PhysicalType}


def _where(index: int, parts: tuple[str, ...]) -> str:
    """How error messages name schema element ``index`` (with its dotted path)."""
    return f"{index} ({'.'.join(parts)})"


def _decode_name(raw: bytes | None, where: str, path: str | None) -> str:
    if raw is None:
        raise ParquetFormatError(f"schema element {where} has no name", path=path)
    # Names are UTF-8 by the spec; a few old writers used other encodings, and a
    # replacement character keeps such files usable instead of rejecting them.
    return raw.decode("utf-8", errors="replace")


def _repetition(element: wire.SchemaElement, where: str, path: str | None) -> Repetition:
    value = element.repetition_type
    if value is None:
        # Required by the spec for every non-root node. Levels do not matter to
        # Bloom filters, so rather than reject the file we take the enum's
        # zero value, REQUIRED.
        return Repetition.REQUIRED
    found = REPETITION_BY_NUMBER.get(value)
    if found is None:
        raise ParquetFormatError(
            f"schema element {where}: unsupported repetition type {value} "
            "(VECTOR and later additions are not supported)",
            path=path,
        )
    return found


def _is_group(element: wire.SchemaElement) -> bool:
    # parquet.thrift: a group has num_children and no type; a leaf has a type
    # and no num_children. Some writers put num_children = 0 on leaves, so a
    # typed element without children is a leaf.
    if element.type is None:
        return True
    return element.num_children is not None and element.num_children > 0


# The explicit stack of build_schema holds one list per open group:
# [element, name, children left to read, path parts, definition level,
#  repetition level, repetition, child nodes]. Lists, not objects: this runs
# for every footer, and a list is the cheapest mutable record.
_ELEMENT, _NAME, _REMAINING, _PARTS, _DEFINITION, _REP_LEVEL, _REPETITION, _CHILDREN = range(8)


def build_schema(elements: Sequence[wire.SchemaElement], *, path: str | None = None) -> Schema:
    """Rebuild the schema tree from ``FileMetaData.schema`` and resolve its leaves.

    Parameters
    ----------
    elements:
        The decoded schema elements, root first, in depth-first order.
    path:
        The file's path, for error messages.

    Raises
    ------
    ParquetFormatError
        The list is empty, a group claims more children than follow it,
        elements are left over after the root's subtree, groups nest deeper
        than ``MAX_SCHEMA_DEPTH``, or a type, repetition or annotation is
        invalid.
    """
    return schema_from_elements(elements, path, tree=True)[0]


# Long because: one pass over the footer's flat element list with explicit, list-indexed stack
# frames (no recursion: the depth is untrusted). It runs for every footer decoded; a helper call
# per element would add to the hottest loop of footer decoding.
def schema_from_elements(
    elements: Sequence[wire.SchemaElement], path: str | None, *, tree: bool = False
) -> tuple[Schema, list[list[bytes]]]:
    """:func:`build_schema`, plus each leaf's path as the raw name bytes of the footer.

    The raw paths let the footer decoder compare a column chunk's
    ``path_in_schema`` (a list of bytes) with its leaf without decoding names.
    With ``tree=False`` the :class:`SchemaNode` tree is built only when
    ``Schema.root`` is first read; every check runs now either way.
    """
    if not elements:
        raise ParquetFormatError("the schema is empty (no root element)", path=path)
    root = elements[0]
    root_name = _decode_name(root.name, "0 (root)", path)
    if root.type is not None and not root.num_children:
        raise ParquetFormatError("the schema root is a primitive column, not a group", path=path)
    total = len(elements)
    stack: list[list[Any]] = [
        [root, root_name, child_count(root, 1, total, path), (), 0, 0, None, []]
    ]
    raw_stack: list[bytes] = []  # raw names of the open groups below the root
    columns: list[ColumnDescriptor] = []
    raw_paths: list[list[bytes]] = []
    built_root: SchemaNode | None = None
    required = Repetition.REQUIRED
    repeated = Repetition.REPEATED
    flba = PhysicalType.FIXED_LEN_BYTE_ARRAY
    i = 1
    # Each turn either consumes one element or closes one group, so the loop
    # runs at most 2 * len(elements) times whatever the counts claim.
    while stack:
        top = stack[-1]
        if top[_REMAINING] == 0:
            stack.pop()
            if stack:
                raw_stack.pop()
            if tree:
                node = _node(
                    top[_ELEMENT],
                    top[_NAME],
                    top[_REPETITION],
                    None,
                    None,
                    path,
                    children=tuple(top[_CHILDREN]),
                    where=top[_NAME],
                )
                if stack:
                    stack[-1][_CHILDREN].append(node)
                else:
                    built_root = node
            else:
                group = top[_ELEMENT]
                if group.logicalType is not None or group.converted_type is not None:
                    resolve_logical(group, top[_NAME], path)  # the check _node() makes
            continue
        if i >= total:
            raise ParquetFormatError(
                f"schema group {'.'.join(top[_PARTS]) or top[_NAME]!r} declares more children "
                f"than the {total} schema elements hold",
                path=path,
            )
        element = elements[i]
        i += 1
        top[_REMAINING] -= 1
        raw_name = element.name
        if raw_name is None:
            raise ParquetFormatError(f"schema element {i - 1} has no name", path=path)
        name = raw_name.decode("utf-8", errors="replace")
        parts = (*top[_PARTS], name)
        value = element.repetition_type
        if value is None:
            repetition = required  # see _repetition
        else:
            found = REPETITION_BY_NUMBER.get(value)
            repetition = (
                found if found is not None else _repetition(element, _where(i - 1, parts), path)
            )
        definition = top[_DEFINITION] + (repetition is not required)
        repetition_level = top[_REP_LEVEL] + (repetition is repeated)
        if _is_group(element):
            if len(stack) >= MAX_SCHEMA_DEPTH:
                raise ParquetFormatError(
                    f"schema element {_where(i - 1, parts)}: groups nested deeper than "
                    f"{MAX_SCHEMA_DEPTH} levels",
                    path=path,
                )
            stack.append(
                [
                    element,
                    name,
                    child_count(element, i, total, path, _where(i - 1, parts)),
                    parts,
                    definition,
                    repetition_level,
                    repetition,
                    [],
                ]
            )
            raw_stack.append(raw_name)
            continue
        ptype = element.type  # never None here: _is_group() takes untyped elements
        physical = PHYSICAL_BY_NUMBER.get(ptype) if ptype is not None else None
        if physical is None:
            raise ParquetFormatError(
                f"schema element {_where(i - 1, parts)}: unknown physical type {element.type}",
                path=path,
            )
        type_length = element.type_length
        if physical is flba:
            if type_length is None or type_length < 0:
                raise ParquetFormatError(
                    f"schema element {_where(i - 1, parts)}: FIXED_LEN_BYTE_ARRAY without a "
                    f"valid type_length ({type_length})",
                    path=path,
                )
        else:
            # type_length is meaningful for FLBA only (elsewhere it is an
            # optional bit-width hint); keep it only where it defines values.
            type_length = None
        if element.logicalType is None and element.converted_type is None:
            logical = None
        else:
            logical = resolve_logical(element, _where(i - 1, parts), path)
        converted = logical_of_converted(element.converted_type)
        if tree:
            top[_CHILDREN].append(
                SchemaNode(
                    name, repetition, physical, type_length, logical, converted, element.field_id
                )
            )
        columns.append(
            ColumnDescriptor(
                len(columns),
                parts,
                physical,
                type_length,
                repetition,
                definition,
                repetition_level,
                logical,
                converted,
                element.field_id,
            )
        )
        raw_paths.append([*raw_stack, raw_name])
    if i != total:
        raise ParquetFormatError(
            f"{total - i} schema element(s) follow the root's last child", path=path
        )
    if not tree:
        return Schema.deferred(tuple(columns), functools.partial(_tree, elements, path)), raw_paths
    assert built_root is not None  # the loop only ends by closing the root
    return Schema(root=built_root, columns=tuple(columns)), raw_paths


def child_count(
    element: wire.SchemaElement,
    next_index: int,
    total: int,
    path: str | None,
    where: str = "0 (root)",
) -> int:
    count = element.num_children
    if count is None:
        count = 0
    if count < 0:
        raise ParquetFormatError(
            f"schema element {where}: negative num_children ({count})", path=path
        )
    if count > total - next_index:
        # Each child takes at least one element: reject the lie up front.
        raise ParquetFormatError(
            f"schema element {where}: num_children is {count} but only "
            f"{total - next_index} schema elements follow",
            path=path,
        )
    return count


def _node(
    element: wire.SchemaElement,
    name: str,
    repetition: Repetition | None,
    physical: PhysicalType | None,
    logical: LogicalType | None,
    path: str | None,
    *,
    children: tuple[SchemaNode, ...],
    where: str,
) -> SchemaNode:
    if physical is None and (element.logicalType is not None or element.converted_type is not None):
        logical = resolve_logical(element, where, path)
    return SchemaNode(
        name=name,
        repetition=repetition,
        physical_type=physical,
        type_length=element.type_length if physical is PhysicalType.FIXED_LEN_BYTE_ARRAY else None,
        logical_type=logical,
        converted_type=logical_of_converted(element.converted_type),
        field_id=element.field_id,
        children=children,
    )


def _tree(elements: Sequence[wire.SchemaElement], path: str | None) -> SchemaNode:
    """The tree of a deferred schema (:meth:`Schema.deferred`): the elements passed every
    check when its leaves were built, so the same walk, building nodes this time, cannot fail."""
    return schema_from_elements(elements, path, tree=True)[0].root
