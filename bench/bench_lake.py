"""The lake index vs per-file sidecar indexes vs in-file filters, on S3 at 20 ms (moto).

Build from filters: ``--build-files`` files of ``--build-rows`` rows (an INT64 key with
a filter and eight incompressible INT64 payload columns: 72 bytes a row) folded into a lake
index; the figure is the bytes read against the lake's bytes. The build reads footers and
filters only, so the fraction is about the filter's bits per row over the row's bits:
narrower rows give a larger fraction.

Data: ``--files`` Parquet files (default 1,000) of one row group of ``--rows`` random
INT64 ids each, with in-file filters (pyarrow ``bloom_filter_options``, NDV = rows, FPP
0.01), uploaded to moto_server. Indexes built on S3 (no proxy): the lake index by folding
the in-file filters (``mode="filters"``: the bytes it read, against the lake's bytes), and,
with ``--sidecar``, one sidecar index per file.

Query: one present key (``id = k``), file verdicts. Methods, each checked (the file
holding the key is kept):

* **in-file**: ``prune(root)``: each file's footer and filters (row groups);
* **sidecar**: ``prune(root, use_index="sidecar", row_groups=False)``;
* **lake**: ``prune(root, use_index="lake", row_groups=False)``.

Every run goes through ``bench/latency_proxy.py`` (``--delay-ms`` each way, keep-alive,
handshake charged, a fresh proxy and client per run). Figures per method: median wall
time over ``--runs`` (>= 5), requests after the listing (``SourceStats``: reads +
metadata - the listing), bytes read.

``--scale 1000,10000`` (section ``scale``) measures a **lookup** of one present key with
default columns over lakes of those sizes (files of ``--rows`` ids, one row group each),
the lake index built from values at ``--scale-fpp`` per file (its footer digest included):
every request counted (``SourceStats``: listing pages, the index's LIST, directory,
stripe, the rows), with the digest's size against the lake's and the index's. A covered
fresh file's footer comes from the digest: no footer is read.

``--big N`` adds the 100,000-file figure without 100,000 objects: a synthetic segment for
N files (random bitsets, B = 8) is PUT, and the files are given as a table's file list
(``files=``, their sizes and ETags as in the directory), so nothing lists them; the figure
is the index's requests, bytes and wall time for one key.

Run::

    .venv/bin/python bench/bench_lake.py [--files 1000] [--runs 5] [--delay-ms 20]
        [--sidecar] [--big 100000] [--json-out bench/results/lake.json]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import obstore
import pyarrow as pa
import pyarrow.parquet as pq
from bench_reader import ACCESS_KEY, BUCKET, REGION, SECRET_KEY, moto_server, s3_store
from latency_proxy import start_subprocess
from record import Recorder, load_average

from pybloom_async import (
    SplitBlockBloomFilter,
    build_index,
    build_lake_index,
    col,
    lookup,
    prune,
)
from pybloom_async.io.base import FileInfo, SourceStats
from pybloom_async.io.store import clear_store_cache
from pybloom_async.lake.format import (
    LAKE_DIR,
    LakeColumn,
    LakeFile,
    decode_directory,
    decode_trailer,
    encode_segment,
)
from pybloom_async.parquet import ColumnDescriptor
from pybloom_async.types import PhysicalType

PREFIX = "lake/"


def parquet_bytes(ids: np.ndarray[Any, Any]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(
        pa.table({"id": pa.array(ids, pa.int64())}),
        sink,
        bloom_filter_options={"id": {"ndv": len(ids), "fpp": 0.01}},
    )
    return sink.getvalue()


def upload(endpoint: str, items: list[tuple[str, bytes]]) -> None:
    store = s3_store(endpoint)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda kv: obstore.put(store, kv[0], kv[1]), items))


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = anyio.run(call)
    return out, time.perf_counter() - t0


def through_proxy(
    endpoint: str, direct: dict[str, Any], delay_ms: float, work: Callable[[dict[str, Any]], Any]
) -> Any:
    proxy = start_subprocess(
        endpoint.removeprefix("http://"), delay=delay_ms / 1000, http_keepalive=True
    )
    try:
        clear_store_cache()
        return work({**direct, "endpoint": proxy.endpoint})
    finally:
        proxy.stop()
        clear_store_cache()


def one_key(
    method: str, root: str, key: int, want: str, options: dict[str, Any], files: Any = None
) -> dict[str, Any]:
    stats = SourceStats()
    use = {"in-file": None, "sidecar": "sidecar", "lake": "lake"}[method]
    extra: dict[str, Any] = {} if use is None else {"row_groups": False}
    if files is not None:
        extra["files"] = files
    verdicts, wall = timed(
        lambda: prune(root, col("id") == key, use_index=use, options=options, stats=stats, **extra)
    )
    kept = {v.file for v in verdicts if v.kept}
    if want not in kept:
        raise RuntimeError(f"{method}: {want} was pruned (a false negative)")
    listing = 0 if files is not None else 1
    return {
        "wall_s": wall,
        "requests_after_listing": stats.requests + stats.metadata_requests - listing,
        "bytes_read": stats.bytes_read,
        "files_kept": len(kept),
    }


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]} | {"runs": len(runs)}


def section_build_bytes(args: argparse.Namespace, endpoint: str, direct: dict[str, Any]) -> Any:
    """The bytes a build from in-file filters reads, against the lake's, on larger files."""
    rng = np.random.default_rng(9)
    items = []
    for i in range(args.build_files):
        ids = rng.integers(0, 2**62, args.build_rows)
        # Eight incompressible INT64 payload columns: 72 bytes a row with the key.
        table = {"id": ids} | {f"p{j}": rng.integers(0, 2**62, args.build_rows) for j in range(8)}
        sink = io.BytesIO()
        pq.write_table(
            pa.table(table), sink,
            bloom_filter_options={"id": {"ndv": args.build_rows, "fpp": 0.01}},
        )  # fmt: skip
        items.append((f"build/part-{i:04}.parquet", sink.getvalue()))
    upload(endpoint, items)
    lake_bytes = sum(len(b) for _, b in items)
    stats = SourceStats()
    built, seconds = timed(
        lambda: build_lake_index(
            f"s3://{BUCKET}/build/", ["id"], mode="filters", options=direct, stats=stats
        )
    )
    if built.errors or len(built.folded) != args.build_files:
        raise RuntimeError(f"lake build: {built.errors or built.from_values}")
    out = {
        "files": args.build_files, "seconds": seconds, "bytes_read": stats.bytes_read,
        "requests": stats.requests, "lake_bytes": lake_bytes,
        "fraction_read": stats.bytes_read / lake_bytes,
    }  # fmt: skip
    print(f"# build from filters, {args.build_files} files of {lake_bytes // len(items):,} "
          f"bytes: {stats.bytes_read:,} of {lake_bytes:,} bytes read "
          f"({100 * out['fraction_read']:.2f}%) in {seconds:.1f} s")  # fmt: skip
    return out


