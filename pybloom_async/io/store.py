"""Object stores (S3, GCS, Azure, HTTP) through obstore: their options and clients.

Store options, checked once; the store clients built from them and the environment, and
cached per (kind, bucket or host, options), so thousands of files in one bucket share one
client and its connection pool. The clients are used through obstore's *sync* API
(``get``, ``head``, ``list``) in worker threads, never its async API: see
docs/architecture.md, "Object stores" (aborts at interpreter exit on Python 3.11, no trio
support). The source that reads an object through them, and :func:`open_source`, are
``io/objects.py``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import obstore.exceptions as obstore_errors
from obstore.store import AzureStore, GCSStore, HTTPStore, S3Store

from ..checks import integer, seconds
from ..errors import InvalidArgumentError

if TYPE_CHECKING:
    from obstore.store import ClientConfig, ObjectStore, RetryConfig
from .address import Address
from .environment import ENV_PREFIX, store_environment
from .failures import describe

# --------------------------------------------------------------------------- object stores


_log = logging.getLogger(__name__)

_YEAR = 365 * 86400  # longer timeouts are slips (milliseconds for seconds)
# The retry backoff: the first wait, and the longest (each at most twice the one before).
_INIT_BACKOFF = 0.1
_MAX_BACKOFF = 10.0


@dataclass(frozen=True)
class StoreOptions:
    """How to reach an object store. ``None`` means: what obstore reads from the environment.

    obstore reads the standard variables when a store is built: ``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``,
    ``AZURE_STORAGE_ACCOUNT_NAME``, ``AZURE_STORAGE_ACCOUNT_KEY``, ``AZURE_STORAGE_SAS_KEY``,
    ``AZURE_STORAGE_ENDPOINT``, ``GOOGLE_SERVICE_ACCOUNT``, ``GOOGLE_SERVICE_ACCOUNT_KEY``,
    ``GOOGLE_APPLICATION_CREDENTIALS`` and the others listed in its ``S3Config``,
    ``AzureConfig`` and ``GCSConfig``. Timeouts and retries are always set explicitly.

    Parameters
    ----------
    endpoint:
        S3 endpoint, Azure blob endpoint or GCS base URL (for MinIO, azurite, fakes...).
        An ``http://`` endpoint turns ``allow_http`` on unless it is set to False.
    region:
        S3 region.
    access_key_id, secret_access_key, session_token:
        S3 credentials.
    account_name, account_key, sas_token:
        Azure storage account, its key, or a SAS token (percent-encoded query string).
    service_account_path, service_account_key:
        GCS service-account JSON file, or its content.
    skip_signature:
        Send unsigned requests (public buckets), S3 / GCS / Azure.
    allow_http:
        Allow plain-HTTP endpoints. None: the ``AWS_ALLOW_HTTP`` / ``AZURE_ALLOW_HTTP`` /
        ``GOOGLE_ALLOW_HTTP`` variable (obstore's own reading of it is lost once client
        options are passed, so it is read here), else off. ``http://`` URLs always allow it.
    timeout:
        Seconds for one attempt of a request, connection to last byte (obstore's
        default: 30).
    connect_timeout:
        Seconds to establish a connection (obstore's default: 5).
    max_retries:
        Retries of a failed request: 5xx responses, connection errors and timeouts,
        with exponential backoff from 100 ms, doubling at most, up to 10 s. 5 instead of
        obstore's 10: a request fails after at most ``max_retries + 1`` attempts (see
        :meth:`max_request_seconds`).
    retry_timeout:
        Seconds after the first attempt past which no retry starts; 60 instead of
        obstore's 180 for the same reason.
    extra_config:
        More store-specific keys passed as-is to obstore's S3/Azure/GCS config (e.g.
        ``{"virtual_hosted_style_request": "true"}``).

    Raises
    ------
    InvalidArgumentError
        A value has the wrong type or is out of range.
    """

    endpoint: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    account_name: str | None = None
    account_key: str | None = None
    sas_token: str | None = None
    service_account_path: str | None = None
    service_account_key: str | None = None
    skip_signature: bool | None = None
    allow_http: bool | None = None
    timeout: float = 30.0
    connect_timeout: float = 5.0
    max_retries: int = 5
    retry_timeout: float = 60.0
    extra_config: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if f.name in _STRING_OPTIONS and (not isinstance(value, str) or not value):
                raise InvalidArgumentError(f"option {f.name} must be a non-empty string")
            if f.name in ("skip_signature", "allow_http") and not isinstance(value, bool):
                raise InvalidArgumentError(f"option {f.name} must be True, False or None")
        # Stored as checked (plain float and int): the options are part of the store-cache key.
        for name in ("timeout", "connect_timeout", "retry_timeout"):
            object.__setattr__(self, name, seconds(name, getattr(self, name), maximum=_YEAR))
        retries = integer("max_retries", self.max_retries, minimum=0, maximum=100)
        object.__setattr__(self, "max_retries", retries)
        if self.extra_config is not None:
            if not isinstance(self.extra_config, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.extra_config.items()
            ):
                raise InvalidArgumentError("extra_config must map strings to strings")
            # Freeze a private copy: the options are part of the store-cache key.
            object.__setattr__(self, "extra_config", dict(sorted(self.extra_config.items())))
        # Both are read on every open (once per file): computed once, the options being frozen.
        object.__setattr__(self, "_given_names", self._find_given())
        object.__setattr__(self, "_key", self._make_key())

    def max_request_seconds(self) -> float:
        """The longest one request takes to fail when the store never answers it.

        Every attempt lasts at most ``timeout``; between attempts the backoff waits
        at most 100 ms, 200 ms, 400 ms, ... (obstore's decorrelated jitter: each wait
        at most twice the one before, capped at 10 s); no retry starts after
        ``retry_timeout``. So: ``(max_retries + 1) * timeout`` plus the waits, and at
        most ``retry_timeout`` plus one wait and one attempt. With the defaults (30 s,
        5 retries, 60 s) that is 91.6 s; ``timeout=2`` makes it 15.1 s. A file (or a
        listing) costs at most one such request: one that got no answer is not retried
        by another request for the same file.
        """
        waits = [min(_MAX_BACKOFF, _INIT_BACKOFF * 2.0**k) for k in range(self.max_retries)]
        by_attempts = (self.max_retries + 1) * self.timeout + sum(waits)
        by_deadline = self.retry_timeout + max(waits, default=0.0) + self.timeout
        return min(by_attempts, by_deadline)

    def given(self) -> list[str]:
        """Names of the fields set away from their defaults (an empty extra_config is unset)."""
        names: list[str] = self.__dict__["_given_names"]
        return names

    def _cache_key(self) -> tuple[Any, ...]:
        key: tuple[Any, ...] = self.__dict__["_key"]
        return key

    def _find_given(self) -> list[str]:
        """Names of the fields set away from their defaults (an empty extra_config is unset)."""
        given = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "extra_config":
                if value:
                    given.append(f.name)
            elif value != f.default:
                given.append(f.name)
        return given

    def _make_key(self) -> tuple[Any, ...]:
        return tuple(
            tuple(sorted(v.items())) if isinstance(v, Mapping) else v
            for v in (getattr(self, f.name) for f in dataclasses.fields(self))
        )


_STRING_OPTIONS = frozenset(
    {
        "endpoint",
        "region",
        "access_key_id",
        "secret_access_key",
        "session_token",
        "account_name",
        "account_key",
        "sas_token",
        "service_account_path",
        "service_account_key",
    }
)
_COMMON_OPTIONS = frozenset(
    {"allow_http", "timeout", "connect_timeout", "max_retries", "retry_timeout"}
)
# Which options mean something to which store; any other one given is a mistake.
_APPLICABLE = {
    "s3": _COMMON_OPTIONS
    | {"endpoint", "region", "access_key_id", "secret_access_key", "session_token"}
    | {"skip_signature", "extra_config"},
    "gs": _COMMON_OPTIONS
    | {"endpoint", "service_account_path", "service_account_key", "skip_signature"}
    | {"extra_config"},
    "az": _COMMON_OPTIONS
    | {"endpoint", "account_name", "account_key", "sas_token", "skip_signature"}
    | {"extra_config"},
    "http": _COMMON_OPTIONS,
    "file": frozenset(),
}


def _env_flag(name: str) -> bool | None:
    value = os.environ.get(name)
    if value is None:
        return None
    return value.strip().lower() in ("1", "true", "yes", "on")


def allow_http(kind: str, options: StoreOptions, url_scheme_http: bool = False) -> bool | None:
    """Whether plain HTTP is allowed: the option, an ``http://`` endpoint, the environment.

    None: nothing says (the client's default, off).
    """
    allowed = options.allow_http
    if allowed is None and options.endpoint is not None:
        allowed = options.endpoint.lower().startswith("http://") or None
    if allowed is None and kind in ENV_PREFIX:
        allowed = _env_flag(f"{ENV_PREFIX[kind]}_ALLOW_HTTP")
    if allowed is None and url_scheme_http:
        allowed = True
    return allowed


def _client_options(kind: str, options: StoreOptions, url_scheme_http: bool) -> ClientConfig:
    client: ClientConfig = {
        "timeout": timedelta(seconds=options.timeout),
        "connect_timeout": timedelta(seconds=options.connect_timeout),
    }
    allowed = allow_http(kind, options, url_scheme_http)
    if allowed is not None:
        client["allow_http"] = allowed
    return client


def _retry_config(options: StoreOptions) -> RetryConfig:
    return {
        "max_retries": options.max_retries,
        "retry_timeout": timedelta(seconds=options.retry_timeout),
        "backoff": {
            "init_backoff": timedelta(seconds=_INIT_BACKOFF),
            "max_backoff": timedelta(seconds=_MAX_BACKOFF),
            "base": 2,
        },
    }


def _store_config(loc: Address, options: StoreOptions) -> dict[str, str]:
    """Store-specific config keys for the options that were given (others: environment)."""
    names: dict[str, dict[str, str]] = {
        "s3": {
            "endpoint": "endpoint",
            "region": "region",
            "access_key_id": "access_key_id",
            "secret_access_key": "secret_access_key",
            "session_token": "session_token",
        },
        "gs": {
            "endpoint": "base_url",
            "service_account_path": "service_account",
            "service_account_key": "service_account_key",
        },
        "az": {
            "endpoint": "endpoint",
            "account_name": "account_name",
            "account_key": "account_key",
            "sas_token": "sas_key",
        },
    }
    config: dict[str, str] = dict(options.extra_config or {})
    for option, key in names[loc.kind].items():
        value = getattr(options, option)
        if value is not None:
            config[key] = value
    if options.skip_signature is not None:
        config["skip_signature"] = "true" if options.skip_signature else "false"
    if loc.kind == "az" and loc.account is not None and "account_name" not in config:
        config["account_name"] = loc.account
    return config


def _build_store(loc: Address, options: StoreOptions) -> ObjectStore:
    client = _client_options(loc.kind, options, loc.bucket.startswith("http://"))
    retry = _retry_config(options)
    if loc.kind == "http":
        return HTTPStore(loc.bucket, client_options=client, retry_config=retry)
    # The config keys are built from tables (and extra_config), so they are checked by
    # obstore at run time (UnknownConfigurationKeyError), not by the TypedDicts.
    config: Any = _store_config(loc, options)
    if loc.kind == "s3":
        return S3Store(loc.bucket, config=config, client_options=client, retry_config=retry)
    if loc.kind == "gs":
        return GCSStore(loc.bucket, config=config, client_options=client, retry_config=retry)
    return AzureStore(loc.bucket, config=config, client_options=client, retry_config=retry)


_STORE_CACHE: OrderedDict[tuple[Any, ...], ObjectStore] = OrderedDict()
_STORE_CACHE_LOCK = threading.Lock()
# Distinct (store, options) pairs in one process are few; the bound only stops a caller
# cycling through endless option sets from growing the cache without limit.
_STORE_CACHE_SIZE = 64


def cached_store(loc: Address, options: StoreOptions) -> ObjectStore:
    """One store client per (kind, bucket/host, options, account): it pools connections."""
    # The environment is read when a store is built; the relevant variables are part of the
    # key so that a changed environment (tests, credential rotation) gets a fresh client.
    key = (loc.kind, loc.bucket, loc.account, options._cache_key(), store_environment(loc.kind))
    with _STORE_CACHE_LOCK:
        store = _STORE_CACHE.get(key)
        if store is not None:
            _STORE_CACHE.move_to_end(key)
            return store
    _log.debug(
        "a %s client for %s: timeout %g s, %d retries (a request fails within %.1f s)",
        loc.kind, loc.bucket, options.timeout, options.max_retries, options.max_request_seconds(),
    )  # fmt: skip
    try:
        store = _build_store(loc, options)
    except (obstore_errors.BaseError, ValueError, TypeError) as exc:
        raise InvalidArgumentError(
            f"cannot configure the {loc.kind} store: {describe(exc)}", path=loc.display
        ) from exc
    with _STORE_CACHE_LOCK:
        store = _STORE_CACHE.setdefault(key, store)
        _STORE_CACHE.move_to_end(key)
        while len(_STORE_CACHE) > _STORE_CACHE_SIZE:
            _STORE_CACHE.popitem(last=False)
    return store


def clear_store_cache() -> None:
    """Forget all cached store clients (new ones read the environment again)."""
    with _STORE_CACHE_LOCK:
        _STORE_CACHE.clear()


# --------------------------------------------------------------------------- options given


def resolve_options(options: StoreOptions | None, values: Mapping[str, Any]) -> StoreOptions:
    # One shared default (it is immutable): building and validating StoreOptions on every
    # open cost more than reading a small footer from the page cache.
    base = options if options is not None else _DEFAULT_OPTIONS
    if not isinstance(base, StoreOptions):
        raise InvalidArgumentError(f"options must be StoreOptions, not {type(base).__name__}")
    if not values:
        return base
    known = {f.name for f in dataclasses.fields(StoreOptions)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise InvalidArgumentError(
            f"unknown option(s) {', '.join(unknown)}; expected some of {', '.join(sorted(known))}"
        )
    return dataclasses.replace(base, **values)


_DEFAULT_OPTIONS = StoreOptions()


def as_store_options(options: StoreOptions | Mapping[str, Any] | None) -> StoreOptions | None:
    """The ``options`` an entry point takes, as StoreOptions (None stays None).

    Raises
    ------
    InvalidArgumentError
        Neither StoreOptions nor a mapping, or a mapping with an unknown option.
    """
    if options is None or isinstance(options, StoreOptions):
        return options
    if not isinstance(options, Mapping):
        raise InvalidArgumentError(
            f"options must be StoreOptions or a mapping, not {type(options).__name__}"
        )
    return resolve_options(None, options)


def check_applicable(loc: Address, options: StoreOptions) -> None:
    if options is _DEFAULT_OPTIONS:
        return  # nothing given, nothing stray
    stray = [name for name in options.given() if name not in _APPLICABLE[loc.kind]]
    if stray:
        where = "local files" if loc.kind == "file" else f"{loc.kind} URLs"
        raise InvalidArgumentError(
            f"option(s) {', '.join(stray)} do not apply to {where}", path=loc.display
        )
