"""Finished results waiting to be stored: kept on local disk until the database has them.

A worker writes each finished run here before it stores it and removes the file once the database has it (or has
told it the job is no longer its own). If the database is down when a run finishes, the result stays in memory
and on disk; a worker started again on this machine stores what a killed or stopped one left behind, under that
claim's lease token, so the fence decides as it would have: stored if nobody took the job over meanwhile.

One JSON file per run: ``<job id>-<public|secret>-<token hash>.json`` (a compare job's comparison:
``<job id>-compare-<token hash>.json``), written to a temporary name and renamed, so a reader never sees half a
file. Where the folder cannot be written, the worker goes on with memory only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from pydantic import ValidationError

from leaderboards.queue import Claim
from runners.contract import Comparison, RunResult

log = logging.getLogger(__name__)

PARTIAL_AGE_S = 600.0
"""How old a temporary file of an unfinished write must be before a worker's start removes it (a fault campaign found
them left forever by a process killed between its write and its rename)."""


@dataclass(frozen=True)
class Spooled:
    """One result on disk: the claim it was produced under, which run, whether it was the job's last, the file. A
    compare job's is its comparison (always the job's last)."""

    claim: Claim
    secret: bool
    final: bool
    result: RunResult | Comparison
    path: Path


class ResultSpool:
    """A folder of results not yet stored. Every method is safe to call when the folder cannot be used."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._warned = False

    def _usable(self) -> bool:
        if self.directory is None:
            return False
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            if not self._warned:
                log.warning(
                    "result spool %s is not usable (%s); unstored results are kept in memory only", self.directory, exc
                )
                self._warned = True
            return False
        return True

    def put(self, claim: Claim, secret: bool, final: bool, result: RunResult | Comparison) -> Path | None:
        """Write a finished result (or a compare job's comparison); its path, or None where the folder cannot be
        written."""
        if not self._usable():
            return None
        assert self.directory is not None
        token = hashlib.sha256(claim.owner.encode()).hexdigest()[:16]
        compare = isinstance(result, Comparison)
        which = "compare" if compare else "secret" if secret else "public"
        path = self.directory / f"{claim.job_id}-{which}-{token}.json"
        claim_data = {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in asdict(claim).items()}
        data = {"claim": claim_data, "secret": secret, "final": final or compare,
                "comparison" if compare else "result": result.model_dump(mode="json")}  # fmt: skip
        try:
            fd, tmp = tempfile.mkstemp(prefix=".spool-", dir=self.directory)
            with os.fdopen(fd, "w") as f:
                json.dump(data, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("could not spool the result of job %s (%s); it is kept in memory only", claim.job_id, exc)
            with contextlib.suppress(OSError, UnboundLocalError):
                os.unlink(tmp)
            return None
        return path

    def remove(self, path: Path | None) -> None:
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()

    def _sweep_partial(self) -> None:
        """Remove the temporary files of writes that never finished (a process killed between writing and renaming:
        nothing of them was complete), once ``PARTIAL_AGE_S`` old, so that a worker writing one now keeps its own."""
        assert self.directory is not None
        now = time.time()
        for path in self.directory.glob(".spool-*"):
            with contextlib.suppress(OSError):
                if now - path.stat().st_mtime > PARTIAL_AGE_S:
                    path.unlink()
                    log.info("removed the unfinished spool write %s", path.name)

    def pending(self) -> list[Spooled]:
        """Every result left on disk, oldest job first; unreadable files are moved aside (``.bad``), not lost."""
        if not self._usable():
            return []
        assert self.directory is not None
        self._sweep_partial()
        found: list[Spooled] = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                data = json.loads(path.read_text())
                c = data["claim"]
                times = {k: datetime.fromisoformat(c[k]) for k in ("claimed_at", "queued_at")}
                claim = Claim(**{**c, **times})
                result: RunResult | Comparison = (
                    Comparison.model_validate(data["comparison"]) if "comparison" in data
                    else RunResult.model_validate(data["result"])
                )  # fmt: skip
                found.append(Spooled(claim, bool(data["secret"]), bool(data["final"]), result, path))
            except (OSError, ValueError, KeyError, TypeError, ValidationError) as exc:
                log.error("result spool file %s is unreadable (%s); moved aside", path, exc)
                with contextlib.suppress(OSError):
                    path.rename(path.with_suffix(".bad"))
        return sorted(found, key=lambda sp: (sp.claim.job_id, sp.secret))
