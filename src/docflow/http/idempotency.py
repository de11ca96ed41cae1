"""The `Idempotency-Key` header of every creating POST.

Contract: a request carrying a key is fingerprinted (method, path and the validated body in
canonical JSON). The first request with that key runs, and its status and body are stored in
the same transaction as the objects it created. A later request with the same key and the same
fingerprint gets the stored answer again (same status, same body, header
`Idempotency-Replayed: true`) and creates nothing; with another fingerprint it is a 409 problem.
Keys are scoped to the tenant of the API key. Secrets in an answer (a new API key) are never
stored: a replay answers null in their place. Two concurrent first requests with one key: one
wins, the other gets a 409 and may retry to receive the replay. A replay whose object was
deleted since is a 409 `idempotent_object_deleted` rather than an answer describing an object
that is gone (or a second object made under a key that already made one).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Header, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.orm import Session

from docflow.errors import Conflict, NotFound
from docflow.http.deps import SessionDep, TenantDep
from docflow.idempotency import service as idempotency_service
from docflow.tenancy import TenantContext

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotency-Replayed"
MAX_KEY_LENGTH = 255


class CreatedObjectDeleted(Conflict):
    """The object the key's first request created was deleted since; a new key creates anew."""

    code = "idempotent_object_deleted"


def fingerprint(method: str, path: str, body: BaseModel) -> str:
    """SHA-256 of the request's method, path and validated body in canonical JSON."""
    canonical = json.dumps(
        {"method": method.upper(), "path": path, "body": body.model_dump(mode="json")},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(slots=True)
class IdempotentCall:
    """Runs a creating request at most once per idempotency key (see the module docstring)."""

    session: Session
    tenant: TenantContext
    key: str | None
    method: str
    path: str

    def respond(
        self,
        body: BaseModel,
        *,
        status_code: int,
        create: Callable[[], BaseModel],
        secret_fields: tuple[str, ...] = (),
        current: Callable[[str], object] | None = None,
    ) -> JSONResponse:
        """Replay the stored answer for this key, or run `create` and remember its answer.

        `secret_fields` (top-level keys of the answer) are stored as null: a secret is shown in
        the first answer only, and a replay answers null for it. `current`, given by creators
        of objects that can be deleted, reads the object of the answer's `id` (NotFound once it
        is gone): a replay of a deleted object is `CreatedObjectDeleted`.
        """
        if self.key is None:
            return _json(create().model_dump(mode="json"), status_code)
        request_print = fingerprint(self.method, self.path, body)
        stored = idempotency_service.lookup(
            self.session, self.tenant, key=self.key, fingerprint=request_print
        )
        if stored is not None:
            if current is not None:
                _check_not_deleted(stored.body, current)
            return _json(stored.body, stored.status_code, replayed=True)
        content = create().model_dump(mode="json")
        idempotency_service.store(
            self.session,
            self.tenant,
            key=self.key,
            fingerprint=request_print,
            status_code=status_code,
            body={k: (None if k in secret_fields else v) for k, v in content.items()},
        )
        return _json(content, status_code)


def _check_not_deleted(body: Any, current: Callable[[str], object]) -> None:
    object_id = body.get("id") if isinstance(body, dict) else None
    if not isinstance(object_id, str):
        return
    try:
        current(object_id)
    except NotFound as exc:
        raise CreatedObjectDeleted(
            f"{object_id}, created by the first request with this Idempotency-Key, was deleted "
            "since; send a new Idempotency-Key to create it again",
            field=HEADER,
        ) from exc


def _json(content: Any, status_code: int, *, replayed: bool = False) -> JSONResponse:
    headers = {REPLAYED_HEADER: "true"} if replayed else {}
    return JSONResponse(content, status_code=status_code, headers=headers)


async def idempotent_call(
    request: Request,
    session: SessionDep,
    tenant: TenantDep,
    key: Annotated[
        str | None,
        Header(
            alias=HEADER,
            min_length=1,
            max_length=MAX_KEY_LENGTH,
            description="Makes retries safe: the same key and body replay the first answer; "
            "the same key with another body is a 409.",
        ),
    ] = None,
) -> IdempotentCall:
    """The idempotency handle of a creating POST (no I/O: it runs on the event loop)."""
    return IdempotentCall(
        session=session,
        tenant=tenant,
        key=key.strip() if key and key.strip() else None,
        method=request.method,
        path=request.url.path,
    )


IdempotencyDep = Annotated[IdempotentCall, Depends(idempotent_call)]
