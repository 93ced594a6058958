# bench/peers.mk: benchmark peers (Apache Arrow C++, parquet-java, plain Python).
#
# Included from the top-level Makefile (`include bench/peers.mk`); paths are
# relative to the repository root. Builds go to bench/bin/ (gitignored). The
# C++ peer links the libparquet/libarrow of the pyarrow wheel, the Java peer the
# parquet jars shipped with pyspark: both found through $(PYTHON), nothing
# downloaded. Every peer prints lines such as
#   peer=arrow op=probe size=1048576 n=4194304 reps=7 ns_per_elem=7.21 ns_min=7.02 hit_rate=0.5064
# (ns_per_elem is the median over the repetitions, ns_min the fastest one).
#
#   make peers                 build the C++ and Java harnesses
#   make bench-peers           run all three peers (about 1.5 min of the Arrow and
#                              Java peers, 1 min of Python)
#   make bench-peers-arrow PEERS_ARGS="--sizes 1048576 --reps 11"

PYTHON ?= .venv/bin/python
JAVA ?= java
JAVAC ?= javac
PEERS_BIN ?= bench/bin
PEERS_ARGS ?=
PEERS_PY_ARGS ?=
PEERS_CXXFLAGS ?= -std=c++20 -O2 -Wall -Wextra -Wpedantic
PEERS_JAVA_OPTS ?= -Xms2g -Xmx6g

# Evaluated once, and only when a peer target needs them (plain `make test`
# never pays for the lookups). find_spec avoids importing the packages.
PEERS_FIND = import importlib.util as u, os; s = u.find_spec("$(1)"); \
  print(os.path.dirname(s.origin) if s else "")
PEERS_PYARROW_DIR = $(eval PEERS_PYARROW_DIR := \
  $(shell $(PYTHON) -c '$(call PEERS_FIND,pyarrow)' 2>/dev/null))$(PEERS_PYARROW_DIR)
PEERS_PYSPARK_DIR = $(eval PEERS_PYSPARK_DIR := \
  $(shell $(PYTHON) -c '$(call PEERS_FIND,pyspark)' 2>/dev/null))$(PEERS_PYSPARK_DIR)
PEERS_SPARK_JARS = $(PEERS_PYSPARK_DIR)/jars

PEERS_ARROW_BIN := $(PEERS_BIN)/arrow_sbbf_bench
PEERS_JAVA_CLASSES := $(PEERS_BIN)/java
PEERS_JAVA_STAMP := $(PEERS_JAVA_CLASSES)/JavaSbbfBench.class

.PHONY: peers bench-peers bench-peers-arrow bench-peers-java bench-peers-python peers-clean

peers: $(PEERS_ARROW_BIN) $(PEERS_JAVA_STAMP)

# Arrow 26's headers need C++20 (std::bit_width); the wheel uses the C++11 ABI,
# g++'s default. -isystem keeps Arrow's own headers out of our warnings.
$(PEERS_ARROW_BIN): bench/peers/arrow_sbbf_bench.cc
	@test -n "$(PEERS_PYARROW_DIR)" || { echo "$(PYTHON) finds no pyarrow" >&2; exit 1; }
	mkdir -p $(@D)
	$(CXX) $(PEERS_CXXFLAGS) -isystem $(PEERS_PYARROW_DIR)/include -o $@ $< \
	  -L$(PEERS_PYARROW_DIR) -l:libparquet.so.2600 -l:libarrow.so.2600 \
	  -Wl,-rpath,$(PEERS_PYARROW_DIR)

# -Xlint:-path: some pyspark jars list absent jars in their manifest Class-Path.
$(PEERS_JAVA_STAMP): bench/peers/JavaSbbfBench.java
	@test -n "$(PEERS_PYSPARK_DIR)" || { echo "$(PYTHON) finds no pyspark" >&2; exit 1; }
	mkdir -p $(PEERS_JAVA_CLASSES)
	$(JAVAC) -Xlint:all,-path -Werror -cp '$(PEERS_SPARK_JARS)/*' -d $(PEERS_JAVA_CLASSES) $<

bench-peers: bench-peers-arrow bench-peers-java bench-peers-python

bench-peers-arrow: $(PEERS_ARROW_BIN)
	$(PEERS_ARROW_BIN) $(PEERS_ARGS)

bench-peers-java: $(PEERS_JAVA_STAMP)
	$(JAVA) $(PEERS_JAVA_OPTS) -cp '$(PEERS_JAVA_CLASSES):$(PEERS_SPARK_JARS)/*' \
	  JavaSbbfBench $(PEERS_ARGS)

bench-peers-python:
	$(PYTHON) bench/peers/python_sbbf_bench.py $(PEERS_PY_ARGS)

peers-clean:
	rm -rf $(PEERS_ARROW_BIN) $(PEERS_JAVA_CLASSES)
