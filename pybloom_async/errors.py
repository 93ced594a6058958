"""The package's exception hierarchy.

Every error raised on purpose by pybloom-async derives from :class:`PyBloomError`.
Errors carry the context they were raised in (file, row group, column, value) as
attributes and print it in their message, so a failure in a run over thousands
of files names the file that caused it.
"""

from __future__ import annotations

from typing import Any


class PyBloomError(Exception):
    """Root of all pybloom-async errors.

    Parameters
    ----------
    message:
        What went wrong, in one sentence.
    path, row_group, column, value:
        Optional context; whichever are given are appended to the message.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        row_group: int | None = None,
        column: str | None = None,
        value: Any = None,
        has_value: bool = False,
    ) -> None:
        self.message = message
        self.path = path
        self.row_group = row_group
        self.column = column
        self.value = value
        self.has_value = has_value or value is not None
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.path is not None:
            parts.append(f"file {self.path!s}")
        if self.row_group is not None:
            parts.append(f"row group {self.row_group}")
        if self.column is not None:
            parts.append(f"column {self.column!r}")
        if self.has_value:
            parts.append(f"value {self.value!r}")
        if not parts:
            return self.message
        return f"{self.message} ({', '.join(parts)})"

    def with_context(self, **context: Any) -> PyBloomError:
        """Fill in context that was unknown where the error was raised.

        Context already present is kept. Returns ``self`` so callers can
        ``raise err.with_context(path=...)``.
        """
        for key in ("path", "row_group", "column"):
            if getattr(self, key) is None and context.get(key) is not None:
                setattr(self, key, context[key])
        if not self.has_value and "value" in context:
            self.value = context["value"]
            self.has_value = True
        self.args = (self._render(),)
        return self


class InvalidFilterError(PyBloomError):
    """A serialized Bloom filter (header or bitset) is malformed or unsupported."""


class FilterSizeError(InvalidFilterError, ValueError):
    """A filter size is not a power of two between 32 bytes and the limit."""


class FilterTooLargeError(FilterSizeError):
    """A filter's size is above the configured limit; nothing was allocated."""


class ValueEncodingError(PyBloomError, ValueError):
    """A value cannot be encoded for the requested physical type."""


class UnsupportedTypeError(PyBloomError, TypeError):
    """A physical or logical type (or a Python type) is not supported here."""


class ParquetFormatError(PyBloomError):
    """A Parquet file's footer or metadata is malformed."""


class EncryptedFileError(ParquetFormatError):
    """The file uses Parquet modular encryption, which is not supported."""


class SourceError(PyBloomError, OSError):
    """Reading bytes from a file or object store failed."""


class SourceNotFoundError(SourceError):
    """The file or object does not exist."""


#: What fails one file of a read of rows (its bytes, its data), not the whole run: the
#: errors ``on_error="skip"`` leaves a file out for.
FILE_FAILURES = (SourceError, ParquetFormatError)


class PredicateError(PyBloomError, ValueError):
    """A predicate (or its text form) is malformed or names an unknown column."""


class ColumnNotFoundError(PredicateError):
    """No leaf column of a file's schema has the path, or a dotted path names several.

    Raised by the schema (``parquet``), which knows columns but not predicates; a
    :class:`PredicateError`, so what catches a bad predicate catches it too.
    """


class PaimonIndexError(PyBloomError):
    """An Apache Paimon file-index container or BloomFilter64 is malformed."""


class InvalidArgumentError(PyBloomError, ValueError):
    """A caller's argument or option is of the wrong kind, out of range or inconsistent."""


class MissingDependencyError(PyBloomError, ImportError):
    """An optional dependency (pyarrow: the ``arrow`` extra) is needed and not installed."""


class CommitConflictError(PyBloomError):
    """A table changed between reading it and committing to it: nothing was committed.

    Raised when a Delta or Iceberg table's library refuses a commit because of a
    concurrent one; the files written for the refused commit are removed. Run again.
    """


class EventLoopError(PyBloomError, RuntimeError):
    """A blocking ``*_sync`` function was called from a thread that runs an event loop."""


class IndexStaleError(PyBloomError):
    """The data file changed after its sidecar index was built (with ``on_error="raise"``)."""


class SchemaMismatchError(PyBloomError):
    """Two files give one column types that do not unify; the message names both files."""
