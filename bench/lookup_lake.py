"""The lake of ``bench/bench_lookup.py``: pyarrow-written files, keys random in every row group.

Every file has ``ROW_GROUPS`` row groups of ``ROWS_PER_GROUP`` rows and three columns:
``id`` (int64), ``email`` (string, ``user<id>@example.com``) and ``score`` (int32, a function
of ``id``), with pyarrow's bloom filters on ``id`` and ``email`` (fpp 0.01, ndv = rows per
row group). File ``f`` holds the ids ``2 * (p * MAX_FILES + f)`` for a seeded permutation
``p`` of ``0 .. rows per file - 1``: every id is even and unique, each row group's min/max
span nearly the whole key range (statistics prune nothing), and odd ids in that range are
absent. A row's columns are functions of its id, so the expected answer of every query is
known without reading the files.

The files are written once into ``bench/data/lookup/files/`` (git-ignored; the folder name
carries the layout, so a change of layout writes new files) and a lake of N files is a
folder of symlinks to the first N (``lake-N/``), so the 200-file lake is part of the
1,000-file one.

Run ``python bench/lookup_lake.py --files 1000`` to write them ahead of the benchmark.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

ROW_GROUPS = 4
ROWS_PER_GROUP = 25_000
ROWS_PER_FILE = ROW_GROUPS * ROWS_PER_GROUP
MAX_FILES = 1000
SEED = 20261124
ROOT = Path(__file__).resolve().parent / "data" / "lookup"
FILES = ROOT / f"files-{ROW_GROUPS}x{ROWS_PER_GROUP}-v1"


def id_of(file: int, position: int) -> int:
    """The id at ``position`` of the permutation of ``file`` (see the module doc)."""
    return 2 * (position * MAX_FILES + file)


def row_of(key: int) -> list[Any]:
    """The row holding ``key`` (every column is a function of the id)."""
    return [key, f"user{key}@example.com", score_of(key)]


def score_of(key: int) -> int:
    return (key * 7919) % 100_003


def file_table(file: int) -> Any:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(SEED + file)
    ids = 2 * (rng.permutation(ROWS_PER_FILE).astype(np.int64) * MAX_FILES + file)
    id_array = pa.array(ids)
    emails = pc.binary_join_element_wise("user", pc.cast(id_array, pa.string()), "@example.com", "")
    scores = pa.array(((ids * 7919) % 100_003).astype(np.int32))
    return pa.table({"id": id_array, "email": emails, "score": scores})


def file_path(file: int) -> Path:
    return FILES / f"part-{file:05d}.parquet"


def write_file(file: int) -> None:
    import pyarrow.parquet as pq

    path = file_path(file)
    if path.exists():
        return
    options = {c: {"ndv": ROWS_PER_GROUP, "fpp": 0.01} for c in ("id", "email")}
    tmp = path.with_suffix(".tmp")
    pq.write_table(
        file_table(file),
        tmp,
        row_group_size=ROWS_PER_GROUP,
        bloom_filter_options=options,
        compression="zstd",
    )
    os.replace(tmp, path)


def ensure_lake(n_files: int) -> Path:
    """The folder ``lake-N`` of symlinks to the first N files, written as needed."""
    if not 1 <= n_files <= MAX_FILES:
        raise SystemExit(f"--files must be 1..{MAX_FILES}, got {n_files}")
    FILES.mkdir(parents=True, exist_ok=True)
    for f in range(n_files):
        write_file(f)
    lake = ROOT / f"lake-{n_files}"
    lake.mkdir(exist_ok=True)
    for f in range(n_files):
        link = lake / file_path(f).name
        if not link.exists():
            link.symlink_to(file_path(f))
    return lake


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    lake = ensure_lake(parser.parse_args().files)
    sizes = sorted(p.stat().st_size for p in lake.glob("*.parquet"))
    median = sizes[len(sizes) // 2]
    print(f"{lake}: {len(sizes)} files, {sum(sizes) / 1e6:.0f} MB, median {median} B")


if __name__ == "__main__":
    main()
