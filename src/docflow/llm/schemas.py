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
    calls: int = Field(
        description="calls made to the provider (failed ones included): what the monthly "
        "budget counts"
    )
    cache_hits: int = Field(description="answers served from the result cache (no call)")
    input_tokens: int = Field(description="every prompt token, cached ones included")
    cached_tokens: int = Field(description="prompt tokens the provider read from its cache")
    output_tokens: int
    cost: Decimal = Field(description="USD, by the price table in force when each call was made")


class LlmUsage(BaseModel):
    items: list[LlmUsageRow]
    calls: int = Field(description="calls made to the provider over the rows")
    cache_hits: int = Field(description="answers served from the result cache over the rows")
    cost: Decimal
