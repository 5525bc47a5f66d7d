"""How a run request travels to a remote runner as text: zlib-compressed JSON in base64, with its sha256.

The GitHub workflow decodes it with ``python -m runners.payload from-event OUT`` (from the dispatch event
file: never interpolated into a script, never printed in the log), so the launcher and the job share this
one codec. Standard library only: it runs on the GPU box before anything is installed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import sys
import zlib
from pathlib import Path

MAX_DECODED_BYTES = 64 * 1024 * 1024
"""A request never inflates beyond this (guards against a decompression bomb in a forged input)."""


class PayloadError(ValueError):
    """The text is not a payload this module wrote, or it was cut or changed on the way."""


def encode(data: bytes) -> str:
    return base64.b64encode(zlib.compress(data, 9)).decode("ascii")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def decode(text: str, *, sha256: str | None = None, max_bytes: int = MAX_DECODED_BYTES) -> bytes:
    try:
        packed = base64.b64decode(text.strip(), validate=True)
        inflater = zlib.decompressobj()
        data = inflater.decompress(packed, max_bytes)
        if inflater.unconsumed_tail:
            raise PayloadError(f"payload inflates beyond {max_bytes} bytes")
        data += inflater.flush()
        if len(data) > max_bytes:
            raise PayloadError(f"payload inflates beyond {max_bytes} bytes")
        if not inflater.eof:
            raise PayloadError("payload is truncated")
    except (binascii.Error, zlib.error) as exc:
        raise PayloadError(f"payload is not zlib+base64: {exc}") from None
    if sha256 is not None and digest(data) != sha256.strip().lower():
        raise PayloadError("payload does not match its sha256")
    return data


def from_event(event_path: Path, out: Path) -> None:
    """Decode the ``request`` input of a workflow_dispatch event file into ``out``, then scrub it from the file.

    Reading the event file (not an ``env:`` entry) keeps the request (the competitor's source, a ranked
    run's seed) out of the job log, which prints every step's environment; scrubbing it leaves no copy for
    the submission to find where the runner keeps its files.
    """
    event = json.loads(event_path.read_text(encoding="utf-8"))
    inputs = event.get("inputs") or {}
    data = decode(str(inputs.get("request", "")), sha256=str(inputs.get("request_sha256", "")) or None)
    out.write_bytes(data)
    inputs["request"] = ""
    event_path.write_text(json.dumps(event), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """``from-event OUT_FILE``: the workflow's decoding step (the event file is ``$GITHUB_EVENT_PATH``)."""
    args = sys.argv[1:] if argv is None else argv
    event = os.environ.get("GITHUB_EVENT_PATH", "")
    if len(args) != 2 or args[0] != "from-event" or not event:
        print("usage: GITHUB_EVENT_PATH=EVENT.json python -m runners.payload from-event OUT_FILE", file=sys.stderr)
        return 2
    try:
        from_event(Path(event), Path(args[1]))
    except (PayloadError, OSError, ValueError) as exc:
        print(f"runners.payload: cannot decode the request: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
