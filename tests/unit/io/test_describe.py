"""One line for a foreign error: the cause kept, the middle shortened, never the end."""

from __future__ import annotations

from pybloom_async.io.failures import describe, shorten

# obstore 0.12's message for a LIST of a bucket that does not exist (moto), as raised.
NO_BUCKET = (
    "Generic S3 error: Error performing list request: Error performing GET "
    "http://127.0.0.1:45123/nobucket?list-type=2&prefix=events%2F in 6.6ms - Server returned "
    'non-2xx status code: 404 Not Found: <?xml version="1.0" encoding="utf-8"?>\n'
    "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message>"
    "<BucketName>nobucket</BucketName><RequestId>Opam</RequestId></Error>\n\n"
    'Debug source:\nGeneric {\n    store: "S3",\n    ...\n}'
)
# A GET that got no answer, with the HttpError's kind in the dump.
STALL = (
    "Generic S3 error: Error performing GET http://127.0.0.1:45200/b/f.parquet in 2.1s, after "
    "1 retries, max_retries: 1, retry_timeout: 5s  - HTTP error: error sending request\n\n"
    "Debug source:\nGeneric {\n    source: RetryError(\n        RetryErrorImpl {\n"
    "            inner: Http(\n                HttpError {\n                    kind: Timeout,\n"
    "                    source: reqwest::Error {\n                        kind: Request,\n"
    "                        source: TimedOut,\n    }}}}"
)
RESET = STALL.replace("kind: Timeout", "kind: Interrupted").replace(
    "source: TimedOut",
    'Os { code: 104, kind: ConnectionReset, message: "Connection reset by peer" }',
)
AZURE = (
    "Generic MicrosoftAzure error: Error performing GET http://h/acct/c?restype=container in "
    '3ms - Server returned non-2xx status code: 404 Not Found: <?xml version="1.0"?><Error>'
    "<Code>ContainerNotFound</Code><Message>The specified container does not exist.\n"
    "RequestId:1f\nTime:2026-01-01T00:00:00Z</Message></Error>"
)


class GenericError(Exception):
    pass


def test_a_stores_error_code_and_message_replace_its_xml() -> None:
    text = describe(GenericError(NO_BUCKET))
    assert text.endswith("404 Not Found: NoSuchBucket: The specified bucket does not exist")
    assert text.startswith("GenericError: Generic S3 error: Error performing list request")
    assert "<" not in text and "\n" not in text and "Debug" not in text
    azure = describe(GenericError(AZURE))
    assert azure.endswith("ContainerNotFound: The specified container does not exist."), azure


def test_a_request_without_an_answer_says_why() -> None:
    assert describe(GenericError(STALL)).endswith("error sending request: timed out")
    assert describe(GenericError(RESET)).endswith(
        "error sending request: the connection was cut: Connection reset by peer"
    )


def test_a_long_line_loses_its_middle_not_its_cause() -> None:
    long = NO_BUCKET.replace("events%2F", "events%2F" + "x" * 1000)
    text = describe(GenericError(long))
    assert len(text) == 300 and " ... " in text
    assert text.startswith("GenericError: Generic S3 error: Error performing list request")
    assert text.endswith("NoSuchBucket: The specified bucket does not exist")
    assert shorten("abcdefghij" * 10, 40) == "abcdefghijabcd ... jabcdefghijabcdefghij"
    assert shorten("short", 40) == "short"
    assert describe(ValueError("")) == "ValueError"
