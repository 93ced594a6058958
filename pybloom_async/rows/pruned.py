"""A lookup's local file pruned in one C call (:mod:`pybloom_async.pruning.file_pass`).

A file pruned whole needs no footer decoded: its plan is made from the schema its pass was
bound from (:func:`pruned_plan`; the key/value metadata is that file's too, so is the Arrow
schema). A file with rows to read is planned the usual way, from the footer bytes the call
read and the row groups it kept (:func:`passed_file`): nothing of its end is read twice,
and it is not pruned again.
"""

from __future__ import annotations

from ..errors import PyBloomError
from ..io.base import FileInfo, SourceStats
from ..io.identity import SourceIdentity
from ..parquet import FooterBounds
from ..pruning.file_pass import FilePass
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
    found = passes.decide(path, stats, keep_tail=True)
    if found is None:
        return None
    if found.tail is None:
        return pruned_plan(location, found.reference, found.bounds, found.identity, rows)
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
) -> FilePlan:
    """The plan of a file pruned whole with no footer decoded, whose schema and key/value
    metadata are those of ``reference`` (so is its Arrow schema); its footer lies at
    ``bounds``."""
    arrow_schema, _ = arrow_schema_of(reference)
    plan = FilePlan(
        location, identity.path, reference.metadata.schema, bounds, identity, [], arrow_schema, None
    )
    with_partition(plan, rows)
    return plan