def section_files(args: argparse.Namespace, endpoint: str, direct: dict[str, Any]) -> Any:
    rng = np.random.default_rng(7)
    keys = [rng.integers(0, 2**62, args.rows) for _ in range(args.files)]
    items = [(f"{PREFIX}part-{i:05}.parquet", parquet_bytes(k)) for i, k in enumerate(keys)]
    lake_bytes = sum(len(b) for _, b in items)
    upload(endpoint, items)
    root = f"s3://{BUCKET}/{PREFIX}"
    stats = SourceStats()
    built, build_s = timed(
        lambda: build_lake_index(root, ["id"], mode="filters", options=direct, stats=stats)
    )
    if built.errors or len(built.folded) != args.files:
        raise RuntimeError(f"lake build: {built.errors or built.from_values}")
    build = {
        "seconds": build_s,
        "bytes_read": stats.bytes_read,
        "lake_bytes": lake_bytes,
        "fraction_read": stats.bytes_read / lake_bytes,
    }
    print(f"# lake index folded from {args.files} files' filters in {build_s:.1f} s: "
          f"{stats.bytes_read:,} of {lake_bytes:,} bytes read "
          f"({100 * build['fraction_read']:.2f}%)")  # fmt: skip
    methods = ["in-file", "lake"]
    if args.sidecar:
        anyio.run(lambda: build_index(root, ["id"], options=direct))
        methods.insert(1, "sidecar")
    out: dict[str, Any] = {"build_from_filters": build}
    for method in methods:
        runs = []
        for r in range(args.runs):
            f = int(rng.integers(0, args.files))
            want = root + f"part-{f:05}.parquet"
            key = int(keys[f][r % args.rows])
            runs.append(through_proxy(
                endpoint, direct, args.delay_ms,
                lambda o, k=key, w=want, m=method: one_key(m, root, k, w, o),
            ))  # fmt: skip
        out[method] = median_of(runs)
    return out


