"""Draw the README's charts from the benchmark results in ``bench/results/`` (JSON only).

Seven charts, each from the file one benchmark writes with ``--json-out``:

``core_vs_peers.png``  from ``core_vs_peers.json`` (``bench/compare_core.py``)
    nanoseconds per probe against the filter size: the C core (AVX2 and portable scalar),
    Arrow C++ and parquet-java; probes of precomputed hashes, and hash + probe of int64.
``reader_scaling.png``  from ``reader.json`` (``bench/bench_reader.py --sections scaling``)
    requests and wall time against the number of files on S3, ours and the naive reader.
``demo_lookups.png``  from ``demo.json`` (``python -m pybloom_async.apps.demo --json-out``)
    bytes read and median time per lookup of the demo: pyarrow's scan, ours with the
    in-file filters, ours with the lake index.
``lookup_engines.png``  from ``lookup-<files>.json`` (``bench/bench_lookup.py``)
    median wall time of each lookup query on S3 (latency proxy), ours against the engines,
    one panel per lake size.
``lookup_local.png``  from ``lookup-local.json`` (``bench/bench_lookup.py --targets local``)
    median wall time of each lookup query on local disk (fresh processes, page cache warm),
    ours against the engines.
``lake_index.png``  from ``lake.json`` (``bench/bench_lake.py --sidecar``)
    one key over a lake on S3: requests after the listing and wall time, with the in-file
    filters, sidecar indexes and the lake index.
``rows_hive.png``  from ``rows-hive.json`` and ``rows-hive-paged.json`` (``bench/bench_rows.py``)
    median wall time of each query on the 60-file hive lake on local disk, ours against
    the engines: as pyarrow writes it by default, and with page indexes.

Each chart names the machine, date and load average its figures were measured at. A
missing results file is an error naming it and the command that writes it.

Run: ``.venv/bin/python bench/charts.py [--results bench/results] [--out docs/img]``
(needs the ``charts`` extra: ``pip install -e '.[charts]'``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

# Where each results file comes from, for the error when it is missing.
SOURCES = {
    "core_vs_peers.json": "bench/compare_core.py --json-out bench/results/core_vs_peers.json",
    "reader.json": "bench/bench_reader.py --sections scaling --json-out bench/results/reader.json",
    "demo.json": "python -m pybloom_async.apps.demo --json-out bench/results/demo.json",
    "lookup-200.json": "bench/bench_lookup.py --files 200 --json-out bench/results/lookup-200.json",
    "lookup-local.json": (
        "bench/bench_lookup.py --files 200 --runs 7 --targets local --engines "
        "ours,duckdb,datafusion,polars --json-out bench/results/lookup-local.json"
    ),
    "lake.json": (
        "bench/bench_lake.py --files 1000 --runs 5 --sidecar --json-out bench/results/lake.json"
    ),
    "rows-hive.json": "bench/bench_rows.py --runs 7 --json-out bench/results/rows-hive.json",
    "rows-hive-paged.json": (
        "bench/bench_rows.py --runs 7 --page-index --json-out bench/results/rows-hive-paged.json"
    ),
}
# One colour per implementation, the same in every chart.
OURS = "#1f6fb4"
OURS_LIGHT = "#8fb7da"
ARROW = "#e07b00"
JAVA = "#8c4fa8"
NAIVE = "#9a9a9a"
# The lookup chart's engines, in drawing order: label and colour.
LOOKUP_ENGINES = {
    "ours": ("pybloom-async lookup (cold)", OURS),
    "ours-warm": ("pybloom-async lookup (warm reader)", OURS_LIGHT),
    "ours-lake": ("pybloom-async lookup, lake index (cold)", "#0b3d6b"),
    "ours-tuned": ("pybloom-async, 512 KiB suffix, all files at once", "#5a9bd4"),
    "duckdb": ("DuckDB 1.4.4 + httpfs", "#d4b000"),
    "datafusion": ("DataFusion", "#b03a2e"),
    "polars": ("Polars scan_parquet", "#2e9e5b"),
    "pyarrow": ("pyarrow.dataset", ARROW),
    "delta": ("deltalake (Delta table)", JAVA),
    "iceberg": ("pyiceberg (Iceberg table)", NAIVE),
}
# The lookup charts' query names on the x axis.
QUERY_NAMES = {
    "present": "id = present",
    "absent": "id = absent",
    "and2": "id AND email",
    "and_range": "id AND score range",
    "in100": "id IN 100 keys",
    "in1000": "id IN 1,000 keys",
}
# bench_rows.py's queries, on the hive lake.
ROWS_NAMES = {
    "point": "user_id = key",
    "in200": "user_id IN 200 keys",
    "in1000": "user_id IN 1,000 keys",
    "key_range": "key AND two days",
}
# The local chart's engines: each engine reads the files itself (no object store client).
LOCAL_ENGINES = {
    "ours": ("pybloom-async lookup_sync", OURS),
    "duckdb": ("DuckDB 1.4.4", "#d4b000"),
    "datafusion": ("DataFusion", "#b03a2e"),
    "polars": ("Polars scan_parquet", "#2e9e5b"),
}


def load(results: Path, name: str) -> dict[str, Any]:
    path = results / name
    if not path.is_file():
        raise SystemExit(f"charts: error: {path} not found; write it with: {SOURCES[name]}")
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def provenance(doc: dict[str, Any]) -> str:
    """One line: where and when the figures were measured."""
    machine = doc.get("machine", {})
    cpu = machine.get("cpu")
    where = f"{cpu}, {machine.get('cores')} cores" if cpu else f"{machine.get('cores')} cores"
    load_avg = doc.get("load_average")
    if isinstance(load_avg, dict):
        load_avg = f"{load_avg.get('start')} -> {load_avg.get('end')}"
    return f"{where}; {doc.get('date', '')[:10]}; load average {load_avg}"


def finish(fig: Figure, doc: dict[str, Any], out: Path) -> Path:
    fig.text(0.01, 0.01, provenance(doc), fontsize=7, color="#555555", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.04, 1, 1))  # the provenance line stays clear
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return out


def size_label(size: float, _pos: object = None) -> str:
    size = int(size)
    if size >= 1 << 20:
        return f"{size >> 20} MiB"
    return f"{size >> 10} KiB"


def chart_core(doc: dict[str, Any], out: Path) -> Path:
    """(a) ns per probe against the filter size, ours against Arrow C++ and parquet-java."""
    ns: dict[tuple[str, str], dict[int, float]] = {}
    for row in doc["results"]:
        ns.setdefault((row["harness"], row["op"]), {})[row["size_bytes"]] = row["ns_per_elem"]
    lines = [
        ("pybloom-avx2", "pybloom-async, AVX2", OURS, "-", "o"),
        ("pybloom-scalar", "pybloom-async, portable scalar", OURS_LIGHT, "--", "o"),
        ("arrow", "Arrow C++", ARROW, "-", "s"),
        ("java", "parquet-java", JAVA, "-", "^"),
    ]
    panels = [
        ("probe", "probe of a precomputed hash"),
        ("hash_probe_int64", "hash + probe of an int64"),
    ]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
    for ax, (op, title) in zip(axes, panels, strict=True):
        for harness, label, colour, style, marker in lines:
            points = sorted(ns.get((harness, op), {}).items())
            if not points:
                continue
            ax.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                style,
                color=colour,
                marker=marker,
                label=label,
                linewidth=2,
            )
            if harness == "pybloom-avx2":
                for size, value in points:
                    ax.annotate(
                        f"{value:.1f}",
                        (size, value),
                        textcoords="offset points",
                        xytext=(0, -13),
                        ha="center",
                        fontsize=8,
                        color=colour,
                    )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(size_label))
        sizes = sorted({s for (_, o), by_size in ns.items() if o == op for s in by_size})
        ax.set_xticks(sizes)
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda _v, _p: ""))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.set_title(title)
        ax.set_xlabel("filter size")
        ax.grid(True, which="major", alpha=0.3)
    # Both panels share the y axis: room under our line for its labels, above the slowest.
    shown = [v for (_, op), by_size in ns.items() if op in dict(panels) for v in by_size.values()]
    axes[0].set_ylim(min(shown) / 2, max(shown) * 1.5)
    axes[0].set_ylabel("ns per value (lower is better)")
    axes[0].legend(fontsize=8, loc="upper left")
    fig.suptitle("Split Block Bloom Filter probes: one thread, median of rounds", fontsize=11)
    return finish(fig, doc, out)


def chart_reader(doc: dict[str, Any], out: Path) -> Path:
    """(b) requests and wall time against the number of files, ours against naive."""
    rows = [r for r in doc["results"] if r.get("section") == "scaling"]
    if not rows:
        raise SystemExit(
            "charts: error: reader.json has no scaling figures; write it with: "
            + SOURCES["reader.json"]
        )
    series: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        series.setdefault(str(row["impl"]), []).append(row)
    styles = {
        "ours": ("pybloom-async (defaults)", OURS, "o"),
        "naive": ("naive reader (tail, footer, each filter)", NAIVE, "s"),
    }
    first = rows[0]
    fig, (ax_req, ax_wall) = plt.subplots(1, 2, figsize=(10, 4.2))
    for impl, (label, colour, marker) in styles.items():
        points = sorted(series.get(impl, []), key=lambda r: int(r["files"]))
        files = [int(r["files"]) for r in points]
        ax_req.plot(files, [r["requests"] for r in points], "-", marker=marker, color=colour,
                    label=label, linewidth=2)  # fmt: skip
        ax_wall.plot(files, [r["wall_ms"] / 1000 for r in points], "-", marker=marker,
                     color=colour, label=label, linewidth=2)  # fmt: skip
        for f, r in zip(files, points, strict=True):
            ax_req.annotate(f"{r['requests']:,.0f}", (f, r["requests"]), fontsize=8,
                            textcoords="offset points", xytext=(0, 6), ha="center",
                            color=colour)  # fmt: skip
            ax_wall.annotate(f"{r['wall_ms'] / 1000:.1f}", (f, r["wall_ms"] / 1000), fontsize=8,
                             textcoords="offset points", xytext=(0, 6), ha="center",
                             color=colour)  # fmt: skip
    # How many times fewer, at the largest count: the figure users ask about.
    last = {impl: max(rs, key=lambda r: int(r["files"])) for impl, rs in series.items()}
    if {"ours", "naive"} <= last.keys():
        naive, ours = last["naive"], last["ours"]
        ax_req.text(0.5, 0.55, f"{naive['requests'] / ours['requests']:.0f}x fewer requests\n"
                    f"at {int(ours['files'])} files", transform=ax_req.transAxes,
                    ha="center", color=OURS, fontsize=10)  # fmt: skip
        ax_wall.text(0.5, 0.55, f"{naive['wall_ms'] / ours['wall_ms']:.0f}x less wall time\n"
                     f"at {int(ours['files'])} files", transform=ax_wall.transAxes,
                     ha="center", color=OURS, fontsize=10)  # fmt: skip
    ax_req.set_title("requests (LIST + range reads)")
    ax_wall.set_title("wall time, s (median)")
    for ax in (ax_req, ax_wall):
        ax.set_xlabel("Parquet files (10 row groups, filters on 2 columns)")
        ax.set_ylim(0, ax.get_ylim()[1] * 1.1)  # room for the labels above the points
        ax.set_xlim(left=0)
        ax.grid(True, alpha=0.3)
    ax_req.legend(fontsize=8, loc="upper left")
    fig.suptitle(
        f"Pruning files on S3 (moto), {first['delay_ms']:g} ms latency each way, "
        f"{first['concurrency']} requests in flight",
        fontsize=11,
    )
    return finish(fig, doc, out)


def chart_demo(doc: dict[str, Any], out: Path) -> Path:
    """(c) the demo: bytes read and median time per lookup, pyarrow's scan against ours."""
    queries = doc["queries"]
    hows = [r["how"] for r in queries[0]["runs"]]
    colours = [NAIVE, OURS_LIGHT, OURS][: len(hows)]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharey=True)
    height = 0.8 / len(hows)
    panels = [
        ("bytes_read", 1 / 2**20, "MiB read (log scale)", "{:.2f} MiB"),
        ("ms", 1.0, "median time, ms (log scale)", "{:.0f} ms"),
    ]
    for ax, (key, scale, label, fmt) in zip(axes, panels, strict=True):
        for i, how in enumerate(hows):
            ys = [len(queries) - 1 - q + (len(hows) / 2 - 0.5 - i) * height
                  for q in range(len(queries))]  # fmt: skip
            values = [q["runs"][i][key] * scale for q in queries]
            ax.barh(ys, values, height=height, color=colours[i], label=how)
            for y, v in zip(ys, values, strict=True):
                ax.text(v * 1.08, y, fmt.format(v), va="center", fontsize=7)
        ax.set_xscale("log")
        # Labels at the powers of ten only: a span within one decade labels its minor
        # ticks too, and they overlap.
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda _v, _p: ""))
        ax.set_xlabel(label)
        ax.grid(True, axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(queries)), [q["title"] for q in reversed(queries)])
    axes[0].legend(fontsize=8, loc="upper center", bbox_to_anchor=(1.05, -0.16), ncol=3,
                   frameon=False)  # fmt: skip
    lake = doc["lake"]
    fig.suptitle(
        f"The demo's lookups: {lake['files']} local files, {lake['row_groups']} row groups, "
        f"{lake['rows']:,} rows, random 63-bit ids (min/max statistics prune no key)",
        fontsize=10,
    )
    return finish(fig, doc, out)


