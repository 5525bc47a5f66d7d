"""Idempotency keys (issue 33): a submitting request may carry a key of the client's choosing; a retry with the same
key and the same request gets the first answer back and runs nothing.

Keys belong to an account (every token of it shares them), are kept ``KERNELCUP_IDEMPOTENCY_TTL_S`` (a day by
default) from first use, and name one request: the same key with a different request (another file, field or route)
is ``IdempotencyKeyReused`` (409). A key whose first request is still being answered is ``IdempotencyKeyInUse``
(409: retry in a moment); a first request that failed (any error) leaves no trace, so its retry runs. A first request
that died between taking the key and answering (a killed server) frees its key after ``STALE_PENDING_S``.

Only answers that stored something (2xx) are kept. The surfaces digest a request (``request_digest``) from its fields
and its files' SHA-256, never from the raw body (a multipart body's boundary differs on every retry).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from leaderboards.errors import AlreadyExists, InvalidSubmission
from leaderboards.models import IdempotencyKey
from leaderboards.results import UserRef
from leaderboards.service_base import ServiceBase

MAX_KEY = 255
STALE_PENDING_S = 600.0
"""A key taken this long ago whose request never answered (its server died) is free again."""


class IdempotencyKeyReused(AlreadyExists):
    code = "idempotency_key_reused"


class IdempotencyKeyInUse(AlreadyExists):
    code = "idempotency_key_in_use"


@dataclass(frozen=True)
class StoredAnswer:
    """The first answer to a key's request: what a retry gets back."""

    status_code: int
    body: Any
    created_at: datetime


def request_digest(route: str, fields: dict[str, Any], files: dict[str, tuple[str, bytes] | None]) -> str:
    """A request's digest: its route, its fields and each file's name and SHA-256."""
    canonical = {
        "route": route,
        "fields": fields,
        "files": {k: None if v is None else [v[0], hashlib.sha256(v[1]).hexdigest()] for k, v in files.items()},
    }
    return hashlib.sha256(json.dumps(canonical, sort_keys=True, default=str).encode()).hexdigest()


def check_key(key: str) -> str:
    """The key as given, if it is one: 1 to 255 visible ASCII characters."""
    if not key or len(key) > MAX_KEY or not key.isascii() or not key.isprintable() or key != key.strip():
        raise InvalidSubmission(
            f"An Idempotency-Key is 1 to {MAX_KEY} visible ASCII characters without surrounding spaces (a UUID is "
            "a good one); this one is not.",
            code="invalid_idempotency_key",
            field="Idempotency-Key",
        )
    return key


class IdempotencyMixin(ServiceBase):
    """Taking, answering and releasing idempotency keys (``LeaderboardService``)."""

    def idempotency_begin(self, user: UserRef, key: str, route: str, digest: str) -> StoredAnswer | None:
        """Take ``key`` for this request (None: go on, then ``idempotency_finish`` or ``idempotency_release``), or
        the stored first answer of the same request; ``IdempotencyKeyReused`` for another request under the key,
        ``IdempotencyKeyInUse`` while the first is still being answered."""
        check_key(key)
        now = self.clock()
        with self.db.transaction() as s:
            u = self._user(s, user)
            s.execute(delete(IdempotencyKey).where(IdempotencyKey.expires_at < now))
            row = s.scalar(select(IdempotencyKey).where(IdempotencyKey.user_id == u.id, IdempotencyKey.key == key))
            if (
                row is not None
                and row.status_code is None
                and row.created_at < now - timedelta(seconds=STALE_PENDING_S)
            ):
                s.delete(row)
                s.flush()
                row = None
            if row is not None:
                if row.body_sha256 != digest or row.route != route:
                    raise IdempotencyKeyReused(
                        f"Idempotency-Key {key!r} was used at {row.created_at:%Y-%m-%d %H:%M:%S} UTC for a different "
                        f"request ({row.route}, other fields or files); a key names one request. Send a new key for "
                        "a new request.",
                        field="Idempotency-Key",
                    )
                if row.status_code is None:
                    raise IdempotencyKeyInUse(
                        f"The first request with Idempotency-Key {key!r} is still being answered; retry in a moment.",
                        field="Idempotency-Key",
                    )
                return StoredAnswer(row.status_code, row.response, row.created_at)
            ttl = timedelta(seconds=self.settings.idempotency_ttl_s)
            try:
                with s.begin_nested():
                    s.add(
                        IdempotencyKey(
                            user_id=u.id,
                            key=key,
                            route=route[:100],
                            body_sha256=digest,
                            created_at=now,
                            expires_at=now + ttl,
                        )
                    )
            except IntegrityError:  # a concurrent first request took it a moment ago
                raise IdempotencyKeyInUse(
                    f"The first request with Idempotency-Key {key!r} is still being answered; retry in a moment.",
                    field="Idempotency-Key",
                ) from None
            return None

    def idempotency_finish(self, user: UserRef, key: str, status_code: int, body: Any) -> None:
        """Keep the first answer of ``key``'s request for its retries."""
        with self.db.transaction() as s:
            u = self._user(s, user)
            row = s.scalar(select(IdempotencyKey).where(IdempotencyKey.user_id == u.id, IdempotencyKey.key == key))
            if row is not None:
                row.status_code, row.response = status_code, body

    def idempotency_release(self, user: UserRef, key: str) -> None:
        """Free a key whose first request failed: its retry runs."""
        with self.db.transaction() as s:
            u = self._user(s, user)
            s.execute(
                delete(IdempotencyKey).where(
                    IdempotencyKey.user_id == u.id, IdempotencyKey.key == key, IdempotencyKey.status_code.is_(None)
                )
            )
