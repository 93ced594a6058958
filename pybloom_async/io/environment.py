"""The environment variables object-store clients are built from, read once per run."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextvars import ContextVar

#: The prefix of the variables each store kind's client reads (obstore's ``from_env``).
ENV_PREFIX = {"s3": "AWS", "gs": "GOOGLE", "az": "AZURE"}

#: Within :func:`environment_read_once`: the store variables of the environment, per kind.
_ENVIRONMENT: ContextVar[dict[str, tuple[tuple[str, str], ...]] | None] = ContextVar(
    "pybloom_async_store_environment", default=None
)


@contextlib.contextmanager
def environment_read_once() -> Iterator[None]:
    """Within it (and the tasks it starts), the environment variables a store client is
    built from are read once per store kind, not for every file opened: a run over many
    files sees the environment as it was when it reached its first object. Scanning the
    environment cost about 9 µs a file with 40 variables, more with more."""
    token = _ENVIRONMENT.set({})
    try:
        yield
    finally:
        _ENVIRONMENT.reset(token)


def store_environment(kind: str) -> tuple[tuple[str, str], ...]:
    """The variables of the environment a ``kind`` store client reads (part of the
    client cache's key, so that a changed environment gets a fresh client)."""
    seen = _ENVIRONMENT.get()
    if seen is not None and kind in seen:
        return seen[kind]
    # Keys first, values only of the matching ones: os.environ decodes on every access.
    prefix = ENV_PREFIX.get(kind, "\0") + "_"
    env = tuple(sorted((k, os.environ[k]) for k in os.environ if k.startswith(prefix)))
    if seen is not None:
        seen[kind] = env
    return env
