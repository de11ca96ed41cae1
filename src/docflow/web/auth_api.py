"""Console sign-in, tenant choice and sign-out, and the dependency every console page declares
(`MemberDep`): the signed-in user as a member of the tenant they chose, with the scopes of
their role, exactly the scopes an API key of theirs would hold (`tenants.service.ROLE_SCOPES`).

Every state-changing console request must carry the session's CSRF token (a form field or the
`X-CSRF-Token` header that htmx sends); see `docflow.web.sessions`.

Signing in is by password or, when an issuer is configured, through OpenID Connect
(`docflow.web.oidc`, `docflow.tenants.identities`): both end the same way (`_start_session`),
in the same session cookie. A member of only suspended tenants is refused at sign-in, and a
session's tenant, once suspended, refuses every console page until it is resumed.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote

import structlog
from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from sqlalchemy.orm import Session, sessionmaker

from docflow import db
from docflow.config import Settings
from docflow.errors import Forbidden, NotFound, Unauthorized
from docflow.http.deps import SessionDep, SettingsDep, WriteSessionsDep
from docflow.http.query import Prefixed
from docflow.tenancy import TenantContext, from_credential
from docflow.tenants import identities, invitations, passwords, throttle
from docflow.tenants import service as tenants_service
from docflow.tenants import status as tenant_status
from docflow.web.oidc import Identity, IssuerUnavailable, OidcClient, TokenRefused
from docflow.web.sessions import (
    COOKIE,
    CSRF_FIELD,
    CSRF_HEADER,
    OIDC_COOKIE,
    SIGN_IN_COOKIE,
    ConsoleSession,
    OidcFlows,
    Sessions,
    sign_in_token,
)

log = structlog.get_logger(__name__)

PREFIX = "/console"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

router = APIRouter(include_in_schema=False)


class SignInRequired(Exception):
    """The request has no valid session (or no tenant chosen yet): the console answers with
    the sign-in (or tenant choice) page instead."""

    def __init__(self, to: str) -> None:
        super().__init__(to)
        self.to = to


async def get_templates(request: Request) -> Jinja2Templates:
    templates: Jinja2Templates = request.app.state.console_templates
    return templates


async def get_sessions(request: Request) -> Sessions:
    sessions: Sessions = request.app.state.console_sessions
    return sessions


async def get_oidc(request: Request) -> OidcClient | None:
    oidc: OidcClient | None = request.app.state.console_oidc
    return oidc


async def get_oidc_flows(request: Request) -> OidcFlows:
    flows: OidcFlows = request.app.state.console_oidc_flows
    return flows


TemplatesDep = Annotated[Jinja2Templates, Depends(get_templates)]
SessionsDep = Annotated[Sessions, Depends(get_sessions)]
OidcDep = Annotated[OidcClient | None, Depends(get_oidc)]
OidcFlowsDep = Annotated[OidcFlows, Depends(get_oidc_flows)]


@dataclass(frozen=True, slots=True)
class Member:
    """The signed-in user in their chosen tenant: `tenant` is what services take."""

    tenant: TenantContext
    session: ConsoleSession
    role: str
    email: str
    name: str
    tenants: tuple[tuple[str, str], ...]
    csrf: str
    tenant_name: str = ""

    def can(self, scope: str) -> bool:
        return self.tenant.has_scope(scope)

    def require(self, scope: str) -> None:
        """Forbidden unless the member's role grants `scope` (as the API's `require_scope`)."""
        if not self.can(scope):
            raise Forbidden(f"a {self.role} may not do this (it needs the {scope!r} scope)")


async def _csrf_sent(request: Request) -> str | None:
    header = request.headers.get(CSRF_HEADER)
    if header:
        return header
    if request.headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    ):
        value = (await request.form()).get(CSRF_FIELD)
        return value if isinstance(value, str) else None
    return None


async def _signed_in(request: Request, sessions: Sessions) -> ConsoleSession:
    session = sessions.decode(request.cookies.get(COOKIE))
    if session is None:
        raise SignInRequired(f"{PREFIX}/sign-in?next={quote(request.url.path)}")
    if request.method not in _SAFE_METHODS and not sessions.csrf_ok(
        session, await _csrf_sent(request)
    ):
        raise Forbidden("the form is out of date or was not sent by the console: reload the page")
    return session


class SessionEnded(Exception):
    """The session's epoch is no longer its user's: it was signed out (or the password changed,
    or the issuer binding was released) since the cookie was made."""


def _read_member(session: Session, console: ConsoleSession) -> passwords.SignedIn:
    """The session's user read afresh; `SessionEnded` when the session has ended."""
    user = passwords.signed_in(session, user_id=console.user_id)
    if user.epoch != console.epoch:
        raise SessionEnded()
    return user


