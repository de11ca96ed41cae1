"""Watched folder sources on the real runtime: a poll takes the folder's new files into one
batch that runs to the end, files are moved by outcome, each file is taken once however polls
race or restart, a folder that cannot be read marks the source unhealthy, paths stay inside the
tenant's directory, and the schedule's tick polls a source at its cron time."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID

from docflow import bootstrap
from docflow.runtime import launch
from docflow.runtime.context import services
from docflow.sources import service
from docflow.sources.flows import TICK_SCHEDULE, poll_flow
from docflow.sources.folder import scan_folder
from docflow.sources.models import SourceFile, SourceRun
from docflow.sources.places import sources_place
from docflow.sources.repository import SourceRepository
from docflow.tenancy import recorded_by_flow
from support.api_fixtures import ok, post_project, post_workflow
from support.dbos_fixtures import (
    DbosEnv,
    Setup,
    documents,
    invoice_pdf,
    launched_env,
    wait_terminal,
)
from support.sources_fixtures import (
    NEVER,
    create_source,
    poll_source,
    source_runs,
    sources_url,
    wait_run,
)

MAX_BYTES = 100_000


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DbosEnv]:
    tmp = tmp_path_factory.mktemp("sources")
    # Files written by the tests are taken at once (the settle time has a test of its own).
    with launched_env(
        tmp,
        home=tmp / "home",  # the sources root must keep out of the home (its keys)
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


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_a_poll_takes_the_new_files_into_one_batch_and_moves_them_by_outcome(
    setup: Setup,
) -> None:
    folder = _folder(setup, "inbox")
    (folder / "a.pdf").write_bytes(invoice_pdf("INV-S1", "10.00"))
    (folder / "sub").mkdir()
    (folder / "sub" / "b.pdf").write_bytes(invoice_pdf("INV-S2", "20.00"))
    (folder / "notes.txt").write_bytes(b"not a document")
    (folder / "huge.pdf").write_bytes(b"%PDF-1.4\n" + b"0" * MAX_BYTES)
    (folder / ".hidden.pdf").write_bytes(invoice_pdf("INV-S3", "1.00"))
    source = create_source(setup, "inbox", move_after=True)
    assert (source["healthy"], source["paused"]) == (True, False)

    run = poll_source(setup, source["id"])
    assert (run["files_seen"], run["files_taken"], run["files_skipped"]) == (4, 4, 0)
    assert run["error"] is None
    batch = wait_terminal(setup, run["batch_id"])
    assert batch["workflow_id"] == setup.workflow_id
    outcome = {d["name"]: (d["status"], d["error_code"]) for d in documents(setup, batch["id"])}
    assert outcome == {
        "a.pdf": ("SUCCEEDED", None),
        "sub/b.pdf": ("SUCCEEDED", None),
        "notes.txt": ("FAILED", "unsupported_type"),
        "huge.pdf": ("FAILED", "file_too_large"),
    }

    # The next poll moves the settled files first, and finds nothing new.
    again = poll_source(setup, source["id"])
    assert (again["files_seen"], again["files_taken"], again["batch_id"]) == (0, 0, None)
    assert _files(folder) == [
        ".hidden.pdf",
        "failed/huge.pdf",
        "failed/notes.txt",
        "processed/a.pdf",
        "processed/sub/b.pdf",
    ]
    # A new file, and one of the same name with new content, are taken by the next poll.
    (folder / "a.pdf").write_bytes(invoice_pdf("INV-S4", "40.00"))
    third = poll_source(setup, source["id"])
    assert third["files_taken"] == 1
    wait_terminal(setup, third["batch_id"])
    assert [r["id"] for r in source_runs(setup, source["id"])] == [
        third["id"],
        again["id"],
        run["id"],
    ]


def test_files_stay_put_without_move_after_and_are_taken_once(setup: Setup) -> None:
    folder = _folder(setup, "keep")
    (folder / "a.pdf").write_bytes(invoice_pdf("INV-K1", "1.00"))
    source = create_source(setup, "keep")
    first = poll_source(setup, source["id"])
    wait_terminal(setup, first["batch_id"])
    second = poll_source(setup, source["id"])
    assert (second["files_seen"], second["files_taken"], second["files_skipped"]) == (1, 0, 1)
    assert second["batch_id"] is None
    assert _files(folder) == ["a.pdf"]


def _claim(s: Setup, source_id: str, run_id: str) -> str | None:
    return service.claim(
        services().write_factory,
        place=sources_place(s.env.settings),
        tenant_id=s.tenant.tenant_id,
        source_id=source_id,
        run_id=run_id,
        settings=s.env.settings,
    )


def _taken(s: Setup, source_id: str) -> list[SourceFile]:
    with services().write_factory() as session:
        repo = SourceRepository(session, recorded_by_flow(s.tenant.tenant_id))
        runs = repo.page_runs(source_id, cursor=None, limit=200).items
        return [f for run in runs for f in repo.run_files(run.id)]


def test_concurrent_polls_take_each_file_once(setup: Setup) -> None:
    folder = _folder(setup, "race")
    for i in range(8):
        (folder / f"f{i}.pdf").write_bytes(invoice_pdf(f"INV-C{i}", "1.00"))
    source = create_source(setup, "race")
    barrier = threading.Barrier(3)
    batches: list[str | None] = []

    def poll(run_id: str) -> None:
        barrier.wait()
        batches.append(_claim(setup, source["id"], run_id))

    threads = [threading.Thread(target=poll, args=(f"race-{i}-{source['id']}",)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    taken = _taken(setup, source["id"])
    assert sorted(f.path for f in taken) == [f"f{i}.pdf" for i in range(8)]
    made = [b for b in batches if b is not None]
    assert len(made) >= 1
    # Two workflows polling at once through the API: between them nothing more is taken.
    url = sources_url(setup, f"/{source['id']}/poll")
    ids = [ok(setup.env.client.post(url, headers=setup.tenant.headers), 202)["run_id"]]
    ids.append(ok(setup.env.client.post(url, headers=setup.tenant.headers), 202)["run_id"])
    runs = [wait_run(setup, source["id"], run_id) for run_id in ids]
    assert [r["files_taken"] for r in runs] == [0, 0]
    assert len(_taken(setup, source["id"])) == 8


def test_a_poll_interrupted_after_its_claim_finishes_its_own_files_on_rerun(
    setup: Setup,
) -> None:
    folder = _folder(setup, "restart")
    for i in range(3):
        (folder / f"r{i}.pdf").write_bytes(invoice_pdf(f"INV-R{i}", "2.00"))
    source = create_source(setup, "restart")
    run_id = f"source:{source['id']}:interrupted"
    batch_id = _claim(setup, source["id"], run_id)  # the claim committed, then the process died
    assert batch_id is not None
    # Another poll meanwhile takes nothing: the files are claimed.
    other = poll_source(setup, source["id"])
    assert (other["files_seen"], other["files_taken"]) == (3, 0)
    # The interrupted run, recovered under its own id, uploads its files and starts its batch.
    with SetWorkflowID(run_id):
        assert poll_flow(setup.tenant.tenant_id, source["id"], run_id) == batch_id
    batch = wait_terminal(setup, batch_id)
    assert (batch["status"], batch["document_count"]) == ("SUCCEEDED", 3)
    assert len(_taken(setup, source["id"])) == 3


def test_a_missing_folder_marks_the_source_unhealthy_until_it_is_back(setup: Setup) -> None:
    source = create_source(setup, "not-yet")
    run = poll_source(setup, source["id"])
    assert run["batch_id"] is None and "does not exist" in run["error"]
    shown = ok(
        setup.env.client.get(sources_url(setup, f"/{source['id']}"), headers=setup.tenant.headers),
        200,
    )
    assert shown["healthy"] is False and "does not exist" in shown["last_error"]
    folder = _folder(setup, "not-yet")
    (folder / "a.pdf").write_bytes(invoice_pdf("INV-U1", "3.00"))
    back = poll_source(setup, source["id"])
    assert back["files_taken"] == 1 and back["error"] is None
    shown = ok(
        setup.env.client.get(sources_url(setup, f"/{source['id']}"), headers=setup.tenant.headers),
        200,
    )
    assert (shown["healthy"], shown["last_error"]) == (True, None)
    wait_terminal(setup, back["batch_id"])


def test_a_file_in_place_of_the_folder_marks_the_source_unhealthy(setup: Setup) -> None:
    (_folder(setup, "x").parent / "plain").write_bytes(b"a file, not a folder")
    source = create_source(setup, "plain")
    run = poll_source(setup, source["id"])
    assert run["batch_id"] is None and "is not a folder" in run["error"]


def test_a_source_whose_workflow_is_gone_is_unhealthy_not_a_failed_workflow(
    setup: Setup,
) -> None:
    folder = _folder(setup, "orphan")
    (folder / "a.pdf").write_bytes(invoice_pdf("INV-O1", "3.00"))
    source = create_source(setup, "orphan")
    with services().write_factory() as session, session.begin():
        found = SourceRepository(session, recorded_by_flow(setup.tenant.tenant_id)).get(
            source["id"]
        )
        assert found is not None
        found.workflow_id = "wfl_00000000000000000000000000"  # as if deleted since
    run = poll_source(setup, source["id"])  # the poll's workflow ends SUCCESS (see _wait_run)
    assert run["batch_id"] is None and run["error"].startswith("not_found: workflow")
    assert _taken(setup, source["id"]) == []  # nothing claimed: the next poll takes the file
    shown = ok(
        setup.env.client.get(sources_url(setup, f"/{source['id']}"), headers=setup.tenant.headers),
        200,
    )
    assert shown["healthy"] is False


def test_an_unreadable_folder_marks_the_source_unhealthy(setup: Setup) -> None:
    folder = _folder(setup, "locked")
    (folder / "a.pdf").write_bytes(invoice_pdf("INV-L1", "3.00"))
    source = create_source(setup, "locked")
    folder.chmod(0)
    try:
        if folder.stat().st_mode & 0o777 == 0 and _readable(folder):
            pytest.skip("running as a user that reads every folder")
        run = poll_source(setup, source["id"])
    finally:
        folder.chmod(0o755)
    assert run["batch_id"] is None and "cannot be read" in run["error"]


def _readable(folder: Path) -> bool:
    try:
        list(folder.iterdir())
    except PermissionError:
        return False
    return True


def test_bad_sources_are_refused_naming_the_field(setup: Setup, tmp_path: Path) -> None:
    client, headers = setup.env.client, setup.tenant.headers

    def refused(status: int, field: str, **body: Any) -> dict[str, Any]:
        full = {"path": "inbox", "workflow_id": setup.workflow_id, "cron": NEVER, **body}
        answer = client.post(sources_url(setup), json=full, headers=headers)
        assert answer.status_code == status, answer.text
        assert answer.headers["content-type"].startswith("application/problem+json")
        if field:
            assert field in answer.text
        problem: dict[str, Any] = answer.json()
        return problem

    refused(422, "cron", cron="every day")
    refused(422, "cron", cron="61 * * * *")
    refused(422, "cron", cron="0 0 30 2 *")  # well formed, and no date ever matches
    assert "not absolute" in refused(422, "path", path="/etc")["detail"]
    refused(422, "path", path="../other-tenant")
    refused(422, "path", path="a/../../x")
    refused(404, "", workflow_id="wfl_unknown")
    # Two sources on one folder, or one inside the other, would each take every file once.
    assert create_source(setup, "scans/inbox/")["path"] == "scans/inbox"
    for overlapping in ("scans/inbox", "./scans/inbox", "scans", ".", "scans/inbox/deeper"):
        assert "overlaps" in refused(409, "path", path=overlapping)["detail"], overlapping
    create_source(setup, "scans/other")
    outside = tmp_path / "outside"
    outside.mkdir()
    (_folder(setup, "x").parent / "link").symlink_to(outside)
    refused(422, "path", path="link")
    source = create_source(setup, "inbox")
    answer = client.patch(
        sources_url(setup, f"/{source['id']}"), json={"cron": "nope"}, headers=headers
    )
    assert answer.status_code == 422 and "cron" in answer.text


def test_pause_resume_update_delete_and_tenant_isolation(setup: Setup) -> None:
    client, headers = setup.env.client, setup.tenant.headers
    source = create_source(setup, "life", cron="*/5 * * * *")
    assert source["next_poll_at"] is not None
    url = sources_url(setup, f"/{source['id']}")
    paused = ok(client.patch(url, json={"paused": True}, headers=headers), 200)
    assert (paused["paused"], paused["next_poll_at"]) == (True, None)
    resumed = ok(
        client.patch(url, json={"paused": False, "move_after": True}, headers=headers), 200
    )
    assert resumed["paused"] is False and resumed["next_poll_at"] is not None
    assert resumed["move_after"] is True
    listed = ok(client.get(sources_url(setup), headers=headers), 200)
    assert [s["id"] for s in listed["items"]] == [source["id"]]

    other = setup.env.tenant()
    other_project = post_project(client, other)
    for path in ("", "/runs"):
        assert client.get(url + path, headers=other.headers).status_code == 404
    theirs = f"/v1/projects/{other_project['id']}/sources/{source['id']}"
    assert client.get(theirs, headers=other.headers).status_code == 404
    assert client.post(theirs + "/poll", headers=other.headers).status_code == 404
    assert client.patch(theirs, json={"paused": True}, headers=other.headers).status_code == 404
    assert client.delete(theirs, headers=other.headers).status_code == 404
    assert client.get(sources_url(setup), headers=other.headers).status_code == 404
    # Another tenant's workflow is unknown here.
    their_workflow = post_workflow(client, other, other_project["id"])
    answer = client.patch(url, json={"workflow_id": their_workflow["id"]}, headers=headers)
    assert answer.status_code == 404

    assert client.delete(url, headers=headers).status_code == 204
    assert client.get(url, headers=headers).status_code == 404


def _source_rows(s: Setup, source_id: str) -> tuple[bool, int, int]:
    """Whether the source is recorded, and how many runs and taken files it has."""
    with services().write_factory() as session:
        repo = SourceRepository(session, recorded_by_flow(s.tenant.tenant_id))
        runs = repo.page_runs(source_id, cursor=None, limit=200).items
        files = [f for run in runs for f in repo.run_files(run.id)]
        return repo.get(source_id) is not None, len(runs), len(files)


def test_deleting_a_project_deletes_its_sources_and_a_late_poll_takes_nothing(
    setup: Setup,
) -> None:
    client, headers = setup.env.client, setup.tenant.headers
    folder = _folder(setup, "with-project")
    (folder / "a.pdf").write_bytes(invoice_pdf("INV-P1", "6.00"))
    source = create_source(setup, "with-project", move_after=True)
    run = poll_source(setup, source["id"])
    wait_terminal(setup, run["batch_id"])
    # Another project's source of the same tenant stays.
    kept_project = post_project(client, setup.tenant, "Kept")
    kept_workflow = post_workflow(client, setup.tenant, kept_project["id"])
    kept = ok(
        client.post(
            f"/v1/projects/{kept_project['id']}/sources",
            json={"path": "kept", "workflow_id": kept_workflow["id"], "cron": NEVER},
            headers=headers,
        ),
        201,
    )
    assert _source_rows(setup, source["id"]) == (True, 1, 1)

    project_url = f"/v1/projects/{setup.project_id}"
    assert client.delete(project_url + "?cascade=true", headers=headers).status_code == 204
    assert _source_rows(setup, source["id"]) == (False, 0, 0)
    assert _source_rows(setup, kept["id"])[0] is True
    assert client.get(sources_url(setup, f"/{source['id']}"), headers=headers).status_code == 404

    # A poll of the source enqueued before the deletion runs after it: it ends, takes nothing,
    # records nothing and leaves the folder as it was (the file is not moved any more).
    (folder / "b.pdf").write_bytes(invoice_pdf("INV-P2", "7.00"))
    run_id = f"source:{source['id']}:late"
    with SetWorkflowID(run_id):
        assert poll_flow(setup.tenant.tenant_id, source["id"], run_id) is None
    status = DBOS.get_workflow_status(run_id)
    assert status is not None and status.status == "SUCCESS"
    assert _source_rows(setup, source["id"]) == (False, 0, 0)
    assert _files(folder) == ["a.pdf", "b.pdf"]


def test_the_schedule_polls_a_source_at_its_cron_time(setup: Setup) -> None:
    folder = _folder(setup, "cron")
    (folder / "a.pdf").write_bytes(invoice_pdf("INV-T1", "5.00"))
    settings = setup.env.settings.model_copy(update={"sources_tick_seconds": 1})
    launch.install_schedules(settings, bootstrap.flows())
    try:
        schedule = DBOS.get_schedule(TICK_SCHEDULE)
        assert schedule is not None and schedule["schedule"] == "*/1 * * * * *"
        source = create_source(setup, "cron", cron="* * * * * *")  # every second
        deadline = time.monotonic() + 60
        taken: list[dict[str, Any]] = []
        while time.monotonic() < deadline and not taken:
            taken = [r for r in source_runs(setup, source["id"]) if r["files_taken"]]
            time.sleep(0.2)
        assert taken, source_runs(setup, source["id"])
        assert taken[0]["id"].startswith(f"source:{source['id']}:20")  # its due time
        wait_terminal(setup, taken[0]["batch_id"])
    finally:
        for schedule in DBOS.list_schedules():
            DBOS.delete_schedule(schedule["schedule_name"])


def test_a_file_still_being_written_is_left_for_a_later_poll(tmp_path: Path) -> None:
    """A copy in progress has just changed: the scan leaves it until it has been still for the
    settle time, so a half-written file never becomes a document (and then a second one)."""
    (tmp_path / "old.pdf").write_bytes(b"%PDF-1.4 settled")
    (tmp_path / "copying.pdf").write_bytes(b"%PDF-1.4 half")
    settled = time.time() - 60
    os.utime(tmp_path / "old.pdf", (settled, settled))
    cutoff = time.time() - 5
    found = scan_folder(tmp_path, max_bytes=MAX_BYTES, changed_before=cutoff)
    assert [f.path for f in found] == ["old.pdf"]
    later = scan_folder(tmp_path, max_bytes=MAX_BYTES, changed_before=time.time() + 1)
    assert [f.path for f in later] == ["copying.pdf", "old.pdf"]


def _bytes_read() -> int:
    """The bytes this process has read so far (`rchar` of /proc/self/io: every read call)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def test_a_scan_reads_no_file_whose_size_and_change_time_are_recorded(tmp_path: Path) -> None:
    """A folder whose files stay in place is not read again at each poll: a file found with
    the path, size and change time recorded when it was taken keeps its recorded hash."""
    count, size = 40, 1024 * 1024
    for i in range(count):
        (tmp_path / f"f{i:02}.pdf").write_bytes(os.urandom(size))
    settled = time.time() - 60
    for path in tmp_path.iterdir():
        os.utime(path, (settled, settled))
    cutoff = time.time()
    before = _bytes_read()
    first = scan_folder(tmp_path, max_bytes=2 * size, changed_before=cutoff)
    read_first = _bytes_read() - before
    assert len(first) == count and read_first >= count * size
    assert sum(f.hashed for f in first) == count * size
    known = {(f.path, f.size, f.mtime_ns or 0): f.sha256 for f in first}

    before = _bytes_read()
    second = scan_folder(tmp_path, max_bytes=2 * size, changed_before=cutoff, known=known)
    read_second = _bytes_read() - before
    assert read_second < size  # none of the 40 MB (the rest: other threads of the process)
    assert second == [replace(f, hashed=0) for f in first]

    # A file touched, grown or rewritten has another size or change time: it is read again.
    touched, grown = tmp_path / "f00.pdf", tmp_path / "f01.pdf"
    os.utime(touched, (settled + 1, settled + 1))
    with grown.open("ab") as f:
        f.write(b"more")
    os.utime(grown, (settled, settled))
    third = {
        f.path: f
        for f in scan_folder(tmp_path, max_bytes=2 * size, changed_before=cutoff, known=known)
    }
    assert {p for p, f in third.items() if f.hashed} == {"f00.pdf", "f01.pdf"}
    assert third["f00.pdf"].sha256 == known[("f00.pdf", size, first[0].mtime_ns or 0)]
    assert third["f01.pdf"].sha256 != first[1].sha256


