"""Run fuzz targets for a bounded time and report executions, coverage and crashes.

Usage::

    .venv/bin/python fuzz/run.py --target footer --seconds 60
    .venv/bin/python fuzz/run.py --target all --seconds 45 --summary fuzz/logs/smoke.json
    .venv/bin/python fuzz/run.py --target all --seconds 10 --seed 1 --jobs 2   # CI's smoke run
    .venv/bin/python fuzz/run.py --list

Per target it writes fresh seeds to ``fuzz/seeds/<target>/`` (from the parquet-testing
files, see ``fuzz/seeds.py``), fuzzes with ``fuzz/corpus/<target>/`` as the growing
corpus, saves crashing inputs to ``fuzz/artifacts/<target>/`` and the fuzzer's output to
``fuzz/logs/<target>.log``. All four are gitignored. Python targets run under atheris
(``fuzz/harness.py``); C targets are built with clang (``-fsanitize=fuzzer,address,
undefined``) into ``build/fuzz/`` and skipped with a note when clang or its libFuzzer
runtime is missing. A Python target marked ``sanitized`` (all of them with
``--sanitize``) runs with a copy of the package in ``build/fuzz/asan-package/`` whose C
core clang built with ASan + UBSan (and libFuzzer's coverage hooks), atheris's ASan
runtime preloaded: a memory error in the C core under Python, or an abort in pyarrow's
C++, is a crash like any other.

``--jobs N`` fuzzes N targets at once (each in its own process); their lines still come
in the targets' order.

The exit status is 1 when any target crashed (or its fuzzer failed), else 0.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fuzz.targets import TARGETS, CTarget, PyTarget  # noqa: E402

FUZZ = REPO / "fuzz"
BUILD = REPO / "build" / "fuzz"
CORE_SOURCES = sorted(
    p for c in ("core", "footer", "paimon", "rows") for p in (REPO / "csrc" / c).glob("*.c")
)
C_FLAGS = [
    "-g",
    "-O1",
    "-std=c99",
    "-fsanitize=fuzzer,address,undefined",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
    f"-I{REPO / 'csrc' / 'include'}",
    f"-I{REPO / 'csrc' / 'vendor' / 'xxhash'}",
    f"-I{REPO / 'csrc' / 'core'}",
]
SAN_FLAGS = "-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=all"
SAN_PACKAGE = BUILD / "asan-package"
ARTIFACT_PREFIXES = ("crash-", "timeout-", "oom-", "leak-", "slow-unit-")
STATUS_RE = re.compile(
    r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+) corp: (\d+)/(\S+).*?(?:exec/s: (\d+))?"
)


@dataclass
class Result:
    """What one run of one target did."""

    target: str
    kind: str
    seconds: float
    executions: int = 0
    coverage: int = 0
    features: int = 0
    corpus: int = 0
    seeds: int = 0
    exit_code: int | None = None
    crashes: list[str] = field(default_factory=list)
    skipped: str | None = None
    log: str = ""

    @property
    def failed(self) -> bool:
        return self.skipped is None and (bool(self.crashes) or self.exit_code != 0)


def write_seeds(name: str) -> tuple[Path, int]:
    """Write the target's seeds afresh; returns the folder and the count."""
    folder = FUZZ / "seeds" / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    count = 0
    for label, data in TARGETS[name].seeds():
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", label)[:80]
        digest = hashlib.sha1(data).hexdigest()[:12]
        (folder / f"{safe}-{digest}").write_bytes(data)
        count += 1
    return folder, count


