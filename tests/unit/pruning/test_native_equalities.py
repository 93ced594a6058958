"""The C evaluator of plain equalities (pruning/native.py, csrc/footer/decide.c) and the
file pass built on it (pruning/file_pass.py, csrc/footer/pass.c) give the Python
evaluator's verdicts, word for word, or leave the file to it.

Every verdict is compared with the one the Python evaluator gives the same file (the C
paths turned off): on files pyarrow and DuckDB wrote, the parquet-testing corpus, the
differential generator's lakes, and crafted files whose statistics and filters sit on
every edge the C side reads (-0.0 and 0.0, truncated maxima, NaN bounds, bounds out of
order, another width, filters not where or as the footer says). A run of several files
of one schema takes the later ones through the file pass; a single file is also pruned
after a copy of itself, so that it goes through the file pass too. The C calls
themselves are also driven directly with bad arguments.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from thrift.protocol.TCompactProtocol import TCompactProtocol
from thrift.transport.TTransport import TMemoryBuffer

import pybloom_async as pba
import pybloom_async.pruning.api as prune_api
from pybloom_async._native import ffi, lib
from pybloom_async.core.filter import SplitBlockBloomFilter
from pybloom_async.core.hashing import hash_values
from pybloom_async.parquet import thrift_specs as wire
from pybloom_async.pruning.file_pass import FilePass
from pybloom_async.types import PhysicalType

# ---- the two evaluators side by side ---------------------------------------------------


class Counting:
    """decide_natively, counting the files it decided (the C path must be taken), and the
    files the file pass decided (``passed``)."""

    def __init__(self) -> None:
        self.decided = 0
        self.passed = 0
        self.real = prune_api.decide_natively
        self.real_pass = FilePass.verdicts

    async def __call__(self, *args: Any) -> Any:
        found = await self.real(*args)
        if found is not None:
            self.decided += 1
        return found

    def file_pass(self, passes: FilePass, *args: Any) -> Any:
        found = self.real_pass(passes, *args)
        if found is not None:
            self.passed += 1
        return found


@pytest.fixture
def native(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counting]:
    counting = Counting()
    monkeypatch.setattr(prune_api, "decide_natively", counting)

    def verdicts(passes: FilePass, *args: Any) -> Any:
        return counting.file_pass(passes, *args)

    monkeypatch.setattr(FilePass, "verdicts", verdicts)
    yield counting


def _verdicts(paths: Any, where: Any, **kwargs: Any) -> Any:
    try:
        return [v.to_dict() for v in pba.prune_sync(paths, where, **kwargs)]
    except pba.PyBloomError as exc:
        return (type(exc).__name__, str(exc))


async def _python_only(*args: Any) -> None:
    return None


def both(monkeypatch: pytest.MonkeyPatch, paths: Any, where: Any, **kwargs: Any) -> Any:
    """The verdicts with the C path (as installed), then asserted equal without it."""
    got = _verdicts(paths, where, **kwargs)
    current = prune_api.decide_natively
    monkeypatch.setattr(prune_api, "decide_natively", _python_only)
    try:
        expected = _verdicts(paths, where, **kwargs)
    finally:
        monkeypatch.setattr(prune_api, "decide_natively", current)
    assert got == expected, f"{where}: the C and Python evaluators disagree"
    if isinstance(paths, str) and os.path.isfile(paths) and "reader" not in kwargs:
        again = _after_a_copy(paths, where, **kwargs)
        if again is not None:
            assert again == expected, f"{where}: the file pass and the Python evaluator disagree"
    return got


def _after_a_copy(path: str, where: Any, **kwargs: Any) -> Any:
    """The verdicts of ``path`` pruned right after a copy of it in the same run: the copy
    binds the schema, and ``path`` goes through the file pass. None when the run raises
    (an error of the run names both files; the file's own is compared above)."""
    counting = prune_api.decide_natively
    before = counting.decided if isinstance(counting, Counting) else 0
    with tempfile.TemporaryDirectory() as folder:
        first = os.path.join(folder, "first.parquet")
        shutil.copyfile(path, first)
        found = _verdicts([first, path], where, **kwargs)
    if isinstance(counting, Counting):
        counting.decided = before  # the tests count the files of their own runs
    if isinstance(found, tuple):
        return None
    return [v for v in found if v["file"] == path]


def _values(path: Path, column: str, limit: int = 3) -> list[Any]:
    table = pq.read_table(path, columns=[column])
    seen: list[Any] = []
    for value in table.column(0).to_pylist():
        if value is not None and value not in seen:
            seen.append(value)
            if len(seen) == limit:
                break
    return seen


_ABSENT = {
    pa.types.is_integer: [-7, 123456789],
    pa.types.is_floating: [-0.0, 0.0, 1e300],
    pa.types.is_string: ["", "zzz-absent", "\u00e9"],
    pa.types.is_binary: [b"", b"\xff\xff"],
}


def _predicates(path: Path) -> list[Any]:
    schema = pq.read_schema(path)
    out: list[Any] = []
    for field in schema:
        if not any(
            test(field.type)
            for test in (
                pa.types.is_integer,
                pa.types.is_floating,
                pa.types.is_string,
                pa.types.is_binary,
            )
        ):
            continue
        present = _values(path, field.name)
        absent = next(v for test, v in _ABSENT.items() if test(field.type))
        column = pba.col(field.name)
        for value in present[:2] + absent[:2]:
            out.append(column == value)
        if present:
            out.append(column.isin(present + absent))
        out.append(column.isin(absent))
    return out


def test_engines_files(
    pyarrow_files: Any, duckdb_files: Any, native: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    for written in (pyarrow_files, duckdb_files):
        files = [str(p) for p in written.prune_files]
        predicates = _predicates(written.prune_files[0])
        assert predicates
        for where in predicates:
            both(monkeypatch, files, where)
        a, b = written.key_columns
        if a and b:
            x = _values(written.prune_files[0], a, 1)[0]
            y = _values(written.prune_files[0], b, 1)[0]
            for where in (
                (pba.col(a) == x) & (pba.col(b) == y),
                (pba.col(a) == x) | (pba.col(b) == y),
                (pba.col(a) == x) & (pba.col("no_such_column") == 1),
                # Beside ranges, negations and NULL tests (the Python evaluator's leaves).
                (pba.col(a) == x) & (pba.col(b) >= y),
                (pba.col(a) == x) | (pba.col(b) < y),
                (pba.col(a) == x) & (pba.col(b) != y),
                (pba.col(a) == x) & pba.col(b).is_null(),
                (pba.col(a) == x) & ~pba.col(b).isin([y]),
            ):
                both(monkeypatch, files, where)
    assert native.decided > 0
    assert native.passed > 0


def test_a_callers_reader_takes_local_files_through_the_pass(
    pyarrow_files: Any, native: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller's reader: a run's local files after the first of their schema are pruned
    in one C call each, as with the run's own reader (read again from the page cache, which
    is faster than the reader's cached model); the verdicts are the evaluator's, and a
    second run's the first's."""
    files = [str(p) for p in pyarrow_files.prune_files]
    reader = pba.BloomReader()
    for where in _predicates(pyarrow_files.prune_files[0])[:8]:
        first = both(monkeypatch, files, where, reader=reader)
        assert _verdicts(files, where, reader=reader) == first
    assert native.decided > 0 and native.passed > 0


def test_files_without_filter_lengths(
    pyarrow_no_length_files: Any, native: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No recorded lengths: the C side is unsure, the Python evaluator decides."""
    files = [str(p) for p in pyarrow_no_length_files.prune_files]
    for where in _predicates(pyarrow_no_length_files.prune_files[0])[:6]:
        both(monkeypatch, files, where)


def test_parquet_testing(
    parquet_testing: Path, native: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = sorted((parquet_testing / "data").glob("*.parquet"))
    assert files
    for path in files:
        try:
            predicates = _predicates(path)
        except Exception:  # pyarrow cannot read it: our reader says what it can
            predicates = [pba.col("id") == 1]
        for where in predicates[:12]:
            both(monkeypatch, str(path), where)
    assert native.decided > 0
    assert native.passed > 0


def test_generated_lakes(tmp_path: Path, native: Counting, monkeypatch: pytest.MonkeyPatch) -> None:
    differential = pytest.importorskip("support.differential")
    from support.differential.checks import partitioning_of
    from support.differential.write import write_lake

    for seed in range(40):
        case = differential.generate_case(seed)
        if case.table is not None:
            continue
        root = tmp_path / f"lake{seed}"
        write_lake(case, root)
        both(monkeypatch, str(root), case.predicate, **partitioning_of(case))
    assert native.decided > 0
    assert native.passed > 0


# ---- crafted files: the statistics' edges ------------------------------------------------


def _encode(obj: Any) -> bytes:
    buf = TMemoryBuffer()
    obj.write(TCompactProtocol(buf))
    return bytes(buf.getvalue())


def _file(
    tmp_path: Path,
    ptype: int,
    groups: list[dict[str, Any]],
    *,
    filters: list[bytes | None] | None = None,
    logical: Any = None,
    repeated: bool = False,
) -> str:
    """A file of one column ``x`` (no data pages: pruning reads the footer and filters),
    one row group per entry of ``groups`` (its ColumnMetaData fields), each with its
    filter from ``filters`` (serialized, placed after the magic) when given."""
    body = bytearray(b"PAR1")
    chunks = []
    for g, fields in enumerate(groups):
        md: dict[str, Any] = dict(
            type=ptype,
            encodings=[0],
            path_in_schema=[b"x"],
            codec=0,
            num_values=10,
            total_uncompressed_size=10,
            total_compressed_size=10,
            data_page_offset=4,
        )
        serialized = filters[g] if filters else None
        if serialized is not None:
            md["bloom_filter_offset"] = len(body)
            md["bloom_filter_length"] = len(serialized)
            body += serialized
        md.update(fields)
        chunks.append(wire.ColumnChunk(file_offset=0, meta_data=wire.ColumnMetaData(**md)))
    leaf: dict[str, Any] = dict(name=b"x", type=ptype, repetition_type=2 if repeated else 1)
    if ptype == PhysicalType.FIXED_LEN_BYTE_ARRAY:
        leaf["type_length"] = 4
    if logical is not None:
        leaf["logicalType"] = logical
    footer = _encode(
        wire.FileMetaData(
            version=2,
            schema=[wire.SchemaElement(name=b"root", num_children=1), wire.SchemaElement(**leaf)],
            num_rows=10 * len(groups),
            row_groups=[
                wire.RowGroup(columns=[c], total_byte_size=10, num_rows=10) for c in chunks
            ],
        )
    )
    path = tmp_path / f"f{len(list(tmp_path.iterdir()))}.parquet"
    path.write_bytes(bytes(body) + footer + struct.pack("<I", len(footer)) + b"PAR1")
    return str(path)


def _stats(**fields: Any) -> dict[str, Any]:
    return {"statistics": wire.Statistics(**fields)}


def _i64(v: int) -> bytes:
    return struct.pack("<q", v)


def _f64(v: float) -> bytes:
    return struct.pack("<d", v)


def _filter(values: list[Any], ptype: PhysicalType) -> bytes:
    bloom = SplitBlockBloomFilter(1024)
    bloom.insert(values, ptype)
    return bloom.to_bytes()


def _kept(verdicts: Any) -> list[bool]:
    assert isinstance(verdicts, list), verdicts
    return [v["kept"] for v in verdicts]


def test_integer_statistics(
    tmp_path: Path, native: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file(
        tmp_path,
        PhysicalType.INT64,
        [
            _stats(min_value=_i64(1), max_value=_i64(10)),
            _stats(min_value=_i64(-5), max_value=_i64(-1)),
            _stats(min_value=_i64(20), max_value=_i64(3)),  # out of order: not used
            _stats(null_count=10),  # every value null
            _stats(min_value=_i64(-(2**63)), max_value=_i64(2**63 - 1)),
            _stats(max_value=_i64(0)),  # only a maximum
            {},  # no statistics
        ],
    )
    got = both(monkeypatch, path, pba.col("x") == 5)
    assert _kept(got) == [True, False, True, False, True, False, True]
    got = both(monkeypatch, path, pba.col("x").isin([-3, 100]))
    assert _kept(got) == [False, True, True, False, True, True, True]
    # An equality beside a range: the range is the Python evaluator's leaf, in the same run.
    got = both(monkeypatch, path, (pba.col("x") == 5) & (pba.col("x") <= 4))
    assert _kept(got) == [True, False, True, False, True, False, True]  # no contradiction seen
    got = both(monkeypatch, path, (pba.col("x") == 5) | (pba.col("x") < -2))
    assert _kept(got) == [True, True, True, False, True, True, True]
    assert native.decided == 4
    assert native.passed > 0  # the file pass took the second file of each run


def test_an_integer_of_another_width_goes_to_python(
    tmp_path: Path, native: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file(tmp_path, PhysicalType.INT64, [_stats(min_value=b"\x01", max_value=_i64(9))])
    both(monkeypatch, path, pba.col("x") == 5)
    assert native.decided == 0


def test_float_statistics(
    tmp_path: Path, native: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    nan = float("nan")
    groups = [
        _stats(min_value=_f64(-1.0), max_value=_f64(-0.0)),  # 0.0 equals -0.0
        _stats(min_value=_f64(0.0), max_value=_f64(2.0)),
        _stats(min_value=_f64(nan), max_value=_f64(1.0)),  # NaN bound: not used
        _stats(min_value=_f64(0.5), max_value=_f64(2.0)),
        _stats(min_value=_f64(2.0), max_value=_f64(nan)),
    ]
    path = _file(tmp_path, PhysicalType.DOUBLE, groups)
    for value in (0.0, -0.0):
        got = both(monkeypatch, path, pba.col("x") == value)
        assert _kept(got) == [True, True, True, False, True]
    assert native.decided == 2
    # A bound of another width: the Python evaluator ignores it, the C one does not guess.
    path = _file(tmp_path, PhysicalType.DOUBLE, [*groups, _stats(min_value=b"\0" * 4)])
    got = both(monkeypatch, path, pba.col("x") == 0.0)
    assert _kept(got) == [True, True, True, False, True, True]
    assert native.decided == 2
    assert native.passed > 0  # the file pass took the second file of each run


def test_byte_string_statistics(
    tmp_path: Path, native: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file(
        tmp_path,
        PhysicalType.BYTE_ARRAY,
        [
            _stats(min_value=b"a", max_value=b"ab", is_max_value_exact=False),  # < "ac"
            _stats(min_value=b"a", max_value=b"ab"),  # exact: "abc" is above it
            _stats(min_value=b"a", max_value=b"a\xff\xff", is_max_value_exact=False),  # < "b"
            _stats(min_value=b"", max_value=b"\xff", is_max_value_exact=False),  # unbounded
            _stats(min_value=b"abd", max_value=b"abz"),
            _stats(min_value=b"abc", max_value=b"abc"),
        ],
        logical=wire.LogicalType(STRING=wire.Empty()),
    )
    got = both(monkeypatch, path, pba.col("x") == "abc")
    assert _kept(got) == [True, False, True, True, False, True]
    # "a\xff" is UTF-8 61 c3 bf: above "ab" and "abz", below "ac" and "b".
    got = both(monkeypatch, path, pba.col("x").isin(["abc", "b", "a\xff"]))
    assert _kept(got) == [True, False, True, True, False, True]
    assert native.decided == 2
    assert native.passed > 0  # the file pass took the second file of each run


def test_ranges_beside_equalities(
    tmp_path: Path, native: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A range beside an equality: the file pass decides it in C (csrc/footer/decide.c,
    pba_decide_ranges) on every edge of the statistics, as the Python evaluator does."""
    nan = float("nan")
    ints = _file(
        tmp_path,
        PhysicalType.INT64,
        [
            _stats(min_value=_i64(1), max_value=_i64(10)),
            _stats(min_value=_i64(20), max_value=_i64(3)),  # out of order: not used
            _stats(null_count=10),  # every value null
            _stats(max_value=_i64(0)),  # only a maximum
            _stats(min_value=_i64(10), max_value=_i64(10)),
            {},  # no statistics
        ],
    )
    # A bound of another width: the Python evaluator decides that file.
    other = _file(tmp_path, PhysicalType.INT64, [_stats(min_value=b"\0" * 4)])
    x = pba.col("x")
    both(monkeypatch, other, (x == 5) & (x > 3))
    for rng in (
        x > 10,
        x >= 10,
        x < 1,
        x <= 1,
        x.between(2, 9),
        x.between(9, 2),  # empty
        (x > 0) & (x < 1),
        x > -(2**70),  # an end beyond 64 bits: the Python evaluator's
    ):
        for where in ((x == 5) & rng, (x == 10) | rng):
            both(monkeypatch, ints, where)
    floats = _file(
        tmp_path,
        PhysicalType.DOUBLE,
        [
            _stats(min_value=_f64(-1.0), max_value=_f64(-0.0)),
            _stats(min_value=_f64(0.0), max_value=_f64(2.0)),
            _stats(min_value=_f64(nan), max_value=_f64(1.0)),
            _stats(min_value=_f64(2.0), max_value=_f64(1.0)),
        ],
    )
    for rng in (x > 0.0, x >= -0.0, x < 0.0, x.between(-0.0, 0.0), x > 1.5, x < nan):
        both(monkeypatch, floats, (x == 0.5) & rng)
    text = _file(
        tmp_path,
        PhysicalType.BYTE_ARRAY,
        [
            _stats(min_value=b"a", max_value=b"ab", is_max_value_exact=False),  # < "ac"
            _stats(min_value=b"a", max_value=b"a\xff\xff", is_max_value_exact=False),  # < "b"
            _stats(min_value=b"", max_value=b"\xff", is_max_value_exact=False),  # unbounded
            _stats(min_value=b"abd", max_value=b"abz"),
        ],
        logical=wire.LogicalType(STRING=wire.Empty()),
    )
    for rng in (x >= "ac", x > "ab", x >= "b", x < "a", x <= "a", x.between("abc", "abe")):
        both(monkeypatch, text, (x == "q") | rng)
    # An INT(8) column: a range its type cannot hold.
    small = _file(
        tmp_path,
        PhysicalType.INT32,
        [_stats(min_value=struct.pack("<i", 1), max_value=struct.pack("<i", 9)), _stats()],
        logical=wire.LogicalType(INTEGER=wire.IntType(bitWidth=8, isSigned=True)),
    )
    for rng in (x > 200, x < -129, x >= 5):
        both(monkeypatch, small, (x == 5) & rng)
    # The file pass took the second file of nearly every run (29 of 32 when written: the
    # ends beyond 64 bits and the NaN end are the Python evaluator's).
    assert native.passed >= 24


def test_repeated_all_null_chunks_are_kept(
    tmp_path: Path, native: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file(tmp_path, PhysicalType.INT64, [_stats(null_count=10)], repeated=True)
    got = both(monkeypatch, path, pba.col("x") == 1)
    assert isinstance(got, list)


# ---- crafted files: the filters' edges ---------------------------------------------------


def test_filters_probed_in_place(
    tmp_path: Path, native: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _filter([1, 2, 3], PhysicalType.INT64)
    path = _file(tmp_path, PhysicalType.INT64, [{}, {}], filters=[held, held])
    got = both(monkeypatch, path, pba.col("x") == 2)
    assert _kept(got) == [True, True]
    got = both(monkeypatch, path, pba.col("x") == 77)
    assert _kept(got) == [False, False]
    assert got[0]["rule"] == "bloom_filter"
    # Many keys: the whole bitset read at once.
    got = both(monkeypatch, path, pba.col("x").isin(list(range(100, 400))))
    assert _kept(got) == [False, False]
    assert native.decided == 3
    assert native.passed > 0  # the file pass took the second file of each run


@pytest.mark.parametrize(
    "damage",
    [
        {"bloom_filter_length": 1024 + 40},  # longer than the header says
        {"bloom_filter_length": 30},  # shorter than any filter
        {"bloom_filter_offset": 2},  # inside the magic
        {"bloom_filter_offset": 10**9},  # past the footer
        {"bloom_filter_offset": 5},  # not a header there
    ],
)
def test_damaged_filters_go_to_python(
    tmp_path: Path, damage: dict[str, int], native: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _filter([1, 2, 3], PhysicalType.INT64)
    path = _file(tmp_path, PhysicalType.INT64, [damage], filters=[held])
    for on_error in ("skip", "raise"):
        both(monkeypatch, path, pba.col("x") == 77, on_error=on_error)
    assert native.decided == 0


def test_some_filters_recorded_others_not(
    tmp_path: Path, native: Counting, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _filter([1], PhysicalType.INT64)
    path = _file(tmp_path, PhysicalType.INT64, [{}, {}], filters=[held, None])
    got = both(monkeypatch, path, pba.col("x") == 77)
    assert _kept(got) == [False, True]


# ---- the C calls driven directly ---------------------------------------------------------


def _leaf(keys: list[bytes], kind: int, width: int, slot: int = 0) -> tuple[Any, ...]:
    leaf = ffi.new("pba_eq_leaf *")
    blob = ffi.new("uint8_t[]", b"".join(keys) or b"\0")
    offsets = [0]
    for k in keys:
        offsets.append(offsets[-1] + len(k))
    offs = ffi.new("uint64_t[]", offsets)
    leaf.slot, leaf.kind, leaf.width, leaf.nulls_exclude = slot, kind, width, 1
    leaf.n_keys, leaf.keys, leaf.key_offsets = len(keys), blob, offs
    return leaf, blob, offs


def test_decide_refuses_bad_leaves() -> None:
    chunk = ffi.new("pba_footer_chunk *")
    out = ffi.new("pba_eq_outcome *")
    good = _leaf([_i64(1)], lib.PBA_KEY_INT, 8)
    assert lib.pba_decide_equalities(b"", 0, chunk, 1, 1, good[0], 1, out) == lib.PBA_OK
    for bad in (
        _leaf([_i64(1)], lib.PBA_KEY_INT, 8, slot=1),  # past the wanted chunks
        _leaf([_i64(1)], lib.PBA_KEY_INT, 4),  # a key of another width
        _leaf([_i64(1)], 9, 8),  # no such kind
        _leaf([], lib.PBA_KEY_BYTES, 0),  # no key
        _leaf([b"a"], lib.PBA_KEY_BYTES, 4),
    ):
        assert lib.pba_decide_equalities(b"", 0, chunk, 1, 1, bad[0], 1, out) == lib.PBA_ERR_ARG
    falling = _leaf([b"ab", b"a"], lib.PBA_KEY_BYTES, 0)
    falling[2][2] = 1  # offsets out of order
    assert lib.pba_decide_equalities(b"", 0, chunk, 1, 1, falling[0], 1, out) == lib.PBA_ERR_ARG
    assert lib.pba_decide_equalities(b"", 0, ffi.NULL, 1, 1, good[0], 1, out) == lib.PBA_ERR_ARG


def test_decide_checks_statistics_offsets() -> None:
    chunk = ffi.new("pba_footer_chunk *")
    chunk.present = lib.PBA_FC_NUM_VALUES | lib.PBA_FC_STATISTICS | lib.PBA_FC_MIN_VALUE
    chunk.num_values = 1
    chunk.min_value_off, chunk.min_value_len = 4, 8  # past a 10-byte buffer
    out = ffi.new("pba_eq_outcome *")
    leaf = _leaf([_i64(1)], lib.PBA_KEY_INT, 8)
    assert lib.pba_decide_equalities(b"\0" * 10, 10, chunk, 1, 1, leaf[0], 1, out) == 0
    assert out.code == lib.PBA_EQ_UNSURE
    chunk.min_value_off = 2**64 - 1
    assert lib.pba_decide_equalities(b"\0" * 10, 10, chunk, 1, 1, leaf[0], 1, out) == 0
    assert out.code == lib.PBA_EQ_UNSURE


def _probe_file(
    fd: int, offset: int, length: int, hashes: Any, *, limit: int = 10**9, may: Any = None
) -> tuple[int, int, int]:
    p = ffi.new("pba_probe *")
    p.offset, p.length = offset, length
    view = ffi.from_buffer("uint64_t[]", hashes)
    p.hashes, p.n_hashes = view, len(hashes)
    marks = None
    if may is not None:
        marks = ffi.from_buffer("uint8_t[]", may)
        p.may = marks
    out = ffi.new("int32_t *")
    counts = ffi.new("uint64_t[2]")
    rc = lib.pba_probe_filters(fd, p, 1, limit, 2**30, 2**27, 1024, out, counts, counts + 1)
    assert rc == lib.PBA_OK
    return out[0], counts[0], counts[1]


def test_probe_reads_a_block_not_the_bitset(tmp_path: Path) -> None:
    big = SplitBlockBloomFilter(65536)  # above the 16 KiB read whole
    big.insert(list(range(50)), PhysicalType.INT64)
    small = _filter(list(range(50)), PhysicalType.INT64)
    path = tmp_path / "f.bin"
    path.write_bytes(b"PAR1" + big.to_bytes() + small + b"\0" * 64)
    at_small = 4 + len(big.to_bytes())
    one = hash_values([_i64(7)], PhysicalType.BYTE_ARRAY)
    two = hash_values([_i64(10**6), _i64(7)], PhysicalType.BYTE_ARRAY)
    fd = os.open(path, os.O_RDONLY)
    try:
        n = len(big.to_bytes())
        # The header, then the one block the hash selects.
        code, requests, nbytes = _probe_file(fd, 4, n, one)
        assert code == lib.PBA_PROBE_MAY and requests <= 2 and nbytes <= 256 + 32
        assert _probe_file(fd, 4, n, two)[0] == lib.PBA_PROBE_MAY
        # Every hash asked, each one's answer marked.
        may = np.zeros(2, dtype=np.uint8)
        assert _probe_file(fd, 4, n, two, may=may)[0] == lib.PBA_PROBE_MAY
        assert may.tolist() == [int(big.check_hash(int(two[0]))), 1]
        # Keys enough (one per 256 blocks or more: 8 here): the header, then the whole
        # filter at once; one fewer, a block each.
        for count, reads in ((8, 2), (300, 2), (7, 8)):
            many = hash_values([_i64(10**6 + k) for k in range(count)], PhysicalType.BYTE_ARRAY)
            may = np.zeros(count, dtype=np.uint8)
            code, requests, nbytes = _probe_file(fd, 4, n, many, may=may)
            assert requests <= reads and (nbytes == 256 + n) is (reads == 2)
            assert may.tolist() == [int(big.check_hash(int(h))) for h in many]
            assert code == (lib.PBA_PROBE_MAY if may.any() else lib.PBA_PROBE_ABSENT)
        # A small filter: read whole, in one read.
        code, requests, nbytes = _probe_file(fd, at_small, len(small), one)
        assert (code, requests, nbytes) == (lib.PBA_PROBE_MAY, 1, len(small))
        # Not as recorded, or not there: unsure, never a guess.
        for offset, length, limit in (
            (4, n + 1, 10**9),  # the length disagrees with the header
            (4, n, 100),  # past the footer's start
            (3, n, 10**9),  # inside the magic
            (2**62, n, 2**63 - 1),  # past the end of the file: a short read
            (at_small + 1, len(small) - 1, 10**9),  # no header there
        ):
            assert _probe_file(fd, offset, length, one, limit=limit)[0] == lib.PBA_PROBE_UNSURE
    finally:
        os.close(fd)
    # A closed descriptor: the reads fail, the probe is unsure, nothing crashes.
    assert _probe_file(fd, 4, len(big.to_bytes()), one)[0] == lib.PBA_PROBE_UNSURE


def test_a_footer_with_its_records_pickles(pyarrow_files: Any) -> None:
    """A Spark task gets its footers pickled: the records kept with one go with it."""
    import pickle

    footer = pba.read_footer_sync(str(pyarrow_files.prune_files[0]))
    records = footer.metadata.chunk_records([0])
    assert records is not None and records.n_groups == len(footer.row_groups)
    again = pickle.loads(pickle.dumps(footer))
    assert again.metadata.chunk_records([0]) == records
