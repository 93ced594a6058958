"""The end-to-end reader fuzz target: real small files, damaged by a script, read and pruned.

An input is a script::

    u8 choice        low 3 bits: the base file; bit 3: small reader limits; bit 4: strict
    then ops of 12 bytes: u8 op, u8 chunk, u16 arg, i64 value (patch ops take arg & 15
    more bytes after them as the patch)

    op 0: set bloom_filter_offset of chunk (arg bit 0: absent; bit 1: value reduced
          modulo the file size + 64, else raw)
    op 1: set bloom_filter_length of chunk (same flags)
    op 2: overwrite bytes at the chunk's filter offset + (arg >> 8) (its header)
    op 3: overwrite bytes at value modulo the file size (anywhere, footer included)
    op 4: set min_value (arg bit 4) or max_value of chunk to the patch; null_count = value
    op 5: set num_rows of the chunk's row group (arg bit 4: of the file) to value

Footer fields are changed on the decoded footer, which is then re-encoded; byte patches
are applied after, to the whole file. The base files are pyarrow files written at start-up
(filters with and without ``bloom_filter_length``) and parquet-testing's two files with
filters, when present.

Properties: reading raises only ParquetFormatError (naming the file; from the footer read
or, as column chunks are decoded on first use, from the filter read), never reads outside
the file, reads filters only from ``[4, footer_start)`` and no more bytes than two passes
over it, returns filters whose bitset is exactly the file's bytes after their header,
within the limit; pruning never raises when not strict, raises only PyBloomError when
strict, and gives every row group a verdict.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

OP = struct.Struct("<BBHq")
PATH = "fuzz.parquet"


@dataclass(frozen=True)
class Base:
    """A base file, its footer's position and a predicate over two of its columns."""

    name: str
    data: bytes
    columns: tuple[str, ...]


_bases: list[Base] | None = None


def _split(data: bytes) -> tuple[bytes, bytes]:
    (n,) = struct.unpack("<I", data[-8:-4])
    return data[: len(data) - 8 - n], data[len(data) - 8 - n : -8]


def _decode(footer: bytes) -> Any:
    from thrift.protocol import fastbinary
    from thrift.protocol.TCompactProtocol import TCompactProtocol
    from thrift.transport.TTransport import TMemoryBuffer

    from pybloom_async.parquet import thrift_specs as wire

    meta = wire.FileMetaData()
    fastbinary.decode_compact(
        meta,
        TCompactProtocol(TMemoryBuffer(footer)),
        [wire.FileMetaData, wire.FileMetaData.thrift_spec],
    )
    return meta


def _encode(meta: Any) -> bytes:
    from thrift.protocol import fastbinary

    from pybloom_async.parquet import thrift_specs as wire

    return bytes(
        fastbinary.encode_compact(meta, [wire.FileMetaData, wire.FileMetaData.thrift_spec])
    )


def _join(body: bytes, footer: bytes) -> bytes:
    return body + footer + struct.pack("<I", len(footer)) + b"PAR1"


def _pyarrow_base(rows: int, group: int) -> bytes:
    import io

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = np.arange(rows, dtype=np.int64) * 3 + 1
    table = pa.table(
        {
            "id": pa.array(ids),
            "s": pa.array([f"s{i}" for i in ids]),
            "f": pa.array(ids.astype(np.float64) / 7),
        }
    )
    sink = io.BytesIO()
    pq.write_table(
        table,
        sink,
        row_group_size=group,
        bloom_filter_options={"id": {"ndv": group, "fpp": 0.05}, "s": True, "f": True},
    )
    return sink.getvalue()


def _strip_lengths(data: bytes) -> bytes:
    body, footer = _split(data)
    meta = _decode(footer)
    for rg in meta.row_groups:
        for chunk in rg.columns:
            chunk.meta_data.bloom_filter_length = None
    return _join(body, _encode(meta))


def bases() -> list[Base]:
    """The base files (built once per process, deterministically)."""
    global _bases
    if _bases is None:
        from . import seeds

        small = _pyarrow_base(600, 200)
        large = _pyarrow_base(9000, 3000)  # filters of several KiB, some outside a small tail
        found = [
            Base("pyarrow", small, ("id", "s")),
            Base("pyarrow-no-length", _strip_lengths(small), ("id", "s")),
            Base("pyarrow-large", large, ("id", "f")),
            Base("pyarrow-large-no-length", _strip_lengths(large), ("s", "f")),
        ]
        testing = seeds.testdata() / "parquet-testing" / "data"
        for name in (
            "data_index_bloom_encoding_stats.parquet",
            "data_index_bloom_encoding_with_length.parquet",
        ):
            path = testing / name
            if path.exists():
                found.append(Base(name, path.read_bytes(), ("String", "String")))
        _bases = found
    return _bases


def encode(
    base: int, ops: Sequence[tuple[int, int, int, int, bytes]] = (), flags: int = 0
) -> bytes:
    """A script in the format above: ops are (op, chunk, arg, value, patch)."""
    out = bytearray([base | flags])
    for op, chunk, arg, value, patch in ops:
        out += OP.pack(op, chunk, arg, value)
        out += patch[: arg & 15] if op in (2, 3, 4) else b""
    return bytes(out)


