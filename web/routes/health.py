"""``/healthz`` (the process answers), ``/readyz`` (it can serve: database, schema, workers), ``/metrics``."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response

from leaderboards.service import LeaderboardService
from web.auth import service_of
from web.schemas import ReadinessOut

router = APIRouter(tags=["operations"])


@router.get("/healthz", summary="The process is up (touches nothing else)")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", response_model=ReadinessOut, summary="Database reachable, schema current, devices served")
def readyz(service: LeaderboardService = Depends(service_of)) -> JSONResponse:
    ready = service.readiness()
    body = ReadinessOut.model_validate(ready).model_dump(mode="json", by_alias=True)
    return JSONResponse(body, status_code=200 if ready.ready else 503)


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
def metrics(request: Request) -> Response:
    body, content_type = request.app.state.metrics.scrape()
    return Response(body, media_type=content_type)
