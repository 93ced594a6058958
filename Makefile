# pybloom-async: the two quick-start commands are `make demo` and `make test`.
# Both set up what they need first, so they work on a fresh machine: `make demo`
# only the package with its runtime extras, the codec libraries the C build links (apt,
# optional) and the C build; `make test` adds the
# test tools (pytest, PySpark, moto, mypy, atheris, ...), the documentation tools
# (the `docs` extra) and the system packages the tests use (apt packages, npm tools).

PYTHON_BOOT ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# The runtime install (the demo's) and the test install on top of it.
RUNTIME_STAMP := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed
NATIVE_SRC := $(wildcard csrc/*/*.[ch] csrc/include/*.h) csrc/build_native.py
PYTEST_ARGS ?=
# pytest-xdist workers for make test's three passes: one per core, at most 4 (each worker
# starts its own servers and Spark session). TEST_JOBS=0 runs in this process.
TEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)
DEMO_ARGS ?=

.PHONY: setup setup-runtime native demo test test-fast lint typecheck docs asan fuzz fuzz-smoke differential bench bench-c bench-stripe charts clean bench-lookup-env

SYSTEM_STAMP := .cache/system-deps.stamp
BUILD_DEPS_STAMP := .cache/build-deps.stamp

setup: $(SYSTEM_STAMP) $(STAMP) native

setup-runtime: $(RUNTIME_STAMP) pybloom_async/.native-stamp

# The codec libraries the C build links when it finds them (optional: without them pyarrow
# decompresses those pages in Python). Both `make demo` and `make test` install them.
$(BUILD_DEPS_STAMP): scripts/install-build-deps.sh
	bash scripts/install-build-deps.sh
	mkdir -p .cache && touch $@

# Debian packages and npm tools the tests use (nginx, Java, azurite).
$(SYSTEM_STAMP): scripts/install-system-deps.sh
	bash scripts/install-system-deps.sh
	mkdir -p .cache && touch $@

# pip runs quietly with its log in a file, printed only when it fails (pip
# also prints a WARNING per package index it cannot reach, noise on success).
QUIET_PIP = log=$$(mktemp) && \
	if $(PIP) install --quiet --disable-pip-version-check $(1) >"$$log" 2>&1; \
	then rm -f "$$log"; else cat "$$log" >&2; rm -f "$$log"; exit 1; fi

$(RUNTIME_STAMP): pyproject.toml setup.py | $(BUILD_DEPS_STAMP)
	@echo "setting up $(VENV): the package and its runtime extras (pip's log shows on failure)"
	@test -x $(PY) || $(PYTHON_BOOT) -m venv $(VENV)
	@$(call QUIET_PIP,--upgrade pip setuptools wheel)
	@$(call QUIET_PIP,-e '.[arrow]')
	@touch $@

# (A comma inside $(call ...) would split its argument, hence the variable.)
comma := ,

# The documentation tools alone on top of the runtime install (make docs): the site needs
# neither the test toolchain nor the C build (mkdocstrings reads the sources).
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): $(RUNTIME_STAMP)
	@echo "adding the documentation tools to $(VENV) (pip's log shows on failure)"
	@$(call QUIET_PIP,-e '.[arrow$(comma)docs]')
	@touch $@

$(STAMP): $(RUNTIME_STAMP)
	@echo "adding the test and documentation tools to $(VENV) (pip's log shows on failure)"
	@$(call QUIET_PIP,-e '.[arrow$(comma)test$(comma)docs]')
	@touch $@

# The compiled module lands inside the package (editable install); `flock`
# keeps concurrent rebuilds from tripping over one build directory; `--force`
# rebuilds every C file, since setuptools does not see a change to a header.
native: $(STAMP) pybloom_async/.native-stamp

pybloom_async/.native-stamp: $(NATIVE_SRC) $(BUILD_DEPS_STAMP) | $(RUNTIME_STAMP)
	flock .build.lock $(PY) setup.py -q build_ext --inplace --force
	@touch $@

# The main job on generated local files; keep them with DEMO_ARGS="--dir DIR".
demo: setup-runtime
	@$(PY) -m pybloom_async.apps.demo $(DEMO_ARGS)

# The whole suite; the tests of the code that calls the SIMD kernels again with the
# portable scalar kernels forced (SCALAR_TESTS: the core's own, which also compare the two
# backends in one process, and the pruners, indexes and reader that probe, insert and hash
# through them, and the differential test; every kernel entry point is reached there, and
# the rest of the suite reaches the same ones through these); the unit, robustness and
# property tests against an ASan+UBSan build of the core; then the static checks, a short
# fuzzing run and the documentation site.
SCALAR_TESTS ?= tests/unit/core tests/unit/pruning tests/unit/lake tests/unit/index tests/unit/read tests/property
test: setup
	$(PY) -m pytest -n $(TEST_JOBS) $(PYTEST_ARGS)
	PYBLOOM_ASYNC_SIMD=scalar $(PY) -m pytest -n $(TEST_JOBS) -m "not slow and not spark" $(SCALAR_TESTS) $(PYTEST_ARGS)
	$(MAKE) --no-print-directory asan ASAN_PYTEST_ARGS='-m "not spark and not slow" -n $(TEST_JOBS)'
	$(MAKE) --no-print-directory lint typecheck fuzz-smoke docs

test-fast: setup
	$(PY) -m pytest -m "not slow and not spark" -x $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check pybloom_async tests bench fuzz csrc/build_native.py
	$(VENV)/bin/ruff format --check pybloom_async tests bench fuzz csrc/build_native.py

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# The documentation site (MkDocs Material; the API reference from the docstrings by
# mkdocstrings, which imports the package: hence the C build) into site/, gitignored.
# --strict: a broken link or anchor, a page left out of the nav, or an API reference entry
# naming nothing fails the build. (No --quiet: it would hide the warnings --strict counts.)
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean:
	rm -rf build dist site *.egg-info pybloom_async/_native/_cffi*.so pybloom_async/_native/_cffi.c pybloom_async/.native-stamp bench/bin

# ---- benchmarks (never run as tests) ----------------------------------------
# The documentation's charts (docs/img/*.png), drawn from the JSON the benchmarks write
# into bench/results/ (each file says which command writes it).
CHARTS_STAMP := $(VENV)/.installed-charts

$(CHARTS_STAMP): $(RUNTIME_STAMP)
	@echo "adding matplotlib to $(VENV) (pip's log shows on failure)"
	@$(call QUIET_PIP,-e '.[arrow$(comma)charts]')
	@touch $@

charts: $(CHARTS_STAMP)
	$(PY) bench/charts.py

CC ?= cc
CORE_C := $(wildcard csrc/core/*.c csrc/paimon/*.c)
CORE_CFLAGS := -std=c99 -O3 -Wall -Wextra -Icsrc/include -Icsrc/vendor/xxhash -Icsrc/core

bench/bin/bench_sbbf: bench/bench_sbbf.c bench/bench_util.h $(CORE_C) $(wildcard csrc/core/*.h csrc/include/*.h)
	mkdir -p bench/bin
	$(CC) $(CORE_CFLAGS) -o $@ bench/bench_sbbf.c $(CORE_C) -lm

bench-c: bench/bin/bench_sbbf
	bench/bin/bench_sbbf

# The block-major stripe kernel (ns per file, N = 1,000 and 100,000, both backends).
bench/bin/bench_stripe: bench/bench_stripe.c bench/bench_util.h $(CORE_C) $(wildcard csrc/core/*.h csrc/include/*.h)
	mkdir -p bench/bin
	$(CC) $(CORE_CFLAGS) -o $@ bench/bench_stripe.c $(CORE_C) -lm

bench-stripe: bench/bin/bench_stripe
	bench/bin/bench_stripe

# DuckDB for bench/bench_lookup.py: its S3 reader (httpfs) is an extension that DuckDB
# downloads from extensions.duckdb.org, which is not reachable here; PyPI ships it only for
# DuckDB 1.4.x (duckdb-ext-httpfs), so the engine runs in a venv of its own, as a worker.
LOOKUP_DUCKDB_VENV := bench/.venv-duckdb

$(LOOKUP_DUCKDB_VENV)/.installed:
	$(PYTHON_BOOT) -m venv $(LOOKUP_DUCKDB_VENV)
	$(LOOKUP_DUCKDB_VENV)/bin/pip install --quiet --disable-pip-version-check \
		duckdb==1.4.4 duckdb-ext-httpfs==1.4.4.20260205
	@touch $@

bench-lookup-env: $(LOOKUP_DUCKDB_VENV)/.installed

# Peers measured side by side: Arrow C++, parquet-java, plain Python.
include bench/peers.mk

# ---- fuzzing --------------------------------------------------------------------
# Coverage-guided fuzzing of every parser of untrusted bytes (fuzz/targets.py):
# atheris for the Python targets, clang's libFuzzer with ASan + UBSan for the C
# ones (skipped with a note when clang is missing). Seeds come from the
# parquet-testing files; corpora, crash inputs and logs stay in gitignored
# fuzz/ folders. fuzz-smoke is the bounded run for CI (exit 1 on any crash), with a
# fixed seed so that a red CI run means a change broke something, not that the dice
# found an old bug; fuzz is the long exploring one (a new seed each run), niced.
# Figures: fuzz/RESULTS.md.
FUZZ_SMOKE_SECONDS ?= 10
FUZZ_SMOKE_SEED ?= 1
FUZZ_SECONDS ?= 900

fuzz-smoke: setup
	$(PY) fuzz/run.py --target all --seconds $(FUZZ_SMOKE_SECONDS) --seed $(FUZZ_SMOKE_SEED) --jobs $(TEST_JOBS)

fuzz: setup
	nice -n 10 $(PY) fuzz/run.py --target all --seconds $(FUZZ_SECONDS) --summary fuzz/logs/summary.json

# ---- differential test --------------------------------------------------------
# Seeded random lakes through every entry point against a full-scan oracle. The
# suite runs a bounded number of seeds (tests/property/test_differential.py); this
# runs it for DIFF_MINUTES from DIFF_SEED, niced, and prints the failures shrunk to
# standalone reproductions. DIFF_ARGS=--look-for-known also opens the known-bug gates.
DIFF_MINUTES ?= 10
DIFF_SEED ?= 0

differential: setup
	nice -n 10 $(PY) tests/property/run_long.py --minutes $(DIFF_MINUTES) --seed-start $(DIFF_SEED) $(DIFF_ARGS)

# ---- sanitizers ---------------------------------------------------------------
# The C core built with ASan + UBSan (no recovery: the first report fails the
# run), loaded into the normal interpreter with the runtimes preloaded, runs
# the test suite but the slow (robustness at scale, the same calls many times) and
# Spark-marked tests (ASAN_PYTEST_ARGS): the JVM
# that PySpark launches inherits the preloaded ASan runtime and its gateway never
# comes up (the session fixture times out; measured with OpenJDK 17). The C core
# never runs inside the JVM, and the Spark tests' Python side calls the functions
# the rest of the suite covers under the sanitisers. conftest.py checks the
# sanitised module is the one imported, so this target cannot pass by testing
# the normal build. Subprocesses (the CLI, the servers) inherit the
# preload; leak detection is off (CPython does not free everything at exit).
# Narrow a run with e.g. `make asan ASAN_TESTS=tests/unit/core/test_filter.py`.
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1
ASAN_TESTS ?= tests/unit tests/robustness tests/property
ASAN_PYTEST_ARGS ?= -m "not spark and not slow"

asan: $(STAMP)
	rm -rf build/asan build/asan-tmp
	mkdir -p build/asan
	cp -r pybloom_async build/asan/
	rm -f build/asan/pybloom_async/_native/_cffi*.so
	PYBLOOM_ASYNC_CFLAGS="$(SAN_FLAGS)" PYBLOOM_ASYNC_LDFLAGS="-fsanitize=address,undefined" \
		$(PY) setup.py -q build_ext --force --build-lib build/asan --build-temp build/asan-tmp
	@# The module under test must be the instrumented one, not a copy of the normal build.
	nm -D build/asan/pybloom_async/_native/_cffi*.so | grep -q __asan_init
	cd build/asan && \
		LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)" \
		ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		PYBLOOM_ASYNC_EXPECT_NATIVE="$(CURDIR)/build/asan" \
		$(abspath $(PY)) -m pytest -p no:cacheprovider --rootdir $(CURDIR) -c $(CURDIR)/pyproject.toml \
		$(addprefix $(CURDIR)/,$(ASAN_TESTS)) $(ASAN_PYTEST_ARGS) -q
