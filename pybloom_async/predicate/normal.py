"""The normal form evaluators take: every NOT pushed down to the comparisons."""

from __future__ import annotations

from ..errors import PredicateError
from .model import COMPARISONS, ORDERING, And, Between, Compare, Eq, Not, Or, Predicate


def normal_form(p: Predicate) -> Predicate:
    """``p`` with every NOT pushed down to its comparisons: the form evaluators take.

    De Morgan's laws (exact in three-valued logic) move NOT through AND and OR,
    and a comparison's own complement takes it where one exists: ``x = v`` and
    ``x != v``, ``IN`` and ``NOT IN``, ``IS NULL`` and ``IS NOT NULL``. What
    remains under a NOT is an ordering (``<``, ``<=``, ``>``, ``>=``,
    ``BETWEEN``: NaN is in neither it nor its opposite range) or a null-safe
    ``<=>`` of a value; evaluators treat ``Not`` of those as one leaf. So the
    result's leaves are :data:`Comparison` s and ``Not`` of those two kinds,
    under AND and OR only.

    The same object comes back for the same predicate (and a predicate already
    in this form is its own normal form), so evaluators may key what they
    prepare by the identity of its leaves.
    """
    cached: Predicate | None = p.__dict__.get("_normal")
    if cached is not None:
        return cached
    # setdefault: threads racing on one predicate all get the first normal form stored.
    normal: Predicate = p.__dict__.setdefault("_normal", _push(p, negate=False))
    return normal


def _keeps_not(child: Predicate) -> bool:
    return (
        (isinstance(child, Compare) and child.op in ORDERING)
        or isinstance(child, Between)
        or (type(child) is Eq and child.null_safe)
    )


def _push(p: Predicate, negate: bool) -> Predicate:
    if isinstance(p, (And, Or)):
        children = tuple(_push(c, negate) for c in p.children)
        if not negate and all(a is b for a, b in zip(children, p.children, strict=True)):
            return p
        same = isinstance(p, And) != negate  # NOT turns AND into OR and back
        return And.of(*children) if same else Or.of(*children)
    if isinstance(p, Not):
        if not negate and _keeps_not(p.child):
            return p
        return _push(p.child, not negate)
    if not isinstance(p, COMPARISONS):
        raise PredicateError(f"unsupported predicate {type(p).__name__}")
    return ~p if negate else p
