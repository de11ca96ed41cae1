"""Queries for recorded step attempts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from docflow.history.models import StepAttempt
from docflow.kit import ids


class StepAttemptRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def add(
        self, *, execution_id: str, step: int, attempt: int, error: str, failed_at: datetime
    ) -> None:
        self.session.add(
            StepAttempt(
                id=ids.ulid(),
                execution_id=execution_id,
                step=step,
                attempt=attempt,
                error=error,
                failed_at=failed_at,
            )
        )

    def of_executions(self, execution_ids: Sequence[str]) -> list[StepAttempt]:
        """The failed attempts of these executions, in step and attempt order."""
        if not execution_ids:
            return []
        stmt = (
            select(StepAttempt)
            .where(StepAttempt.execution_id.in_(list(execution_ids)))
            .order_by(StepAttempt.execution_id, StepAttempt.step, StepAttempt.failed_at)
        )
        return list(self.session.scalars(stmt))