def query_bars(
    ax: Any,
    by_query: dict[str, Any],
    engines: dict[str, tuple[str, str]],
    tick_size: float | None = None,
) -> None:
    """Bars of each query's median wall time (``by_query``: a bench_lookup target's
    results), one per engine of ``engines`` measured, ours annotated, on a log axis."""
    queries = list(by_query)
    drawn = [e for e in engines if "median_s" in by_query[queries[0]].get(e, {})]
    width = 0.8 / len(drawn)
    for i, engine in enumerate(drawn):
        label, colour = engines[engine]
        xs = [q + (i - (len(drawn) - 1) / 2) * width for q in range(len(queries))]
        ys = [by_query[q][engine]["median_s"] for q in queries]
        ax.bar(xs, ys, width=width, color=colour, label=label)
        if engine == "ours":
            for x, y in zip(xs, ys, strict=True):
                ax.annotate(f"{y:.2g}", (x, y), textcoords="offset points", xytext=(0, 2),
                            ha="center", fontsize=7, color=colour)  # fmt: skip
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    ax.tick_params(axis="y", which="minor", labelsize=7)
    labels = [QUERY_NAMES.get(q, q) for q in queries]
    if tick_size is None:
        ax.set_xticks(range(len(queries)), labels)
    else:
        ax.set_xticks(range(len(queries)), labels, fontsize=tick_size)
    ax.set_ylabel("median wall time, s (log; lower is better)")
    ax.grid(True, axis="y", alpha=0.3)


