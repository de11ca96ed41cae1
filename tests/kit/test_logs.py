"""Logs are JSON lines on whatever stderr is at the time of logging; stdout stays clean."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator

import pytest
import structlog

from docflow.kit.logs import configure_logging


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    previous = structlog.get_config()
    yield
    structlog.configure(**previous)


def test_events_are_json_lines_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("INFO")
    structlog.get_logger("t").info("batch.created", batch_id="bat_1")
    structlog.get_logger("t").debug("hidden.below.level")
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    record = json.loads(line)
    assert (record["event"], record["batch_id"], record["level"]) == (
        "batch.created",
        "bat_1",
        "info",
    )


def test_a_replaced_stderr_is_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    # A test runner swaps stderr per command and closes the old one; logging must follow.
    configure_logging("WARNING")
    logger = structlog.get_logger("t")
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    logger.warning("first")
    first.close()
    monkeypatch.setattr(sys, "stderr", second)
    logger.warning("second")
    assert json.loads(second.getvalue())["event"] == "second"


def test_an_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown log level"):
        configure_logging("LOUD")


def test_credentials_never_reach_a_log_line(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("INFO")
    logger = structlog.get_logger("t")
    url = "http://h/v1/uploads/v1.eyJ0Ijoi.SIGNATURE_1"
    logger.info("upload.seen", url=url, note="key dfk_ab12cd34_SECRET_2 given")
    try:
        raise RuntimeError(f"failed on {url} with Bearer SECRET_3abcdef")
    except RuntimeError:
        logger.exception("upload.failed")
    err = capsys.readouterr().err
    for secret in ("eyJ0Ijoi", "SIGNATURE_1", "SECRET_2", "SECRET_3"):
        assert secret not in err
    first, second = (json.loads(line) for line in err.splitlines())
    assert first["url"] == "http://h/v1/uploads/{token}"
    assert first["note"] == "key dfk_ab12cd34_{redacted} given"
    assert "failed on http://h/v1/uploads/{token} with Bearer {redacted}" in second["exception"]


def test_dbos_lines_are_redacted_too() -> None:
    configure_logging("INFO")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    dbos = logging.getLogger("dbos")
    dbos.addHandler(handler)
    try:
        dbos.error("Workflow failed: %s", "PUT http://h/v1/uploads/v1.eyJ0Ijoi.SIGNATURE_4")
    finally:
        dbos.removeHandler(handler)
    assert "SIGNATURE_4" not in stream.getvalue()
    assert "PUT http://h/v1/uploads/{token}" in stream.getvalue()
