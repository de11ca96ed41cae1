"""A real OpenID Connect issuer over HTTP on 127.0.0.1, for the console's sign-in tests.

It serves discovery, an authorization page (a form that signs in as the configured test
identity and redirects back with a code), the token endpoint (the authorization code grant
with PKCE S256 and client_secret_basic, an RS256-signed id token) and its JWKS. It misbehaves on
demand (`Issuer.fault`): an id token with another nonce, another audience, an expiry past, a
signature by a key it does not publish, or a token endpoint that hangs. What the token
endpoint received is kept (`Issuer.token_requests`), to check what the client sent.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
from joserfc import jwt
from joserfc.jwk import RSAKey

from support.http_server import serving

CLIENT_ID = "docflow-console"
CLIENT_SECRET = "console-client-secret"
FAULTS = ("wrong_nonce", "wrong_audience", "expired", "bad_signature", "hang")
KID = "test-key-1"


@dataclass
class Person:
    subject: str
    email: str
    email_verified: bool = True
    name: str = "Test Person"


@dataclass
class Issuer:
    """The issuer's state: set `identity` and `fault` between sign-ins."""

    url: str = ""
    identity: Person = field(default_factory=lambda: Person("sub-1", "x@example.com"))
    fault: str | None = None
    redirect_uris: set[str] | None = None  # None: any
    key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, {"kid": KID}))
    other_key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, {"kid": KID}))
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    token_requests: list[dict[str, Any]] = field(default_factory=list)
    released: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "jwks_uri": f"{self.url}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        }

    def id_token(self, grant: dict[str, Any]) -> str:
        now = int(time.time())
        person: Person = grant["identity"]
        claims = {
            "iss": self.url,
            "sub": person.subject,
            "aud": "someone-else" if self.fault == "wrong_audience" else CLIENT_ID,
            "iat": now - (7200 if self.fault == "expired" else 0),
            "exp": now - 3600 if self.fault == "expired" else now + 300,
            "nonce": "not-the-nonce" if self.fault == "wrong_nonce" else grant["nonce"],
            "email": person.email,
            "email_verified": person.email_verified,
            "name": person.name,
        }
        key = self.other_key if self.fault == "bad_signature" else self.key
        return jwt.encode({"alg": "RS256", "kid": KID}, claims, key)

    def approve(self, authorize_url: str) -> str:
        """Sign in at the issuer's page as the configured identity (as a person would): the
        URL the issuer sends the browser back to."""
        with httpx.Client(timeout=10) as http:
            page = http.get(authorize_url)
            assert page.status_code == 200, page.text
            fields = dict(
                (name, html.unescape(value))
                for name, value in _HIDDEN.findall(page.text)  # the form's hidden fields
            )
            answer = http.post(f"{self.url}/authorize", data=fields)
            assert answer.status_code == 302, answer.text
            return str(answer.headers["location"])


_HIDDEN = re.compile(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)">')


def _handler(issuer: Issuer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any, kind: str = "application/json") -> None:
            data = (json.dumps(body) if kind == "application/json" else body).encode()
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def _redirect(self, to: str) -> None:
            self.send_response(302)
            self.send_header("Location", to)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path == "/.well-known/openid-configuration":
                self._send(200, issuer.metadata())
            elif parts.path == "/jwks":
                self._send(200, {"keys": [issuer.key.as_dict(private=False)]})
            elif parts.path == "/authorize":
                self._authorize_page({k: v[0] for k, v in parse_qs(parts.query).items()})
            else:
                self._send(404, {"error": "not_found"})

        def _authorize_page(self, query: dict[str, str]) -> None:
            allowed = issuer.redirect_uris
            redirect = query.get("redirect_uri", "")
            if query.get("client_id") != CLIENT_ID or (
                allowed is not None and redirect not in allowed
            ):
                self._send(400, "unknown client or redirect URI", "text/plain")
                return
            if query.get("response_type") != "code" or query.get("code_challenge_method") != "S256":
                self._send(400, "code flow with PKCE S256 only", "text/plain")
                return
            keep = ("redirect_uri", "state", "nonce", "code_challenge", "scope")
            hidden = "".join(
                f'<input type="hidden" name="{name}" value="{html.escape(query.get(name, ""))}">'
                for name in keep
            )
            person = html.escape(issuer.identity.email)
            page = (
                "<!doctype html><html lang='en'><head><title>Test issuer</title></head><body>"
                f"<h1>Test issuer</h1><form method='post' action='/authorize'>{hidden}"
                f"<button type='submit'>Continue as {person}</button></form></body></html>"
            )
            self._send(200, page, "text/html; charset=utf-8")

        def _form(self) -> dict[str, str]:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode()
            return {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}

        def do_POST(self) -> None:
            path = urlsplit(self.path).path
            form = self._form()
            if path == "/authorize":
                code = secrets.token_urlsafe(16)
                with issuer.lock:
                    issuer.codes[code] = {**form, "identity": issuer.identity}
                query = urlencode({"code": code, "state": form.get("state", "")})
                self._redirect(f"{form['redirect_uri']}?{query}")
            elif path == "/token":
                self._token(form)
            else:
                self._send(404, {"error": "not_found"})

        def _token(self, form: dict[str, str]) -> None:
            issuer.token_requests.append(
                {**form, "authorization": self.headers.get("Authorization")}
            )
            if issuer.fault == "hang":
                issuer.released.wait(30)
                return
            expected = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
            if self.headers.get("Authorization") != expected:
                self._send(401, {"error": "invalid_client"})
                return
            with issuer.lock:
                grant = issuer.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            challenge = (
                base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
                .rstrip(b"=")
                .decode()
            )
            if (
                grant is None
                or form.get("grant_type") != "authorization_code"
                or form.get("redirect_uri") != grant["redirect_uri"]
                or challenge != grant["code_challenge"]
            ):
                self._send(400, {"error": "invalid_grant"})
                return
            self._send(
                200,
                {
                    "access_token": secrets.token_urlsafe(24),
                    "token_type": "Bearer",
                    "expires_in": 300,
                    "id_token": issuer.id_token(grant),
                },
            )

    return Handler


@contextmanager
def running_issuer() -> Iterator[Issuer]:
    """A running issuer on a free port of 127.0.0.1, until the block ends."""
    issuer = Issuer()
    with serving(_handler(issuer)) as server:
        issuer.url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            yield issuer
        finally:
            issuer.released.set()
