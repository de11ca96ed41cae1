"""The three providers, each through its vendor's client library, none retrying by itself
(`provider.call_with_retries` does, so every attempt is seen and counted).

- `OpenAICompatible`: the chat-completions protocol, with a JSON-schema response format; any
  base URL (OpenAI itself, or Ollama, vLLM, llama.cpp, LM Studio, which speak it). OpenAI
  caches a stable prompt prefix by itself and reports it as `cached_tokens`.
- `AnthropicMessages`: the messages protocol; the answer is a forced tool call whose input
  schema is the fields' schema, and the prefix is a system block marked `cache_control`.
- `BedrockConverse`: AWS Bedrock's Converse API through boto3, the same forced tool call,
  the prefix followed by a `cachePoint`; AWS credentials from boto3's usual chain.

Whatever a library raises during a call comes out as `ProviderError` (or `TransientError`):
a provider's failure leaves a document's fields as OCR found them, it never fails the document.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import boto3
import openai
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from docflow.llm.provider import Answer, Prompt, ProviderError, TransientError, Usage

TOOL = "record_fields"
TOOL_DESCRIPTION = "Record the values of the requested fields, null for a field not printed."
_BEDROCK_TRANSIENT = {
    "ThrottlingException",
    "ServiceUnavailableException",
    "InternalServerException",
    "ModelNotReadyException",
    "ModelTimeoutException",
}


class OpenAICompatible:
    name = "openai"

    def __init__(self, *, base_url: str, api_key: str, timeout: float) -> None:
        self._client = openai.OpenAI(
            base_url=base_url or None,
            api_key=api_key or "none",  # local servers take any key; the library needs one
            timeout=timeout,
            max_retries=0,
        )

    def complete(self, prompt: Prompt, *, model: str) -> Answer:
        try:
            response = self._client.chat.completions.create(
                model=model,
                messages=[
                    {"role": "system", "content": prompt.prefix},
                    {"role": "user", "content": prompt.request},
                ],
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": TOOL, "schema": prompt.schema, "strict": True},
                },
                max_tokens=prompt.max_output_tokens,
                temperature=0,
            )
        except (openai.RateLimitError, openai.InternalServerError, openai.APIConnectionError) as e:
            raise TransientError(f"{type(e).__name__}") from e
        except openai.APIStatusError as e:
            if e.status_code >= 500:
                raise TransientError(f"HTTP {e.status_code}") from e
            raise ProviderError(f"HTTP {e.status_code}") from e
        except Exception as e:  # anything else the library raises: a failed call, not a bug
            raise ProviderError(type(e).__name__) from e
        if not response.choices:
            raise ProviderError("no choice in the answer")
        values = _json_object(response.choices[0].message.content or "")
        usage = response.usage
        cached = 0
        if usage is not None and usage.prompt_tokens_details is not None:
            cached = usage.prompt_tokens_details.cached_tokens or 0
        return Answer(
            values,
            Usage(
                input_tokens=usage.prompt_tokens if usage else 0,
                cached_tokens=cached,
                output_tokens=usage.completion_tokens if usage else 0,
            ),
        )


class AnthropicMessages:
    name = "anthropic"

    def __init__(self, *, base_url: str, api_key: str, timeout: float) -> None:
        self._client = anthropic.Anthropic(
            base_url=base_url or None, api_key=api_key or None, timeout=timeout, max_retries=0
        )

    def complete(self, prompt: Prompt, *, model: str) -> Answer:
        try:
            response = self._client.messages.create(
                model=model,
                max_tokens=prompt.max_output_tokens,
                system=[
                    {"type": "text", "text": prompt.prefix, "cache_control": {"type": "ephemeral"}}
                ],
                messages=[{"role": "user", "content": prompt.request}],
                tools=[
                    {"name": TOOL, "description": TOOL_DESCRIPTION, "input_schema": prompt.schema}
                ],
                tool_choice={"type": "tool", "name": TOOL},
            )
        except (
            anthropic.RateLimitError,
            anthropic.InternalServerError,
            anthropic.APIConnectionError,
        ) as e:
            raise TransientError(type(e).__name__) from e
        except anthropic.APIStatusError as e:
            if e.status_code >= 500:
                raise TransientError(f"HTTP {e.status_code}") from e
            raise ProviderError(f"HTTP {e.status_code}") from e
        except Exception as e:  # e.g. no key configured (a TypeError from the library)
            raise ProviderError(type(e).__name__) from e
        values = next((b.input for b in response.content if b.type == "tool_use"), None)
        if not isinstance(values, dict):
            raise ProviderError("the answer has no tool call")
        u = response.usage
        read = u.cache_read_input_tokens or 0
        written = u.cache_creation_input_tokens or 0
        return Answer(
            dict(values),
            Usage(
                input_tokens=u.input_tokens + read + written,
                cached_tokens=read,
                output_tokens=u.output_tokens,
            ),
        )


class BedrockConverse:
    name = "bedrock"

    def __init__(self, *, base_url: str, region: str, timeout: float) -> None:
        config = Config(
            connect_timeout=timeout,
            read_timeout=timeout,
            retries={"total_max_attempts": 1, "mode": "standard"},
        )
        self._client: Any = boto3.client(
            "bedrock-runtime", region_name=region, endpoint_url=base_url or None, config=config
        )

    def complete(self, prompt: Prompt, *, model: str) -> Answer:
        try:
            response = self._client.converse(
                modelId=model,
                system=[{"text": prompt.prefix}, {"cachePoint": {"type": "default"}}],
                messages=[{"role": "user", "content": [{"text": prompt.request}]}],
                toolConfig={
                    "tools": [
                        {
                            "toolSpec": {
                                "name": TOOL,
                                "description": TOOL_DESCRIPTION,
                                "inputSchema": {"json": prompt.schema},
                            }
                        }
                    ],
                    "toolChoice": {"tool": {"name": TOOL}},
                },
                inferenceConfig={"maxTokens": prompt.max_output_tokens, "temperature": 0},
            )
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
            if code in _BEDROCK_TRANSIENT or status == 429 or status >= 500:
                raise TransientError(code or f"HTTP {status}") from e
            raise ProviderError(code or f"HTTP {status}") from e
        except BotoCoreError as e:  # timeouts, refused connections
            raise TransientError(type(e).__name__) from e
        except Exception as e:  # anything else the library raises: a failed call
            raise ProviderError(type(e).__name__) from e
        content = response.get("output", {}).get("message", {}).get("content", [])
        values = next((c["toolUse"]["input"] for c in content if "toolUse" in c), None)
        if not isinstance(values, dict):
            raise ProviderError("the answer has no tool call")
        u = response.get("usage", {})
        read = int(u.get("cacheReadInputTokens", 0))
        written = int(u.get("cacheWriteInputTokens", 0))
        return Answer(
            values,
            Usage(
                input_tokens=int(u.get("inputTokens", 0)) + read + written,
                cached_tokens=read,
                output_tokens=int(u.get("outputTokens", 0)),
            ),
        )


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as e:
        raise ProviderError("the answer is not JSON") from e
    if not isinstance(value, dict):
        raise ProviderError("the answer is not a JSON object")
    return value