def chart_lookup(docs: list[dict[str, Any]], out: Path) -> Path:
    """(d) median wall time per lookup query on S3, ours against the engines, per lake size."""
    docs = sorted(docs, key=lambda d: int(d["results"]["lake"]["files"]))
    fig, axes = plt.subplots(1, len(docs), figsize=(6 * len(docs), 5.6), squeeze=False)
    for ax, doc in zip(axes[0], docs, strict=True):
        query_bars(ax, doc["results"]["targets"]["s3"], LOOKUP_ENGINES)
        lake = doc["results"]["lake"]
        load = doc["load_average"]  # each panel is its own run: its own load
        ax.set_title(f"{lake['files']} files ({lake['bytes'] / 1e9:.2f} GB), "
                     f"{doc['settings']['delay_ms']:g} ms each way; {doc['date'][:16]}Z, load "
                     f"{load['start'].split()[0]} -> {load['end'].split()[0]}",
                     fontsize=9)  # fmt: skip
    handles: dict[str, Any] = {}
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    fig.legend(handles.values(), handles.keys(), fontsize=8, ncol=min(3, 1 + len(docs)),
               loc="lower center", bbox_to_anchor=(0.5, 0.05), frameon=False)  # fmt: skip
    fig.suptitle("Rows for keys on S3 (moto behind a latency proxy): cold processes", fontsize=11)
    fig.text(0.01, 0.01, provenance(docs[-1]), fontsize=7, color="#555555", ha="left")
    fig.tight_layout(rect=(0, 0.2, 1, 1))  # room for the legend and the provenance line
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return out