def _apply(base: Base, script: bytes) -> bytes:
    body, footer = _split(base.data)
    meta = _decode(footer)
    chunks = [c for rg in meta.row_groups for c in rg.columns]
    patches: list[tuple[int, bytes]] = []
    size = len(base.data)
    pos = 1
    changed = False
    while pos + OP.size <= len(script):
        op, which, arg, value = OP.unpack_from(script, pos)
        pos += OP.size
        patch = b""
        if op % 8 in (2, 3, 4):
            patch = script[pos : pos + (arg & 15)]
            pos += len(patch)
        if not chunks:
            continue
        chunk = chunks[which % len(chunks)]
        md = chunk.meta_data
        op %= 8
        if op in (0, 1):
            new: int | None = value % (size + 64) if arg & 2 else value
            if arg & 1:
                new = None
            if op == 0:
                md.bloom_filter_offset = new
            else:  # an i32 on the wire
                md.bloom_filter_length = None if new is None else _i32(new)
            changed = True
        elif op == 2 and md.bloom_filter_offset is not None:
            patches.append((md.bloom_filter_offset + (arg >> 8), patch))
        elif op == 3:
            patches.append((value % size, patch))
        elif op == 4:
            from pybloom_async.parquet import thrift_specs as wire

            stats = md.statistics or wire.Statistics()
            if arg & 16:
                stats.min_value = patch
            else:
                stats.max_value = patch
            stats.null_count = value
            md.statistics = stats
            changed = True
        elif op == 5:
            if arg & 16:
                meta.num_rows = value
            else:
                meta.row_groups[which % len(meta.row_groups)].num_rows = value
            changed = True
    data = bytearray(_join(body, _encode(meta)) if changed else base.data)
    for at, patch in patches:
        if 0 <= at < len(data):
            data[at : at + len(patch)] = patch[: len(data) - at]
    return bytes(data)


def _i32(value: int) -> int:
    """``value`` wrapped to a signed 32-bit int, as a writer of an i32 field would store it."""
    return (value + 2**31) % 2**32 - 2**31


def _reader_classes() -> tuple[type[Any], type[Any]]:
    from pybloom_async.io.memory import MemorySource
    from pybloom_async.read.reader import BloomReader

    class LoggingSource(MemorySource):
        """A memory source that records every range it is asked for."""

        def __init__(self, data: bytes, log: list[tuple[int, int]], **kw: Any) -> None:
            super().__init__(data, **kw)
            self._log = log

        async def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
            self._log.extend(ranges)
            return await super()._read(ranges)

    class MemoryReader(BloomReader):
        """A BloomReader whose every location is the one file in memory."""

        def __init__(self, data: bytes, log: list[tuple[int, int]], **kw: Any) -> None:
            super().__init__(**kw)
            self._data = data
            self._log = log

        def open(self, location: Any) -> Any:
            return LoggingSource(self._data, self._log, path=os.fspath(location), stats=self.stats)

    return LoggingSource, MemoryReader


