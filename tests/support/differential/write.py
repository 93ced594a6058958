"""Writing a case's files: pyarrow and DuckDB as a user calls them; the lake's later changes."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq

from .kinds import KINDS
from .spec import Case, FileSpec

GARBAGE = b"PAR1 this is not a Parquet file at all PAR1"
#: What Hive escapes in a folder name (FileUtils.escapePathName), and '%' itself; the rest
#: (spaces, letters beyond ASCII) as it is, as Spark writes them.
_HIVE_ESCAPED = set("\"#%'*/:=?\\\x7f{[]^")


def folder_name(key: str, value: str | None, style: str = "hive") -> str:
    """``key=value`` as Hive and Spark write it (NULL: ``__HIVE_DEFAULT_PARTITION__``), or
    with ``style="uri"`` as pyarrow's ``write_to_dataset`` does (every byte but letters,
    digits and ``_.-~`` percent-encoded, UTF-8 first: ``ü`` is ``%C3%BC``, a space ``%20``)."""

    def escape(text: str) -> str:
        if style == "uri":
            return quote(text, safe="")
        return "".join(f"%{ord(c):02X}" if c in _HIVE_ESCAPED or ord(c) < 0x20 else c for c in text)

    return f"{escape(key)}={'__HIVE_DEFAULT_PARTITION__' if value is None else escape(value)}"


def arrow_table(spec: FileSpec) -> pa.Table:
    """The file's columns as one Arrow table (its kinds' types)."""
    return pa.table({c.name: KINDS[c.kind].array(c.values) for c in spec.columns})


def _duckdb_value(value: Any) -> str:
    return f"'{value}'" if isinstance(value, str) else str(value)


def write_file(spec: FileSpec, path: Path) -> None:
    """Write one file as its writer would: ``pq.write_table`` or DuckDB's ``COPY``."""
    if spec.layout == "garbage":
        path.write_bytes(GARBAGE)
        return
    table = arrow_table(spec)
    if spec.writer == "pyarrow":
        pq.write_table(table, path, **dict(spec.options))
        return
    import duckdb

    options = dict(spec.options)
    size = int(options.get("ROW_GROUP_SIZE", 1) or 1)
    # One thread and batches of a row group each: DuckDB cuts row groups at its input's
    # chunks, so small files get several (its default makes one of up to 122,880 rows).
    batches = table.to_batches(max_chunksize=size) if table.num_rows else []
    source = pa.Table.from_batches(batches, schema=table.schema) if batches else table
    con = duckdb.connect()
    try:
        con.execute("SET threads = 1")
        con.register("t", source)
        extra = "".join(f", {k} {_duckdb_value(v)}" for k, v in options.items())
        con.execute(f"COPY (SELECT * FROM t) TO '{path}' (FORMAT parquet{extra})")
    finally:
        con.close()


def pad_before_footer(path: Path, size: int) -> None:
    """Grow a Parquet file to ``size`` bytes with zeros between its data and its footer.

    Every offset in the footer points before it, so the file reads the same; this makes a
    replacement file exactly as large as the one it replaces (as a rewrite of the same
    rows with other values of the same width would be).
    """
    data = path.read_bytes()
    if len(data) > size:
        raise ValueError(f"{path} is already {len(data)} bytes, above {size}")
    footer = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - footer
    path.write_bytes(data[:start] + b"\0" * (size - len(data)) + data[start:])


def write_lake(case: Case, root: Path) -> list[Path]:
    """Write the case's files under ``root`` (created); their paths in the case's order.

    For ``replaced_same_stat`` the original is padded to the replacement's size when that
    one is larger (the replacement, written later, is padded to the original's otherwise).
    """
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for spec in case.files:
        path = root / spec.relative
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(spec, path)
        paths.append(path)
    plan = case.index
    if plan is not None and plan.state == "replaced_same_stat" and plan.replacement is not None:
        staged = root.parent / ("staged-" + plan.replacement.name)
        write_file(plan.replacement, staged)
        target = paths[plan.target]
        if staged.stat().st_size > target.stat().st_size:
            pad_before_footer(target, staged.stat().st_size)
    return paths


def change_lake(case: Case, root: Path, paths: Sequence[Path]) -> list[Path]:
    """Apply the index plan's change after the indexes were built; the lake's files now."""
    plan = case.index
    assert plan is not None
    files = list(paths)
    target = files[plan.target] if files else None
    if plan.state.startswith("replaced") and plan.replacement is not None and target is not None:
        before = target.stat()
        staged = root.parent / ("staged-" + plan.replacement.name)
        if plan.state == "replaced":
            write_file(plan.replacement, staged)
        elif staged.stat().st_size < before.st_size:
            pad_before_footer(staged, before.st_size)
        os.replace(staged, target)  # a new inode, as cp or a rewrite gives
        if plan.state == "replaced_same_stat":
            os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
        else:
            later = before.st_mtime_ns + 2_000_000_000
            os.utime(target, ns=(later, later))
    elif plan.state == "added" and plan.added is not None:
        path = root / plan.added.name
        write_file(plan.added, path)
        files.append(path)
    elif plan.state == "removed" and target is not None:
        target.unlink()
        files.remove(target)
    return files


def source_names(case: Case, root: Path, paths: Sequence[Path]) -> tuple[Any, list[str]]:
    """What the entry points are given, and the files in the order they should read them
    (each once: a file named twice is read once, as first spelt)."""
    names = [str(p) for p in paths]
    if case.sources == "dir":
        return str(root), sorted(names, key=lambda n: walk_key(root, n))
    if case.sources == "dir_and_file" and names:
        return [str(root), names[-1]], sorted(names, key=lambda n: walk_key(root, n))
    if case.sources == "respelled" and names:
        respelt = str(root) + "//" + Path(names[0]).name
        return [*names, respelt], names
    return names, names


def walk_key(root: Path, name: str) -> list[tuple[int, str]]:
    """The order a directory's listing gives its files: a folder's own files first (by
    name), then each subfolder's (by name)."""
    parts = Path(name).relative_to(root).parts
    return [(1, s) for s in parts[:-1]] + [(0, parts[-1])]
