"""The check convention.

``check_implementation(data, output)`` is called with inputs the harness regenerated after the
submission returned (so mutating its inputs cannot make the reference agree). It may return
``(ok, message)``, a bool, or a string (empty means correct, anything else is the failure message).
The comparison references share is in ``problems/_lib`` (bundled with each problem that imports it).
"""

from __future__ import annotations


def normalise_check(result: object) -> tuple[bool, str]:
    """Turn whatever a reference's check returned into (ok, message)."""
    if isinstance(result, tuple) and len(result) == 2:
        ok, message = result
        return bool(ok), "" if ok else str(message or "output differs from the reference")
    if isinstance(result, bool):
        return result, "" if result else "output differs from the reference"
    if isinstance(result, str):
        return (not result), result
    if result is None:
        return True, ""
    return False, f"the reference's check returned {type(result).__name__}; expected (bool, str)"

