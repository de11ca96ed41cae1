"""A tenant swapping its watched folder's files for symbolic links, in a tight loop, while polls
run: links to the installation's key-encryption key, and a sub-folder swapped for a link to
another tenant's folder. No stored document ever holds the key's bytes or the other tenant's
file; once the swapping stops, every file of the folder is taken whole.

Before the reads went through no-follow opens checked against the scan, about two documents in
five held the key or the other tenant's PDF.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.api_fixtures import post_project, post_workflow
from support.dbos_fixtures import (
    DbosEnv,
    Setup,
    documents,
    invoice_pdf,
    launched_env,
    wait_terminal,
)
from support.sources_fixtures import create_source, poll_source

ROUNDS = 6
FILES = 4


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DbosEnv]:
    tmp = tmp_path_factory.mktemp("link-swap")
    with launched_env(
        tmp, home=tmp / "home", sources_root=tmp / "watched", sources_settle_seconds=0
    ) as env:
        yield env


def _setup(env: DbosEnv) -> Setup:
    tenant = env.tenant()
    project = post_project(env.client, tenant)
    workflow = post_workflow(env.client, tenant, project["id"])
    return Setup(env, tenant, project["id"], workflow["id"])


def _folder(s: Setup, name: str) -> Path:
    root = s.env.settings.sources_root
    assert root is not None
    folder = root / s.tenant.tenant_id / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# Run in a process of its own, as a tenant's would be (a thread would take turns with the
# poll under the interpreter lock). Stops, every file and folder back in place, once `stop`
# exists; prints how many rounds it swapped.
_SWAPPER = """
import json, os, sys, time
files, secret, sub, elsewhere, stop = json.loads(sys.argv[1])
hidden = os.path.join(os.path.dirname(sub), ".sub-real")
def aside(f, prefix):
    d, n = os.path.split(f)
    return os.path.join(d, prefix + n)
rounds = 0
while not os.path.exists(stop):
    for f in files:
        os.symlink(secret, aside(f, ".link-"))
        os.replace(aside(f, ".link-"), f)
    os.rename(sub, hidden)
    os.symlink(elsewhere, sub)
    time.sleep(0.002)
    os.unlink(sub)
    os.rename(hidden, sub)
    for f in files:
        os.link(aside(f, ".orig-"), aside(f, ".copy-"))
        os.replace(aside(f, ".copy-"), f)
    time.sleep(0.002)
    rounds += 1
print(rounds)
"""


@contextlib.contextmanager
def swapping(files: list[Path], secret: Path, sub: Path, elsewhere: Path) -> Iterator[None]:
    """Swap every file of `files` for a link to `secret` and back (the original kept under a
    hidden hard link), and the folder `sub` for a link to `elsewhere` and back, in a tight
    loop in another process, until the block ends."""
    for f in files:
        os.link(f, f.with_name(f".orig-{f.name}"))
    stop = sub.parent / ".stop"
    args = json.dumps([[str(f) for f in files], str(secret), str(sub), str(elsewhere), str(stop)])
    swapper = subprocess.Popen(
        [sys.executable, "-c", _SWAPPER, args], stdout=subprocess.PIPE, text=True
    )
    try:
        yield
    finally:
        stop.touch()
        out, _ = swapper.communicate(timeout=30)
        stop.unlink()
        for f in files:
            f.with_name(f".orig-{f.name}").unlink()
    assert int(out) > 0


def _stored(s: Setup, batch_id: str) -> list[tuple[dict[str, object], bytes]]:
    wait_terminal(s, batch_id)
    out = []
    for doc in documents(s, batch_id):
        body = b""
        if doc["sha256"] is not None:
            answer = s.env.client.get(f"/v1/documents/{doc['id']}/file", headers=s.tenant.headers)
            assert answer.status_code == 200
            body = answer.content
        out.append((doc, body))
    return out


def test_links_swapped_in_while_polls_run_never_leak_a_key_or_another_tenants_file(
    env: DbosEnv,
) -> None:
    s, other = _setup(env), _setup(env)
    theirs = invoice_pdf("INV-9999", "999.00")
    elsewhere = _folder(other, "private")
    for i in range(FILES):
        (elsewhere / f"n{i}.pdf").write_bytes(theirs)
    folder = _folder(s, "inbox")
    (folder / "warm.pdf").write_bytes(invoice_pdf("INV-1000", "1.00"))
    source = create_source(s, "inbox")
    stored = _stored(s, poll_source(s, source["id"])["batch_id"])  # makes the KEK file
    kek = Path(env.settings.resolved_kek_url().removeprefix("file://"))
    secret = kek.read_bytes()
    assert len(secret) > 20

    expected: set[str] = {hashlib.sha256(invoice_pdf("INV-1000", "1.00")).hexdigest()}
    (folder / "sub").mkdir()
    for round_ in range(ROUNDS):
        files = []
        for i in range(FILES):
            data = invoice_pdf(f"INV-{2000 + 10 * round_ + i}", f"{round_}.{i:02}")
            where = folder / "sub" if i % 2 else folder
            (where / f"n{i}.pdf").write_bytes(data)
            files.append(where / f"n{i}.pdf")
            expected.add(hashlib.sha256(data).hexdigest())
        with swapping(files, kek, folder / "sub", elsewhere):
            for _ in range(2):
                run = poll_source(s, source["id"])
                if run["batch_id"]:
                    stored += _stored(s, run["batch_id"])
        # Once still, the round's files are taken whole (the rest of what was skipped).
        for _ in range(2):
            run = poll_source(s, source["id"])
            if run["batch_id"]:
                stored += _stored(s, run["batch_id"])
        for f in files:
            f.unlink()  # the next round's files are new ones under the same names

    leaked = [
        doc["name"]
        for doc, body in stored
        if secret in body or body == theirs or doc["sha256"] == hashlib.sha256(theirs).hexdigest()
    ]
    assert leaked == []
    # Every file stored is one of the folder's, whole, and every one of them was stored.
    assert {str(doc["sha256"]) for doc, _ in stored if doc["sha256"]} == expected
    refused = {str(doc["error_code"]) for doc, _ in stored if not doc["sha256"]}
    assert refused <= {"source_changed", "not_uploaded"}
