"""Submitting and following a submission: everything here needs the owner's token (or an admin's), except the
code of a ranked entry that its problem set made public after the deadline."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials

from leaderboards.errors import InvalidSubmission, SubmissionNotFound
from leaderboards.results import (
    COMPARE_CPU_ROUNDS,
    COMPARE_DEFAULT_ROUNDS,
    COMPARE_MAX_ROUNDS,
    COMPARE_MIN_ROUNDS,
    Principal,
    Scope,
    SubmissionMode,
    SubmissionReceipt,
)
from leaderboards.service import LeaderboardService
from web.auth import CredentialsFirst, bearer, maybe_user, service_of, submitter
from web.routes.common import SubmissionId, links, ncu_report_response, submission_out
from web.routes.idempotency import Once, idempotency_key
from web.schemas import (
    API_PREFIX,
    CodeOut,
    ErrorOut,
    SubmissionOut,
    SubmissionReceiptOut,
    SubmissionSummaryOut,
)

router = APIRouter(prefix=API_PREFIX, tags=["submissions"])

ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "No token, or an unknown, expired or revoked one"},
    404: {"model": ErrorOut, "description": "No such submission of yours"},
}


def split_devices(fields: list[str]) -> list[str] | None:
    """``devices`` as repeated fields or one comma-separated value ('all' for every device)."""
    names = [d.strip() for field in fields for d in field.split(",") if d.strip()]
    return names or None


async def submit(
    request: Request,
    file: UploadFile = File(..., description="The kernel: a .py file defining custom_kernel(data), or a .cu file."),
    leaderboard: str | None = Form(None, description="Default: the file's '#!kernelcup leaderboard' line."),
    devices: list[str] = Form([], description="One or more devices, or 'all'. Default: the file's, or the only one."),
    mode: str | None = Form(
        None, description="test, benchmark, ranked, profile or compare. Default: the file's, else ranked."
    ),
    against: UploadFile | None = File(
        None, description="Mode compare: the second file (B), compared with `file` (A) on one device."
    ),
    rounds: int | None = Form(
        None,
        ge=COMPARE_MIN_ROUNDS,
        le=COMPARE_MAX_ROUNDS,
        description=f"Mode compare: the most rounds, even, {COMPARE_MIN_ROUNDS} to {COMPARE_MAX_ROUNDS} (default "
        f"{COMPARE_DEFAULT_ROUNDS} on a GPU, {COMPARE_CPU_ROUNDS} on the CPU); each runs "
        "both files once (A B, then B A, …) and counts as 2 runs against your limits. It stops earlier (after 6 or "
        "more) once the overall A/B ratio's 95% interval is within ±0.4% of it.",
    ),
    profile: bool = Form(
        False,
        description="Mode compare, on a GPU device: after the rounds, profile each benchmark case of both files under "
        "Nsight Compute; the comparison's `metrics` then holds, per case, the dominant kernels of A and B side by "
        "side (DRAM %, SM %, occupancy, registers, top stall) and A minus B. A runner without Nsight Compute says so "
        "there, and the ratio stands.",
    ),
    force: bool = Form(
        False,
        description="Run it even if you sent this same file to the same leaderboard, mode and devices a moment ago "
        "(else the answer is that earlier submission, with `duplicate` true).",
    ),
    license: str | None = Form(
        None,
        description="The archive licence: none (never published), CC0-1.0, CC-BY-4.0, MIT or Apache-2.0. Default: the "
        "file's '#!kernelcup license:' line, else your account's default, else none.",
    ),
    credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
    key: str | None = Depends(idempotency_key),
    service: LeaderboardService = Depends(service_of),
) -> JSONResponse:
    """Queue a submission: one job per device. With `mode=compare` and a second file as `against`: one job that
    benchmarks both files in `rounds` interleaved rounds on one device and answers with their time ratio and its
    95% interval, per case and overall (`status.comparison`); never ranked, never de-duplicated."""
    comparing = (mode or "").strip().lower() == SubmissionMode.COMPARE.value

    def read(upload: UploadFile) -> tuple[str, bytes]:
        name = upload.filename or ""
        service.check_upload_size(name, upload.size or 0)
        return name, upload.file.read(service.settings.max_submission_bytes + 1)

    once = Once(service, key, "POST /submissions")

    def accept() -> JSONResponse:  # the token, the size and the submission in one trip to a thread
        who = service.authenticate(credentials.credentials if credentials else None, Scope.SUBMIT)
        if against is not None and not comparing:
            raise InvalidSubmission(
                "A second file ('against') is only for mode compare; send mode=compare, or leave it out.",
                code="against_without_compare",
                field="against",
            )
        if profile and not comparing:
            raise InvalidSubmission(
                "profile=true adds kernel metrics to a compare: send mode=compare with the second file as 'against'; "
                "to profile one file, send mode=profile.",
                code="profile_without_compare",
                field="profile",
            )
        name, content = read(file)
        second = read(against) if comparing and against is not None else None
        fields = {"leaderboard": leaderboard, "devices": devices, "mode": mode, "rounds": rounds, "force": force,
                  "license": license, **({"profile": True} if profile else {})}  # fmt: skip
        stored = once.begin(who.user, fields, {"file": (name, content), "against": second})
        return stored or once.run(lambda: receipt_response(request, queue(who, name, content, second)))

    def queue(who: Principal, name: str, content: bytes, second: tuple[str, bytes] | None) -> SubmissionReceipt:
        if second is not None:
            device = split_devices(devices)
            if device is not None and len(device) > 1:
                raise InvalidSubmission(
                    f"A compare runs on one device; name one, not {len(device)}.", code="one_device", field="devices"
                )
            return service.compare(
                who.user, name, content, *second, leaderboard, device[0] if device else None, rounds,
                token_id=who.token_id, profile=profile,
            )  # fmt: skip
        return service.submit(
            who.user, name, content, leaderboard, split_devices(devices), mode, force=force, licence=license,
            token_id=who.token_id,
        )  # fmt: skip

    return await asyncio.to_thread(accept)


router.add_api_route(  # the token before the body (web.auth.CredentialsFirst)
    "/submissions",
    submit,
    methods=["POST"],
    route_class_override=CredentialsFirst,
    status_code=202,
    response_model=SubmissionReceiptOut,
    summary="Submit a file",
    responses={
        **ERRORS,
        409: {
            "model": ErrorOut,
            "description": "Leaderboard closed or paused; or the Idempotency-Key was used for another request",
        },
        413: {"model": ErrorOut, "description": "File too large"},
        422: {"model": ErrorOut, "description": "A field or the file is not acceptable"},
        429: {"model": ErrorOut, "description": "Rate limit, pending-job quota or GPU budget reached (Retry-After)"},
    },
)


def receipt_response(request: Request, receipt: SubmissionReceipt) -> JSONResponse:
    """A queued submission's 202: its receipt, and where to follow it (``Location``)."""
    out = SubmissionReceiptOut(
        **{k: getattr(receipt, k) for k in ("submission_id", "leaderboard", "user_name", "file_name", "mode")},
        created_at=receipt.created_at,
        jobs=receipt.jobs,  # type: ignore[arg-type]
        links=links(request, receipt.submission_id),
        duplicate=receipt.duplicate,
    )
    return JSONResponse(out.model_dump(mode="json"), status_code=202, headers={"Location": out.links.self})


