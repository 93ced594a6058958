"""A run's local files pruned in one C call each, once a file of their schema was pruned
the usual way.

:func:`.api.prune_opened` prunes a file in steps, each a Python call around C: open it,
read its suffix, decode the footer's head, scan the chunks, decide the equalities
(:mod:`.native`), probe the filters, close it. For a run whose files share a schema, that
Python is the same from file to file: only the bytes differ. :class:`FilePass` binds, once
per schema, what the steps need (the scan's leaves, the encoded keys and their hashes, the
predicate above the leaves as postfix steps), and ``pba_file_pass``
(``csrc/footer/pass.c``) then takes a file of that schema from its path to a code per row
group and leaf in one call, the interpreter released. The codes become the same verdicts
and reasons as :func:`.native.decide_natively` gives (:func:`.evaluate.combine` over the
same outcomes, once per distinct row of codes).

Only what C decides alone is bound: plain equalities on columns the C side orders (as
:func:`.native.decide_natively` takes them), ranges on such columns
(:func:`.native.native_range`: ``pba_decide_ranges`` decides them from the statistics as
:func:`.bounds.decide` does), and columns the file lacks, under AND and OR. A file whose
schema's bytes are not a bound schema's, or anything unusual in it (see the C header), is
handed back and pruned the usual way, which names any reason. A run that finds files it
cannot take stops asking.
"""

from __future__ import annotations

import itertools
import os
import struct
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from .._native import check, ffi, lib
from ..io.address import local_path
from ..io.base import SourceStats
from ..io.identity import SourceIdentity, stat_fields_identity
from ..parquet import FooterBounds, Schema
from ..predicate import And, Or, Predicate
from ..read.fetch import Footer, ReaderConfig
from .bounds import Outcome
from .evaluate import KEPT_ORDER, UNDECIDED, combine
from .leaves import Leaf
from .native import NativeLeaf, NativeRange, native_range, sort_leaves
from .verdicts import Verdict

#: Schemas bound per run at most (a lake of many schemas is pruned the usual way beyond).
MAX_BINDINGS = 16
#: Files whose schema is looked at to bind it, at most, per run.
MAX_TRIES = 2 * MAX_BINDINGS
#: Row groups the scratch holds at first (a file with more is handed back once, and the
#: scratch grows for the next).
FIRST_GROUPS = 64
#: The most bytes of a file's end (its footer and the suffix) a thread's scratch holds: a
#: longer footer is read the usual way (a run's threads each hold one scratch).
MAX_TAIL = 1 << 20
#: The least a file's first read takes of its end (a footer learnt from a small file may
#: be shorter than the next one's).
MIN_SUFFIX = 1024
#: Files handed back before the run stops asking: beyond this, at most one in 8.
MISSES_ALLOWED = 8

_U64_MAX = (1 << 64) - 1
#: pba_pass_pruned as laid out (no padding: checked), unpacked a batch at a time.
_PRUNED = struct.Struct("=4q2Q2q2Q2i")
assert _PRUNED.size == ffi.sizeof("pba_pass_pruned"), "pba_pass_pruned layout changed"


