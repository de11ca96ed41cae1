"""Settings: the signing secret development makes for itself, and every setting documented in
docs/operations.md."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from docflow import db
from docflow.config import KEK_FILE, PLACEHOLDER_SECRET, SECRET_FILE, Settings, UnsafeConfiguration
from docflow.documents.uploads.urls import InvalidUploadToken, verify_upload
from docflow.encryption.kek import FileKek
from docflow.encryption.service import kek_set
from docflow.errors import UPLOAD_PATH
from support.api_fixtures import make_api_tenant, workflow_body

OPERATIONS = Path(__file__).resolve().parents[1] / "docs" / "operations.md"
PDF = b"%PDF-1.4\n%%EOF\n"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_development_makes_a_secret_once_and_keeps_it_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCFLOW_SIGNING_SECRET", raising=False)
    settings = Settings(env="development", home=tmp_path / "home").with_generated_secret()
    secret = settings.signing_secret
    assert secret != PLACEHOLDER_SECRET and len(secret) >= 32
    path = tmp_path / "home" / SECRET_FILE
    assert path.read_text().strip() == secret and _mode(path) == 0o600
    again = Settings(env="development", home=tmp_path / "home").with_generated_secret()
    assert again.signing_secret == secret
    assert list(path.parent.iterdir()) == [path]  # no temporary file left behind


def test_a_set_secret_and_other_environments_are_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCFLOW_SIGNING_SECRET", raising=False)
    explicit = "x" * 40
    for settings in (
        Settings(env="development", home=tmp_path, signing_secret=explicit),
        Settings(env="test", home=tmp_path),
        Settings(env="production", home=tmp_path),
    ):
        assert settings.with_generated_secret() == settings
    assert not (tmp_path / SECRET_FILE).exists()


def test_only_development_signs_with_the_placeholder(tmp_path: Path) -> None:
    Settings(env="development", home=tmp_path, signing_secret=PLACEHOLDER_SECRET).check_safe()
    for env in ("test", "production"):
        settings = Settings(env=env, home=tmp_path, signing_secret=PLACEHOLDER_SECRET)
        with pytest.raises(UnsafeConfiguration, match="DOCFLOW_SIGNING_SECRET is not set"):
            settings.check_safe()


def test_production_refuses_to_start_without_a_configured_kek(tmp_path: Path) -> None:
    secret = "s" * 40
    unset = Settings(env="production", home=tmp_path / "home", signing_secret=secret)
    with pytest.raises(UnsafeConfiguration, match="DOCFLOW_KEK_URL is not set"):
        unset.check_safe()
    with pytest.raises(ValueError, match="no KEK file"):
        kek_set(unset)  # and nothing makes one behind the check's back
    assert not (tmp_path / "home").exists()
    elsewhere = f"file://{tmp_path}/kek"
    missing = unset.model_copy(update={"kek_url": elsewhere})
    with pytest.raises(UnsafeConfiguration, match=f"DOCFLOW_KEK_URL names the key file {tmp_path}"):
        missing.check_safe()
    FileKek.load(tmp_path / "kek", create=True)  # as `docflow keys new-kek` makes it
    missing.check_safe()
    old = missing.model_copy(update={"kek_previous_urls": f"file://{tmp_path}/old-kek"})
    with pytest.raises(UnsafeConfiguration, match="DOCFLOW_KEK_PREVIOUS_URLS"):
        old.check_safe()
    unset.model_copy(update={"encrypt_files": False}).check_safe()  # nothing sealed: no KEK
    # Development (and the test suite's temporary homes) still make one on first use.
    made = Settings(env="development", home=tmp_path / "dev")
    kek_set(made)
    assert (tmp_path / "dev" / KEK_FILE).is_file()


@pytest.mark.parametrize("command", ["worker", "api", "serve"])
def test_a_production_process_without_its_kek_refuses_to_start_naming_it(
    tmp_path: Path, command: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCFLOW_")}
    env.update(
        DOCFLOW_ENV="production",
        DOCFLOW_HOME=str(tmp_path / "home"),
        DOCFLOW_SIGNING_SECRET="p" * 40,
        # Never reached: the settings are refused before any connection.
        DOCFLOW_DATABASE_URL="postgresql+psycopg://docflow_app@127.0.0.1:1/none",
    )
    done = subprocess.run(
        [sys.executable, "-m", "docflow.cli", command],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "DOCFLOW_KEK_URL is not set" in lines[0], done.stderr
    assert not (tmp_path / "home" / KEK_FILE).exists()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _serve(env: dict[str, str], log: Path) -> Iterator[httpx.Client]:
    """`docflow serve` as a real process, until the block ends; a client of its API."""
    port = _free_port()
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "docflow.cli", "serve", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=out,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/healthz", timeout=30)
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        # A loaded machine answers a first request slowly (imports, migrations): no 5 s default.
        with httpx.Client(base_url=base, timeout=60) as client:
            yield client
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            raise


def _upload_url(api: httpx.Client, token: str) -> str:
    headers = {"Authorization": f"Bearer {token}"}
    project = api.post("/v1/projects", json={"name": "P"}, headers=headers).json()
    workflow = api.post(
        f"/v1/projects/{project['id']}/workflows", json=workflow_body(), headers=headers
    ).json()
    document = {"name": "a.pdf", "content_type": "application/pdf", "size": len(PDF)}
    body = {"project_id": project["id"], "workflow_id": workflow["id"], "documents": [document]}
    created = api.post("/v1/batches", json=body, headers=headers)
    assert created.status_code == 202, created.text
    return str(created.json()["documents"][0]["upload_url"])


@pytest.mark.slow
def test_two_development_serves_sign_with_one_generated_secret(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCFLOW_")}
    env.update(DOCFLOW_HOME=str(home))
    with _serve(env, tmp_path / "first.log") as api:
        engine = db.make_engine(f"sqlite:///{home / 'docflow.db'}")
        try:
            tenant = make_api_tenant(db.make_write_session_factory(engine), "Secret")
        finally:
            engine.dispose()
        url = _upload_url(api, tenant.token)
    secret = (home / SECRET_FILE).read_text().strip()
    assert _mode(home / SECRET_FILE) == 0o600
    token = url.split(UPLOAD_PATH, 1)[1]
    assert verify_upload(secret, token, now=int(time.time())).content_type == "application/pdf"
    with pytest.raises(InvalidUploadToken):
        verify_upload(PLACEHOLDER_SECRET, token, now=int(time.time()))

    # A second run on the same home accepts the first run's upload URL: the same secret.
    with _serve(env, tmp_path / "second.log") as api:
        path = url[url.index(UPLOAD_PATH) :]  # the first run listened on another port
        put = api.put(path, content=PDF, headers={"Content-Type": "application/pdf"})
        assert put.status_code == 200, put.text
    assert (home / SECRET_FILE).read_text().strip() == secret
    first, second = (tmp_path / "first.log").read_text(), (tmp_path / "second.log").read_text()
    assert "secret.generated" in first and "secret.generated" not in second
    assert secret not in first + second


def _documented_settings() -> set[str]:
    """The names in the first column of the settings table (`HOST`, `PORT` rows name two)."""
    text = OPERATIONS.read_text()
    table = text[text.index("## Settings") :].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in table.splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([A-Z0-9_]+)`", line.split("|")[1]))
    return names


def test_every_setting_is_in_the_operations_settings_table() -> None:
    fields = {name.upper() for name in Settings.model_fields}
    documented = _documented_settings()
    assert fields - documented == set(), "add these to the table in docs/operations.md"
    assert documented - fields == set(), "the table in docs/operations.md names unknown settings"


API = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def _limits_table() -> list[tuple[str, str]]:
    """(setting, documented default) of each row of api.md's limits table that names a setting."""
    text = API.read_text()
    table = text[text.index("## Limits and their settings") :].split("\n## ", 1)[0]
    rows = []
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 4 and (named := re.fullmatch(r"`DOCFLOW_([A-Z0-9_]+)`", cells[2])):
            rows.append((named.group(1).lower(), cells[1]))
    return rows


