"""pyarrow filesystems that reach the files the reader reads, with the same options.

A dataset handed to another engine (Polars, DuckDB, DataFusion) is read by pyarrow's
own filesystems, not by obstore: this module is the one place where
:class:`~pybloom_async.io.store.StoreOptions` become a pyarrow ``FileSystem`` and a
location becomes the path that filesystem takes. An option that pyarrow's filesystem
has no counterpart for is an :class:`InvalidArgumentError` naming it, never dropped:
a dataset that silently reached a store another way than pruning did would read
other credentials, or another endpoint.

Credentials that neither the options nor the location give come from the
environment, as with obstore: pyarrow's S3 and GCS filesystems read the standard
credential variables themselves. What pyarrow does not read is read here: the S3
endpoint and region (``AWS_ENDPOINT_URL``, ``AWS_ENDPOINT``, ``AWS_REGION``,
``AWS_DEFAULT_REGION``), and for Azure, whose pyarrow filesystem reads none of obstore's
variables, ``AZURE_STORAGE_ACCOUNT_NAME``, ``AZURE_STORAGE_ACCOUNT_KEY``,
``AZURE_STORAGE_SAS_KEY`` and ``AZURE_STORAGE_ENDPOINT``.
"""

from __future__ import annotations

import os
import urllib.parse
from datetime import timedelta
from typing import Any

from ..checks import require_pyarrow
from ..errors import InvalidArgumentError
from ..io.address import Address
from ..io.store import StoreOptions, allow_http, check_applicable

# extra_config keys that have a pyarrow counterpart, per store: obstore key -> mapping.
_S3_VIRTUAL_HOSTED = ("virtual_hosted_style_request", "aws_virtual_hosted_style_request")


def arrow_path(address: Address) -> str:
    """The path of a location on its :func:`arrow_filesystem`.

    Local files: the absolute path; object stores: ``bucket/key`` (the container for Azure).

    Raises
    ------
    InvalidArgumentError
        An HTTP(S) URL: pyarrow has no HTTP filesystem.
    """
    if address.kind == "file":
        return os.path.abspath(address.path)
    if address.kind == "http":
        raise _no_http(address)
    return f"{address.bucket}/{address.key}"


def arrow_filesystem(address: Address, options: StoreOptions) -> Any:
    """A pyarrow ``FileSystem`` for the store of ``address``, configured from ``options``.

    Raises
    ------
    InvalidArgumentError
        An option does not apply to the store, or has no counterpart in pyarrow's
        filesystem for it (named); an HTTP(S) URL; pyarrow refuses the configuration.
    MissingDependencyError
        pyarrow is not installed.
    """
    require_pyarrow("build a dataset")
    import pyarrow.fs as pafs

    check_applicable(address, options)
    if address.kind == "file":
        return pafs.LocalFileSystem()
    if address.kind == "s3":
        make, args = pafs.S3FileSystem, s3_arguments(options)
    elif address.kind == "gs":
        make, args = pafs.GcsFileSystem, gcs_arguments(options)
    elif address.kind == "az":
        make, args = pafs.AzureFileSystem, azure_arguments(address, options)
    else:
        raise _no_http(address)
    try:
        return make(**args)
    except (ValueError, TypeError, OSError) as exc:
        # pyarrow's own refusals (a key without its secret, anonymous with a key...).
        raise InvalidArgumentError(
            f"pyarrow cannot configure the {address.kind} filesystem: {exc}",
            path=address.display,
        ) from None


def _no_http(address: Address) -> InvalidArgumentError:
    return InvalidArgumentError(
        "pyarrow has no HTTP filesystem, so a dataset cannot read HTTP(S) URLs; "
        "use local paths or s3://, gs://, az:// URLs",
        path=address.display,
    )


def _unmappable(options: StoreOptions, names: tuple[str, ...], store: str) -> None:
    """Refuse the options given that pyarrow's filesystem for ``store`` cannot take."""
    given = [name for name in options.given() if name in names]
    if given:
        raise InvalidArgumentError(
            f"option(s) {', '.join(given)} cannot be handed to pyarrow's {store} "
            "(it has no such setting); leave them unset to build a dataset"
        )


def _endpoint(kind: str, options: StoreOptions, endpoint: str | None) -> dict[str, str]:
    """An endpoint URL split into pyarrow's authority (``host:port``), scheme and path."""
    if endpoint is None:
        return {}
    parts = urllib.parse.urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidArgumentError(
            f"option endpoint must be an http:// or https:// URL, not {endpoint!r}"
        )
    if parts.scheme == "http" and allow_http(kind, options) is False:
        raise InvalidArgumentError(
            f"option endpoint {endpoint!r} is plain HTTP but allow_http is False"
        )
    return {"scheme": parts.scheme, "authority": parts.netloc, "path": parts.path.strip("/")}


def _host_endpoint(
    kind: str, options: StoreOptions, given: str | None, system: str
) -> dict[str, str]:
    """``endpoint_override`` and ``scheme`` for a filesystem that takes a host and port only."""
    endpoint = _endpoint(kind, options, given)
    if not endpoint:
        return {}
    if endpoint["path"]:
        raise InvalidArgumentError(
            f"option endpoint {given!r} has a path; pyarrow's {system} takes a host and port only"
        )
    return {"endpoint_override": endpoint["authority"], "scheme": endpoint["scheme"]}


