"""A source's folder on the server, walked and read without ever following a link.

A tenant may write to its folder while a poll runs, and so swap a file, or a folder on the way
to it, for a symbolic link between the listing and the read. Nothing here opens a path whole:
the source's folder is reached from the sources root one component at a time, each opened
relative to the previous one's descriptor with `O_NOFOLLOW` (a link in place of any component
fails the open); a file is opened the same way relative to its folder's descriptor (and
`O_NONBLOCK`, so a FIFO swapped in never blocks the open), then `fstat` must show a regular
file. A link, a FIFO, a device or a socket is never read.

A file is read as the scan saw it or not at all (`VerifiedFile`): its size and change time when
opened must be those the scan recorded, and when the last byte is read its `fstat` (size, change
time, inode change time) must be those it had when opened, and its SHA-256 the scan's. A file
swapped or rewritten in between, or one rewritten while it is read (a torn mix of old and new
bytes), raises `SourceChanged` at the end of the read, before the reader returns its end: the
storage then keeps nothing of it. The scan hashes a file the same way, and leaves one that
changed while it was hashed to a later poll.

The sources root itself is the operator's (resolved once, links and all); it must neither hold
docflow's home nor lie in it, nor hold a key file (`check_root`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

PROCESSED = "processed"
FAILED = "failed"
_CHUNK = 1024 * 1024
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
# Folders deeper than this under a source are not walked: the walk holds one descriptor per
# level, and a tenant may nest folders as deep as paths allow.
MAX_DEPTH = 32


class SourceUnreadable(Exception):
    """The source's folder or prefix cannot be listed: the reason marks the source unhealthy."""


class SourceChanged(OSError):
    """The file is no longer the one the scan listed (swapped for a link or another file,
    rewritten, or rewritten while it was read): nothing of it is stored, and the next poll
    takes what is there then."""


@dataclass(frozen=True)
class Found:
    path: str  # relative to the source's folder or prefix, with "/"
    size: int
    sha256: str  # the content's key: its SHA-256, or `etag:<etag>` in a bucket
    mtime_ns: int | None = None  # a folder's file's change time; None in a bucket
    hashed: int = 0  # the bytes read to key it: 0 when its recorded key was reused


# The content key recorded for a file taken with this (path, size, change time in ns).
Known = Mapping[tuple[str, int, int], str]
NOTHING_KNOWN: Known = {}


# --- confinement -------------------------------------------------------------------------------


def _holds(outer: Path, inner: Path) -> bool:
    return inner == outer or outer in inner.parents


def check_root(root: Path, *, home: Path, secrets: Iterable[Path]) -> str | None:
    """Why `root` (the sources root) must not be read (it holds docflow's home, lies inside
    it, or holds a key or secret file), all paths compared with their links resolved; None
    when it may."""
    root, home = root.resolve(), home.resolve()
    if _holds(root, home):
        return "the sources root holds docflow's home (its keys): move one out of the other"
    if _holds(home, root):
        return "the sources root lies inside docflow's home (its keys): move it out"
    for secret in secrets:
        if _holds(root, secret.resolve()):
            return "the sources root holds a key or secret file: move it out"
    return None


def open_folder(root: Path, parts: Iterable[str]) -> int:
    """A descriptor of the folder `root/<parts...>`, each of `parts` opened relative to the
    previous with no link followed; SourceUnreadable naming what is wrong otherwise."""
    fd = _open_dir(str(root), None, root.name)
    for part in parts:
        try:
            fd_next = _open_dir(part, fd, part)
        finally:
            os.close(fd)
        fd = fd_next
    return fd