def _read_active_member(
    session: Session, console: ConsoleSession, tenant_id: str
) -> passwords.SignedIn:
    user = _read_member(session, console)
    if user.role_in(tenant_id) is not None and tenant_status.is_suspended(session, tenant_id):
        raise tenants_service.TenantSuspended(
            f"the tenant {tenant_id} is suspended: its console is closed until it is resumed"
        )
    return user


async def current_member(request: Request, sessions: SessionsDep, session: SessionDep) -> Member:
    """The signed-in member of the chosen tenant, bound to the request's session; the sign-in
    page when signed out, the tenant choice when the user is no longer a member of it."""
    console = await _signed_in(request, sessions)
    user = await _afresh(request, _read_active_member, session, console, console.tenant_id)
    role = user.role_in(console.tenant_id)
    if role is None:
        raise SignInRequired(f"{PREFIX}/tenants")
    tenant = TenantContext(
        tenant_id=from_credential(console.tenant_id),
        scopes=tenants_service.ROLE_SCOPES[role],
        user_id=console.user_id,
    )
    db.bind_tenant(session, tenant.tenant_id)
    return Member(
        tenant,
        console,
        role,
        user.email,
        user.name,
        user.tenants,
        sessions.csrf_token(console),
        user.name_of(console.tenant_id),
    )


MemberDep = Annotated[Member, Depends(current_member)]


@dataclass(frozen=True, slots=True)
class Account:
    """The signed-in user, whether or not they chose a tenant: their own account's pages."""

    session: ConsoleSession
    user: passwords.SignedIn
    csrf: str


async def current_account(request: Request, sessions: SessionsDep, session: SessionDep) -> Account:
    """The signed-in user read afresh; the sign-in page when signed out."""
    console = await _signed_in(request, sessions)
    user = await _afresh(request, _read_member, session, console)
    return Account(console, user, sessions.csrf_token(console))


AccountDep = Annotated[Account, Depends(current_account)]


async def _afresh(
    request: Request, read: Callable[..., passwords.SignedIn], *args: Any
) -> passwords.SignedIn:
    """The session's user read by `read` (in the threadpool); the sign-in page when the
    session has ended."""
    try:
        return await run_in_threadpool(read, *args)
    except SessionEnded:
        raise SignInRequired(f"{PREFIX}/sign-in?next={quote(request.url.path)}") from None


def page(
    templates: Jinja2Templates,
    request: Request,
    name: str,
    member: Member | None,
    status_code: int = 200,
    **context: Any,
) -> HTMLResponse:
    """Render template `name` with the member (for the header, the CSRF token and roles)."""
    return templates.TemplateResponse(
        request,
        name,
        {"member": member, "csrf": member.csrf if member else "", **context},
        status_code=status_code,
    )


def _secure(request: Request, public_base_url: str, setting: bool | None) -> bool:
    if setting is not None:
        return setting
    return request.url.scheme == "https" or public_base_url.startswith("https://")


