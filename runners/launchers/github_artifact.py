"""The result artifact of a GitHub run: downloaded with a size cap (following GitHub's redirect to blob storage
without the token) and read as a zip holding ``result.json``, validated against the run contract."""

from __future__ import annotations

import io
import zipfile

import requests
from github import GithubException
from pydantic import ValidationError

from runners.contract import RunResult
from runners.launchers.base import LauncherError

RESULT_FILE = "result.json"


def download_artifact(url: str, token: str, cap: int, timeout: float) -> bytes:
    """The artifact zip. GitHub answers 302 to blob storage on another domain (Azure), which PyGithub's
    requester refuses to follow; the redirect is followed here, without the token."""
    auth = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"}
    with requests.Session() as session:
        session.trust_env = False  # no .netrc credentials sent anywhere
        answer = session.get(url, headers=auth, allow_redirects=False, timeout=timeout)
        if answer.is_redirect and answer.headers.get("Location"):
            answer = session.get(answer.headers["Location"], allow_redirects=True, stream=True, timeout=timeout)
        if answer.status_code >= 400:
            raise GithubException(answer.status_code, {"message": answer.text[:200]}, dict(answer.headers))
        data = bytearray()
        for chunk in answer.iter_content(chunk_size=64 * 1024):
            data += chunk
            if len(data) > cap:
                raise LauncherError(f"the result artifact is over {cap} bytes, the cap (GITHUB_MAX_RESULT_BYTES)")
        return bytes(data)


def parse_artifact(blob: bytes, run_id: int, cap: int) -> RunResult:
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as archive:
            info = archive.getinfo(RESULT_FILE)
            if info.file_size > cap:
                raise LauncherError(f"{RESULT_FILE} of GitHub run {run_id} inflates beyond the cap")
            text = archive.read(info)
    except KeyError:
        raise LauncherError(f"the result artifact of GitHub run {run_id} holds no {RESULT_FILE}") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError) as exc:
        raise LauncherError(f"the result artifact of GitHub run {run_id} is corrupt: {exc}") from None
    try:
        return RunResult.model_validate_json(text)
    except ValidationError as exc:
        raise LauncherError(f"GitHub run {run_id} returned a malformed result ({exc.error_count()} errors)") from None
