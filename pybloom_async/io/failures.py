"""Foreign failures at the I/O boundary: ``OSError`` and obstore's exceptions turned into
:class:`~pybloom_async.errors.SourceError` and
:class:`~pybloom_async.errors.SourceNotFoundError` naming the path (:func:`map_errors`),
said in one line (:func:`describe`): a missing file, a store that gave no answer or cannot
be reached, a run without credentials."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator

import obstore.exceptions as obstore_errors

from ..errors import InvalidArgumentError, PyBloomError, SourceError, SourceNotFoundError

# Each foreign error in full, at DEBUG (the CLI's -vv).
_log = logging.getLogger(__name__)


#: The longest one-line description :func:`describe` gives.
DESCRIBE_LIMIT = 300

# obstore's messages: a first part, then "Debug source:" and a multi-line dump of the Rust
# error. A store's error body is XML (S3, GCS, Azure: <Error><Code>..</Code><Message>..);
# a failure without an answer has the HttpError's kind and the OS error's message in the
# dump (object_store's client/retry.rs, HttpErrorKind).
_DEBUG_SOURCE = "Debug source:"
_XML_START_RE = re.compile(r"(?::\s*)?(?:<\?xml[^>]*\?>\s*)?<Error>")
_XML_CODE_RE = re.compile(r"<Code>([^<]*)</Code>")
_XML_MESSAGE_RE = re.compile(r"<Message>([^<]*)</Message>")
_HTTP_KIND_RE = re.compile(r"HttpError \{\s*kind: (\w+)")
_HTTP_KINDS = {
    "Timeout": "timed out",
    "Connect": "could not connect",
    "Interrupted": "the connection was cut",
    "Decode": "the answer could not be decoded",
}


def shorten(text: str, limit: int) -> str:
    """``text`` cut in its middle to at most ``limit`` characters.

    An error's start says what was being done and its end why it failed (the
    store's error code, "timed out"): the middle (a long URL) is what goes.
    """
    if len(text) <= limit:
        return text
    keep = max(limit - 5, 2)
    head = keep * 2 // 5
    return f"{text[:head]} ... {text[len(text) - (keep - head) :]}"


def _cause(message: str, dump: str) -> tuple[str, str | None]:
    """The message without a store's XML error body, and the failure's cause, if found."""
    xml = _XML_START_RE.search(message)
    if xml is not None:
        body = message[xml.start() :]
        code, said = _XML_CODE_RE.search(body), _XML_MESSAGE_RE.search(body)
        # Azure appends "RequestId:..." and "Time:..." lines to its message.
        said_text = said.group(1).split("RequestId:")[0].strip() if said else ""
        cause = ": ".join(t for t in (code.group(1) if code else "", said_text) if t)
        return message[: xml.start()], cause or None
    kind = _HTTP_KIND_RE.search(dump)
    if kind is None:
        return message, None
    cause = _HTTP_KINDS.get(kind.group(1), kind.group(1).lower())
    reasons = _OS_MESSAGE_RE.findall(dump)
    return message, f"{cause}: {reasons[-1]}" if reasons else cause


def gave_no_answer(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) is a request the store never answered.

    A timeout, a refused or cut connection: obstore's HttpError, retries exhausted. Such
    a store is not asked again for the same file, so a file fails within one request's
    time (:meth:`~pybloom_async.io.store.StoreOptions.max_request_seconds`).
    """
    seen: BaseException | None = exc
    for _ in range(8):  # a cause chain is short; the bound guards against a cycle
        if seen is None:
            return False
        if isinstance(seen, obstore_errors.BaseError) and _HTTP_KIND_RE.search(str(seen)):
            return True
        seen = seen.__cause__
    return False


def describe(exc: BaseException, limit: int = DESCRIBE_LIMIT) -> str:
    """One line for a foreign error, with its cause, at most ``limit`` characters.

    obstore appends a multi-line debug dump to its messages, and a store's XML
    error body spans lines: the line keeps the message, the store's error code
    and message (``NoSuchBucket: The specified bucket does not exist``) or, for a
    request that got no answer, why (``timed out``, ``could not connect:
    Connection refused``), and is shortened in its middle, never at its end.
    """
    message, _, dump = str(exc).partition(_DEBUG_SOURCE)
    message, cause = _cause(" ".join(message.split()), dump)
    text = message.rstrip(": ") + (f": {cause}" if cause else "")
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return shorten(text, limit)


