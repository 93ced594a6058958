"""C status codes become the package's errors in one place (``pybloom_async._native``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pybloom_async._native import check, header_error, lib, status_text
from pybloom_async.errors import (
    InvalidFilterError,
    PaimonIndexError,
    PyBloomError,
    ValueEncodingError,
)


def test_zero_is_success() -> None:
    check(0, "anything")


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("PBA_ERR_ARG", PyBloomError),
        ("PBA_ERR_SIZE", PyBloomError),
        ("PBA_PAIMON_ERR_ARG", PyBloomError),
        ("PBA_PAIMON_ERR_LENGTH", ValueEncodingError),
        ("PBA_PAIMON_ERR_OFFSETS", ValueEncodingError),
        ("PBA_PAIMON_ERR_RANGE", ValueEncodingError),
        ("PBA_PAIMON_ERR_GEOMETRY", PaimonIndexError),
        ("PBA_PAIMON_ERR_SIZE", PaimonIndexError),
        ("PBA_PAIMON_ERR_TRUNCATED", PaimonIndexError),
        ("PBA_ERR_HDR_TRUNCATED", InvalidFilterError),
        ("PBA_ERR_HDR_COMPRESSION", InvalidFilterError),
    ],
)
def test_every_component_maps_through_one_table(code: str, error: type[PyBloomError]) -> None:
    status = getattr(lib, code)
    with pytest.raises(error) as info:
        check(status, "op")
    assert type(info.value) is error
    assert status_text(status) in str(info.value)


def test_messages_keep_their_forms() -> None:
    with pytest.raises(PyBloomError, match=r"^insert: "):
        check(lib.PBA_ERR_SIZE, "insert")
    # The core's offsets error names the input, not the operation.
    with pytest.raises(ValueEncodingError) as info:
        check(lib.PBA_ERR_OFFSETS, "hash")
    assert str(info.value) == status_text(lib.PBA_ERR_OFFSETS)
    assert str(header_error(lib.PBA_ERR_HDR_TRUNCATED)).startswith(
        "invalid Bloom filter header (truncated): "
    )


def _declared() -> list[str]:
    """Every function and constant the public headers declare (csrc/include)."""
    include = Path(__file__).resolve().parents[3] / "csrc" / "include"
    names: set[str] = set()
    for header in include.glob("*.h"):
        text = header.read_text(encoding="utf-8")
        names.update(re.findall(r"^#define\s+(PBA_[A-Z0-9_]+)\s+\S", text, re.M))
        names.update(re.findall(r"^\s+(PBA_[A-Z0-9_]+)\s*=", text, re.M))
        names.update(re.findall(r"\b(pba_[a-z0-9_]+)\s*\(", text))
    return sorted(names)


def test_the_binding_declares_what_the_headers_declare() -> None:
    """The cffi declarations come from the public headers, so none can be left out."""
    declared = _declared()
    assert len(declared) > 40
    assert [name for name in declared if not hasattr(lib, name)] == []
