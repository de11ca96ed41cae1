"""S3-compatible object storage (AWS S3, MinIO, Ceph, ...) through boto3.

Objects are stored under `{prefix}/{key}` in one bucket. A streamed write first goes to a temp
file on local disk while its size and SHA-256 are computed, and reaches the bucket only once it
is known to be within the limit: an oversize upload never appears in the bucket, not even as an
unfinished multipart upload. boto3 then sends the file from disk part by part, so memory stays
bounded whatever the object's size. The SHA-256 is kept as the object's `sha256` user metadata.
"""

from __future__ import annotations

import io
import tempfile
import uuid
from typing import Any, BinaryIO
from urllib.parse import parse_qs, urlsplit

import boto3
from boto3.s3.transfer import TransferConfig  # type: ignore[import-untyped]
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from docflow.storage.base import (
    ByteSource,
    ObjectInfo,
    ObjectNotFound,
    PresignedPost,
    StoredObject,
    TooLarge,
    copy_limited,
    validate_key,
)

_SHA256_METADATA = "sha256"
PROBE_TIMEOUT_S = 3.0
_NOT_FOUND_CODES = frozenset({"404", "NoSuchKey", "NotFound"})
# Parts go one at a time: a server handles many uploads at once, so parallel parts within one
# upload buy little and each part in flight costs about 1 MB of buffers.
_TRANSFER = TransferConfig(
    multipart_threshold=16 * 1024 * 1024, multipart_chunksize=16 * 1024 * 1024, max_concurrency=1
)


