"""Plain-Python Split Block Bloom Filter as a benchmark peer.

The filter is the Parquet spec's (parquet-format ``BloomFilter.md``) written
with Python integers over a ``memoryview`` of uint32 words, hashed with the
``xxhash`` package: the cost a user pays without a native core. The workload
is the one of ``bench/peers/arrow_sbbf_bench.cc`` (a filter loaded to
ndv = 8 * size / 10 keys; half the probes present, half absent), with fewer
elements. Output lines look like::

    peer=python op=probe size=1048576 n=200000 reps=5 ns_per_elem=812.4 ns_min=801.1 hit_rate=0.505

Loading a 128 MiB filter to its design occupancy means ~107 M inserts, hours
in plain Python; so the part of the load made of random hashes (everything but
the pool of real keys) is inserted with a numpy implementation of the same
insert, checked against the plain one before use. Only setup uses numpy; every
timed operation is plain Python.

Usage: python bench/peers/python_sbbf_bench.py [--n N] [--reps R] [--sizes B[,B...]]
"""

from __future__ import annotations

import argparse
import statistics
import struct
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import xxhash

# The eight odd salts of the spec's block mask (parquet-format BloomFilter.md).
SALT = (
    0x47B6137B,
    0x44974D91,
    0x8824AD5B,
    0xA2B7289D,
    0x705495C7,
    0x2DF1424B,
    0x9EFC4947,
    0x5C6BFB31,
)
M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF

SEED = 0x5BBF2024
BITS_PER_KEY = 10
POOL_MAX = 1 << 20
MIN_STR, MAX_STR = 8, 24
FILL_CHUNK = 1 << 22

_I64 = struct.Struct("<q")


class PlainSbbf:
    """A Split Block Bloom Filter over a bytearray, one Python call per value."""

    def __init__(self, num_bytes: int) -> None:
        if num_bytes < 32 or num_bytes & (num_bytes - 1):
            raise ValueError(f"filter size must be a power of two >= 32, not {num_bytes}")
        if sys.byteorder != "little":
            raise RuntimeError("the spec's words are little-endian; this peer assumes the host is")
        self.raw = bytearray(num_bytes)
        self.words = memoryview(self.raw).cast("I")
        self.num_blocks = num_bytes // 32

    # Unrolled over the eight SALT words with literal constants: the fastest plain
    # Python we found (the loop over SALT measured 1.5x slower to insert, 2x to probe).
    def insert_hash(self, h: int) -> None:
        w = self.words
        b = (((h >> 32) * self.num_blocks) >> 32) << 3
        k = h & M32
        w[b] |= 1 << (((k * 0x47B6137B) & M32) >> 27)
        w[b + 1] |= 1 << (((k * 0x44974D91) & M32) >> 27)
        w[b + 2] |= 1 << (((k * 0x8824AD5B) & M32) >> 27)
        w[b + 3] |= 1 << (((k * 0xA2B7289D) & M32) >> 27)
        w[b + 4] |= 1 << (((k * 0x705495C7) & M32) >> 27)
        w[b + 5] |= 1 << (((k * 0x2DF1424B) & M32) >> 27)
        w[b + 6] |= 1 << (((k * 0x9EFC4947) & M32) >> 27)
        w[b + 7] |= 1 << (((k * 0x5C6BFB31) & M32) >> 27)

    def find_hash(self, h: int) -> bool:
        w = self.words
        b = (((h >> 32) * self.num_blocks) >> 32) << 3
        k = h & M32
        return bool(
            (w[b] >> (((k * 0x47B6137B) & M32) >> 27)) & 1
            and (w[b + 1] >> (((k * 0x44974D91) & M32) >> 27)) & 1
            and (w[b + 2] >> (((k * 0x8824AD5B) & M32) >> 27)) & 1
            and (w[b + 3] >> (((k * 0xA2B7289D) & M32) >> 27)) & 1
            and (w[b + 4] >> (((k * 0x705495C7) & M32) >> 27)) & 1
            and (w[b + 5] >> (((k * 0x2DF1424B) & M32) >> 27)) & 1
            and (w[b + 6] >> (((k * 0x9EFC4947) & M32) >> 27)) & 1
            and (w[b + 7] >> (((k * 0x5C6BFB31) & M32) >> 27)) & 1
        )

    def find_hash_loop(self, h: int) -> bool:
        """find_hash written as the spec's loop; used to check the unrolled one."""
        w = self.words
        b = (((h >> 32) * self.num_blocks) >> 32) << 3
        k = h & M32
        return all((w[b + i] >> (((k * salt) & M32) >> 27)) & 1 for i, salt in enumerate(SALT))