def check_reader(script: bytes) -> None:
    """Damage one base file as ``script`` says, read and prune it, check the properties."""
    import anyio

    from pybloom_async import col, prune
    from pybloom_async.errors import ParquetFormatError, PredicateError, PyBloomError
    from pybloom_async.pruning.verdicts import Rule
    from pybloom_async.read.fetch import FilterState, ReaderConfig
    from pybloom_async.read.plan import PlanConfig

    if not script:
        return
    all_bases = bases()
    base = all_bases[(script[0] & 7) % len(all_bases)]
    data = _apply(base, script)
    small = bool(script[0] & 8)
    strict = bool(script[0] & 16)
    config = (
        ReaderConfig(
            footer_read_bytes=64,
            max_footer_bytes=4096,
            plan=PlanConfig(
                max_hole_bytes=8,
                max_range_bytes=256,
                guess_bytes=64,
                max_filter_bytes=1024,
                max_header_bytes=32,
            ),
        )
        if small
        else ReaderConfig()
    )
    _, reader_class = _reader_classes()
    log: list[tuple[int, int]] = []

    async def read() -> None:
        rdr = reader_class(data, log, config=config)
        try:
            footer = await rdr.footer(PATH)
        except ParquetFormatError as exc:
            assert PATH in str(exc), str(exc)
            return
        footer_reads = len(log)
        footer_start = footer.location.metadata_offset
        try:
            _, filters = await rdr.footer_and_filters(PATH)
        except ParquetFormatError as exc:
            # Column chunks are decoded (and validated) on first use: a damaged one is
            # reported now, still naming the file.
            assert PATH in str(exc), str(exc)
            return
        filter_reads = log[footer_reads:]
        for start, end in filter_reads:
            assert 4 <= start < end <= footer_start, (start, end, footer_start)
        assert sum(e - s for s, e in filter_reads) <= 2 * footer_start
        limit = config.plan.max_filter_bytes
        for read in filters.values():
            if read.state is not FilterState.OK:
                assert read.filter is None and read.reason
                continue
            assert read.filter is not None and read.offset is not None
            assert read.header_len is not None
            n = read.filter.num_bytes
            assert 32 <= n <= limit and n & (n - 1) == 0
            start = read.offset + read.header_len
            assert bytes(read.filter.bitset) == data[start : start + n]
            if read.length is not None:
                assert read.header_len + n == read.length

    anyio.run(read)
    for start, end in log:
        assert 0 <= start < end <= len(data)

    first, second = base.columns
    # "\ud800" is text no UTF-8 column holds; "absent" a column the file lacks.
    where = (col(first) == 7) | col(second).isin(["s7", "x", "\ud800"]) | (col("absent") == 1)

    async def run_prune() -> Any:
        rdr = reader_class(data, [], config=config)
        return await prune(
            [PATH],
            where,
            reader=rdr,
            on_error="raise" if strict else "skip",
            require_columns=False,
        )

    try:
        verdicts = anyio.run(run_prune)
    except PredicateError as exc:
        # Damage can change a column's type: 7 is then not a value of it, an error (naming
        # the file) with or without strict; strict also raises for the absent column.
        assert strict or ("is not a value of this column" in str(exc) and PATH in str(exc)), exc
        return
    except PyBloomError as exc:
        assert strict, f"prune raised without strict: {exc!r}"
        return
    if not verdicts:
        # Legitimate only for a footer listing no row group (an empty file; or one whose
        # row-group list was damaged to empty: then no reader sees its rows either).
        from pybloom_async.parquet import decode_file_metadata

        (n,) = struct.unpack("<I", data[-8:-4])
        meta = decode_file_metadata(data[len(data) - 8 - n : -8])
        assert not meta.row_groups, "no verdict for a file with row groups"
        return
    excluding = {Rule.BLOOM_FILTER, Rule.STATISTICS, Rule.TYPE, Rule.NULLS}
    for v in verdicts:
        assert v.file == PATH
        assert v.kept or v.rule in excluding, v
        if v.row_group is None:
            assert v.kept and v.rule is Rule.UNREADABLE and len(verdicts) == 1


_native_dir: str | None = None


async def _python_only(*args: Any) -> None:
    return None


def check_native(script: bytes) -> None:
    """The C evaluator of equalities, and the file pass, against the Python one on a
    damaged file.

    The script damages a base file as for :func:`check_reader` (byte 1, when present, also
    picks the predicate); the file is written to disk (the C side probes filters where
    they lie) and pruned with the C path and without it; then again right after the base
    file, undamaged, in the same run: the base file binds its schema, and the damaged one
    goes through the file pass (``csrc/footer/pass.c``). Property: the same verdicts,
    reasons and rules included, or the same error.
    """
    import tempfile

    import pybloom_async.pruning.api as prune_api
    from pybloom_async import col, prune_sync
    from pybloom_async.errors import PyBloomError

    global _native_dir
    if not script:
        return
    all_bases = bases()
    base = all_bases[(script[0] & 7) % len(all_bases)]
    data = _apply(base, script)
    if _native_dir is None:
        _native_dir = tempfile.mkdtemp(prefix="pybloom-native-fuzz-")
    path = os.path.join(_native_dir, PATH)
    with open(path, "wb") as f:
        f.write(data)
    first, second = base.columns
    pick = script[1] if len(script) > 1 else 0
    a = col(first).isin([7, 1, 10, 4000]) if first == "id" else col(first) == "s7"
    b = col(second).isin(["s7", "x", "s1"]) if second != "f" else col(second) == 1.0
    ranged = col(second) >= ("s5" if second != "f" else 0.5)  # a leaf the statistics decide
    where = (a, b, a & b, a | b, a & (col("absent") == 1), a & ranged, a | ~b)[pick % 7]
    on_error = "raise" if script[0] & 16 else "skip"

    def verdicts() -> Any:
        try:
            found = prune_sync(path, where, on_error=on_error, require_columns=False)
        except PyBloomError as exc:
            return (type(exc).__name__, str(exc))
        return [v.to_dict() for v in found]

    native = verdicts()
    clean = os.path.join(_native_dir, f"base-{all_bases.index(base)}.parquet")
    if not os.path.exists(clean):
        with open(clean, "wb") as f:
            f.write(base.data)
    try:
        after = prune_sync([clean, path], where, on_error=on_error, require_columns=False)
        passed: Any = [v.to_dict() for v in after if v.file == path]
    except PyBloomError:
        passed = None  # the run's error may name the base file: compared below on its own
    real = prune_api.decide_natively
    prune_api.decide_natively = _python_only  # type: ignore[assignment]
    try:
        python = verdicts()
    finally:
        prune_api.decide_natively = real
    assert native == python, f"the C and Python evaluators disagree: {native!r} / {python!r}"
    if passed is not None:
        assert passed == python, f"the file pass and Python disagree: {passed!r} / {python!r}"
