"""The example alert rules and dashboard in deploy/ only name metrics docflow exports, with
labels those metrics have: a renamed metric must not leave them silently empty."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
# A metric name in a PromQL expression, with its optional {label matchers}.
SELECTOR = re.compile(r"\b(docflow_[a-z_]+)(\{[^}]*\})?")
SUFFIXES = ("_bucket", "_sum", "_count", "_total", "_created")


def exported(client: TestClient) -> dict[str, set[str]]:
    """Every family `/metrics` declares, by name, with the label names of its samples."""
    text = client.get("/metrics").text
    families: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        labels = families.setdefault(family.name, set())
        for sample in family.samples:
            labels.update(k for k in sample.labels if k != "le")
    return families


def family_of(name: str, families: dict[str, set[str]]) -> str | None:
    if name in families:
        return name
    for suffix in SUFFIXES:
        if name.endswith(suffix) and name.removesuffix(suffix) in families:
            return name.removesuffix(suffix)
    return None


def expressions() -> list[str]:
    rules = yaml.safe_load((DEPLOY / "prometheus-alerts.yml").read_text())
    found = [rule["expr"] for group in rules["groups"] for rule in group["rules"]]
    dashboard = json.loads((DEPLOY / "grafana-dashboard.json").read_text())
    found += [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    return found


def test_every_metric_in_deploy_is_exported_with_its_labels(client: TestClient) -> None:
    # The counters and histograms with labels show only once observed; declare one of each.
    from docflow.observability import metrics

    metrics.DOCUMENTS.labels(status="FAILED", code="internal_error")
    metrics.STEP_DURATION.labels("document.extract", "ok")
    metrics.STAGE_DURATION.labels("read", "tesseract")
    metrics.WEBHOOK_ATTEMPTS.labels(outcome="delivered")
    metrics.DEAD_LETTERS.labels(consumer="webhooks")
    client.get("/healthz")
    families = exported(client)
    checked = 0
    for expr in expressions():
        for name, matchers in SELECTOR.findall(expr):
            family = family_of(name, families)
            assert family is not None, f"{name} (in {expr!r}) is not exported"
            used = set(re.findall(r"(\w+)\s*=~?", matchers))
            grouped = set(re.findall(r"by \(([^)]*)\)", expr))
            labels = used | {g.strip() for gs in grouped for g in gs.split(",")} - {"le"}
            # Gauges read from the database may have no sample yet in this database.
            if families[family]:
                assert labels <= families[family], (expr, labels, families[family])
            checked += 1
    assert checked >= 20
