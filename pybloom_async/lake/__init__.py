"""The lake-wide Bloom index: block-major filters of many files, one read per key."""