def test_a_poll_of_files_left_in_place_hashes_only_those_that_changed(setup: Setup) -> None:
    folder = _folder(setup, "stay")
    for i in range(5):
        (folder / f"s{i}.pdf").write_bytes(invoice_pdf(f"INV-T{i}", "1.00"))
    source = create_source(setup, "stay")
    first = poll_source(setup, source["id"])
    assert first["files_taken"] == 5
    wait_terminal(setup, first["batch_id"])
    taken = {f.path: f for f in _taken(setup, source["id"])}
    stat = (folder / "s0.pdf").stat()
    assert (taken["s0.pdf"].size, taken["s0.pdf"].mtime_ns) == (stat.st_size, stat.st_mtime_ns)

    # Unchanged: the poll reads none of them (it finds them by their recorded size and time).
    assert _scan_hashed(setup, source["id"]) == {}
    again = poll_source(setup, source["id"])
    assert (again["files_seen"], again["files_taken"], again["batch_id"]) == (5, 0, None)

    # Touched (same content): hashed once, not taken, and its new time recorded.
    os.utime(folder / "s1.pdf")
    assert set(_scan_hashed(setup, source["id"])) == {"s1.pdf"}
    assert poll_source(setup, source["id"])["files_taken"] == 0
    assert _scan_hashed(setup, source["id"]) == {}
    # Rewritten with other content: hashed and taken again, exactly as before.
    (folder / "s2.pdf").write_bytes(invoice_pdf("INV-T9", "9.00"))
    rewritten = poll_source(setup, source["id"])
    assert rewritten["files_taken"] == 1
    wait_terminal(setup, rewritten["batch_id"])
    assert _scan_hashed(setup, source["id"]) == {}

    # Files taken before sizes and times were recorded are hashed once more, then recorded.
    with services().write_factory() as session, session.begin():
        repo = SourceRepository(session, recorded_by_flow(setup.tenant.tenant_id))
        session.execute(
            repo.scoped_update(SourceFile)
            .where(SourceFile.source_id == source["id"])
            .values(size=None, mtime_ns=None)
        )
    assert len(_scan_hashed(setup, source["id"])) == 5
    assert poll_source(setup, source["id"])["files_taken"] == 0
    assert _scan_hashed(setup, source["id"]) == {}