def section_big(args: argparse.Namespace, endpoint: str, direct: dict[str, Any]) -> Any:
    n, blocks = args.big, 8
    rng = np.random.default_rng(8)
    root = f"s3://{BUCKET}/big/"
    files = [LakeFile(f"p/{i:06}.parquet", 1000 + i, f'"e{i}"', None, 10) for i in range(n)]
    desc = ColumnDescriptor(
        index=0, path_parts=("id",), physical_type=PhysicalType.INT64, type_length=None,
        max_repetition_level=0, logical_type=None,
    )  # fmt: skip
    bits = rng.integers(0, 2**32, blocks * n * 8, dtype=np.uint32)
    bits &= rng.integers(0, 2**32, bits.size, dtype=np.uint32)  # about a quarter of bits set
    own = SplitBlockBloomFilter(blocks * 32)  # file 0 holds the probed keys
    own.insert(list(range(10_000, 10_000 + args.runs)), "INT64")
    grid = bits.reshape(blocks, n, 8)
    grid[:, 0, :] = np.frombuffer(bytes(own.bitset), dtype=np.uint32).reshape(blocks, 8)
    segment = encode_segment(
        files, [(LakeColumn(desc, blocks, 10, 0.01, 0, frozenset()), bits.tobytes())]
    )
    upload(endpoint, [(f"big/{LAKE_DIR}/seg-00000000000000000001-00000000.pbl", segment)])
    infos = [FileInfo(root + f.name, f.size, f.etag) for f in files]
    runs = []
    for r in range(args.runs):
        runs.append(through_proxy(
            endpoint, direct, args.delay_ms,
            lambda o, r=r: one_key("lake", root, 10_000 + r, infos[0].path, o, files=infos),
        ))  # fmt: skip
    print(f"# synthetic segment: {n:,} files, {len(segment):,} bytes")
    return {"files": n, "segment_bytes": len(segment), "lake": median_of(runs)}


def lookup_key(root: str, key: int, options: dict[str, Any]) -> dict[str, Any]:
    """One point lookup with default columns; every request it made."""
    stats = SourceStats()
    rows, wall = timed(lambda: lookup(root, col("id") == key, options=options, stats=stats))
    if key not in rows.column("id").to_pylist():
        raise RuntimeError(f"lookup of {key} lost its row")
    return {
        "wall_s": wall,
        "requests": stats.requests,
        "metadata_requests": stats.metadata_requests,
        "bytes_read": stats.bytes_read,
    }


def digest_bytes(store: Any, keys: list[str]) -> int:
    """The footer digest's bytes in the segments ``keys`` (file records and schema table)."""
    total = 0
    for key in keys:
        data = bytes(obstore.get(store, key).bytes())
        offset, length, crc = decode_trailer(data, len(data), key)
        digest = decode_directory(data[offset : offset + length], crc, offset, key).digest
        if digest is not None:
            spans = [r for r in digest.files if r is not None] + list(digest.schemas)
            total += sum(end - start for start, end in spans)
    return total


