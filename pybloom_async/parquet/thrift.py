"""The hardened Thrift compact decoder: bounded lengths, required fields, one error form."""

from __future__ import annotations

import importlib.metadata
from typing import Any, Literal

from thrift.protocol.TCompactProtocol import TCompactProtocol
from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TException
from thrift.transport.TTransport import TMemoryBuffer

from ..errors import ParquetFormatError, PyBloomError

try:
    from thrift.protocol import fastbinary as _fastbinary
except ImportError:  # pragma: no cover - thrift built without its C extension
    _fastbinary = None


def _pick_decoder() -> Literal["fastbinary", "python"]:
    """Use thrift's C decoder only where it is safe on hostile input.

    Measured here with crafted footers: before thrift 0.25 the C extension's
    ``skip`` of an unknown field recurses without a depth limit, and about
    100 000 nested list or struct headers (100 KB of footer) overflow the stack
    and kill the process with SIGSEGV (0.20 to 0.24); those versions also
    pre-allocate a list of the claimed length. 0.25 stops at depth 64 and
    grows lists as it reads. Older versions fall back to the pure-Python
    protocol, which checks depth in Python.
    """
    try:
        from thrift.protocol import fastbinary  # noqa: F401
    except ImportError:
        return "python"
    try:
        version = importlib.metadata.version("thrift")
    except importlib.metadata.PackageNotFoundError:
        return "python"
    numbers = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        numbers.append(int(digits) if digits else 0)
    return "fastbinary" if tuple(numbers) >= (0, 25) else "python"


#: Which thrift decoder :func:`decode_file_metadata` uses: ``"fastbinary"``
#: (thrift's C extension, thrift >= 0.25) or ``"python"`` (pure Python, slower).
THRIFT_DECODER: Literal["fastbinary", "python"] = _pick_decoder()


class StrictCompactProtocol(TCompactProtocol):  # type: ignore[misc]  # untyped base
    """The pure-Python compact protocol, made as strict as the C decoder.

    Five differences from thrift's class: skipping an unknown string field
    returns its bytes instead of decoding them as UTF-8 (binary fields such as
    ``encrypted_column_metadata`` are not UTF-8), a list whose wire element
    type differs from the spec is an error instead of being misread, a nested
    struct is built from the spec it is given, with one keyword argument per
    field found, as the C decoder does (thrift's class would read it with the
    spec of its class instead), a negative field id is an unknown field
    (thrift's ``readStruct`` indexes the spec tuple with it, so id -1 would be
    read as the spec's last field), and integer varints stop at the C decoder's
    lengths (3, 5 and 10 bytes) and keep, as it does, only the bits of their width.
    """

    def readFieldBegin(self) -> Any:
        name, ttype, fid = super().readFieldBegin()
        # Past every spec (field ids are i16): skipped as unknown, as the C decoder does.
        return name, ttype, fid if fid >= 0 else 32767

    def readString(self) -> Any:
        return self.readBinary()

    def _bounded_varint(self, max_bytes: int) -> int:
        # The C decoder reads i16 varints of at most 3 bytes, i32 of at most 5 and i64 of
        # at most 10; thrift's Python class reads any length. Refuse what the C one refuses.
        result = shift = 0
        for _ in range(max_bytes):
            byte = int(self.trans.readAll(1)[0])
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
        raise TProtocolException(TProtocolException.INVALID_DATA, "varint exceeded limit")

    def _zigzag_int(self, max_bytes: int, bits: int) -> int:
        # Like the C decoder: the varint goes into an unsigned integer of the field's
        # width, so bits past it (a last byte may carry some) are dropped, then unzigzagged.
        n = self._bounded_varint(max_bytes) & ((1 << bits) - 1)
        return (n >> 1) ^ -(n & 1)

    def readI16(self) -> int:
        return self._zigzag_int(3, 16)

    def readI32(self) -> int:
        return self._zigzag_int(5, 32)

    def readI64(self) -> int:
        return self._zigzag_int(10, 64)

    def readContainerList(self, spec: Any) -> list[Any]:
        ttype, element_spec, _ = spec
        wire_type, size = self.readListBegin()
        if size and wire_type != ttype:
            raise TProtocolException(
                TProtocolException.INVALID_DATA,
                f"list elements have type {wire_type}, expected {ttype}",
            )
        read = self._read_by_ttype(ttype, spec, element_spec)
        items = [next(read) for _ in range(size)]
        self.readListEnd()
        return items

    def readContainerStruct(self, spec: Any) -> Any:
        cls, struct_spec = spec
        return self.readStruct(cls, struct_spec, is_immutable=True)


def length_limit(length: int) -> int:
    # In the compact protocol every list element and every string byte takes at
    # least one byte of input, so no honest length exceeds the buffer's size.
    return max(length, 1)


def decode_struct(
    data: bytes,
    obj: Any,
    args: list[Any],
    *,
    what: str,
    path: str | None,
    decoder: Literal["fastbinary", "python"],
) -> None:
    """Fill ``obj`` from compact-protocol ``data`` as ``args`` (``[class, spec]``) say.

    Any failure becomes ParquetFormatError.
    """
    limit = length_limit(len(data))
    transport = TMemoryBuffer(data)
    try:
        if decoder == "fastbinary":
            protocol: Any = TCompactProtocol(
                transport, string_length_limit=limit, container_length_limit=limit
            )
            _fastbinary.decode_compact(obj, protocol, args)
        else:
            protocol = StrictCompactProtocol(
                transport, string_length_limit=limit, container_length_limit=limit
            )
            protocol.readStruct(obj, args[1])
    except PyBloomError:
        raise
    except Exception as exc:  # every decoder failure, whatever its type, is a format error
        reason = describe_decode_error(exc)
        raise ParquetFormatError(f"malformed {what}: {reason}", path=path) from exc


def describe_decode_error(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, EOFError):
        return "it ends in the middle of a value (truncated?)"
    if isinstance(exc, TException) and "depth" in text.lower():
        return "structures are nested too deeply"
    if isinstance(exc, RecursionError):
        return "structures are nested too deeply"
    if "limit" in text or "Length exceeded" in text:
        return "a list or string claims more elements than the footer has bytes"
    if isinstance(exc, MemoryError):
        return "it claims a size too large to allocate"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def require_field(value: Any, name: str, path: str | None, *, where: str = "") -> Any:
    if value is None:
        place = f" ({where})" if where else ""
        raise ParquetFormatError(f"required field {name} is missing{place}", path=path)
    return value


def non_negative(value: int, name: str, path: str | None, where: str = "") -> int:
    if value < 0:
        place = f" ({where})" if where else ""
        raise ParquetFormatError(f"{name} is negative: {value}{place}", path=path)
    return value


def lenient_text(raw: bytes | None) -> str | None:
    # created_by and key names are informational: a bad byte must not make
    # the file unreadable, so it becomes U+FFFD.
    return None if raw is None else raw.decode("utf-8", errors="replace")
