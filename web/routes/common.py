"""What the route modules share: the base URL for links, converting the service's answers."""

from __future__ import annotations

from fastapi import Request

from leaderboards.results import SubmissionDetails
from web.schemas import API_PREFIX, PublicResultOut, SubmissionLinks, SubmissionOut, SubmissionStatusOut


def base_url(request: Request) -> str:
    configured = request.app.state.settings.public_url
    return (configured or str(request.base_url)).rstrip("/")


def links(request: Request, submission_id: int) -> SubmissionLinks:
    here = f"{base_url(request)}{API_PREFIX}/submissions/{submission_id}"
    return SubmissionLinks(self=here, events=f"{here}/events", code=f"{here}/code")


def submission_out(request: Request, details: SubmissionDetails) -> SubmissionOut:
    """Status and public results (never the code: it has its own route); each result carries its roofline shares."""
    results = tuple(PublicResultOut(device=r.device, result=r.result) for r in details.results)
    return SubmissionOut(
        status=SubmissionStatusOut.model_validate(details.status),
        code_sha256=details.code_sha256,
        results=results,
        links=links(request, details.status.submission_id),
    )
