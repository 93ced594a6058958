"""A lookup's local file pruned in one C call (:mod:`pybloom_async.pruning.file_pass`).

A file pruned whole needs no footer decoded: its plan is made from the schema its pass was
bound from (:func:`pruned_plan`; the key/value metadata is that file's too, so is the Arrow
schema). A file with rows to read is planned the usual way, from the footer bytes the call
read and the row groups it kept (:func:`passed_file`): nothing of its end is read twice,
and it is not pruned again.
"""

from __future__ import annotations

from typing import Any

from ..errors import PyBloomError
from ..io.base import FileInfo, SourceStats
from ..io.identity import SourceIdentity
from ..parquet import FooterBounds
from ..pruning.file_pass import FilePass, Passed
from ..read.fetch import Footer, footer_from_tail
from .plan import FilePlan, RowsOf, arrow_schema_of, with_partition


def passed_file(
    passes: FilePass,
    location: str | FileInfo,
    path: str,
    stats: SourceStats,
    rows: RowsOf | None,
) -> FilePlan | tuple[Footer, list[int]] | None:
    """The plan of the file ``path`` when one C call prunes it whole; its footer, read by
    that call, and the row groups it keeps, when it has rows to read; None: read it the
    usual way. Blocking (a lane thread's). ``rows``: what its partition folders make of its
    rows."""
    return planned(passes.decide(path, stats, keep_tail=True), location, rows)


def planned(
    found: Passed | None,
    location: str | FileInfo,
    rows: RowsOf | None,
    arrow_schemas: dict[int, Any] | None = None,
) -> FilePlan | tuple[Footer, list[int]] | None:
    """What :func:`passed_file` makes of a file's outcome ``found`` in its pass.
    ``arrow_schemas``: the Arrow schemas of the references met so far, by ``id``, for a
    caller that plans many files of a few references."""
    if found is None:
        return None
    if found.tail is None:
        reference = found.reference
        known = None if arrow_schemas is None else arrow_schemas.get(id(reference))
        plan = pruned_plan(location, reference, found.bounds, found.identity, rows, known)
        if arrow_schemas is not None and known is None:
            arrow_schemas[id(reference)] = plan.arrow_schema
        return plan
    try:
        footer = footer_from_tail(found.tail, found.identity)
    except PyBloomError:
        return None  # read again the usual way, which names the fault
    return footer, found.kept


def pruned_plan(
    location: str | FileInfo,
    reference: Footer,
    bounds: FooterBounds,
    identity: SourceIdentity,
    rows: RowsOf | None = None,
    arrow_schema: Any = None,
) -> FilePlan:
    """The plan of a file pruned whole with no footer decoded, whose schema and key/value
    metadata are those of ``reference`` (so is its Arrow schema, ``arrow_schema`` when
    known); its footer lies at ``bounds``."""
    if arrow_schema is None:
        arrow_schema, _ = arrow_schema_of(reference)
    plan = FilePlan(
        location, identity.path, reference.metadata.schema, bounds, identity, [], arrow_schema, None
    )
    with_partition(plan, rows)
    return plan
