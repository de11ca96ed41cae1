"""The outbox end to end on a real DBOS runtime: emitted in the change's transaction, published
by the publisher alone, delivered once per consumer, stale updates rejected, dead letters and
their audited redrive, replay."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import jsonschema
import pytest
import structlog
from dbos import DBOS
from sqlalchemy.orm import Session
from typer.testing import CliRunner

from docflow import bootstrap
from docflow.cli import app as cli_app
from docflow.documents.repository import DocumentRepository
from docflow.errors import Conflict
from docflow.events import envelopes, service
from docflow.events.consumers import (
    ConsumerContext,
    register_consumer,
    unregister_consumer,
)
from docflow.events.envelopes import Envelope
from docflow.events.flows import PUBLISH_SCHEDULE, publish_flow, publish_tick
from docflow.events.models import OutboxEvent
from docflow.events.outbox import PUBLISH_QUEUE, emit, envelope_of
from docflow.events.publisher import CONSUME_FLOW, consumer_workflow_id
from docflow.events.repository import DeadLetterRepository, OutboxRepository
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.runtime import launch
from docflow.runtime.context import services
from docflow.tenancy import TenantContext
from support.api_fixtures import ok
from support.dbos_fixtures import (  # noqa: F401
    DbosEnv,
    Setup,
    dbos_env,
    invoice_pdf,
    setup,
    submit,
    wait_terminal,
)

PDF = "application/pdf"


@dataclass
class Recorder:
    """A consumer's memory: deliveries, and a per-subject projection kept by version
    compare-and-set (an older version never overwrites a newer one)."""

    tenant_id: str
    down: bool = False
    delivered: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    projection: dict[str, tuple[int, str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handles(self, _session: Session, envelope: Envelope) -> bool:
        return envelope.data.get("tenant_id") == self.tenant_id

    def handle(self, context: ConsumerContext, envelope: Envelope) -> None:
        assert context.tenant_id == self.tenant_id
        if "document_id" in envelope.data:
            # Canonical state, read under the event's tenant: the document exists there.
            repo = DocumentRepository(context.session, context.tenant_id)
            assert repo.get(envelope.data["document_id"]) is not None
        with self.lock:
            if self.down:
                raise RuntimeError("receiver down")
            self.delivered.append(envelope.id)
            version = int(envelope.data.get("version", 0))
            current = self.projection.get(envelope.subject)
            if current is not None and current[0] >= version:
                self.rejected.append(envelope.id)
                return
            self.projection[envelope.subject] = (version, str(envelope.data.get("status")))


@pytest.fixture
def recorder(setup: Setup) -> Iterator[Recorder]:  # noqa: F811
    rec = Recorder(setup.tenant.tenant_id)
    register_consumer(
        "test-recorder",
        handles=rec.handles,
        handler=rec.handle,
        max_attempts=2,
        backoff_seconds=0.01,
    )
    launch.register_queues(setup.env.settings, bootstrap.flows())
    yield rec
    unregister_consumer("test-recorder")


def wait_for(condition: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def settle(env: DbosEnv, tenant_id: str) -> None:
    """Wait until the setup's one event (the workflow's creation) is published and every
    consumer run is over, whether it was published before or after this test's consumer was
    registered."""
    wait_for(lambda: tenant_events(env, tenant_id))
    wait_for(
        lambda: (
            not DBOS.list_workflows(
                name=CONSUME_FLOW, status=["PENDING", "ENQUEUED"], load_input=False
            )
        )
    )


def tenant_events(env: DbosEnv, tenant_id: str) -> list[OutboxEvent]:
    with env.session_factory() as session:
        return OutboxRepository(session, tenant_id).published_since(
            utcnow() - timedelta(hours=1), 1000
        )


def emit_committed(env: DbosEnv, tenant_id: str, data: dict[str, Any], **kw: Any) -> str:
    with services().write_session() as session, session.begin():
        event = emit(session, tenant_id=tenant_id, data={"tenant_id": tenant_id, **data}, **kw)
        return event.id


def _emit_workflow_event(session: Session, tenant_id: str) -> OutboxEvent:
    """Emit a workflow-published event in the session's transaction (not committed)."""
    spec = _workflow_event(tenant_id, 1)
    return emit(
        session,
        tenant_id=tenant_id,
        type=spec["type"],
        subject=spec["subject"],
        data={"tenant_id": tenant_id, **spec["data"]},
    )


