"""The words of a document's pages as the engine read them (`GET /v1/documents/{id}/words`):
read back from storage, where the document flow wrote them when the engine ran, a few pages at a
time. Nothing is read or OCRed again here, so a request costs one bounded storage read whatever
the document: a document not yet processed is a 409, one whose words were never kept a 404."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from docflow.documents.keys import words_key
from docflow.documents.models import TERMINAL_DOCUMENT_STATUSES
from docflow.documents.service import get_document
from docflow.errors import Conflict, InvalidInput, NotFound
from docflow.extraction.words import page_views
from docflow.kit.pagination import decode_cursor, encode_cursor
from docflow.storage.base import ObjectNotFound, Storage
from docflow.tenancy import TenantContext

# Pages per answer: by default, and at most.
DEFAULT_PAGES = 10
MAX_PAGES = 50


class DocumentNotRead(Conflict):
    """The document has not been processed yet: its words are not known."""

    code = "document_not_read"


class WordsNotKept(NotFound):
    """The document was processed without its words being kept: its file could not be read
    (it failed before any page was), or an earlier release processed it (re-run the batch)."""

    code = "words_not_kept"


@dataclass(frozen=True, slots=True)
class WordsPage:
    """Some of a document's pages with their words; `next_cursor` is None on the last."""

    document_id: str
    pages: list[dict[str, Any]]
    next_cursor: str | None


def document_words(
    session: Session,
    storage: Storage,
    tenant: TenantContext,
    *,
    document_id: str,
    cursor: str | None,
    limit: int,
    max_bytes: int,
) -> WordsPage:
    """The pages of one of the tenant's documents after `cursor` (at most `limit`), with their
    words, boxes and confidences. NotFound for a missing id or another tenant's document,
    `DocumentNotRead` (409) before the document is processed, `WordsNotKept` (404) when it
    was processed but its words were not kept."""
    document = get_document(session, tenant, document_id=document_id)
    if document.status not in TERMINAL_DOCUMENT_STATUSES:
        raise DocumentNotRead(
            f"the document is {document.status}: its words are known once it is processed"
        )
    after = 0 if cursor is None else decode_cursor(cursor, 1)[0]
    if not isinstance(after, int) or isinstance(after, bool):
        raise InvalidInput("malformed cursor", field="cursor")
    try:
        data = storage.read_bytes(words_key(tenant.tenant_id, document.id), max_bytes=max_bytes)
    except ObjectNotFound as exc:
        raise WordsNotKept(
            "the document's words were not kept (no page was read, or it was processed "
            "before words were kept: re-run it)"
        ) from exc
    pages, more = page_views(data, after=after, limit=limit)
    next_cursor = encode_cursor([pages[-1]["page"]]) if more and pages else None
    return WordsPage(document_id=document.id, pages=pages, next_cursor=next_cursor)
