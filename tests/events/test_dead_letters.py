"""The shared dead-letter mechanism: a letter written once per workflow that gave up, a letter for
one target redriven by its consumer's `redrive_target` (a letter without a target is handed to
the whole consumer again), a consumer without one refusing targeted letters, the selection by
target and open letters, and the CLI refusing a redrive that names neither a letter nor a
selection."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from dbos import DBOSClient
from sqlalchemy.orm import Session
from typer.testing import CliRunner

from docflow import bootstrap
from docflow.cli import app as cli_app
from docflow.errors import Conflict
from docflow.events import envelopes, service
from docflow.events.consumers import (
    ConsumerContext,
    consumer,
    register_consumer,
    unregister_consumer,
)
from docflow.events.envelopes import Envelope
from docflow.events.models import DeadLetter
from docflow.events.publisher import consumer_workflow_id, hand_over
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.runtime import launch
from docflow.runtime.context import services
from docflow.tenancy import TenantContext
from support.dbos_fixtures import Setup, dbos_env, setup  # noqa: F401
from support.process_fixtures import wait_for


@dataclass
class Targets:
    """A consumer that hands events to targets of its own and redrives one target's letters."""

    handled: list[str] = field(default_factory=list)
    redriven: list[tuple[str, str | None]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, context: ConsumerContext, envelope: Envelope) -> None:
        with self.lock:
            self.handled.append(envelope.id)

    def redrive_target(self, session: Session, client: DBOSClient, letter: DeadLetter) -> str:
        self.redriven.append((letter.id, letter.target))
        envelope = Envelope.from_dict(letter.envelope)
        workflow_id = f"{consumer_workflow_id(envelope, 'test-targets')}:{letter.target}"
        hand_over(session, client, envelope, consumer("test-targets"), workflow_id)
        return workflow_id


@pytest.fixture
def targets(setup: Setup) -> Iterator[Targets]:  # noqa: F811
    state = Targets()
    register_consumer(
        "test-targets",
        handles=lambda _session, _envelope: False,  # only redrives reach it here
        handler=state.handle,
        redrive_target=state.redrive_target,
    )
    register_consumer("test-plain", handles=lambda _session, _envelope: False, handler=state.handle)
    launch.register_queues(setup.env.settings, bootstrap.flows())
    yield state
    unregister_consumer("test-targets")
    unregister_consumer("test-plain")


def _envelope(tenant_id: str) -> dict[str, object]:
    return Envelope(
        id=ids.new_id("evt"),
        source=envelopes.source_for(tenant_id),
        type=envelopes.WORKFLOW_PUBLISHED,
        time=utcnow(),
        subject="workflows/wfl_x",
        data={"tenant_id": tenant_id},
    ).to_dict()


def _letter(consumer: str, raw: dict[str, object], target: str | None, workflow_id: str) -> str:
    with services().write_session() as session, session.begin():
        return service.add_dead_letter(
            session,
            consumer_name=consumer,
            raw=raw,
            error="HTTP 503",
            category="http_5xx",
            attempts=5,
            workflow_id=workflow_id,
            target=target,
        )


def tenant_source(raw: dict[str, object]) -> str:
    """The start of the event's consumer workflow ids: `{source}:{event id}`."""
    return f"{raw['source']}:{raw['id']}"


def _redrive(tenant: TenantContext, letter_id: str) -> DeadLetter:
    client = services().client
    with services().write_session() as session, session.begin():
        return service.redrive(
            session, client, tenant, letter_id=letter_id, actor="ops", reason="test"
        )


def test_a_letter_for_one_target_goes_to_the_consumers_redrive_target(
    setup: Setup,  # noqa: F811
    targets: Targets,
) -> None:
    tenant = TenantContext(setup.tenant.tenant_id)
    raw = _envelope(tenant.tenant_id)
    first = _letter("test-targets", raw, "whe_a", "job-a")
    assert _letter("test-targets", raw, "whe_a", "job-a") == first  # once per workflow
    untargeted = _letter("test-targets", raw, None, "job-all")
    with setup.env.session_factory() as session:
        open_ones = service.list_dead_letters(session, tenant, open_only=True)
        assert sorted(x.id for x in open_ones) == sorted([first, untargeted])
        for_a = service.list_dead_letters(session, tenant, target="whe_a")
        assert [(x.id, x.target, x.category) for x in for_a] == [(first, "whe_a", "http_5xx")]
        found = service.open_dead_letter(
            session, tenant, consumer="test-targets", target="whe_a", event_id=str(raw["id"])
        )
        assert found is not None and found.id == first

    redriven = _redrive(tenant, first)
    assert targets.redriven == [(first, "whe_a")]
    assert redriven.redrive_workflow_id == f"{tenant_source(raw)}:test-targets:whe_a"
    wait_for(lambda: raw["id"] in targets.handled, timeout=30, what="the redriven event")
    # Without a target the letter is handed to the consumer as a whole, not to the hook.
    whole = _redrive(tenant, untargeted)
    assert targets.redriven == [(first, "whe_a")]
    assert whole.redrive_workflow_id == f"{tenant_source(raw)}:test-targets:redrive:{untargeted}"
    wait_for(lambda: targets.handled.count(str(raw["id"])) == 2, timeout=30, what="both")
    with pytest.raises(Conflict, match="redriven already"):
        _redrive(tenant, first)
    with setup.env.session_factory() as session:
        assert service.list_dead_letters(session, tenant, open_only=True) == []
        assert (
            service.open_dead_letter(
                session, tenant, consumer="test-targets", target="whe_a", event_id=str(raw["id"])
            )
            is None
        )


def test_a_consumer_without_redrive_target_refuses_letters_for_one_target(
    setup: Setup,  # noqa: F811
    targets: Targets,
) -> None:
    tenant = TenantContext(setup.tenant.tenant_id)
    letter_id = _letter("test-plain", _envelope(tenant.tenant_id), "whe_b", "job-b")
    with pytest.raises(Conflict, match="cannot redrive a letter for one target"):
        _redrive(tenant, letter_id)
    with setup.env.session_factory() as session:
        (letter,) = service.list_dead_letters(session, tenant, consumer="test-plain")
        assert letter.redriven_at is None and letter.redrive_workflow_id is None


def test_the_cli_redrive_needs_a_letter_or_a_selection() -> None:
    runner = CliRunner()
    audit = ["--by", "ops", "--reason", "why"]
    bare = runner.invoke(cli_app, ["dead-letters", "redrive", "--tenant", "ten_x", *audit])
    assert bare.exit_code == 2 and "give a dead letter id" in bare.output
    both = ["dead-letters", "redrive", "dlq_x", "--tenant", "ten_x", "--consumer", "webhooks"]
    assert runner.invoke(cli_app, [*both, *audit]).exit_code == 2
