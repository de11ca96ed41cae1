"""Opening the storage a deployment configures, from its URL: the composition roots' entry."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

from docflow.storage.base import Storage
from docflow.storage.local import LocalStorage


def open_storage(url: str) -> Storage:
    """Open the storage a URL names.

    `file:///abs/path` or a plain path (relative paths resolve against the working directory)
    → `LocalStorage`; `s3://bucket/prefix?endpoint_url=...&region=...` → `S3Storage`, with
    credentials from the usual AWS sources (environment, profile, instance role).
    Raises ValueError for any other URL.
    """
    parts = urlsplit(url)
    if parts.scheme == "s3":
        # Imported here: boto3 is slow to load and only an S3 deployment needs it.
        from docflow.storage.s3 import S3Storage

        return S3Storage.from_url(url)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise ValueError("a file storage URL must name an absolute path: file:///path")
        return LocalStorage(Path(unquote(parts.path)))
    if parts.scheme == "" and url:
        return LocalStorage(Path(url))
    raise ValueError(f"unsupported storage URL {url!r}: use file:///path, a path, or s3://bucket")
