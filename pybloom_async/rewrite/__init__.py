"""Adding Bloom filters to existing Parquet files, and to a table's files by a commit."""

from __future__ import annotations
