"""Request dependencies: the transaction, the verified tenant, the app's services and page
parameters, each a typed `Annotated` alias (`SessionDep`, `TenantDep`, `SettingsDep`,
`StorageDep`, `ClientDep`, `WriteSessionsDep`, `PageDep`) that handlers declare.

`create_app` puts the app's services on `app.state`; the dependencies below are the only code
that reads them there (and `health`, its own readiness checks), handing them to handlers typed.

Dependencies that do no I/O are `async def`: they run on the event loop, not in the
threadpool, so a request hops to a worker thread only for what touches the database.

The edge owns the transaction: `get_session` commits when the handler returns and rolls back
when it raises, before the response is sent (scope "function"), so a client never sees a success
that was not committed. Handlers therefore return Pydantic models built inside the handler,
never ORM rows. Authentication does not use that transaction: it reads the key in a session of
its own (when it reads at all), and records the key's use after the response.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import Annotated

import structlog
from dbos import DBOSClient
from fastapi import BackgroundTasks, Depends, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CollectorRegistry
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from docflow import db
from docflow.config import Settings
from docflow.errors import Forbidden, TooManyRequests, Unauthorized
from docflow.kit.inputs import Timestamp
from docflow.kit.pagination import DEFAULT_LIMIT, MAX_LIMIT
from docflow.quotas import service as quotas_service
from docflow.quotas.limiter import Decision, Limiter
from docflow.storage.base import Storage
from docflow.tenancy import TenantContext
from docflow.tenants import service as tenants_service
from docflow.workflows.evaluation import Evaluator

log = structlog.get_logger(__name__)

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
        state.session_factory if request.method in _SAFE_METHODS else state.write_session_factory
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


async def _read_sessions(request: Request) -> sessionmaker[Session]:
    factory: sessionmaker[Session] = request.app.state.session_factory
    return factory


async def get_write_sessions(request: Request) -> sessionmaker[Session]:
    """The write session factory, for the use cases that run their own short transactions
    around slow I/O (an upload's storage reads) instead of the request's transaction."""
    factory: sessionmaker[Session] = request.app.state.write_session_factory
    return factory


WriteSessionsDep = Annotated[sessionmaker[Session], Depends(get_write_sessions)]


async def get_storage(request: Request) -> Storage:
    """The object storage of document files and results."""
    storage: Storage = request.app.state.storage
    return storage


StorageDep = Annotated[Storage, Depends(get_storage)]


async def get_client(request: Request) -> DBOSClient:
    """The app's DBOS client: enqueues and reads executions, whether or not this process runs
    them."""
    client: DBOSClient = request.app.state.dbos_client
    return client


ClientDep = Annotated[DBOSClient, Depends(get_client)]


async def current_tenant(
    request: Request,
    response: Response,
    session: SessionDep,
    read_sessions: Annotated[sessionmaker[Session], Depends(_read_sessions)],
    write_sessions: WriteSessionsDep,
    background: BackgroundTasks,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> TenantContext:
    """Verify the Bearer API key, hold it to its plan's request rate, and bind its tenant to
    the request's session.

    The key is read in a read-only session of its own (the request's transaction has not begun
    yet, so a handler that runs its own write transactions holds no lock), and its use is
    recorded after the response. Over the rate: 429 `rate_limited` with `Retry-After`; every
    answer within it carries the `RateLimit-*` headers.
    """
    if credentials is None or not credentials.credentials.strip():
        raise Unauthorized("an API key is required: send 'Authorization: Bearer <key>'")
    authenticated = await run_in_threadpool(
        _authenticate, read_sessions, credentials.credentials.strip()
    )
    tenant = authenticated.tenant
    settings: Settings = request.app.state.settings
    limiter: Limiter = request.app.state.limiter
    decision = await run_in_threadpool(_take, read_sessions, limiter, settings, tenant)
    if decision is not None:
        if not decision.allowed:
            raise TooManyRequests(
                "this API key sends more requests than its plan allows; retry after "
                f"{decision.headers()['Retry-After']} s",
                headers=decision.headers(),
            )
        response.headers.update(decision.headers())
    db.bind_tenant(session, tenant.tenant_id)
    if authenticated.use is not None:
        background.add_task(_record_key_use, write_sessions, authenticated.use)
    return tenant


def _authenticate(factory: sessionmaker[Session], token: str) -> tenants_service.Authenticated:
    with factory() as session:
        return tenants_service.authenticate(session, token=token)


def _take(
    factory: sessionmaker[Session], limiter: Limiter, settings: Settings, tenant: TenantContext
) -> Decision | None:
    with factory() as session:
        plan = settings.plan(quotas_service.plan_name(session, tenant.tenant_id))
    return limiter.take(tenant.tenant_id, tenant.key_id or "", plan)


def _record_key_use(factory: sessionmaker[Session], use: tenants_service.KeyUse) -> None:
    # Best effort, after the response: a busy database leaves `last_used_at` to the key's use
    # due a minute later rather than failing anything.
    try:
        with factory() as session, session.begin():
            tenants_service.record_key_use(session, use)
    except OperationalError:
        log.debug("api_key.touch_skipped", key_id=use.key_id)


TenantDep = Annotated[TenantContext, Depends(current_tenant)]


async def get_tenant_reads(
    tenant: TenantDep, factory: Annotated[sessionmaker[Session], Depends(_read_sessions)]
) -> Callable[[], Session]:
    """Opens read sessions bound to the caller's tenant, apart from the request's transaction:
    for a use case that reads briefly and then works long without holding a connection (a
    workflow evaluation runs the engine after its reads)."""

    def open_session() -> Session:
        session = factory()
        db.bind_tenant(session, tenant.tenant_id)
        return session

    return open_session


TenantReadsDep = Annotated[Callable[[], Session], Depends(get_tenant_reads)]


async def get_evaluator(request: Request) -> Evaluator:
    """What a workflow evaluation may spend, and its engines."""
    evaluator: Evaluator = request.app.state.evaluator
    return evaluator


EvaluatorDep = Annotated[Evaluator, Depends(get_evaluator)]

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


async def get_metrics_registry(request: Request) -> CollectorRegistry:
    """What `/metrics` renders; with `DOCFLOW_METRICS_TOKEN` set, only for a request bearing
    that token (401 otherwise)."""
    token: str = request.app.state.settings.metrics_token
    if token:
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            raise Unauthorized("the metrics endpoint needs its bearer token")
    registry: CollectorRegistry = request.app.state.metrics_registry
    return registry


MetricsRegistryDep = Annotated[CollectorRegistry, Depends(get_metrics_registry)]


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

# Query parameters the tenant-wide lists share (`GET /v1/batches`, `GET /v1/documents`).
IdQuery = Annotated[str | None, Query(max_length=40)]
# Times are `Timestamp`s, as in bodies: an RFC 3339 date-time with its offset, within the
# range every engine stores (a number, a naive time or one past year 9999 in UTC is a 422).
SinceQuery = Annotated[
    Timestamp | None, Query(description="created at this time or later (with a timezone)")
]
UntilQuery = Annotated[
    Timestamp | None, Query(description="created before this time (with a timezone)")
]
