"""Where a backup is kept: a folder, or a prefix of an S3 bucket (`s3://bucket/prefix`, with
the `endpoint_url` and `region` query keys of the storage URL). Both hold the same names:
`manifest.json`, the database file and `files/<storage key>`."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Protocol
from urllib.parse import urlsplit

from docflow.storage.base import CHUNK_SIZE


class BackupTarget(Protocol):
    """A place to write a backup's named parts to and read them back from."""

    def write(self, name: str, chunks: Iterable[bytes]) -> tuple[int, str]:
        """Store `chunks` under `name`; (size, hex SHA-256) of what was stored."""
        ...

    @contextmanager
    def open(self, name: str) -> Iterator[BinaryIO]:
        """Read the part `name` (FileNotFoundError when absent)."""
        ...

    def exists(self, name: str) -> bool: ...


def chunks_of(stream: BinaryIO) -> Iterator[bytes]:
    while chunk := stream.read(CHUNK_SIZE):
        yield chunk


class FolderTarget:
    """A backup in a local folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, name: str) -> Path:
        path = (self.root / name).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise ValueError(f"{name!r} is outside the backup")
        return path

    def write(self, name: str, chunks: Iterable[bytes]) -> tuple[int, str]:
        path = self._path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        digest, size = hashlib.sha256(), 0
        with partial.open("wb") as out:
            for chunk in chunks:
                digest.update(chunk)
                size += len(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        partial.replace(path)
        return size, digest.hexdigest()

    @contextmanager
    def open(self, name: str) -> Iterator[BinaryIO]:
        with self._path(name).open("rb") as stream:
            yield stream

    def exists(self, name: str) -> bool:
        return self._path(name).is_file()


class S3Target:
    """A backup under a prefix of an S3 bucket (the storage URL's client settings)."""

    def __init__(self, url: str) -> None:
        from docflow.storage.s3 import S3Storage  # boto3 loads slowly; only S3 needs it

        storage = S3Storage.from_url(url)
        self.client, self.bucket, self.prefix = storage.client, storage.bucket, storage.prefix

    def _key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def write(self, name: str, chunks: Iterable[bytes]) -> tuple[int, str]:
        # Spooled to a temporary file first: the upload needs a seekable body and its digest.
        digest, size = hashlib.sha256(), 0
        with tempfile.TemporaryFile() as spool:
            for chunk in chunks:
                digest.update(chunk)
                size += len(chunk)
                spool.write(chunk)
            spool.seek(0)
            self.client.upload_fileobj(spool, self.bucket, self._key(name))
        return size, digest.hexdigest()

    @contextmanager
    def open(self, name: str) -> Iterator[BinaryIO]:
        from botocore.exceptions import ClientError

        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self._key(name))["Body"]
        except ClientError as exc:
            raise FileNotFoundError(name) from exc
        try:
            yield body
        finally:
            body.close()

    def exists(self, name: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=self._key(name))
        except ClientError:
            return False
        return True


def open_target(where: str) -> BackupTarget:
    """The backup target `where` names: `s3://bucket/prefix[?endpoint_url=…&region=…]`, else a
    folder path."""
    if urlsplit(where).scheme == "s3":
        return S3Target(where)
    return FolderTarget(Path(where))


def copy_file(path: Path, target: BackupTarget, name: str) -> tuple[int, str]:
    """Store the local file at `path` as `name`."""
    with path.open("rb") as stream:
        return target.write(name, chunks_of(stream))


def fetch_file(target: BackupTarget, name: str, path: Path) -> None:
    """Copy part `name` to the local file `path`."""
    with target.open(name) as stream, path.open("wb") as out:
        shutil.copyfileobj(stream, out, CHUNK_SIZE)