def build_c(t: CTarget) -> Path | None:
    """Build a C target with clang's libFuzzer; None (with a note) when that cannot work."""
    clang = shutil.which(os.environ.get("CLANG", "clang"))
    if clang is None:
        return None
    out = BUILD / t.name
    inputs = [t.source, *CORE_SOURCES, *(REPO / "csrc").rglob("*.h")]
    inputs += list(t.source.parent.glob("*.h"))
    if out.exists() and out.stat().st_mtime >= max(p.stat().st_mtime for p in inputs):
        return out
    BUILD.mkdir(parents=True, exist_ok=True)
    defines = [f"-D{d}" for d in t.defines]
    sources = [str(t.source), *map(str, CORE_SOURCES)]
    cmd = [clang, *C_FLAGS, *defines, "-o", str(out), *sources, "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        if "fuzzer" in proc.stderr and ("cannot find" in proc.stderr or "not found" in proc.stderr):
            return None  # clang without its libFuzzer runtime (libclang-rt-*-dev)
        raise SystemExit(f"building {t.name} failed:\n{' '.join(cmd)}\n{proc.stderr}")
    return out


_SANITIZED = threading.Lock()  # targets run at once share one sanitised build


def sanitized_package() -> tuple[Path, Path] | None:
    """This tree's package with its C core built by clang with ASan + UBSan, and atheris's
    ASan runtime to preload; None when clang or that runtime is missing.

    The Python files are copied on every run; the C core is built again when a C source
    is newer than it.
    """
    clang = shutil.which(os.environ.get("CLANG", "clang"))
    spec = importlib.util.find_spec("atheris")
    if clang is None or spec is None or spec.origin is None:
        return None
    runtime = Path(spec.origin).parent.parent / "asan_with_fuzzer.so"
    if not runtime.exists():
        return None
    with _SANITIZED:
        return _sanitized_build(runtime)


@functools.cache
def _sanitized_build(runtime: Path) -> tuple[Path, Path]:
    """:func:`sanitized_package`'s copy and build, once per run (never while a target runs
    from the copy)."""
    clang = shutil.which(os.environ.get("CLANG", "clang"))
    native = SAN_PACKAGE / "pybloom_async" / "_native"
    shutil.copytree(
        REPO / "pybloom_async",
        SAN_PACKAGE / "pybloom_async",
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("_cffi*.so", "__pycache__"),
    )
    built = list(native.glob("_cffi*.so"))
    inputs = [*CORE_SOURCES, *(REPO / "csrc").rglob("*.h"), REPO / "csrc" / "build_native.py"]
    newest = max(p.stat().st_mtime for p in inputs)
    if built and built[0].stat().st_mtime >= newest:
        return SAN_PACKAGE, runtime
    flags = f"{SAN_FLAGS} -fno-omit-frame-pointer -g -O1"
    env = dict(os.environ, CC=clang, PYBLOOM_ASYNC_CFLAGS=flags, PYBLOOM_ASYNC_LDFLAGS=SAN_FLAGS)
    command = [sys.executable, "setup.py", "-q", "build_ext", "--force"]
    command += ["--build-lib", str(SAN_PACKAGE), "--build-temp", str(BUILD / "asan-tmp")]
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"building the sanitised C core failed:\n{proc.stderr}")
    return SAN_PACKAGE, runtime


def sanitized_env(package: Path, runtime: Path) -> dict[str, str]:
    """The environment of a Python target run with the sanitised package."""
    env = dict(os.environ)
    env["LD_PRELOAD"] = str(runtime)
    # pyarrow's allocations are seen too: no leak report (the interpreter keeps objects to
    # its end), a small quarantine (RSS stays under the runner's limit).
    env["ASAN_OPTIONS"] = "detect_leaks=0:allocator_may_return_null=1:quarantine_size_mb=64"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1"
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(package), str(REPO), env.get("PYTHONPATH")) if p
    )
    env["PYBLOOM_ASYNC_EXPECT_NATIVE"] = str(package)
    return env


def parse_log(text: str, result: Result) -> None:
    """Fill executions and coverage from libFuzzer's status lines and final stats."""
    for line in text.splitlines():
        match = STATUS_RE.match(line)
        if match:
            result.executions = max(result.executions, int(match.group(1)))
            result.coverage = max(result.coverage, int(match.group(3)))
            result.features = max(result.features, int(match.group(4)))
            result.corpus = int(match.group(5))
        elif line.startswith("stat::number_of_executed_units:"):
            result.executions = max(result.executions, int(line.split(":")[-1]))


