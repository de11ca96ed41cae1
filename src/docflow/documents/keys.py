"""The storage key of the words a document's pages were read as: derived from the document's
id (no column records it), so the repositories that list a tenant's objects for a backup or for
sealing name it without reading storage, and a document without one is no loss."""

from __future__ import annotations

from docflow.storage.base import object_key

WORDS_FILE = "words.json"


def words_key(tenant_id: str, document_id: str) -> str:
    """The object key of the words the engine read a document's pages as
    (`docflow.extraction.words`), written when it ran and removed with the document."""
    return object_key(tenant_id, "documents", document_id, WORDS_FILE)


def is_words_key(key: str) -> bool:
    """Whether `key` is a document's words (absent when no page was read, or when an earlier
    release processed the document: not a lost object)."""
    return key.endswith("/" + WORDS_FILE)
