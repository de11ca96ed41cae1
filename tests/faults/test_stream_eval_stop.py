"""`docflow eval --stream` stopped half-way (Ctrl+C or SIGTERM) stops the service it started:
nothing keeps answering on its port once the command has exited."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from docflow.corpus.generate import generate_corpus
from support.process_fixtures import stop, wait_for

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SERVICE_LINE = re.compile(r"service on (http://127\.0\.0\.1:\d+)")


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_stream_stops_its_service(tmp_path: Path, signum: int) -> None:
    dataset = tmp_path / "documents"
    generate_corpus(dataset, count=14, seed=5, kinds=("pdf",))
    err = tmp_path / "stderr.log"
    args = ["--workflow", str(EXAMPLES / "invoice.yaml"), "--dataset", str(dataset), "--stream"]
    with err.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "docflow.cli", "eval", *args],
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
    try:
        wait_for(
            lambda: SERVICE_LINE.search(err.read_text()) is not None or process.poll() is not None,
            timeout=180,
            what="the stream's service to start",
        )
        found = SERVICE_LINE.search(err.read_text())
        assert found is not None, err.read_text()[-2000:]
        url = found.group(1)
        assert _answers(url)
        process.send_signal(signum)
        process.wait(timeout=90)
        assert process.returncode != 0
        # the command returns only once its service has stopped
        assert not _answers(url)
        time.sleep(1)
        assert not _answers(url)
    finally:
        stop(process)