def test_the_api_limits_table_states_the_settings_defaults() -> None:
    rows = _limits_table()
    assert len(rows) >= 15, rows
    for name, documented in rows:
        number = re.match(r"\d+(\.\d+)?", documented)
        assert number is not None, f"{name}: no default in {documented!r}"
        # The declared default, whatever the environment of the test run sets.
        assert float(number.group()) == Settings.model_fields[name].default, (name, documented)


def test_an_openid_connect_issuer_must_be_https_with_a_client_id_and_openid() -> None:
    ok = Settings(console_oidc_issuer="https://sso.example/realms/a", console_oidc_client_id="c")
    assert ok.console_oidc_scopes == "openid email profile"
    assert Settings(console_oidc_issuer="http://127.0.0.1:9/x", console_oidc_client_id="c")
    for bad, message in (
        ({"console_oidc_issuer": "http://sso.example", "console_oidc_client_id": "c"}, "https"),
        ({"console_oidc_issuer": "https://sso.example"}, "client_id is required"),
        (
            {
                "console_oidc_issuer": "https://sso.example",
                "console_oidc_client_id": "c",
                "console_oidc_scopes": "email",
            },
            "must include openid",
        ),
    ):
        with pytest.raises(ValueError, match=message):
            Settings(**bad)
    assert not Settings().console_oidc_issuer  # unset: no OpenID Connect sign-in
