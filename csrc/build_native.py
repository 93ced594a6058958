"""cffi build script for ``pybloom_async._native._cffi`` (out-of-line API mode).

Kept outside the package on purpose: it is needed only at build time. Every
``csrc/<component>/*.c`` file (``core``, ``footer``, ``paimon``, ``rows``) is compiled into
the module.
The declarations cffi exposes to Python are derived from the public headers
``csrc/include/*.h``, the single place a declaration is written: each header runs
through the C preprocessor (as python-zstandard's ``make_cffi.py`` does), and its
valued ``#define PBA_*`` macros, which the preprocessor expands away, are declared
again as ``#define NAME ...`` so that cffi takes their values from the compiler. A
component adds its C files under ``csrc/<component>/`` and declares its API in
``csrc/include/``; nothing else.

Only ``csrc/core/sbbf_avx2.c`` contains AVX2 code, enabled per function with
``__attribute__((target("avx2")))``; everything else is built for the baseline
target, and the backend is picked once at load time (``csrc/core/dispatch.c``).

The codecs of ``csrc/rows/codec.c`` beyond snappy (read there) link their system library
when the build finds it (a header and a library a test program compiles and links
against: zlib, libbrotlidec, libzstd, liblz4; ``scripts/install-build-deps.sh`` installs
them on Debian). Without one, its pages are decompressed in Python by pyarrow instead.

Environment:
    PYBLOOM_ASYNC_CFLAGS   extra compiler flags (e.g. ``-Werror`` or sanitizers)
    PYBLOOM_ASYNC_LDFLAGS  extra linker flags
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _rel(path: Path) -> str:
    # setuptools wants source paths relative to the project root.
    return os.path.relpath(path, ROOT)


INCLUDE = HERE / "include"
COMPONENTS = ("core", "footer", "paimon", "rows")
SOURCES = sorted(p for c in COMPONENTS for p in (HERE / c).glob("*.c"))

#: Valued macros of the public API (include guards have no value).
_DEFINE = re.compile(r"^#define\s+(PBA_[A-Z0-9_]+)\s+\S")
#: System headers: cffi declares size_t and the intN_t types itself, and the C
#: library's headers hold extensions its parser refuses.
_SYSTEM_INCLUDE = re.compile(r"^\s*#\s*include\s*<")


def _preprocess(text: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "header.h"
        source.write_text(text, encoding="utf-8")
        if sys.platform == "win32":
            command = ["cl", "/nologo", "/EP", "/TC", str(source)]
        else:
            cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
            command = [*shlex.split(cc), "-E", "-P", "-x", "c", "-std=c99", str(source)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
    return done.stdout


def _cdef(header: Path) -> str:
    """The cffi declarations of one public header."""
    text = header.read_text(encoding="utf-8")
    body = "".join(
        line for line in text.splitlines(keepends=True) if not _SYSTEM_INCLUDE.match(line)
    )
    constants = [f"#define {m[1]} ..." for line in text.splitlines() if (m := _DEFINE.match(line))]
    return _preprocess(body) + "\n" + "\n".join(constants) + "\n"


def _cdefs() -> str:
    return "\n".join(_cdef(h) for h in sorted(INCLUDE.glob("*.h")))


def _compile_args() -> list[str]:
    if sys.platform == "win32":
        return ["/O2"]
    args = ["-std=c99", "-O3", "-Wall", "-Wextra", "-fno-strict-aliasing"]
    args += shlex.split(os.environ.get("PYBLOOM_ASYNC_CFLAGS", ""))
    return args


#: Codec libraries linked when found: the macro codec.c tests, a header, the library and a
#: call that must link.
_CODECS = (
    ("PBA_HAVE_ZLIB", "zlib.h", "z", "inflateEnd(0)"),
    ("PBA_HAVE_BROTLI", "brotli/decode.h", "brotlidec", "BrotliDecoderVersion()"),
    ("PBA_HAVE_ZSTD", "zstd.h", "zstd", "ZSTD_versionNumber()"),
    ("PBA_HAVE_LZ4", "lz4.h", "lz4", "LZ4_versionNumber()"),
)


def _links(header: str, library: str, call: str) -> bool:
    """Whether a program calling ``call`` from ``header`` compiles and links."""
    if sys.platform == "win32":
        return False
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "probe.c"
        source.write_text(f"#include <{header}>\nint main(void) {{ (void){call}; return 0; }}\n")
        command = [*shlex.split(cc), str(source), "-o", str(Path(tmp) / "probe"), f"-l{library}"]
        return subprocess.run(command, capture_output=True).returncode == 0


def _codecs() -> tuple[list[tuple[str, str]], list[str]]:
    """The macros and libraries of the codec libraries found."""
    found = [
        (macro, library)
        for macro, header, library, call in _CODECS
        if _links(header, library, call)
    ]
    return [(macro, "1") for macro, _ in found], [library for _, library in found]


def _preamble() -> str:
    # Every public header in csrc/include is visible to the generated module.
    headers = sorted(INCLUDE.glob("*.h"))
    return "".join(f'#include "{h.name}"\n' for h in headers)


CODEC_MACROS, CODEC_LIBRARIES = _codecs()

ffi = FFI()
ffi.cdef(_cdefs())
ffi.set_source(
    "pybloom_async._native._cffi",
    _preamble(),
    sources=[_rel(p) for p in SOURCES],
    include_dirs=[_rel(INCLUDE), _rel(HERE / "vendor" / "xxhash"), _rel(HERE / "core")],
    extra_compile_args=_compile_args(),
    define_macros=CODEC_MACROS,
    libraries=CODEC_LIBRARIES,
    extra_link_args=shlex.split(os.environ.get("PYBLOOM_ASYNC_LDFLAGS", "")),
)

if __name__ == "__main__":
    ffi.compile(verbose=True)