class _Binding:
    """One schema's inputs to ``pba_file_pass``, and what turns its codes into outcomes."""

    __slots__ = (
        "arrays",
        "code_excluded",
        "codes_of",
        "fixed",
        "footer",
        "n_codes",
        "outcomes",
        "schema",
        "where",
        "width",
    )

    def __init__(
        self,
        c: Any,
        schema: bytes,
        key_values: bytes,
        footer: Footer,
        where: Predicate,
        natives: list[tuple[int, Leaf, NativeLeaf]],
        ranges: list[tuple[int, Leaf, NativeRange]],
        fixed: Mapping[int, Outcome],
    ) -> None:
        meta = footer.metadata
        self.footer = footer
        self.schema = meta.schema
        self.where = where
        self.fixed = fixed
        indexes = sorted(
            {leaf.desc.index for _, leaf, _ in [*natives, *ranges] if leaf.desc is not None}
        )
        position = {key: i for i, (key, _, _) in enumerate(natives)}
        range_position = {key: j for j, (key, _, _) in enumerate(ranges)}
        steps = _steps(where, position, range_position, fixed)
        self.arrays = _fill(c, schema, key_values, footer, indexes, natives, ranges, steps)
        m, nr = len(natives), len(ranges)
        self.n_codes = m + nr  # a row group's codes: the equalities', then the ranges'
        self.width = max(m + nr, len(indexes))
        # Per leaf, where its code lies in a row group's codes and the outcome of each code.
        self.codes_of: dict[int, tuple[int, list[Outcome]]] = {}
        for key, i in position.items():
            nat = natives[i][2]
            outs = [UNDECIDED, nat.nulls, nat.stats, nat.no_filter, nat.passed[0], nat.passed[1]]
            self.codes_of[key] = (i, outs)
        for key, j in range_position.items():
            # Codes PBA_PASS_RANGE_CODES + PBA_RANGE_*: MAY, NULLS, STATS, TYPED.
            first = lib.PBA_PASS_RANGE_CODES
            self.codes_of[key] = (m + j, [UNDECIDED] * first + list(ranges[j][2].outcomes))
        # The same outcomes' exclusions, for the C side to find files pruned whole
        # (pba_file_pass_files): per leaf in code order, PBA_PASS_CODES bytes.
        table = bytearray(self.n_codes * lib.PBA_PASS_CODES)
        for at, outs in self.codes_of.values():
            for code, out in enumerate(outs):
                table[at * lib.PBA_PASS_CODES + code] = out.excluded
        self.code_excluded = ffi.new("uint8_t[]", bytes(table) or b"\0")
        c.code_excluded = self.code_excluded
        # Per distinct row of codes, its outcome (a few per run).
        self.outcomes: dict[bytes, Outcome] = {}

    def decide_codes(self, row: bytes) -> Outcome:
        """The outcome of a row group whose leaves' codes are ``row``."""
        codes_of, fixed = self.codes_of, self.fixed

        def leaf_outcome(p: Predicate) -> Outcome:
            found = codes_of.get(id(p))
            if found is None:
                return fixed[id(p)]
            at, outs = found
            return outs[row[at]]

        return combine(self.where, leaf_outcome, KEPT_ORDER)


def _fill(
    c: Any,
    schema: bytes,
    key_values: bytes,
    footer: Footer,
    indexes: list[int],
    natives: list[tuple[int, Leaf, NativeLeaf]],
    ranges: list[tuple[int, Leaf, NativeRange]],
    steps: list[tuple[int, int]],
) -> tuple[Any, ...]:
    """Set the ``pba_pass_binding`` ``c``; returns what it points into, to keep alive."""
    leaves = footer.metadata.scan_leaves()
    eq = ffi.new("pba_eq_leaf[]", len(natives))
    hash_views = [ffi.from_buffer("uint64_t[]", leaf.hashes) for _, leaf, _ in natives]
    hashes = ffi.new("uint64_t *[]", hash_views)
    n_hashes = ffi.new("size_t[]", [len(leaf.hashes) for _, leaf, _ in natives])
    for i, (_, leaf, nat) in enumerate(natives):
        assert leaf.desc is not None
        nat.fill(eq[i], indexes.index(leaf.desc.index), leaf)
    range_c = ffi.new("pba_range_leaf[]", max(len(ranges), 1))
    for j, (_, leaf, native) in enumerate(ranges):
        assert leaf.desc is not None
        native.fill(range_c[j], indexes.index(leaf.desc.index), leaf)
    program = ffi.new("pba_pass_step[]", len(steps))
    for k, (op, arg) in enumerate(steps):
        program[k].op = op
        program[k].arg = arg
    wanted = ffi.new("uint32_t[]", indexes)
    schema_c = ffi.new("uint8_t[]", schema)
    key_values_c = ffi.new("uint8_t[]", key_values or b"\0")
    c.schema, c.schema_len = schema_c, len(schema)
    c.key_values, c.key_values_len = key_values_c, len(key_values)
    leaves.fill(c.scan)
    c.scan.wanted, c.scan.n_wanted = wanted, len(indexes)
    c.leaves, c.n_eq, c.hashes, c.n_hashes = eq, len(natives), hashes, n_hashes
    c.ranges, c.n_ranges = range_c, len(ranges)
    c.steps, c.n_steps = program, len(steps)
    kept = (leaves, eq, hash_views, hashes, n_hashes, program, wanted, schema_c, key_values_c)
    return (*kept, range_c, [native for _, _, native in ranges])


