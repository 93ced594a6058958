"""Every entry point against a pyarrow full-scan oracle, on seeded random lakes.

Each seed draws a lake (1-6 files of many column kinds, written by pyarrow or DuckDB with
varied settings, empty files and files without row groups among them; side by side, below
hive ``key=value`` folders with awkward values (escaped as Hive or as pyarrow escapes them,
a key met twice on a path, the partition types inferred or given, columns that later
partitions gained), or with columns added file after file; a column both writers write,
each its way: fixed_size_binary and binary, a zoned timestamp and UTC, int64 and int32),
whether lookups fetch the predicate's columns first (two phases) or not, a predicate (=, IN,
<=> with NULL, NaN, -0.0, absent and out-of-range literals, AND/OR) and the calls to make:
prune and prune_sync, lookup, lookup_sync and lookup_batches (in the col() and the text
form), pruned_dataset read by pyarrow and DuckDB, sidecar and lake indexes through a file
replaced, added or removed after indexing; or a Delta table (deltalake's appends,
partitioned or not, its deletes, deletion vectors, compaction, read at its latest or an
older version) or an Iceberg table (pyiceberg's, with its deletes and position and
equality delete files, or its schema evolved by field id: renames, a column dropped and
re-added, float -> double, int -> long) of the same data, against the table library's own
scan; the table's folder given as a plain path must give the table's answer or be refused.
A lake index must not change lookup's answer (columns, types, rows, error).
See tests/support/differential/ for the generator and the oracle.

The default run is bounded (``PYBLOOM_DIFF_CASES`` seeds from ``PYBLOOM_DIFF_SEED``: 200
from 0, about 45 s on the shared 2-core machine). A failure prints the seed, the case,
expected against got, and a shrunk standalone reproduction. ``tests/property/run_long.py``
(``make differential``) runs it for minutes; ``PYBLOOM_DIFF_KNOWN_BUGS=none`` opens every
known-bug gate (``tests/support/differential/gates.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

for _module in ("pyarrow", "duckdb", "deltalake", "pyiceberg"):  # the test extra's engines
    pytest.importorskip(_module)

from support.differential import KNOWN, KNOWN_BUGS, explain, generate_case, run_case  # noqa: E402

CASES = int(os.environ.get("PYBLOOM_DIFF_CASES", "200"))
FIRST_SEED = int(os.environ.get("PYBLOOM_DIFF_SEED", "0"))

#: Failing seeds shrunk to a reproduction per session (each up to 30 s); later ones print
#: their case and failures only, so a broad regression does not take hours.
SHRINK_FIRST = 3

pytestmark = pytest.mark.differential
_shrunk: list[int] = []


@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + CASES), ids=lambda s: f"seed{s}")
def test_entry_points_agree_with_the_oracle(seed: int, tmp_path: Path) -> None:
    case = generate_case(seed)
    failures = run_case(case, tmp_path)
    if failures:
        budget = 30.0 if len(_shrunk) < SHRINK_FIRST else 0.0
        _shrunk.append(seed)
        pytest.fail(
            f"seed {seed}: {len(failures)} disagreement(s) with the oracle\n"
            + explain(case, failures, KNOWN_BUGS, shrink_s=budget),
            pytrace=False,
        )


# Each known bug, with a seed whose case shows it once its gate is open. They fail until the
# fix merges (strict: an unexpected pass fails too); then the bug's name comes out of
# gates.KNOWN and of this table, and the bounded run above covers that ground again.
# Seeds found by ``run_long.py --find-known-seeds 2000``; a change to the generator may move
# them (an xfail turning into a pass says so): find them again.
KNOWN_BUG_SEEDS: dict[str, int] = {}

#: Seeds whose cases showed a bug now fixed, kept as regressions (each with every gate of
#: its bug open, whatever range the bounded run covers). After a change to the generator,
#: a seed whose case no longer meets its bug's gate is replaced by the first that does.
FIXED_BUG_SEEDS: dict[str, int] = {
    "column_in_later_partitions": 33,  # issue 29 item 7
    "empty_answer_schema": 28,  # item 11
    "hive_repeated_key": 586,  # item 5
    "iceberg_field_id": 22,  # item 3
    "iceberg_float_promotion": 56,  # item 4
    "lake_index_columns": 432,  # item 8
    "mixed_writers": 69,  # item 9
    "prune_typed_file_above_folders": 315,  # found by the wider search
    "table_folder_as_path": 0,  # item 2
    # The one file the folders leave cannot be read: pruned_dataset gave a dataset (of the
    # ruled-out files' schema) where it says no file could be read (the long run, 910748).
    "dataset_nothing_readable": 910748,
    "delta_empty_partition": 813,  # the first seed whose Delta table has a partition value ''
    "in_null_page_index": 17,
    "keyword_column": 16,
    "lake_build_zero_row": 59,
    "lake_lookup_column_check": 58,
    "lake_lookup_default_columns": 1,
    "lake_zero_row_groups": 33,
    "partition_kept_whole_columns": 735,
    "partition_null_before_types": 59,
    "respelled_path": 17,
    "stale_same_stat": 6,
    "struct_child_promotion": 24,
    "struct_view_promotion": 46,
    "table_dataset_empty": 15,
    "text_out_of_range": 137,
    "uuid_lookup": 78,
    "zero_row_lookup": 51,
}


@pytest.mark.parametrize(
    "bug",
    [
        pytest.param(bug, marks=pytest.mark.xfail(strict=True, reason=KNOWN[bug]))
        for bug in sorted(set(KNOWN_BUG_SEEDS) & set(KNOWN))
    ],
)
def test_known_bug_shows_without_its_gate(bug: str, tmp_path: Path) -> None:
    known = KNOWN_BUGS - {bug}
    case = generate_case(KNOWN_BUG_SEEDS[bug], known=known)
    assert bug not in case.gated
    failures = run_case(case, tmp_path, known=known)
    assert not failures, explain(case, failures, known, shrink_s=0)


@pytest.mark.parametrize("bug", sorted(FIXED_BUG_SEEDS))
def test_fixed_bug_stays_fixed(bug: str, tmp_path: Path) -> None:
    case = generate_case(FIXED_BUG_SEEDS[bug], known=KNOWN_BUGS)
    failures = run_case(case, tmp_path, known=KNOWN_BUGS)
    assert not failures, explain(case, failures, KNOWN_BUGS, shrink_s=0)