def splitmix64(seed: int) -> Iterator[int]:
    """SplitMix64 (Steele, Lea, Flood 2014), the stream the C++ and Java peers use."""
    state = seed
    while True:
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        yield z ^ (z >> 31)


def splitmix64_block(start_state: int, count: int) -> npt.NDArray[np.uint64]:
    """``count`` SplitMix64 outputs after ``start_state``, vectorised (setup only)."""
    with np.errstate(over="ignore"):
        steps = np.arange(1, count + 1, dtype=np.uint64)
        z = np.uint64(start_state) + steps * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        out: npt.NDArray[np.uint64] = z ^ (z >> np.uint64(31))
    return out


def numpy_insert(f: PlainSbbf, chunks: Iterable[npt.NDArray[np.uint64]]) -> None:
    """The spec's insert, vectorised (setup only).

    OR-ing at repeated indices is not a fancy assignment, but setting a bit to 1
    is: the words are expanded to one byte per bit, written, and packed back.
    """
    words = np.frombuffer(f.raw, dtype="<u4")
    salt = np.array(SALT, dtype=np.uint32)
    lanes = np.arange(8, dtype=np.int64)
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")
    for hashes in chunks:
        with np.errstate(over="ignore"):
            block = ((hashes >> np.uint64(32)) * np.uint64(f.num_blocks)) >> np.uint64(32)
            key = (hashes & np.uint64(M32)).astype(np.uint32)
            bit = (key[:, None] * salt[None, :]) >> np.uint32(27)
        word_index = block.astype(np.int64)[:, None] * 8 + lanes[None, :]
        bits[(word_index * 32 + bit).reshape(-1)] = 1
    words[:] = np.packbits(bits, bitorder="little").view("<u4")


def _self_check() -> None:
    """The numpy setup insert and the unrolled probe agree with the spec's loops."""
    hashes = splitmix64_block(SEED, 5000)
    plain, fast = PlainSbbf(1024), PlainSbbf(1024)
    for h in hashes.tolist():
        plain.insert_hash(h)
    numpy_insert(fast, [hashes])
    if plain.raw != fast.raw:
        raise AssertionError("numpy setup insert disagrees with the plain-Python insert")
    for h in splitmix64_block(SEED + 1, 5000).tolist() + hashes.tolist()[:100]:
        if plain.find_hash(h) != plain.find_hash_loop(h):
            raise AssertionError(f"unrolled find_hash disagrees with the loop for {h:#x}")


