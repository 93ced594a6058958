"""Delta Lake deletion vectors written into a table's log, for tests.

deltalake 1.6 reads deletion vectors but its delete rewrites files, so tests
commit one by hand: an inline vector (storage type ``i``) as the Delta protocol
defines it: the magic 1681511377, then a RoaringBitmapArray (the bucket count,
then per bucket its key and a portable 32-bit Roaring bitmap), Z85-encoded.
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


def inline_vector(rows: list[int]) -> dict[str, object]:
    """The ``deletionVector`` of an add action deleting ``rows`` (all below 65536)."""
    rows = sorted(set(rows))
    header = struct.pack("<IIHH", 12346, 1, 0, len(rows) - 1)  # cookie, containers, key, n-1
    bitmap = header + struct.pack("<I", len(header) + 4) + struct.pack(f"<{len(rows)}H", *rows)
    data = struct.pack("<iqi", 1681511377, 1, 0) + bitmap  # magic, buckets, bucket key
    padded = data + b"\0" * (-len(data) % 4)
    return {
        "storageType": "i",
        "pathOrInlineDv": z85(padded),
        "sizeInBytes": len(data),
        "cardinality": len(rows),
    }


def commit_deletion_vector(table: Path, file: str, rows: list[int]) -> None:
    """Commit the next version: ``file`` (a path as the log names it) with ``rows`` deleted."""
    log = table / "_delta_log"
    commits = sorted(log.glob("*.json"))
    adds = {}
    for commit in commits:
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                adds[action["add"]["path"]] = action["add"]
    add = adds[file]
    now = int(time.time() * 1000)
    remove = {
        "path": file, "deletionTimestamp": now, "dataChange": True,
        "extendedFileMetadata": True, "size": add["size"],
        "partitionValues": add["partitionValues"],
    }  # fmt: skip
    actions = [
        {"remove": remove},
        {"add": dict(add, deletionVector=inline_vector(rows), modificationTime=now)},
        {"commitInfo": {"timestamp": now, "operation": "DELETE"}},
    ]
    version = int(commits[-1].stem) + 1
    (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))
