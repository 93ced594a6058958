"""Pruning Apache Paimon data files by their file-index containers, from files and the CLI."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from test_paimon import container_types, probe_value

from pybloom_async import Eq, PredicateError, Rule, col, prune_paimon_sync
from pybloom_async.apps.cli import main


@pytest.fixture(scope="module")
def vectors(paimon_testdata: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((paimon_testdata / "vectors.json").read_text())
    return data


def write_containers(tmp_path: Path, vectors: dict[str, Any]) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for f in vectors["files"]:
        data_file = tmp_path / f"{f['id']}.parquet"
        (tmp_path / f"{f['id']}.parquet.index").write_bytes(bytes.fromhex(f["hex"]))
        out.append((data_file, f))
    return out


def test_every_recorded_probe_through_prune(tmp_path: Path, vectors: dict[str, Any]) -> None:
    for data_file, f in write_containers(tmp_path, vectors):
        types = container_types(f)
        for probe in f["probes"]:
            value = probe_value(types, probe)
            (v,) = prune_paimon_sync([data_file], Eq(probe["column"], value), types)
            assert v.kept is probe["reader_result"], (f["id"], probe, v.reason)
            assert v.row_group is None and v.reason
            if not v.kept:
                assert v.rule is Rule.BLOOM_FILTER
            # The same answer from the manifest-embedded bytes.
            (e,) = prune_paimon_sync(
                ["elsewhere/x.orc"], Eq(probe["column"], value), types,
                embedded={"elsewhere/x.orc": bytes.fromhex(f["hex"])},
            )  # fmt: skip
            assert e.kept is v.kept


def test_and_or_text_and_missing_index(tmp_path: Path, vectors: dict[str, Any]) -> None:
    (data_file, f), _ = write_containers(tmp_path, vectors)
    types = container_types(f)
    present = [probe_value(types, p) for p in f["probes"] if p["column"] == "id"
               and p["reader_result"]]  # fmt: skip
    absent = [probe_value(types, p) for p in f["probes"] if p["column"] == "name"
              and not p["reader_result"]]  # fmt: skip
    assert present and absent
    (v,) = prune_paimon_sync([data_file], (col("id") == present[0]) & (col("name") == absent[0]),
                             types)  # fmt: skip
    assert not v.kept
    (v,) = prune_paimon_sync([data_file], (col("id") == present[0]) | (col("name") == absent[0]),
                             types)  # fmt: skip
    assert v.kept
    (v,) = prune_paimon_sync([data_file], f"id IN ({present[0]}, {present[-1]})", types)
    assert v.kept
    # Ranges and negations: the index cannot rule a file out, the = beside them still can.
    absent_name = col("name") == absent[0]
    for where in (col("id") > present[0], col("name") != absent[0], ~(col("id") < 0)):
        (v,) = prune_paimon_sync([data_file], where, types)
        assert v.kept and v.rule is Rule.NEVER_PRUNES, where
        (v,) = prune_paimon_sync([data_file], where & absent_name, types)
        assert not v.kept and v.rule is Rule.BLOOM_FILTER, where
        (v,) = prune_paimon_sync([data_file], where | absent_name, types)
        assert v.kept, where
    with pytest.raises(PredicateError, match="is not a"):
        prune_paimon_sync([data_file], col("id") > b"\x01", types)
    missing = tmp_path / "no_index.parquet"
    (v,) = prune_paimon_sync([missing], col("id") == 1, types)
    assert v.kept and v.rule is Rule.NO_FILTER
    with pytest.raises(PredicateError, match="no Paimon type"):
        prune_paimon_sync([data_file], col("zzz") == 1, types)


def test_damaged_container_keeps_the_file(tmp_path: Path) -> None:
    data_file = tmp_path / "d.orc"
    (tmp_path / "d.orc.index").write_bytes(b"\x00\x05NN\xd0\x1a5\xae" + b"\xff" * 20)
    (v,) = prune_paimon_sync([data_file], col("id") == 1, {"id": "INT"})
    assert v.kept and v.reason
    with pytest.raises(Exception, match=r"Paimon|index|truncated|version"):
        prune_paimon_sync([data_file], col("id") == 1, {"id": "INT"}, on_error="raise")


def test_cli_inspect_probe_prune(tmp_path: Path, vectors: dict[str, Any]) -> None:
    (data_file, f), _ = write_containers(tmp_path, vectors)
    out = io.StringIO()
    assert main(["inspect", f"{data_file}.index", "--json"], out=out) == 0
    rows = json.loads(out.getvalue())
    assert {r["column"] for r in rows} == {c["name"] for c in f["columns"]}
    assert all(r["num_bits"] > 0 for r in rows)
    probes = [p for p in f["probes"] if p["column"] == "id"]
    out = io.StringIO()
    argv = ["probe", str(data_file), "--column", "id", "--paimon-type", "INT", "--json"]
    for p in probes:
        argv += ["--value", str(p["value"]["int"])]
    assert main(argv, out=out) == 0
    got = [r["kept"] for r in json.loads(out.getvalue())]
    assert got == [p["reader_result"] for p in probes]
    out = io.StringIO()
    code = main(["prune", str(data_file), "--where", f"id = {probes[0]['value']['int']}",
                 "--paimon-types", "id=INT", "--json"], out=out)  # fmt: skip
    assert code == 0 and json.loads(out.getvalue())[0]["kept"] is probes[0]["reader_result"]