def _workflow_event(tenant_id: str, version: int) -> dict[str, Any]:
    return {
        "type": envelopes.WORKFLOW_PUBLISHED,
        "subject": "workflows/wfl_x",
    } | {
        "data": {
            "project_id": "prj_x",
            "workflow_id": "wfl_x",
            "name": "invoice",
            "version": version,
            "schema_hash": "0" * 64,
            "link": "/v1/workflows/wfl_x",
        }
    }


def emit_workflow_version(env: DbosEnv, tenant_id: str, version: int) -> str:
    spec = _workflow_event(tenant_id, version)
    return emit_committed(env, tenant_id, spec["data"], type=spec["type"], subject=spec["subject"])


def test_every_event_of_a_real_batch_matches_its_schema_and_reaches_the_consumer_once(
    setup: Setup,  # noqa: F811
    recorder: Recorder,
) -> None:
    files = [(f"inv-{i}.pdf", PDF, invoice_pdf(f"INV-{i:04d}", f"{10 + i}.00")) for i in range(2)]
    files.append(("broken.pdf", PDF, b"%PDF-1.4 this is not a pdf"))
    batch = submit(setup, files)
    assert wait_terminal(setup, batch["id"])["status"] in ("PARTIALLY_FAILED", "FAILED")
    # workflow published (version 1), three document outcomes, the batch: all published.
    events = wait_for(
        lambda: (e := tenant_events(setup.env, setup.tenant.tenant_id)) and len(e) >= 5 and e
    )
    types = sorted(e.type for e in events)
    assert types.count(envelopes.DOCUMENT_COMPLETED) == 2
    assert types.count(envelopes.DOCUMENT_FAILED) == 1
    assert types.count(envelopes.BATCH_COMPLETED) == 1
    assert types.count(envelopes.WORKFLOW_PUBLISHED) == 1
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    for event in events:
        body = envelope_of(event).to_dict()
        jsonschema.Draft202012Validator(
            envelopes.schema_for(event.type), format_checker=checker
        ).validate(body)
    wait_for(lambda: len(recorder.delivered) >= len(events))
    assert sorted(recorder.delivered) == sorted(e.id for e in events)
    done = next(e for e in events if e.type == envelopes.BATCH_COMPLETED)
    assert done.data["link"] == f"/v1/batches/{batch['id']}" and done.data["document_count"] == 3


def test_a_rolled_back_change_leaves_no_event_and_wakes_nobody(setup: Setup) -> None:  # noqa: F811
    tenant_id = setup.tenant.tenant_id
    with services().write_session() as session, session.begin():
        event = _emit_workflow_event(session, tenant_id)
        event_id = event.id
        session.rollback()
    with setup.env.session_factory() as session:
        assert OutboxRepository(session, tenant_id).get(event_id) is None
    assert DBOS.list_workflows(workflow_ids=[f"events.wake:{event_id}"]) == []


def test_the_publisher_is_woken_after_the_outer_commit_not_a_savepoint(
    setup: Setup,  # noqa: F811
    recorder: Recorder,
) -> None:
    # Releasing a SAVEPOINT reports a commit while the transaction, and on SQLite its write
    # lock, are still held: a wake-up then would wait on its own transaction.
    tenant_id = setup.tenant.tenant_id
    # A run still waiting to start would read this event anyway, and no new one is enqueued.
    wait_for(lambda: not DBOS.list_queued_workflows(queue_name=PUBLISH_QUEUE))
    with services().write_session() as session, session.begin():
        event = _emit_workflow_event(session, tenant_id)
        with session.begin_nested():
            session.flush()
        assert DBOS.list_workflows(workflow_ids=[f"events.wake:{event.id}"]) == []
        event_id = event.id
    assert len(DBOS.list_workflows(workflow_ids=[f"events.wake:{event_id}"])) == 1
    wait_for(lambda: event_id in recorder.delivered)


