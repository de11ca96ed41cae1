"""The registry of event consumers.

A consumer is a name, a filter on envelopes (`handles`) and a `handler`. The filter is given the
caller's session (the publisher's, or a replay's, transaction) to look at canonical state with,
so deciding never needs a launched runtime. The publisher starts
one DBOS workflow per (event, consumer) with the id `{source}:{event_id}:{consumer}`, on the
consumer's own queue (`events.<name>`, at most `concurrency` at once per worker), so a
redelivered or replayed event is a no-op. The handler is retried up to `max_attempts` times,
`backoff_seconds * 2**n` apart; when it still fails, a dead letter records the last error and its
category. Handlers must be idempotent and re-read canonical state under `envelope.tenant_id`
(the payload says what happened, not what is true now); they write through
`ConsumerContext.session`, committed when the handler returns.

A consumer that hands each event on to several targets of its own (the webhooks consumer: one
durable delivery per endpoint) may give up on one target only: it writes a dead letter naming
that `target` (`events.service.add_dead_letter`) and registers `redrive_target`, which a redrive of
such a letter calls instead of handing the event to the whole consumer again. A consumer that
keeps records of its own (the webhooks delivery log) registers `sweep`, which the hourly
retention sweep calls for each tenant with the same cut-off as for events and dead letters. One
that starts durable jobs of its own for an event (the webhooks consumer's delivery jobs)
registers `targets`: the same selection its handler makes, as a `Fanout` (the jobs' ids, so a
replay of the event resumes those that failed, and how many targets do not take the event and
why, which a replay reports).

Consumers register at import time; a module defining one is listed in `CONSUMER_MODULES` so
every process (API and workers) imports it before launch.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from dbos import DBOSClient
from sqlalchemy.orm import Session

from docflow.events.envelopes import Envelope
from docflow.events.models import DeadLetter

__all__ = [
    "CONSUMER_MODULES",
    "Consumer",
    "ConsumerContext",
    "Fanout",
    "PermanentError",
    "Sweep",
    "TargetRedrive",
    "Targets",
    "consumer",
    "consumers",
    "consumers_for",
    "load_consumers",
    "queue_name",
    "register_consumer",
    "unregister_consumer",
]

# Modules that register consumers when imported (see `load_consumers`).
CONSUMER_MODULES: tuple[str, ...] = (
    "docflow.webhooks.consumer",
    "docflow.search.consumer",
    "docflow.documents.consumer",
    "docflow.trust.consumer",
)

_NAME = re.compile(r"^[a-z][a-z0-9_.-]{0,62}$")


class PermanentError(Exception):
    """Raised by a handler for an event it can never process: dead-lettered without retries."""


@dataclass(frozen=True)
class ConsumerContext:
    """What a handler gets besides the envelope: a session bound to the event's tenant (in a
    transaction the consumer workflow commits), the attempt number (0-based), the consumer
    workflow's id (stable across retries: use it as an idempotency key) and the DBOS client
    (to enqueue durable jobs of its own in that transaction)."""

    session: Session
    tenant_id: str
    attempt: int
    workflow_id: str
    client: DBOSClient


Handler = Callable[[ConsumerContext, Envelope], None]
Filter = Callable[[Session, Envelope], bool]
# Start a dead letter's work for its target again, in the session's transaction (committed by
# the caller with the redrive's audit); the id of the workflow it started. Raises a DomainError
# (Conflict) when the target cannot take it now.
TargetRedrive = Callable[[Session, DBOSClient, DeadLetter], str]
# Delete what the consumer keeps of tenant `tenant_id` that is finished and older than `before`,
# in the session's transaction (bound to that tenant); how many rows went.
Sweep = Callable[[Session, str, datetime], int]


@dataclass(frozen=True)
class Fanout:
    """What a consumer with targets of its own does with one event: the ids of the durable
    jobs it starts for it (one per target that takes it) and how many targets do not take it,
    by reason (a code of the consumer's)."""

    jobs: list[str]
    skipped: dict[str, int]


# The consumer's selection of targets for an event (read in the session): its `Fanout`.
Targets = Callable[[Session, Envelope], Fanout]


@dataclass(frozen=True)
class Consumer:
    name: str
    handles: Filter
    handler: Handler
    max_attempts: int
    concurrency: int
    backoff_seconds: float
    redrive_target: TargetRedrive | None = None
    sweep: Sweep | None = None
    targets: Targets | None = None

    @property
    def queue(self) -> str:
        return queue_name(self.name)


_registry: dict[str, Consumer] = {}


def queue_name(consumer_name: str) -> str:
    """The DBOS queue a consumer's workflows run on."""
    return f"events.{consumer_name}"


def register_consumer(
    name: str,
    *,
    handles: Filter,
    handler: Handler,
    max_attempts: int = 5,
    concurrency: int = 4,
    backoff_seconds: float = 1.0,
    redrive_target: TargetRedrive | None = None,
    sweep: Sweep | None = None,
    targets: Targets | None = None,
) -> Consumer:
    """Register (or replace, by name) a consumer; returns it. Register before the runtime
    launches, so its queue exists; a consumer registered later gets its queue at the next
    launch. `redrive_target` redrives the consumer's dead letters that name a target; `sweep`
    deletes its own old records at each retention sweep; `targets` is its selection of targets
    for an event (see `Fanout`). ValueError for a bad name or limits."""
    if not _NAME.match(name):
        raise ValueError(f"invalid consumer name: {name!r}")
    if max_attempts < 1 or concurrency < 1 or backoff_seconds < 0:
        raise ValueError("max_attempts and concurrency must be >= 1, backoff_seconds >= 0")
    entry = Consumer(
        name,
        handles,
        handler,
        max_attempts,
        concurrency,
        backoff_seconds,
        redrive_target,
        sweep,
        targets,
    )
    _registry[name] = entry
    return entry


def unregister_consumer(name: str) -> None:
    """Forget a consumer (events already handed to it still run; new ones skip it)."""
    _registry.pop(name, None)


def consumer(name: str) -> Consumer:
    """The registered consumer `name`; KeyError if none."""
    return _registry[name]


def consumers() -> list[Consumer]:
    """Every registered consumer, by name."""
    return [_registry[name] for name in sorted(_registry)]


def consumers_for(session: Session, envelope: Envelope) -> list[Consumer]:
    """The registered consumers whose filter accepts `envelope` (read through `session`), by
    name."""
    return [c for c in consumers() if c.handles(session, envelope)]


def load_consumers() -> None:
    """Import every module of `CONSUMER_MODULES` (each registers its consumers once, at its
    first import): any process that redrives or replays sees every consumer."""
    for module in CONSUMER_MODULES:
        importlib.import_module(module)