def chart_local(doc: dict[str, Any], out: Path) -> Path:
    """(f) median wall time per lookup query on local disk, ours against the engines."""
    fig, ax = plt.subplots(figsize=(9, 5.2))
    query_bars(ax, doc["results"]["targets"]["local"], LOCAL_ENGINES, tick_size=8)
    ax.legend(fontsize=8, loc="upper left", frameon=False)
    lake = doc["results"]["lake"]
    load = doc["load_average"]
    fig.suptitle(
        f"Rows for keys on local disk: {lake['files']} files ({lake['bytes'] / 1e9:.2f} GB), "
        f"fresh processes, page cache warm; {doc['date'][:16]}Z, load "
        f"{load['start'].split()[0]} -> {load['end'].split()[0]}",
        fontsize=10,
    )
    return finish(fig, doc, out)


def rows_queries(doc: dict[str, Any]) -> dict[str, Any]:
    """A ``bench_rows.py`` result as :func:`query_bars` takes one: each query's median
    wall time per engine, by the query's label."""
    return {
        ROWS_NAMES.get(query, query): {
            engine: {"median_s": statistics.median(times)} for engine, times in by.items()
        }
        for query, by in doc["times_s"].items()
    }


def chart_rows(plain: dict[str, Any], paged: dict[str, Any], out: Path) -> Path:
    """(h) median wall time per query on the hive lake, without and with page indexes."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.4), squeeze=False)
    titles = ("as pyarrow writes it: no page index", "with page indexes (Spark, delta-rs)")
    for ax, doc, title in zip(axes[0], (plain, paged), titles, strict=True):
        query_bars(ax, rows_queries(doc), LOCAL_ENGINES, tick_size=8)
        start, end = doc["load"]
        ax.set_title(f"{title}; {doc['date'][:16]}Z, load {start:.2f} -> {end:.2f}", fontsize=9)
    axes[0][0].legend(fontsize=8, loc="upper left", frameon=False)
    fig.suptitle(
        "Rows from a 60-file hive lake on local disk: fresh processes, page cache warm",
        fontsize=11,
    )
    fig.text(0.01, 0.01, f"{plain['machine']}; {plain['date'][:10]}; medians of "
             f"{plain['runs']} runs", fontsize=7, color="#555555", ha="left")  # fmt: skip
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return out


def chart_lake(doc: dict[str, Any], out: Path) -> Path:
    """(e) one key over a lake on S3: requests after the listing and wall time, per method."""
    files = doc["results"]["files"]
    methods = [
        ("in-file", "in-file filters", NAIVE),
        ("sidecar", "sidecar indexes", OURS_LIGHT),
        ("lake", "lake index", OURS),
    ]
    methods = [m for m in methods if m[0] in files]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, key, label, fmt in (
        (left, "requests_after_listing", "requests after the listing (log)", "{:,.0f}"),
        (right, "wall_s", "median wall time, s", "{:.2f} s"),
    ):
        ys = [files[m][key] for m, _l, _c in methods]
        ax.bar(range(len(methods)), ys, color=[c for _m, _l, c in methods])
        for x, y in enumerate(ys):
            ax.annotate(fmt.format(y), (x, y), textcoords="offset points", xytext=(0, 2),
                        ha="center", fontsize=8)  # fmt: skip
        ax.set_xticks(range(len(methods)), [lbl for _m, lbl, _c in methods])
        ax.set_ylabel(label)
        ax.grid(True, axis="y", alpha=0.3)
    left.set_yscale("log")
    left.set_ylim(bottom=1)
    left.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    settings = doc["settings"]
    kept = {files[m]["files_kept"] for m, _l, _c in methods}
    fig.suptitle(
        f"One key over {settings['files']:,} files on S3 (moto), {settings['delay_ms']:g} ms "
        f"each way; files kept: {', '.join(str(k) for k in sorted(kept))} (the same by each)",
        fontsize=10,
    )
    return finish(fig, doc, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--results", type=Path, default=BENCH / "results")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = parser.parse_args(argv)
    charts: list[tuple[str, Any, str]] = [
        ("core_vs_peers.json", chart_core, "core_vs_peers.png"),
        ("reader.json", chart_reader, "reader_scaling.png"),
        ("demo.json", chart_demo, "demo_lookups.png"),
        ("lake.json", chart_lake, "lake_index.png"),
        ("lookup-local.json", chart_local, "lookup_local.png"),
    ]
    for source, draw, name in charts:
        print(f"wrote {draw(load(args.results, source), args.out / name)}")
    plain, paged = load(args.results, "rows-hive.json"), load(args.results, "rows-hive-paged.json")
    print(f"wrote {chart_rows(plain, paged, args.out / 'rows_hive.png')}")
    # lookup-<files>.json only: other lookup-*.json files are other benches' results.
    lookups = sorted(p for p in args.results.glob("lookup-*.json") if p.stem[7:].isdigit())
    if not lookups:
        load(args.results, "lookup-200.json")  # the error naming the command
    docs = [json.loads(p.read_text()) for p in lookups]
    print(f"wrote {chart_lookup(docs, args.out / 'lookup_engines.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
