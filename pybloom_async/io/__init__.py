"""Byte sources and sinks: local files, memory, object stores; listing and atomic writes."""
