"""The console's webhooks pages: every project's endpoints, an endpoint's delivery log with
each attempt, and redelivering a DEAD or SKIPPED delivery (the `write` scope, as
`POST /v1/webhooks/{id}/deliveries/{id}/redeliver`), all through the webhooks service."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from docflow.http.deps import ClientDep, SessionDep
from docflow.projects import service as projects_service
from docflow.web.auth_api import PREFIX, MemberDep, TemplatesDep, page
from docflow.webhooks import service as webhooks_service
from docflow.webhooks.models import DeliveryStatus

router = APIRouter(include_in_schema=False)

WRITE_SCOPE = "write"
# Projects, endpoints per project and deliveries shown (the API pages through more).
SHOWN = 50
RESENDABLE = frozenset({DeliveryStatus.DEAD, DeliveryStatus.SKIPPED})


@router.get("/webhooks", response_class=HTMLResponse)
def webhooks_page(
    request: Request, member: MemberDep, session: SessionDep, templates: TemplatesDep
) -> Response:
    """The tenant's projects (newest first) and each one's endpoints."""
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
    return page(templates, request, "webhooks.html", member, projects=listed)


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
