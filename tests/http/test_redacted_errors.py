"""An error report about a request to an upload URL (the problem answer, and the log line
with the error's traceback) never holds the URL's token, even when the error's own message
quotes the URL."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import structlog
from fastapi import Request
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from docflow.config import Settings
from docflow.documents.uploads.urls import sign_upload
from docflow.kit.logs import configure_logging
from docflow.main import create_app
from support.api_fixtures import ok


@pytest.fixture
def _json_logs() -> Iterator[None]:
    previous = structlog.get_config()
    configure_logging("INFO")
    yield
    structlog.configure(**previous)


@pytest.mark.usefixtures("_json_logs")
def test_an_error_on_an_upload_url_is_reported_without_its_token(
    api_settings: Settings, engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    app = create_app(api_settings, engine=engine)

    @app.get("/v1/uploads/{token}")
    def boom(request: Request) -> None:
        raise RuntimeError(
            f"could not take {request.url} to https://b.s3/k?X-Amz-Signature=QUERYSECRET"
            " (key dfk_ab12cd34_KEYSECRET)"
        )

    token = sign_upload(
        "s", tenant_id="ten_1", document_id="doc_1", content_type="x/y", max_bytes=1, expires_at=1
    )
    capsys.readouterr()
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get(f"/v1/uploads/{token}")
    problem = ok(response, 500)
    assert "instance" not in problem
    err = capsys.readouterr().err
    for secret in (token, token.rsplit(".", 1)[1], "KEYSECRET", "QUERYSECRET"):
        assert secret not in response.text
        assert secret not in err
    (report,) = [json.loads(line) for line in err.splitlines() if '"http.unhandled_error"' in line]
    assert report["path"] == "/v1/uploads/{token}"
    assert (
        "could not take http://testserver/v1/uploads/{token} to https://b.s3/k?X-Amz-Signature={redacted}"
        in (report["exception"])
    )
