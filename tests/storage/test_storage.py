"""Object storage: the local folder and S3 (moto's standalone server over HTTP) behave alike."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import socket
import time
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from docflow.storage.base import InvalidObjectKey, ObjectNotFound, Storage, TooLarge, object_key
from docflow.storage.health import storage_check
from docflow.storage.local import LocalStorage
from docflow.storage.open import open_storage
from docflow.storage.s3 import PROBE_TIMEOUT_S, S3Storage, StorageUnusable
from support.s3_server import S3Server, s3_server  # noqa: F401

TENANT = "3f0c8a52-8d1e-4a57-9d59-1c1a5d2e7b10"
MiB = 1024 * 1024


def pattern_chunks(total: int, chunk_size: int = 64 * 1024) -> Iterator[bytes]:
    """Deterministic, non-repeating-per-chunk content generated on the fly."""
    sent = 0
    index = 0
    while sent < total:
        size = min(chunk_size, total - sent)
        seed = hashlib.sha256(index.to_bytes(8, "big")).digest()
        yield (seed * (size // len(seed) + 1))[:size]
        sent += size
        index += 1


def expected_sha256(total: int) -> str:
    digest = hashlib.sha256()
    for chunk in pattern_chunks(total):
        digest.update(chunk)
    return digest.hexdigest()


class GeneratedFile(io.RawIOBase):
    """A binary file-like producing `total` bytes without ever holding them all."""

    def __init__(self, total: int) -> None:
        self._chunks = pattern_chunks(total)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if not self._pending:
            self._pending = next(self._chunks, b"")
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


@pytest.fixture
def s3_storage(
    s3_server: S3Server,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> S3Storage:
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    bucket = "docflow-" + hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:20]
    storage = open_storage(
        f"s3://{bucket}/files?endpoint_url={s3_server.endpoint_url}&region={s3_server.region}"
    )
    assert isinstance(storage, S3Storage)
    storage.client.create_bucket(Bucket=bucket)
    return storage


@pytest.fixture(params=["local", "s3"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    if request.param == "local":
        return LocalStorage(tmp_path / "files")
    return request.getfixturevalue("s3_storage")


def stored_names(storage: Storage) -> list[str]:
    """Every name the backend holds, including temp files and unfinished multipart uploads."""
    if isinstance(storage, LocalStorage):
        if not storage.root.exists():
            return []
        return sorted(
            str(p.relative_to(storage.root)) for p in storage.root.rglob("*") if p.is_file()
        )
    assert isinstance(storage, S3Storage)
    listed = storage.client.list_objects_v2(Bucket=storage.bucket).get("Contents", [])
    uploads = storage.client.list_multipart_uploads(Bucket=storage.bucket).get("Uploads", [])
    return sorted([item["Key"] for item in listed] + [f"upload:{u['Key']}" for u in uploads])


def test_both_implementations_satisfy_the_protocol(storage: Storage) -> None:
    assert isinstance(storage, Storage)


def test_object_key_is_namespaced_by_tenant() -> None:
    assert object_key(TENANT, "documents", "d1", "original") == (
        f"tenants/{TENANT}/documents/d1/original"
    )
    assert object_key(TENANT, "results/r1.json") == f"tenants/{TENANT}/results/r1.json"


@pytest.mark.parametrize(
    "parts",
    [(), ("..",), ("a", ".."), ("../other",), ("/etc/passwd",), ("a\\b",), ("",), (".hidden",)],
)
def test_object_key_refuses_parts_escaping_the_namespace(parts: tuple[str, ...]) -> None:
    with pytest.raises(InvalidObjectKey):
        object_key(TENANT, *parts)


@pytest.mark.parametrize("tenant", ["..", "", "a/..", "a\\b"])
def test_object_key_refuses_bad_tenant_ids(tenant: str) -> None:
    with pytest.raises(InvalidObjectKey):
        object_key(tenant, "x")


BAD_KEYS = [
    f"tenants/{TENANT}/../other/x",
    f"tenants/{TENANT}/a/../../x",
    f"/tenants/{TENANT}/x",
    "/etc/passwd",
    f"tenants\\{TENANT}\\x",
    f"tenants/{TENANT}/a\\..\\..\\x",
    f"tenants/{TENANT}",
    f"tenants/{TENANT}/",
    f"tenants/{TENANT}//x",
    f"other/{TENANT}/x",
    f"tenants/{TENANT}/.x.part",
    f"tenants/{TENANT}/x\x00y",
]


@pytest.mark.parametrize("key", BAD_KEYS)
def test_every_operation_refuses_keys_outside_the_namespace(storage: Storage, key: str) -> None:
    operations = [
        lambda: storage.write_stream(key, [b"x"], max_bytes=10),
        lambda: storage.write_bytes(key, b"x"),
        lambda: storage.open_read(key),
        lambda: storage.read_bytes(key, max_bytes=10),
        lambda: storage.head(key),
        lambda: storage.delete(key),
        lambda: storage.presigned_post(key, content_type="application/pdf", size=10, expires_in=60),
        lambda: storage.copy(key, object_key(TENANT, "documents", "d1")),
        lambda: storage.copy(object_key(TENANT, "documents", "d1"), key),
    ]
    for operation in operations:
        with pytest.raises(InvalidObjectKey):
            operation()
    assert stored_names(storage) == []


def test_write_stream_records_size_and_sha256_and_reads_back(storage: Storage) -> None:
    key = object_key(TENANT, "documents", "d1")
    total = 3 * MiB + 17
    stored = storage.write_stream(key, pattern_chunks(total), max_bytes=total)
    assert (stored.key, stored.size, stored.sha256) == (key, total, expected_sha256(total))
    with storage.open_read(key) as stream:
        digest = hashlib.sha256()
        while chunk := stream.read(100_000):
            digest.update(chunk)
    assert digest.hexdigest() == stored.sha256
    assert hashlib.sha256(storage.read_bytes(key, max_bytes=total)).hexdigest() == stored.sha256


def test_write_stream_accepts_a_binary_file(storage: Storage) -> None:
    key = object_key(TENANT, "documents", "d2")
    stored = storage.write_stream(key, GeneratedFile(2 * MiB + 5), max_bytes=10 * MiB)
    assert (stored.size, stored.sha256) == (2 * MiB + 5, expected_sha256(2 * MiB + 5))


def test_head_reports_size_and_missing_objects(storage: Storage) -> None:
    key = object_key(TENANT, "documents", "d3")
    assert storage.head(key) is None
    stored = storage.write_bytes(key, b"%PDF-1.7 tiny")
    info = storage.head(key)
    assert info is not None
    assert (info.key, info.size) == (key, len(b"%PDF-1.7 tiny"))
    assert info.last_modified.tzinfo is not None
    # S3 keeps the SHA-256 as metadata; the local folder does not record it.
    assert info.sha256 == (stored.sha256 if isinstance(storage, S3Storage) else None)


def test_a_directory_like_prefix_is_not_an_object(storage: Storage) -> None:
    storage.write_bytes(object_key(TENANT, "documents", "d4", "original"), b"x")
    prefix = object_key(TENANT, "documents", "d4")
    assert storage.head(prefix) is None
    with pytest.raises(ObjectNotFound):
        storage.open_read(prefix)


def test_reading_a_missing_object_raises_not_found(storage: Storage) -> None:
    key = object_key(TENANT, "documents", "missing")
    with pytest.raises(ObjectNotFound):
        storage.open_read(key)
    with pytest.raises(ObjectNotFound):
        storage.read_bytes(key, max_bytes=10)


def test_read_bytes_refuses_objects_over_its_limit(storage: Storage) -> None:
    key = object_key(TENANT, "results", "r1.json")
    storage.write_bytes(key, b"0123456789")
    assert storage.read_bytes(key, max_bytes=10) == b"0123456789"
    with pytest.raises(TooLarge):
        storage.read_bytes(key, max_bytes=9)


def test_delete_removes_and_is_idempotent(storage: Storage) -> None:
    key = object_key(TENANT, "documents", "d5")
    storage.write_bytes(key, b"abc")
    storage.delete(key)
    storage.delete(key)
    assert storage.head(key) is None
    assert stored_names(storage) == []


def test_exactly_the_limit_is_accepted(storage: Storage) -> None:
    key = object_key(TENANT, "documents", "d6")
    assert storage.write_stream(key, pattern_chunks(MiB), max_bytes=MiB).size == MiB


def test_one_byte_over_the_limit_is_refused_and_leaves_nothing(storage: Storage) -> None:
    key = object_key(TENANT, "documents", "d7")
    with pytest.raises(TooLarge) as refused:
        storage.write_stream(key, pattern_chunks(MiB + 1), max_bytes=MiB)
    assert refused.value.status == 413
    assert storage.head(key) is None
    assert stored_names(storage) == []


def test_an_oversize_stream_stops_being_read_at_the_limit(storage: Storage) -> None:
    consumed = 0

    def endless() -> Iterator[bytes]:
        nonlocal consumed
        while True:
            consumed += 64 * 1024
            yield b"\0" * (64 * 1024)

    with pytest.raises(TooLarge):
        storage.write_stream(object_key(TENANT, "documents", "d8"), endless(), max_bytes=MiB)
    assert consumed <= MiB + 64 * 1024
    assert stored_names(storage) == []


def test_a_refused_rewrite_keeps_the_previous_object(storage: Storage) -> None:
    key = object_key(TENANT, "documents", "d9")
    first = storage.write_bytes(key, b"first version")
    with pytest.raises(TooLarge):
        storage.write_stream(key, pattern_chunks(2 * MiB), max_bytes=MiB)
    assert storage.read_bytes(key, max_bytes=MiB) == b"first version"
    assert stored_names(storage) == sorted(_backend_names(storage, [first.key]))


def test_a_source_failing_midway_leaves_nothing(storage: Storage) -> None:
    def broken() -> Iterator[bytes]:
        yield b"x" * MiB
        raise ConnectionResetError("client went away")

    key = object_key(TENANT, "documents", "d10")
    with pytest.raises(ConnectionResetError):
        storage.write_stream(key, broken(), max_bytes=10 * MiB)
    assert storage.head(key) is None
    assert stored_names(storage) == []


def test_writing_the_same_content_twice_is_harmless(storage: Storage) -> None:
    key = object_key(TENANT, "documents", "d11")
    first = storage.write_stream(key, pattern_chunks(MiB + 3), max_bytes=2 * MiB)
    second = storage.write_stream(key, pattern_chunks(MiB + 3), max_bytes=2 * MiB)
    assert first == second
    assert hashlib.sha256(storage.read_bytes(key, max_bytes=2 * MiB)).hexdigest() == first.sha256
    assert stored_names(storage) == sorted(_backend_names(storage, [key]))


def test_empty_content_is_stored(storage: Storage) -> None:
    key = object_key(TENANT, "documents", "empty")
    stored = storage.write_stream(key, iter(()), max_bytes=10)
    assert (stored.size, stored.sha256) == (0, hashlib.sha256(b"").hexdigest())
    assert storage.read_bytes(key, max_bytes=10) == b""


def test_write_stream_rejects_plain_bytes(storage: Storage) -> None:
    with pytest.raises(TypeError):
        storage.write_stream(object_key(TENANT, "x"), b"abc", max_bytes=10)  # type: ignore[arg-type]


def _backend_names(storage: Storage, keys: list[str]) -> list[str]:
    if isinstance(storage, S3Storage):
        return [f"{storage.prefix}/{key}" for key in keys]
    return keys


STREAM_SIZE = 20 * MiB


@pytest.mark.parametrize("source", ["chunks", "file"])
def test_streaming_20_mb_keeps_memory_bounded(storage: Storage, source: str) -> None:
    key = object_key(TENANT, "documents", "big")
    data = pattern_chunks(STREAM_SIZE) if source == "chunks" else GeneratedFile(STREAM_SIZE)
    tracemalloc.start()
    try:
        stored = storage.write_stream(key, data, max_bytes=STREAM_SIZE)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(f"peak allocation while storing {STREAM_SIZE} bytes: {peak} bytes")
    assert stored.size == STREAM_SIZE
    # Measured: about 0.2-1.3 MB locally and 2.2 MB for S3 (boto3's 1 MB send buffers and client
    # state), whatever the size. Whole-file buffering would need at least STREAM_SIZE.
    assert peak < STREAM_SIZE // 4


def test_local_storage_has_no_upload_form(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    key = object_key(TENANT, "documents", "d1")
    post = storage.presigned_post(key, content_type="application/pdf", size=10, expires_in=60)
    assert post is None


def test_copy_makes_an_independent_object(storage: Storage) -> None:
    source, target = object_key(TENANT, "documents", "d1"), object_key(TENANT, "documents", "d2")
    storage.write_bytes(source, b"first")
    storage.copy(source, target)
    storage.write_bytes(source, b"second")
    assert storage.read_bytes(target, max_bytes=10) == b"first"
    with pytest.raises(ObjectNotFound):
        storage.copy(object_key(TENANT, "documents", "absent"), target)


def test_local_files_live_under_the_root_at_their_key(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    key = object_key(TENANT, "documents", "d1", "original")
    storage.write_bytes(key, b"content")
    assert (
        tmp_path / "tenants" / TENANT / "documents" / "d1" / "original"
    ).read_bytes() == b"content"
    assert [p.name for p in (tmp_path / "tenants" / TENANT / "documents" / "d1").iterdir()] == [
        "original"
    ]


def test_s3_objects_live_under_the_prefix_with_their_sha256(s3_storage: S3Storage) -> None:
    key = object_key(TENANT, "documents", "d1")
    stored = s3_storage.write_bytes(key, b"content")
    head = s3_storage.client.head_object(Bucket=s3_storage.bucket, Key=f"files/{key}")
    assert head["Metadata"] == {"sha256": stored.sha256}


def test_s3_presigned_post_binds_the_key_type_and_exact_size(s3_storage: S3Storage) -> None:
    key = object_key(TENANT, "documents", "d2")
    body = b"%PDF-1.7 client upload"
    post = s3_storage.presigned_post(
        key, content_type="application/pdf", size=len(body), expires_in=300
    )
    assert post is not None
    assert post.fields["key"] == f"files/{key}"
    assert post.fields["Content-Type"] == "application/pdf"
    policy = json.loads(base64.b64decode(post.fields["policy"]))
    conditions = policy["conditions"]
    # What S3 checks before it stores anything: this key, this type, exactly this many bytes.
    # moto's server evaluates no POST policy (it stores any body), so S3's own refusal cannot
    # be observed here; the API checks the size again before accepting a file.
    assert ["content-length-range", len(body), len(body)] in conditions
    assert {"Content-Type": "application/pdf"} in conditions
    assert {"key": f"files/{key}"} in conditions
    expiration = datetime.fromisoformat(policy["expiration"].replace("Z", "+00:00"))
    assert timedelta(seconds=290) < expiration - datetime.now(UTC) <= timedelta(seconds=300)
    files = {"file": ("a.pdf", body, "application/pdf")}
    response = httpx.post(post.url, data=post.fields, files=files)
    assert response.status_code == 204, response.text
    info = s3_storage.head(key)
    assert info is not None
    assert (info.size, info.sha256) == (len(body), None)
    assert s3_storage.read_bytes(key, max_bytes=MiB) == body


def test_s3_probe_writes_and_removes_a_reserved_object(s3_storage: S3Storage) -> None:
    s3_storage.probe()
    assert s3_storage.client.list_objects_v2(Bucket=s3_storage.bucket).get("KeyCount") == 0
    missing = S3Storage(s3_storage.client, "docflow-no-such-bucket")
    with pytest.raises(StorageUnusable, match="NoSuchBucket"):
        missing.probe()


def test_the_readiness_check_caches_the_probe_for_a_few_seconds(s3_storage: S3Storage) -> None:
    now = [100.0]
    missing = S3Storage(s3_storage.client, "docflow-created-later")
    check = storage_check(missing, ttl_seconds=5, clock=lambda: now[0])
    assert check is not None
    with pytest.raises(StorageUnusable):
        check()
    s3_storage.client.create_bucket(Bucket="docflow-created-later")
    now[0] += 4
    with pytest.raises(StorageUnusable):  # the failure is remembered, S3 not asked again
        check()
    now[0] += 1
    check()
    s3_storage.client.delete_bucket(Bucket="docflow-created-later")
    check()  # the success is remembered too
    now[0] += 5
    with pytest.raises(StorageUnusable):
        check()


def test_an_unreachable_endpoint_fails_the_probe_within_its_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    with socket.socket() as listener:  # accepts connections, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        storage = open_storage(f"s3://b?endpoint_url=http://127.0.0.1:{port}&region=us-east-1")
        assert isinstance(storage, S3Storage)
        started = time.monotonic()
        with pytest.raises(StorageUnusable):
            storage.probe()
        assert time.monotonic() - started < 3 * PROBE_TIMEOUT_S
    assert storage_check(LocalStorage(Path("."))) is None


def test_open_storage_chooses_by_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local = open_storage(f"file://{tmp_path}/files")
    assert isinstance(local, LocalStorage) and local.root == tmp_path / "files"
    spaced = open_storage(f"file://{tmp_path}/my%20files")
    assert isinstance(spaced, LocalStorage) and spaced.root == tmp_path / "my files"
    plain = open_storage(str(tmp_path / "plain"))
    assert isinstance(plain, LocalStorage) and plain.root == tmp_path / "plain"
    monkeypatch.chdir(tmp_path)
    relative = open_storage("relative/files")
    assert isinstance(relative, LocalStorage) and relative.root == tmp_path / "relative" / "files"


def test_open_storage_reads_s3_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    storage = open_storage(
        "s3://bucket/some/prefix/?endpoint_url=http://127.0.0.1:9000&region=eu-west-3"
    )
    assert isinstance(storage, S3Storage)
    assert (storage.bucket, storage.prefix) == ("bucket", "some/prefix")
    assert storage.client.meta.endpoint_url == "http://127.0.0.1:9000"
    assert storage.client.meta.region_name == "eu-west-3"
    bare = open_storage("s3://bucket?region=eu-west-3")
    assert isinstance(bare, S3Storage) and bare.prefix == ""


@pytest.mark.parametrize(
    "url",
    ["", "ftp://host/x", "file://host/x", "file:relative", "s3:///prefix", "s3://b?endpoint=x"],
)
def test_open_storage_refuses_unknown_urls(url: str) -> None:
    with pytest.raises(ValueError):
        open_storage(url)
