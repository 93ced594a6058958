"""The inspect command: the Bloom filters and Paimon indexes a file holds."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from ..errors import (
    InvalidArgumentError,
    PaimonIndexError,
    PredicateError,
    PyBloomError,
    UnsupportedTypeError,
)
from ..io.base import FileInfo, SourceStats, location_text
from ..paimon.container import is_paimon_file_index, parse_paimon_file_index
from ..paimon.files import MAX_PAIMON_INDEX_BYTES
from ..paimon.types import paimon_type_info
from ..pruning.verdicts import Rule
from ..read.fetch import FilterState
from ..read.reader import BloomReader
from .cli_args import make_reader
from .cli_output import (
    ColumnCheck,
    Progress,
    expand_inputs,
    finish_run,
    plural_s,
    print_table,
    raise_if_not_about_the_file,
    requests_text,
    unreadable_of,
    unreadable_text,
    write_json,
)


def paimon_type(name: str) -> tuple[str, str]:
    try:
        return paimon_type_info(name)
    except UnsupportedTypeError as exc:
        raise InvalidArgumentError(exc.message) from None


def paimon_types(text: str) -> dict[str, str]:
    types: dict[str, str] = {}
    for part in text.split(","):
        column, sep, type_name = part.partition("=")
        if not sep or not column.strip() or not type_name.strip():
            raise PredicateError(f"--paimon-types wants COLUMN=TYPE pairs, got {part!r}")
        paimon_type(type_name.strip())
        types[column.strip()] = type_name.strip()
    return types


# ---- inspect --------------------------------------------------------------------------

_INSPECT_COLUMNS = ["row_group", "column", "state", "offset", "length", "num_bytes",
                    "fill_ratio", "estimated_ndv", "estimated_fpp", "reason"]  # fmt: skip
_PAIMON_COLUMNS = ["column", "index_type", "start", "length", "empty", "num_bits",
                   "num_hash_functions", "bits_set", "error", "reason"]  # fmt: skip


async def _paimon_container(reader: BloomReader, location: str) -> bytes | None:
    """The file's bytes if it is a Paimon file-index container, else None."""
    async with reader.open(location) as source:
        size = await source.size()
        if size < 8 or not is_paimon_file_index(await source.read_range(0, 8)):
            return None
        return await source.read_whole(
            MAX_PAIMON_INDEX_BYTES,
            lambda size: PaimonIndexError(
                f"Paimon index of {size} bytes is above the limit", path=location
            ),
        )


def _file_row(path: str, column: str | None, state: str, reason: str) -> dict[str, Any]:
    return {"file": path, "row_group": None, "column": column, "state": state, "reason": reason}


async def _inspect_file(
    reader: BloomReader, location: str | FileInfo, check: ColumnCheck | None
) -> list[dict[str, Any]]:
    path = location_text(location)
    if not path.lower().endswith(".parquet"):  # a Paimon container is named <data file>.index
        container = await _paimon_container(reader, path)
        if container is not None:
            described = parse_paimon_file_index(container).describe()
            return [{"file": path, **row} for row in described
                    if check is None or row["column"] in check.names]  # fmt: skip
    rows: list[dict[str, Any]] = []
    columns: list[str] | None = None
    if check is not None:
        footer = await reader.footer(location)
        missing = check.see(path, footer.metadata.schema)
        for name, exc in missing.items():
            rows.append(_file_row(path, name, Rule.MISSING_COLUMN.value, exc.message))
        columns = [c for c in check.names if c not in missing]
        if not columns:
            return rows
    footer, filters = await reader.footer_and_filters(location, columns)
    schema = footer.metadata.schema
    # Schema order: the file's column order within each row group.
    order = sorted(filters, key=lambda key: (key[0], schema.column(key[1]).index))
    for g, column in order:
        read = filters[(g, column)]
        chunk = footer.metadata.row_groups[g].columns[schema.column(column).index]
        row: dict[str, Any] = {
            "file": footer.path,
            "row_group": g,
            "column": column,
            "physical_type": chunk.physical_type.name,
            "num_values": chunk.num_values,
            "state": read.state.value,
            "offset": chunk.bloom_filter_offset,
            "length": chunk.bloom_filter_length,
            "num_bytes": None,
            "fill_ratio": None,
            "estimated_ndv": None,
            "estimated_fpp": None,
            "reason": read.reason,
        }
        if read.state is FilterState.OK and read.filter is not None:
            f = read.filter
            ndv = f.estimated_ndv()
            row.update(
                num_bytes=f.num_bytes,
                fill_ratio=float(f"{f.fill_ratio:.4g}"),
                estimated_ndv=round(ndv),
                estimated_fpp=float(f"{f.estimated_fpp(ndv):.3g}"),
            )
        rows.append(row)
    return rows


def _inspect_total(rows: Sequence[Mapping[str, Any]], inputs: int, stats: SourceStats) -> str:
    filters = [r for r in rows if r.get("row_group") is not None or "index_type" in r]
    states: dict[str, int] = {}
    for r in filters:
        state = r.get("state") or ("unusable" if r.get("error") else "ok")
        states[state] = states.get(state, 0) + 1
    by_state = ", ".join(f"{n:,} {state}" for state, n in sorted(states.items()))
    unreadable = [name for name, _ in unreadable_of(rows)]
    missing = sum(r.get("state") == Rule.MISSING_COLUMN.value for r in rows)
    parts = [
        f"{plural_s(len(filters), 'filter')} in {plural_s(inputs, 'file')}"
        + (f": {by_state}" if by_state else ""),
        f"{plural_s(sum(r.get('num_bytes') or 0 for r in filters), 'byte')} of bitsets",
    ]
    parts.append(unreadable_text(unreadable, len(unreadable)))
    if missing:
        parts.append(f"{plural_s(missing, 'column')} missing from a file")
    return "; ".join(parts) + f"; {requests_text(stats)}"


async def cmd_inspect(args: argparse.Namespace, out: TextIO) -> int:
    stats = SourceStats()
    reader = make_reader(args, stats)
    check = ColumnCheck(list(dict.fromkeys(args.columns))) if args.columns else None
    # inspect describes files as they are: a table's files too.
    files, unreadable = await expand_inputs(args.paths, reader, table_files=True)
    rows = [_file_row(exc.path or "", None, Rule.UNREADABLE.value, str(exc)) for exc in unreadable]
    with Progress(sys.stderr) as progress:
        for done, location in enumerate(files, 1):
            try:
                rows += await _inspect_file(reader, location, check)
            except PyBloomError as exc:
                raise_if_not_about_the_file(exc)
                rows.append(
                    _file_row(location_text(location), None, Rule.UNREADABLE.value, str(exc))
                )
            finally:
                reader.clear()  # one file at a time: nothing to keep
                progress(done, len(files))
    if check is not None:
        check.raise_absent()
    inputs = len(files) + len(unreadable)
    if args.json:
        write_json(out, rows)
    else:
        paimon = bool(rows) and all("index_type" in r or r["row_group"] is None for r in rows)
        columns = (
            _PAIMON_COLUMNS if paimon and any("index_type" in r for r in rows) else _INSPECT_COLUMNS
        )
        print_table(out, rows, ["file", *columns] if inputs > 1 else columns)
        out.write(_inspect_total(rows, inputs, stats) + "\n")
    return finish_run(unreadable_of(rows), inputs, "could not be read")
