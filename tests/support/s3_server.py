"""A real S3-compatible server for tests: moto's standalone server in its own process.

It listens on 127.0.0.1 on a free port and is spoken to over HTTP, exactly like a remote S3.
A separate process (rather than moto's in-process server) keeps its memory out of the tests'
allocation measurements and its state out of the test process. Import the fixture into a test
module with `from support.s3_server import s3_server  # noqa: F401`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

REGION = "us-east-1"
ACCESS_KEY = "docflow-test"
SECRET_KEY = "docflow-test-secret"
_START_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class S3Server:
    endpoint_url: str
    region: str = REGION

    def environment(self) -> dict[str, str]:
        """AWS variables a client needs to reach this server (moto accepts any credentials)."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_DEFAULT_REGION": self.region,
        }


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(process: subprocess.Popen[bytes], endpoint_url: str) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto server exited with code {process.returncode}")
        try:
            httpx.get(f"{endpoint_url}/moto-api/", timeout=1.0)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError(f"moto server did not answer within {_START_TIMEOUT_S} s")


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """One moto S3 server for the whole test session; tests create their own buckets."""
    port = _free_port()
    endpoint_url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "MOTO_PORT": str(port)}
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        _wait_ready(process, endpoint_url)
        yield S3Server(endpoint_url=endpoint_url)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
