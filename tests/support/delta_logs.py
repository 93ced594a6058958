"""Delta Lake deletion vectors written into a table's log, for tests.

deltalake 1.6 reads deletion vectors but its delete rewrites files, so tests (and
``bench/bench_tables.py``) commit them by hand: an inline vector (storage type ``i``)
as the Delta protocol defines it: the magic 1681511377, then a RoaringBitmapArray (the
bucket count, then per bucket its key and a portable 32-bit Roaring bitmap),
Z85-encoded. A file that already has a vector gets a new one: pass every row it deletes.
"""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def z85(data: bytes) -> str:
    """ZeroMQ's Z85 of ``data`` (a multiple of 4 bytes)."""
    out = []
    for i in range(0, len(data), 4):
        n = int.from_bytes(data[i : i + 4], "big")
        chars = []
        for _ in range(5):
            chars.append(_Z85[n % 85])
            n //= 85
        out.append("".join(reversed(chars)))
    return "".join(out)


def _roaring32(rows: list[int]) -> bytes:
    """A portable 32-bit Roaring bitmap of sorted, distinct ``rows`` (no run containers):
    the cookie 12346, the container count, per container its key and cardinality - 1, per
    container its offset, then the containers (a sorted u16 array up to 4096 values, else a
    bitmap of 2^16 bits)."""
    containers: dict[int, list[int]] = {}
    for row in rows:
        containers.setdefault(row >> 16, []).append(row & 0xFFFF)
    keys = sorted(containers)
    header = struct.pack("<II", 12346, len(keys))
    header += b"".join(struct.pack("<HH", k, len(containers[k]) - 1) for k in keys)
    bodies = []
    for k in keys:
        low = containers[k]
        if len(low) <= 4096:
            bodies.append(struct.pack(f"<{len(low)}H", *low))
        else:
            bits = bytearray(8192)
            for v in low:
                bits[v >> 3] |= 1 << (v & 7)
            bodies.append(bytes(bits))
    offset = len(header) + 4 * len(keys)
    offsets = []
    for body in bodies:
        offsets.append(struct.pack("<I", offset))
        offset += len(body)
    return header + b"".join(offsets) + b"".join(bodies)


def inline_vector(rows: list[int]) -> dict[str, object]:
    """The ``deletionVector`` of an add action deleting ``rows`` (each below 2^32)."""
    rows = sorted(set(rows))
    assert rows and rows[0] >= 0 and rows[-1] < 1 << 32
    data = struct.pack("<iqi", 1681511377, 1, 0) + _roaring32(rows)  # magic, buckets, key 0
    padded = data + b"\0" * (-len(data) % 4)
    return {
        "storageType": "i",
        "pathOrInlineDv": z85(padded),
        "sizeInBytes": len(data),
        "cardinality": len(rows),
    }


def commit_deletion_vector(table: Path, file: str, rows: list[int]) -> None:
    """Commit the next version: ``file`` (a path as the log names it) with ``rows`` deleted."""
    commit_deletion_vectors(table, {file: rows})


def commit_deletion_vectors(table: Path, deleted: dict[str, list[int]]) -> None:
    """Commit the next version: each file (a path as the log names it) with its rows deleted
    (one remove and one add, with its inline vector, per file)."""
    log = table / "_delta_log"
    commits = sorted(log.glob("*.json"))
    adds = {}
    for commit in commits:
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                adds[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                adds.pop(action["remove"]["path"], None)
    now = int(time.time() * 1000)
    actions: list[dict[str, object]] = []
    for file, rows in deleted.items():
        add = adds[file]
        remove = {
            "path": file, "deletionTimestamp": now, "dataChange": True,
            "extendedFileMetadata": True, "size": add["size"],
            "partitionValues": add["partitionValues"],
        }  # fmt: skip
        if add.get("deletionVector"):
            remove["deletionVector"] = add["deletionVector"]
        actions.append({"remove": remove})
        actions.append({"add": dict(add, deletionVector=inline_vector(rows), modificationTime=now)})
    actions.append({"commitInfo": {"timestamp": now, "operation": "DELETE"}})
    version = int(commits[-1].stem) + 1
    (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))
