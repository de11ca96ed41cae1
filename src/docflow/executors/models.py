"""One row per live worker process (executor), refreshed every few seconds.

Not tenant data: a worker serves every tenant. A row older than the timeout means the worker
is dead; the survivor that deletes the row is the one that recovers the worker's pending work.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from docflow.db import Base, UTCDateTime


class ExecutorHeartbeat(Base):
    __tablename__ = "executor_heartbeats"

    executor_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    hostname: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    seen_at: Mapped[datetime] = mapped_column(UTCDateTime)
