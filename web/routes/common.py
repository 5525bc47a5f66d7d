"""What the route modules share: the base URL for links, converting the service's answers."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import Path, Request, Response

from leaderboards.errors import NotFound, UserError
from leaderboards.results import PublicResult, SubmissionDetails, UserRef
from web.schemas import API_PREFIX, PublicResultOut, SubmissionLinks, SubmissionOut, SubmissionStatusOut

ID_MAX = 2**63 - 1
"""The largest id a row can have (a signed 64-bit integer): a larger one in a path, ``?after=`` or ``Last-Event-ID``
is refused as an invalid field before it reaches the database (which answers it with an overflow, a 500)."""
SubmissionId = Annotated[int, Path(ge=1, le=ID_MAX, description="The submission's id.")]
TokenId = Annotated[int, Path(ge=1, le=ID_MAX, description="The token's id.")]
OFFSET_MAX = 1_000_000_000
"""The deepest ``offset`` of a ranking page (``tests/web/test_bounds.py`` checks that every integer a route takes has
a range like this one: past it, a 422 naming the field and the range)."""
LIMIT_MAX = 100_000
"""The most rows a ``limit`` may ask for at the schema; the settings may allow fewer (``KERNELCUP_API_MAX_*``)."""


USER_MAX = 106
"""The longest user an admin may name: ``local:`` and a name of at most 100 characters (the column's)."""
UserName = Annotated[
    str, Path(min_length=1, max_length=USER_MAX, description="`discord:ID` or a local name (`local:NAME` or `NAME`).")
]


def parse_user(text: str, field: str = "user") -> UserRef:
    """A user as an admin names one (``UserRef.parse``), with its bounds: a name of at most 100 characters, a Discord
    id that is a 64-bit integer. Else an invalid field, not a database overflow (a 500)."""
    ref = UserRef.parse(text.strip())
    if ref.discord_id is not None and not 0 < ref.discord_id <= ID_MAX:
        raise UserError(
            f"{text[:40]!r} is no Discord id: ids are whole numbers from 1 to {ID_MAX}.",
            code="invalid_field",
            field=field,
        )
    if not ref.name or len(ref.name) > 100:
        raise UserError(
            f"A user's name is 1 to 100 characters ({len(ref.name)} given); a Discord user is discord:ID.",
            code="invalid_field",
            field=field,
        )
    return ref


def base_url(request: Request) -> str:
    configured = request.app.state.settings.public_url
    return (configured or str(request.base_url)).rstrip("/")


def links(request: Request, submission_id: int) -> SubmissionLinks:
    here = f"{base_url(request)}{API_PREFIX}/submissions/{submission_id}"
    return SubmissionLinks(self=here, events=f"{here}/events", code=f"{here}/code")


def submission_out(request: Request, details: SubmissionDetails) -> SubmissionOut:
    """Status and public results (never the code: it has its own route); each result carries its roofline shares."""
    here = links(request, details.status.submission_id).self
    results = tuple(
        PublicResultOut(
            device=r.device,
            result=r.result.model_copy(update={"ncu_report": None}),  # too big for JSON: its own route
            ncu_report_url=f"{here}/{ncu_report_path(r.device)}" if r.result.ncu_report else None,
            ncu_report_bytes=len(r.result.ncu_report) if r.result.ncu_report else None,
        )
        for r in details.results
    )
    return SubmissionOut(
        status=SubmissionStatusOut.model_validate(details.status),
        code_sha256=details.code_sha256,
        results=results,
        links=links(request, details.status.submission_id),
    )


def ncu_report_path(device: str) -> str:
    """A profile run's report, relative to its submission's URL (the API's and the page's alike)."""
    return f"profile/{quote(device, safe='')}.ncu-rep"


def ncu_report_response(details: SubmissionDetails, device: str) -> Response:
    """The Nsight Compute report of the submission's public run on ``device``, as a file download."""
    result: PublicResult | None = next((r for r in details.results if r.device == device), None)
    if result is None or not result.result.ncu_report:
        submission = details.status.submission_id
        raise NotFound(
            f"Submission #{submission} has no Nsight Compute report for {device!r}: reports come from profile runs "
            "on a GPU runner with Nsight Compute, and only when they are under the runner's size cap."
        )
    name = "".join(c for c in device if c.isalnum() or c in "-_") or "device"
    file_name = f"submission-{details.status.submission_id}-{name}.ncu-rep"
    return Response(
        result.result.ncu_report,
        media_type="application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{file_name}"'},
    )
