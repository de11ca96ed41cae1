"""Standard Webhooks signatures, and the sealing of endpoint secrets at rest.

A secret is `whsec_` followed by base64 of 32 random bytes; the HMAC key is those bytes. A
message is signed as `v1,` + base64(HMAC-SHA256(key, "{id}.{timestamp}.{body}")), where `id` is
the event id (the same on every retry), `timestamp` the Unix seconds of this attempt and `body`
the exact bytes sent. `webhook-signature` may hold several space-separated signatures (during a
secret rotation); one valid `v1` signature is enough.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from cryptography.fernet import Fernet, InvalidToken

SECRET_PREFIX = "whsec_"
ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
DEFAULT_TOLERANCE_SECONDS = 300


class VerificationError(ValueError):
    """A webhook whose headers, signature or timestamp do not verify."""


@dataclass(frozen=True, slots=True)
class SignedHeaders:
    """The three Standard Webhooks headers of one attempt."""

    webhook_id: str
    timestamp: int
    signature: str

    def as_dict(self) -> dict[str, str]:
        return {
            ID_HEADER: self.webhook_id,
            TIMESTAMP_HEADER: str(self.timestamp),
            SIGNATURE_HEADER: self.signature,
        }


def new_secret() -> str:
    """A fresh endpoint secret: `whsec_` + base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def _key(secret: str) -> bytes:
    if not secret.startswith(SECRET_PREFIX):
        raise VerificationError("a webhook secret starts with 'whsec_'")
    try:
        return base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except ValueError as exc:
        raise VerificationError("the webhook secret is not valid base64 after 'whsec_'") from exc


def signature(secret: str, webhook_id: str, timestamp: int, body: bytes) -> str:
    """`v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">` with the secret's key."""
    message = f"{webhook_id}.{timestamp}.".encode() + body
    digest = hmac.new(_key(secret), message, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def sign(secret: str, webhook_id: str, timestamp: int, body: bytes) -> SignedHeaders:
    """The headers for sending `body` as message `webhook_id` at `timestamp` (Unix seconds)."""
    return SignedHeaders(webhook_id, timestamp, signature(secret, webhook_id, timestamp, body))


def _header(headers: Mapping[str, str], name: str) -> str:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    raise VerificationError(f"missing header {name}")


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: float,
    tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
) -> str:
    """Check a received webhook; its `webhook-id` when valid.

    Raises VerificationError when a header is missing, the timestamp is further than
    `tolerance_seconds` from `now` (Unix seconds; replay protection) or no `v1` signature
    matches. Header names are matched case-insensitively.
    """
    webhook_id = _header(headers, ID_HEADER)
    raw_timestamp = _header(headers, TIMESTAMP_HEADER)
    try:
        timestamp = int(raw_timestamp)
    except ValueError as exc:
        raise VerificationError("webhook-timestamp is not an integer") from exc
    if abs(now - timestamp) > tolerance_seconds:
        raise VerificationError("webhook-timestamp is outside the tolerance")
    expected = signature(secret, webhook_id, timestamp, body)
    for candidate in _header(headers, SIGNATURE_HEADER).split():
        if candidate.startswith("v1,") and hmac.compare_digest(candidate, expected):
            return webhook_id
    raise VerificationError("no webhook-signature matches")


def _fernet(key_material: str) -> Fernet:
    # The sealing key is derived from the deployment's signing secret, so no second secret
    # needs managing; rotating the signing secret means re-creating endpoint secrets.
    digest = hashlib.sha256(b"docflow.webhooks.secret\0" + key_material.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def seal(secret: str, key_material: str) -> str:
    """`secret` encrypted (and authenticated) for storage."""
    return _fernet(key_material).encrypt(secret.encode()).decode("ascii")


def unseal(sealed: str, key_material: str) -> str:
    """The secret sealed by `seal` with the same key material; ValueError otherwise."""
    try:
        return _fernet(key_material).decrypt(sealed.encode("ascii")).decode()
    except InvalidToken as exc:
        raise ValueError("the endpoint secret cannot be unsealed with this key") from exc
