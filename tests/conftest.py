"""Shared fixtures: test data location and the anyio backends."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# Local servers (moto_server, azurite, nginx) and written test files as session fixtures.
pytest_plugins = ["support.servers", "support.writers"]

REPO = Path(__file__).resolve().parent.parent
# The fuzz targets (``fuzz/``) hold properties some tests share. Appended, not prepended:
# under `make asan` the tests run from the sanitised copy, whose package must stay first.
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))
# The parquet-testing and Paimon vectors live beside the clone, never inside it.
SHARED_TESTDATA = Path(
    os.environ.get("PYBLOOM_ASYNC_TESTDATA", REPO.parent / "shared" / "testdata")
)


def _require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"test data not found at {path} (set PYBLOOM_ASYNC_TESTDATA)")
    return path


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under ``make asan``, refuse to run unless the sanitised C core is the one loaded."""
    expected = os.environ.get("PYBLOOM_ASYNC_EXPECT_NATIVE")
    if expected:
        from pybloom_async._native import _cffi

        loaded = Path(_cffi.__file__).resolve()
        if not str(loaded).startswith(str(Path(expected).resolve())):
            raise pytest.UsageError(f"expected the C core from {expected}, loaded {loaded}")


@pytest.fixture(scope="session")
def parquet_testing() -> Path:
    """The parquet-testing checkout (``data/``, ``bad_data/``); skips when absent."""
    return _require(SHARED_TESTDATA / "parquet-testing")


@pytest.fixture(scope="session")
def paimon_testdata() -> Path:
    """The Paimon reference vectors folder; skips when absent."""
    return _require(SHARED_TESTDATA / "paimon")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Run every ``@pytest.mark.anyio`` test on asyncio and on trio."""
    return str(request.param)