def _steps(
    p: Predicate,
    position: Mapping[int, int],
    range_position: Mapping[int, int],
    fixed: Mapping[int, Outcome],
) -> list[tuple[int, int]]:
    """``p`` (a normal form) as postfix steps over its leaves."""
    if isinstance(p, (And, Or)):
        out: list[tuple[int, int]] = []
        for child in p.children:
            out += _steps(child, position, range_position, fixed)
        op = lib.PBA_PASS_AND if isinstance(p, And) else lib.PBA_PASS_OR
        return [*out, (op, len(p.children))]
    key = id(p)
    if key in position:
        return [(lib.PBA_PASS_LEAF, position[key])]
    if key in range_position:
        return [(lib.PBA_PASS_RANGE, range_position[key])]
    assert key in fixed and not fixed[key].excluded, "only a kept leaf is decided before"
    return [(lib.PBA_PASS_KEEP, 0)]


class Passed(NamedTuple):
    """A file the C call decided: the row groups it keeps; ``reference``, the footer its
    schema was bound from, and whether its key/value metadata is that footer's too
    (``same_key_values``: then its Arrow schema is the same); its identity (``fstat``) and
    where its footer lies; ``tail``, when kept, the bytes read of its end (its footer
    among them)."""

    kept: list[int]
    reference: Footer
    same_key_values: bool
    identity: SourceIdentity
    bounds: FooterBounds
    tail: bytes | None


class _Scratch:
    """A thread's arrays for ``pba_file_pass``."""

    __slots__ = (
        "c",
        "codes",
        "done",
        "groups_cap",
        "keep",
        "num_rows",
        "pruned",
        "result",
        "tail_cap",
        "width",
    )

    def __init__(
        self, suffix: int, tail_cap: int, config: ReaderConfig, groups_cap: int, width: int
    ) -> None:
        plan = config.plan
        n = groups_cap * width
        c = ffi.new("pba_pass_scratch *")
        tail = ffi.new("uint8_t[]", tail_cap)
        groups = ffi.new("pba_footer_group[]", groups_cap)
        chunks = ffi.new("pba_footer_chunk[]", n)
        outcomes = ffi.new("pba_eq_outcome[]", n)
        probes = ffi.new("pba_probe[]", n)
        answers = ffi.new("int32_t[]", n)
        c.suffix = suffix
        c.whole = config.first_suffix_bytes  # as the reader reads a small file: all of it
        c.tail_cap = tail_cap
        c.max_footer_bytes = min(config.max_footer_bytes, _U64_MAX)
        c.max_serialized = min(plan.max_serialized_bytes, _U64_MAX)
        c.max_filter_bytes = min(plan.max_filter_bytes, _U64_MAX)
        c.max_header_bytes = min(plan.max_header_bytes, _U64_MAX)
        c.groups_cap = groups_cap
        c.width = width
        c.tail, c.groups, c.chunks = tail, groups, chunks
        c.outcomes, c.probes, c.answers = outcomes, probes, answers
        self.keep = (tail, groups, chunks, outcomes, probes, answers)
        self.c = c
        self.groups_cap = groups_cap
        self.tail_cap = tail_cap
        self.width = width
        self.num_rows = ffi.new("int64_t[]", groups_cap)
        self.codes = ffi.new("uint8_t[]", n)
        self.result = ffi.new("pba_pass_result *")
        self.pruned: Any = None  # pba_pass_pruned[], made and grown by FilePass.sweep
        self.done = ffi.new("size_t *")


