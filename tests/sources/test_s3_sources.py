"""Watched S3 prefix sources on the real runtime and the local moto S3 server: a poll takes the
new objects under the source's prefix into one batch, they are moved by outcome (copy, then
delete), each object is taken once by key and ETag, a bucket that is gone marks the source
unhealthy until it is back, the listing is paginated and capped per poll, and a source's prefix
stays under the tenant's own prefix."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from docflow.runtime.context import services
from docflow.sources import places, service
from docflow.sources.places import BucketPlace, SourceUnreadable
from support.api_fixtures import ok, post_project, post_workflow
from support.dbos_fixtures import (
    DbosEnv,
    Setup,
    documents,
    invoice_pdf,
    launched_env,
    wait_terminal,
)
from support.s3_server import S3Server, s3_server  # noqa: F401
from support.sources_fixtures import create_source, poll_source, sources_url

MAX_BYTES = 100_000
BUCKET = "docflow-sources"
PREFIX = "watched"


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> Iterator[Any]:  # noqa: F811
    """An S3 client on the moto server, its credentials in the environment, and the bucket."""
    saved = {name: os.environ.get(name) for name in s3_server.environment()}
    os.environ.update(s3_server.environment())
    client = boto3.client("s3", endpoint_url=s3_server.endpoint_url, region_name=s3_server.region)
    client.create_bucket(Bucket=BUCKET)
    try:
        yield client
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="module")
def env(
    tmp_path_factory: pytest.TempPathFactory,
    s3_server: S3Server,  # noqa: F811
    bucket: Any,
) -> Iterator[DbosEnv]:
    tmp = tmp_path_factory.mktemp("s3-sources")
    url = f"s3://{BUCKET}/{PREFIX}?endpoint_url={s3_server.endpoint_url}&region={s3_server.region}"
    with launched_env(
        tmp, sources_url=url, max_document_bytes=MAX_BYTES, sources_settle_seconds=0
    ) as env:
        yield env


@pytest.fixture
def setup(env: DbosEnv) -> Setup:
    tenant = env.tenant()
    project = post_project(env.client, tenant)
    workflow = post_workflow(env.client, tenant, project["id"])
    return Setup(env, tenant, project["id"], workflow["id"])


def _put(client: Any, s: Setup, key: str, body: bytes) -> None:
    client.put_object(Bucket=BUCKET, Key=f"{PREFIX}/{s.tenant.tenant_id}/{key}", Body=body)


def _keys(client: Any, s: Setup, path: str) -> list[str]:
    prefix = f"{PREFIX}/{s.tenant.tenant_id}/{path}/"
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return sorted(item["Key"][len(prefix) :] for item in listed)


def test_a_poll_takes_the_prefix_new_objects_and_moves_them_by_outcome(
    setup: Setup, bucket: Any
) -> None:
    _put(bucket, setup, "inbox/a.pdf", invoice_pdf("INV-B1", "10.00"))
    _put(bucket, setup, "inbox/sub/b.pdf", invoice_pdf("INV-B2", "20.00"))
    _put(bucket, setup, "inbox/notes.txt", b"not a document")
    _put(bucket, setup, "inbox/.hidden.pdf", invoice_pdf("INV-B3", "1.00"))
    _put(bucket, setup, "inbox/processed/old.pdf", invoice_pdf("INV-B4", "1.00"))
    _put(bucket, setup, "inboxes/elsewhere.pdf", invoice_pdf("INV-B5", "1.00"))
    source = create_source(setup, "inbox", move_after=True)

    run = poll_source(setup, source["id"])
    assert (run["files_seen"], run["files_taken"], run["error"]) == (3, 3, None)
    batch = wait_terminal(setup, run["batch_id"])
    outcome = {d["name"]: (d["status"], d["error_code"]) for d in documents(setup, batch["id"])}
    assert outcome == {
        "a.pdf": ("SUCCEEDED", None),
        "sub/b.pdf": ("SUCCEEDED", None),
        "notes.txt": ("FAILED", "unsupported_type"),
    }

    # The next poll moves the settled objects first (copy, then delete), and finds nothing new.
    again = poll_source(setup, source["id"])
    assert (again["files_seen"], again["files_taken"], again["batch_id"]) == (0, 0, None)
    assert _keys(bucket, setup, "inbox") == [
        ".hidden.pdf",
        "failed/notes.txt",
        "processed/a.pdf",
        "processed/old.pdf",
        "processed/sub/b.pdf",
    ]
    # An object of the same key with new content (a new ETag) is taken by the next poll.
    _put(bucket, setup, "inbox/a.pdf", invoice_pdf("INV-B6", "40.00"))
    third = poll_source(setup, source["id"])
    assert third["files_taken"] == 1
    wait_terminal(setup, third["batch_id"])


def test_objects_are_taken_once_by_key_and_etag(setup: Setup, bucket: Any) -> None:
    _put(bucket, setup, "keep/a.pdf", invoice_pdf("INV-K1", "1.00"))
    source = create_source(setup, "keep")
    first = poll_source(setup, source["id"])
    wait_terminal(setup, first["batch_id"])
    second = poll_source(setup, source["id"])
    assert (second["files_seen"], second["files_taken"], second["files_skipped"]) == (1, 0, 1)
    assert _keys(bucket, setup, "keep") == ["a.pdf"]


def test_a_bucket_that_is_gone_marks_the_source_unhealthy_until_it_is_back(
    setup: Setup, bucket: Any
) -> None:
    source = create_source(setup, "gone")
    listed = bucket.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    kept = {
        item["Key"]: bucket.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read()
        for item in listed
    }
    for key in kept:
        bucket.delete_object(Bucket=BUCKET, Key=key)
    bucket.delete_bucket(Bucket=BUCKET)
    try:
        run = poll_source(setup, source["id"])
        assert run["batch_id"] is None and run["error"] == "the bucket does not exist"
        shown = ok(
            setup.env.client.get(
                sources_url(setup, f"/{source['id']}"), headers=setup.tenant.headers
            ),
            200,
        )
        assert (shown["healthy"], shown["last_error"]) == (False, "the bucket does not exist")
    finally:
        bucket.create_bucket(Bucket=BUCKET)
        for key, body in kept.items():
            bucket.put_object(Bucket=BUCKET, Key=key, Body=body)
    _put(bucket, setup, "gone/a.pdf", invoice_pdf("INV-G1", "3.00"))
    back = poll_source(setup, source["id"])
    assert back["files_taken"] == 1 and back["error"] is None
    shown = ok(
        setup.env.client.get(sources_url(setup, f"/{source['id']}"), headers=setup.tenant.headers),
        200,
    )
    assert (shown["healthy"], shown["last_error"]) == (True, None)
    wait_terminal(setup, back["batch_id"])


def test_the_listing_is_paginated_capped_and_settled(
    setup: Setup, bucket: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(7):
        _put(bucket, setup, f"many/f{i}.pdf", b"%PDF-1.4 small")
    place = BucketPlace(bucket, BUCKET, PREFIX)
    tenant_id = setup.tenant.tenant_id
    later = time.time() + 60
    monkeypatch.setattr(places, "_PAGE", 2)
    every = place.scan(tenant_id, "many", max_bytes=MAX_BYTES, changed_before=later)
    assert [f.path for f in every] == [f"f{i}.pdf" for i in range(7)]  # four pages
    assert all(f.sha256.startswith("etag:") and f.size == 14 for f in every)
    monkeypatch.setattr(places, "SCAN_CAP", 5)
    capped = place.scan(tenant_id, "many", max_bytes=MAX_BYTES, changed_before=later)
    assert [f.path for f in capped] == [f"f{i}.pdf" for i in range(5)]
    # The files earlier polls moved to processed/ and failed/ are listed past, not through:
    # however many pile up there, they take nothing from the cap.
    for i in range(6):
        _put(bucket, setup, f"many/processed/old{i}.pdf", b"%PDF-1.4 done")
        _put(bucket, setup, f"many/failed/bad{i}.pdf", b"%PDF-1.4 bad")
    _put(bucket, setup, "many/zz.pdf", b"%PDF-1.4 small")
    monkeypatch.setattr(places, "SCAN_CAP", 9)
    after = place.scan(tenant_id, "many", max_bytes=MAX_BYTES, changed_before=later)
    assert [f.path for f in after] == [*(f"f{i}.pdf" for i in range(7)), "zz.pdf"]
    # Objects written since the settle cut-off may still be being written: left for later.
    assert place.scan(tenant_id, "many", max_bytes=MAX_BYTES, changed_before=time.time() - 60) == []
    with pytest.raises(SourceUnreadable, match="the bucket does not exist"):
        BucketPlace(bucket, "no-such-bucket").scan(
            tenant_id, "many", max_bytes=MAX_BYTES, changed_before=later
        )


def test_a_source_prefix_stays_under_the_tenant_prefix(setup: Setup) -> None:
    client, headers = setup.env.client, setup.tenant.headers
    for path in ("../other-tenant", "/watched", "a/../../b", "a\\b", ""):
        body = {"path": path, "workflow_id": setup.workflow_id, "cron": "0 0 1 1 *"}
        answer = client.post(sources_url(setup), json=body, headers=headers)
        assert answer.status_code == 422, (path, answer.text)
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert "path" in answer.text
    created = create_source(setup, "a/./b/")
    assert created["path"] == "a/b"


def test_an_object_replaced_after_the_listing_is_not_stored_then_taken_whole(
    setup: Setup, bucket: Any
) -> None:
    """The read asks for the ETag the listing saw: an object replaced in between is not stored
    under the old claim (its document fails `source_changed`), and the next poll takes the new
    one."""
    old, new = invoice_pdf("INV-7101", "1.00"), invoice_pdf("INV-7102", "2.00")
    _put(bucket, setup, "swap/a.pdf", old)
    source = create_source(setup, "swap")
    run_id = f"source:{source['id']}:split"
    batch_id = service.claim(
        services().write_factory,
        place=places.sources_place(setup.env.settings),
        tenant_id=setup.tenant.tenant_id,
        source_id=source["id"],
        run_id=run_id,
        settings=setup.env.settings,
    )
    assert batch_id is not None
    _put(bucket, setup, "swap/a.pdf", new)
    service.upload(
        services().write_factory,
        services().storage,
        services().client,
        place=places.sources_place(setup.env.settings),
        tenant_id=setup.tenant.tenant_id,
        run_id=run_id,
        max_bytes=MAX_BYTES,
    )
    wait_terminal(setup, batch_id)
    (skipped,) = documents(setup, batch_id)
    assert (skipped["status"], skipped["error_code"], skipped["sha256"]) == (
        "FAILED",
        "source_changed",
        None,
    )
    again = poll_source(setup, source["id"])
    assert again["files_taken"] == 1
    wait_terminal(setup, again["batch_id"])
    (taken,) = documents(setup, again["batch_id"])
    assert taken["sha256"] == hashlib.sha256(new).hexdigest()
