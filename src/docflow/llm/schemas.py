"""What `GET /v1/usage/llm` answers."""

from __future__ import annotations

from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field


class LlmUsageRow(BaseModel):
    """The calls of one UTC day and model: cache hits among them, tokens and cost."""

    model_config = ConfigDict(from_attributes=True)

    day: str = Field(description="YYYY-MM-DD, UTC")
    model: str
    provider: str
    calls: int = Field(description="ledger rows: provider calls and answers served from the cache")
    cache_hits: int
    input_tokens: int = Field(description="every prompt token, cached ones included")
    cached_tokens: int = Field(description="prompt tokens the provider read from its cache")
    output_tokens: int
    cost: Decimal = Field(description="USD, by the price table in force when each call was made")


class LlmUsage(BaseModel):
    items: list[LlmUsageRow]
    calls: int
    cache_hits: int
    cost: Decimal
