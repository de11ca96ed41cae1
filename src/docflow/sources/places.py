"""Where a source's files are: a folder on the server or a key prefix in an S3 bucket.

The operator sets one sources root: `DOCFLOW_SOURCES_ROOT`, a folder (embedded), or
`DOCFLOW_SOURCES_URL`, an S3 bucket prefix `s3://bucket/prefix?endpoint_url=&region=`
(distributed: every worker reaches the same bucket). A tenant's sources lie under
`<root>/<tenant id>/`, each named by a path relative to it, confined twice: when the source is
set (`locate`: relative, no `..`, no `\\`; for a folder, once resolved with its symbolic links,
still inside the tenant's directory) and at every poll, where a folder is walked and read one
component at a time with no link followed (`sources.folder`), and a file is read only as the
scan found it. A folder sources root must keep out of docflow's home and its key files.

Both places answer what a poll asks: `scan` lists the settled files (not those under the
source's `processed/` and `failed/`, nor hidden entries, nor, in a folder, symbolic links),
`open` reads one (as the scan keyed it), `move` puts one under `processed/` or `failed/` (a
rename in a folder, a copy then a delete in a bucket). A file is keyed by its path and its
content: the SHA-256 of a folder's file (read to hash it), the ETag of an object (`etag:<etag>`,
which changes with the content, so nothing is downloaded to list). A folder's file whose path,
size and change time (ns) are those recorded when it was taken (`known`) keeps the hash recorded
then and is not read again: a folder whose files stay in place is not re-read at every poll; a
file rewritten, touched or grown is hashed again. A folder that cannot be listed, or a bucket
that refuses access or is gone, raises `SourceUnreadable` with the reason, which marks the
source unhealthy until a later poll can look again. A bucket listing is paginated and stops
after `SCAN_CAP` objects a poll (the rest are listed by the next polls, as their files are moved
or the earlier ones are skipped as taken).
"""

from __future__ import annotations

import functools
import os
import stat
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any, Protocol, cast

from botocore.exceptions import BotoCoreError, ClientError

from docflow.config import Settings
from docflow.errors import InvalidInput
from docflow.sources.folder import (
    FAILED,
    NOTHING_KNOWN,
    PROCESSED,
    Found,
    Known,
    SourceChanged,
    SourceUnreadable,
    VerifiedFile,
    check_root,
    open_file,
    open_folder,
    scan_fd,
    walk_dirs,
)
from docflow.storage.s3 import S3Storage

__all__ = [
    "FAILED",
    "PROCESSED",
    "BucketPlace",
    "FolderPlace",
    "Found",
    "Known",
    "Place",
    "SourceChanged",
    "SourceUnreadable",
    "sources_place",
]

# Objects a poll lists at most in a bucket (a page of the listing is 1000).
SCAN_CAP = 10_000
_PAGE = 1000


class Place(Protocol):
    """A sources root: where every tenant's sources lie."""

    def locate(self, tenant_id: str, path: str) -> str:
        """`path` normalised ("a/./b/" is "a/b"); InvalidInput on `path` when it is not
        relative, climbs with `..`, or leaves the tenant's directory."""
        ...

    def scan(
        self,
        tenant_id: str,
        path: str,
        *,
        max_bytes: int,
        changed_before: float,
        known: Known = NOTHING_KNOWN,
    ) -> list[Found]:
        """The source's files changed before `changed_before` (a POSIX time), in path order,
        those in `known` keyed without being read; SourceUnreadable when the source cannot be
        listed."""
        ...

    def open(self, tenant_id: str, path: str, expected: Found) -> IO[bytes]:
        """The file `expected.path` of the source for reading, as the scan found it; OSError
        when it is gone, SourceChanged when it is not what the scan found (swapped for a link,
        not a regular file, rewritten before or while it is read: raised at the end)."""
        ...

    def move(self, tenant_id: str, path: str, name: str, place: str) -> None:
        """Move the file `name` of the source to `<source>/<place>/<name>`; OSError when it
        cannot (gone already: nothing to do)."""
        ...


def _relative(path: str) -> PurePosixPath:
    """`path` as a relative path that never climbs; InvalidInput on `path` otherwise."""
    pure = PurePosixPath(path)
    if not path.strip() or len(path) > 1000 or "\x00" in path:
        raise InvalidInput("path must be 1 to 1000 characters", field="path")
    if pure.is_absolute():
        raise InvalidInput(
            "path must be relative to the tenant's sources directory, not absolute", field="path"
        )
    if ".." in pure.parts or "\\" in path:
        raise InvalidInput("path must not climb with '..' (nor use '\\')", field="path")
    return pure


