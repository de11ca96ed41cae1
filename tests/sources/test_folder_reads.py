"""A watched folder is read only as its scan found it, and never through a link: a file or a
folder swapped for a symbolic link after the scan, a FIFO, or a file rewritten (before or while
it is read) is never stored; a rewritten file is taken whole by the next poll; and no source
can be made on a sources root that holds docflow's home or its keys."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from docflow.config import Settings
from docflow.http.deps import get_settings
from docflow.runtime.context import services
from docflow.sources import service
from docflow.sources.folder import MAX_DEPTH, SourceChanged, scan_folder
from docflow.sources.places import FolderPlace, sources_place
from support.api_fixtures import ok, post_project, post_workflow
from support.dbos_fixtures import (
    DbosEnv,
    Setup,
    documents,
    invoice_pdf,
    launched_env,
    wait_terminal,
)
from support.sources_fixtures import NEVER, create_source, poll_source, sources_url

MAX_BYTES = 100_000


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DbosEnv]:
    tmp = tmp_path_factory.mktemp("folder-reads")
    with launched_env(
        tmp,
        home=tmp / "home",
        sources_root=tmp / "watched",
        max_document_bytes=MAX_BYTES,
        sources_settle_seconds=0,
    ) as env:
        yield env


@pytest.fixture
def setup(env: DbosEnv) -> Setup:
    tenant = env.tenant()
    project = post_project(env.client, tenant)
    workflow = post_workflow(env.client, tenant, project["id"])
    return Setup(env, tenant, project["id"], workflow["id"])


def _folder(s: Setup, name: str) -> Path:
    root = s.env.settings.sources_root
    assert root is not None
    folder = root / s.tenant.tenant_id / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _claim_then_upload(s: Setup, source_id: str, between: Any) -> str:
    """A poll in two halves, `between()` run after the scan and before the read; the batch."""
    run_id = f"source:{source_id}:split:{os.urandom(4).hex()}"
    batch_id = service.claim(
        services().write_factory,
        place=sources_place(s.env.settings),
        tenant_id=s.tenant.tenant_id,
        source_id=source_id,
        run_id=run_id,
        settings=s.env.settings,
    )
    assert batch_id is not None
    between()
    service.upload(
        services().write_factory,
        services().storage,
        services().client,
        place=sources_place(s.env.settings),
        tenant_id=s.tenant.tenant_id,
        run_id=run_id,
        max_bytes=MAX_BYTES,
    )
    return batch_id


def _outcome(s: Setup, batch_id: str) -> dict[str, tuple[str, str | None, str | None]]:
    wait_terminal(s, batch_id)
    return {d["name"]: (d["status"], d["error_code"], d["sha256"]) for d in documents(s, batch_id)}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_file_swapped_for_a_link_to_a_secret_after_the_scan_is_never_stored(
    setup: Setup, tmp_path: Path
) -> None:
    secret = tmp_path / "kek"
    secret.write_bytes(b"the installation's key-encryption key")
    folder = _folder(setup, "swap")
    (folder / "a.pdf").write_bytes(invoice_pdf("INV-W1", "1.00"))
    (folder / "b.pdf").write_bytes(invoice_pdf("INV-W2", "2.00"))
    source = create_source(setup, "swap")

    def swap() -> None:
        (folder / "a.pdf").unlink()
        (folder / "a.pdf").symlink_to(secret)

    outcome = _outcome(setup, _claim_then_upload(setup, source["id"], swap))
    assert outcome["a.pdf"][:2] == ("FAILED", "source_changed")
    assert outcome["a.pdf"][2] is None  # nothing stored
    assert outcome["b.pdf"][:2] == ("SUCCEEDED", None)


def test_a_folder_swapped_for_a_link_to_another_tenants_folder_is_never_read(
    setup: Setup, env: DbosEnv
) -> None:
    other = _folder(Setup(env, env.tenant(), "", ""), "private")
    theirs = invoice_pdf("INV-9999", "999.00")
    (other / "sub").mkdir()
    (other / "sub" / "b.pdf").write_bytes(theirs)
    folder = _folder(setup, "nested")
    (folder / "sub").mkdir()
    (folder / "sub" / "b.pdf").write_bytes(invoice_pdf("INV-N1", "1.00"))
    source = create_source(setup, "nested")

    def swap() -> None:
        (folder / "sub").rename(folder / ".sub-moved")
        (folder / "sub").symlink_to(other / "sub")

    outcome = _outcome(setup, _claim_then_upload(setup, source["id"], swap))
    assert outcome["sub/b.pdf"][:2] == ("FAILED", "source_changed")
    assert outcome["sub/b.pdf"][2] != _sha(theirs)
    # The scan walks no linked folder either.
    again = poll_source(setup, source["id"])
    assert (again["files_seen"], again["batch_id"]) == (0, None)


def test_a_fifo_in_place_of_a_file_is_refused_without_blocking(
    setup: Setup,
) -> None:
    folder = _folder(setup, "fifo")
    (folder / "a.pdf").write_bytes(invoice_pdf("INV-F1", "1.00"))
    os.mkfifo(folder / "listed-never.pdf")
    source = create_source(setup, "fifo")

    def swap() -> None:
        (folder / "a.pdf").unlink()
        os.mkfifo(folder / "a.pdf")  # an open of it for reading would wait for a writer

    outcome = _outcome(setup, _claim_then_upload(setup, source["id"], swap))
    assert outcome == {"a.pdf": ("FAILED", "source_changed", None)}


def test_a_rewritten_file_is_skipped_then_taken_whole_by_the_next_poll(setup: Setup) -> None:
    folder = _folder(setup, "rewrite")
    old, new = invoice_pdf("INV-7001", "1.00"), invoice_pdf("INV-7002", "2.00")
    (folder / "a.pdf").write_bytes(old)
    source = create_source(setup, "rewrite")

    def rewrite() -> None:
        (folder / "a.pdf").write_bytes(new)

    outcome = _outcome(setup, _claim_then_upload(setup, source["id"], rewrite))
    assert outcome == {"a.pdf": ("FAILED", "source_changed", None)}
    run = poll_source(setup, source["id"])
    assert run["files_taken"] == 1
    assert _outcome(setup, run["batch_id"]) == {"a.pdf": ("SUCCEEDED", None, _sha(new))}


def test_a_file_rewritten_while_it_is_read_ends_in_an_error_not_a_torn_copy(
    tmp_path: Path,
) -> None:
    """An in-place rewrite during the read (same size, the change time put back) mixes old and
    new bytes: the read raises at its end instead of returning them as the file."""
    tenant = "tnt_torn"
    folder = tmp_path / "root" / tenant / "in"
    folder.mkdir(parents=True)
    size = 64 * 1024
    (folder / "a.pdf").write_bytes(b"o" * size)
    place = FolderPlace(tmp_path / "root", home=tmp_path / "home")
    (found,) = place.scan(tenant, "in", max_bytes=MAX_BYTES, changed_before=1e12)
    with place.open(tenant, "in", found) as body:
        first = body.read(size // 2)
        st = (folder / "a.pdf").stat()
        with (folder / "a.pdf").open("r+b") as f:
            f.write(b"n" * size)
        os.utime(folder / "a.pdf", ns=(st.st_atime_ns, st.st_mtime_ns))
        rest = body.read(size)
        with pytest.raises(SourceChanged):
            body.read(size)
    assert first + rest == b"o" * (size // 2) + b"n" * (size // 2)  # what was not stored


def test_a_link_in_the_sources_path_is_refused_at_every_poll(setup: Setup, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.pdf").write_bytes(invoice_pdf("INV-8001", "1.00"))
    inside = _folder(setup, "real")
    source = create_source(setup, "real")
    inside.rename(inside.parent / ".gone")
    inside.symlink_to(outside)  # swapped after the source was made
    run = poll_source(setup, source["id"])
    assert run["batch_id"] is None and "symbolic link" in run["error"]


@pytest.mark.parametrize("where", ["home", "home's parent", "inside the home", "holds the kek"])
def test_a_sources_root_near_the_keys_is_refused_naming_the_field(
    setup: Setup, tmp_path: Path, where: str
) -> None:
    settings = setup.env.settings
    home = settings.home
    roots: dict[str, tuple[Path, dict[str, Any]]] = {
        "home": (home, {}),
        "home's parent": (home.parent, {}),
        "inside the home": (home / "sources", {}),
        "holds the kek": (tmp_path, {"kek_url": f"file://{tmp_path}/keys/kek"}),
    }
    root, extra = roots[where]
    changed = settings.model_copy(update={"sources_root": root, **extra})
    app = setup.env.client.app
    app.dependency_overrides[get_settings] = lambda: changed  # type: ignore[attr-defined]
    try:
        body = {"path": "inbox", "workflow_id": setup.workflow_id, "cron": NEVER}
        answer = setup.env.client.post(sources_url(setup), json=body, headers=setup.tenant.headers)
    finally:
        app.dependency_overrides.clear()  # type: ignore[attr-defined]
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    problem = answer.json()
    assert "path" in answer.text and "sources root" in problem["detail"]


def test_settings_name_every_key_file(tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path,
        kek_url="file:///etc/docflow/kek",
        kek_previous_urls="file:///etc/docflow/old-kek, kms://alias/x",
    )
    assert settings.secret_files() == (
        tmp_path / "signing-secret",
        Path("/etc/docflow/kek"),
        Path("/etc/docflow/old-kek"),
    )


def test_a_source_resumed_on_a_root_that_now_holds_the_home_is_refused(setup: Setup) -> None:
    source = create_source(setup, "resume", paused=True)
    settings = setup.env.settings
    changed = settings.model_copy(update={"sources_root": settings.home.parent})
    app = setup.env.client.app
    app.dependency_overrides[get_settings] = lambda: changed  # type: ignore[attr-defined]
    try:
        answer = setup.env.client.patch(
            sources_url(setup, f"/{source['id']}"),
            json={"paused": False},
            headers=setup.tenant.headers,
        )
    finally:
        app.dependency_overrides.clear()  # type: ignore[attr-defined]
    assert answer.status_code == 422 and "path" in answer.text
    shown = ok(
        setup.env.client.get(sources_url(setup, f"/{source['id']}"), headers=setup.tenant.headers),
        200,
    )
    assert shown["paused"] is True


def test_a_folder_nested_past_the_depth_limit_is_not_walked(tmp_path: Path) -> None:
    """A tenant may nest folders as deep as paths allow: the walk (one descriptor per level)
    stops at MAX_DEPTH instead of running out of descriptors or stack."""
    deep = tmp_path.joinpath(*(["d"] * (MAX_DEPTH + 5)))
    deep.mkdir(parents=True)
    (deep / "bottom.pdf").write_bytes(b"%PDF-1.4 deep")
    (tmp_path / "d" / "top.pdf").write_bytes(b"%PDF-1.4 top")
    found = scan_folder(tmp_path, max_bytes=MAX_BYTES, changed_before=1e12)
    assert [f.path for f in found] == ["d/top.pdf"]
