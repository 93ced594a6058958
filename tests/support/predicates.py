"""Random predicates for oracle tests: =, <=>, IN, AND and OR over given columns."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from pybloom_async.predicate import And, Eq, In, Or, Predicate

#: ``literals(rng, column)``: values to probe ``column`` with (present and absent ones).
Literals = Callable[[random.Random, str], list[Any]]


def random_predicate(
    rng: random.Random,
    columns: Sequence[str],
    literals: Literals,
    *,
    null_share: float = 0.35,
    depth: int = 0,
) -> Predicate:
    """A random tree of at most two levels of AND/OR over ``columns``.

    One roll decides each node: below 0.3 (above the leaves) an AND or an OR of
    two children; else a leaf: ``<=> NULL`` below ``null_share``, an IN of up
    to four literals below 0.7, otherwise ``=`` (null-safe three times in ten).
    """
    roll = rng.random()
    if depth < 2 and roll < 0.3:
        children = tuple(
            random_predicate(rng, columns, literals, null_share=null_share, depth=depth + 1)
            for _ in range(2)
        )
        return And(children) if rng.random() < 0.5 else Or(children)
    column = rng.choice(list(columns))
    values = literals(rng, column)
    if roll < null_share:
        return Eq(column, None, null_safe=True)
    if roll < 0.7:
        return In(column, tuple(rng.sample(values, min(4, len(values)))))
    return Eq(column, rng.choice(values), null_safe=rng.random() < 0.3)
