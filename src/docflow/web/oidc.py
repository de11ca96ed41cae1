"""OpenID Connect sign-in to the console: the issuer's configuration and keys, the
authorization request, and the check of the id token the issuer answers with.

The flow is the authorization code flow with PKCE (S256), a `state` and a `nonce`, all three
random per sign-in and kept in a signed cookie (`docflow.web.sessions.OidcFlows`). The code is
exchanged at the issuer's token endpoint (client_secret_basic when a secret is set, else a
public client); the id token must be signed by a key of the issuer's JWKS with an asymmetric
algorithm it announces (never `none`, never HMAC), and carry the issuer as `iss`, this client
in `aud` (and as `azp` when there are other audiences), an `exp` still ahead, and the flow's
`nonce` (authlib's `CodeIDToken`, 60 s of clock leeway). Which user the identity is, is
`docflow.tenants.identities`' to say.

The discovery document and the JWKS are cached for an hour; a key id the cache lacks fetches
the JWKS again, at most once a minute. Every exchange with the issuer runs under one deadline
per request (`console_oidc_timeout_seconds`), and each answer is read to at most 512 KiB, so
an issuer that hangs or floods holds a sign-in no longer than that, and nothing else at all
(the requests are asynchronous: no thread waits on the issuer).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
import structlog
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet
from joserfc.jws import JWSRegistry

from docflow.config import Settings

log = structlog.get_logger(__name__)

METADATA_TTL_SECONDS = 3600.0
JWKS_TTL_SECONDS = 3600.0
JWKS_REFRESH_SECONDS = 60.0
MAX_ANSWER_BYTES = 512 * 1024
LEEWAY_SECONDS = 60
# Asymmetric algorithms only: an HMAC-signed token would be checked with the client secret.
ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384"})


class IssuerUnavailable(Exception):
    """The issuer did not answer in time, or answered what is not OpenID Connect."""


class TokenRefused(Exception):
    """The issuer's answer failed a check (signature, iss, aud, exp, nonce, the code)."""


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the issuer says signed in: its `iss` and `sub`, and the email it holds for them."""

    issuer: str
    subject: str
    email: str | None
    email_verified: bool
    name: str


@dataclass(frozen=True, slots=True)
class OidcConfig:
    issuer: str
    client_id: str
    client_secret: str
    scopes: str
    email_claim: str
    label: str
    timeout_seconds: float

    @classmethod
    def from_settings(cls, settings: Settings) -> OidcConfig | None:
        """The configuration when an issuer is set, else None (no OpenID Connect sign-in)."""
        if not settings.console_oidc_issuer:
            return None
        return cls(
            issuer=settings.console_oidc_issuer.rstrip("/"),
            client_id=settings.console_oidc_client_id,
            client_secret=settings.console_oidc_client_secret,
            scopes=settings.console_oidc_scopes,
            email_claim=settings.console_oidc_email_claim,
            label=settings.console_oidc_label,
            timeout_seconds=settings.console_oidc_timeout_seconds,
        )


def code_challenge(verifier: str) -> str:
    """PKCE's S256 challenge of `verifier` (RFC 7636)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _loopback(host: str | None) -> bool:
    return host in ("localhost", "127.0.0.1", "::1")


