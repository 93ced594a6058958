"""cffi build script for ``pybloom_async._native`` (out-of-line API mode).

Kept outside the package on purpose: it is needed only at build time. Every
``csrc/*.c`` file is compiled into the module; the declarations cffi exposes to
Python are the ``csrc/cdef/*.h`` files, one per component, so a component adds
its C file and its cdef file and touches nothing else.

Only ``csrc/sbbf_avx2.c`` contains AVX2 code, enabled per function with
``__attribute__((target("avx2")))``; everything else is built for the baseline
target, and the backend is picked once at load time (``csrc/dispatch.c``).

Environment:
    PYBLOOM_ASYNC_CFLAGS   extra compiler flags (e.g. ``-Werror`` or sanitizers)
    PYBLOOM_ASYNC_LDFLAGS  extra linker flags
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _rel(path: Path) -> str:
    # setuptools wants source paths relative to the project root.
    return os.path.relpath(path, ROOT)


def _cdefs() -> str:
    parts = []
    for path in sorted((HERE / "cdef").glob("*.h")):
        parts.append(path.read_text(encoding="utf-8"))
    return "\n".join(parts)


def _compile_args() -> list[str]:
    if sys.platform == "win32":
        return ["/O2"]
    args = ["-std=c99", "-O3", "-Wall", "-Wextra", "-fno-strict-aliasing"]
    args += shlex.split(os.environ.get("PYBLOOM_ASYNC_CFLAGS", ""))
    return args


def _preamble() -> str:
    # Every public header in csrc/include is visible to the generated module.
    headers = sorted((HERE / "include").glob("*.h"))
    return "".join(f'#include "{h.name}"\n' for h in headers)


ffi = FFI()
ffi.cdef(_cdefs())
ffi.set_source(
    "pybloom_async._native",
    _preamble(),
    sources=[_rel(p) for p in sorted(HERE.glob("*.c"))],
    include_dirs=[_rel(HERE / "include"), _rel(HERE / "vendor" / "xxhash"), _rel(HERE)],
    extra_compile_args=_compile_args(),
    extra_link_args=shlex.split(os.environ.get("PYBLOOM_ASYNC_LDFLAGS", "")),
)

if __name__ == "__main__":
    ffi.compile(verbose=True)
