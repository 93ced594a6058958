"""Where a file is: local paths and object-store URLs parsed into one address."""

from __future__ import annotations

import functools
import os
import re
import urllib.parse
import urllib.request
from dataclasses import dataclass

from ..errors import InvalidArgumentError

_SCHEMES = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gs",
    "az": "az",
    "azure": "az",
    "abfs": "az",
    "abfss": "az",
    "http": "http",
    "https": "http",
    "file": "file",
}
_URL_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class Address:
    """A parsed location: which store kind, which bucket/container/host, which key."""

    kind: str  # "file", "s3", "gs", "az", "http"
    display: str
    path: str = ""  # local path, for kind "file"
    bucket: str = ""  # bucket, container, or scheme://host for http
    key: str = ""
    account: str | None = None  # Azure account from an abfs://container@account... URL


def parse_address(location: str | os.PathLike[str]) -> Address:
    """Split a path or URL into store kind, bucket and key, without touching the network."""
    if not isinstance(location, str):
        if isinstance(location, os.PathLike):
            path = os.fspath(location)
            if isinstance(path, str):
                return Address("file", path, path=path)
        raise InvalidArgumentError(
            f"location must be a path or URL string, not {type(location).__name__}"
        )
    return _parse_string(location)


def is_local(location: str | os.PathLike[str]) -> bool:
    """True for a local path or ``file://`` URL.

    Raises
    ------
    InvalidArgumentError
        ``location`` is not a path or URL string, is empty, or names an unknown scheme.
    """
    if isinstance(location, str) and location and "://" not in location:
        return True  # a plain path, known without a parse
    return parse_address(location).kind == "file"


def local_path(location: str) -> str | None:
    """The local path a plain path or ``file://`` URL names (its escapes decoded); None for
    another store's URL, or one that is not a location."""
    if "://" not in location:
        return location
    try:
        address = _parse_string(location)
    except InvalidArgumentError:
        return None
    return address.path if address.kind == "file" else None


@functools.lru_cache(maxsize=1024)
def _parse_string(location: str) -> Address:
    # Cached: a run parses each file's location several times (its kind decides where its
    # work runs; opening it parses it again), each parse costing several microseconds.
    # Errors are not cached: they raise again.
    if not location:
        raise InvalidArgumentError("location is empty")
    match = _URL_RE.match(location)
    if match is None:
        return Address("file", location, path=location)
    scheme = match.group(1).lower()
    kind = _SCHEMES.get(scheme)
    if kind is None:
        raise InvalidArgumentError(
            f"unsupported URL scheme {scheme!r} in {location!r}; expected a local path or "
            "one of file, s3, s3a, gs, az, azure, abfs, abfss, http, https"
        )
    if kind in ("file", "http"):
        return _parse_url(location, scheme, kind)
    # s3, gs, az: the key is the rest of the URL after the bucket, character for character
    # (as the AWS CLI reads s3:// URLs): "#", "?", "%", spaces and "+" are all legal in a
    # key, and a listing returns them as they are (see object_url).
    authority, _, rest = location[match.end() :].partition("/")
    if not authority:
        raise InvalidArgumentError(f"URL {location!r} has no bucket, container or host")
    if "?" in authority or "#" in authority:
        raise InvalidArgumentError(
            f"URL {location!r} has a query or fragment after its bucket; not supported"
        )
    key = _check_key(location, rest.lstrip("/"))
    bucket = authority
    account = None
    if kind == "az" and "@" in bucket:
        # abfs[s]://container@account.dfs.core.windows.net/path (the Hadoop ABFS form).
        bucket, host = bucket.split("@", 1)
        account = host.split(".", 1)[0] or None
    if not bucket:
        raise InvalidArgumentError(f"URL {location!r} has no bucket or container")
    return Address(kind, location, bucket=bucket, key=key, account=account)


def _parse_url(location: str, scheme: str, kind: str) -> Address:
    """A ``file://`` or ``http(s)://`` URL: a real URL, its percent-escapes decoded."""
    parts = urllib.parse.urlsplit(location)
    if parts.query or parts.fragment:
        raise InvalidArgumentError(f"URL {location!r} has a query or fragment; not supported")
    if kind == "file":
        if parts.netloc not in ("", "localhost"):
            raise InvalidArgumentError(f"file URL {location!r} names a remote host")
        path = urllib.request.url2pathname(parts.path)
        return Address("file", path, path=path)
    if not parts.netloc:
        raise InvalidArgumentError(f"URL {location!r} has no bucket, container or host")
    # Percent-escapes are undone here and redone by obstore.
    key = _check_key(location, urllib.parse.unquote(parts.path.lstrip("/")))
    return Address("http", location, bucket=f"{scheme}://{parts.netloc}", key=key)


def object_url(location: str, key: str) -> str:
    """The URL of the object ``key`` of the store that ``location`` (a URL) names.

    It keeps ``location``'s scheme and authority (``s3a://``,
    ``abfss://container@account...``), so it opens with the same store, and
    :func:`parse_address` reads ``key`` back from it exactly: as it is for S3, GCS
    and Azure, percent-encoded for HTTP.
    """
    match = _URL_RE.match(location)
    if match is None:
        raise InvalidArgumentError(f"{location!r} is not a URL")
    authority = location[match.end() :].partition("/")[0]
    if _SCHEMES.get(match.group(1).lower()) == "http":
        authority = urllib.parse.urlsplit(location).netloc
        key = urllib.parse.quote(key, safe="/")
    return f"{location[: match.end()]}{authority}/{key}"


def _check_key(location: str, key: str) -> str:
    """Refuse keys obstore cannot address (it raises a bare ValueError for them)."""
    # A trailing "/" is allowed: it marks a prefix to list.
    segments = key[:-1].split("/") if key.endswith("/") else key.split("/")
    if key and any(seg in ("", ".", "..") for seg in segments):
        raise InvalidArgumentError(
            f"URL {location!r} has an empty, '.' or '..' path segment; object keys cannot"
        )
    return key