class OidcClient:
    """The console's client of one issuer: its cached configuration and keys."""

    def __init__(self, config: OidcConfig, *, transport: httpx.AsyncBaseTransport | None = None):
        self.config = config
        self._transport = transport
        self._metadata: tuple[float, dict[str, Any]] | None = None
        self._keys: tuple[float, KeySet] | None = None

    @property
    def label(self) -> str:
        return self.config.label

    def _http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            timeout=self.config.timeout_seconds,
            follow_redirects=False,
            transport=self._transport,
            headers={"Accept": "application/json"},
        )

    async def _json(
        self, http: httpx.AsyncClient, method: str, url: str, **kwargs: Any
    ) -> tuple[int, Any]:
        async with http.stream(method, url, **kwargs) as answer:
            body = bytearray()
            async for chunk in answer.aiter_bytes():
                body += chunk
                if len(body) > MAX_ANSWER_BYTES:
                    raise IssuerUnavailable(f"{url} answered more than {MAX_ANSWER_BYTES} bytes")
            try:
                return answer.status_code, json.loads(body) if body else None
            except ValueError:
                raise IssuerUnavailable(f"{url} answered {answer.status_code}, not JSON") from None

    def _endpoint(self, metadata: Mapping[str, Any], name: str) -> str:
        url = metadata.get(name)
        parts = urlsplit(url) if isinstance(url, str) else None
        if (
            parts is None
            or not parts.hostname
            or not (
                parts.scheme == "https" or (parts.scheme == "http" and _loopback(parts.hostname))
            )
        ):
            raise IssuerUnavailable(f"the issuer's discovery document has no usable {name}")
        return str(url)

    async def _discover(self, http: httpx.AsyncClient) -> dict[str, Any]:
        now = time.monotonic()
        if self._metadata is not None and now - self._metadata[0] < METADATA_TTL_SECONDS:
            return self._metadata[1]
        url = f"{self.config.issuer}/.well-known/openid-configuration"
        status, metadata = await self._json(http, "GET", url)
        if status != 200 or not isinstance(metadata, dict):
            raise IssuerUnavailable(f"{url} answered {status}")
        if str(metadata.get("issuer", "")).rstrip("/") != self.config.issuer:
            raise IssuerUnavailable(f"{url} names another issuer: {metadata.get('issuer')!r}")
        for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            self._endpoint(metadata, name)
        self._metadata = (now, metadata)
        return metadata

    async def _key_set(self, http: httpx.AsyncClient, *, refresh: bool = False) -> KeySet:
        now = time.monotonic()
        if self._keys is not None:
            age = now - self._keys[0]
            if age < (JWKS_REFRESH_SECONDS if refresh else JWKS_TTL_SECONDS):
                return self._keys[1]
        url = self._endpoint(await self._discover(http), "jwks_uri")
        status, jwks = await self._json(http, "GET", url)
        if status != 200 or not isinstance(jwks, dict):
            raise IssuerUnavailable(f"the issuer's keys ({url}) answered {status}")
        try:
            keys = KeySet.import_key_set(jwks)  # type: ignore[arg-type]
        except (JoseError, ValueError, TypeError, KeyError) as bad:
            raise IssuerUnavailable(f"the issuer's keys ({url}) are not a JWKS: {bad}") from None
        self._keys = (now, keys)
        return keys

    async def authorization_url(
        self, *, state: str, nonce: str, verifier: str, redirect: str
    ) -> str:
        """Where to send the browser to sign in at the issuer."""
        try:
            async with asyncio.timeout(self.config.timeout_seconds), self._http() as http:
                metadata = await self._discover(http)
        except TimeoutError:
            raise self._late() from None
        except httpx.HTTPError as failed:
            raise IssuerUnavailable(f"the issuer did not answer: {failed!r}") from None
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.config.client_id,
                "redirect_uri": redirect,
                "scope": self.config.scopes,
                "state": state,
                "nonce": nonce,
                "code_challenge": code_challenge(verifier),
                "code_challenge_method": "S256",
            }
        )
        endpoint = self._endpoint(metadata, "authorization_endpoint")
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"

    async def identity(self, *, code: str, nonce: str, verifier: str, redirect: str) -> Identity:
        """Exchange `code` for tokens and check the id token; `TokenRefused` when it fails a
        check, `IssuerUnavailable` when the issuer fails (or takes longer than the timeout)."""
        try:
            async with asyncio.timeout(self.config.timeout_seconds), self._http() as http:
                return await self._identity(
                    http, code=code, nonce=nonce, verifier=verifier, redirect=redirect
                )
        except TimeoutError:
            raise self._late() from None
        except httpx.HTTPError as failed:
            raise IssuerUnavailable(f"the issuer did not answer: {failed!r}") from None

    def _late(self) -> IssuerUnavailable:
        return IssuerUnavailable(f"the issuer took longer than {self.config.timeout_seconds:g} s")

    async def _identity(
        self, http: httpx.AsyncClient, *, code: str, nonce: str, verifier: str, redirect: str
    ) -> Identity:
        metadata = await self._discover(http)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect,
            "code_verifier": verifier,
        }
        auth: tuple[str, str] | None = None
        if self.config.client_secret:
            auth = (self.config.client_id, self.config.client_secret)
        else:
            form["client_id"] = self.config.client_id
        status, tokens = await self._json(
            http, "POST", self._endpoint(metadata, "token_endpoint"), data=form, auth=auth
        )
        if status != 200 or not isinstance(tokens, dict):
            error = tokens.get("error") if isinstance(tokens, dict) else None
            raise TokenRefused(f"the issuer refused the sign-in code ({error or status})")
        id_token = tokens.get("id_token")
        if not isinstance(id_token, str) or len(id_token) > 16 * 1024:
            raise TokenRefused("the issuer sent no id token")
        announced = metadata.get("id_token_signing_alg_values_supported") or ["RS256"]
        algorithms = sorted(ALGORITHMS.intersection(announced)) or ["RS256"]
        registry = JWSRegistry(algorithms=algorithms, strict_check_header=False)
        try:
            try:
                token = jwt.decode(id_token, await self._key_set(http), registry=registry)
            except InvalidKeyIdError:  # the issuer may have rotated its keys
                keys = await self._key_set(http, refresh=True)
                token = jwt.decode(id_token, keys, registry=registry)
            claims = CodeIDToken(
                token.claims,
                token.header,
                {
                    "iss": {"essential": True, "value": metadata["issuer"]},
                    "aud": {"essential": True, "value": self.config.client_id},
                    "sub": {"essential": True},
                },
                {
                    "nonce": nonce,
                    "client_id": self.config.client_id,
                    "access_token": tokens.get("access_token"),
                },
            )
            claims.validate(leeway=LEEWAY_SECONDS)
        except JoseError as refused:
            raise TokenRefused(f"the issuer's id token was refused: {refused}") from None
        subject = claims["sub"]
        if not isinstance(subject, str) or not 0 < len(subject) <= 255:
            raise TokenRefused("the issuer's id token has no usable subject")
        email = claims.get(self.config.email_claim)
        verified = claims.get("email_verified")
        name = claims.get("name")
        return Identity(
            issuer=str(metadata["issuer"]),
            subject=subject,
            email=email if isinstance(email, str) else None,
            email_verified=verified is True or verified == "true",
            name=name if isinstance(name, str) else "",
        )
