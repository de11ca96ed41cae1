"""The publisher and consumer workflows, and the publisher's schedule.

- `docflow.events.publish` (queue `events`, one at a time so events are handed over in order):
  woken by the commit of a change that emitted events (id `events.wake:<event id>`), and by the
  schedule `events-publish` every `events_publish_interval_seconds`, which picks up whatever a
  process that died right after its commit left unpublished. Steps: `events.pending` (claim the
  oldest unpublished ids, a page at a time) and `events.dispatch` (hand the page's events to
  their consumers and mark them published, in one transaction).
- `docflow.events.consume` (queue `events.<consumer>`), id `{source}:{event_id}:{consumer}`:
  `events.attempt` up to the consumer's `max_attempts`, durable sleeps between them, then
  `events.dead_letter` if every attempt failed.
- `docflow.events.sweep` (schedule `events-sweep`, hourly): the retention sweep.

The step bodies are in `events.steps`; each step here opens its session and calls one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dbos import DBOS, ScheduleInput

from docflow.config import Settings
from docflow.events import publisher, service, steps
from docflow.events.consumers import consumer, consumers
from docflow.events.outbox import (
    PUBLISH_FLOW,
    PUBLISH_QUEUE,
    attach_waker,
    detach_waker,
    publisher_started,
)
from docflow.runtime.context import BATCHES_QUEUE, Flows, Queue, Services, services
from docflow.runtime.retry import db_step

PUBLISH_TICK_FLOW = "docflow.events.publish_tick"
SWEEP_FLOW = "docflow.events.sweep"
PUBLISH_SCHEDULE = "events-publish"
SWEEP_SCHEDULE = "events-sweep"
_CLAIM = 100
_ROUNDS = 20


@db_step("events.pending")
def pending_step(limit: int) -> list[tuple[str, str]]:
    with services().session_factory() as session, session.begin():
        return steps.pending(session, limit)


@db_step("events.dispatch")
def dispatch_step(events: list[tuple[str, str]]) -> int:
    s = services()
    with s.write_session() as session, session.begin():
        return steps.dispatch(session, s.client, events)


def _publish_pending() -> int:
    publisher_started()
    published = 0
    for _ in range(_ROUNDS):
        page = pending_step(_CLAIM)
        if page:
            published += dispatch_step(page)
        if len(page) < _CLAIM:
            break
    return published


@DBOS.workflow(name=PUBLISH_FLOW)
def publish_flow(reason: str) -> int:
    """Publish every unpublished event, oldest first; how many it handed over."""
    return _publish_pending()


@DBOS.workflow(name=PUBLISH_TICK_FLOW)
def publish_tick(scheduled_at: datetime, context: Any) -> None:
    """One tick of the publisher's schedule (same work as a wake-up)."""
    _publish_pending()


@db_step("events.attempt")
def attempt_step(consumer_name: str, raw: dict[str, Any], number: int) -> steps.Attempt:
    s = services()
    with s.write_session() as session:
        return steps.attempt(
            session,
            s.client,
            consumer_name=consumer_name,
            raw=raw,
            number=number,
            workflow_id=DBOS.workflow_id or "",
        )


@db_step("events.dead_letter")
def dead_letter_step(
    consumer_name: str, raw: dict[str, Any], last: steps.Failed, attempts: int
) -> str:
    with services().write_session() as session, session.begin():
        return steps.dead_letter(
            session,
            consumer_name=consumer_name,
            raw=raw,
            last=last,
            attempts=attempts,
            workflow_id=DBOS.workflow_id or "",
        )


def _limits(consumer_name: str) -> tuple[int, float]:
    """The consumer's (max attempts, backoff seconds); one attempt for an unknown consumer
    (which fails permanently)."""
    try:
        entry = consumer(consumer_name)
    except KeyError:
        return 1, 0.0
    return entry.max_attempts, entry.backoff_seconds


@DBOS.workflow(name=publisher.CONSUME_FLOW)
def consume_flow(consumer_name: str, raw: dict[str, Any]) -> str:
    """Deliver one event to one consumer: "handled", or "dead_lettered" after its retries."""
    max_attempts, backoff = _limits(consumer_name)
    number = 0
    outcome = attempt_step(consumer_name, raw, number)
    while isinstance(outcome, steps.Failed) and not outcome.permanent:
        if number + 1 >= max_attempts:
            break
        DBOS.sleep(backoff * 2**number)
        number += 1
        outcome = attempt_step(consumer_name, raw, number)
    if isinstance(outcome, steps.Handled):
        return "handled"
    dead_letter_step(consumer_name, raw, outcome, number + 1)
    return "dead_lettered"


@db_step("events.sweep")
def sweep_step() -> service.Swept:
    s = services()
    return steps.sweep_all(s.write_factory, retention_days=s.settings.events_retention_days)


@DBOS.workflow(name=SWEEP_FLOW)
def sweep_tick(scheduled_at: datetime, context: Any) -> None:
    """The hourly retention sweep: published events, dead letters and the consumers' finished
    records (the webhooks delivery log) older than `events_retention_days` are deleted
    (unpublished events and pending deliveries never are)."""
    sweep_step()


def _queues(settings: Settings) -> list[Queue]:
    """The publisher's queue, one run at a time so events are handed to consumers in the order
    they happened, and each registered consumer's queue. Both poll as often as the documents'
    queue (`queue_polling_seconds`): a queue starts at most its free slots per poll, so a
    consumer's throughput is bounded by its concurrency over the polling interval (4 per 0.5 s
    let a search index fall ever further behind a batch completing 20 documents a second)."""
    polling = settings.queue_polling_seconds
    publish = Queue(PUBLISH_QUEUE, polling_interval_sec=polling, global_concurrency=1)
    return [publish] + [
        Queue(c.queue, polling_interval_sec=polling, worker_concurrency=c.concurrency)
        for c in consumers()
    ]


def _schedules(settings: Settings) -> list[ScheduleInput]:
    """The publisher every `events_publish_interval_seconds`, the retention sweep hourly."""
    publish: ScheduleInput = {
        "schedule_name": PUBLISH_SCHEDULE,
        "workflow_fn": publish_tick,
        "schedule": f"*/{settings.events_publish_interval_seconds} * * * * *",
        "context": None,
        "queue_name": PUBLISH_QUEUE,
    }
    sweep: ScheduleInput = {
        "schedule_name": SWEEP_SCHEDULE,
        "workflow_fn": sweep_tick,
        "schedule": "17 * * * *",
        "context": None,
        "queue_name": BATCHES_QUEUE,
    }
    return [publish, sweep]


def _attach(services: Services) -> None:
    attach_waker(services.client)


LAUNCH = Flows(queues=_queues, schedules=_schedules, on_launch=_attach, on_shutdown=detach_waker)
