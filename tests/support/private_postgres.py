"""A private PostgreSQL server for fault tests that restart the database: `initdb` and `pg_ctl`
from the installed PostgreSQL into a temporary folder, on a free port of 127.0.0.1 with trust
authentication. The machine's shared server is never restarted (other test runs use it).

Run as root, the server runs as the `postgres` user (`runuser`), which must own its folder.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from support.process_fixtures import free_port

SERVER_USER = "postgres"


def server_binaries() -> Path | None:
    """The newest installed PostgreSQL's bin folder (with initdb and pg_ctl), if any."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda p: int(Path(p).parent.parent.name),
    )
    return Path(found[-1]).parent if found else None


@dataclass(frozen=True)
class PrivateServer:
    """A running private server: `admin_url` connects as its superuser `postgres`."""

    bin: Path
    data: Path
    port: int
    max_connections: int = 100

    @property
    def admin_url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def restart(self) -> None:
        """`pg_ctl restart -m fast`: every connection is closed, the server stops and starts
        again on the same port, as `pg_ctlcluster ... restart` does."""
        self._ctl("restart", "-m", "fast", "-w")

    def stop(self) -> None:
        self._ctl("stop", "-m", "immediate", "-w")

    def _ctl(self, *args: str) -> None:
        options = (
            f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1 "
            f"-c max_connections={self.max_connections}"
        )
        _run_as_server(
            [
                str(self.bin / "pg_ctl"),
                "-D",
                str(self.data / "pgdata"),
                "-o",
                options,
                "-l",
                str(self.data / "server.log"),
                *args,
            ]
        )


def _run_as_server(command: list[str]) -> None:
    if os.geteuid() == 0:
        command = ["runuser", "-u", SERVER_USER, "--", *command]
    subprocess.run(command, check=True, capture_output=True, timeout=120)


@contextmanager
def private_server(*, max_connections: int = 100) -> Iterator[PrivateServer]:
    """A new server in a temporary folder, stopped and removed afterwards."""
    binaries = server_binaries()
    if binaries is None:
        raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql")
    folder = Path(tempfile.mkdtemp(prefix="docflow-pg-"))
    try:
        if os.geteuid() == 0:
            shutil.chown(folder, SERVER_USER, SERVER_USER)
        _run_as_server(
            [
                str(binaries / "initdb"),
                "-D",
                str(folder / "pgdata"),
                "-U",
                "postgres",
                "-A",
                "trust",
                "--no-sync",
            ]
        )
        server = PrivateServer(binaries, folder, free_port(), max_connections)
        server._ctl("start", "-w")
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
