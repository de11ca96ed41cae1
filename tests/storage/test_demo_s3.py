"""`docflow demo` with its files in S3 (moto's server): the demo uploads through the presigned
POST forms and confirms each upload, and every batch runs to its end."""

from __future__ import annotations

import re
from pathlib import Path

import boto3
import pytest
from typer.testing import CliRunner

from docflow.cli import app
from support.s3_server import S3Server, s3_server  # noqa: F401


@pytest.mark.slow
@pytest.mark.tesseract
def test_the_demo_runs_in_s3_mode(
    s3_server: S3Server,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    boto3.client("s3", endpoint_url=s3_server.endpoint_url).create_bucket(Bucket="demo")
    monkeypatch.delenv("DOCFLOW_DATABASE_URL", raising=False)
    monkeypatch.setenv("DOCFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DOCFLOW_STORAGE_URL", f"s3://demo?endpoint_url={s3_server.endpoint_url}")
    result = CliRunner().invoke(app, ["demo", "--timeout", "120"])
    assert result.exit_code == 0, result.output
    batches = re.findall(
        r"batch bat_\w+: (SUCCEEDED|REVIEW_REQUIRED|PARTIALLY_FAILED)", result.output
    )
    assert len(batches) == 3, result.output
    listed = boto3.client("s3", endpoint_url=s3_server.endpoint_url).list_objects_v2(Bucket="demo")
    names = {item["Key"].rsplit("/", 1)[1] for item in listed.get("Contents", [])}
    assert any(name.startswith("upload-") for name in names) and "original" not in names
    assert not (tmp_path / "home" / "files").exists()  # nothing went to the local folder
