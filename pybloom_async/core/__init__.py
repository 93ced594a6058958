"""The C core's Python face: the Split Block Bloom filter and xxHash64 over columns."""
