"""A random secret kept in a file only its owner can read, made on first use."""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)


def read_or_create(path: Path) -> str:
    """The secret stored at `path`; when there is none, a new random one (43 URL-safe characters,
    256 bits) written there with mode 0600 first.

    Concurrent first uses agree: the secret is written to a private temporary file which is then
    linked into place, which fails if another process linked its own first, and that one is read.
    The secret itself is never logged.
    """
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 0600
    try:
        with os.fdopen(handle, "w") as out:
            out.write(secrets.token_urlsafe(32) + "\n")
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            return _read(path)
    finally:
        os.unlink(temporary)
    log.info("secret.generated", path=str(path))
    return _read(path)


def _read(path: Path) -> str:
    value = path.read_text().strip()
    if not value:
        raise ValueError(f"{path} is empty: delete it to have a new secret made")
    return value
