"""Checks of what public entry points are given: counts, limits, sizes, rates, durations,
the locations of files.

Every concurrency, limit, size, false-positive rate and timeout a caller passes is
checked here, once, where it enters the library, so that a bad value fails with one
message form: ``"<name> must be <requirement> (value <what was given>)"``, raised as
:class:`~pybloom_async.errors.InvalidArgumentError` (a ``ValueError``) unless the
caller's documented error class is another one. ``bool`` is refused wherever a number
is wanted: ``True`` for a count is almost always a slip.

Entry points that take another's arguments (a ``*_sync`` twin, a blocking
variant) say so with :func:`same_arguments_as`: the argument list is written once,
and type checkers and ``help()`` see it on both.

What a problem does is one policy, ``on_error`` (:data:`OnError`: ``"raise"`` or
``"skip"``), checked by :func:`error_policy`, which also maps the deprecated ``strict``
flag onto it.

Optional dependencies are checked here too (:func:`require_pyarrow`): a missing one
is a clear error naming the extra to install, not a ``ModuleNotFoundError`` from deep
inside a run.
"""

from __future__ import annotations

import inspect
import numbers
import os
import sys
import warnings
from collections.abc import Callable, Iterable
from typing import Any, Literal, NoReturn, ParamSpec, TypeVar, cast

from .errors import InvalidArgumentError, MissingDependencyError, PyBloomError

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: What a problem (an unreadable file, a damaged filter or index, a missing column) does:
#: ``"raise"``, the first one fails the call; ``"skip"``, it is recorded and the answer
#: stays correct (a file or row group kept with its reason; a lookup's unreadable file left
#: out, its error reported).
OnError = Literal["raise", "skip"]


def same_arguments_as(
    model: Callable[_P, Any],
) -> Callable[[Callable[..., _R]], Callable[_P, _R]]:
    """Give the decorated function ``model``'s parameters, for type checkers and ``help()``.

    The decorated function takes ``*args, **kwargs`` and hands them on; its own
    return type stays. One argument list, written once on ``model``, serves both.
    """

    def decorate(function: Callable[..., _R]) -> Callable[_P, _R]:
        returns = inspect.signature(function).return_annotation
        signature = inspect.signature(model).replace(return_annotation=returns)
        function.__signature__ = signature  # type: ignore[attr-defined]
        return cast("Callable[_P, _R]", function)

    return decorate


def _fail(
    name: str, requirement: str, value: object, error: type[PyBloomError], context: Any
) -> NoReturn:
    raise error(f"{name} must be {requirement}", value=value, has_value=True, **context)


def integer(
    name: str,
    value: object,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    error: type[PyBloomError] = InvalidArgumentError,
    **context: Any,
) -> int:
    """``value`` as an int, checked against ``minimum`` and ``maximum`` (both inclusive).

    numpy integers are accepted (and returned as ``int``); ``bool`` is not.

    Parameters
    ----------
    name:
        The argument's name, as the caller wrote it.
    error:
        The class raised (default :class:`InvalidArgumentError`).
    **context:
        ``path=``, ``column=``, ... for the error's message.

    Raises
    ------
    InvalidArgumentError (or ``error``)
        Not an int, or out of range.
    """
    kind = "a positive int" if minimum == 1 else "an int"
    if type(value) is int:
        n = value  # the usual case, on paths run once per request: no conversion
    elif isinstance(value, bool) or not isinstance(value, numbers.Integral):
        _fail(name, kind, value, error, context)
    else:
        n = int(value)
    low_ok = minimum is None or n >= minimum
    high_ok = maximum is None or n <= maximum
    if low_ok and high_ok:
        return n
    if minimum is not None and maximum is not None:
        _fail(name, f"between {minimum} and {maximum}", value, error, context)
    if maximum is not None:
        _fail(name, f"<= {maximum}", value, error, context)
    _fail(name, kind if minimum == 1 else f">= {minimum}", value, error, context)


def positive_int(
    name: str, value: object, *, error: type[PyBloomError] = InvalidArgumentError, **context: Any
) -> int:
    """``value`` as an int >= 1: a count of files, threads, partitions, a byte limit.

    Raises
    ------
    InvalidArgumentError (or ``error``)
        Not an int, or below 1.
    """
    return integer(name, value, minimum=1, error=error, **context)


def _real(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value)


def probability(
    name: str, value: object, *, error: type[PyBloomError] = InvalidArgumentError, **context: Any
) -> float:
    """``value`` as a float strictly between 0 and 1: a false-positive rate.

    Raises
    ------
    InvalidArgumentError (or ``error``)
        Not a number, or not in (0, 1) (NaN included).
    """
    x = _real(value)
    if x is None:
        _fail(name, "a float", value, error, context)
    if not 0.0 < x < 1.0:
        _fail(name, "between 0 and 1, exclusive", value, error, context)
    return x