def run_target(name: str, seconds: int, args: argparse.Namespace) -> Result:
    """Fuzz one target for ``seconds``; returns its figures."""
    t = TARGETS[name]
    result = Result(name, t.kind, float(seconds))
    env: dict[str, str] | None = None  # None: this process's
    if isinstance(t, CTarget):
        binary = build_c(t)
        if binary is None:
            result.skipped = "clang with libFuzzer not found (scripts/install-system-deps.sh)"
            return result
        command = [str(binary)]
    else:
        assert isinstance(t, PyTarget)
        command = [sys.executable, str(FUZZ / "harness.py"), name]
        if t.sanitized or args.sanitize:
            found = sanitized_package()
            if found is None:
                result.skipped = "clang or atheris's ASan runtime not found (sanitised run)"
                return result
            env = sanitized_env(*found)
    seeds, result.seeds = write_seeds(name)
    corpus = FUZZ / "corpus" / name
    artifacts = FUZZ / "artifacts" / name
    logs = FUZZ / "logs"
    for folder in (corpus, artifacts, logs):
        folder.mkdir(parents=True, exist_ok=True)
    before = set(os.listdir(artifacts))
    flags = [
        f"-max_total_time={seconds}",
        f"-timeout={args.timeout}",
        f"-rss_limit_mb={args.rss_limit_mb}",
        f"-max_len={t.max_len}",
        f"-artifact_prefix={artifacts}/",
        "-print_final_stats=1",
    ]
    if args.seed is not None:
        flags.append(f"-seed={args.seed}")
    if isinstance(t, CTarget):
        # Under ASan every allocation is seen: none may exceed this (the C core's largest
        # legitimate allocation in these harnesses is a few KiB).
        flags.append("-malloc_limit_mb=64")
    log_path = logs / f"{name}.log"
    started = time.monotonic()
    with log_path.open("w") as log:
        proc = subprocess.run(
            [*command, *flags, str(corpus), str(seeds)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=env,
            check=False,
            # A hung harness must not hang CI: libFuzzer stops itself at max_total_time,
            # this is the backstop.
            timeout=seconds + 300,
        )
    result.seconds = round(time.monotonic() - started, 1)
    result.exit_code = proc.returncode
    result.log = str(log_path.relative_to(REPO))
    text = log_path.read_text(errors="replace")
    parse_log(text, result)
    result.corpus = len(os.listdir(corpus)) or result.corpus
    result.crashes = sorted(
        str((artifacts / f).relative_to(REPO))
        for f in set(os.listdir(artifacts)) - before
        if f.startswith(ARTIFACT_PREFIXES)
    )
    return result


def _report(result: Result) -> None:
    """One target's line (and its crashes, or the fuzzer's exit)."""
    name = result.target
    if result.skipped:
        print(f"{name:18} skipped: {result.skipped}", flush=True)
        return
    state = "CRASH" if result.failed else "ok"
    print(
        f"{name:18} {state:5} {result.executions:>10} execs  cov {result.coverage:>5}  "
        f"ft {result.features:>6}  corpus {result.corpus:>5}  {result.seconds:>6.0f} s"
        + "".join(f"\n{'':18} crash input: {c}" for c in result.crashes)
        + (
            f"\n{'':18} fuzzer exit {result.exit_code}, see {result.log}"
            if result.exit_code != 0
            else ""
        ),
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="all", help="a target name, or 'all'")
    parser.add_argument("--seconds", type=int, default=60, help="fuzzing time per target")
    parser.add_argument("--timeout", type=int, default=20, help="seconds one input may take")
    parser.add_argument("--rss-limit-mb", type=int, default=2048)
    parser.add_argument(
        "--seed",
        type=int,
        help="libFuzzer's random seed (default: a new one each run); CI's smoke run fixes it",
    )
    parser.add_argument(
        "--sanitize",
        action="store_true",
        help="run every Python target with the C core built with ASan + UBSan",
    )
    parser.add_argument("--jobs", type=int, default=1, help="targets fuzzed at once")
    parser.add_argument("--summary", type=Path, help="write the results as JSON here")
    parser.add_argument("--list", action="store_true", help="list the targets and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name, t in TARGETS.items():
            print(f"{name:20} {t.kind}")
        return 0
    names = list(TARGETS) if args.target == "all" else args.target.split(",")
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; try --list")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    results = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        # In the targets' order, each line as soon as it and those before it are done.
        for result in pool.map(lambda name: run_target(name, args.seconds, args), names):
            results.append(result)
            _report(result)
    if args.summary:
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        args.summary.write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    return 1 if any(r.failed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