def section_scale(args: argparse.Namespace, endpoint: str, direct: dict[str, Any]) -> Any:
    """A point lookup's requests as the lake grows, with the lake index and its digest."""
    out: dict[str, Any] = {}
    for n in (int(x) for x in args.scale.split(",")):
        rng = np.random.default_rng(n)
        keys = [rng.integers(0, 2**62, args.rows) for _ in range(n)]
        prefix = f"scale{n}/"
        items = [(f"{prefix}part-{i:05}.parquet", parquet_bytes(k)) for i, k in enumerate(keys)]
        upload(endpoint, items)
        root = f"s3://{BUCKET}/{prefix}"
        built, build_s = timed(
            lambda root=root: build_lake_index(root, ["id"], fpp=args.scale_fpp, options=direct)
        )
        if built.errors:
            raise RuntimeError(f"lake build: {built.errors}")
        store = s3_store(endpoint)
        listed = [o for page in obstore.list(store, prefix + LAKE_DIR) for o in page]
        index_bytes = sum(o["size"] for o in listed)
        digest = digest_bytes(store, [o["path"] for o in listed])
        runs = []
        for r in range(args.runs):
            f = int(rng.integers(0, n))
            key = int(keys[f][r % args.rows])
            runs.append(through_proxy(
                endpoint, direct, args.delay_ms, lambda o, k=key, root=root: lookup_key(root, k, o)
            ))  # fmt: skip
        lake_bytes = sum(len(b) for _, b in items)
        out[str(n)] = {
            "files": n, "fpp": args.scale_fpp, "build_s": build_s, "lake_bytes": lake_bytes,
            "index_bytes": index_bytes, "digest_bytes": digest,
            "lookup": median_of(runs),
        }  # fmt: skip
        r = out[str(n)]["lookup"]
        print(f"# {n:,} files: lookup {r['requests'] + r['metadata_requests']:.0f} requests "
              f"({r['metadata_requests']:.0f} metadata), {r['wall_s']:.3f} s; index "
              f"{index_bytes:,} B, digest {digest:,} B, lake {lake_bytes:,} B")  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--sidecar", action="store_true")
    parser.add_argument("--big", type=int, default=0)
    parser.add_argument("--build-files", type=int, default=20)
    parser.add_argument("--build-rows", type=int, default=50_000)
    parser.add_argument("--scale", default="1000,10000", help="lake sizes of section scale")
    parser.add_argument("--scale-fpp", type=float, default=0.0001)
    parser.add_argument("--sections", default="build,files", help="build, files, scale (and --big)")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    recorder = Recorder("lake", **vars(args) | {"json_out": str(args.json_out)})
    results: dict[str, Any] = {}
    with moto_server() as (endpoint, _pid):
        direct = {
            "endpoint": endpoint, "region": REGION, "access_key_id": ACCESS_KEY,
            "secret_access_key": SECRET_KEY, "allow_http": True,
        }  # fmt: skip
        if "build" in args.sections:
            results["build"] = section_build_bytes(args, endpoint, direct)
        if "files" in args.sections:
            results["files"] = section_files(args, endpoint, direct)
        if args.big:
            results["big"] = section_big(args, endpoint, direct)
        if "scale" in args.sections:
            results["scale"] = section_scale(args, endpoint, direct)
    print(f"\n## one key, {args.files} files on moto, {args.delay_ms:.0f} ms each way, median of "
          f"{args.runs} runs; load average {load_average()}")  # fmt: skip
    print("| method | requests after listing | wall s | bytes read | files kept |")
    print("|---|---:|---:|---:|---:|")
    for method, r in results.get("files", {}).items():
        if method != "build_from_filters":
            print(f"| {method} | {r['requests_after_listing']:.0f} | {r['wall_s']:.3f} | "
                  f"{r['bytes_read']:,.0f} | {r['files_kept']:.0f} |")  # fmt: skip
    if args.big:
        r = results["big"]["lake"]
        print(f"| lake, {args.big:,} files (files given) | {r['requests_after_listing']:.0f} | "
              f"{r['wall_s']:.3f} | {r['bytes_read']:,.0f} | {r['files_kept']:.0f} |")  # fmt: skip
    if args.json_out:
        print(f"# wrote {recorder.write(args.json_out, results)}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
