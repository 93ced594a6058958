"""The fuzz targets: one function per parser of untrusted bytes, and the properties it keeps.

A target is registered with :func:`target` (Python, run under atheris) or :func:`c_target`
(C, built with clang's libFuzzer and ASan + UBSan). Adding one takes a few lines::

    @target("rewrite", seeds=seeds.footers, instrument=("pybloom_async.rewrite.add_filters",))
    def fuzz_rewrite(data: bytes) -> None:
        ...  # raise anything but the expected errors, or fail an assert, to report a crash

A Python target gets the fuzzer's bytes and must return normally, or raise one of the
package's documented errors (caught here, per target), for every input. Any other
exception, a failed ``assert`` (the properties), a hang past the per-input timeout or an
RSS above the runner's limit is a crash: libFuzzer saves the input under
``fuzz/artifacts/<target>/`` and every such input becomes a test in
``tests/robustness/test_fuzz_regressions.py``.

The Python targets import the package lazily, inside the functions, so that
``fuzz/harness.py`` can load this module first and only then import the package under
atheris's instrumentation.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import seeds

__all__ = ["TARGETS", "CTarget", "PyTarget", "c_target", "target"]

REPO = Path(__file__).resolve().parent.parent

SeedFn = Callable[[], Iterable[tuple[str, bytes]]]


@dataclass(frozen=True)
class PyTarget:
    """A Python fuzz target run under atheris."""

    name: str
    run: Callable[[bytes], None]
    seeds: SeedFn
    #: Module prefixes atheris instruments for coverage (the package always is).
    instrument: tuple[str, ...] = ()
    #: libFuzzer's -max_len: the largest input tried.
    max_len: int = 4096
    #: Run with the C core built with ASan + UBSan (``fuzz/run.py``), always: for targets
    #: that drive the C core and pyarrow's C++ together (others: with ``--sanitize``).
    sanitized: bool = False
    kind: str = field(default="python", init=False)


@dataclass(frozen=True)
class CTarget:
    """A C fuzz target: ``source`` holds ``LLVMFuzzerTestOneInput``, linked with csrc/*.c."""

    name: str
    source: Path
    seeds: SeedFn
    max_len: int = 4096
    #: Preprocessor definitions for this target's build of the core (``NAME=VALUE``).
    defines: tuple[str, ...] = ()
    kind: str = field(default="c", init=False)


TARGETS: dict[str, PyTarget | CTarget] = {}


def target(
    name: str,
    *,
    seeds: SeedFn,
    instrument: tuple[str, ...] = (),
    max_len: int = 4096,
    sanitized: bool = False,
) -> Callable[[Callable[[bytes], None]], Callable[[bytes], None]]:
    """Register a Python fuzz target (decorator)."""

    def register(fn: Callable[[bytes], None]) -> Callable[[bytes], None]:
        if name in TARGETS:
            raise ValueError(f"fuzz target {name!r} is registered twice")
        instrumented = ("pybloom_async", *instrument)
        TARGETS[name] = PyTarget(name, fn, seeds, instrumented, max_len, sanitized)
        return fn

    return register


def c_target(
    name: str, source: str, *, seeds: SeedFn, max_len: int = 4096, defines: tuple[str, ...] = ()
) -> None:
    """Register a C fuzz target built from ``fuzz/c/<source>``."""
    if name in TARGETS:
        raise ValueError(f"fuzz target {name!r} is registered twice")
    TARGETS[name] = CTarget(name, REPO / "fuzz" / "c" / source, seeds, max_len, defines)


# The limits a target picks from with one input byte: the default, small ones that real
# seeds exceed (so the refusal paths run), and odd values a caller might pass.
MAX_BYTES_CHOICES = (128 << 20, 1024, 32, 64 << 10, 31, 0, 1000, 2**31, 2**64 - 1, 2**70)


# --------------------------------------------------------------------------- SBBF bytes


@target("filter_from_bytes", seeds=seeds.filters, max_len=8192)
def fuzz_filter_from_bytes(data: bytes) -> None:
    """``SplitBlockBloomFilter.from_bytes``: a filter as a Parquet file stores it.

    Properties: only InvalidFilterError (or its size subclasses) is raised; a filter that
    loads has exactly the bitset that followed its header, within the limit, and survives a
    round trip through ``to_bytes``; probing it works.
    """
    import numpy as np

    from pybloom_async.core.filter import SplitBlockBloomFilter
    from pybloom_async.core.sizes import decode_header
    from pybloom_async.errors import InvalidFilterError

    if not data:
        return
    max_bytes = MAX_BYTES_CHOICES[data[0] % len(MAX_BYTES_CHOICES)]
    body = data[1:]
    source: Any = bytearray(body) if data[0] & 0x80 else body  # bytes and other buffers
    try:
        bloom = SplitBlockBloomFilter.from_bytes(source, max_bytes=max_bytes)
    except InvalidFilterError:
        return
    header_len, num_bytes = decode_header(body, max_bytes=max_bytes)
    assert bloom.num_bytes == num_bytes == len(body) - header_len
    assert 32 <= num_bytes <= max_bytes and num_bytes & (num_bytes - 1) == 0
    assert bytes(bloom.bitset) == body[header_len:]
    again = SplitBlockBloomFilter.from_bytes(bloom.to_bytes(), max_bytes=max(num_bytes, 32))
    assert again == bloom
    hashes = np.frombuffer(body[: len(body) // 8 * 8], dtype="<u8")
    answers = bloom.check_hashes(hashes)
    assert answers.shape == hashes.shape
    assert bloom.count_hashes(hashes) == int(answers.sum())
    bloom.insert_hashes(hashes)
    assert bool(bloom.check_hashes(hashes).all())


def _reference_header(buf: bytes) -> tuple[int, int, tuple[Any, Any, Any]]:
    """Decode a BloomFilterHeader with thrift's pure-Python compact protocol.

    Returns (bytes consumed, numBytes, (algorithm, hash, compression)). An independent
    decoder: the C one must agree with it on every header the C one accepts.
    """
    from thrift.protocol.TBase import TBase
    from thrift.protocol.TCompactProtocol import TCompactProtocol
    from thrift.Thrift import TType
    from thrift.transport.TTransport import TMemoryBuffer

    class Empty(TBase):  # type: ignore[misc]
        thrift_spec: tuple[Any, ...] = ()

    class Member(TBase):  # type: ignore[misc]  # union { 1: Empty }
        thrift_spec = (None, (1, TType.STRUCT, "member", [Empty, Empty.thrift_spec], None))

        def __init__(self) -> None:
            self.member: Any = None

    class Header(TBase):  # type: ignore[misc]
        thrift_spec = (
            None,
            (1, TType.I32, "numBytes", None, None),
            (2, TType.STRUCT, "algorithm", [Member, Member.thrift_spec], None),
            (3, TType.STRUCT, "hash", [Member, Member.thrift_spec], None),
            (4, TType.STRUCT, "compression", [Member, Member.thrift_spec], None),
        )

        def __init__(self) -> None:
            self.numBytes: Any = None
            self.algorithm: Any = None
            self.hash: Any = None
            self.compression: Any = None

    class BinaryProtocol(TCompactProtocol):  # type: ignore[misc]
        # Skipped strings are bytes, not text: thrift's default decodes them as UTF-8.
        def readString(self) -> Any:
            return self.readBinary()

        # thrift's readStruct looks the field id up in the spec tuple, so a negative id
        # picks a field from its end (found by this target): send those past the spec.
        def readFieldBegin(self) -> Any:
            name, ttype, fid = super().readFieldBegin()
            return name, ttype, fid if fid >= 0 else 32767

    transport = TMemoryBuffer(buf)
    header = Header()
    header.read(BinaryProtocol(transport))
    return (
        transport._buffer.tell(),
        header.numBytes,
        (header.algorithm, header.hash, header.compression),
    )


@target("bloom_header", seeds=seeds.headers, instrument=("thrift",), max_len=256)
def fuzz_bloom_header(data: bytes) -> None:
    """``decode_header`` (the C decoder of BloomFilterHeader, through cffi).

    Properties: only InvalidFilterError is raised; an accepted header lies inside the
    buffer, announces a power of two within the limit, decodes the same from exactly its
    own bytes (nothing after it was read), and thrift's own decoder agrees with it.
    """
    from pybloom_async.core.sizes import decode_header
    from pybloom_async.errors import FilterTooLargeError, InvalidFilterError

    if not data:
        return
    max_bytes = MAX_BYTES_CHOICES[data[0] % len(MAX_BYTES_CHOICES)]
    buf = data[1:]
    try:
        header_len, num_bytes = decode_header(buf, max_bytes=max_bytes)
    except FilterTooLargeError as exc:
        assert str(max_bytes) in str(exc)
        return
    except InvalidFilterError:
        return
    assert 0 < header_len <= len(buf)
    assert 32 <= num_bytes <= max_bytes and num_bytes & (num_bytes - 1) == 0
    assert decode_header(buf[:header_len], max_bytes=max_bytes) == (header_len, num_bytes)
    assert decode_header(buf[:header_len] + b"\xff" * 4, max_bytes=max_bytes) == (
        header_len,
        num_bytes,
    )
    consumed, ref_num_bytes, members = _reference_header(buf)
    assert (consumed, ref_num_bytes) == (header_len, num_bytes), (consumed, ref_num_bytes)
    assert all(m is not None and m.member is not None for m in members)


# --------------------------------------------------------------------------- footers

FUZZ_PATH = "fuzz.parquet"


_CHUNK_FIELDS = (
    "row_group",
    "column",
    "codec",
    "num_values",
    "encodings",
    "data_page_offset",
    "dictionary_page_offset",
    "index_page_offset",
    "total_compressed_size",
    "total_uncompressed_size",
    "encoding_stats",
    "bloom_filter_offset",
    "bloom_filter_length",
    "file_path",
    "file_offset",
)
_GROUP_FIELDS = (
    "index",
    "num_rows",
    "total_byte_size",
    "file_offset",
    "total_compressed_size",
    "ordinal",
)


def _snapshot(meta: Any) -> tuple[Any, ...]:
    """Every public field of a decoded footer, read through its public properties."""
    groups = []
    for group in meta.row_groups:
        chunks = []
        for chunk in group.columns:
            stats = chunk.statistics
            chunks.append(
                (
                    *(getattr(chunk, name) for name in _CHUNK_FIELDS),
                    None if stats is None else tuple(sorted(vars(stats).items())),
                )
            )
        groups.append((*(getattr(group, name) for name in _GROUP_FIELDS), tuple(chunks)))
    kv = meta.key_value_metadata
    return (
        meta.version,
        meta.num_rows,
        meta.schema,
        meta.created_by,
        None if kv is None else tuple((item.key, item.value) for item in kv),
        tuple(groups),
    )


#: A FileMetaData holding one field with id -1 (an empty struct): no such field exists, so
#: both decoders must skip it. Found by ``bloom_header``: thrift's pure-Python readStruct
#: indexes its spec tuple with the id, so -1 read as the spec's last field
#: (``encryption_algorithm``) and the file was refused as encrypted. Fixed in footer.py;
#: ``tests/robustness/test_fuzz_regressions.py`` keeps it so.
NEGATIVE_FIELD_ID_FOOTER = bytes.fromhex("1502191c480172001600190c0c010000")


@target("footer", seeds=seeds.footers, instrument=("thrift",), max_len=65536)
def fuzz_footer(data: bytes) -> None:
    """The footer decoder: thrift FileMetaData (both decoders) and the schema built from it.

    Properties: only ParquetFormatError (EncryptedFileError included) is raised, naming
    the file, whether the footer is decoded at once or lazily (then from the properties
    read later); the lazy and the eager decoding agree on every footer and every field;
    the pure-Python decoder accepts every footer the C one does and decodes every field
    the same; every column chunk of a decoded footer matches its schema leaf; the trailer
    parser finds the footer in a file made of it.
    """
    from pybloom_async.errors import ParquetFormatError
    from pybloom_async.parquet import decode_file_metadata, parse_footer_tail
    from pybloom_async.parquet.decode import decode_file_metadata_with

    def decoded(decode: Callable[[], Any]) -> tuple[Any, ...] | ParquetFormatError:
        try:
            return _snapshot(decode())
        except ParquetFormatError as exc:
            assert FUZZ_PATH in str(exc), str(exc)
            return exc

    fast = decoded(lambda: decode_file_metadata_with(data, FUZZ_PATH, "fastbinary"))
    lazy = decoded(lambda: decode_file_metadata(data, FUZZ_PATH))
    slow = decoded(lambda: decode_file_metadata_with(data, FUZZ_PATH, "python"))
    # The public (lazy) path and the eager C decoder: the same answer, always.
    assert type(fast) is type(lazy), f"lazy and eager disagree: {fast!r} / {lazy!r}"
    assert not isinstance(fast, tuple) or fast == lazy, "lazy and eager decode differently"
    # The pure-Python fallback (thrift < 0.25): it must accept whatever the C decoder
    # accepts, and decode it the same. It may accept more in one known way, reported and
    # kept in tests/robustness/test_fuzz_regressions.py: thrift's Python protocol reads i16 and i32
    # varints of any length, where the C decoder stops at 3 and 5 bytes.
    if isinstance(fast, tuple):
        assert slow == fast, f"the Python decoder disagrees: {slow!r}"
    elif not isinstance(slow, ParquetFormatError):
        assert "varint exceeded" in str(fast), f"only the Python decoder accepts: {fast!r}"
    if isinstance(fast, tuple):
        meta = decode_file_metadata_with(data, FUZZ_PATH, "fastbinary")
        columns = meta.schema.columns
        for group in meta.row_groups:
            assert len(group.columns) == len(columns)
            for chunk, column in zip(group.columns, columns, strict=True):
                assert chunk.column == column and chunk.row_group == group.index
    if data:
        whole = b"PAR1" + data + struct.pack("<I", len(data)) + b"PAR1"
        location = parse_footer_tail(whole, len(whole), path=FUZZ_PATH)
        assert bytes(location.metadata_bytes(whole)) == data


def scan_agrees(data: bytes, path: str = FUZZ_PATH) -> str:
    """Assert that the footer scanner agrees with the decoder on FileMetaData ``data``.

    Either the decoder's first pass refuses the footer (no scan runs then: "head"), or the
    scanner refuses it where the decoder's column chunks do, with the same error class
    ("refused") or another ("refused-otherwise"), or it refuses a footer the decoder reads
    ("read-by-decoder"), or it reads the decoder's values: row counts, schema leaves, and
    for every leaf (and subsets of them) type, value count, statistics, filter and
    page-index places, codec and sizes ("read"). What must never happen is the scanner
    reading a footer the decoder refuses, or reading other values. A refusal is always
    safe: the package never reports the scanner's verdict, it asks the decoder then
    (``ChunkTable.some`` and ``scan_records``: the decoder raises its own error or reads
    the chunks). The scanner stops at the first chunk it refuses; the decoder reads the
    whole footer first, so a footer with a refused chunk and damage after it, or a
    ``row_groups`` list that a later one replaces, can be refused for another reason, or
    read by the decoder alone. Also the property of tests/unit/parquet/test_scan.py.
    """
    from pybloom_async.errors import ParquetFormatError, PyBloomError
    from pybloom_async.parquet import THRIFT_DECODER
    from pybloom_async.parquet import thrift_specs as wire
    from pybloom_async.parquet.decode import decode_file_metadata_with
    from pybloom_async.parquet.scan import scan_footer
    from pybloom_async.parquet.schema_build import schema_from_elements
    from pybloom_async.parquet.thrift import decode_struct

    def schema_in(buf: bytes) -> Any:
        head = wire.FileMetaData()
        decode_struct(
            buf,
            head,
            wire.decode_args(wire.FileMetaData, ("schema",)),
            what="footer",
            path=path,
            decoder=THRIFT_DECODER,
        )
        return head.schema

    try:
        meta = decode_file_metadata_with(data, path, THRIFT_DECODER, lazy=True)
    except ParquetFormatError:
        # The file pass (csrc/footer/pass.c) takes a footer whose schema it knows and whose
        # scan says its head is complete: such a footer must be one the decoder reads.
        try:
            known = schema_from_elements(schema_in(data), path)
        except Exception:
            return "head"
        try:
            scan = scan_footer(data, *known, [], groups=0)
        except PyBloomError:
            return "head"
        assert not scan.head_complete, "the scanner calls complete a head the decoder refuses"
        return "head"
    elements = schema_in(data)
    schema, raw_paths = schema_from_elements(elements, path)
    leaves = len(schema.columns)
    expected: type[Exception] | None = None
    try:
        model = [rg.columns for rg in meta.row_groups]
    except ParquetFormatError as exc:
        expected = type(exc)
    wanted_sets = [list(range(leaves)), [leaves - 1] if leaves else [], []]
    outcome = "refused" if expected is not None else "read"
    for wanted in wanted_sets:
        try:
            scan = scan_footer(data, schema, raw_paths, wanted, groups=len(meta.row_groups))
        except ParquetFormatError as exc:
            if expected is None:
                # Refused by the scanner and read by the decoder: a path whose names are
                # not UTF-8 (equal to its leaf's only as decoded, with U+FFFD), or a list
                # field that a later one replaces. FileMetaData.chunks_of takes the
                # decoder's chunks then.
                outcome = "read-by-decoder"
            elif expected is not type(exc):
                outcome = "refused-otherwise"  # the decoder's error is the one raised
            continue
        assert expected is None, f"scanner accepted, decoder refused with {expected}"
        assert scan.num_rows == tuple(rg.num_rows for rg in meta.row_groups)
        assert scan.schema_leaves == leaves
        assert scan.head_complete, "the decoder read a head the scanner calls incomplete"
        # The schema's span is exactly its list: alone as field 2 it decodes the same.
        at, length = scan.schema_span
        assert schema_in(b"\x29" + data[at : at + length] + b"\x00") == elements
        full = wire.FileMetaData()
        try:
            decode_struct(
                data,
                full,
                [wire.FileMetaData, wire.FileMetaData.thrift_spec],
                what="footer",
                path=path,
                decoder=THRIFT_DECODER,
            )
        except ParquetFormatError:
            full = None  # a field the scanner does not check is malformed: compare the rest
        for g, chunks in enumerate(scan.chunks):
            assert len(chunks) == len(wanted)
            for leaf, got in zip(wanted, chunks, strict=True):
                chunk = model[g][leaf]
                assert got.physical_type == int(chunk.physical_type)
                assert got.num_values == chunk.num_values
                assert got.statistics == chunk.statistics
                assert got.bloom_filter_offset == chunk.bloom_filter_offset
                assert got.bloom_filter_length == chunk.bloom_filter_length
                if full is None:
                    continue
                raw = full.row_groups[g].columns[leaf]
                md = raw.meta_data
                assert got.codec == md.codec
                assert got.total_compressed_size == md.total_compressed_size
                assert got.total_uncompressed_size == md.total_uncompressed_size
                assert got.has_encodings == (md.encodings is not None)
                assert got.has_file_path == (raw.file_path is not None)
                assert got.data_page_offset == md.data_page_offset
                assert got.dictionary_page_offset == md.dictionary_page_offset
                assert got.offset_index_offset == raw.offset_index_offset
                assert got.offset_index_length == raw.offset_index_length
                assert got.column_index_offset == raw.column_index_offset
                assert got.column_index_length == raw.column_index_length
    return outcome


def shared_schema_agrees(data: bytes, path: str = FUZZ_PATH) -> str:
    """Assert that FileMetaData ``data`` decodes the same whether its schema is decoded
    afresh or shared from an earlier footer of the same schema bytes.

    The decoder keeps schemas by their bytes (``pba_footer_schema_span`` finds them), and a
    footer whose schema bytes it met before skips them in its first pass. Decoded alone
    (``share_schemas=False``), then shared (kept if it was read well), then again (now
    known, unless the scanner finds no schema): the same error class and message, or the
    same schema, row counts, sizes and chunks. Returns "refused" or "read"; also the
    property of tests/unit/parquet/test_scan.py.
    """
    from pybloom_async.errors import PyBloomError
    from pybloom_async.parquet import THRIFT_DECODER
    from pybloom_async.parquet.decode import decode_file_metadata_with

    def outcome(share: bool) -> Any:
        try:
            meta = decode_file_metadata_with(
                data, path, THRIFT_DECODER, lazy=False, share_schemas=share
            )
        except PyBloomError as exc:
            return type(exc), str(exc)
        groups = [
            (g.num_rows, g.total_byte_size, g.file_offset, g.ordinal, g.columns)
            for g in meta.row_groups
        ]
        return meta.schema.columns, meta.num_rows, meta.version, meta.created_by, groups

    alone = outcome(False)
    assert outcome(True) == alone
    assert outcome(True) == alone
    return "refused" if isinstance(alone[0], type) else "read"


@target("footer_scan", seeds=seeds.footers, instrument=("thrift",), max_len=65536)
def fuzz_footer_scan(data: bytes) -> None:
    """The C footer scanner against the decoder (:func:`scan_agrees`), and the schemas the
    decoder shares by the bytes the scanner finds them in (:func:`shared_schema_agrees`)."""
    scan_agrees(data)
    shared_schema_agrees(data)


@target(
    "page_header",
    seeds=seeds.page_headers,
    instrument=("thrift", "pybloom_async.parquet.pages"),
    max_len=4096,
    sanitized=True,
)
def fuzz_page_header(data: bytes) -> None:
    """The C page header decoder against thrift's: where the C decoder accepts a header,
    thrift's decoder reads it with the same values and length, and the header's own bytes
    alone read the same; where thrift refuses one, ``read_page_header`` raises. (Where the
    C decoder refuses a header thrift reads, ``read_page_header`` gives thrift's.)"""
    from pybloom_async.errors import ParquetFormatError
    from pybloom_async.parquet.pages import PageHeaderReader, read_page_header

    if not data:
        return
    try:
        expected = PageHeaderReader(data).read(0)
    except ParquetFormatError:
        expected = None
    try:
        got = read_page_header(memoryview(data))
    except ParquetFormatError:
        assert expected is None
        return
    assert got == expected, (got, expected)
    assert 0 < got.header_length <= len(data)
    assert read_page_header(data[: got.header_length]) == got


# --------------------------------------------------------------------------- read planning


@target("plan", seeds=seeds.plans, max_len=2048)
def fuzz_plan(data: bytes) -> None:
    """The read planner on random footers: offsets, lengths, headers, geometry and limits.

    Properties (see ``fuzz/planfuzz.py``): nothing is ever planned outside
    ``[4, footer_start)``, no read or bitset exceeds the configured limits, statuses follow
    the rules, merged fetches cover their requests with holes within the limit, and every
    located filter reads back its exact file bytes.
    """
    from .planfuzz import check_plan

    check_plan(data)


@target("reader", seeds=seeds.reader_scripts, max_len=1024)
def fuzz_reader(data: bytes) -> None:
    """The whole read path on damaged real files: footer, plan, headers, bitsets, pruning.

    The input picks a small real file and a script of damage (filter offsets and lengths,
    header bytes, statistics, raw bytes); see ``fuzz/readerfuzz.py`` for the properties.
    """
    from .readerfuzz import check_reader

    check_reader(data)


@target("native", seeds=seeds.reader_scripts, max_len=1024, sanitized=True)
def fuzz_native(data: bytes) -> None:
    """The C evaluator of equalities (``csrc/footer/decide.c``: statistics, then filters
    probed where they lie) against the Python evaluator, on real files a script damages
    (as for ``reader``): the same verdicts or the same error; see
    ``fuzz/readerfuzz.py:check_native``. Runs with the C core built with ASan + UBSan."""
    from .readerfuzz import check_native

    check_native(data)


@target("lookup", seeds=seeds.lookup_scripts, max_len=512, sanitized=True)
def fuzz_lookup(data: bytes) -> None:
    """``lookup`` on real files whose footer a script damages: pyarrow decodes the footer
    and the row groups kept, the page index is read, rows are matched.

    See ``fuzz/lookupfuzz.py`` for the script and the properties (the file's error or a
    skip, never an abort; every row returned matches). Runs with the C core built with
    ASan + UBSan (see ``fuzz/run.py``).
    """
    from .lookupfuzz import check_lookup

    check_lookup(data)


# --------------------------------------------------------------------------- lake index


@target("lake_segment", seeds=seeds.lake_segments, max_len=8192)
def fuzz_lake_segment(data: bytes) -> None:
    """Lake index segments: trailer, directory, stripe CRCs and the footer digest.

    Properties: only ParquetFormatError is raised; every column's stripes and every digest
    record lie between the magic and the directory; a decoded segment re-encodes (with its
    stripes and records) to one that decodes the same.
    """
    from pybloom_async.errors import ParquetFormatError
    from pybloom_async.lake.format import (
        DigestRecords,
        decode_directory,
        decode_trailer,
        encode_segment,
        record_metadata,
        stripe_crc_ok,
    )

    try:
        offset, length, crc = decode_trailer(data, len(data), "fuzz")
        seg = decode_directory(data[offset : offset + length], crc, offset, "fuzz")
    except ParquetFormatError:
        return
    n = len(seg.files)
    sections = []
    for col in seg.columns:
        for b in range(col.num_blocks):
            start, end = col.stripe_range(b, n)
            assert 8 <= start <= end <= offset
            stripe_crc_ok(data[start:end])
        first, last = col.stripe_range(0, n)[0], col.stripe_range(col.num_blocks - 1, n)[1]
        raw = b"".join(
            data[s : e - 4] for s, e in (col.stripe_range(b, n) for b in range(col.num_blocks))
        )
        assert first <= last
        sections.append((col, raw))
    records = None
    digest = seg.digest
    if digest is not None:
        for a, b in [*filter(None, digest.files), *digest.schemas]:
            assert 8 <= a < b <= offset
            try:
                record_metadata(data[a:b], "fuzz")
            except ParquetFormatError:
                pass
        records = DigestRecords(
            [
                None if span is None or number is None else (data[span[0] : span[1]], number)
                for span, number in zip(digest.files, digest.schema_of, strict=True)
            ],
            [data[a:b] for a, b in digest.schemas],
        )
    again = encode_segment(seg.files, sections, digest=records)
    o2, l2, c2 = decode_trailer(again, len(again), "again")
    seg2 = decode_directory(again[o2 : o2 + l2], c2, o2, "again")
    assert seg2.files == seg.files
    assert [c.descriptor for c in seg2.columns] == [c.descriptor for c in seg.columns]
    assert seg2.digest == seg.digest


# --------------------------------------------------------------------------- Paimon


@target("paimon_index", seeds=seeds.paimon_indexes, max_len=4096)
def fuzz_paimon_index(data: bytes) -> None:
    """Paimon file-index containers and the BloomFilter64 entries inside them.

    Properties: only PaimonIndexError is raised; every entry of a parsed container lies
    inside it; a container that parses re-serialises to one that parses the same.
    """
    from pybloom_async.errors import PaimonIndexError
    from pybloom_async.paimon.container import (
        parse_paimon_file_index,
        read_paimon_file_index,
        write_paimon_file_index,
    )
    from pybloom_async.paimon.filter import BloomFilter64

    try:
        index = parse_paimon_file_index(data)
    except PaimonIndexError:
        return
    as_dict = read_paimon_file_index(data)
    for column in index.columns:
        for entry in column.entries:
            if entry.start != -1:
                assert index.head_length <= entry.start <= entry.start + entry.length <= len(data)
    again = read_paimon_file_index(write_paimon_file_index(as_dict))
    assert again == as_dict
    for entries in as_dict.values():
        for kind, payload in entries.items():
            if kind == "bloom-filter" and payload:
                try:
                    bloom = BloomFilter64.from_bytes(payload)
                except PaimonIndexError:
                    continue
                assert BloomFilter64.from_bytes(bloom.to_bytes()).to_bytes() == bloom.to_bytes()


@target("splice", seeds=seeds.footers, instrument=("thrift",), max_len=65536)
def fuzz_splice(data: bytes) -> None:
    """The add-filters footer rewrite: its output always decodes and keeps every field.

    See :mod:`fuzz.splicefuzz` for the input layout and the properties.
    """
    from .splicefuzz import check_splice

    check_splice(data)


@target("page_index", seeds=seeds.page_indexes, instrument=("thrift",), max_len=65536)
def fuzz_page_index(data: bytes) -> None:
    """The page-index decoders: chunk places in a footer, OffsetIndex and ColumnIndex.

    The first byte picks the decoder (see ``seeds.page_indexes``). Properties: only
    ParquetFormatError (EncryptedFileError, of a footer) is raised; every place accepted
    lies inside the file's data and is at most ``MAX_INDEX_BYTES`` long; accepted pages lie
    inside their chunk in order, their rows rise from 0 and cover the row group; a
    ColumnIndex has one entry per page in every list.
    """
    from pybloom_async.errors import EncryptedFileError, ParquetFormatError
    from pybloom_async.parquet import decode_file_metadata
    from pybloom_async.parquet.page_index import (
        MAX_INDEX_BYTES,
        ChunkLayout,
        decode_column_index,
        decode_offset_index,
    )
    from pybloom_async.rows.pages import file_page_index

    if not data:
        return
    mode, body = data[0] % 3, data[1:]
    try:
        if mode == 0:
            data_end = 4 + 1000 * len(body)
            metadata = decode_file_metadata(body)
            kept = range(len(metadata.row_groups))
            found = file_page_index(metadata, data_end, b"", data_end, kept, "fuzz")
            for group in found.groups.values() if found is not None else ():
                for chunk in group:
                    assert 4 <= chunk.start < chunk.end <= data_end
                    for span in (chunk.offset_index, chunk.column_index):
                        if span is not None:
                            assert 4 <= span[0] < span[1] <= data_end
                            assert span[1] - span[0] <= MAX_INDEX_BYTES
        elif mode == 1:
            chunk = ChunkLayout(50, 5000, None, None, None)
            pages = decode_offset_index(body, chunk, 1000)
            assert pages and pages[0].first_row == 0 and pages[-1].end_row == 1000
            previous = chunk.start
            for page in pages:
                assert previous <= page.offset and page.offset + page.size <= chunk.end
                assert page.first_row < page.end_row
                previous = page.offset + page.size
        else:
            count = body[0] if body else 0
            index = decode_column_index(body[1:], count)
            assert len(index.null_pages) == len(index.min_values) == len(index.max_values)
            assert len(index.null_pages) == count
            assert index.null_counts is None or len(index.null_counts) == count
    except (ParquetFormatError, EncryptedFileError):
        pass


# --------------------------------------------------------------------------- C core

c_target("c_header", "header.c", seeds=seeds.headers_c, max_len=256)
c_target("c_column", "column.c", seeds=seeds.columns_c, max_len=4096)
c_target("c_plain", "plain.c", seeds=seeds.plain_runs_c, max_len=4096)
c_target("c_footer", "footer.c", seeds=seeds.footer_scans_c, max_len=65536)
c_target("c_take", "take.c", seeds=seeds.take_pages_c, max_len=4096)
c_target("c_chunk", "chunk.c", seeds=seeds.chunks_c, max_len=16384)
# The stripe kernel prefetches from 4 MiB stripes (131,072 files) on; this build lowers that
# to 1 KiB so that the prefetching loop runs on the small stripes the fuzzer makes quickly.
c_target(
    "c_stripe",
    "stripe.c",
    seeds=seeds.stripes_c,
    max_len=4096,
    defines=("PBA_PREFETCH_MIN_BYTES=1024",),
)
