"""Webhook endpoints and their delivery log: `/v1/projects/{project_id}/webhooks`,
`/v1/webhooks/{endpoint_id}`."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response, status

from docflow.http.deps import (
    ClientDep,
    PageDep,
    SessionDep,
    SettingsDep,
    TenantDep,
    require_scope,
)
from docflow.http.idempotency import IdempotencyDep
from docflow.http.problems import CONFLICT_RESPONSE
from docflow.webhooks import service
from docflow.webhooks.schemas import (
    DeliveryList,
    DeliveryRead,
    EndpointCreate,
    EndpointCreated,
    EndpointList,
    EndpointRead,
    EndpointUpdate,
)

router = APIRouter(tags=["webhooks"], dependencies=[Depends(require_scope())])


@router.post(
    "/projects/{project_id}/webhooks",
    status_code=status.HTTP_201_CREATED,
    response_model=EndpointCreated,
    responses=CONFLICT_RESPONSE,
)
def create_endpoint(
    project_id: str,
    body: EndpointCreate,
    session: SessionDep,
    tenant: TenantDep,
    settings: SettingsDep,
    idempotency: IdempotencyDep,
) -> Response:
    """Register an endpoint; the answer holds its `whsec_` secret, shown this once."""

    def create() -> EndpointCreated:
        created = service.create_endpoint(
            session,
            tenant,
            project_id=project_id,
            url=body.url,
            event_types=body.event_types,
            description=body.description,
            key_material=settings.signing_secret,
            allow_private=settings.allow_private_webhook_urls,
        )
        read = EndpointRead.model_validate(created.endpoint)
        return EndpointCreated(**read.model_dump(), secret=created.secret)

    return idempotency.respond(
        body,
        status_code=status.HTTP_201_CREATED,
        create=create,
        secret_fields=("secret",),
        current=lambda endpoint_id: service.get_endpoint(session, tenant, endpoint_id=endpoint_id),
    )


@router.get("/projects/{project_id}/webhooks", response_model=EndpointList)
def list_endpoints(
    project_id: str, session: SessionDep, tenant: TenantDep, page: PageDep
) -> EndpointList:
    """A project's endpoints, newest first."""
    result = service.list_endpoints(
        session, tenant, project_id=project_id, cursor=page.cursor, limit=page.limit
    )
    return EndpointList(
        items=[EndpointRead.model_validate(e) for e in result.items],
        next_cursor=result.next_cursor,
    )


@router.get("/webhooks/{endpoint_id}", response_model=EndpointRead)
def get_endpoint(endpoint_id: str, session: SessionDep, tenant: TenantDep) -> EndpointRead:
    """An endpoint (without its secret)."""
    return EndpointRead.model_validate(
        service.get_endpoint(session, tenant, endpoint_id=endpoint_id)
    )


@router.patch("/webhooks/{endpoint_id}", response_model=EndpointRead)
def update_endpoint(
    endpoint_id: str,
    body: EndpointUpdate,
    session: SessionDep,
    tenant: TenantDep,
    settings: SettingsDep,
) -> EndpointRead:
    """Change an endpoint's URL, event types or description, or disable / re-enable it."""
    endpoint = service.update_endpoint(
        session,
        tenant,
        endpoint_id=endpoint_id,
        url=body.url,
        event_types=body.event_types,
        description=body.description,
        enabled=body.enabled,
        allow_private=settings.allow_private_webhook_urls,
    )
    return EndpointRead.model_validate(endpoint)


@router.delete("/webhooks/{endpoint_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_endpoint(endpoint_id: str, session: SessionDep, tenant: TenantDep) -> Response:
    """Delete an endpoint; its pending deliveries are skipped."""
    service.delete_endpoint(session, tenant, endpoint_id=endpoint_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/webhooks/{endpoint_id}/deliveries", response_model=DeliveryList)
def list_deliveries(
    endpoint_id: str, session: SessionDep, tenant: TenantDep, page: PageDep
) -> DeliveryList:
    """List the endpoint's deliveries, newest first, with every attempt's outcome."""
    # Each attempt carries its status code, latency, error and next retry.
    result = service.delivery_log(
        session, tenant, endpoint_id=endpoint_id, cursor=page.cursor, limit=page.limit
    )
    return DeliveryList(
        items=[DeliveryRead.of(entry) for entry in result.items], next_cursor=result.next_cursor
    )


@router.post(
    "/webhooks/{endpoint_id}/deliveries/{delivery_id}/redeliver",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=DeliveryRead,
    responses=CONFLICT_RESPONSE,
)
def redeliver(
    endpoint_id: str,
    delivery_id: str,
    session: SessionDep,
    tenant: TenantDep,
    client: ClientDep,
) -> DeliveryRead:
    """Send a DEAD or SKIPPED delivery again, with the same event and `webhook-id`."""
    # PENDING until its new attempts end; 409 when the endpoint is disabled or the delivery is
    # neither DEAD nor SKIPPED.
    service.redeliver(session, client, tenant, endpoint_id=endpoint_id, delivery_id=delivery_id)
    entry = service.delivery_entry(session, tenant, delivery_id=delivery_id)
    return DeliveryRead.of(entry)
