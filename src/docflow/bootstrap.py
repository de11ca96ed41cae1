"""Every flows module of docflow, for the processes that launch the durable runtime.

A process that launches DBOS must have registered every workflow first: a dequeued workflow whose
name is unknown to it would stay claimed by its executor. Importing this module imports each
flows module (their `@DBOS.workflow` declarations register the workflows); `flows()` also loads
every event consumer (`load_consumers`: their queues are declared from the registry) and returns
each module's declaration of its queues and schedules, for `docflow.runtime.launch.launch`.
"""

from __future__ import annotations

from docflow.batches import flows as batch_flows
from docflow.documents import flows as document_flows
from docflow.events import flows as event_flows
from docflow.events.consumers import load_consumers
from docflow.idempotency import flows as idempotency_flows
from docflow.reconciler import flows as reconciler_flows
from docflow.runtime.context import Flows
from docflow.sources import flows as source_flows
from docflow.webhooks import flows as webhook_flows


def flows() -> tuple[Flows, ...]:
    """The declarations of every flows module, with every event consumer registered."""
    load_consumers()
    return (
        document_flows.LAUNCH,
        batch_flows.LAUNCH,
        event_flows.LAUNCH,
        webhook_flows.LAUNCH,
        idempotency_flows.LAUNCH,
        reconciler_flows.LAUNCH,
        source_flows.LAUNCH,
    )
