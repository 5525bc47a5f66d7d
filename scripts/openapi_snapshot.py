"""The HTTP API's OpenAPI document, and its snapshot under test (``tests/web/openapi_snapshot.json``).

``make openapi`` (``python scripts/openapi_snapshot.py``) writes the snapshot from the app as the code builds it now;
``tests/web/test_openapi_snapshot.py`` fails with a diff while the two differ, so a change to the API's shape is a
reviewed change to that file. The document is built from the settings' defaults on a database that is never
opened: it depends on the code only.
"""

from __future__ import annotations

import difflib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

SNAPSHOT = Path(__file__).resolve().parents[1] / "tests" / "web" / "openapi_snapshot.json"
REGENERATE = "make openapi  (or: .venv/bin/python scripts/openapi_snapshot.py)"


def current() -> dict[str, Any]:
    """The app's OpenAPI document as the code builds it now."""
    from leaderboards.db import Database, make_engine
    from leaderboards.service import LeaderboardService
    from leaderboards.settings import CoreSettings
    from web.app import create_app
    from web.settings import WebSettings

    with tempfile.TemporaryDirectory() as tmp:
        core = CoreSettings(_env_file=None, database_url=None, data_dir=Path(tmp))
        engine = make_engine(f"sqlite:///{tmp}/never-opened.sqlite3")  # an engine connects on first use only
        try:
            app = create_app(LeaderboardService(Database(engine), core), WebSettings(_env_file=None))
            return app.openapi()
        finally:
            engine.dispose()


def render(spec: dict[str, Any]) -> str:
    """Stable text: sorted keys, two-space indent, a final newline (diffs read line by line)."""
    return json.dumps(spec, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def diff(snapshot: str, now: str, *, limit: int = 200) -> str:
    """A unified diff from the snapshot to the current document, cut at ``limit`` lines."""
    lines = list(difflib.unified_diff(snapshot.splitlines(), now.splitlines(), "openapi_snapshot.json", "current",
                                      lineterm="", n=2))  # fmt: skip
    shown = lines[:limit]
    if len(lines) > limit:
        shown.append(f"... {len(lines) - limit} more lines")
    return "\n".join(shown)


def main() -> int:
    text = render(current())
    SNAPSHOT.write_text(text, encoding="utf-8")
    print(f"wrote {SNAPSHOT} ({len(text.splitlines())} lines)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
