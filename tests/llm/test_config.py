"""The gap-fill's configuration: off by default, a model per tier with fallbacks, the cost of
a call by the price table, and the document flow's extract step asking nothing when off."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from docflow.config import Settings
from docflow.documents.outcome import BatchFacts, Extracted
from docflow.documents.steps import Target, run_engine
from docflow.extraction.definition import ExtractionWorkflowDefinition
from docflow.extraction.limits import EngineLimits
from docflow.extraction.ocr.fake import FakeOcrEngine
from docflow.llm.config import LlmConfig, cheaper
from docflow.storage.local import LocalStorage
from support.api_fixtures import workflow_body
from support.dbos_fixtures import invoice_pdf


def test_off_by_default() -> None:
    config = LlmConfig.from_settings(Settings())
    assert config.provider == "none" and not config.enabled
    # a provider without any model asks nothing either
    assert not LlmConfig.from_settings(Settings(llm_provider="openai")).enabled


def test_an_empty_tier_takes_the_next_one_up_then_down() -> None:
    config = LlmConfig(provider="openai", models={"simple": "", "standard": "s", "complex": ""})
    assert [config.model(t) for t in ("simple", "standard", "complex")] == ["s", "s", "s"]
    config = LlmConfig(provider="openai", models={"simple": "a", "complex": "c"})
    assert [config.model(t) for t in ("simple", "standard", "complex")] == ["a", "c", "c"]
    assert [cheaper(t) for t in ("simple", "standard", "complex")] == [
        "simple",
        "simple",
        "standard",
    ]


def test_prices_come_from_the_settings() -> None:
    settings = Settings(llm_prices={"m": (3, 0.3, 15)})
    config = LlmConfig.from_settings(settings)
    cost = config.cost("m", input_tokens=2_000, cached_tokens=1_000, output=100)
    assert cost == Decimal("0.004800")  # 1000 x 3 + 1000 x 0.3 + 100 x 15, per million
    assert config.cost("unpriced", input_tokens=10**6, cached_tokens=0, output=10**6) == 0


@pytest.mark.parametrize("gap_tokens", [None, 600])
def test_the_extract_step_names_gaps_only_when_a_model_is_configured(
    gap_tokens: int | None, tmp_path: Path
) -> None:
    body = workflow_body()
    body["fields"].append({"name": "po_number", "required": False})
    definition = ExtractionWorkflowDefinition.model_validate(body)
    facts = BatchFacts("prj_1", "wfl_1", 1, definition)
    document = Target("PROCESSING", 2, "bat_1", "a.pdf", "k", facts)
    extracted = run_engine(
        LocalStorage(tmp_path),
        invoice_pdf("INV-1", "10.00"),
        document,
        tenant_id="ten_1",
        document_id="doc_1",
        version=2,
        ocr=FakeOcrEngine(),
        limits=EngineLimits(),
        inline_max_bytes=64 * 1024,
        gap_tokens=gap_tokens,
    )
    assert isinstance(extracted, Extracted)
    if gap_tokens is None:
        assert extracted.gaps is None
    else:
        assert extracted.gaps is not None
        assert [g.name for g in extracted.gaps.gaps] == ["po_number"]