# Where object_store looks for credentials when none are configured: the cloud's instance
# metadata service (AWS IMDS, the GCE metadata server, Azure's managed identity endpoint;
# object_store's aws/credential.rs, gcp/credential.rs, azure/credential.rs). A failed
# request there means no credentials were found anywhere else.
_METADATA_PATHS = {
    "/latest/api/token": "AWS",
    "/latest/meta-data/iam/security-credentials": "AWS",
    "/computeMetadata/v1/instance/service-accounts/": "Google Cloud",
    "/metadata/identity/oauth2/token": "Azure",
}
_CREDENTIAL_HINTS = {
    "AWS": "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or the access_key_id and "
    "secret_access_key options)",
    "Google Cloud": "set GOOGLE_APPLICATION_CREDENTIALS or GOOGLE_SERVICE_ACCOUNT (or the "
    "service_account_path option)",
    "Azure": "set AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_KEY (or the account_key or "
    "sas_token option)",
}
# obstore's messages: "Error performing GET http://host:port/key in 1.2ms ..." and, in the
# debug dump that follows, the HTTP error's kind and the OS error's message.
_PERFORMING_RE = re.compile(r"Error performing [A-Z]+ ([a-zA-Z][\w+.-]*://[^\s/?]+)")
_METADATA_RE = re.compile(
    r"Error performing [A-Z]+ https?://[^\s/?]+("
    + "|".join(re.escape(p) for p in _METADATA_PATHS)
    + ")"
)
_CONNECT_RE = re.compile(r"\bkind: Connect\b")
_OS_MESSAGE_RE = re.compile(r'(?:message|error): "([^"]+)"')


def _missing_credentials(exc: BaseException) -> str | None:
    """The message for a failure of the credentials fallback, or None for other failures."""
    if not isinstance(exc, obstore_errors.GenericError):
        return None
    found = _METADATA_RE.search(str(exc))
    if found is None:
        return None
    cloud = _METADATA_PATHS[found.group(1)]
    return (
        f"no {cloud} credentials found: {_CREDENTIAL_HINTS[cloud]}, or "
        "--skip-signature (skip_signature=True) for public buckets"
    )


def unreachable_reason(exc: BaseException) -> str | None:
    """``"cannot connect to ENDPOINT: why"`` when no connection could be made, else None."""
    if not isinstance(exc, obstore_errors.BaseError):
        return None
    text = str(exc)
    if not _CONNECT_RE.search(text):
        return None
    found = _PERFORMING_RE.search(text)
    where = f"cannot connect to {found.group(1) if found else 'the endpoint'}"
    reasons = _OS_MESSAGE_RE.findall(text)
    return f"{where}: {reasons[-1]}" if reasons else where


def _source_error(exc: BaseException, path: str, action: str) -> PyBloomError:
    """The package's error for an OS or obstore failure met while doing ``action`` on ``path``."""
    missing = _missing_credentials(exc)
    if missing is not None:
        return SourceError(missing, path=path)
    unreachable = unreachable_reason(exc)
    if unreachable is not None:
        return SourceError(f"{action}: {unreachable}", path=path)
    if isinstance(exc, (FileNotFoundError, obstore_errors.NotFoundError, NotADirectoryError)):
        # NotADirectoryError: a path component is a regular file, as good as missing.
        return SourceNotFoundError(f"{action}: no such file or object", path=path)
    if isinstance(exc, obstore_errors.PreconditionError):
        return SourceError(
            f"{action}: the object changed since it was first read (ETag no longer matches)",
            path=path,
        )
    if isinstance(exc, (OSError, obstore_errors.BaseError)):
        return SourceError(f"{action} failed: {describe(exc)}", path=path)
    # obstore reports a path it cannot parse as a bare ValueError.
    return InvalidArgumentError(f"{action}: {describe(exc)}", path=path)


@contextlib.contextmanager
def map_errors(path: str, action: str) -> Iterator[None]:
    """Turn OS and obstore failures raised inside into SourceError naming ``path``.

    A store that cannot be reached, and a run without credentials (the store's
    client then asks the cloud's instance metadata service, which fails off the
    cloud), are said as such, never as a missing file.
    """
    try:
        yield
    except PyBloomError:
        raise
    except (OSError, obstore_errors.BaseError, ValueError) as exc:
        # The whole foreign message (obstore's debug dump included), for -vv.
        _log.debug("%s: %s failed: %s", path, action, exc)
        raise _source_error(exc, path, action) from exc