def _open_dir(name: str, dir_fd: int | None, shown: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise SourceUnreadable(_why(exc, name, dir_fd, shown)) from None


def _why(exc: OSError, name: str, dir_fd: int | None, shown: str) -> str:
    if exc.errno == errno.ENOENT:
        return f"the folder {shown!r} does not exist or is not a folder"
    if exc.errno in (errno.ENOTDIR, errno.ELOOP):
        try:
            link = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        except OSError:
            link = False
        if link:
            return f"{shown!r} is a symbolic link, which a source never follows"
        return f"the folder {shown!r} does not exist or is not a folder"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"the folder {shown!r} cannot be read"
    return f"the folder {shown!r} cannot be opened: {exc.strerror}"


# --- reading one file ----------------------------------------------------------------------


def _fingerprint(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def walk_dirs(folder_fd: int, parts: Iterable[str], *, create: bool = False) -> int:
    """A new descriptor of the folder `parts` under `folder_fd`, each component opened with no
    link followed (made first with `create`); OSError otherwise (SourceChanged for a link)."""
    fd = os.dup(folder_fd)
    try:
        for part in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, dir_fd=fd)
            try:
                fd_next = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise _changed(exc, part) from None
            os.close(fd)
            fd = fd_next
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(folder_fd: int, name: str) -> tuple[int, os.stat_result]:
    """The regular file `name` (relative, "/"-separated) under `folder_fd`, every component
    opened with no link followed, and its `fstat`; OSError when it is gone, SourceChanged when
    a component is a link or it is not a regular file."""
    *dirs, leaf = PurePosixPath(name).parts
    fd = walk_dirs(folder_fd, dirs)
    try:
        # Looked at first, so a FIFO or a device is not even opened (opening some has effects).
        if not stat.S_ISREG(os.stat(leaf, dir_fd=fd, follow_symlinks=False).st_mode):
            raise SourceChanged(f"{name!r} is not a regular file")
        file_fd = os.open(leaf, _FILE_FLAGS, dir_fd=fd)
    except SourceChanged:
        raise
    except OSError as exc:
        raise _changed(exc, name) from None
    finally:
        os.close(fd)
    st = os.fstat(file_fd)
    if not stat.S_ISREG(st.st_mode):  # swapped since it was looked at
        os.close(file_fd)
        raise SourceChanged(f"{name!r} is not a regular file")
    return file_fd, st


def _changed(exc: OSError, name: str) -> OSError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return SourceChanged(f"{name!r} passes through a symbolic link, never followed")
    return exc


class VerifiedFile:
    """A file read as the scan found it (see the module docstring): `read` raises
    SourceChanged instead of returning the end when the bytes read are not those."""

    def __init__(self, fd: int, st: os.stat_result, expected: Found) -> None:
        self._fd = fd
        self._opened = _fingerprint(st)
        self._expected = expected
        self._digest = hashlib.sha256()
        self._read = 0
        if st.st_size != expected.size or expected.mtime_ns not in (None, st.st_mtime_ns):
            self.close()
            raise SourceChanged(f"{expected.path!r} changed since it was listed")

    def read(self, size: int = -1) -> bytes:
        if size < 0:
            return b"".join(iter(lambda: self.read(_CHUNK), b""))
        chunk = os.read(self._fd, size)
        if chunk:
            self._digest.update(chunk)
            self._read += len(chunk)
            return chunk
        self._check_whole()
        return chunk

    def _check_whole(self) -> None:
        expected = self._expected
        hashed = len(expected.sha256) == 64 and ":" not in expected.sha256
        if (
            _fingerprint(os.fstat(self._fd)) != self._opened
            or self._read != expected.size
            or (hashed and self._digest.hexdigest() != expected.sha256)
        ):
            raise SourceChanged(f"{expected.path!r} changed while it was read")

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> VerifiedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- the scan --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scan:
    max_bytes: int
    changed_before: float
    known: Known


def scan_fd(
    folder_fd: int, *, max_bytes: int, changed_before: float, known: Known = NOTHING_KNOWN
) -> list[Found]:
    """The regular files under the folder `folder_fd` (not its `processed/` and `failed/`,
    hidden entries, links, FIFOs or devices, folders deeper than `MAX_DEPTH`, nor files
    changed at `changed_before` (a POSIX time) or later, which may still be being written),
    in path order, each keyed by the hash `known` records for its path, size and change time
    or else read and hashed; a file that changes while it is hashed is left to a later poll."""
    try:
        names = _names(folder_fd)
    except OSError as exc:
        raise SourceUnreadable(f"the folder cannot be listed: {exc.strerror}") from None
    found: list[Found] = []
    _walk(folder_fd, (), names, _Scan(max_bytes, changed_before, known), found)
    return sorted(found, key=lambda f: f.path)


def _names(fd: int) -> list[str]:
    with os.scandir(fd) as listing:
        return sorted(entry.name for entry in listing)


def _walk(
    fd: int, here: tuple[str, ...], names: list[str], scan: _Scan, found: list[Found]
) -> None:
    for name in names:
        if name.startswith(".") or (not here and name in (PROCESSED, FAILED)):
            continue
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                if len(here) >= MAX_DEPTH:
                    continue
                sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
                try:
                    _walk(sub, (*here, name), _names(sub), scan, found)
                finally:
                    os.close(sub)
            elif stat.S_ISREG(st.st_mode) and st.st_mtime < scan.changed_before:
                item = _key(fd, "/".join((*here, name)), name, st, scan)
                if item is not None:
                    found.append(item)
        except OSError:
            continue  # gone, swapped or unreadable since the listing: seen again next time


def _key(fd: int, rel: str, name: str, st: os.stat_result, scan: _Scan) -> Found | None:
    size, mtime_ns = st.st_size, st.st_mtime_ns
    digest = scan.known.get((rel, size, mtime_ns))
    if digest is not None:
        return Found(rel, size, digest, mtime_ns, 0)
    if size > scan.max_bytes:  # never read: it fails `file_too_large`
        return Found(rel, size, f"oversize:{size}:{mtime_ns}"[:64], mtime_ns, 0)
    file_fd, opened = open_file(fd, name)
    try:
        if _fingerprint(opened)[:2] != (st.st_dev, st.st_ino):
            return None  # swapped since it was listed
        digest_of = hashlib.sha256()
        read = 0
        while chunk := os.read(file_fd, _CHUNK):
            digest_of.update(chunk)
            read += len(chunk)
        if _fingerprint(os.fstat(file_fd)) != _fingerprint(opened) or read != opened.st_size:
            return None  # written to while it was hashed
    finally:
        os.close(file_fd)
    return Found(rel, opened.st_size, digest_of.hexdigest(), opened.st_mtime_ns, read)


def scan_folder(
    folder: Path, *, max_bytes: int, changed_before: float, known: Known = NOTHING_KNOWN
) -> list[Found]:
    """`scan_fd` of the folder at `folder` (a path the operator gave, opened as it is)."""
    fd = open_folder(folder, ())
    try:
        return scan_fd(fd, max_bytes=max_bytes, changed_before=changed_before, known=known)
    finally:
        os.close(fd)
