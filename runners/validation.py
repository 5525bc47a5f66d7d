"""Pydantic validation errors as text a person reads: the one helper every layer uses to turn them into messages;
and the bounds on what a profile result may carry (``bound_profile``), which the runner applies to every result and
the core may apply again before it stores one.

Pydantic prefixes a validator's own words with ``Value error, `` (or ``Assertion failed, ``); users should see
only the words. ``runners`` is the lowest layer, so the core and every surface can import this.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

_PREFIXES = ("Value error, ", "Assertion failed, ")


def error_message(err: Mapping[str, Any]) -> str:
    """One error of ``ValidationError.errors()`` as its message, without pydantic's prefix."""
    ctx = err.get("ctx") or {}
    if err.get("type") == "value_error" and "error" in ctx:
        return str(ctx["error"])
    msg = str(err.get("msg", ""))
    for prefix in _PREFIXES:
        if msg.startswith(prefix):
            return msg[len(prefix) :]
    return msg


def error_location(err: Mapping[str, Any], skip: Iterable[str] = ()) -> str:
    """Where the error is, as ``field.sub.0`` (parts in ``skip``, such as FastAPI's ``body``, left out)."""
    skipped = set(skip)
    return ".".join(str(part) for part in err.get("loc", ()) if part not in skipped)


# ---- what a profile result may carry ------------------------------------------------------------------------------
# A profile run returns what other runs do and three fields more; its result is stored whole (``runs.result``), so
# each field has a bound here and so has the whole (docs/profiling.md, "Bounds"). A red-team profile result was
# 8.1 MB (every other result was under 20 KB; a normal report is 0.3 MB).

PROFILE_TEXT_MAX_CHARS = 64 * 1024
"""``RunResult.profile``: the notes and the profiler's table."""
PROFILE_MAX_KERNELS = 256
"""``RunResult.kernel_metrics``: launches (Nsight Compute profiles ``KERNELCUP_NCU_MAX_KERNELS`` at most anyway)."""
NCU_REPORT_MAX_BYTES = 4 * 1024 * 1024
"""``RunResult.ncu_report``: the largest report any runner attaches (``KERNELCUP_NCU_REPORT_MAX_MB`` is at most it)."""
PROFILE_RESULT_MAX_BYTES = 6 * 1024 * 1024
"""The whole result's JSON: a profile result over it drops its report (then its table) with a note saying so."""


def bound_profile(result: Any, max_report_bytes: int = NCU_REPORT_MAX_BYTES) -> Any:
    """``result`` (a ``runners.contract.RunResult``) within the bounds above: the profile text cut, the metrics list
    cut, the report left out over ``max_report_bytes`` (at most ``NCU_REPORT_MAX_BYTES``), and, if the whole is
    still over ``PROFILE_RESULT_MAX_BYTES``, the report and then the profile text left out, each with a note. The
    runner applies it to every result it returns; whatever stores a result may apply it again (it is idempotent
    and leaves a result within the bounds as it is)."""
    notes: list[str] = []
    update: dict[str, Any] = {}
    limit = min(max_report_bytes, NCU_REPORT_MAX_BYTES)
    report = result.ncu_report
    if report is not None and len(report) > limit:
        update["ncu_report"] = report = None
        notes.append(f"The Nsight Compute report ({len(result.ncu_report) / 2**20:.1f} MiB) is over the cap of "
                     f"{limit / 2**20:.1f} MiB on a profile result, so it is not attached.")  # fmt: skip
    if len(result.kernel_metrics) > PROFILE_MAX_KERNELS:
        update["kernel_metrics"] = result.kernel_metrics[:PROFILE_MAX_KERNELS]
        notes.append(f"Only the first {PROFILE_MAX_KERNELS} of {len(result.kernel_metrics)} kernel launches are kept.")
    text = result.profile
    if notes:
        text = "\n".join(notes) + (f"\n\n{text}" if text else "")
    if text is not None and len(text) > PROFILE_TEXT_MAX_CHARS:
        marker = f"\n[cut: a profile text is kept up to {PROFILE_TEXT_MAX_CHARS:,} characters]"
        text = text[: PROFILE_TEXT_MAX_CHARS - len(marker)] + marker
    if text != result.profile:
        update["profile"] = text
    bounded = result.model_copy(update=update) if update else result
    if len(bounded.model_dump_json()) <= PROFILE_RESULT_MAX_BYTES:
        return bounded
    over = f"The profile result was over {PROFILE_RESULT_MAX_BYTES / 2**20:.0f} MiB in all"
    if bounded.ncu_report is not None:
        bounded = bounded.model_copy(update={"ncu_report": None, "profile": f"{over}, so its Nsight Compute report "
                                             f"is not attached.\n\n{bounded.profile or ''}".rstrip()})  # fmt: skip
        if len(bounded.model_dump_json()) <= PROFILE_RESULT_MAX_BYTES:
            return bounded
    return bounded.model_copy(update={"profile": f"{over}, so its profile text is left out."})