def _scan_hashed(s: Setup, source_id: str) -> dict[str, int]:
    """The files a poll of the source would read now, with the bytes read for each."""
    place = sources_place(s.env.settings)
    assert place is not None
    with services().write_factory() as session:
        repo = SourceRepository(session, recorded_by_flow(s.tenant.tenant_id))
        source = repo.get(source_id)
        assert source is not None
        known = repo.known(source_id)
    found = place.scan(
        s.tenant.tenant_id,
        source.path,
        max_bytes=MAX_BYTES,
        changed_before=time.time() + 1,
        known=known,
    )
    return {f.path: f.hashed for f in found if f.hashed}


def test_the_runs_list_pages_with_a_cursor(setup: Setup) -> None:
    client, headers = setup.env.client, setup.tenant.headers
    source = create_source(setup, "paged")
    same = datetime(2026, 1, 1, tzinfo=UTC)
    with services().write_factory() as session, session.begin():
        SourceRepository(session, recorded_by_flow(setup.tenant.tenant_id))  # binds the tenant
        for i in range(5):
            session.add(
                SourceRun(
                    tenant_id=setup.tenant.tenant_id,
                    id=f"run-{i}",
                    source_id=source["id"],
                    # Two runs started at the same time: the id orders them.
                    started_at=same if i < 2 else same + timedelta(minutes=i),
                )
            )
    url = sources_url(setup, f"/{source['id']}/runs")
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = ok(client.get(url, params=params, headers=headers), 200)
        seen += [r["id"] for r in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ["run-4", "run-3", "run-2", "run-1", "run-0"]
    assert pages == 3
    bad = ok(client.get(url, params={"cursor": "!!"}, headers=headers), 422)
    assert bad["errors"][0]["field"] == "cursor"
    assert client.get(url, params={"limit": 0}, headers=headers).status_code == 422
