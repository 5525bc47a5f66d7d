"""The ASGI application as uvicorn's worker processes build it (``kernelcup serve --workers N``): each process
reads the settings and opens the database itself. ``uvicorn kernelcup.asgi:create --factory`` runs it by hand."""

from __future__ import annotations

from fastapi import FastAPI


def create() -> FastAPI:
    from kernelcup.settings import load
    from kernelcup.wiring import device_check, open_platform, reference_check
    from web.app import create_app
    from web.settings import WebSettings

    platform = open_platform(migrate=False)
    return create_app(
        platform.service, load(WebSettings), reference_check=reference_check, device_check=device_check()
    )