def _hidden_or_placed(parts: tuple[str, ...]) -> bool:
    """Whether a file at `parts` (relative to its source) is hidden or already moved."""
    return any(p.startswith(".") for p in parts) or parts[0] in (PROCESSED, FAILED)


# --- a folder --------------------------------------------------------------------------------


class FolderPlace:
    """Sources as folders under `root` on the server, walked and read with no link followed
    (`sources.folder`); `home` and `secrets` (key and secret files) must lie outside `root`."""

    def __init__(self, root: Path, *, home: Path, secrets: tuple[Path, ...] = ()) -> None:
        self.root = Path(root).resolve()
        self.home = home
        self.secrets = secrets

    def _parts(self, tenant_id: str, path: str) -> tuple[str, ...]:
        """The components of the source's folder under the root, checked as `locate` does."""
        if reason := check_root(self.root, home=self.home, secrets=self.secrets):
            raise InvalidInput(reason, field="path")
        return (tenant_id, *_relative(path).parts)

    def locate(self, tenant_id: str, path: str) -> str:
        parts = self._parts(tenant_id, path)
        base = self.root / tenant_id
        resolved = self.root.joinpath(*parts).resolve()
        if resolved != base and base not in resolved.parents:
            raise InvalidInput("path leaves the tenant's sources directory", field="path")
        return str(PurePosixPath(path))

    def _open(self, tenant_id: str, path: str) -> int:
        try:
            return open_folder(self.root, self._parts(tenant_id, path))
        except InvalidInput as exc:
            raise SourceUnreadable(str(exc)) from None

    def scan(
        self,
        tenant_id: str,
        path: str,
        *,
        max_bytes: int,
        changed_before: float,
        known: Known = NOTHING_KNOWN,
    ) -> list[Found]:
        fd = self._open(tenant_id, path)
        try:
            return scan_fd(fd, max_bytes=max_bytes, changed_before=changed_before, known=known)
        finally:
            os.close(fd)

    def open(self, tenant_id: str, path: str, expected: Found) -> IO[bytes]:
        fd = self._folder_or_oserror(tenant_id, path)
        try:
            file_fd, st = open_file(fd, expected.path)
        finally:
            os.close(fd)
        return cast(IO[bytes], VerifiedFile(file_fd, st, expected))

    def move(self, tenant_id: str, path: str, name: str, place: str) -> None:
        *dirs, leaf = PurePosixPath(name).parts
        fd = self._folder_or_oserror(tenant_id, path)
        try:
            src = walk_dirs(fd, dirs)
            try:
                st = os.stat(leaf, dir_fd=src, follow_symlinks=False)
                if stat.S_ISREG(st.st_mode):
                    dst = walk_dirs(fd, (place, *dirs), create=True)
                    try:
                        os.replace(leaf, leaf, src_dir_fd=src, dst_dir_fd=dst)
                    finally:
                        os.close(dst)
            finally:
                os.close(src)
        finally:
            os.close(fd)

    def _folder_or_oserror(self, tenant_id: str, path: str) -> int:
        try:
            return self._open(tenant_id, path)
        except SourceUnreadable as exc:
            raise OSError(str(exc)) from None


# --- a bucket prefix -------------------------------------------------------------------------


