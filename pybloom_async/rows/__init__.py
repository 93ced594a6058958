"""Rows: the rows of many files that satisfy a predicate, read through the pruning.

``api`` holds :func:`lookup` and its twins; ``fetch`` plans and fetches the kept
column chunks and has pyarrow decode them; ``match`` evaluates the predicate on
the decoded data with Arrow compute, with the literal rule the pruning uses;
``dataset`` hands the pruned row groups to other engines as a pyarrow dataset.
"""

from __future__ import annotations

from .api import DEFAULT_MAX_FETCH_BYTES, lookup, lookup_batches, lookup_sync
from .dataset import pruned_dataset, pruned_dataset_sync

__all__ = [
    "DEFAULT_MAX_FETCH_BYTES",
    "lookup",
    "lookup_batches",
    "lookup_sync",
    "pruned_dataset",
    "pruned_dataset_sync",
]