def test_a_committed_event_without_a_wake_up_is_published_by_the_schedule(
    setup: Setup,  # noqa: F811
    recorder: Recorder,
) -> None:
    # The process died right after its commit: the row is there, nobody was woken.
    tenant_id = setup.tenant.tenant_id
    wait_for(lambda: not DBOS.list_queued_workflows(queue_name=PUBLISH_QUEUE))
    spec = _workflow_event(tenant_id, 1)
    event_id = ids.new_id("evt")
    with services().write_session() as session, session.begin():
        OutboxRepository(session, tenant_id)
        session.add(
            OutboxEvent(
                tenant_id=tenant_id,
                id=event_id,
                type=spec["type"],
                source=envelopes.source_for(tenant_id),
                subject=spec["subject"],
                data={"tenant_id": tenant_id, **spec["data"]},
                occurred_at=utcnow(),
            )
        )
    time.sleep(0.3)
    assert event_id not in recorder.delivered
    DBOS.start_workflow(publish_tick, utcnow(), None).get_result()
    wait_for(lambda: event_id in recorder.delivered)
    with setup.env.session_factory() as session:
        event = OutboxRepository(session, tenant_id).get(event_id)
        assert event is not None and event.published_at is not None


def test_the_publisher_schedule_is_installed(dbos_env: DbosEnv) -> None:  # noqa: F811
    launch.install_schedules(dbos_env.settings, bootstrap.flows())
    try:
        schedule = DBOS.get_schedule(PUBLISH_SCHEDULE)
        interval = dbos_env.settings.events_publish_interval_seconds
        assert schedule is not None and schedule["schedule"] == f"*/{interval} * * * * *"
    finally:
        for installed in DBOS.list_schedules():
            DBOS.delete_schedule(installed["schedule_name"])


def test_an_event_published_twice_runs_the_consumer_once(
    setup: Setup,  # noqa: F811
    recorder: Recorder,
) -> None:
    tenant_id = setup.tenant.tenant_id
    event_id = emit_workflow_version(setup.env, tenant_id, 2)
    wait_for(lambda: event_id in recorder.delivered)
    # Forget the publication (as if it had never been recorded) and publish again.
    with services().write_session() as session, session.begin():
        event = OutboxRepository(session, tenant_id).get(event_id)
        assert event is not None
        event.published_at = None
    DBOS.start_workflow(publish_flow, "test").get_result()
    time.sleep(0.5)
    assert recorder.delivered.count(event_id) == 1
    with setup.env.session_factory() as session:
        event = OutboxRepository(session, tenant_id).get(event_id)
        assert event is not None and event.published_at is not None
        workflow_id = consumer_workflow_id(envelope_of(event), "test-recorder")
    assert [w.status for w in DBOS.list_workflows(workflow_ids=[workflow_id])] == ["SUCCESS"]


def test_a_stale_event_arriving_late_is_rejected_by_compare_and_set(
    setup: Setup,  # noqa: F811
    recorder: Recorder,
) -> None:
    tenant_id = setup.tenant.tenant_id
    newer = emit_workflow_version(setup.env, tenant_id, 7)
    wait_for(lambda: newer in recorder.delivered)
    older = emit_workflow_version(setup.env, tenant_id, 6)
    wait_for(lambda: older in recorder.delivered)
    assert recorder.rejected == [older]
    assert recorder.projection["workflows/wfl_x"][0] == 7


def test_exhausted_retries_dead_letter_then_an_audited_redrive_delivers_once(
    setup: Setup,  # noqa: F811
    recorder: Recorder,
) -> None:
    tenant_id = setup.tenant.tenant_id
    tenant = TenantContext(tenant_id=tenant_id)
    settle(setup.env, tenant_id)  # the workflow's creation, before the receiver goes
    recorder.down = True
    event_id = emit_workflow_version(setup.env, tenant_id, 3)

    def letters() -> list[Any]:
        with setup.env.session_factory() as session:
            return service.list_dead_letters(session, tenant, consumer="test-recorder")

    (letter,) = wait_for(letters)
    assert (letter.event_id, letter.attempts, letter.category) == (event_id, 2, "handler_error")
    assert "receiver down" in letter.error and letter.redriven_at is None
    listed = ok(setup.env.client.get("/v1/dead-letters", headers=setup.tenant.headers), 200)
    assert [item["id"] for item in listed["items"]] == [letter.id]
    other = setup.env.tenant()
    assert ok(setup.env.client.get("/v1/dead-letters", headers=other.headers), 200)["items"] == []
    recorder.down = False
    client = services().client
    with services().write_session() as session, session.begin():
        service.redrive(
            session, client, tenant, letter_id=letter.id, actor="ops@example.com", reason="fixed"
        )
    wait_for(lambda: event_id in recorder.delivered)
    with services().write_session() as session, session.begin(), pytest.raises(Conflict):
        service.redrive(
            session,
            client,
            tenant,
            letter_id=letter.id,
            actor="ops@example.com",
            reason="again",
        )
    time.sleep(0.3)
    assert recorder.delivered.count(event_id) == 1
    with setup.env.session_factory() as session:
        audited = DeadLetterRepository(session, tenant_id).get(letter.id)
        assert audited is not None and audited.redriven_at is not None
        assert (audited.redriven_by, audited.redrive_reason) == ("ops@example.com", "fixed")


