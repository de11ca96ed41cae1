"""The gap-fill's configuration, from the settings: provider, a model per tier, prices,
timeouts, the context budget, the cache's lifetime and the monthly budgets.

`LlmConfig.from_settings` is called where the settings are (the steps receive the
process's settings); everything below takes an `LlmConfig`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from docflow.config import Settings
from docflow.llm.provider import Provider, ProviderError

TIERS = ("simple", "standard", "complex")
MILLION = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens."""

    input: Decimal
    cached_input: Decimal
    output: Decimal


@dataclass(frozen=True)
class LlmConfig:
    provider: str = "none"
    base_url: str = ""
    api_key: str = ""
    region: str = "us-east-1"
    models: dict[str, str] = field(default_factory=dict)  # tier -> model ("" unset)
    prices: dict[str, Price] = field(default_factory=dict)
    timeout_seconds: float = 30.0
    max_attempts: int = 3
    context_tokens: int = 600
    cache_ttl_seconds: int = 24 * 3600
    monthly_calls: dict[str, int] = field(default_factory=dict)  # plan -> calls

    @classmethod
    def from_settings(cls, settings: Settings) -> LlmConfig:
        return cls(
            provider=settings.llm_provider,
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key,
            region=settings.llm_region,
            models={
                "simple": settings.llm_model_simple,
                "standard": settings.llm_model_standard,
                "complex": settings.llm_model_complex,
            },
            prices={
                model: Price(*(Decimal(str(v)) for v in values))
                for model, values in settings.llm_prices.items()
            },
            timeout_seconds=settings.llm_timeout_seconds,
            max_attempts=settings.llm_max_attempts,
            context_tokens=settings.llm_context_tokens,
            cache_ttl_seconds=settings.llm_cache_ttl_seconds,
            monthly_calls=dict(settings.llm_monthly_calls),
        )

    @property
    def enabled(self) -> bool:
        return self.provider != "none" and any(self.models.values())

    def model(self, tier: str) -> str:
        """The model of `tier`; an unset tier takes the next one up, then the next down."""
        index = TIERS.index(tier)
        for candidate in (*TIERS[index:], *reversed(TIERS[:index])):
            if self.models.get(candidate):
                return self.models[candidate]
        raise ValueError("no model is configured for any tier")

    def cost(self, model: str, *, input_tokens: int, cached_tokens: int, output: int) -> Decimal:
        """The call's cost in USD by the price table (0 for a model without a price)."""
        price = self.prices.get(model)
        if price is None:
            return Decimal(0)
        fresh = max(0, input_tokens - cached_tokens)
        total = fresh * price.input + cached_tokens * price.cached_input + output * price.output
        return (total / MILLION).quantize(Decimal("0.000001"))


def cheaper(tier: str) -> str:
    """The tier below `tier` (verifying a value costs less than finding one)."""
    return TIERS[max(0, TIERS.index(tier) - 1)]


_providers: dict[tuple[Any, ...], Provider] = {}
_lock = threading.Lock()


def provider_for(config: LlmConfig) -> Provider:
    """The process's client for `config` (made once: clients pool their connections)."""
    key = (config.provider, config.base_url, config.api_key, config.region, config.timeout_seconds)
    with _lock:
        if key not in _providers:
            _providers[key] = _make(config)
        return _providers[key]


def _make(config: LlmConfig) -> Provider:
    try:
        return _client(config)
    except ValueError:
        raise
    except Exception as e:  # a client the library refuses to build: no call can be made
        raise ProviderError(f"the {config.provider} client could not be set up ({e})") from e


def _client(config: LlmConfig) -> Provider:
    from docflow.llm import clients

    if config.provider == "openai":
        return clients.OpenAICompatible(
            base_url=config.base_url, api_key=config.api_key, timeout=config.timeout_seconds
        )
    if config.provider == "anthropic":
        return clients.AnthropicMessages(
            base_url=config.base_url, api_key=config.api_key, timeout=config.timeout_seconds
        )
    if config.provider == "bedrock":
        return clients.BedrockConverse(
            base_url=config.base_url, region=config.region, timeout=config.timeout_seconds
        )
    raise ValueError(f"no language-model provider {config.provider!r}")
