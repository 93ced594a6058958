"""A footer's bytes, and the parts of it decoded on first use (chunk details, key/values).

The lazily decoded parts of :class:`.metadata.FileMetaData` hang off helpers that hold no
reference back to the objects that use them: a footer is then freed by reference
counting, not left in a cycle for the garbage collector (thousands of footers a second in
a bulk prune). Two threads reading the same part for the first time both decode it from
the same bytes and either equal result stays; no lock (a lock would also make footers
unpicklable).
"""

from __future__ import annotations

from typing import Any, Literal

from ..errors import ParquetFormatError
from . import thrift_specs as wire
from .elements import KeyValue
from .passes import (
    DETAILS_PASS,
    KEY_VALUES_PASS,
    SCHEMA_PASS,
    UNSET,
    Unset,
    check_chunk_count,
    check_details,
    chunk_place,
)
from .schema import ColumnDescriptor
from .thrift import decode_struct, lenient_text, require_field


class FooterBytes:
    """A footer's bytes; decodes the column-chunk details and key/value metadata on demand."""

    __slots__ = ("_details", "_key_values", "columns", "data", "decoder", "num_groups", "path")

    def __init__(
        self,
        data: bytes,
        path: str | None,
        decoder: Literal["fastbinary", "python"],
        num_groups: int,
        columns: tuple[ColumnDescriptor, ...],
    ) -> None:
        self.data = data
        self.path = path
        self.decoder: Literal["fastbinary", "python"] = decoder
        self.num_groups = num_groups
        self.columns = columns
        self._details: tuple[list[wire.ColumnChunk], ...] | None = None
        self._key_values: tuple[KeyValue, ...] | Unset | None = UNSET

    def decode(self, args: list[Any]) -> wire.FileMetaData:
        """One pass of the decoder over the footer, reading what ``args`` name."""
        raw = wire.FileMetaData()
        decode_struct(
            self.data, raw, args, what="footer (FileMetaData)", path=self.path, decoder=self.decoder
        )
        return raw

    def groups(self, raw: wire.FileMetaData) -> list[wire.RowGroup]:
        """The row groups of a later pass, checked against the first pass's count."""
        groups = raw.row_groups or []
        if len(groups) != self.num_groups:  # the same list read again: cannot differ
            raise ParquetFormatError(
                f"the footer's row groups changed between reads ({len(groups)} vs "
                f"{self.num_groups})",
                path=self.path,
            )
        return groups

    def details(self) -> tuple[list[wire.ColumnChunk], ...]:
        """Per row group, per column: the chunk fields pruning does not use, validated."""
        found = self._details
        if found is None:
            found = self._details = self._decode_details()
        return found

    def _decode_details(self) -> tuple[list[wire.ColumnChunk], ...]:
        out = []
        columns = self.columns
        for index, group in enumerate(self.groups(self.decode(DETAILS_PASS))):
            chunks = group.columns or []
            check_chunk_count(chunks, len(columns), index, self.path)  # as the chunks pass
            for chunk, column in zip(chunks, columns, strict=True):
                md = chunk.meta_data
                if md is None:  # checked in the chunks pass already
                    where = chunk_place(index, column)
                    raise ParquetFormatError(
                        f"column chunk has no meta_data ({where})", path=self.path
                    )
                check_details(md, index, column, self.path)
            out.append(chunks)
        return tuple(out)

    def schema_elements(self) -> list[wire.SchemaElement]:
        """The schema's elements as the wire holds them (a pass of their own: only a page
        read handed to pyarrow writes them again, see :mod:`.page_index`)."""
        return list(self.decode(SCHEMA_PASS).schema or ())

    def key_values(self) -> tuple[KeyValue, ...] | None:
        """The key/value metadata (None when the footer has none), validated."""
        found = self._key_values
        if isinstance(found, Unset):
            found = self.keep_key_values(self.decode(KEY_VALUES_PASS))
        return found

    def keep_key_values(self, raw: wire.FileMetaData) -> tuple[KeyValue, ...] | None:
        """The key/value metadata of a pass that read them, validated and kept."""
        path = self.path
        found = self._key_values = (
            None
            if raw.key_value_metadata is None
            else tuple(
                KeyValue(
                    key=lenient_text(require_field(item.key, "KeyValue.key", path)) or "",
                    value=item.value,
                )
                for item in raw.key_value_metadata
            )
        )
        return found
