"""pyiceberg's SQL catalog on SQLite in a test's folder, for the Iceberg tests.

The catalog's database is ``root / "catalog.db"`` and its warehouse ``root / warehouse``;
its namespace ``ns`` exists once the catalog is returned (opened again, the same catalog).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyiceberg.catalog.sql import SqlCatalog


def sql_catalog(root: Path, name: str = "test", warehouse: str = "wh") -> Any:
    """The catalog ``name`` kept under ``root``, with the namespace ``ns``."""
    catalog = SqlCatalog(
        name, uri=f"sqlite:///{root / 'catalog.db'}", warehouse=(root / warehouse).as_uri()
    )
    if ("ns",) not in catalog.list_namespaces():
        catalog.create_namespace("ns")
    return catalog
