"""The archive's export (issue 34, ``kernelcup archive export --out DIR``): Parquet files of the published entries
and a manifest, the same bytes for the same database (``docs/archive.md`` documents the schema).

Reproducible on purpose: rows come in a fixed order (submission id, device, case index), every column has a fixed
type, nested values (a case's parameters) are JSON with sorted keys, the files carry no time of export, and the
Parquet writer's options are pinned here. The bytes then depend only on the database and the pyarrow version (which
the writer records in each file, as ``created_by``).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from leaderboards.archive import SYSTEM_FIELDS, ArchiveEntry

FORMAT_VERSION = 1
"""The export's schema version (the manifest's ``format_version``); raised when a column changes."""
ENTRIES_FILE = "entries.parquet"
CASES_FILE = "cases.parquet"
MANIFEST_FILE = "manifest.json"

ENTRIES_SCHEMA = pa.schema(
    [
        ("submission_id", pa.int64()),
        ("device", pa.string()),
        ("leaderboard", pa.string()),
        ("problem", pa.string()),
        ("fingerprint", pa.string()),
        ("language", pa.string()),
        ("file_name", pa.string()),
        ("code", pa.large_string()),
        ("licence", pa.string()),
        ("author", pa.string()),
        ("submitted_at", pa.timestamp("us", tz="UTC")),
        ("mode", pa.string()),
        ("verdict", pa.string()),
        ("passed", pa.bool_()),
        ("score_ns", pa.float64()),
        ("speedup", pa.float64()),
        ("roofline_share", pa.float64()),
        ("near_copy_of", pa.int64()),
        ("similarity", pa.float64()),
        *((f"system_{name}", pa.int64() if name == "gpu_count" else pa.string()) for name in SYSTEM_FIELDS),
    ]
)
CASES_SCHEMA = pa.schema(
    [
        ("submission_id", pa.int64()),
        ("device", pa.string()),
        ("case_index", pa.int64()),
        ("case", pa.string()),
        ("verdict", pa.string()),
        ("median_ns", pa.float64()),
        ("p25_ns", pa.float64()),
        ("p75_ns", pa.float64()),
        ("min_ns", pa.float64()),
        ("samples", pa.int64()),
        ("roofline_share", pa.float64()),
        ("speedup", pa.float64()),
    ]
)


@dataclass(frozen=True)
class ExportSummary:
    directory: Path
    entries: int
    cases: int
    manifest: dict[str, Any]


def _entry_row(e: ArchiveEntry) -> dict[str, Any]:
    row: dict[str, Any] = {name: getattr(e, name) for name in ENTRIES_SCHEMA.names if not name.startswith("system_")}
    for name in SYSTEM_FIELDS:
        value = e.system.get(name)
        row[f"system_{name}"] = value if name == "gpu_count" or value is None else str(value)
    return row


def _case_rows(e: ArchiveEntry) -> Iterable[dict[str, Any]]:
    for c in e.cases:
        yield {
            "submission_id": e.submission_id,
            "device": e.device,
            "case_index": c.index,
            "case": json.dumps(c.case, sort_keys=True, separators=(",", ":")),
            "verdict": c.verdict,
            "median_ns": c.median_ns,
            "p25_ns": c.p25_ns,
            "p75_ns": c.p75_ns,
            "min_ns": c.min_ns,
            "samples": c.samples,
            "roofline_share": c.roofline_share,
            "speedup": c.speedup,
        }


def _write(rows: list[dict[str, Any]], schema: pa.Schema, path: Path) -> dict[str, Any]:
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(
        table,
        path,
        compression="zstd",
        compression_level=9,
        use_dictionary=True,
        write_statistics=True,
        data_page_version="2.0",
        version="2.6",
    )
    data = path.read_bytes()
    return {"rows": table.num_rows, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def export_archive(entries: Iterable[ArchiveEntry], out: Path) -> ExportSummary:
    """Write ``entries`` (in the order given: ``LeaderboardService.archive_all``'s) to ``out`` as Parquet files and a
    manifest (counts, licences, each file's rows, size and SHA-256). Files of an earlier export there are replaced."""
    out.mkdir(parents=True, exist_ok=True)
    listed = sorted(entries, key=lambda e: (e.submission_id, e.device))
    entry_rows = [_entry_row(e) for e in listed]
    case_rows = [row for e in listed for row in _case_rows(e)]
    files = {
        ENTRIES_FILE: _write(entry_rows, ENTRIES_SCHEMA, out / ENTRIES_FILE),
        CASES_FILE: _write(case_rows, CASES_SCHEMA, out / CASES_FILE),
    }
    manifest = {
        "format_version": FORMAT_VERSION,
        "entries": len(entry_rows),
        "cases": len(case_rows),
        "licences": dict(sorted(Counter(e.licence for e in listed).items())),
        "problems": sorted({e.problem for e in listed}),
        "files": files,
        "writer": f"pyarrow {pa.__version__}",
    }
    (out / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return ExportSummary(out, len(entry_rows), len(case_rows), manifest)
