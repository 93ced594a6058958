"""StoreOptions mapped to pyarrow filesystems: every option taken, or refused by name."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest

from pybloom_async.errors import InvalidArgumentError
from pybloom_async.io.address import parse_address
from pybloom_async.io.store import StoreOptions
from pybloom_async.rows.arrow_fs import (
    arrow_filesystem,
    arrow_path,
    azure_arguments,
    gcs_arguments,
    s3_arguments,
)

pafs = pytest.importorskip("pyarrow.fs")

AZ_ENV = (
    "AZURE_STORAGE_ACCOUNT_NAME",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_SAS_KEY",
    "AZURE_STORAGE_ENDPOINT",
)

GCS_ENV = (
    "GOOGLE_SERVICE_ACCOUNT",
    "GOOGLE_SERVICE_ACCOUNT_PATH",
    "GOOGLE_SERVICE_ACCOUNT_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
)


@pytest.fixture(autouse=True)
def _no_store_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*AZ_ENV, *GCS_ENV, "AWS_ALLOW_HTTP", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)


# ---- paths --------------------------------------------------------------------------------


def test_paths_per_scheme(tmp_path: object) -> None:
    assert arrow_path(parse_address("s3://bucket/a/b.parquet")) == "bucket/a/b.parquet"
    assert arrow_path(parse_address("gs://bucket/b.parquet")) == "bucket/b.parquet"
    assert arrow_path(parse_address("az://box/x/b.parquet")) == "box/x/b.parquet"
    assert arrow_path(parse_address("abfss://box@acct.dfs.core.windows.net/b.parquet")) == (
        "box/b.parquet"
    )
    assert arrow_path(parse_address("rel/b.parquet")) == os.path.abspath("rel/b.parquet")


def test_http_urls_are_refused_with_one_line() -> None:
    with pytest.raises(InvalidArgumentError, match="no HTTP filesystem") as info:
        arrow_path(parse_address("https://host/b.parquet"))
    assert "\n" not in str(info.value)
    with pytest.raises(InvalidArgumentError, match="no HTTP filesystem"):
        arrow_filesystem(parse_address("http://host/b.parquet"), StoreOptions())


def test_local_files_get_the_local_filesystem() -> None:
    fs = arrow_filesystem(parse_address("/tmp/x.parquet"), StoreOptions())
    assert isinstance(fs, pafs.LocalFileSystem)


# ---- S3 --------------------------------------------------------------------------------------


def test_s3_every_option_is_mapped() -> None:
    options = StoreOptions(
        endpoint="http://127.0.0.1:9000",
        region="eu-west-3",
        access_key_id="AK",
        secret_access_key="SK",
        session_token="ST",
        timeout=7.0,
        connect_timeout=2.0,
        max_retries=4,
        extra_config={"virtual_hosted_style_request": "true"},
    )
    args = s3_arguments(options)
    retry = args.pop("retry_strategy")
    assert isinstance(retry, pafs.AwsStandardS3RetryStrategy)
    assert retry.max_attempts == 5  # the first attempt and 4 retries
    assert args == {
        "endpoint_override": "127.0.0.1:9000",
        "scheme": "http",
        "region": "eu-west-3",
        "access_key": "AK",
        "secret_key": "SK",
        "session_token": "ST",
        "request_timeout": 7.0,
        "connect_timeout": 2.0,
        "force_virtual_addressing": True,
    }
    fs = arrow_filesystem(parse_address("s3://b/k.parquet"), options)
    assert isinstance(fs, pafs.S3FileSystem)
    assert fs.region == "eu-west-3"


def test_s3_skip_signature_is_anonymous() -> None:
    assert s3_arguments(StoreOptions(skip_signature=True))["anonymous"] is True


def test_s3_defaults_leave_credentials_to_the_environment() -> None:
    args = s3_arguments(StoreOptions())
    assert not {"access_key", "secret_key", "endpoint_override", "anonymous"} & set(args)


def test_s3_endpoint_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT", "https://other.example:1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")
    args = s3_arguments(StoreOptions())
    assert (args["endpoint_override"], args["scheme"]) == ("127.0.0.1:9000", "http")
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    assert s3_arguments(StoreOptions())["endpoint_override"] == "other.example:1"
    given = s3_arguments(StoreOptions(endpoint="https://s3.example"))
    assert given["endpoint_override"] == "s3.example"


def test_s3_region_as_obstore_finds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    assert s3_arguments(StoreOptions())["region"] == "us-east-1"
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    assert s3_arguments(StoreOptions())["region"] == "ap-south-1"
    monkeypatch.setenv("AWS_REGION", "eu-north-1")
    assert s3_arguments(StoreOptions())["region"] == "eu-north-1"
    assert s3_arguments(StoreOptions(region="us-west-2"))["region"] == "us-west-2"


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (StoreOptions(retry_timeout=5.0), "retry_timeout"),
        (StoreOptions(extra_config={"unsigned_payload": "true"}), "unsigned_payload"),
        (StoreOptions(endpoint="http://127.0.0.1:9000/base"), "has a path"),
        (StoreOptions(endpoint="127.0.0.1:9000"), "must be an http"),
        (StoreOptions(endpoint="http://127.0.0.1:9000", allow_http=False), "allow_http"),
    ],
)
def test_s3_options_pyarrow_cannot_take_are_refused_by_name(
    options: StoreOptions, named: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=named):
        arrow_filesystem(parse_address("s3://b/k.parquet"), options)


def test_options_of_another_store_are_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="account_key do not apply to s3"):
        arrow_filesystem(parse_address("s3://b/k.parquet"), StoreOptions(account_key="x"))


def test_pyarrow_refusals_become_one_error() -> None:
    # pyarrow wants the key and its secret together.
    with pytest.raises(InvalidArgumentError, match="pyarrow cannot configure the s3"):
        arrow_filesystem(parse_address("s3://b/k.parquet"), StoreOptions(access_key_id="AK"))


# ---- GCS ---------------------------------------------------------------------------------


def test_gcs_mapping() -> None:
    options = StoreOptions(
        endpoint="http://127.0.0.1:4443", skip_signature=True, retry_timeout=12.0
    )
    assert gcs_arguments(options) == {
        "endpoint_override": "127.0.0.1:4443",
        "scheme": "http",
        "anonymous": True,
        "retry_time_limit": timedelta(seconds=12),
    }
    fs = arrow_filesystem(parse_address("gs://b/k.parquet"), options)
    assert isinstance(fs, pafs.GcsFileSystem)


@pytest.mark.parametrize(
    "options",
    [
        StoreOptions(service_account_path="/k.json"),
        StoreOptions(service_account_key="{}"),
        StoreOptions(timeout=3.0),
        StoreOptions(max_retries=1),
        StoreOptions(extra_config={"bucket": "x"}),
    ],
)
def test_gcs_options_pyarrow_cannot_take_are_refused_by_name(options: StoreOptions) -> None:
    name = options.given()[0]
    with pytest.raises(InvalidArgumentError, match=name):
        gcs_arguments(options)


def test_gcs_credentials_only_obstore_reads_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_SERVICE_ACCOUNT", "/k.json")
    with pytest.raises(InvalidArgumentError, match="GOOGLE_SERVICE_ACCOUNT is set"):
        gcs_arguments(StoreOptions())
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/k.json")
    assert gcs_arguments(StoreOptions())["retry_time_limit"] == timedelta(seconds=60)


# ---- Azure -------------------------------------------------------------------------------


def test_azure_emulator_endpoint_and_key() -> None:
    options = StoreOptions(
        endpoint="http://127.0.0.1:10000/devstoreaccount1",
        account_name="devstoreaccount1",
        account_key="a2V5",
    )
    address = parse_address("az://box/k.parquet")
    assert azure_arguments(address, options) == {
        "account_name": "devstoreaccount1",
        "account_key": "a2V5",
        "blob_storage_authority": "127.0.0.1:10000",
        "blob_storage_scheme": "http",
        "dfs_storage_authority": "127.0.0.1:10000",
        "dfs_storage_scheme": "http",
    }
    assert isinstance(arrow_filesystem(address, options), pafs.AzureFileSystem)


def test_azure_account_from_the_url_then_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    url = parse_address("abfss://box@fromurl.dfs.core.windows.net/k.parquet")
    assert azure_arguments(url, StoreOptions())["account_name"] == "fromurl"
    assert azure_arguments(url, StoreOptions(account_name="opt"))["account_name"] == "opt"
    plain = parse_address("az://box/k.parquet")
    with pytest.raises(InvalidArgumentError, match="no Azure storage account"):
        azure_arguments(plain, StoreOptions())
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "fromenv")
    monkeypatch.setenv("AZURE_STORAGE_SAS_KEY", "?sv=1&sig=x")
    assert azure_arguments(plain, StoreOptions()) == {
        "account_name": "fromenv",
        "sas_token": "sv=1&sig=x",
    }


def test_azure_sas_token_option() -> None:
    args = azure_arguments(
        parse_address("az://box/k.parquet"), StoreOptions(account_name="a", sas_token="sv=1")
    )
    assert args == {"account_name": "a", "sas_token": "sv=1"}


@pytest.mark.parametrize(
    "options",
    [
        StoreOptions(account_name="a", skip_signature=True),
        StoreOptions(account_name="a", timeout=3.0),
        StoreOptions(account_name="a", max_retries=2),
        StoreOptions(account_name="a", retry_timeout=2.0),
        StoreOptions(account_name="a", extra_config={"use_fabric_endpoint": "true"}),
    ],
)
def test_azure_options_pyarrow_cannot_take_are_refused_by_name(options: StoreOptions) -> None:
    name = next(n for n in options.given() if n != "account_name")
    with pytest.raises(InvalidArgumentError, match=name):
        azure_arguments(parse_address("az://box/k.parquet"), options)


def test_azure_endpoint_with_another_path_is_refused() -> None:
    options = StoreOptions(account_name="a", endpoint="http://127.0.0.1:10000/other")
    with pytest.raises(InvalidArgumentError, match="has a path other than the account"):
        azure_arguments(parse_address("az://box/k.parquet"), options)
