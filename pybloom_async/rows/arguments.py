"""lookup's arguments, checked once before any file or table is read (lookup,
lookup_batches and plan_lookup share them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..checks import positive_int, require_pyarrow
from ..errors import InvalidArgumentError
from ..index_policy.choice import IndexChoice, index_choice
from ..predicate import Predicate, as_predicate
from ..pruning.partition_types import Partitioning
from ..read.run import RunKeywords


class LookupKeywords(RunKeywords, total=False):
    """The keyword arguments lookups take beside their own: the run's options
    (:class:`~pybloom_async.RunOptions`), and ``use_index``, which index serves the run
    (``"auto"``, the default; ``"lake"``; ``"none"``: see :mod:`pybloom_async.index_policy`)."""

    use_index: IndexChoice | None


@dataclass(frozen=True)
class LookupArguments:
    """lookup's arguments, checked once before any file or table is read."""

    predicate: Predicate
    columns: list[str] | None
    on_error: str
    max_fetch_bytes: int
    page_index: bool
    partitioning: Partitioning | None
    use_index: IndexChoice = "auto"

    @property
    def skip(self) -> bool:
        """Whether unreadable files are skipped."""
        return self.on_error == "skip"


def check_arguments(
    where: Predicate | str,
    columns: Sequence[str] | None,
    on_error: str,
    max_fetch_bytes: int,
    page_index: bool,
    partitioning: object,
    keywords: LookupKeywords | None = None,
) -> LookupArguments:
    """lookup's arguments checked (pyarrow installed, each of the right kind); ``keywords``:
    the call's :class:`LookupKeywords`, whose ``use_index`` is taken out of them (the rest
    are the run's options).

    Raises
    ------
    InvalidArgumentError
        An argument is of the wrong kind (named).
    PredicateError
        ``where`` is text that does not parse.
    MissingDependencyError
        pyarrow is not installed.
    """
    require_pyarrow("look up rows")
    predicate = as_predicate(where)
    if on_error not in ("raise", "skip"):
        raise InvalidArgumentError(
            f"on_error must be 'raise' or 'skip', not {on_error!r}", value=on_error
        )
    fetch_limit = positive_int("max_fetch_bytes", max_fetch_bytes)
    if not isinstance(page_index, bool):
        raise InvalidArgumentError("page_index must be True or False", value=page_index)
    if columns is not None:
        if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
            raise InvalidArgumentError("columns must be a list of column names", value=columns)
        if len(set(columns)) != len(columns):
            raise InvalidArgumentError("a column is named twice in columns", value=columns)
        columns = list(columns)
    parts = Partitioning.of(partitioning)
    use = index_choice(keywords.pop("use_index", "auto") if keywords else "auto", sidecar=False)
    return LookupArguments(predicate, columns, on_error, fetch_limit, page_index, parts, use)
