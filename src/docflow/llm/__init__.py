"""Language-model gap-fill: the fields OCR left missing or weak, asked of a provider.

`config` (settings to tiers, models and prices), `provider` (the protocol, its values, the
retry of transient errors) and `clients` (OpenAI-compatible servers, Anthropic, Bedrock,
through their own client libraries); the pure parts: `context` (which lines of a document are
sent), `prompt` (the stable prefix, the request, the answer's JSON schema) and `grounding`
(a value is accepted as it is only when the document's text holds it); `models`,
`repository` and `service` (the result cache, the cost ledger and the monthly budgets);
`api` (`GET /v1/usage/llm`).
"""
