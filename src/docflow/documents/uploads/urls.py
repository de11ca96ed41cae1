"""Where a document's file is sent: a presigned POST to S3, or a signed, expiring URL of the API.

`upload_target` picks the storage's presigned POST when it has one (S3: a form whose policy binds
the key, the declared Content-Type and the exact declared size, so S3 itself refuses any other
body); otherwise a client uploads with `PUT /v1/uploads/{token}` to the API itself. The token
says which tenant's document may be uploaded, with which declared content type, up to what size
and until when, and is signed with the server's secret, so the endpoint needs no other
credential and trusts nothing the client did not get from us.

The upload must carry the signed content type: a PUT with another `Content-Type` is refused with
403 `upload_content_type_mismatch` and nothing is stored, as S3 refuses (403) a presigned POST
whose Content-Type field is not the policy's, so both storage modes answer alike. A PUT without
`Content-Type` is taken as the signed type.

Token format: `v1.<payload>.<mac>`, where `<payload>` is the base64url (unpadded) of a compact
JSON object and `<mac>` the base64url HMAC-SHA256 of the text `v1.<payload>` under a key derived
from the secret for this purpose only. Every character of the token is covered by the MAC or
checked for its exact expected form, so changing any byte makes it invalid.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from docflow.documents.models import Document
from docflow.documents.service import document_key
from docflow.errors import UPLOAD_PATH, Forbidden
from docflow.storage.base import Storage

VERSION = "v1"
# Derive a purpose-bound key so a MAC made for uploads is worthless anywhere else the same
# signing secret is used (webhooks, sessions).
_KEY_LABEL = b"docflow.upload-url.v1"
_MAC_LENGTH = 43  # base64url of 32 bytes, unpadded
_TOKEN = re.compile(rf"{VERSION}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{{{_MAC_LENGTH}}}")
_MAX_TOKEN_LENGTH = 4096


class InvalidUploadToken(Forbidden):
    """The upload URL was not issued here: malformed, altered, or signed with another secret."""

    code = "invalid_upload_url"

    def __init__(self, detail: str = "the upload URL is not valid") -> None:
        super().__init__(detail)


class ExpiredUploadToken(InvalidUploadToken):
    """The upload URL was genuine but its time is over."""

    code = "upload_url_expired"

    def __init__(self) -> None:
        super().__init__("the upload URL has expired")


class UploadContentTypeMismatch(Forbidden):
    """The upload's Content-Type is not the one the URL was signed for."""

    code = "upload_content_type_mismatch"

    def __init__(self, expected: str) -> None:
        super().__init__(
            f"this upload URL was signed for Content-Type {expected!r}; send exactly that",
            expected_content_type=expected,
        )


@dataclass(frozen=True, slots=True)
class UploadGrant:
    """What a verified upload token allows: one document, one declared type, a size cap, a deadline.

    `expires_at` is in Unix seconds; the grant is valid while `now < expires_at`.
    """

    tenant_id: str
    document_id: str
    content_type: str
    max_bytes: int
    expires_at: int


def sign_upload(
    secret: str,
    *,
    tenant_id: str,
    document_id: str,
    content_type: str,
    max_bytes: int,
    expires_at: int,
) -> str:
    """Return a token granting the upload of `document_id` of `tenant_id` until `expires_at`.

    Raises ValueError for an empty secret, id or content type, or a negative size.
    """
    if not secret:
        raise ValueError("an upload URL needs a signing secret")
    if not tenant_id or not document_id or not content_type:
        raise ValueError("tenant_id, document_id and content_type must not be empty")
    if max_bytes < 0:
        raise ValueError("max_bytes must not be negative")
    payload = {"t": tenant_id, "d": document_id, "c": content_type, "m": max_bytes, "e": expires_at}
    encoded = _b64encode(json.dumps(payload, separators=(",", ":")).encode())
    body = f"{VERSION}.{encoded}"
    return f"{body}.{_mac(secret, body)}"