def _refusal(exc: Exception) -> str:
    """What S3 said, for the source's reason (the bucket's name is the operator's: kept out)."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = error.get("Code", "error")
        if code in ("NoSuchBucket", "404"):
            return "the bucket does not exist"
        if code in ("AccessDenied", "403", "AllAccessDisabled", "InvalidAccessKeyId"):
            return f"the bucket refuses access ({code})"
        return f"the bucket answered {code}"
    return f"the bucket cannot be reached ({type(exc).__name__})"


class BucketPlace:
    """Sources as key prefixes under `prefix` in one S3 bucket."""

    def __init__(self, client: Any, bucket: str, prefix: str = "") -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/")

    @classmethod
    def from_url(cls, url: str) -> BucketPlace:
        """From `s3://bucket/prefix?endpoint_url=...&region=...` (the storage URL's form)."""
        s3 = S3Storage.from_url(url)
        return cls(s3.client, s3.bucket, s3.prefix)

    def _source_prefix(self, tenant_id: str, path: str) -> str:
        """`<prefix>/<tenant id>/<path>/`, the keys of the source's files."""
        relative = str(_relative(path))
        parts = [p for p in (self.prefix, tenant_id) if p]
        if relative != ".":
            parts.append(relative)
        return "/".join(parts) + "/"

    def locate(self, tenant_id: str, path: str) -> str:
        self._source_prefix(tenant_id, path)
        return str(PurePosixPath(path))

    def scan(
        self,
        tenant_id: str,
        path: str,
        *,
        max_bytes: int,
        changed_before: float,
        known: Known = NOTHING_KNOWN,
    ) -> list[Found]:
        # `known` is not needed: an object's ETag is listed, nothing is read to key it.
        try:
            prefix = self._source_prefix(tenant_id, path)
        except InvalidInput as exc:
            raise SourceUnreadable(str(exc)) from None
        found: list[Found] = []
        listed = 0
        token: str | None = None
        start_after: str | None = None
        try:
            while listed < SCAN_CAP:
                request: dict[str, Any] = {
                    "Bucket": self.bucket,
                    "Prefix": prefix,
                    "MaxKeys": min(_PAGE, SCAN_CAP - listed),
                }
                if token is not None:
                    request["ContinuationToken"] = token
                elif start_after is not None:
                    request["StartAfter"] = start_after
                page = self.client.list_objects_v2(**request)
                token = page.get("NextContinuationToken")
                more = bool(page.get("IsTruncated")) and token is not None
                for item in page.get("Contents", []):
                    name = item["Key"][len(prefix) :]
                    parts = PurePosixPath(name).parts
                    if len(parts) > 1 and parts[0] in (PROCESSED, FAILED):
                        # The files moved by earlier polls, which pile up: list on from past
                        # them (keys sort by byte, and "0" follows "/") instead of through them.
                        start_after, token, more = f"{prefix}{parts[0]}0", None, True
                        break
                    listed += 1
                    if not name or name.endswith("/") or _hidden_or_placed(parts):
                        continue
                    modified: datetime = item["LastModified"]
                    if modified.timestamp() >= changed_before:
                        continue  # perhaps still being written: taken by a later poll
                    etag = str(item.get("ETag", "")).strip('"')
                    found.append(Found(name, int(item["Size"]), f"etag:{etag}"[:64]))
                if not more:
                    break
        except (ClientError, BotoCoreError) as exc:
            raise SourceUnreadable(_refusal(exc)) from None
        return sorted(found, key=lambda f: f.path)

    def open(self, tenant_id: str, path: str, expected: Found) -> IO[bytes]:
        key = self._source_prefix(tenant_id, path) + expected.path
        request: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        etag = expected.sha256.removeprefix("etag:")
        if etag != expected.sha256 and len(expected.sha256) < 64:  # recorded whole
            request["IfMatch"] = f'"{etag}"'  # the object the scan listed, or none
        try:
            body: IO[bytes] = self.client.get_object(**request)["Body"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412"):
                raise SourceChanged(f"{expected.path!r} changed since it was listed") from None
            raise OSError(_refusal(exc)) from None
        except BotoCoreError as exc:
            raise OSError(_refusal(exc)) from None
        return body

    def move(self, tenant_id: str, path: str, name: str, place: str) -> None:
        prefix = self._source_prefix(tenant_id, path)
        key, target = prefix + name, f"{prefix}{place}/{name}"
        try:
            self.client.copy_object(
                Bucket=self.bucket, Key=target, CopySource={"Bucket": self.bucket, "Key": key}
            )
            self.client.delete_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return  # gone already, as a folder's file moved by hand
            raise OSError(_refusal(exc)) from None
        except BotoCoreError as exc:
            raise OSError(_refusal(exc)) from None


# --- the server's place ----------------------------------------------------------------------


@functools.cache
def _bucket(url: str) -> BucketPlace:
    return BucketPlace.from_url(url)


def sources_place(settings: Settings) -> Place | None:
    """The server's sources root from its settings (a bucket's client made once per URL);
    None when sources are not enabled."""
    if settings.sources_url:
        return _bucket(settings.sources_url)
    if settings.sources_root is not None:
        return FolderPlace(
            settings.sources_root, home=settings.home, secrets=settings.secret_files()
        )
    return None
