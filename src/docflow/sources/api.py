"""Sources: `/v1/projects/{project_id}/sources`."""

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
from docflow.http.problems import CONFLICT_RESPONSE
from docflow.sources import service
from docflow.sources.places import sources_place
from docflow.sources.schemas import (
    PollAccepted,
    SourceCreate,
    SourceList,
    SourceRead,
    SourceRunList,
    SourceRunRead,
    SourceUpdate,
)

router = APIRouter(
    prefix="/projects/{project_id}/sources",
    tags=["sources"],
    dependencies=[Depends(require_scope())],
)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=SourceRead,
    responses=CONFLICT_RESPONSE,
)
def create_source(
    project_id: str,
    body: SourceCreate,
    session: SessionDep,
    tenant: TenantDep,
    settings: SettingsDep,
) -> SourceRead:
    """Watch a folder or bucket prefix: its new files become one batch at each cron time."""
    source = service.create_source(
        session,
        tenant,
        place=sources_place(settings),
        project_id=project_id,
        workflow_id=body.workflow_id,
        path=body.path,
        cron=body.cron,
        move_after=body.move_after,
        paused=body.paused,
    )
    return SourceRead.model_validate(source)


@router.get("", response_model=SourceList)
def list_sources(project_id: str, session: SessionDep, tenant: TenantDep) -> SourceList:
    """List the project's sources."""
    sources = service.list_sources(session, tenant, project_id=project_id)
    return SourceList(items=[SourceRead.model_validate(s) for s in sources])


@router.get("/{source_id}", response_model=SourceRead)
def get_source(
    project_id: str, source_id: str, session: SessionDep, tenant: TenantDep
) -> SourceRead:
    """Get a source, with its health and next poll."""
    source = service.get_source(session, tenant, project_id=project_id, source_id=source_id)
    return SourceRead.model_validate(source)


@router.patch("/{source_id}", response_model=SourceRead)
def update_source(
    project_id: str,
    source_id: str,
    body: SourceUpdate,
    session: SessionDep,
    tenant: TenantDep,
    settings: SettingsDep,
) -> SourceRead:
    """Pause or resume a source, or change its cron, workflow or `move_after`."""
    source = service.update_source(
        session,
        tenant,
        place=sources_place(settings),
        project_id=project_id,
        source_id=source_id,
        paused=body.paused,
        cron=body.cron,
        workflow_id=body.workflow_id,
        move_after=body.move_after,
    )
    return SourceRead.model_validate(source)


@router.delete("/{source_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_source(
    project_id: str, source_id: str, session: SessionDep, tenant: TenantDep
) -> Response:
    """Delete a source with its runs (its batches stay)."""
    service.delete_source(session, tenant, project_id=project_id, source_id=source_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{source_id}/runs", response_model=SourceRunList)
def list_runs(
    project_id: str,
    source_id: str,
    session: SessionDep,
    tenant: TenantDep,
    page: PageDep,
) -> SourceRunList:
    """The source's polls, newest first: files seen, taken and skipped, batch, error."""
    runs = service.list_runs(
        session,
        tenant,
        project_id=project_id,
        source_id=source_id,
        cursor=page.cursor,
        limit=page.limit,
    )
    return SourceRunList(
        items=[SourceRunRead.model_validate(r) for r in runs.items], next_cursor=runs.next_cursor
    )


@router.post("/{source_id}/poll", status_code=status.HTTP_202_ACCEPTED, response_model=PollAccepted)
def poll_source(
    project_id: str, source_id: str, session: SessionDep, tenant: TenantDep, client: ClientDep
) -> PollAccepted:
    """Poll the source now (paused or not); its run appears in the runs once it ran."""
    run_id = service.poll_now(session, client, tenant, project_id=project_id, source_id=source_id)
    return PollAccepted(run_id=run_id)
