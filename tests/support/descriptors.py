"""The process's open descriptors on given files, read from ``/proc/self/fd``.

Tests count descriptors on their own files, never the process's total: in a worker of the
full suite, the garbage collector may close other tests' files and sockets at any moment.
"""

from __future__ import annotations

import os
import threading

_LOCK = threading.Lock()

#: Whether this platform lists a process's descriptors (tests skip without it).
LISTS_DESCRIPTORS = os.path.isdir("/proc/self/fd")


def open_fds() -> int:
    """All open descriptors of the process (one listing at a time: it opens one itself)."""
    with _LOCK:
        return len(os.listdir("/proc/self/fd"))


def fds_under(folder: str | os.PathLike[str]) -> list[str]:
    """The paths of the process's descriptors open on files at or under ``folder``."""
    root = os.path.realpath(folder).rstrip("/")
    found = []
    with _LOCK:
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue  # closed meanwhile (or the listing's own descriptor)
            if target == root or target.startswith(root + "/"):
                found.append(target)
    return found
