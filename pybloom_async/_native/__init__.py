"""The C core's binding and the one map from its status codes to the package's errors.

``ffi`` and ``lib`` come from the module cffi generates from ``csrc/`` (``_cffi``, built
by ``csrc/build_native.py``). Every C function reports failure as a negative status;
:func:`check` is the one place a status becomes an exception, for every component (the
core's codes from -1, Paimon's from -40, the footer scanner's from -60).

**Buffer exports.** ``ffi.from_buffer(x)`` holds a buffer export of ``x`` for as long as
the cdata lives. When ``x`` is a ``memoryview``, that export must never outlive the frame
that may raise: on CPython before 3.12.7, a garbage cycle holding an exported memoryview
(a traceback keeps the frames, the frames keep the memoryview and the cdata) makes the
garbage collector clear the memoryview first and crash when the export is released
(CPython issue 77894). So a call's export is scoped with ``with ffi.from_buffer(x) as p:``
and the status is checked after the block; and a pointer kept beyond the call (a column
handed to the C core) comes from the object itself (``bytes``, a numpy array, a pyarrow
``Buffer`` slice), never from a ``memoryview`` of it.
"""

from __future__ import annotations

from ..errors import (
    EncryptedFileError,
    InvalidFilterError,
    PaimonIndexError,
    ParquetFormatError,
    PyBloomError,
    ValueEncodingError,
)
from ._cffi import ffi as ffi
from ._cffi import lib as lib

#: What a Bloom filter header status says, in the message of its InvalidFilterError.
_HEADER = {
    lib.PBA_ERR_HDR_TRUNCATED: "truncated",
    lib.PBA_ERR_HDR_MALFORMED: "malformed",
    lib.PBA_ERR_HDR_MISSING: "missing field",
    lib.PBA_ERR_HDR_ALGORITHM: "unsupported algorithm",
    lib.PBA_ERR_HDR_HASH: "unsupported hash",
    lib.PBA_ERR_HDR_COMPRESSION: "unsupported compression",
}

#: The error class of each status; any other status is a plain PyBloomError.
_ERRORS: dict[int, type[PyBloomError]] = {
    lib.PBA_ERR_OFFSETS: ValueEncodingError,
    lib.PBA_PAIMON_ERR_LENGTH: ValueEncodingError,
    lib.PBA_PAIMON_ERR_OFFSETS: ValueEncodingError,
    lib.PBA_PAIMON_ERR_RANGE: ValueEncodingError,
    lib.PBA_PAIMON_ERR_GEOMETRY: PaimonIndexError,
    lib.PBA_PAIMON_ERR_SIZE: PaimonIndexError,
    lib.PBA_PAIMON_ERR_TRUNCATED: PaimonIndexError,
    lib.PBA_FOOTER_ERR_TRUNCATED: ParquetFormatError,
    lib.PBA_FOOTER_ERR_MALFORMED: ParquetFormatError,
    lib.PBA_FOOTER_ERR_DEPTH: ParquetFormatError,
    lib.PBA_FOOTER_ERR_MISSING: ParquetFormatError,
    lib.PBA_FOOTER_ERR_ENCRYPTED: EncryptedFileError,
    lib.PBA_FOOTER_ERR_SCHEMA: ParquetFormatError,
    lib.PBA_FOOTER_ERR_NEGATIVE: ParquetFormatError,
}


def status_text(code: int) -> str:
    """The C core's one-line description of a status."""
    if code <= lib.PBA_FOOTER_ERR_ARG:
        describe = lib.pba_footer_strerror
    elif code <= lib.PBA_PAIMON_ERR_ARG:
        describe = lib.pba_paimon_strerror
    else:
        describe = lib.pba_strerror
    return str(ffi.string(describe(code)).decode("ascii"))


def header_error(code: int) -> InvalidFilterError:
    """The error for a Bloom filter header the C decoder refused with ``code``."""
    return InvalidFilterError(
        f"invalid Bloom filter header ({_HEADER.get(code, code)}): {status_text(code)}"
    )


def check(code: int, what: str = "") -> None:
    """Raise the package error for a C status (no-op for 0).

    ``what`` (the operation) prefixes the message; the core's offsets error names the
    input, not the operation, and goes without it.
    """
    if code == 0:
        return
    if code in _HEADER:
        raise header_error(code)
    text = status_text(code)
    if code == lib.PBA_ERR_OFFSETS:
        raise ValueEncodingError(text)
    raise _ERRORS.get(code, PyBloomError)(f"{what}: {text}" if what else text)
