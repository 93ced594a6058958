"""Run one Python fuzz target under atheris (started by ``fuzz/run.py``, one process each).

Usage: ``python fuzz/harness.py TARGET [libFuzzer flags and corpus dirs...]``. Running one
input file instead of fuzzing (to replay a crash) works as with any libFuzzer binary:
``python fuzz/harness.py footer fuzz/artifacts/footer/crash-...``.

The package is imported inside ``atheris.instrument_imports`` so that libFuzzer sees the
coverage of its Python code (the C core is reached through cffi and is fuzzed with
coverage by the C targets instead).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def main(argv: list[str]) -> None:
    import atheris  # type: ignore[import-untyped]  # no stubs

    from fuzz.targets import TARGETS, PyTarget

    if len(argv) < 2 or argv[1] not in TARGETS:
        names = ", ".join(n for n, t in TARGETS.items() if isinstance(t, PyTarget))
        raise SystemExit(f"usage: harness.py TARGET [libFuzzer args]; targets: {names}")
    chosen = TARGETS[argv[1]]
    if not isinstance(chosen, PyTarget):
        raise SystemExit(f"{argv[1]} is a C target; fuzz/run.py builds and runs it")
    with atheris.instrument_imports(include=list(chosen.instrument)):
        import pybloom_async
        import pybloom_async.paimon.container
        import pybloom_async.parquet.decode
        import pybloom_async.pruning.api
        import pybloom_async.read.plan
        import pybloom_async.read.reader
        import pybloom_async.rows.api  # noqa: F401

        for extra in chosen.instrument:
            __import__(extra)
    # Warm the lazily built state (base files, synthetic content) outside the fuzz loop.
    if chosen.name == "reader":
        from fuzz import readerfuzz

        readerfuzz.bases()
    elif chosen.name == "lookup":
        from fuzz import lookupfuzz

        lookupfuzz.bases()
    expected = os.environ.get("PYBLOOM_ASYNC_EXPECT_NATIVE")
    if expected:  # a sanitised run (fuzz/run.py): the sanitised C core, or nothing
        from pybloom_async._native import _cffi

        loaded = Path(_cffi.__file__).resolve()
        if not str(loaded).startswith(str(Path(expected).resolve())):
            raise SystemExit(f"expected the C core from {expected}, loaded {loaded}")
    atheris.Setup([argv[0], *argv[2:]], chosen.run)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
