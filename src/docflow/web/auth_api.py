"""Console sign-in, tenant choice and sign-out, and the dependency every console page declares
(`MemberDep`): the signed-in user as a member of the tenant they chose, with the scopes of
their role, exactly the scopes an API key of theirs would hold (`tenants.service.ROLE_SCOPES`).

Every state-changing console request must carry the session's CSRF token (a form field or the
`X-CSRF-Token` header that htmx sends); see `docflow.web.sessions`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Form, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from sqlalchemy.orm import Session

from docflow import db
from docflow.errors import Forbidden, Unauthorized
from docflow.http.deps import SessionDep, SettingsDep
from docflow.tenancy import TenantContext, from_credential
from docflow.tenants import passwords
from docflow.tenants import service as tenants_service
from docflow.web.sessions import (
    COOKIE,
    CSRF_FIELD,
    CSRF_HEADER,
    SIGN_IN_COOKIE,
    ConsoleSession,
    Sessions,
    sign_in_token,
)

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


TemplatesDep = Annotated[Jinja2Templates, Depends(get_templates)]
SessionsDep = Annotated[Sessions, Depends(get_sessions)]


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


def _read_member(session: Session, user_id: str) -> passwords.SignedIn:
    return passwords.signed_in(session, user_id=user_id)


async def current_member(request: Request, sessions: SessionsDep, session: SessionDep) -> Member:
    """The signed-in member of the chosen tenant, bound to the request's session; the sign-in
    page when signed out, the tenant choice when the user is no longer a member of it."""
    console = await _signed_in(request, sessions)
    user = await run_in_threadpool(_read_member, session, console.user_id)
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
        tenant, console, role, user.email, user.name, user.tenants, sessions.csrf_token(console)
    )


MemberDep = Annotated[Member, Depends(current_member)]


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


@router.get("/sign-in", response_class=HTMLResponse)
def sign_in_page(
    request: Request, templates: TemplatesDep, settings: SettingsDep, next: str | None = None
) -> Response:
    """The sign-in form, with a fresh double-submit token."""
    token = sign_in_token()
    response = page(templates, request, "sign_in.html", None, token=token, next=_safe_next(next))
    secure = _secure(request, settings.public_base_url, settings.console_secure_cookies)
    _set_cookie(response, SIGN_IN_COOKIE, token, secure=secure, age=3600)
    return response


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
    expected = request.cookies.get(SIGN_IN_COOKIE)
    if not expected or expected != token:
        raise Forbidden("the sign-in form is out of date: reload the page")
    try:
        user_id = passwords.sign_in(session, email=email, password=password)
    except Unauthorized as refused:
        return page(
            templates,
            request,
            "sign_in.html",
            None,
            status_code=401,
            token=token,
            next=_safe_next(next),
            error=str(refused),
            email=email,
        )
    console = sessions.new(user_id)
    tenants = passwords.signed_in(session, user_id=user_id).tenants
    if len(tenants) == 1:
        console = console.in_tenant(tenants[0][0])
    target = _safe_next(next) if console.tenant_id else f"{PREFIX}/tenants"
    response = RedirectResponse(target, status_code=303)
    secure = _secure(request, settings.public_base_url, settings.console_secure_cookies)
    _set_cookie(
        response, COOKIE, sessions.encode(console), secure=secure, age=sessions.lifetime_seconds
    )
    response.delete_cookie(SIGN_IN_COOKIE, path=PREFIX)
    return response


@router.get("/tenants", response_class=HTMLResponse)
async def tenants_page(
    request: Request, templates: TemplatesDep, sessions: SessionsDep, session: SessionDep
) -> Response:
    """The tenants the user belongs to, to choose one."""
    console = await _signed_in(request, sessions)
    user = await run_in_threadpool(_read_member, session, console.user_id)
    return page(
        templates,
        request,
        "tenants.html",
        None,
        tenants=user.tenants,
        email=user.email,
        csrf_token=sessions.csrf_token(console),
        current=console.tenant_id,
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
    user = await run_in_threadpool(_read_member, session, console.user_id)
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


@router.post("/sign-out")
async def sign_out(request: Request, sessions: SessionsDep) -> Response:
    """Clear the session cookie."""
    await _signed_in(request, sessions)
    response = RedirectResponse(f"{PREFIX}/sign-in", status_code=303)
    response.delete_cookie(COOKIE, path=PREFIX)
    return response
