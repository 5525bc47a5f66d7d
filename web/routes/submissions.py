"""Submitting and following a submission: everything here needs the owner's token (or an admin's), except the
code of a ranked entry that its problem set made public after the deadline."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials

from leaderboards.errors import InvalidChange, SubmissionNotFound
from leaderboards.results import Principal, Scope, SubmissionReceipt
from leaderboards.service import LeaderboardService
from web.auth import bearer, maybe_user, service_of, submitter
from web.routes.common import links, ncu_report_response, submission_out
from web.schemas import (
    API_PREFIX,
    CodeOut,
    ErrorOut,
    SubmissionOut,
    SubmissionReceiptOut,
    SubmissionSummaryOut,
)

router = APIRouter(prefix=API_PREFIX, tags=["submissions"])

ERRORS = {
    401: {"model": ErrorOut, "description": "No token, or an unknown, expired or revoked one"},
    404: {"model": ErrorOut, "description": "No such submission of yours"},
}


def split_devices(fields: list[str]) -> list[str] | None:
    """``devices`` as repeated fields or one comma-separated value ('all' for every device)."""
    names = [d.strip() for field in fields for d in field.split(",") if d.strip()]
    return names or None


@router.post(
    "/submissions",
    status_code=202,
    response_model=SubmissionReceiptOut,
    summary="Submit a file",
    responses={
        **ERRORS,
        409: {"model": ErrorOut, "description": "Leaderboard closed or paused"},
        413: {"model": ErrorOut, "description": "File too large"},
        422: {"model": ErrorOut, "description": "A field or the file is not acceptable"},
        429: {"model": ErrorOut, "description": "Rate limit or pending-job quota reached (see Retry-After)"},
    },
)
async def submit(
    request: Request,
    file: UploadFile = File(..., description="The kernel: a .py file defining custom_kernel(data), or a .cu file."),
    leaderboard: str | None = Form(None, description="Default: the file's '#!kernelcup leaderboard' line."),
    devices: list[str] = Form([], description="One or more devices, or 'all'. Default: the file's, or the only one."),
    mode: str | None = Form(None, description="test, benchmark, ranked or profile. Default: the file's, else ranked."),
    credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
    service: LeaderboardService = Depends(service_of),
) -> JSONResponse:
    def accept() -> SubmissionReceipt:  # the token, the size and the submission in one trip to a thread
        who = service.authenticate(credentials.credentials if credentials else None, Scope.SUBMIT)
        name = file.filename or ""
        service.check_upload_size(name, file.size or 0)
        content = file.file.read(service.settings.max_submission_bytes + 1)
        return service.submit(who.user, name, content, leaderboard, split_devices(devices), mode)

    receipt = await asyncio.to_thread(accept)
    out = SubmissionReceiptOut(
        **{k: getattr(receipt, k) for k in ("submission_id", "leaderboard", "user_name", "file_name", "mode")},
        created_at=receipt.created_at,
        jobs=receipt.jobs,  # type: ignore[arg-type]
        links=links(request, receipt.submission_id),
    )
    return JSONResponse(out.model_dump(mode="json"), status_code=202, headers={"Location": out.links.self})


@router.get(
    "/submissions/{submission_id}", response_model=SubmissionOut, responses=ERRORS, summary="Status and results"
)
def get_submission(
    request: Request,
    submission_id: int,
    who: Principal = Depends(submitter),
    service: LeaderboardService = Depends(service_of),
) -> SubmissionOut:
    return submission_out(request, service.submission_details(submission_id, who.user, admin=who.is_admin))


@router.get(
    "/submissions/{submission_id}/profile/{device}.ncu-rep",
    response_class=Response,
    responses={**ERRORS, 200: {"content": {"application/octet-stream": {}}, "description": "The .ncu-rep file."}},
    summary="The Nsight Compute report of a profile run",
)
def get_ncu_report(
    submission_id: int,
    device: str,
    who: Principal = Depends(submitter),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    """The `.ncu-rep` file of the submission's profile run on `device`, to open in Nsight Compute. Only its owner
    (or an admin) gets it, as with the results."""
    return ncu_report_response(service.submission_details(submission_id, who.user, admin=who.is_admin), device)


@router.get("/submissions/{submission_id}/code", response_model=CodeOut, responses=ERRORS, summary="The code")
def get_code(
    submission_id: int,
    who: Principal | None = Depends(maybe_user),
    service: LeaderboardService = Depends(service_of),
) -> CodeOut:
    user = who.user if who is not None else None
    view = service.submission_code(submission_id, user, admin=who is not None and who.is_admin)
    return CodeOut.model_validate(view)


@router.delete("/submissions/{submission_id}", responses=ERRORS, summary="Cancel, or delete from the rankings")
def delete_submission(
    submission_id: int,
    who: Principal = Depends(submitter),
    service: LeaderboardService = Depends(service_of),
) -> dict[str, object]:
    """Cancels the submission's unfinished jobs; a finished submission is deleted from the rankings instead (as
    `/leaderboard` does in Discord). An admin's token deletes anyone's."""
    if who.is_admin:
        try:
            service.submission_status_of(submission_id, who.user)
        except SubmissionNotFound:  # someone else's: the admin deletion
            service.delete_submission(submission_id, actor=who.actor)
            return {"submission_id": submission_id, "action": "deleted"}
    try:
        service.cancel(submission_id, who.user)
        return {"submission_id": submission_id, "action": "cancelled"}
    except InvalidChange:  # finished: nothing to cancel, so it leaves the rankings
        service.delete_submission(submission_id, user=who.user)
        return {"submission_id": submission_id, "action": "deleted"}


@router.get("/me/submissions", response_model=list[SubmissionSummaryOut], responses=ERRORS, summary="My submissions")
def my_submissions(
    leaderboard: str | None = Query(None),
    limit: int = Query(50, ge=1, le=500),
    who: Principal = Depends(submitter),
    service: LeaderboardService = Depends(service_of),
) -> list[SubmissionSummaryOut]:
    subs = service.user_submissions(who.user, leaderboard, limit=limit)
    return [SubmissionSummaryOut.model_validate(s) for s in subs]