def s3_arguments(options: StoreOptions) -> dict[str, Any]:
    """``pyarrow.fs.S3FileSystem`` keyword arguments for ``options``."""
    import pyarrow.fs as pafs

    _unmappable(options, ("retry_timeout",), "S3FileSystem")
    extra = dict(options.extra_config or {})
    virtual = [extra.pop(k) for k in _S3_VIRTUAL_HOSTED if k in extra]
    if extra:
        raise InvalidArgumentError(
            f"extra_config key(s) {', '.join(sorted(extra))} cannot be handed to pyarrow's "
            f"S3FileSystem; the keys it takes: {', '.join(_S3_VIRTUAL_HOSTED)}"
        )
    args: dict[str, Any] = {
        "connect_timeout": options.connect_timeout,
        "request_timeout": options.timeout,
        # The AWS SDK counts attempts, the first one included; StoreOptions counts retries.
        "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=options.max_retries + 1),
    }
    # pyarrow's AWS SDK does not read obstore's endpoint variables: they are read here.
    given = options.endpoint or _env("AWS_ENDPOINT_URL") or _env("AWS_ENDPOINT")
    args.update(_host_endpoint("s3", options, given, "S3FileSystem"))
    # obstore's region: the option, then the environment, then us-east-1. Given to pyarrow
    # always: left unset, the AWS SDK may ask the instance metadata service for one.
    args["region"] = (
        options.region or _env("AWS_REGION") or _env("AWS_DEFAULT_REGION") or "us-east-1"
    )
    if options.access_key_id is not None:
        args["access_key"] = options.access_key_id
    if options.secret_access_key is not None:
        args["secret_key"] = options.secret_access_key
    if options.session_token is not None:
        args["session_token"] = options.session_token
    if options.skip_signature:
        args["anonymous"] = True
    if virtual:
        args["force_virtual_addressing"] = virtual[-1].strip().lower() in ("true", "1")
    return args


_GCS_OBSTORE_ENV = (
    "GOOGLE_SERVICE_ACCOUNT",
    "GOOGLE_SERVICE_ACCOUNT_PATH",
    "GOOGLE_SERVICE_ACCOUNT_KEY",
)


def gcs_arguments(options: StoreOptions) -> dict[str, Any]:
    """``pyarrow.fs.GcsFileSystem`` keyword arguments for ``options``."""
    _unmappable(
        options,
        (
            "service_account_path",
            "service_account_key",
            "timeout",
            "connect_timeout",
            "max_retries",
            "extra_config",
        ),
        "GcsFileSystem (credentials: set GOOGLE_APPLICATION_CREDENTIALS instead)",
    )
    # obstore's own credential variables, which pyarrow's GCS client does not read: a
    # dataset built without them would reach the bucket as someone else, or as nobody.
    unread = [name for name in _GCS_OBSTORE_ENV if _env(name)]
    if unread and not _env("GOOGLE_APPLICATION_CREDENTIALS"):
        raise InvalidArgumentError(
            f"{', '.join(unread)} is set, which pyarrow's GcsFileSystem does not read; "
            "set GOOGLE_APPLICATION_CREDENTIALS to the service-account file instead"
        )
    args: dict[str, Any] = {"retry_time_limit": timedelta(seconds=options.retry_timeout)}
    args.update(_host_endpoint("gs", options, options.endpoint, "GcsFileSystem"))
    if options.skip_signature:
        args["anonymous"] = True
    return args


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


def azure_arguments(address: Address, options: StoreOptions) -> dict[str, Any]:
    """``pyarrow.fs.AzureFileSystem`` keyword arguments for ``options`` and the URL's account."""
    _unmappable(
        options,
        (
            "skip_signature",
            "timeout",
            "connect_timeout",
            "max_retries",
            "retry_timeout",
            "extra_config",
        ),
        "AzureFileSystem",
    )
    # The precedence obstore's store config has: the option, the URL's account, the environment.
    account = options.account_name or address.account or _env("AZURE_STORAGE_ACCOUNT_NAME")
    if account is None:
        raise InvalidArgumentError(
            "no Azure storage account: give account_name, an abfs://container@account... URL, "
            "or set AZURE_STORAGE_ACCOUNT_NAME",
            path=address.display,
        )
    args: dict[str, Any] = {"account_name": account}
    key = options.account_key
    sas = options.sas_token
    if key is None and sas is None:
        key, sas = _env("AZURE_STORAGE_ACCOUNT_KEY"), _env("AZURE_STORAGE_SAS_KEY")
    if key is not None:
        args["account_key"] = key
    elif sas is not None:
        args["sas_token"] = sas.removeprefix("?")
    endpoint = _endpoint("az", options, options.endpoint or _env("AZURE_STORAGE_ENDPOINT"))
    if endpoint:
        # obstore takes an emulator's endpoint with the account as its path
        # (http://127.0.0.1:10000/devstoreaccount1); pyarrow adds the account itself.
        if endpoint["path"] not in ("", account):
            raise InvalidArgumentError(
                f"option endpoint {options.endpoint!r} has a path other than the account "
                f"{account!r}; pyarrow's AzureFileSystem takes a host and port only"
            )
        for service in ("blob", "dfs"):
            args[f"{service}_storage_authority"] = endpoint["authority"]
            args[f"{service}_storage_scheme"] = endpoint["scheme"]
    return args
