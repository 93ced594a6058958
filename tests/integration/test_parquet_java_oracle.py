"""parquet-java as an oracle: our hashes, bitsets and probe answers match it byte for byte.

``tests/support/java/SbbfOracle.java`` drives parquet-java's ``BlockSplitBloomFilter``
(parquet-column from the jars that ship with pyspark) and is compiled once per
content hash into ``.cache/java/`` (gitignored). All cases go to one JVM run, so
the module costs one ``javac`` (about 2 s, cached afterwards) and one JVM start.

What parquet-java can and cannot say (parquet-column 1.17):

* ``hash(Object)`` accepts Binary, Integer, Long, Float and Double only; a Boolean
  raises ``RuntimeException("Parquet Bloom filter: Not supported type")`` and its
  writer builds no filter for BOOLEAN columns. For BOOLEAN the oracle falls back
  to hashing the one PLAIN byte as a Binary (``route == 1``), which checks our
  one-byte convention against parquet-java's XXH64 rather than against a writer.
* INT96 and FIXED_LEN_BYTE_ARRAY values are Binary there, hashed as raw bytes.
* ``writeTo`` writes the bitset alone; the BloomFilterHeader comes from the file
  writer, so bitsets are compared without a header.

The probe side compares ``check_many`` with ``findHash`` on values that were
not inserted. For a float NaN or +-0.0 probe our answer may only be *more*
permissive (we may widen those probes, see docs/architecture.md,
"Reference behaviour"), never less.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from pybloom_async import PhysicalType, SplitBlockBloomFilter, hash_values, simd_backend, xxh64
from pybloom_async._native import lib

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
ORACLE_SOURCE = REPO / "tests" / "support" / "java" / "SbbfOracle.java"
ORACLE_CACHE = REPO / ".cache" / "java"

SIZES = (32, 1024, 64 * 1024, 1024 * 1024)
N_INSERT = 2000
N_PROBE = 2000
SEED = 0x5BBF_2024

REQUEST_MAGIC = b"SBBFREQ1"
RESPONSE_MAGIC = b"SBBFRSP1"
ROUTE_TYPED = 0
ROUTE_BINARY_FALLBACK = 1

Raw = list[bytes]  # PLAIN-encoded values, exactly the bytes XXH64 sees


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    """One physical type (and width) with its value generator and API conversion."""

    name: str
    ptype: PhysicalType
    type_length: int | None
    draw: Callable[[np.random.Generator, int], Raw]
    specials_insert: tuple[bytes, ...] = ()
    specials_probe: tuple[bytes, ...] = ()

    @property
    def width(self) -> int | None:
        if self.ptype is PhysicalType.FIXED_LEN_BYTE_ARRAY:
            return self.type_length
        return self.ptype.fixed_width

    def to_api(self, raw: Raw) -> Any:
        """The values as a caller hands them to our API (numpy for numbers)."""
        joined = b"".join(raw)
        if self.ptype is PhysicalType.BOOLEAN:
            return [r == b"\x01" for r in raw]
        dtype = {
            PhysicalType.INT32: "<i4",
            PhysicalType.INT64: "<i8",
            PhysicalType.FLOAT: "<f4",
            PhysicalType.DOUBLE: "<f8",
        }.get(self.ptype)
        if dtype is not None:
            return np.frombuffer(joined, dtype=dtype)
        return list(raw)

    def lenient_probe(self, raw: bytes) -> bool:
        """True for probes our API may widen (float NaN, +-0.0)."""
        if self.ptype is PhysicalType.FLOAT:
            (v,) = struct.unpack("<f", raw)
        elif self.ptype is PhysicalType.DOUBLE:
            (v,) = struct.unpack("<d", raw)
        else:
            return False
        return bool(v != v or v == 0.0)


def _fixed(width: int) -> Callable[[np.random.Generator, int], Raw]:
    def draw(rng: np.random.Generator, k: int) -> Raw:
        blob = rng.bytes(width * k)
        return [blob[i * width : (i + 1) * width] for i in range(k)]

    return draw


def _byte_arrays(rng: np.random.Generator, k: int) -> Raw:
    # 0..100 bytes: empty, the <4 / <8 / <32 byte tails and XXH64's 32-byte stripes.
    lengths = rng.integers(0, 101, size=k)
    return [rng.bytes(int(n)) for n in lengths]


def _booleans(rng: np.random.Generator, k: int) -> Raw:
    del rng, k
    return []  # two values only: the specials carry them


F32 = struct.Struct("<I")
F64 = struct.Struct("<Q")

CASES = (
    Case(
        "BOOLEAN",
        PhysicalType.BOOLEAN,
        None,
        _booleans,
        specials_insert=(b"\x01",),
        specials_probe=(b"\x00",),
    ),
    Case(
        "INT32",
        PhysicalType.INT32,
        None,
        _fixed(4),
        specials_insert=tuple(struct.pack("<i", v) for v in (0, -1, 1, -(2**31), 2**31 - 1)),
    ),
    Case(
        "INT64",
        PhysicalType.INT64,
        None,
        _fixed(8),
        specials_insert=tuple(struct.pack("<q", v) for v in (0, -1, 1, -(2**63), 2**63 - 1)),
    ),
    Case(
        "FLOAT",
        PhysicalType.FLOAT,
        None,
        _fixed(4),  # random bit patterns: denormals, infinities and NaN payloads included
        specials_insert=tuple(
            F32.pack(b)
            for b in (0x00000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0x00000001)
        ),
        specials_probe=tuple(F32.pack(b) for b in (0x80000000, 0x7FC00001, 0xFFC00000)),
    ),
    Case(
        "DOUBLE",
        PhysicalType.DOUBLE,
        None,
        _fixed(8),
        specials_insert=tuple(
            F64.pack(b)
            for b in (
                0x0000000000000000,
                0x7FF0000000000000,
                0xFFF0000000000000,
                0x7FF8000000000000,
                0x7FF0000000000001,
                0x0000000000000001,
            )
        ),
        specials_probe=tuple(
            F64.pack(b) for b in (0x8000000000000000, 0x7FF8000000000001, 0xFFF8000000000000)
        ),
    ),
    Case(
        "BYTE_ARRAY",
        PhysicalType.BYTE_ARRAY,
        None,
        _byte_arrays,
        specials_insert=(b"", b"a", b"parquet"),
        specials_probe=(b"\x00", b"Parquet"),
    ),
    Case("FLBA5", PhysicalType.FIXED_LEN_BYTE_ARRAY, 5, _fixed(5)),
    Case("FLBA16", PhysicalType.FIXED_LEN_BYTE_ARRAY, 16, _fixed(16)),
    Case("FLBA40", PhysicalType.FIXED_LEN_BYTE_ARRAY, 40, _fixed(40)),
    Case("INT96", PhysicalType.INT96, None, _fixed(12)),
)
CASE_IDS = [c.name for c in CASES]


def _values(case: Case, index: int) -> tuple[Raw, Raw]:
    """Distinct insert and probe values for a case; no probe was inserted."""
    rng = np.random.default_rng([SEED, index])
    want = N_INSERT + N_PROBE
    pool: dict[bytes, None] = dict.fromkeys(case.specials_insert)
    for raw in case.draw(rng, want + 64):
        pool.setdefault(raw, None)
    for raw in case.specials_probe:
        pool.pop(raw, None)
    ordered = list(pool)
    inserted = ordered[: min(N_INSERT, len(ordered))]
    probes = list(case.specials_probe) + ordered[len(inserted) :]
    probes = probes[:N_PROBE]
    assert set(inserted).isdisjoint(probes)
    return inserted, probes


# --------------------------------------------------------------------------- oracle


@dataclass(frozen=True)
class Job:
    case: Case
    num_bytes: int
    inserted: Raw
    probes: Raw


@dataclass(frozen=True)
class JavaResult:
    bitset_size: int
    route: int
    hashes: npt.NDArray[np.uint64]  # inserted then probes
    bitset: bytes
    found: npt.NDArray[np.bool_]  # findHash, inserted then probes


def _encode_values(case: Case, raw: Raw) -> bytes:
    if case.ptype is PhysicalType.BYTE_ARRAY:
        return b"".join(struct.pack("<I", len(r)) + r for r in raw)
    width = case.width
    assert width is not None and all(len(r) == width for r in raw)
    return b"".join(raw)


def _encode_request(jobs: list[Job]) -> bytes:
    parts = [REQUEST_MAGIC, struct.pack("<I", len(jobs))]
    for job in jobs:
        parts.append(
            struct.pack(
                "<5I",
                int(job.case.ptype),
                job.case.type_length or 0,
                job.num_bytes,
                len(job.inserted),
                len(job.probes),
            )
        )
        parts.append(_encode_values(job.case, job.inserted))
        parts.append(_encode_values(job.case, job.probes))
    return b"".join(parts)


def _decode_response(data: bytes, jobs: list[Job]) -> list[JavaResult]:
    view = memoryview(data)
    assert bytes(view[:8]) == RESPONSE_MAGIC, "bad oracle response magic"
    (count,) = struct.unpack_from("<I", view, 8)
    assert count == len(jobs)
    pos = 12
    results = []
    for job in jobs:
        n = len(job.inserted) + len(job.probes)
        size, route = struct.unpack_from("<II", view, pos)
        pos += 8
        hashes = np.frombuffer(view[pos : pos + 8 * n], dtype="<u8").astype(np.uint64)
        pos += 8 * n
        bitset = bytes(view[pos : pos + size])
        pos += size
        found = np.frombuffer(view[pos : pos + n], dtype=np.uint8).astype(bool)
        pos += n
        results.append(JavaResult(size, route, hashes, bitset, found))
    assert pos == len(data), "trailing bytes in oracle response"
    return results


def _java_tools() -> tuple[str, str, Path]:
    """java, javac and pyspark's jars folder, or skip with the reason."""
    java_home = os.environ.get("JAVA_HOME")
    search = os.pathsep.join(
        p for p in (str(Path(java_home) / "bin") if java_home else "", os.environ["PATH"]) if p
    )
    java = shutil.which("java", path=search)
    javac = shutil.which("javac", path=search)
    if java is None or javac is None:
        pytest.skip("parquet-java oracle needs a JDK (java and javac on PATH or in JAVA_HOME)")
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("parquet-java oracle needs pyspark (its jars hold parquet-column)")
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    if not any(jars.glob("parquet-column-*.jar")):
        pytest.skip(f"no parquet-column jar under {jars}")
    return java, javac, jars


