"""Failed step attempts that DBOS retried (DBOS keeps only a step's final outcome).

Keyed by the execution (workflow) id, which is read only after the batch or document it names
was read under the caller's tenant; no document content is stored, only the error's text.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from docflow.db import Base, UTCDateTime


class StepAttempt(Base):
    __tablename__ = "step_attempts"
    __table_args__ = (Index("ix_step_attempts_execution", "execution_id", "step", "attempt"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    execution_id: Mapped[str] = mapped_column(String(200))
    step: Mapped[int] = mapped_column(Integer)
    attempt: Mapped[int] = mapped_column(Integer)  # 1-based number of the attempt that failed
    error: Mapped[str] = mapped_column(Text)
    failed_at: Mapped[datetime] = mapped_column(UTCDateTime)
