"""Documents: `/v1/batches/{batch_id}/documents` and `/v1/documents/{document_id}` (read,
delete), with its upload URL (`.../upload-url`) and the S3-mode upload confirmation
(`.../uploaded`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, BinaryIO

import structlog
from fastapi import APIRouter, BackgroundTasks, Depends, Query, Response
from fastapi.responses import RedirectResponse, StreamingResponse
from sqlalchemy.orm import Session

from docflow.batches import lifecycle
from docflow.config import Settings
from docflow.documents import service, words
from docflow.documents.downstream import downstream_of, read_with_downstream
from docflow.documents.models import Document, DocumentStatus
from docflow.documents.schemas import (
    DocumentDetail,
    DocumentList,
    DocumentRead,
    DocumentUpload,
    DocumentWords,
    UploadTargetRead,
)
from docflow.documents.uploads import service as uploads
from docflow.documents.uploads.urls import UploadTarget
from docflow.http.deps import (
    ClientDep,
    IdQuery,
    PageDep,
    SessionDep,
    SettingsDep,
    SinceQuery,
    StorageDep,
    TenantDep,
    UntilQuery,
    WriteSessionsDep,
    require_scope,
)
from docflow.http.problems import PROBLEM_MEDIA_TYPE, Problem
from docflow.kit.clock import utcnow
from docflow.kit.pagination import Page
from docflow.storage.base import CHUNK_SIZE
from docflow.storage.sealed import SealBroken
from docflow.tenancy import TenantContext

log = structlog.get_logger(__name__)

router = APIRouter(tags=["documents"], dependencies=[Depends(require_scope())])


def document_page(
    session: Session, tenant: TenantContext, settings: Settings, page: Page[Document]
) -> DocumentList:
    """A page of documents, each with its downstream state."""
    items = read_with_downstream(
        session,
        tenant.tenant_id,
        page.items,
        lag_seconds=settings.downstream_lag_seconds,
        now=utcnow(),
    )
    return DocumentList(items=items, next_cursor=page.next_cursor)


def document_upload(document: Document, target: UploadTarget) -> DocumentUpload:
    """A declared document with where and how to upload its file."""
    return DocumentUpload(
        id=document.id,
        name=document.name,
        content_type=document.content_type,
        declared_size=document.declared_size,
        upload_url=target.url,
        upload=UploadTargetRead.model_validate(target),
    )


@router.get("/batches/{batch_id}/documents", response_model=DocumentList)
def list_documents(
    batch_id: str,
    session: SessionDep,
    tenant: TenantDep,
    settings: SettingsDep,
    page: PageDep,
    status_filter: Annotated[
        DocumentStatus | None, Query(alias="status", description="only documents in this status")
    ] = None,
) -> DocumentList:
    """List a batch's documents, optionally in one status."""
    result = service.list_documents(
        session,
        tenant,
        batch_id=batch_id,
        status=status_filter,
        cursor=page.cursor,
        limit=page.limit,
    )
    return document_page(session, tenant, settings, result)


@router.get("/documents", response_model=DocumentList)
def query_documents(
    session: SessionDep,
    tenant: TenantDep,
    settings: SettingsDep,
    page: PageDep,
    status_filter: Annotated[
        DocumentStatus | None, Query(alias="status", description="only documents in this status")
    ] = None,
    project_id: IdQuery = None,
    workflow_id: IdQuery = None,
    batch_id: IdQuery = None,
    since: SinceQuery = None,
    until: UntilQuery = None,
    field: Annotated[
        str | None,
        Query(
            max_length=63,
            description="only documents whose result names this field among the reasons for "
            "their status (missing, or below the review threshold); without `status`, those "
            "awaiting review",
        ),
    ] = None,
) -> DocumentList:
    """Query the tenant's documents, newest first, by status, project, workflow, batch, time."""
    result = service.query_documents(
        session,
        tenant,
        status=status_filter,
        project_id=project_id,
        workflow_id=workflow_id,
        batch_id=batch_id,
        since=since,
        until=until,
        field=field,
        cursor=page.cursor,
        limit=page.limit,
    )
    return document_page(session, tenant, settings, result)


@router.get("/documents/{document_id}", response_model=DocumentDetail)
def get_document(
    document_id: str,
    session: SessionDep,
    tenant: TenantDep,
    settings: SettingsDep,
    storage: StorageDep,
) -> DocumentDetail:
    """Get a document with its extraction result, once there is one."""
    document = service.get_document(session, tenant, document_id=document_id)
    detail = DocumentDetail.model_validate(document)
    detail.downstream = downstream_of(
        session,
        tenant.tenant_id,
        [document],
        lag_seconds=settings.downstream_lag_seconds,
        now=utcnow(),
    )[document.id]
    detail.result = service.document_result(
        storage, document, max_bytes=settings.max_document_bytes
    )
    return detail


@router.get(
    "/documents/{document_id}/words",
    response_model=DocumentWords,
    responses={
        404: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "`not_found`, or `words_not_kept`: the document was processed "
            "without its words (no page could be read, or an earlier release processed it)",
        },
        409: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "`document_not_read`: the document has not been processed yet",
        },
    },
)
def get_document_words(
    document_id: str,
    session: SessionDep,
    tenant: TenantDep,
    settings: SettingsDep,
    storage: StorageDep,
    cursor: Annotated[
        str | None, Query(description="`next_cursor` of the previous answer; omit for page 1")
    ] = None,
    limit: Annotated[
        int, Query(ge=1, le=words.MAX_PAGES, description="pages per answer")
    ] = words.DEFAULT_PAGES,
) -> DocumentWords:
    """Each page's words with boxes and confidences, as the engine read them; pages by cursor."""
    # Read back from storage where the document flow kept them: never OCRed in the request.
    found = words.document_words(
        session,
        storage,
        tenant,
        document_id=document_id,
        cursor=cursor or None,
        limit=limit,
        max_bytes=settings.max_document_bytes,
    )
    return DocumentWords.model_validate(found, from_attributes=True)


