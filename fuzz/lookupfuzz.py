"""The lookup fuzz target: small real files whose footer a script damages, then ``lookup``.

Where ``reader`` stops at pruning, this target goes on to read rows: pyarrow decodes the
footer and the row groups kept, the page index is read, rows are matched. A footer that
pyarrow's C++ metadata classes refuse must end in the file's error, never in the end of
the process (an abort is a crash libFuzzer reports).

An input is a script::

    u8 choice        low 2 bits: the base file; bit 2: page_index off; bit 3: on_error="skip";
                     bit 4: project the predicate column only
    then ops of 4 bytes: u8 op, u16 position (modulo the footer's length), u8 value

    op 0: flip bit (value & 7) of the footer byte at position
    op 1: set the footer byte at position to value
    op 2: remove the footer byte at position
    op 3: insert value before the footer byte at position

Every op works on the FileMetaData bytes only; the length in the trailer follows them, so
the damaged footer is always found and decoded (or refused) by the decoders.

Properties: ``lookup`` returns a table or raises ParquetFormatError or SourceError naming
the file (PredicateError when the damage changed a column's type, SchemaMismatchError
when it changed the file's schema so the result has none); with ``on_error="skip"`` it
raises neither, and reports the file in ``skipped`` instead; every row returned satisfies
the predicate.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from typing import Any

OP = struct.Struct("<BHB")
PATH = "fuzz.parquet"
#: The ids the predicate asks for (the bases hold 0, 3, 6, ...).
WANTED = (0, 6, 7, 299, 1_000_000)

_bases: list[bytes] | None = None


def _base(nested: bool, dictionary: bool, page_index: bool) -> bytes:
    import io

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = np.arange(300, dtype=np.int64) * 3
    columns: dict[str, Any] = {
        "id": pa.array(ids),
        "s": pa.array([None if i % 7 == 0 else f"s{i % 40}" for i in ids]),
    }
    if nested:
        columns["l"] = pa.array([[int(i), None] if i % 5 else None for i in ids])
    sink = io.BytesIO()
    pq.write_table(
        pa.table(columns),
        sink,
        row_group_size=100,
        use_dictionary=dictionary,
        write_page_index=page_index,
        data_page_size=256,
        bloom_filter_options={"id": {"ndv": 100, "fpp": 0.05}},
    )
    return sink.getvalue()


def bases() -> list[bytes]:
    """The base files (built once per process): each with size statistics; with and
    without a page index, nested (repetition levels) and dictionary-encoded columns."""
    global _bases
    if _bases is None:
        _bases = [
            _base(nested=False, dictionary=True, page_index=True),
            _base(nested=True, dictionary=False, page_index=True),
            _base(nested=True, dictionary=True, page_index=False),
            _base(nested=False, dictionary=False, page_index=False),
        ]
    return _bases


def encode(base: int, ops: Sequence[tuple[int, int, int]] = (), flags: int = 0) -> bytes:
    """A script in the format above: ops are (op, position, value)."""
    return bytes([base | flags]) + b"".join(OP.pack(*op) for op in ops)


def damaged(base: bytes, script: bytes) -> bytes:
    """``base`` with its FileMetaData changed as the ops of ``script`` say."""
    (n,) = struct.unpack("<I", base[-8:-4])
    body, footer = base[: len(base) - 8 - n], bytearray(base[len(base) - 8 - n : -8])
    for pos in range(1, len(script) - OP.size + 1, OP.size):
        op, at, value = OP.unpack_from(script, pos)
        if not footer:
            break
        at %= len(footer)
        op %= 4
        if op == 0:
            footer[at] ^= 1 << (value & 7)
        elif op == 1:
            footer[at] = value
        elif op == 2:
            del footer[at]
        else:
            footer.insert(at, value)
    return body + bytes(footer) + struct.pack("<I", len(footer)) + b"PAR1"


def _reader(data: bytes) -> Any:
    from pybloom_async.io.memory import MemorySource
    from pybloom_async.read.reader import BloomReader

    class MemoryReader(BloomReader):
        """A BloomReader whose every location is the one file in memory."""

        def open(self, location: Any) -> Any:
            return MemorySource(data, path=os.fspath(location), stats=self.stats)

    return MemoryReader()


def check_lookup(script: bytes) -> None:
    """Damage one base file's footer as ``script`` says, look rows up, check the properties."""
    import anyio
    import pyarrow.compute as pc

    from pybloom_async import col, lookup
    from pybloom_async.errors import (
        ParquetFormatError,
        PredicateError,
        PyBloomError,
        SchemaMismatchError,
        SourceError,
    )

    if not script:
        return
    choice = script[0]
    all_bases = bases()
    data = damaged(all_bases[choice % len(all_bases)], script)
    skip = bool(choice & 8)
    where = col("id").isin(list(WANTED)) | (col("s") == "s7")
    columns = ["id", "s"] if choice & 16 else None
    skipped: list[PyBloomError] = []

    async def run() -> Any:
        return await lookup(
            [PATH],
            where,
            columns,
            on_error="skip" if skip else "raise",
            skipped=skipped,
            page_index=not choice & 4,
            reader=_reader(data),
        )

    try:
        table = anyio.run(run)
    except (ParquetFormatError, SourceError) as exc:
        assert not skip, f"on_error='skip' raised {exc!r}"
        assert PATH in str(exc), str(exc)
        return
    except (PredicateError, SchemaMismatchError) as exc:
        # Damage can change a column's type or the schema: then "s7" or an id may not be a
        # value of the column, an error naming the file whatever on_error says.
        assert PATH in str(exc), str(exc)
        return
    for exc in skipped:
        assert isinstance(exc, (ParquetFormatError, SourceError)), repr(exc)
        assert PATH in str(exc), str(exc)
    if table.num_rows and "id" in table.column_names and "s" in table.column_names:
        ids = table.column("id")
        s = table.column("s")
        ok = pc.or_kleene(pc.is_in(ids, value_set=_wanted(ids.type)), pc.equal(s, "s7"))
        assert pc.all(pc.fill_null(ok, False)).as_py(), "a row that does not match"


def _wanted(arrow_type: Any) -> Any:
    import pyarrow as pa

    try:
        return pa.array(WANTED, arrow_type)
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        return pa.array([], arrow_type)