def _set_cookie(response: Response, name: str, value: str, *, secure: bool, age: int) -> None:
    response.set_cookie(
        name, value, max_age=age, path=PREFIX, httponly=True, samesite="lax", secure=secure
    )


def _safe_next(value: str | None) -> str:
    """Only a console path: never an open redirect to another site."""
    if value and value.startswith(f"{PREFIX}/") and not value.startswith("//"):
        return value
    return f"{PREFIX}/batches"


def _sign_in_form(
    request: Request,
    templates: Jinja2Templates,
    settings: Settings,
    next: str | None,
    *,
    status_code: int = 200,
    **context: Any,
) -> Response:
    """The sign-in page (with the OpenID Connect button when an issuer is configured) and a
    fresh double-submit token."""
    token = sign_in_token()
    oidc: OidcClient | None = request.app.state.console_oidc
    response = page(
        templates,
        request,
        "sign_in.html",
        None,
        status_code=status_code,
        token=token,
        next=_safe_next(next),
        oidc_label=oidc.label if oidc else "",
        **context,
    )
    secure = _secure(request, settings.public_base_url, settings.console_secure_cookies)
    _set_cookie(response, SIGN_IN_COOKIE, token, secure=secure, age=3600)
    return response


def _check_sign_in_token(request: Request, token: str) -> None:
    expected = request.cookies.get(SIGN_IN_COOKIE)
    if not expected or expected != token:
        raise Forbidden("the sign-in form is out of date: reload the page")


def _open_session(session: Session, sessions: Sessions, user_id: str) -> ConsoleSession:
    """A new session of `user_id`, in their tenant when they have one active tenant;
    `SignInRefused` when every tenant they belong to is suspended."""
    user = passwords.signed_in(session, user_id=user_id)
    tenants = user.tenants
    active = [t for t, _ in tenants if not tenant_status.is_suspended(session, t)]
    if tenants and not active:
        raise identities.SignInRefused(
            "your tenant is suspended: the console is closed until it is resumed"
        )
    console = sessions.new(user_id, epoch=user.epoch)
    return console.in_tenant(active[0]) if len(active) == 1 else console


def _start_session(
    request: Request, sessions: Sessions, settings: Settings, console: ConsoleSession, next: str
) -> Response:
    """The answer of a sign-in that succeeded: the session cookie, then the page asked for
    (or the tenant choice)."""
    target = _safe_next(next) if console.tenant_id else f"{PREFIX}/tenants"
    response = RedirectResponse(target, status_code=303)
    secure = _secure(request, settings.public_base_url, settings.console_secure_cookies)
    _set_cookie(
        response, COOKIE, sessions.encode(console), secure=secure, age=sessions.lifetime_seconds
    )
    response.delete_cookie(SIGN_IN_COOKIE, path=PREFIX)
    return response


@router.get("/sign-in", response_class=HTMLResponse)
def sign_in_page(
    request: Request, templates: TemplatesDep, settings: SettingsDep, next: str | None = None
) -> Response:
    """The sign-in form, with a fresh double-submit token."""
    return _sign_in_form(request, templates, settings, next)


@router.post("/sign-in", response_class=HTMLResponse)
def sign_in(
    request: Request,
    templates: TemplatesDep,
    sessions: SessionsDep,
    settings: SettingsDep,
    session: SessionDep,
    email: Annotated[str, Form(max_length=320)],
    password: Annotated[str, Form(max_length=passwords.MAX_LENGTH)],
    token: Annotated[str, Form(alias=CSRF_FIELD, max_length=64)],
    next: Annotated[str, Form(max_length=500)] = "",
) -> Response:
    """Check the email and password; on success a session cookie, then the tenant choice."""
    _check_sign_in_token(request, token)
    address = request.client.host if request.client else ""
    try:
        user_id = passwords.sign_in(session, email=email, password=password, address=address)
        console = _open_session(session, sessions, user_id)
    except (Unauthorized, identities.SignInRefused, throttle.SignInThrottled) as refused:
        answer = _sign_in_form(
            request,
            templates,
            settings,
            next,
            status_code=refused.status,
            error=str(refused),
            email=email,
        )
        answer.headers.update(getattr(refused, "headers", {}))
        return answer
    return _start_session(request, sessions, settings, console, next)