class S3Storage:
    """Objects in one S3 bucket, under an optional key prefix."""

    def __init__(
        self, client: Any, bucket: str, prefix: str = "", *, probe_client: Any = None
    ) -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        # The readiness probe's own client: short timeouts and one attempt, so a probe of an
        # unreachable endpoint answers within seconds instead of retrying for minutes.
        self.probe_client = probe_client if probe_client is not None else client

    @classmethod
    def from_url(cls, url: str) -> S3Storage:
        """Build from `s3://bucket/prefix?endpoint_url=...&region=...` (both query keys optional).

        With an `endpoint_url` (MinIO, a local S3 server) path-style addressing is used, since such
        servers rarely resolve bucket subdomains. Credentials come from the usual AWS sources.
        """
        parts = urlsplit(url)
        if parts.scheme != "s3" or not parts.netloc:
            raise ValueError("an S3 storage URL looks like s3://bucket/prefix")
        query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
        unknown = set(query) - {"endpoint_url", "region"}
        if unknown:
            raise ValueError(f"unknown S3 storage URL parameters: {sorted(unknown)}")
        endpoint_url = query.get("endpoint_url")
        config = Config(
            signature_version="s3v4",
            s3={"addressing_style": "path" if endpoint_url else "auto"},
            retries={"mode": "standard", "max_attempts": 5},
        )
        probe_config = config.merge(
            Config(
                connect_timeout=PROBE_TIMEOUT_S,
                read_timeout=PROBE_TIMEOUT_S,
                retries={"mode": "standard", "total_max_attempts": 1},
            )
        )
        session = boto3.session.Session()

        def make(settings: Config) -> Any:
            return session.client(
                "s3", endpoint_url=endpoint_url, region_name=query.get("region"), config=settings
            )

        return cls(make(config), parts.netloc, parts.path, probe_client=make(probe_config))

    def _s3_key(self, key: str) -> str:
        validate_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def write_stream(self, key: str, chunks: ByteSource, *, max_bytes: int) -> StoredObject:
        s3_key = self._s3_key(key)
        with tempfile.NamedTemporaryFile(prefix="docflow-upload-") as spool:
            size, sha256 = copy_limited(chunks, spool, max_bytes=max_bytes)
            spool.flush()
            # By file name, so boto3 streams each part from disk instead of reading it into memory.
            self.client.upload_file(
                spool.name,
                self.bucket,
                s3_key,
                ExtraArgs={"Metadata": {_SHA256_METADATA: sha256}},
                Config=_TRANSFER,
            )
        return StoredObject(key=key, size=size, sha256=sha256)

    def write_bytes(self, key: str, data: bytes) -> StoredObject:
        return self.write_stream(key, [data], max_bytes=len(data))

    def open_read(self, key: str) -> BinaryIO:
        body = self._get(key)["Body"]
        return io.BufferedReader(_BodyReader(body), buffer_size=256 * 1024)

    def read_bytes(self, key: str, *, max_bytes: int) -> bytes:
        response = self._get(key)
        body = response["Body"]
        try:
            if response["ContentLength"] > max_bytes:
                raise TooLarge(max_bytes)
            data: bytes = body.read()
        finally:
            body.close()
        return data

    def head(self, key: str) -> ObjectInfo | None:
        try:
            response = self.client.head_object(Bucket=self.bucket, Key=self._s3_key(key))
        except ClientError as exc:
            if _error_code(exc) in _NOT_FOUND_CODES:
                return None
            raise
        return ObjectInfo(
            key=key,
            size=response["ContentLength"],
            sha256=response.get("Metadata", {}).get(_SHA256_METADATA),
            last_modified=response["LastModified"],
            content_type=response.get("ContentType"),
        )

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._s3_key(key))

    def copy(self, source: str, target: str) -> None:
        """A server-side copy: the bytes never pass through this process."""
        try:
            self.client.copy_object(
                Bucket=self.bucket,
                Key=self._s3_key(target),
                CopySource={"Bucket": self.bucket, "Key": self._s3_key(source)},
            )
        except ClientError as exc:
            if _error_code(exc) in _NOT_FOUND_CODES:
                raise ObjectNotFound(f"no object stored under {source}") from None
            raise

    def presigned_post(
        self, key: str, *, content_type: str, size: int, expires_in: int
    ) -> PresignedPost | None:
        """A SigV4 presigned POST whose policy holds the key, the Content-Type and a
        `content-length-range` of exactly `size` bytes: S3 answers 400 (EntityTooLarge or
        EntityTooSmall) to any other body, and 403 to another type, storing nothing."""
        post = self.client.generate_presigned_post(
            Bucket=self.bucket,
            Key=self._s3_key(key),
            Fields={"Content-Type": content_type},
            Conditions=[{"Content-Type": content_type}, ["content-length-range", size, size]],
            ExpiresIn=expires_in,
        )
        return PresignedPost(
            url=str(post["url"]), fields={str(k): str(v) for k, v in post["fields"].items()}
        )

    def probe(self) -> None:
        """Write and remove a tiny object under `{prefix}/.docflow/probe/`, a key no tenant key
        can take (a tenant key starts with `tenants/`), with short timeouts and no retries.
        Raises `StorageUnusable` naming S3's error code (NoSuchBucket, AccessDenied, ...)."""
        name = f".docflow/probe/{uuid.uuid4().hex}"
        key = f"{self.prefix}/{name}" if self.prefix else name
        try:
            self.probe_client.put_object(Bucket=self.bucket, Key=key, Body=b"ok")
            self.probe_client.delete_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            raise StorageUnusable(_error_code(exc) or "error") from None
        except BotoCoreError as exc:
            raise StorageUnusable(type(exc).__name__) from None

    def presigned_get_url(
        self, key: str, *, expires_in: int, content_type: str, content_disposition: str
    ) -> str | None:
        """A SigV4 presigned GET whose answer carries the given Content-Type and
        Content-Disposition (S3's `response-content-*` overrides, covered by the signature)."""
        return str(
            self.client.generate_presigned_url(
                "get_object",
                Params={
                    "Bucket": self.bucket,
                    "Key": self._s3_key(key),
                    "ResponseContentType": content_type,
                    "ResponseContentDisposition": content_disposition,
                },
                ExpiresIn=expires_in,
                HttpMethod="GET",
            )
        )

    def _get(self, key: str) -> dict[str, Any]:
        try:
            response: dict[str, Any] = self.client.get_object(
                Bucket=self.bucket, Key=self._s3_key(key)
            )
        except ClientError as exc:
            if _error_code(exc) in _NOT_FOUND_CODES:
                raise ObjectNotFound(f"no object stored under {key}") from None
            raise
        return response


class StorageUnusable(Exception):
    """The bucket cannot be written: its message is S3's error code, never a URL or key."""


class _BodyReader(io.RawIOBase):
    """Adapts botocore's StreamingBody to the io hierarchy, so readers get a real BinaryIO."""

    def __init__(self, body: Any) -> None:
        self._body = body

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._body.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._body.close()
        super().close()


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))
