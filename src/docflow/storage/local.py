"""`LocalStorage`: objects as files under a folder on local disk (embedded mode, the default)."""

from __future__ import annotations

import os
import tempfile
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

import structlog

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

log = structlog.get_logger(__name__)


class LocalStorage:
    """Objects as files under a root folder, written atomically (temp file, fsync, rename)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*validate_key(key).split("/"))

    def write_stream(self, key: str, chunks: ByteSource, *, max_bytes: int) -> StoredObject:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        # The temp name starts with a dot, which no key segment may, so it never shadows an object.
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as tmp:
                size, sha256 = copy_limited(chunks, tmp, max_bytes=max_bytes)
                tmp.flush()
                os.fsync(tmp.fileno())
            os.replace(tmp_name, path)
        except BaseException as exc:
            with suppress(FileNotFoundError):
                os.unlink(tmp_name)
            if isinstance(exc, TooLarge):
                log.info("storage.write_refused", key=key, max_bytes=max_bytes)
            raise
        _fsync_dir(path.parent)
        return StoredObject(key=key, size=size, sha256=sha256)

    def write_bytes(self, key: str, data: bytes) -> StoredObject:
        return self.write_stream(key, [data], max_bytes=len(data))

    def open_read(self, key: str) -> BinaryIO:
        try:
            return self._path(key).open("rb")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ObjectNotFound(f"no object stored under {key}") from None

    def read_bytes(self, key: str, *, max_bytes: int) -> bytes:
        with self.open_read(key) as stream:
            data = stream.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise TooLarge(max_bytes)
        return data

    def head(self, key: str) -> ObjectInfo | None:
        path = self._path(key)
        try:
            stat = path.stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not path.is_file():
            return None
        modified = datetime.fromtimestamp(stat.st_mtime, tz=UTC)
        return ObjectInfo(key=key, size=stat.st_size, sha256=None, last_modified=modified)

    def delete(self, key: str) -> None:
        with suppress(FileNotFoundError, NotADirectoryError):
            self._path(key).unlink()

    def copy(self, source: str, target: str) -> None:
        validate_key(target)
        with self.open_read(source) as stream:
            size = os.fstat(stream.fileno()).st_size
            self.write_stream(target, stream, max_bytes=size)

    def presigned_post(
        self, key: str, *, content_type: str, size: int, expires_in: int
    ) -> PresignedPost | None:
        """None: local uploads go through the API's own signed upload endpoint."""
        validate_key(key)
        return None

    def presigned_get_url(
        self, key: str, *, expires_in: int, content_type: str, content_disposition: str
    ) -> str | None:
        """None: the API streams local files itself."""
        validate_key(key)
        return None


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable, not only the file's content.
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