def seconds(
    name: str,
    value: object,
    *,
    allow_zero: bool = False,
    maximum: float | None = None,
    error: type[PyBloomError] = InvalidArgumentError,
    **context: Any,
) -> float:
    """``value`` as a duration in seconds: positive (or >= 0), below ``maximum`` if given.

    Without ``maximum``, ``math.inf`` is accepted (forever).

    Raises
    ------
    InvalidArgumentError (or ``error``)
        Not a number, NaN, negative, zero (unless ``allow_zero``), or not below ``maximum``.
    """
    x = _real(value)
    if x is None:
        _fail(name, "a number of seconds", value, error, context)
    low_ok = x >= 0.0 if allow_zero else x > 0.0
    high_ok = maximum is None or x < maximum
    if not (low_ok and high_ok):
        sign = "non-negative" if allow_zero else "positive"
        limit = "" if maximum is None else f" below {maximum:.15g}"
        _fail(name, f"{sign} seconds{limit}", value, error, context)
    return x


def require_pyarrow(purpose: str) -> Any:
    """Import pyarrow (and ``pyarrow.parquet``) or say which extra provides it.

    ``purpose`` completes "pyarrow is needed to ...". Returns the ``pyarrow`` module.

    Raises
    ------
    MissingDependencyError
        pyarrow is not installed (or cannot be imported).
    """
    try:
        import pyarrow
        import pyarrow.parquet  # the readers and writers need it too
    except ImportError as exc:
        if isinstance(exc, ModuleNotFoundError) and exc.name in ("pyarrow", "pyarrow.parquet"):
            message = f"pyarrow is needed to {purpose}: install pybloom-async[arrow]"
        else:  # installed, but broken (a missing shared library, an ABI mismatch)
            message = f"pyarrow is needed to {purpose} but cannot be imported: {exc}"
        raise MissingDependencyError(message) from None
    return pyarrow


def path_text(name: str, value: object) -> str:
    """The text of a path or URL given as a string or an ``os.PathLike`` of one.

    Raises
    ------
    InvalidArgumentError
        Anything else (bytes, a number, None, a PathLike of bytes).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        text = os.fspath(value)
        if isinstance(text, str):
            return text
    raise InvalidArgumentError(
        f"{name} must be a path or URL string (or an os.PathLike of one), not {_kind(value)}"
    )


def sources_list(name: str, value: object) -> list[Any]:
    """The files and folders a multi-file entry point is given, as a list: one path or URL
    (a string or an ``os.PathLike``), or an iterable of them (each checked where it is
    read, :func:`path_text`).

    Raises
    ------
    InvalidArgumentError
        Not a path, URL or iterable of them (bytes, a number, None).
    """
    if isinstance(value, (str, os.PathLike)):
        return [value]
    if isinstance(value, (bytes, bytearray, memoryview)) or not isinstance(value, Iterable):
        raise InvalidArgumentError(
            f"{name} must be a path or URL, or a list of them, not {_kind(value)}"
        )
    return list(value)


def _kind(value: object) -> str:
    """What a value of the wrong kind is, for the message (its type, not its content)."""
    return "None" if value is None else type(value).__name__


def error_policy(on_error: object, strict: object = None) -> OnError | None:
    """``on_error`` checked (None: the entry point's default), or the deprecated ``strict``
    as its value (True: ``"raise"``, False: ``"skip"``; a DeprecationWarning naming
    ``on_error``, attributed to the first caller outside the package, so that Python's
    default filters show it).

    Raises
    ------
    InvalidArgumentError
        ``on_error`` is not ``"raise"``, ``"skip"`` or None; ``strict`` is not a bool; or
        both are given.
    """
    if on_error is not None and on_error not in ("raise", "skip"):
        raise InvalidArgumentError(
            f"on_error must be 'raise' or 'skip', not {on_error!r}", value=on_error
        )
    if strict is None:
        return on_error
    if not isinstance(strict, bool):
        raise InvalidArgumentError("strict must be True or False", value=strict)
    if on_error is not None:
        raise InvalidArgumentError(
            "give on_error only: strict is its deprecated form (strict=True is on_error='raise')"
        )
    warnings.warn(
        "strict= is deprecated: give on_error='raise' (strict=True) or on_error='skip' "
        "(strict=False)",
        DeprecationWarning,
        stacklevel=_outside_level(),
    )
    return "raise" if strict else "skip"


def on_error_of(raises: bool) -> OnError:
    """The policy of a flag that says whether the first problem raises."""
    return "raise" if raises else "skip"


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _outside_level() -> int:
    """The ``stacklevel`` of the first frame above the caller of :func:`error_policy` that is
    not the package's own (nor a dataclass's generated ``__init__``)."""
    level, frame = 2, sys._getframe(2)
    while frame.f_back is not None and (
        frame.f_code.co_filename.startswith(_PACKAGE) or frame.f_code.co_filename == "<string>"
    ):
        level, frame = level + 1, frame.f_back
    return level
