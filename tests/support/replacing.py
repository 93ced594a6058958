"""A local file replaced by another of the same size, keeping its modification time.

``cp -p``, ``rsync -t`` and ``tar x`` carry the time over, so size and time alone cannot
tell the new file from the old: the inode or the change time must. The staleness tests of
the sidecar and the lake index replace a file each of these ways.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

#: The ways a file gets replaced with its time kept, as the tests' parameters.
HOWS = ("renamed over it", "written in place", "unlinked and created")


def same_size_files(directory: Path) -> tuple[Path, Path]:
    """Two files of the same size and layout, ids 0..99 (``a.parquet``) and 1000..1099
    (``new.parquet``)."""
    paths = []
    for name, first in (("a.parquet", 0), ("new.parquet", 1000)):
        table = pa.table({"id": pa.array(range(first, first + 100), pa.int64())})
        pq.write_table(table, directory / name, use_dictionary=False, compression="none")
        paths.append(directory / name)
    assert paths[0].stat().st_size == paths[1].stat().st_size
    return paths[0], paths[1]


def replace_keeping_time(data: Path, new: Path, how: str) -> None:
    """Put ``new`` in the place of ``data`` one of the ways of :data:`HOWS`; ``data`` keeps
    its size and modification time, so only its inode or change time shows the change."""
    st = data.stat()
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    if how == "renamed over it":  # rsync -t
        os.replace(new, data)
    elif how == "written in place":  # cp -p onto the file
        shutil.copy2(new, data)
    elif how == "unlinked and created":  # tar x: a new file (its inode may be reused)
        payload = new.read_bytes()
        data.unlink()
        data.write_bytes(payload)
        os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns))
    else:
        raise ValueError(f"unknown way to replace a file: {how!r}")
    assert (data.stat().st_size, data.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
