"""Apache Paimon's ``bloom-filter`` file index: read, probe, write and prune with it.

Paimon tables can carry a per-column Bloom filter for every data file. Each one
is a ``BloomFilter64``: a classic k-hash Bloom filter over a byte array, fed
with a 64-bit hash per value (Paimon's ``FastHash``: Thomas Wang's integer mix
for integer-like types, XXH64 for strings and binary). The filters of one data
file sit in a *file-index container*, written as ``<data-file>.index`` or,
when small, embedded in the manifest entry of the data file.

This package reproduces all three byte for byte (the sizing quirks, the bit
order, the sign handling, the container layout) from the reference vectors
described in ``testdata/paimon/README.md``; the hot loops run in the C core
(``csrc/paimon/paimon.c``) with the GIL released.

Pruning follows the package's rule: never a false negative. A missing,
damaged or unreadable index keeps the file and says why; see
:func:`paimon_may_contain` and :func:`paimon_prune`.
"""

from __future__ import annotations
