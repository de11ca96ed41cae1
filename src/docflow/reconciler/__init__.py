"""The reconciler: no durable workflow that carries work stays in ERROR.

Every step that touches the database retries transient errors (`docflow.runtime.retry`), so a
workflow ends in ERROR only when a step still failed after its retries or hit an unexpected
error. The schedule `workflows-reconcile` runs `docflow.reconcile` every
`reconcile_interval_seconds`: it lists the workflows in ERROR of the kinds that carry work
(webhook deliveries, document flows, batch flows and completions, event consumers) and for
each one

- rewinds it (the same workflow id, run again from the step that failed, the steps before it
  kept) while it was rewound fewer than `reconcile_max_rewinds` times;
- past that, gives up on it through its kind's own failure path, so nothing waits forever: a
  webhook delivery is DEAD with a dead letter of category `internal` (`docflow dead-letters
  redrive` sends it again), an event consumer writes its dead letter (category `internal`), a
  document is FAILED `internal_error`, a batch is completed from its documents.

A document flow that ended without finishing its document (cancelled, or past DBOS's recovery
attempts) is given up on at once, so its batch still completes.

The rewinds and the giving up are recorded in the workflow's attributes (`docflow.rewinds`,
`docflow.gave_up`). `health.workflows_check` makes `/readyz` degraded while a workflow of these
kinds is in ERROR and not given up on.

`flows.py` declares the scheduled workflow and its step; `steps.py` holds the step's body and
each kind's give-up, which settles the work through that kind's own failure path.
"""
