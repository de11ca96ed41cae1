"""Each provider through its vendor's client library, over the wire, against the local
model server: structured answers, token usage with the cached prefix, retries and timeouts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from docflow.extraction.definition import ExtractionWorkflowDefinition
from docflow.llm.clients import AnthropicMessages, BedrockConverse, OpenAICompatible
from docflow.llm.context import EXTRACT, Gap, Line
from docflow.llm.prompt import build
from docflow.llm.provider import Provider, ProviderError, TransientError, call_with_retries
from support.llm_server import ModelServer, serving_model

DEFINITION = ExtractionWorkflowDefinition.model_validate(
    {
        "name": "receipt",
        "profiles": [],
        "fields": [
            {
                "name": "invoice_number",
                "locators": [{"kind": "label", "labels": ["Invoice No"]}],
            },
            {
                "name": "total",
                "type": "money",
                "locators": [{"kind": "label", "labels": ["Total"]}],
            },
            {"name": "date", "type": "date"},
        ],
    }
)
LINES = (
    Line(1, "ACME SUPPLIES SDN BHD", (0.1, 0.05, 0.6, 0.08)),
    Line(1, "Invoice No: INV-2041", (0.1, 0.1, 0.5, 0.12)),
    Line(1, "Date 12/03/2024", (0.1, 0.14, 0.4, 0.16)),
    Line(1, "Total 55.10", (0.1, 0.5, 0.4, 0.52)),
)
GAPS = tuple(Gap(name, EXTRACT, None, "standard") for name in ("invoice_number", "total", "date"))


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with serving_model() as server:
        yield server


@pytest.fixture(autouse=True)
def _aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


def _provider(kind: str, url: str, timeout: float = 5.0) -> Provider:
    if kind == "openai":
        return OpenAICompatible(base_url=f"{url}/v1", api_key="k", timeout=timeout)
    if kind == "anthropic":
        return AnthropicMessages(base_url=url, api_key="k", timeout=timeout)
    return BedrockConverse(base_url=url, region="eu-west-1", timeout=timeout)


PROTOCOLS = ["openai", "anthropic", "bedrock"]


@pytest.mark.parametrize("kind", PROTOCOLS)
def test_a_structured_answer_from_the_lines_sent(kind: str, model: ModelServer) -> None:
    provider = _provider(kind, model.url)
    answer = provider.complete(build(DEFINITION, GAPS, LINES), model="m-standard")
    assert answer.values == {"invoice_number": "INV-2041", "total": "55.10", "date": "12/03/2024"}
    assert model.state.calls(kind) == 1
    # only what was sent is known: without the total's line, no total
    answer = provider.complete(build(DEFINITION, GAPS, LINES[:3]), model="m-standard")
    assert answer.values["total"] is None


@pytest.mark.parametrize("kind", PROTOCOLS)
def test_the_stable_prefix_is_cached_from_the_second_call(kind: str, model: ModelServer) -> None:
    provider = _provider(kind, model.url)
    prompt = build(DEFINITION, GAPS, LINES)
    first = provider.complete(prompt, model="m")
    second = provider.complete(build(DEFINITION, GAPS[:1], LINES[:2]), model="m")
    assert first.usage.cached_tokens == 0 and first.usage.input_tokens > 0
    assert second.usage.cached_tokens == len(prompt.prefix) // 4 + 1
    assert second.usage.cached_tokens / second.usage.input_tokens > 0.5
    assert second.usage.output_tokens > 0
    _, body = model.state.requests[-1]
    if kind == "anthropic":
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
        assert body["tool_choice"] == {"type": "tool", "name": "record_fields"}
    if kind == "openai":
        assert body["response_format"]["json_schema"]["schema"]["required"] == ["invoice_number"]


@pytest.mark.parametrize("kind", PROTOCOLS)
def test_transient_errors_are_retried_with_backoff(kind: str, model: ModelServer) -> None:
    model.state.faults.extend(["429", "500"])
    waits: list[float] = []
    answer, attempts = call_with_retries(
        _provider(kind, model.url),
        build(DEFINITION, GAPS, LINES),
        model="m",
        attempts=3,
        sleep=waits.append,
    )
    assert attempts == 3 and waits == [0.5, 1.0]
    assert answer.values["total"] == "55.10"
    assert model.state.calls(kind) == 3


@pytest.mark.parametrize("kind", PROTOCOLS)
def test_a_timeout_is_transient(kind: str, model: ModelServer) -> None:
    model.state.faults.append("timeout")
    model.state.slow_seconds = 1.5
    provider = _provider(kind, model.url, timeout=0.3)
    answer, attempts = call_with_retries(
        provider, build(DEFINITION, GAPS, LINES), model="m", attempts=2, sleep=lambda _s: None
    )
    assert attempts == 2 and answer.values["invoice_number"] == "INV-2041"


@pytest.mark.parametrize("kind", PROTOCOLS)
def test_a_provider_that_stays_down_raises_after_the_attempts(
    kind: str, model: ModelServer
) -> None:
    model.state.down = True
    with pytest.raises(TransientError):
        call_with_retries(
            _provider(kind, model.url),
            build(DEFINITION, GAPS, LINES),
            model="m",
            attempts=2,
            sleep=lambda _s: None,
        )
    assert model.state.calls(kind) == 2


def test_a_refused_request_is_not_retried(model: ModelServer) -> None:
    provider = OpenAICompatible(base_url=f"{model.url}/nowhere", api_key="k", timeout=2)
    with pytest.raises(ProviderError) as raised:
        call_with_retries(provider, build(DEFINITION, GAPS, LINES), model="m", attempts=3)
    assert not isinstance(raised.value, TransientError)
    assert raised.value.attempts == 1  # what the ledger records of the call


def test_a_client_without_its_key_fails_the_call_not_the_document(
    model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    provider = AnthropicMessages(base_url=model.url, api_key="", timeout=2)
    with pytest.raises(ProviderError) as raised:
        call_with_retries(provider, build(DEFINITION, GAPS, LINES), model="m", attempts=3)
    assert not isinstance(raised.value, TransientError)
    assert model.state.calls() == 0