def _redirect_uri(settings: Settings) -> str:
    return f"{settings.public_base_url.rstrip('/')}{PREFIX}/sign-in/oidc/callback"


@router.post("/sign-in/oidc")
async def sign_in_oidc(
    request: Request,
    templates: TemplatesDep,
    settings: SettingsDep,
    oidc: OidcDep,
    flows: OidcFlowsDep,
    token: Annotated[str, Form(alias=CSRF_FIELD, max_length=64)],
    next: Annotated[str, Form(max_length=500)] = "",
) -> Response:
    """Send the browser to the OpenID Connect issuer to sign in (when one is configured)."""
    if oidc is None:
        raise NotFound("no OpenID Connect issuer is configured")
    _check_sign_in_token(request, token)
    flow = flows.new(_safe_next(next))
    try:
        url = await oidc.authorization_url(
            state=flow.state,
            nonce=flow.nonce,
            verifier=flow.verifier,
            redirect=_redirect_uri(settings),
        )
    except IssuerUnavailable as failed:
        log.warning("user.oidc_issuer_unavailable", reason=str(failed))
        return _sign_in_form(
            request, templates, settings, next, status_code=502, error=_UNAVAILABLE
        )
    response = RedirectResponse(url, status_code=303)
    secure = _secure(request, settings.public_base_url, settings.console_secure_cookies)
    _set_cookie(
        response, OIDC_COOKIE, flows.encode(flow), secure=secure, age=flows.lifetime_seconds
    )
    return response


# Issuers add parameters of their own to their answer (`session_state`, `scope`, ...): the
# callback takes any of them, and reads only those above.
ISSUER_PARAMETERS = Prefixed("")
_UNAVAILABLE = "the sign-in service did not answer in time: try again, or sign in with a password"


def _oidc_user(
    write_sessions: sessionmaker[Session], sessions: Sessions, identity: Identity
) -> ConsoleSession:
    """The callback is a GET that writes (the binding at a first sign-in, the user's sign-in
    time): its own write transaction, IMMEDIATE on SQLite, waits for the workers' writes where
    a read transaction upgraded to a write would fail at once with the database busy."""
    with write_sessions.begin() as session:
        user_id = identities.sign_in_oidc(
            session,
            issuer=identity.issuer,
            subject=identity.subject,
            email=identity.email,
            email_verified=identity.email_verified,
        )
        return _open_session(session, sessions, user_id)


