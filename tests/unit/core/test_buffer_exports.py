"""An error raised over a memoryview never leaves the garbage collector a crash.

``ffi.from_buffer`` holds an export of its argument. When that is a memoryview and the
export is still alive as the error propagates, the frames of the traceback hold both; a
caller that keeps the error (``except E as exc: kept = exc``) makes a cycle, and on CPython
before 3.12.7 the collector clears the memoryview first and dies with SIGSEGV when the
export is released. Each case runs in a child process, since the failure is a crash.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CASES = {
    # A filter header announcing more than max_bytes: FilterTooLargeError.
    "header": "SplitBlockBloomFilter.from_bytes("
    "memoryview(bytearray(SplitBlockBloomFilter(1 << 20).to_bytes())), max_bytes=1024)",
    # A PLAIN BYTE_ARRAY run whose first length runs past the data: ValueEncodingError.
    "plain": "hash_plain_byte_arrays(memoryview(b'\\xff\\xff\\x00\\x00abc'))",
    # A stripe whose size does not match the file count: PyBloomError.
    "stripe": "check_stripe(memoryview(bytes(40)), 2, [1])",
    # A Paimon filter with k = 0: PaimonIndexError.
    "paimon": "BloomFilter64.from_bytes(memoryview(b'\\x00\\x00\\x00\\x00\\x01'))",
}

SCRIPT = """
import gc
from pybloom_async import PyBloomError, SplitBlockBloomFilter
from pybloom_async.core.hashing import hash_plain_byte_arrays
from pybloom_async.core.stripes import check_stripe
from pybloom_async.paimon.filter import BloomFilter64

def provoke():
    try:
        {call}
    except PyBloomError as exc:
        kept = exc  # the frame holds the error, whose traceback holds the frame
        return type(kept).__name__
    return "no error"

for _ in range(20):
    name = provoke()
    gc.collect()
print(name)
"""


@pytest.mark.parametrize("case", sorted(CASES))
def test_error_over_a_memoryview_survives_the_collector(case: str) -> None:
    script = textwrap.dedent(SCRIPT).format(call=CASES[case])
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("Error")
