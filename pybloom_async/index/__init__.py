"""File-level sidecar Bloom filter indexes: format, build and prune."""

from __future__ import annotations
