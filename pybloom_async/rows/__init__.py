"""Rows: the rows of many files that satisfy a predicate, read through the pruning.

``api`` holds :func:`lookup` and its twins; ``fetch`` plans and fetches the kept
column chunks and has pyarrow decode them; ``match`` evaluates the predicate on
the decoded data with Arrow compute, with the literal rule the pruning uses;
``dataset`` hands the pruned row groups to other engines as a pyarrow dataset.
"""

from __future__ import annotations

from .api import LookupOptions as LookupOptions
from .api import lookup as lookup
from .api import lookup_batches as lookup_batches
from .api import lookup_sync as lookup_sync
from .dataset import pruned_dataset as pruned_dataset
from .dataset import pruned_dataset_sync as pruned_dataset_sync
