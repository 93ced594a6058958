"""Addresses: an object's URL, as a listing makes it, reads back as the same key."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pybloom_async.errors import InvalidArgumentError
from pybloom_async.io.address import is_local, local_path, object_url, parse_address

# A key segment: any printable text but "/" (obstore refuses empty, "." and ".." segments).
_SEGMENT = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/"), min_size=1
).filter(lambda s: s not in (".", ".."))
KEYS = st.lists(_SEGMENT, min_size=1, max_size=4).map("/".join)
ROOTS = [
    "s3://bucket/",
    "s3a://bucket/some/prefix/",
    "gs://bucket/p",
    "az://container/",
    "abfss://container@account.dfs.core.windows.net/lake/",
    "http://127.0.0.1:8080/data/",
    "https://example.org/",
]


@pytest.mark.parametrize("root", ROOTS)
@given(key=KEYS)
def test_an_objects_url_reads_back_as_its_key(root: str, key: str) -> None:
    url = object_url(root, key)
    loc = parse_address(url)
    assert loc.key == key
    assert (loc.kind, loc.bucket, loc.account) == (
        (root_loc := parse_address(root + "x")).kind, root_loc.bucket, root_loc.account
    )  # fmt: skip


@pytest.mark.parametrize(
    ("key", "url"),
    [
        ("a#b.parquet", "s3://bucket/a#b.parquet"),
        ("q?x=1.parquet", "s3://bucket/q?x=1.parquet"),
        ("p%41 x+y.parquet", "s3://bucket/p%41 x+y.parquet"),
        ("date=2024-01-01 00%3A00/f.parquet", "s3://bucket/date=2024-01-01 00%3A00/f.parquet"),
    ],
)
def test_object_store_urls_hold_keys_as_they_are(key: str, url: str) -> None:
    """S3, GCS and Azure URLs are read as the AWS CLI reads them: nothing is decoded."""
    assert object_url("s3://bucket/", key) == url
    assert parse_address(url).key == key


def test_http_urls_are_real_urls() -> None:
    assert object_url("http://h:1/d/", "a#b c%.parquet") == "http://h:1/a%23b%20c%25.parquet"
    assert parse_address("http://h:1/a%23b%20c%25.parquet").key == "a#b c%.parquet"
    with pytest.raises(InvalidArgumentError, match="not a URL"):
        object_url("/local/dir", "x")


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("data/a.parquet", "data/a.parquet"),
        ("/abs/a b.parquet", "/abs/a b.parquet"),
        ("file:///abs/a%20b%25c.parquet", "/abs/a b%c.parquet"),
        ("file://localhost/abs/a.parquet", "/abs/a.parquet"),
        ("s3://bucket/a.parquet", None),
        ("https://host/a.parquet", None),
        ("file://elsewhere/a.parquet", None),  # a remote host: no local file
        ("nosuch://x/a.parquet", None),
    ],
)
def test_local_path_of_a_path_or_file_url(location: str, expected: str | None) -> None:
    assert local_path(location) == expected


def test_is_local_of_paths_and_urls() -> None:
    """One predicate for every layer that asks: a plain path is local without a parse,
    a URL is parsed, and what is no location raises rather than reads as local."""
    from pathlib import Path

    assert is_local("/tmp/x") and is_local("rel/x.parquet") and is_local(Path("/tmp/x"))
    assert is_local("file:///tmp/x") and is_local("/tmp/a://b")  # no scheme at its start
    assert not is_local("s3://bucket/key") and not is_local("https://host/key")
    for bad in ("", "nosuch://x/a.parquet"):
        with pytest.raises(InvalidArgumentError):
            is_local(bad)
    with pytest.raises(InvalidArgumentError, match="path or URL string"):
        is_local(42)  # type: ignore[arg-type]