@router.delete(
    "/documents/{document_id}",
    status_code=204,
    responses={
        409: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "`batch_running`: the document's batch is not terminal",
        },
    },
)
def delete_document(
    document_id: str,
    session: SessionDep,
    tenant: TenantDep,
    storage: StorageDep,
    background: BackgroundTasks,
) -> Response:
    """Delete a document of a finished batch, its result, files and events; recount the batch."""
    # As a batch's deletion: files are removed once the deletion committed, one a re-run in
    # another batch still uses is kept, and `docflow.document.deleted.v1` announces it.
    keys = lifecycle.delete_document(session, tenant, document_id=document_id)
    background.add_task(lifecycle.remove_files, storage, keys)
    return Response(status_code=204)


@router.get(
    "/documents/{document_id}/file",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"application/octet-stream": {}},
            "description": "The original file, with its declared content type and name",
        },
        307: {"description": "S3 mode: a presigned GET of the file (`Location`)"},
        404: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "`not_found`, or `file_not_uploaded`: the file has not landed",
        },
        500: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "`sealed_object_invalid` or `plaintext_refused`: the stored file "
            "fails its integrity check (found before any byte is sent; damage found further "
            "in cuts the download short instead, so it never ends as if complete)",
        },
    },
)
def download_file(
    document_id: str,
    session: SessionDep,
    tenant: TenantDep,
    settings: SettingsDep,
    storage: StorageDep,
) -> Response:
    """Download a document's original file (a re-run's document: the upload it shares)."""
    # Local storage streams it; S3 answers 307 to a presigned GET that expires after
    # `download_url_ttl_seconds`. Served as an attachment, never rendered by a browser.
    found = service.document_file(session, tenant, document_id=document_id)
    url = storage.presigned_get_url(
        found.key,
        expires_in=settings.download_url_ttl_seconds,
        content_type=found.content_type,
        content_disposition=found.content_disposition,
    )
    headers = {
        "Content-Disposition": found.content_disposition,
        "X-Content-Type-Options": "nosniff",
    }
    if url is not None:
        return RedirectResponse(url, status_code=307, headers={"Cache-Control": "no-store"})
    # ObjectNotFound (404) when the object is gone; SealBroken (500) when its first chunk is
    # damaged, raised here, before the headers are sent.
    stream = storage.open_read(found.key)
    if found.size is not None:
        headers["Content-Length"] = str(found.size)
    body = _chunks(stream, tenant_id=tenant.tenant_id, document_id=document_id)
    return StreamingResponse(body, media_type=found.content_type, headers=headers)


def _chunks(stream: BinaryIO, *, tenant_id: str, document_id: str) -> Iterator[bytes]:
    """The stream's chunks. Damage found past the first chunk (headers and some bytes already
    sent) is logged and raised again, so the server aborts the response: the client sees an
    incomplete body, never a clean end."""
    with stream:
        try:
            while chunk := stream.read(CHUNK_SIZE):
                yield chunk
        except SealBroken as exc:
            log.error(
                "document.file_integrity_failed",
                tenant_id=tenant_id,
                document_id=document_id,
                code=exc.code,
            )
            raise


@router.post(
    "/documents/{document_id}/uploaded",
    response_model=DocumentRead,
    responses={
        409: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "no file stored yet (`conflict`), or `batch_cancelled`",
        },
        413: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "`file_too_large`: the stored file is larger than declared",
        },
        422: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "`file_size_mismatch`: the stored file is smaller than declared",
        },
    },
)
def confirm_upload(
    document_id: str,
    tenant: TenantDep,
    write_sessions: WriteSessionsDep,
    storage: StorageDep,
    client: ClientDep,
) -> DocumentRead:
    """S3 mode: confirm the file was POSTed to its presigned form (a repeat is a no-op)."""
    # The object is checked (HEAD) and recorded once; 409 when no file is stored yet. Its own
    # short transactions, not the request's: storage is read between them.
    document = uploads.confirm_direct_upload(
        write_sessions, storage, client, tenant, document_id=document_id
    )
    return DocumentRead.model_validate(document)


@router.post(
    "/documents/{document_id}/upload-url",
    response_model=DocumentUpload,
    responses={
        409: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "No new URL: `document_already_uploaded`, `batch_started`, "
            "`batch_cancelled` or `upload_deadline_passed`",
        }
    },
)
def reissue_upload_url(
    document_id: str,
    session: SessionDep,
    tenant: TenantDep,
    settings: SettingsDep,
    storage: StorageDep,
) -> DocumentUpload:
    """Issue a fresh upload URL for a document still awaiting its file (409 once it is not)."""
    document, target = uploads.reissue_upload(
        session,
        tenant,
        storage,
        document_id=document_id,
        secret=settings.signing_secret,
        base_url=settings.public_base_url,
        ttl_seconds=settings.upload_url_ttl_seconds,
        now=utcnow(),
    )
    return document_upload(document, target)
