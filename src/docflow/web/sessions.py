"""Console sessions: a signed cookie, and the CSRF token derived from it.

The cookie holds the user's id, the tenant they chose (empty until they choose), a random
session id, an expiry and the user's session epoch when it was made, signed with HMAC-SHA256
under a key derived from the signing secret for this purpose alone. Nothing in it is trusted
beyond the signature: every request reads the user's membership and session epoch again
(`tenants.passwords.signed_in`), so a role lowered or a member removed takes effect at the next
page, and a session whose epoch is no longer the user's is refused. Signing out, a new password
and a released issuer binding add one to the epoch (`users.session_epoch`): every session of the
user made before, in any browser, and any copy of its cookie, ends there.

The CSRF token of a session is the HMAC of its session id under another derived key: pages
put it in every form and in htmx's request headers, and every state-changing request must send
it back. Before sign-in, the sign-in form is protected the same way with a random token in a
cookie of its own (double submit), so a third-party page cannot sign a browser in.

An OpenID Connect sign-in keeps what it sent the browser to the issuer with (state, nonce,
PKCE verifier) in a cookie of its own, signed under a third derived key, for ten minutes: the
issuer's answer is taken only with the state of that cookie, so it cannot be replayed into
another browser, and the cookie is cleared once used.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass, replace

COOKIE = "docflow_console"
SIGN_IN_COOKIE = "docflow_console_sign_in"
OIDC_COOKIE = "docflow_console_oidc"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf_token"


def _key(secret: str, purpose: str) -> bytes:
    return hmac.new(secret.encode(), f"docflow.console.{purpose}".encode(), hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True, slots=True)
class ConsoleSession:
    """A signed-in user: who, in which tenant ("" before choosing), until when (epoch s), and
    the user's session epoch it was made in."""

    user_id: str
    tenant_id: str
    session_id: str
    expires_at: int
    epoch: int = 0

    def in_tenant(self, tenant_id: str) -> ConsoleSession:
        return replace(self, tenant_id=tenant_id)


class Sessions:
    """Makes and reads session cookies and CSRF tokens under one signing secret."""

    def __init__(self, secret: str, *, lifetime_seconds: int) -> None:
        self._cookie_key = _key(secret, "session")
        self._csrf_key = _key(secret, "csrf")
        self.lifetime_seconds = lifetime_seconds

    def new(self, user_id: str, *, epoch: int = 0, now: float | None = None) -> ConsoleSession:
        at = int(time.time() if now is None else now)
        return ConsoleSession(
            user_id, "", secrets.token_urlsafe(16), at + self.lifetime_seconds, epoch
        )

    def encode(self, session: ConsoleSession) -> str:
        body = _b64(
            json.dumps(
                [
                    session.user_id,
                    session.tenant_id,
                    session.session_id,
                    session.expires_at,
                    session.epoch,
                ],
                separators=(",", ":"),
            ).encode()
        )
        return f"{body}.{_b64(self._sign(body))}"

    def decode(self, cookie: str | None, *, now: float | None = None) -> ConsoleSession | None:
        """The session in `cookie`, or None when it is missing, altered, malformed or expired."""
        if not cookie or len(cookie) > 1024 or "." not in cookie:
            return None
        body, _, signature = cookie.partition(".")
        try:
            valid = hmac.compare_digest(_unb64(signature), self._sign(body))
            fields = json.loads(_unb64(body)) if valid else None
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(fields, list) or len(fields) != 5:
            return None
        user_id, tenant_id, session_id, expires_at, epoch = fields
        if not all(isinstance(v, str) for v in (user_id, tenant_id, session_id)):
            return None
        if not isinstance(epoch, int) or isinstance(epoch, bool):
            return None
        if not isinstance(expires_at, int) or expires_at <= (time.time() if now is None else now):
            return None
        return ConsoleSession(user_id, tenant_id, session_id, expires_at, epoch)

    def csrf_token(self, session: ConsoleSession) -> str:
        return _b64(hmac.new(self._csrf_key, session.session_id.encode(), "sha256").digest())

    def csrf_ok(self, session: ConsoleSession, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token, self.csrf_token(session))

    def _sign(self, body: str) -> bytes:
        return hmac.new(self._cookie_key, body.encode(), hashlib.sha256).digest()


@dataclass(frozen=True, slots=True)
class OidcFlow:
    """An OpenID Connect sign-in under way: what the browser was sent to the issuer with (the
    `state`, the `nonce` the id token must carry, PKCE's verifier), where to go once signed in,
    and until when (epoch s) the issuer may send it back."""

    state: str
    nonce: str
    verifier: str
    next: str
    expires_at: int


class OidcFlows:
    """Seals an `OidcFlow` into the cookie that waits for the issuer's answer, and opens it."""

    def __init__(self, secret: str, *, lifetime_seconds: int) -> None:
        self._key = _key(secret, "oidc")
        self.lifetime_seconds = lifetime_seconds

    def new(self, next: str, *, now: float | None = None) -> OidcFlow:
        at = int(time.time() if now is None else now)
        return OidcFlow(
            secrets.token_urlsafe(24),
            secrets.token_urlsafe(24),
            secrets.token_urlsafe(48),
            next,
            at + self.lifetime_seconds,
        )

    def encode(self, flow: OidcFlow) -> str:
        fields = [flow.state, flow.nonce, flow.verifier, flow.next, flow.expires_at]
        body = _b64(json.dumps(fields, separators=(",", ":")).encode())
        return f"{body}.{_b64(hmac.new(self._key, body.encode(), hashlib.sha256).digest())}"

    def decode(self, cookie: str | None, *, now: float | None = None) -> OidcFlow | None:
        """The flow in `cookie`, or None when it is missing, altered, malformed or expired."""
        if not cookie or len(cookie) > 2048 or "." not in cookie:
            return None
        body, _, signature = cookie.partition(".")
        expected = hmac.new(self._key, body.encode(), hashlib.sha256).digest()
        try:
            fields = (
                json.loads(_unb64(body))
                if hmac.compare_digest(_unb64(signature), expected)
                else None
            )
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(fields, list) or len(fields) != 5:
            return None
        state, nonce, verifier, next, expires_at = fields
        if not all(isinstance(v, str) for v in (state, nonce, verifier, next)):
            return None
        if not isinstance(expires_at, int) or expires_at <= (time.time() if now is None else now):
            return None
        return OidcFlow(state, nonce, verifier, next, expires_at)


def sign_in_token() -> str:
    """A random token for the sign-in form and its cookie (double submit)."""
    return secrets.token_urlsafe(24)
