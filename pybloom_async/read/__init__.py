"""Reading Parquet footers and Bloom filters: read planning, the reader, column values."""