def random_string(rng: Iterator[int]) -> bytes:
    length = MIN_STR + next(rng) % (MAX_STR - MIN_STR + 1)
    out = b"".join(next(rng).to_bytes(8, "little") for _ in range((length + 7) // 8))
    return out[:length]


@dataclass
class Workload:
    size: int
    filter: PlainSbbf
    insert_hashes: list[int]
    probe_hashes: list[int]
    probe_ints: list[int]
    probe_strs: list[bytes]


def build(size: int, n: int) -> Workload:
    """The loaded filter and probe inputs for one size (same recipe as the C++ peer)."""
    seed = SEED ^ size
    rng = splitmix64(seed)
    f = PlainSbbf(size)
    ndv = size * 8 // BITS_PER_KEY
    pool = min(ndv, POOL_MAX, n)  # a pool beyond the probe count would only cost setup
    pool_ints = [_signed(next(rng)) for _ in range((pool + 1) // 2)]
    pool_strs = [random_string(rng) for _ in range(pool - len(pool_ints))]
    int_hashes = [xxhash.xxh64_intdigest(_I64.pack(v)) for v in pool_ints]
    for h in int_hashes:
        f.insert_hash(h)
    for s in pool_strs:
        f.insert_hash(xxhash.xxh64_intdigest(s))
    # The rest of the occupancy: random hashes, from a stream of its own.
    fill_state = seed ^ 0xF111
    numpy_insert(
        f,
        (
            splitmix64_block(
                (fill_state + start * 0x9E3779B97F4A7C15) & M64, min(FILL_CHUNK, ndv - start)
            )
            for start in range(pool, ndv, FILL_CHUNK)
        ),
    )

    insert_hashes = [next(rng) for _ in range(n)]
    probe_hashes, probe_ints, probe_strs = [], [], []
    for _ in range(n):
        if next(rng) & 1:
            j = next(rng) % len(pool_ints)
            probe_ints.append(pool_ints[j])
            probe_hashes.append(int_hashes[j])
        else:
            probe_ints.append(_signed(next(rng)))
            probe_hashes.append(next(rng))
        if pool_strs and next(rng) & 1:
            probe_strs.append(pool_strs[next(rng) % len(pool_strs)])
        else:
            probe_strs.append(random_string(rng))
    return Workload(size, f, insert_hashes, probe_hashes, probe_ints, probe_strs)


def _signed(u: int) -> int:
    return u - (1 << 64) if u >> 63 else u


def op_insert(w: Workload, f: PlainSbbf) -> int:
    insert = f.insert_hash
    for h in w.insert_hashes:
        insert(h)
    return 0


def op_probe(w: Workload, f: PlainSbbf) -> int:
    find = f.find_hash
    return sum(1 for h in w.probe_hashes if find(h))


def op_hash_probe_int64(w: Workload, f: PlainSbbf) -> int:
    find, digest, pack = f.find_hash, xxhash.xxh64_intdigest, _I64.pack
    return sum(1 for v in w.probe_ints if find(digest(pack(v))))


def op_hash_probe_str(w: Workload, f: PlainSbbf) -> int:
    find, digest = f.find_hash, xxhash.xxh64_intdigest
    return sum(1 for s in w.probe_strs if find(digest(s)))


def empty_filter(w: Workload) -> PlainSbbf:
    """A zeroed filter whose pages are already mapped, so no page fault is timed."""
    f = PlainSbbf(w.size)
    pages = memoryview(f.raw)[::4096]
    pages[:] = bytes(len(pages))
    return f


def loaded_filter(w: Workload) -> PlainSbbf:
    return w.filter


OPS: tuple[
    tuple[str, Callable[[Workload, PlainSbbf], int], Callable[[Workload], PlainSbbf], bool], ...
] = (
    ("insert", op_insert, empty_filter, False),
    ("probe", op_probe, loaded_filter, True),
    ("hash_probe_int64", op_hash_probe_int64, loaded_filter, True),
    ("hash_probe_str", op_hash_probe_str, loaded_filter, True),
)


def run(w: Workload, n: int, reps: int) -> None:
    for name, op, prepare, probes in OPS:
        hits = op(w, prepare(w))  # warm-up
        times = []
        for _ in range(reps):
            f = prepare(w)
            t0 = time.perf_counter_ns()
            hits = op(w, f)
            times.append(time.perf_counter_ns() - t0)
        line = (
            f"peer=python op={name} size={w.size} n={n} reps={reps} "
            f"ns_per_elem={statistics.median(times) / n:.2f} ns_min={min(times) / n:.2f}"
        )
        if probes:
            line += f" hit_rate={hits / n:.4f}"
        print(line, flush=True)


def _sizes(text: str) -> list[int]:
    sizes = [int(s) for s in text.split(",")]
    for s in sizes:
        if s < 32 or s & (s - 1) or s > 128 << 20:
            raise argparse.ArgumentTypeError(f"{s} is not a power of two in [32, 128 MiB]")
    return sizes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000, help="elements per operation")
    parser.add_argument("--reps", type=int, default=5, help="timed repetitions (median)")
    parser.add_argument(
        "--sizes", type=_sizes, default=[32 << 10, 1 << 20, 128 << 20], help="filter bytes"
    )
    args = parser.parse_args(argv)
    if args.n <= 0 or args.reps <= 0:
        parser.error("--n and --reps must be positive")
    _self_check()
    for size in args.sizes:
        run(build(size, args.n), args.n, args.reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
