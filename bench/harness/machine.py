"""Facts about the machine and the software a run measured: CPUs, memory, load, versions."""

from __future__ import annotations

import os
import platform
import sqlite3
import subprocess
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine

from bench.harness.processes import POSTGRES_ADMIN_URL

ROOT = Path(__file__).resolve().parents[2]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _command(*args: str) -> str:
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=10, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired):
        return "unavailable"
    return (done.stdout or done.stderr).strip()


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _postgres_version() -> str:
    try:
        engine = create_engine(POSTGRES_ADMIN_URL, pool_size=1)
        try:
            with engine.connect() as conn:
                return str(conn.exec_driver_sql("SHOW server_version").scalar())
        finally:
            engine.dispose()
    except Exception as exc:  # a fact, not a failure: the distributed scenarios will say more
        return f"unreachable ({type(exc).__name__})"


def _tesserocr_version() -> str:
    try:
        import tesserocr

        return str(tesserocr.tesseract_version()).splitlines()[0]
    except ImportError:
        return "not installed"


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine_facts() -> dict[str, Any]:
    """CPU count and model, memory, load average, and the versions of what is measured."""
    commit = _command("git", "rev-parse", "--short", "HEAD")
    dirty = bool(_command("git", "status", "--porcelain", "--untracked-files=no", "src"))
    return {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpu_count": os.cpu_count(),
            "cpu_model": _cpu_model(),
            "memory_gib": _memory_gib(),
            "load_average_at_start": load_average(),
            "platform": platform.platform(),
        },
        "versions": {
            "python": platform.python_version(),
            "docflow": _version("docflow"),
            "dbos": _version("dbos"),
            "sqlalchemy": _version("sqlalchemy"),
            "sqlite": sqlite3.sqlite_version,
            "postgresql": _postgres_version(),
            "tesseract_cli": _command("tesseract", "--version").splitlines()[0],
            "tesseract_in_process": _tesserocr_version(),
            "git_commit": commit + ("+uncommitted src changes" if dirty else ""),
        },
    }
