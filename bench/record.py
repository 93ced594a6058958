"""Machine-readable benchmark results: JSON files in ``bench/results/``, with where and when.

Each file holds one run of one benchmark: what was measured (``kind``), the command, the
machine (CPU model, cores, Python), the UTC date, the load average at the start and at the
end of the run (the machine may be shared: read ratios within one file, not absolute figures
across files), and the figures themselves. ``bench/charts.py`` draws its charts from these
files only.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def cpu_model() -> str:
    """The CPU's model name (``lscpu``), else what ``platform`` knows."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as one string."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


PACKAGE = Path(__file__).resolve().parent.parent / "pybloom_async"


def installed_bytecode() -> None:
    """Write the package's bytecode (``__pycache__``), as installing it does (pip compiles
    what it installs). A process timed from its start would otherwise compile, inside the
    clock, every module it imports and finds no bytecode for: all of them in a fresh clone,
    and always where ``PYTHONDONTWRITEBYTECODE`` is set (as on the project's machines),
    which no engine compared with pays. Bytecode is read whatever that variable says."""
    import compileall

    compileall.compile_dir(PACKAGE, quiet=1)


class Recorder:
    """Collects one run's figures and writes them as JSON; started when the run starts
    (with the package's bytecode written first: :func:`installed_bytecode`)."""

    def __init__(self, kind: str, **settings: Any) -> None:
        installed_bytecode()
        self.kind = kind
        self.settings = settings
        self.started = datetime.datetime.now(datetime.timezone.utc)
        self.load_start = load_average()

    def write(self, path: Path, results: Any) -> Path:
        """Write ``results`` with the run's context to ``path`` (folders made as needed)."""
        doc = {
            "kind": self.kind,
            "date": self.started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
            "machine": {
                "cpu": cpu_model(),
                "cores": os.cpu_count(),
                "system": f"{platform.system()} {platform.release()}",
                "python": platform.python_version(),
            },
            "load_average": {"start": self.load_start, "end": load_average()},
            "settings": self.settings,
            "results": results,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1) + "\n")
        return path
