"""Bloom filters asked where they lie: a local file's filters probed by the C core, which
reads of each only its header and the blocks the hashes select; any file's filters that
its footer's read took too (a small file's, an object store's whose suffix read reached
them), in that memory.

Reading a filter to probe it (:func:`.fetch.read_filters_from`) copies its whole bitset
into Python, 32 KiB or more per row group, to look at one 32-byte block per key. On a
file opened in the calling thread (:class:`~pybloom_async.io.local.BlockingLocalFileSource`)
:func:`probe_in_place` hands the descriptor to ``pba_probe_filters`` instead, which reads
the header, checks it as :func:`.fetch.filters_from_pieces` does (its place, its recorded
length, the header's size and the bitset it announces), and then only the blocks asked
about; with some keys (one per 8 KiB of bitset), the whole bitset in one read. A filter
the footer's read holds already (a small file's, in the tail) is probed in that memory,
with no read. A filter outside that usual shape is UNSURE, and the caller reads the
filters the planned way, which names the reason. Nothing is cached: a block read costs
less than keeping the filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .._native import check, ffi, lib
from ..io.base import ByteSource
from ..io.local import BlockingLocalFileSource
from .fetch import Footer
from .plan import PlanConfig

#: What a probe found (``pba_probe_filters``).
ABSENT = lib.PBA_PROBE_ABSENT
MAY = lib.PBA_PROBE_MAY
UNSURE = lib.PBA_PROBE_UNSURE

_U64_MAX = (1 << 64) - 1


class Probe(NamedTuple):
    """One filter asked about ``hashes[lo:hi]`` (a uint64 array): where the footer says
    it lies (``offset``) and its recorded length, header included. With ``may`` (a uint8
    array as long as ``hashes``), every hash of the span is asked, and ``may[k]`` set to 1
    for each one the filter may hold (the others are left as they are)."""

    offset: int
    length: int
    hashes: Any
    lo: int
    hi: int
    may: Any = None


def probe_in_place(
    source: ByteSource, footer: Footer, probes: Sequence[Probe], config: PlanConfig
) -> list[int] | None:
    """Per probe ABSENT or MAY; None when a filter is not as the footer says (UNSURE: the
    caller reads the filters the planned way), or lies where nothing is read in place:
    outside the bytes the footer's read holds, of a source other than a local file open
    in this thread (an object store's file: its filters are probed in place when its
    footer's read took them too). The reads are counted in ``source.stats``.

    Raises
    ------
    MemoryError
        A whole bitset (at most ``config.max_filter_bytes``) could not be allocated.
    """
    fd = -1  # no descriptor: only the filters held are probed
    if isinstance(source, BlockingLocalFileSource):
        opened = source.descriptor_now()
        if opened is None:
            return None
        fd = opened
    n = len(probes)
    if not n:
        return []
    arr = ffi.new("pba_probe[]", n)
    views: list[Any] = []
    # One view per hashes array: a leaf's is asked of its filter in row group after row group.
    hash_views: dict[int, Any] = {}
    tail_start = footer.tail_start
    tail_end = footer.file_size
    tail = None
    for i, (offset, length, hashes, lo, hi, may) in enumerate(probes):
        if not 0 <= lo < hi <= len(hashes):
            raise ValueError(f"probe {i}: hashes [{lo}, {hi}) of {len(hashes)}")
        view = hash_views.get(id(hashes))
        if view is None:
            view = hash_views[id(hashes)] = ffi.from_buffer("uint64_t[]", hashes)
        p = arr[i]
        p.offset = offset
        p.length = length
        p.hashes = view + lo
        p.n_hashes = hi - lo
        if may is not None:
            if len(may) != len(hashes) or may.dtype != np.uint8:
                raise ValueError(f"probe {i}: may must be uint8, one per hash")
            marks = ffi.from_buffer("uint8_t[]", may)
            views.append(marks)
            p.may = marks + lo
        if tail_start <= offset and 0 < length <= tail_end - offset:
            # In the footer's read already (a small file's filters): no read.
            if tail is None:
                tail = ffi.from_buffer(footer.tail)
            p.held = tail + (offset - tail_start)
        elif fd < 0:
            return None  # to be read: the planned way reads it
    out = ffi.new("int32_t[]", n)
    counts = ffi.new("uint64_t[2]")
    rc = lib.pba_probe_filters(
        fd,
        arr,
        n,
        footer.location.metadata_offset,
        min(config.max_serialized_bytes, _U64_MAX),
        min(config.max_filter_bytes, _U64_MAX),
        min(config.max_header_bytes, _U64_MAX),
        out,
        counts,
        counts + 1,
    )
    source.stats.add_reads(int(counts[0]), int(counts[1]))
    if rc == lib.PBA_ERR_NOMEM:
        raise MemoryError("no memory for a Bloom filter's bitset")
    check(rc, "probing Bloom filters")
    found = list(out)
    return None if UNSURE in found else found