@router.get("/sign-in/oidc/callback", response_class=HTMLResponse)
async def oidc_callback(
    request: Request,
    templates: TemplatesDep,
    sessions: SessionsDep,
    settings: SettingsDep,
    write_sessions: WriteSessionsDep,
    oidc: OidcDep,
    flows: OidcFlowsDep,
    state: Annotated[str, Query(max_length=200)] = "",
    code: Annotated[str, Query(max_length=4096)] = "",
    error: Annotated[str, Query(max_length=200)] = "",
    iss: Annotated[str, Query(max_length=500)] = "",
    _issuer_parameters: Annotated[dict[str, str], Depends(ISSUER_PARAMETERS)] = {},  # noqa: B006
) -> Response:
    """The issuer's answer: check it, find the user, then sign in as with a password."""
    if oidc is None:
        raise NotFound("no OpenID Connect issuer is configured")
    flow = flows.decode(request.cookies.get(OIDC_COOKIE))

    def refused(status_code: int, message: str) -> Response:
        answer = _sign_in_form(
            request,
            templates,
            settings,
            flow.next if flow else None,
            status_code=status_code,
            error=message,
        )
        answer.delete_cookie(OIDC_COOKIE, path=PREFIX)
        return answer

    if flow is None or not hmac.compare_digest(flow.state, state):
        log.info("user.sign_in_refused", method="oidc", reason="state")
        return refused(
            400, "this sign-in was started too long ago, or in another browser: sign in again"
        )
    if iss and iss.rstrip("/") != oidc.config.issuer:  # RFC 9207: another issuer's answer
        log.info("user.sign_in_refused", method="oidc", reason="iss", iss=iss)
        return refused(400, "this answer comes from another sign-in service: sign in again")
    if error or not code:
        log.info("user.sign_in_refused", method="oidc", reason="issuer", error=error)
        return refused(401, f"the sign-in service refused the sign-in ({error or 'no code'})")
    try:
        identity = await oidc.identity(
            code=code, nonce=flow.nonce, verifier=flow.verifier, redirect=_redirect_uri(settings)
        )
    except TokenRefused as bad:
        log.warning("user.sign_in_refused", method="oidc", reason="token", detail=str(bad))
        return refused(401, "the sign-in service's answer failed its checks: sign in again")
    except IssuerUnavailable as failed:
        log.warning("user.oidc_issuer_unavailable", reason=str(failed))
        return refused(502, _UNAVAILABLE)
    try:
        console = await run_in_threadpool(_oidc_user, write_sessions, sessions, identity)
    except identities.SignInRefused as no:
        return refused(403, str(no))
    answer = _start_session(request, sessions, settings, console, flow.next)
    answer.delete_cookie(OIDC_COOKIE, path=PREFIX)
    return answer


@router.get("/tenants", response_class=HTMLResponse)
def tenants_page(
    request: Request, templates: TemplatesDep, account: AccountDep, session: SessionDep
) -> Response:
    """The tenants the user belongs to (by name), to choose one; the invitations waiting for
    them, to accept or decline; their name."""
    user = account.user
    return page(
        templates,
        request,
        "tenants.html",
        None,
        tenants=[(t, user.name_of(t), role) for t, role in user.tenants],
        invitations=invitations.pending_for(session, user_id=user.user_id),
        email=user.email,
        my_name=user.name,
        csrf_token=account.csrf,
        current=account.session.tenant_id,
    )


@router.post("/tenants")
async def choose_tenant(
    request: Request,
    sessions: SessionsDep,
    settings: SettingsDep,
    session: SessionDep,
    tenant_id: Annotated[str, Form(max_length=40)],
) -> Response:
    """Switch the session to one of the user's tenants (Forbidden for any other)."""
    console = await _signed_in(request, sessions)
    user = await _afresh(request, _read_active_member, session, console, tenant_id)
    if user.role_in(tenant_id) is None:
        raise Forbidden("you are not a member of this tenant")
    response = RedirectResponse(f"{PREFIX}/batches", status_code=303)
    secure = _secure(request, settings.public_base_url, settings.console_secure_cookies)
    _set_cookie(
        response,
        COOKIE,
        sessions.encode(console.in_tenant(tenant_id)),
        secure=secure,
        age=max(1, console.expires_at - int(time.time())),
    )
    return response


def _sign_out(session: Session, console: ConsoleSession) -> None:
    try:
        _read_member(session, console)
    except SessionEnded:
        return  # ended already: an old copy cannot end the sessions made since
    passwords.sign_out(session, user_id=console.user_id)


@router.post("/sign-out")
async def sign_out(request: Request, sessions: SessionsDep, session: SessionDep) -> Response:
    """End every session of the user (copies of their cookies included) and clear the cookie."""
    console = await _signed_in(request, sessions)
    await run_in_threadpool(_sign_out, session, console)
    response = RedirectResponse(f"{PREFIX}/sign-in", status_code=303)
    response.delete_cookie(COOKIE, path=PREFIX)
    return response