def test_replay_delivers_archived_events_once_however_often_it_runs(
    setup: Setup,  # noqa: F811
    recorder: Recorder,
) -> None:
    tenant_id = setup.tenant.tenant_id
    tenant = TenantContext(tenant_id=tenant_id)
    since = utcnow() - timedelta(minutes=5)
    first = emit_workflow_version(setup.env, tenant_id, 4)
    wait_for(lambda: first in recorder.delivered)
    late = Recorder(tenant_id)
    register_consumer("test-late", handles=late.handles, handler=late.handle)
    launch.register_queues(setup.env.settings, bootstrap.flows())
    try:
        client = services().client
        for _ in range(2):
            with services().write_session() as session, session.begin():
                replayed = service.replay(
                    session, client, tenant, consumer="test-late", since=since
                )
            assert replayed.events >= 2  # this test's event and the workflow's creation
        expected = sorted(e.id for e in tenant_events(setup.env, tenant_id))
        wait_for(lambda: sorted(late.delivered) == expected)
        with services().write_session() as session, session.begin():
            service.replay(session, client, tenant, consumer="test-recorder", since=since)
        time.sleep(0.5)
        assert sorted(late.delivered) == expected
        assert recorder.delivered.count(first) == 1
    finally:
        unregister_consumer("test-late")


def test_the_cli_lists_redrives_and_replays(
    setup: Setup,  # noqa: F811
    recorder: Recorder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tenant_id = setup.tenant.tenant_id
    settle(setup.env, tenant_id)
    recorder.down = True
    event_id = emit_workflow_version(setup.env, tenant_id, 5)
    tenant = TenantContext(tenant_id=tenant_id)

    def letters() -> list[Any]:
        with setup.env.session_factory() as session:
            return service.list_dead_letters(session, tenant, consumer="test-recorder")

    wait_for(letters)
    recorder.down = False
    settings = setup.env.settings
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", settings.resolved_database_url())
    monkeypatch.setenv("DOCFLOW_MIGRATION_DATABASE_URL", settings.resolved_migration_database_url())
    monkeypatch.setenv("COLUMNS", "250")
    # The CLI points structlog at the runner's stderr, closed after each command while this
    # process's workers keep logging: keep them quiet meanwhile, and restore the setup after.
    monkeypatch.setenv("DOCFLOW_LOG_LEVEL", "CRITICAL")
    saved = structlog.get_config()
    try:
        _cli_round_trip(tenant_id, event_id, recorder)
    finally:
        structlog.configure(**saved)


def _cli_round_trip(tenant_id: str, event_id: str, recorder: Recorder) -> None:
    runner = CliRunner()
    listed = runner.invoke(cli_app, ["dead-letters", "list", "--tenant", tenant_id])
    assert listed.exit_code == 0, listed.output
    (letter_id,) = re.findall(r"dlq_[0-9a-f]{32}", listed.output)
    args = ["dead-letters", "redrive", letter_id, "--tenant", tenant_id]
    redriven = runner.invoke(cli_app, [*args, "--by", "ops", "--reason", "endpoint fixed"])
    assert redriven.exit_code == 0, redriven.output
    wait_for(lambda: event_id in recorder.delivered)
    again = runner.invoke(cli_app, [*args, "--by", "ops", "--reason", "twice"])
    assert again.exit_code == 1 and "redriven already" in again.output
    since = (utcnow() - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%S")
    replay = ["events", "replay", "--since", since, "--consumer", "test-recorder"]
    replayed = runner.invoke(cli_app, [*replay, "--tenant", tenant_id])
    assert replayed.exit_code == 0 and "replayed" in replayed.output, replayed.output
    time.sleep(0.5)
    assert recorder.delivered.count(event_id) == 1
