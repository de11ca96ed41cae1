"""The console's composition: its routers under `/console`, its static files, its templates,
sessions and page cache on the app, its security headers, and how its errors answer (an HTML
page for a browser, problem+json for everything else)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from docflow.errors import DomainError
from docflow.extraction.limits import EngineLimits
from docflow.http.headers import ResponseHeaders
from docflow.web import pages
from docflow.web.account_api import router as account_router
from docflow.web.auth_api import PREFIX, SignInRequired
from docflow.web.auth_api import router as auth_router
from docflow.web.batches_api import router as batches_router
from docflow.web.canvas_api import router as canvas_router
from docflow.web.documents_api import router as documents_router
from docflow.web.oidc import OidcClient, OidcConfig
from docflow.web.review_api import router as review_router
from docflow.web.sessions import OidcFlows, Sessions
from docflow.web.usage_api import router as usage_router
from docflow.web.users_api import router as users_router
from docflow.web.webhooks_api import router as webhooks_router
from docflow.web.workflows_api import router as workflows_router

HERE = Path(__file__).resolve().parent
STATIC_PATH = f"{PREFIX}/static"
# How long a browser may take at the issuer's sign-in page.
OIDC_FLOW_SECONDS = 600
# What a console page may load and run: only the console's own files. No inline script, style
# element or style attribute (positions and widths are set by the scripts, through the
# CSSOM), no eval (htmx's is off, see base.html), no plugin, no <base>; never framed.
# `form-action` stays unset: signing in with OpenID Connect posts a form that is redirected to
# the issuer, and Chromium checks the redirect's target against it too.
CONSOLE_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    )
)
CONSOLE_HEADERS = {"Content-Security-Policy": CONSOLE_POLICY, "X-Frame-Options": "DENY"}


def _templates() -> Jinja2Templates:
    templates = Jinja2Templates(directory=HERE / "templates")
    templates.env.globals["prefix"] = PREFIX
    templates.env.globals["static"] = STATIC_PATH
    templates.env.filters["pct"] = lambda v: "" if v is None else f"{100 * float(v):.0f}%"
    return templates


def mount_console(
    app: FastAPI,
    *,
    secret: str,
    session_hours: int,
    cache_dir: Path,
    cache_max_bytes: int,
    limits: EngineLimits,
    oidc: OidcConfig | None = None,
) -> None:
    """Serve the console at `/console` from `app`, signing sessions with `secret`, with
    OpenID Connect sign-in through `oidc`'s issuer when given."""
    app.state.console_templates = _templates()
    app.state.console_sessions = Sessions(secret, lifetime_seconds=session_hours * 3600)
    app.state.console_oidc = OidcClient(oidc) if oidc else None
    app.state.console_oidc_flows = OidcFlows(secret, lifetime_seconds=OIDC_FLOW_SECONDS)
    app.state.console_cache = pages.FileCache(cache_dir, cache_max_bytes, secret)
    app.state.console_limits = limits
    for router in (
        account_router,
        auth_router,
        batches_router,
        canvas_router,
        documents_router,
        review_router,
        usage_router,
        users_router,
        webhooks_router,
        workflows_router,
    ):
        app.include_router(router, prefix=PREFIX)
    app.add_api_route(PREFIX, _home, include_in_schema=False)
    app.add_api_route(f"{PREFIX}/", _home, include_in_schema=False)
    app.mount(STATIC_PATH, StaticFiles(directory=HERE / "static"), name="console-static")
    app.add_middleware(ResponseHeaders, headers=CONSOLE_HEADERS, path_prefix=PREFIX)
    app.add_exception_handler(SignInRequired, _sign_in_required)
    problem = app.exception_handlers[DomainError]

    async def domain_error(request: Request, exc: Exception) -> Response:
        # A console script asking for JSON (the canvas's preview) gets problem+json too.
        wants_json = request.headers.get("accept", "").startswith("application/json")
        if (
            not request.url.path.startswith(f"{PREFIX}/")
            or not isinstance(exc, DomainError)
            or wants_json
        ):
            answer = problem(request, exc)
            return await answer if inspect.isawaitable(answer) else answer
        return _error_page(request, exc)

    app.add_exception_handler(DomainError, domain_error)


async def _home() -> Response:
    return RedirectResponse(f"{PREFIX}/batches", status_code=303)


async def _sign_in_required(request: Request, exc: Exception) -> Response:
    to = exc.to if isinstance(exc, SignInRequired) else f"{PREFIX}/sign-in"
    if request.headers.get("HX-Request"):
        return Response(status_code=401, headers={"HX-Redirect": to})
    if request.headers.get("accept", "").startswith("text/event-stream"):
        return Response(status_code=401)
    return RedirectResponse(to, status_code=303)


def _error_page(request: Request, exc: DomainError) -> Response:
    templates: Jinja2Templates = request.app.state.console_templates
    context: dict[str, Any] = {"member": None, "csrf": "", "error": exc, "status": exc.status}
    response: HTMLResponse = templates.TemplateResponse(
        request, "error.html", context, status_code=exc.status
    )
    return response
