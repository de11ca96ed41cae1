"""Idempotent creating requests: store the first answer under the client's key, replay it.

The caller fingerprints the request (what makes two requests "the same"), looks the key up
before doing the work, and stores its answer in the same transaction as the work, so either
both are committed or neither. Keys are scoped to the tenant, and kept for a retention period
(`steps.purge_all`, on a schedule): a retry with a key older than that runs as a new request.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog
from sqlalchemy.orm import Session

from docflow.errors import Conflict, InvalidInput
from docflow.idempotency.repository import IdempotencyRepository
from docflow.kit.clock import utcnow
from docflow.tenancy import TenantContext

log = structlog.get_logger(__name__)

MAX_KEY_LENGTH = 255


@dataclass(frozen=True)
class StoredResponse:
    """The first answer given for a key."""

    status_code: int
    body: Any
    created_at: datetime


def _check_key(key: str) -> str:
    if not key or len(key) > MAX_KEY_LENGTH:
        raise InvalidInput(
            f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} characters", field="Idempotency-Key"
        )
    return key


def lookup(
    session: Session, tenant: TenantContext, *, key: str, fingerprint: str
) -> StoredResponse | None:
    """The stored answer for `key`, None when the key is new; Conflict when the key was used
    for a different request (another fingerprint)."""
    row = IdempotencyRepository(session, tenant.tenant_id).get(_check_key(key))
    if row is None:
        return None
    if row.request_fingerprint != fingerprint:
        raise Conflict(
            "this Idempotency-Key was already used with a different request",
            field="Idempotency-Key",
        )
    return StoredResponse(
        status_code=row.status_code, body=row.response_body, created_at=row.created_at
    )


def store(
    session: Session,
    tenant: TenantContext,
    *,
    key: str,
    fingerprint: str,
    status_code: int,
    body: Any,
) -> None:
    """Remember the answer for `key`. Conflict when a concurrent request stored it first (its
    transaction should then roll back, and the client's retry gets the replay)."""
    stored = IdempotencyRepository(session, tenant.tenant_id).insert_new(
        _check_key(key), fingerprint=fingerprint, status_code=status_code, body=body
    )
    if not stored:
        raise Conflict(
            "another request with this Idempotency-Key was processed at the same time; "
            "retry to receive its answer",
            field="Idempotency-Key",
        )
    log.info("idempotency.stored", tenant_id=tenant.tenant_id, status_code=status_code)


def purge(
    session: Session, tenant: TenantContext, *, retention_hours: int, now: datetime | None = None
) -> int:
    """Delete the tenant's keys stored more than `retention_hours` before `now` (default: the
    current time), in the caller's transaction; how many. ValueError unless the retention is
    at least one hour."""
    if retention_hours < 1:
        raise ValueError("retention_hours must be at least 1")
    cutoff = (now or utcnow()) - timedelta(hours=retention_hours)
    deleted = IdempotencyRepository(session, tenant.tenant_id).delete_older_than(cutoff)
    log.info("idempotency.purged", tenant_id=tenant.tenant_id, keys=deleted)
    return deleted
