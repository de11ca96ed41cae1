"""The console's webhooks pages: every project's endpoints, an endpoint's delivery log with
each attempt, and redelivering a DEAD or SKIPPED delivery (the `write` scope, as
`POST /v1/webhooks/{id}/deliveries/{id}/redeliver`), all through the webhooks service; and the
tenant's dead letters (as `GET /v1/dead-letters`, with their redrive audit), each open one
redriven with a reason through the events service (the `write` scope, as
`docflow dead-letters redrive`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from docflow.errors import InvalidInput
from docflow.events import service as events_service
from docflow.events.envelopes import EVENT_TYPES
from docflow.http.deps import ClientDep, SessionDep, SettingsDep
from docflow.projects import service as projects_service
from docflow.web.auth_api import PREFIX, Member, MemberDep, TemplatesDep, page
from docflow.webhooks import service as webhooks_service
from docflow.webhooks.models import DeliveryStatus

router = APIRouter(include_in_schema=False)

WRITE_SCOPE = "write"
# Projects, endpoints per project and deliveries shown (the API pages through more).
SHOWN = 50
RESENDABLE = frozenset({DeliveryStatus.DEAD, DeliveryStatus.SKIPPED})
# Characters of a redrive's reason (kept in the letter's audit).
MAX_REASON = 500
# An endpoint's URL and description, as `EndpointCreate` bounds them.
MAX_URL = 2000
MAX_DESCRIPTION = 500


@router.get("/webhooks", response_class=HTMLResponse)
def webhooks_page(
    request: Request, member: MemberDep, session: SessionDep, templates: TemplatesDep
) -> Response:
    """The tenant's projects (newest first) and each one's endpoints; its dead letters."""
    projects = projects_service.list_projects(session, member.tenant, cursor=None, limit=SHOWN)
    listed = [
        (
            project,
            webhooks_service.list_endpoints(
                session, member.tenant, project_id=project.id, cursor=None, limit=SHOWN
            ).items,
        )
        for project in projects.items
    ]
    letters = events_service.list_dead_letters(session, member.tenant, limit=SHOWN)
    return page(
        templates,
        request,
        "webhooks.html",
        member,
        projects=listed,
        letters=letters,
        shown=SHOWN,
        max_reason=MAX_REASON,
    )


def _new_form(
    templates: TemplatesDep,
    request: Request,
    session: SessionDep,
    member: Member,
    *,
    status_code: int = 200,
    **context: object,
) -> Response:
    projects = projects_service.list_projects(session, member.tenant, cursor=None, limit=SHOWN)
    defaults: dict[str, object] = {
        "project_id": None,
        "url": "",
        "chosen": [],
        "description": "",
        "errors": [],
        "created": None,
    }
    return page(
        templates,
        request,
        "webhook_new.html",
        member,
        status_code=status_code,
        projects=projects.items,
        event_types=EVENT_TYPES,
        max_url=MAX_URL,
        max_description=MAX_DESCRIPTION,
        **{**defaults, **context},
    )


@router.get("/webhooks/new", response_class=HTMLResponse)
def new_endpoint_page(
    request: Request, member: MemberDep, session: SessionDep, templates: TemplatesDep
) -> Response:
    """The form registering a webhook endpoint of one of the tenant's projects (`write`)."""
    member.require(WRITE_SCOPE)
    return _new_form(templates, request, session, member)


@router.post("/webhooks/new", response_class=HTMLResponse)
def create_endpoint(
    request: Request,
    member: MemberDep,
    session: SessionDep,
    settings: SettingsDep,
    templates: TemplatesDep,
    project_id: Annotated[str, Form(min_length=1, max_length=40)],
    url: Annotated[str, Form(min_length=1, max_length=MAX_URL)],
    event_types: Annotated[list[str] | None, Form(max_length=len(EVENT_TYPES))] = None,
    description: Annotated[str, Form(max_length=MAX_DESCRIPTION)] = "",
) -> Response:
    """Register an endpoint as the API does, showing its secret this once (201)."""
    member.require(WRITE_SCOPE)
    chosen = event_types or []
    try:
        # Refused before anything is written, so the session stays clean.
        created = webhooks_service.create_endpoint(
            session,
            member.tenant,
            project_id=project_id,
            url=url,
            event_types=chosen,
            description=description,
            key_material=settings.signing_secret,
            allow_private=settings.allow_private_webhook_urls,
        )
    except InvalidInput as exc:
        return _new_form(
            templates,
            request,
            session,
            member,
            status_code=422,
            project_id=project_id,
            url=url,
            chosen=chosen,
            description=description,
            errors=[(exc.field or "(endpoint)", exc.detail)],
        )
    shown = _new_form(templates, request, session, member, status_code=201, created=created)
    # The secret is in this page only: no cache keeps it.
    shown.headers["Cache-Control"] = "no-store"
    return shown


@router.get("/webhooks/{endpoint_id}", response_class=HTMLResponse)
def endpoint_page(
    endpoint_id: str,
    request: Request,
    member: MemberDep,
    session: SessionDep,
    templates: TemplatesDep,
) -> Response:
    """An endpoint and its latest deliveries, newest first, with every attempt."""
    endpoint = webhooks_service.get_endpoint(session, member.tenant, endpoint_id=endpoint_id)
    log = webhooks_service.delivery_log(
        session, member.tenant, endpoint_id=endpoint_id, cursor=None, limit=SHOWN
    )
    return page(
        templates,
        request,
        "endpoint.html",
        member,
        endpoint=endpoint,
        deliveries=log.items,
        resendable=RESENDABLE,
        more=log.next_cursor is not None,
    )


@router.post("/webhooks/{endpoint_id}/deliveries/{delivery_id}/redeliver")
def redeliver(
    endpoint_id: str,
    delivery_id: str,
    member: MemberDep,
    session: SessionDep,
    client: ClientDep,
) -> Response:
    """Send a DEAD or SKIPPED delivery again (same event, same `webhook-id`)."""
    member.require(WRITE_SCOPE)
    webhooks_service.redeliver(
        session, client, member.tenant, endpoint_id=endpoint_id, delivery_id=delivery_id
    )
    return RedirectResponse(f"{PREFIX}/webhooks/{endpoint_id}", status_code=303)


@router.post("/webhooks/dead-letters/{letter_id}/redrive")
def redrive(
    letter_id: str,
    member: MemberDep,
    session: SessionDep,
    client: ClientDep,
    reason: Annotated[str, Form(min_length=1, max_length=MAX_REASON)],
) -> Response:
    """Deliver a dead letter's event again to its consumer, recording who asked and why."""
    member.require(WRITE_SCOPE)
    events_service.redrive(
        session,
        client,
        member.tenant,
        letter_id=letter_id,
        actor=f"console {member.email}",
        reason=reason,
    )
    return RedirectResponse(f"{PREFIX}/webhooks#dead-letters", status_code=303)