def verify_upload(secret: str, token: str, *, now: int) -> UploadGrant:
    """Return the grant a token carries, checking its signature first and then its expiry.

    Raises `InvalidUploadToken` when the token is malformed, altered, or signed with another
    secret, and `ExpiredUploadToken` (a subclass) when it is genuine but `now >= expires_at`.
    The signature is compared in constant time.
    """
    if not secret or len(token) > _MAX_TOKEN_LENGTH or not _TOKEN.fullmatch(token):
        raise InvalidUploadToken()
    body, _, mac = token.rpartition(".")
    if not hmac.compare_digest(_mac(secret, body).encode(), mac.encode()):
        raise InvalidUploadToken()
    grant = _grant_from(_decode_payload(body.partition(".")[2]))
    if now >= grant.expires_at:
        raise ExpiredUploadToken()
    return grant


def check_content_type(grant: UploadGrant, sent: str | None) -> None:
    """Raise `UploadContentTypeMismatch` unless `sent` (the PUT's Content-Type header, None when
    absent) is the grant's content type, compared exactly (surrounding whitespace aside, as in a
    signed S3 header); an absent header is taken as the signed type."""
    if sent is not None and sent.strip() != grant.content_type:
        raise UploadContentTypeMismatch(grant.content_type)


def upload_url(base_url: str, token: str) -> str:
    """The absolute URL of the upload endpoint: `{base_url}/v1/uploads/{token}`."""
    return f"{base_url.rstrip('/')}{UPLOAD_PATH}{token}"


def _mac(secret: str, body: str) -> str:
    key = hmac.new(secret.encode(), _KEY_LABEL, hashlib.sha256).digest()
    return _b64encode(hmac.new(key, body.encode(), hashlib.sha256).digest())


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _decode_payload(encoded: str) -> Any:
    # Only reached with a valid MAC, so the payload is one we produced; the checks below guard
    # against a leaked or reused secret being turned into a crash rather than a refusal.
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        return json.loads(raw)
    except (binascii.Error, ValueError):
        raise InvalidUploadToken() from None


def _grant_from(payload: Any) -> UploadGrant:
    if not isinstance(payload, dict) or set(payload) != {"t", "d", "c", "m", "e"}:
        raise InvalidUploadToken()
    texts = [payload["t"], payload["d"], payload["c"]]
    numbers = [payload["m"], payload["e"]]
    if not all(isinstance(value, str) and value for value in texts) or not all(
        type(value) is int for value in numbers
    ):
        raise InvalidUploadToken()
    return UploadGrant(
        tenant_id=payload["t"],
        document_id=payload["d"],
        content_type=payload["c"],
        max_bytes=payload["m"],
        expires_at=payload["e"],
    )


@dataclass(frozen=True, slots=True)
class UploadTarget:
    """How to upload one document's file before `expires_at`: PUT its bytes to `url` with
    `headers`, or (`method` POST, S3) POST `url` a multipart form of `fields` and the file."""

    url: str
    expires_at: datetime
    headers: dict[str, str] = field(default_factory=dict)
    method: str = "PUT"
    fields: dict[str, str] | None = None


def upload_target(
    document: Document,
    *,
    storage: Storage | None,
    secret: str,
    base_url: str,
    ttl_seconds: int,
    deadline: datetime,
    now: datetime,
) -> UploadTarget:
    """A fresh upload target for `document`, valid `ttl_seconds` from `now` but never past its
    batch's upload `deadline`: the storage's presigned POST when it has one (S3, to the
    document's incoming key, `documents.service.document_key`), else the API's own
    `/v1/uploads/{token}` under `base_url`, signed for this tenant, document, declared type and
    size. Either way the declared Content-Type is part of the signature and must be sent."""
    lasts = min(timedelta(seconds=ttl_seconds), deadline - now)
    expires_in = max(1, int(lasts.total_seconds()))  # rounded down: never past the deadline
    if storage is not None:
        post = storage.presigned_post(
            document_key(document.tenant_id, document.id),
            content_type=document.content_type,
            size=document.declared_size,
            expires_in=expires_in,
        )
        if post is not None:
            expires_at = now + timedelta(seconds=expires_in)
            return UploadTarget(post.url, expires_at, {}, "POST", post.fields)
    headers = {"Content-Type": document.content_type}
    expiry = int(now.timestamp()) + expires_in
    token = sign_upload(
        secret,
        tenant_id=document.tenant_id,
        document_id=document.id,
        content_type=document.content_type,
        max_bytes=document.declared_size,
        expires_at=expiry,
    )
    return UploadTarget(upload_url(base_url, token), datetime.fromtimestamp(expiry, UTC), headers)