@pytest.fixture(scope="session")
def oracle_command() -> list[str]:
    """Compile SbbfOracle once per content hash; return the command prefix to run it."""
    java, javac, jars = _java_tools()
    probe = subprocess.run([javac, "-version"], capture_output=True, text=True, timeout=60)
    version = probe.stdout + probe.stderr
    key = hashlib.sha256()
    key.update(ORACLE_SOURCE.read_bytes())
    key.update(version.encode())
    for jar in sorted(jars.glob("*.jar")):
        key.update(jar.name.encode())
    classes = ORACLE_CACHE / key.hexdigest()[:16]
    classpath = f"{classes}{os.pathsep}{jars / '*'}"
    if not (classes / "SbbfOracle.class").exists():
        ORACLE_CACHE.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="build-", dir=ORACLE_CACHE))
        proc = subprocess.run(
            # -path: some pyspark jars name absent jars in their manifest Class-Path.
            [
                javac,
                "-Xlint:all,-path",
                "-cp",
                str(jars / "*"),
                "-d",
                str(staging),
                str(ORACLE_SOURCE),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if proc.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            pytest.fail(f"javac SbbfOracle.java failed:\n{proc.stdout}{proc.stderr}")
        try:
            staging.rename(classes)  # atomic; a concurrent session may have won the race
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
    return [java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", classpath, "SbbfOracle"]


@pytest.fixture(scope="session")
def oracle(
    oracle_command: list[str], tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, int], tuple[Job, JavaResult]]:
    """Every (case, size) job answered by parquet-java, from a single JVM run."""
    jobs: list[Job] = []
    for index, case in enumerate(CASES):
        inserted, probes = _values(case, index)
        jobs.extend(Job(case, size, inserted, probes) for size in SIZES)
    workdir = tmp_path_factory.mktemp("sbbf-oracle")
    request, response = workdir / "request.bin", workdir / "response.bin"
    request.write_bytes(_encode_request(jobs))
    proc = subprocess.run(
        [*oracle_command, str(request), str(response)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"SbbfOracle failed ({proc.returncode}):\n{proc.stderr}"
    results = _decode_response(response.read_bytes(), jobs)
    return {(j.case.name, j.num_bytes): (j, r) for j, r in zip(jobs, results, strict=True)}


@pytest.fixture(params=["scalar", "avx2"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run a test on each SIMD backend: both must match parquet-java."""
    name = str(request.param)
    if name == "avx2" and not lib.pba_avx2_available():
        pytest.skip("this CPU/OS cannot run AVX2")
    before = simd_backend()
    assert lib.pba_set_backend(name.encode()) == 0
    try:
        yield name
    finally:
        lib.pba_set_backend(before.encode())


# --------------------------------------------------------------------------- helpers


def _first_mismatch(ours: npt.NDArray[Any], theirs: npt.NDArray[Any], raw: Raw) -> str:
    (bad,) = np.nonzero(ours != theirs)
    i = int(bad[0])
    return (
        f"{bad.size} of {ours.size} differ; first at index {i}: value {raw[i]!r}, "
        f"ours {ours[i]!r}, parquet-java {theirs[i]!r}"
    )


def _filled(job: Job) -> SplitBlockBloomFilter:
    bf = SplitBlockBloomFilter(job.num_bytes)
    bf.insert(job.case.to_api(job.inserted), job.case.ptype, job.case.type_length)
    return bf


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@pytest.mark.usefixtures("backend")
def test_hashes_match_parquet_java(
    case: Case,
    oracle: dict[tuple[str, int], tuple[Job, JavaResult]],
) -> None:
    job, java = oracle[case.name, SIZES[0]]
    raw = job.inserted + job.probes
    ours = np.asarray(hash_values(case.to_api(raw), case.ptype, case.type_length))
    assert ours.dtype == np.uint64
    assert ours.shape == java.hashes.shape
    assert np.array_equal(ours, java.hashes), _first_mismatch(ours, java.hashes, raw)
    # The per-value entry point agrees too (on the raw PLAIN bytes).
    for i in range(0, len(raw), 97):
        assert xxh64(raw[i]) == int(java.hashes[i]), raw[i]
    if case.ptype is PhysicalType.BOOLEAN:
        # parquet-java 1.17 cannot hash a Boolean; if a later one can, this comparison
        # silently switched to its native hash, which must still equal ours.
        assert java.route in (ROUTE_TYPED, ROUTE_BINARY_FALLBACK)
    else:
        assert java.route == ROUTE_TYPED


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@pytest.mark.usefixtures("backend")
def test_bitset_matches_parquet_java(
    case: Case,
    size: int,
    oracle: dict[tuple[str, int], tuple[Job, JavaResult]],
) -> None:
    job, java = oracle[case.name, size]
    assert java.bitset_size == size
    ours = bytes(_filled(job).bitset)
    assert len(ours) == size
    if ours != java.bitset:
        a = np.frombuffer(ours, dtype="<u4")
        b = np.frombuffer(java.bitset, dtype="<u4")
        (words,) = np.nonzero(a != b)
        pytest.fail(
            f"{words.size} of {a.size} bitset words differ; first word {int(words[0])}: "
            f"ours {int(a[words[0]]):#010x}, parquet-java {int(b[words[0]]):#010x}"
        )


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@pytest.mark.usefixtures("backend")
def test_check_matches_find_hash(
    case: Case,
    size: int,
    oracle: dict[tuple[str, int], tuple[Job, JavaResult]],
) -> None:
    job, java = oracle[case.name, size]
    bf = _filled(job)
    n = len(job.inserted)

    present = np.asarray(bf.check_many(case.to_api(job.inserted), case.ptype, case.type_length))
    assert present.dtype == np.bool_
    assert java.found[:n].all()  # parquet-java finds everything it inserted
    assert present.all(), _first_mismatch(present, java.found[:n], job.inserted)

    ours = np.asarray(bf.check_many(case.to_api(job.probes), case.ptype, case.type_length))
    theirs = java.found[n:]
    lenient = np.array([case.lenient_probe(r) for r in job.probes], dtype=bool)
    strict = ~lenient
    assert np.array_equal(ours[strict], theirs[strict]), _first_mismatch(
        ours[strict], theirs[strict], [r for r, s in zip(job.probes, strict, strict=True) if s]
    )
    # Where we may widen a probe, we must still never answer "absent" when parquet-java
    # answers "maybe present".
    assert not (theirs[lenient] & ~ours[lenient]).any()


def test_probe_workload_is_discriminating(
    oracle: dict[tuple[str, int], tuple[Job, JavaResult]],
) -> None:
    """The probe comparison sees both answers: a saturated filter says yes to nearly
    everything, a large one no to nearly everything, a 1 KiB one to a mix."""
    for case in CASES:
        if case.ptype is PhysicalType.BOOLEAN:
            continue
        rates = {}
        for size in SIZES:
            job, java = oracle[case.name, size]
            rates[size] = float(java.found[len(job.inserted) :].mean())
        assert rates[32] == 1.0, (case.name, rates)
        assert 0.1 < rates[1024] < 0.9, (case.name, rates)
        assert rates[1024 * 1024] < 0.01, (case.name, rates)
