"""Coverage-guided fuzzing of pybloom-async's parsers of untrusted bytes.

``fuzz/targets.py`` registers the targets (Python ones run under atheris, C ones under
libFuzzer), ``fuzz/seeds.py`` builds their seed corpora from the parquet-testing files at
run time, and ``fuzz/run.py`` runs one or all of them for a bounded time::

    .venv/bin/python fuzz/run.py --target footer --seconds 60
    .venv/bin/python fuzz/run.py --target all --seconds 45      # what `make fuzz-smoke` runs

Corpora, seeds and crash artifacts live in gitignored directories under ``fuzz/``.
"""
