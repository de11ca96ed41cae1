"""The reconciler's readiness check for `/readyz`."""

from __future__ import annotations

from dbos import DBOSClient

from docflow.kit.readiness import Degraded, ReadinessCheck
from docflow.reconciler.steps import unresolved


def workflows_check(client: DBOSClient) -> ReadinessCheck:
    """A readiness check raising `Degraded` while a workflow that carries work (a webhook
    delivery, a document, a batch, an event consumer) is in ERROR and not given up on: the
    reconciler rewinds it or gives up on it within `reconcile_interval_seconds`, so one that
    stays is a sign the reconciler is not running or the failure outlasts the rewinds."""

    def check() -> None:
        failed = unresolved(client)
        if failed:
            raise Degraded(f"{len(failed)} workflows in ERROR")

    return check
