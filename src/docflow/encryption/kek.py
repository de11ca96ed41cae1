"""Key-encryption keys (KEKs): what wraps each tenant's data keys.

Two kinds, named by URL:

- `file:///path/to/kek`: a local key file holding 256 random bits (URL-safe base64), mode 0600.
  Data keys are wrapped with AES-256-GCM under it, the tenant id as associated data. Its id is
  `file:<fingerprint>` (a digest of the key, not the path), so moving the file changes nothing.
- `kms://<key id, ARN or alias>?region=...&endpoint_url=...`: an AWS KMS key. Data keys are
  wrapped by KMS `Encrypt` with the encryption context `{"tenant_id": <tenant>}`, which `Decrypt`
  must be given again (and which CloudTrail records); the key material never leaves KMS.

`KekSet` is the current KEK (wraps every new or re-wrapped data key) and the previous ones
(`DOCFLOW_KEK_PREVIOUS_URLS`: they still unwrap the data keys they wrapped, until `docflow keys
rewrap` has moved those to the current one).
"""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from docflow.errors import DomainError
from docflow.kit import secret_file

_NONCE = 12


class KekUnavailable(DomainError):
    """A data key cannot be unwrapped: its KEK is not configured, or refuses it."""

    code = "kek_unavailable"
    status = 500
    title = "Encryption key unavailable"


class Kek(Protocol):
    """A key-encryption key: wraps and unwraps data keys, bound to their tenant."""

    @property
    def kek_id(self) -> str: ...

    def wrap(self, tenant_id: str, data_key: bytes) -> bytes: ...

    def unwrap(self, tenant_id: str, wrapped: bytes) -> bytes: ...


class FileKek:
    """A KEK kept in a local file (see the module docstring)."""

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError("a KEK file must hold 256 bits")
        self._aead = AESGCM(key)
        self.kek_id = "file:" + hashlib.sha256(b"docflow.kek\0" + key).hexdigest()[:20]

    @classmethod
    def load(cls, path: Path, *, create: bool = False) -> FileKek:
        """The KEK in `path`; with `create`, made first (mode 0600) when the file is absent."""
        if not create and not path.is_file():
            raise ValueError(f"no KEK file at {path}")
        token = secret_file.read_or_create(path) if create else path.read_text().strip()
        try:
            key = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except ValueError as exc:
            raise ValueError(f"{path} does not hold a KEK") from exc
        return cls(key)

    def wrap(self, tenant_id: str, data_key: bytes) -> bytes:
        nonce = os.urandom(_NONCE)
        return nonce + self._aead.encrypt(nonce, data_key, _context(tenant_id))

    def unwrap(self, tenant_id: str, wrapped: bytes) -> bytes:
        try:
            return self._aead.decrypt(wrapped[:_NONCE], wrapped[_NONCE:], _context(tenant_id))
        except InvalidTag:
            raise KekUnavailable(f"the data key does not unwrap under {self.kek_id}") from None


def _context(tenant_id: str) -> bytes:
    return b"docflow.data-key\0" + tenant_id.encode()


class KmsKek:
    """A KEK in AWS KMS, the tenant id as encryption context (see the module docstring)."""

    def __init__(self, client: Any, key_id: str) -> None:
        self._client = client
        self._key_id = key_id
        self.kek_id = f"kms:{key_id}"

    @classmethod
    def from_url(cls, url: str) -> KmsKek:
        rest = url.removeprefix("kms://")
        key_id, _, query_text = rest.partition("?")
        query = {name: values[-1] for name, values in parse_qs(query_text).items()}
        unknown = set(query) - {"endpoint_url", "region"}
        if not key_id or unknown:
            raise ValueError("a KMS KEK URL looks like kms://<key id>?region=...&endpoint_url=...")
        import boto3  # slow to load; only a KMS deployment needs it

        client = boto3.session.Session().client(
            "kms", endpoint_url=query.get("endpoint_url"), region_name=query.get("region")
        )
        return cls(client, unquote(key_id))

    def wrap(self, tenant_id: str, data_key: bytes) -> bytes:
        answer = self._client.encrypt(
            KeyId=self._key_id, Plaintext=data_key, EncryptionContext={"tenant_id": tenant_id}
        )
        return bytes(answer["CiphertextBlob"])

    def unwrap(self, tenant_id: str, wrapped: bytes) -> bytes:
        from botocore.exceptions import ClientError

        try:
            answer = self._client.decrypt(
                KeyId=self._key_id,
                CiphertextBlob=wrapped,
                EncryptionContext={"tenant_id": tenant_id},
            )
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "error")
            raise KekUnavailable(f"KMS refused to unwrap the data key ({code})") from None
        return bytes(answer["Plaintext"])


def open_kek(url: str, *, create: bool = False) -> Kek:
    """The KEK a URL names (`file:///path` or `kms://key`); `create` makes a missing key file."""
    if url.startswith("kms://"):
        return KmsKek.from_url(url)
    parts = urlsplit(url)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost") or not parts.path:
        raise ValueError(f"unsupported KEK URL {url!r}: use file:///path or kms://key-id")
    return FileKek.load(Path(unquote(parts.path)), create=create)


@dataclass
class KekSet:
    """The current KEK and the previous ones, by id."""

    current: Kek
    previous: list[Kek] = field(default_factory=list)

    def find(self, kek_id: str) -> Kek:
        for kek in (self.current, *self.previous):
            if kek.kek_id == kek_id:
                return kek
        raise KekUnavailable(
            f"the data key was wrapped by {kek_id}, which is neither DOCFLOW_KEK_URL nor in "
            "DOCFLOW_KEK_PREVIOUS_URLS"
        )
