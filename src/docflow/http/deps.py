"""Request dependencies: the transaction, the verified tenant, settings and page parameters.

Dependencies that do no I/O are `async def`: they run on the event loop, not in the
threadpool, so a request hops to a worker thread only for what touches the database.

The edge owns the transaction: `get_session` commits when the handler returns and rolls back
when it raises, before the response is sent (scope "function"), so a client never sees a success
that was not committed. Handlers therefore return Pydantic models built inside the handler,
never ORM rows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session, sessionmaker

from docflow import db
from docflow.config import Settings
from docflow.errors import Forbidden, Unauthorized
from docflow.kit.pagination import DEFAULT_LIMIT, MAX_LIMIT
from docflow.tenancy import TenantContext
from docflow.tenants import service as tenants_service

_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="ApiKey",
    description="A tenant API key: `Authorization: Bearer <key>`. The tenant comes from the key.",
)


async def get_session(request: Request) -> AsyncIterator[Session]:
    """One session per request: commit on success, roll back on any error.

    A request that may write (any method but GET, HEAD, OPTIONS) uses the write session
    factory: on SQLite its transaction begins IMMEDIATE, so it waits for the write lock (the
    durable runtime's workers write to the same file) rather than failing half-way. Making the
    session does no I/O; the commit (or rollback) and close run in the threadpool, in one hop.
    """
    state = request.app.state
    factory: sessionmaker[Session] = (
        state.session_factory
        if request.method in _SAFE_METHODS
        else getattr(state, "write_session_factory", state.session_factory)
    )
    session = factory()
    try:
        yield session
    except BaseException:
        await run_in_threadpool(_end, session, commit=False)
        raise
    await run_in_threadpool(_end, session, commit=True)


def _end(session: Session, *, commit: bool) -> None:
    try:
        if commit:
            session.commit()
        else:
            session.rollback()
    finally:
        session.close()


SessionDep = Annotated[Session, Depends(get_session, scope="function")]


def current_tenant(
    session: SessionDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> TenantContext:
    """Verify the Bearer API key and bind its tenant to the request's transaction."""
    if credentials is None or not credentials.credentials.strip():
        raise Unauthorized("an API key is required: send 'Authorization: Bearer <key>'")
    tenant = tenants_service.authenticate(session, token=credentials.credentials.strip())
    db.bind_tenant(session, tenant.tenant_id)
    return tenant


TenantDep = Annotated[TenantContext, Depends(current_tenant)]

READ_SCOPE = "read"
WRITE_SCOPE = "write"
ADMIN_SCOPE = "admin"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def require_scope(
    *, read: str = READ_SCOPE, write: str = WRITE_SCOPE
) -> Callable[..., Coroutine[None, None, None]]:
    """A router dependency: reads need the `read` scope, changes the `write` scope ("*" is
    every scope). 403 otherwise."""

    async def check(request: Request, tenant: TenantDep) -> None:
        needed = read if request.method in _SAFE_METHODS else write
        if not tenant.has_scope(needed):
            raise Forbidden(f"this API key lacks the {needed!r} scope")

    return check


async def get_settings(request: Request) -> Settings:
    """The settings the app was created with (read once, at the composition root)."""
    settings: Settings = request.app.state.settings
    return settings


SettingsDep = Annotated[Settings, Depends(get_settings)]


@dataclass(frozen=True, slots=True)
class PageParams:
    """Cursor pagination: an opaque cursor from the previous page and a page size."""

    cursor: str | None
    limit: int


async def page_params(
    cursor: Annotated[
        str | None, Query(description="`next_cursor` of the previous page; omit for the first")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="page size")] = DEFAULT_LIMIT,
) -> PageParams:
    """Read the pagination query parameters."""
    return PageParams(cursor=cursor or None, limit=limit)


PageDep = Annotated[PageParams, Depends(page_params)]