@router.get(
    "/submissions/{submission_id}", response_model=SubmissionOut, responses=ERRORS, summary="Status and results"
)
def get_submission(
    request: Request,
    submission_id: SubmissionId,
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
    submission_id: SubmissionId,
    device: str,
    who: Principal = Depends(submitter),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    """The `.ncu-rep` file of the submission's profile run on `device`, to open in Nsight Compute. Only its owner
    (or an admin) gets it, as with the results."""
    return ncu_report_response(service.submission_details(submission_id, who.user, admin=who.is_admin), device)


@router.get("/submissions/{submission_id}/code", response_model=CodeOut, responses=ERRORS, summary="The code")
def get_code(
    submission_id: SubmissionId,
    file: str = Query("a", pattern="^[abAB]$", description="a: the submission's file; b: a compare's second file."),
    who: Principal | None = Depends(maybe_user),
    service: LeaderboardService = Depends(service_of),
) -> CodeOut:
    """The submission's code (a compare's second file with `?file=b`): yours, or a ranked entry's that its problem
    set made public after the deadline."""
    user = who.user if who is not None else None
    view = service.submission_code(
        submission_id, user, admin=who is not None and who.is_admin, second=file.lower() == "b"
    )
    return CodeOut.model_validate(view)


@router.post("/submissions/{submission_id}/cancel", responses=ERRORS, summary="Cancel a queued or running submission")
def cancel_submission(
    submission_id: SubmissionId,
    who: Principal = Depends(submitter),
    service: LeaderboardService = Depends(service_of),
) -> dict[str, object]:
    """Cancels the submission's unfinished jobs (a running job's result is then discarded). A finished submission
    is left as it is: 409 `already_finished` (`DELETE /submissions/{id}` takes it off the rankings)."""
    service.cancel(submission_id, who.user)
    return {"submission_id": submission_id, "action": "cancelled"}


@router.delete("/submissions/{submission_id}", responses=ERRORS, summary="Cancel, or delete from the rankings")
def delete_submission(
    submission_id: SubmissionId,
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
    return {"submission_id": submission_id, "action": service.cancel_or_delete(submission_id, who.user)}


@router.get("/me/submissions", response_model=list[SubmissionSummaryOut], responses=ERRORS, summary="My submissions")
def my_submissions(
    leaderboard: str | None = Query(None),
    limit: int = Query(50, ge=1, le=500),
    who: Principal = Depends(submitter),
    service: LeaderboardService = Depends(service_of),
) -> list[SubmissionSummaryOut]:
    subs = service.user_submissions(who.user, leaderboard, limit=limit, admin=who.is_admin)
    return [SubmissionSummaryOut.model_validate(s) for s in subs]