class FilePass:
    """One compiled predicate's files of bound schemas, each pruned in one C call
    (see the module's docstring). Shared by a run's threads. ``seen`` is told the schema of
    each file decided (the run's record of the columns its files have)."""

    def __init__(
        self,
        where: Predicate,
        config: ReaderConfig,
        strict: bool,
        seen: Callable[[Schema], None],
        bound: Callable[[Footer], None] | None = None,
    ) -> None:
        self.where = where
        self.seen = seen
        self.bound = bound  # told each footer a schema is bound from
        self.config = config
        self.strict = strict
        self.suffix = config.first_suffix_bytes
        self._span = 0  # the widest first read a bound schema asked for
        self._bindings: list[_Binding] = []
        self._c_bindings: Any = ffi.new("pba_pass_binding[]", MAX_BINDINGS)
        self._known: set[bytes] = set()  # schemas bound or found unbindable
        self._lock = threading.Lock()
        self._local = threading.local()
        self._groups_cap = FIRST_GROUPS
        self._tail_cap = self.suffix
        self._width = 1
        self._tries = 0
        self.decided = 0
        self.misses = 0

    @property
    def asking(self) -> bool:
        """Whether files are still worth asking about: bound, and mostly answered (not
        handed back)."""
        return bool(self._bindings) and self.misses <= MISSES_ALLOWED + self.decided // 8

    def verdicts(self, path: str, stats: SourceStats) -> list[Verdict] | None:
        """The file's verdicts, named ``path``; None: prune it the usual way (nothing of it
        is kept). Its reads are counted in ``stats``."""
        found = self._call(path, stats)
        if found is None:
            return None
        binding, outcomes, scratch = found
        self.decided += 1
        self.seen(binding.schema)
        rows = scratch.num_rows
        return [
            Verdict(path, g, rows[g], not out.excluded, out.reason, out.rule)
            for g, out in enumerate(outcomes)
        ]

    def decide(self, path: str, stats: SourceStats, keep_tail: bool = False) -> Passed | None:
        """The file decided in one C call (see :class:`Passed`), or None: prune it the usual
        way. With ``keep_tail``, the bytes read of its end are kept when a row group is
        kept or its key/value metadata is not the reference's: a read of its rows then
        takes its footer from them. Its reads are counted in ``stats``."""
        found = self._call(path, stats)
        return None if found is None else self._passed(path, *found, keep_tail)

    def sweep(self, paths: Sequence[str], stats: SourceStats) -> tuple[list[Passed | None], int]:
        """Files of ``paths`` decided from the first, in as few C calls as it takes
        (``pba_file_pass_files``: one goes on while each file is pruned whole with the
        reference's key/value metadata, and stops at the first that is not): the outcome
        of each, the file that stopped a call as :meth:`decide` with ``keep_tail`` gives it
        (None: prune it the usual way); and how many of ``paths`` the outcomes are of (the
        rest are not asked about: the pass stopped asking, or a path is no local file's).
        The names are encoded once for every call. Reads are counted in ``stats``."""
        if not self.asking or not paths:
            return [], 0
        names, local = [], []
        for path in paths:
            named = _local_name(path)
            if named is None:
                break  # opening it says what is wrong
            local.append(named[0])
            names.append(named[1])
        count = len(names)
        if not count:
            return [None], 1  # the first path is no local file's: pruned the usual way
        joined = b"\0".join(names) + b"\0"
        starts = list(itertools.accumulate((len(n) + 1 for n in names), initial=0))
        buffer = ffi.from_buffer(joined)
        found: list[Passed | None] = []
        while len(found) < count and self.asking:
            at = len(found)
            n_bindings = len(self._bindings)
            scratch = self._scratch()
            if scratch.pruned is None or len(scratch.pruned) < count - at:
                scratch.pruned = ffi.new("pba_pass_pruned[]", max(count - at, 32))
            rc = lib.pba_file_pass_files(
                buffer + starts[at],
                len(joined) - starts[at],
                count - at,
                self._c_bindings,
                n_bindings,
                scratch.c,
                scratch.num_rows,
                scratch.codes,
                scratch.result,
                scratch.pruned,
                scratch.done,
            )
            check(rc, "pruning files")
            found += self._swept(local[at:], scratch, int(scratch.done[0]), stats)
            if len(found) == count:
                break
            stopped = self._found(scratch, stats)
            path = paths[len(found)]
            found.append(None if stopped is None else self._passed(path, *stopped, True))
        return found, len(found)

    def _swept(
        self, paths: Sequence[str], scratch: _Scratch, n: int, stats: SourceStats
    ) -> list[Passed]:
        """The outcomes of the first ``n`` of ``paths`` (local paths), pruned whole by one C
        call."""
        bindings = self._bindings
        found = []
        requests = nbytes = 0
        used = set()
        records = _PRUNED.iter_unpack(ffi.buffer(scratch.pruned, n * _PRUNED.size))
        for path, fields in zip(paths[:n], records, strict=True):
            size, offset, length, start, dev, ino, mtime, ctime, asked, got, b, _ = fields
            requests += asked
            nbytes += got
            used.add(b)
            identity = stat_fields_identity(path, size, dev, ino, mtime, ctime)
            bounds = FooterBounds(size, offset, length, start == 0)
            found.append(Passed([], bindings[b].footer, True, identity, bounds, None))
        if n:
            self.decided += n
            for b in used:
                self.seen(bindings[b].schema)
            stats.add_metadata(n)  # each opened
            stats.add_reads(requests, nbytes)
        return found

    def _passed(
        self,
        path: str,
        binding: _Binding,
        outcomes: list[Outcome],
        scratch: _Scratch,
        keep_tail: bool,
    ) -> Passed:
        """The outcome of the file ``path`` decided by the C call whose results ``scratch``
        holds (see :meth:`decide`)."""
        res = scratch.result
        size = int(res.file_size)
        same = bool(res.key_values_same)
        kept = [g for g, out in enumerate(outcomes) if not out.excluded]
        tail = None
        if keep_tail and (not same or kept):
            held = size - int(res.tail_start)
            tail = ffi.buffer(scratch.c.tail + (scratch.tail_cap - held), held)[:]
        self.decided += 1
        self.seen(binding.schema)
        identity = stat_fields_identity(
            local_path(path) or path,
            size,
            int(res.dev),
            int(res.ino),
            int(res.mtime_ns),
            int(res.ctime_ns),
        )
        bounds = FooterBounds(
            size, int(res.metadata_offset), int(res.metadata_length), res.tail_start == 0
        )
        return Passed(kept, binding.footer, same, identity, bounds, tail)

    def _call(
        self, path: str, stats: SourceStats
    ) -> tuple[_Binding, list[Outcome], _Scratch] | None:
        """``pba_file_pass`` on the file: its binding, each row group's outcome and this
        thread's scratch (the call's result, and the row groups' sizes, in it), or None (a
        miss counted)."""
        if not self.asking:
            return None
        named = _local_name(path)
        if named is None:
            return None  # opening it says what is wrong
        name = named[1]
        # The bindings counted before the scratch is sized: each is as wide as it allows.
        n_bindings = len(self._bindings)
        scratch = self._scratch()
        res = scratch.result
        rc = lib.pba_file_pass(
            name, self._c_bindings, n_bindings, scratch.c, scratch.num_rows, scratch.codes, res
        )
        check(rc, "pruning a file")
        return self._found(scratch, stats)

    def _found(
        self, scratch: _Scratch, stats: SourceStats
    ) -> tuple[_Binding, list[Outcome], _Scratch] | None:
        """What the C call whose results ``scratch`` holds found of one file (see
        :meth:`_call`), its reads counted."""
        res = scratch.result
        if not (res.why == lib.PBA_WHY_OPEN and res.err):
            stats.add_metadata()  # opened
        if res.requests:
            stats.add_reads(int(res.requests), int(res.bytes_read))
        if res.status != lib.PBA_PASS_DECIDED:
            with self._lock:  # room for the next file of the same shape
                if res.why == lib.PBA_WHY_CAPACITY:
                    self._groups_cap = max(self._groups_cap, 2 * scratch.groups_cap)
                elif res.why == lib.PBA_WHY_LONG_FOOTER and res.need <= MAX_TAIL:
                    self._tail_cap = max(self._tail_cap, int(res.need) + self.suffix)
            self.misses += 1
            return None
        binding = self._bindings[res.binding]
        m = binding.n_codes
        n = res.n_groups
        codes = ffi.buffer(scratch.codes, n * m)[:]
        outcomes = binding.outcomes
        found: list[Outcome] = []
        for g in range(n):
            row = codes[g * m : (g + 1) * m]
            out = outcomes.get(row)
            if out is None:
                out = outcomes[row] = binding.decide_codes(row)
            found.append(out)
        return binding, found, scratch

    def learn(self, footer: Footer, leaves: Mapping[int, Leaf]) -> None:
        """Bind the schema of ``footer``, a file pruned the usual way with ``leaves`` (its
        leaves, as :meth:`.api.CompiledPredicate.leaves_for` made them), when it is not
        known yet and the C side can take its files."""
        if self._tries >= MAX_TRIES:
            return
        self._tries += 1
        meta = footer.metadata
        spans = meta.head_spans()
        if spans is None:
            return
        data = footer.location.metadata_bytes(footer.tail)
        (at, length), (kv_at, kv_length) = spans
        schema = data[at : at + length].tobytes()
        if schema in self._known:
            return
        with self._lock:
            if schema in self._known or len(self._bindings) >= MAX_BINDINGS:
                return
            self._known.add(schema)
            sorted_leaves = sort_leaves(leaves)
            if sorted_leaves is None:
                return
            natives, fixed, others = sorted_leaves
            ranges = [(key, leaf, native_range(leaf)) for key, leaf in others]
            if self.strict and fixed:
                return
            bound = [(key, leaf, nr) for key, leaf, nr in ranges if nr is not None]
            if len(bound) < len(ranges):
                return  # a negation, a NULL test: the Python evaluator's
            c = self._c_bindings[len(self._bindings)]
            key_values = data[kv_at : kv_at + kv_length].tobytes()
            binding = _Binding(c, schema, key_values, footer, self.where, natives, bound, fixed)
            # Room for footers of this schema's size, and some more.
            need = footer.file_size - footer.location.metadata_offset
            self._tail_cap = max(self._tail_cap, min(MAX_TAIL, need + need // 4))
            # The first read of a file: its footer, and its filters when they lie within
            # the reader's suffix (one read for all), else the footer alone (the bytes of
            # a suffix are copied out of the page cache: 16 KiB where a footer of 2 KiB
            # sits beside large filters cost a point lookup over 200 files 3 MiB).
            reach = _filters_reach(footer, leaves)
            span = reach if reach is not None and reach <= self.suffix else need
            self._span = max(self._span, span)
            self.suffix = min(self.suffix, max(MIN_SUFFIX, self._span + self._span // 4))
            # The scratch is made wide enough before any thread can use the binding.
            self._width = max(self._width, binding.width)
            self._bindings.append(binding)
        if self.bound is not None:
            self.bound(footer)

    def _scratch(self) -> _Scratch:
        mine: _Scratch | None = getattr(self._local, "scratch", None)
        width = self._width
        if (
            mine is None
            or mine.groups_cap < self._groups_cap
            or mine.width < width
            or mine.tail_cap < self._tail_cap
            or mine.c.suffix != self.suffix
        ):
            mine = self._local.scratch = _Scratch(
                self.suffix, self._tail_cap, self.config, self._groups_cap, width
            )
        return mine


def _filters_reach(footer: Footer, leaves: Mapping[int, Leaf]) -> int | None:
    """How far before the end of the file of ``footer`` the first filter of a column of
    ``leaves`` starts (None: none has one, or the scanner does not read the footer). Their
    chunks are the scanner's records its pruning read."""
    indexes = sorted({leaf.desc.index for leaf in leaves.values() if leaf.desc is not None})
    records = footer.metadata.chunk_records(indexes)
    if records is None:
        return None
    starts = [
        chunk.bloom_filter_offset
        for group in records.scanned()
        for chunk in group
        if chunk.bloom_filter_offset is not None
    ]
    return footer.file_size - min(starts) if starts else None


def _local_name(path: str) -> tuple[str, bytes] | None:
    """The local path of ``path`` (a plain path or a ``file://`` URL) and its name as the C
    call opens it; None when it is no local file's, or holds a NUL (opening it the usual
    way says what is wrong)."""
    local = local_path(path)
    if local is None:
        return None
    name = os.fsencode(local)
    return None if b"\0" in name else (local, name)
