"""`PUT /v1/uploads/{token}`: local-mode uploads, authorised by the signed token alone.

The token (see `urls`) names the tenant, document, declared type, size cap and expiry;
no API key is needed or read. A tampered or expired token is 403, and so is a Content-Type other
than the signed one (as S3 refuses a presigned upload); a body past the cap is 413. Nothing is
stored after a refusal; a second upload of a landed document is a no-op 200.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool

from docflow.documents.schemas import DocumentRead
from docflow.documents.uploads.receive import spool_body
from docflow.documents.uploads.service import land_upload
from docflow.documents.uploads.urls import check_content_type, verify_upload
from docflow.http.deps import ClientDep, SettingsDep, StorageDep, WriteSessionsDep
from docflow.http.problems import PROBLEM_MEDIA_TYPE, PROBLEM_RESPONSES, Problem
from docflow.storage.base import TooLarge

router = APIRouter(tags=["uploads"])


@router.put(
    "/uploads/{token}",
    response_model=DocumentRead,
    responses={
        **PROBLEM_RESPONSES,
        413: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "`file_too_large`: the body is larger than the declared size",
        },
        409: {
            "model": Problem,
            "content": {PROBLEM_MEDIA_TYPE: {}},
            "description": "`batch_cancelled`: the document's batch was cancelled",
        },
    },
    openapi_extra={"requestBody": {"content": {"application/octet-stream": {}}, "required": True}},
)
async def upload(
    token: str,
    request: Request,
    settings: SettingsDep,
    write_sessions: WriteSessionsDep,
    storage: StorageDep,
    client: ClientDep,
) -> DocumentRead:
    """Upload a document's file to the URL the batch's 202 answer gave for it."""
    grant = verify_upload(settings.signing_secret, token, now=int(time.time()))
    check_content_type(grant, request.headers.get("content-type"))
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > grant.max_bytes:
        raise TooLarge(grant.max_bytes)
    body = await spool_body(request.stream(), max_bytes=grant.max_bytes)
    try:
        document = await run_in_threadpool(
            land_upload,
            write_sessions,
            storage,
            client,
            grant=grant,
            body=body,
        )
    finally:
        body.close()
    return DocumentRead.model_validate(document)
