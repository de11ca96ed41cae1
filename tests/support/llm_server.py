"""A language-model server on 127.0.0.1 for tests and the bench: the OpenAI chat-completions
protocol (`POST /v1/chat/completions`), the Anthropic messages protocol (`POST /v1/messages`)
and Bedrock's Converse API (`POST /model/{model}/converse`), so the vendors' own client
libraries talk to it over the wire.

Its answers are computed from the prompt it receives, and only from the lines it is sent:
it reads the field definitions in the prompt's prefix (`- name (type): description Labels:
"A", "B".`), the asked fields from the answer's schema and the document lines from the
request (`[p1] text`), then for each field:
- a date: the first date printed on a line holding one of its labels, else on any line;
- an amount (money, decimal, integer): the last amount on the first line holding a label
  (case- and spacing-insensitive), or on the line under it when that line has none;
- text: what follows the label on its line (or the line under it); a field described as
  "the first printed line" is the first line sent;
- otherwise null. Nothing is ever invented: a value not in the lines sent is null.

With an `Oracle` in its state (the bench's mode) it answers instead each asked field's
labelled true value, and only when that value is present in the lines sent (`present`): a
date or an amount as printed on a line (a span that parses, by the field's type and the
oracle's date order, to the label's value, as the evaluation compares them), a text when
the gap-fill's own grounding finds the label's text in the lines (OCR-tolerant), answered
as labelled; otherwise null.

Tokens are counted as four characters each (at least one a message part). A prefix seen
before by the same model is reported as cached: OpenAI's `cached_tokens`, Anthropic's and
Bedrock's cache reads when the request marks it (`cache_control`, `cachePoint`), else a cache
write. `faults` injects failures, one per request in order: "429", "500" or "timeout" (the
answer waits `slow_seconds`); `down` answers 503 to everything; `answers` fixes a field's
answer whatever the lines say (an invented value, or another printed value than the
engine's); `delay_seconds` slows every answer (two askers at once, in the fault tests).
"""

from __future__ import annotations

import collections
import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from docflow.evaluation.compare import compare_value
from docflow.extraction.definition import DateOrder, FieldType
from docflow.extraction.fields.values import parse_value
from docflow.llm.context import Line
from docflow.llm.grounding import GROUNDED_SCORE, ground
from support.http_server import serving

_FIELD = re.compile(r"^- ([a-z][a-z0-9_]*) \(([a-z_]+)[^)]*\): (.*?) Labels: (.*)\.$")
_LINE = re.compile(r"^\[p(\d+)\] (.*)$")
_SPAN_WORDS = 3  # a printed date or amount is at most three words: "15 Jan 2018", "RM 55.10"
_DATE = re.compile(r"\d{1,4}\s?[/.\-]\s?(?:\d{1,2}|[A-Za-z]{3,9})\s?[/.\-]\s?\d{2,4}")
_AMOUNT = re.compile(r"-?\d[\d,]*[.,]\d{2}(?!\d)")
AMOUNTS = {"money", "decimal", "integer"}


@dataclass
class FieldInfo:
    type: str
    description: str
    labels: list[str]


@dataclass(frozen=True)
class Oracle:
    """The labelled truth of the document being read: each field's value as labelled."""

    truth: dict[str, str]
    date_order: DateOrder = DateOrder.DAY_FIRST


@dataclass
class ModelState:
    """What the server saw and will do: requests by protocol, prefixes seen, faults."""

    faults: collections.deque[str] = field(default_factory=collections.deque)
    down: bool = False
    slow_seconds: float = 2.0
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    oracle: Oracle | None = None
    # Fixed answers by field name, whatever the lines say (a model that invents, or that
    # reads another value than the engine); `delay_seconds` before every answer.
    answers: dict[str, str | None] = field(default_factory=dict)
    delay_seconds: float = 0.0

    def calls(self, protocol: str | None = None) -> int:
        return sum(1 for p, _ in self.requests if protocol in (None, p))


def tokens(text: str) -> int:
    return len(text) // 4 + 1


def parse_fields(prefix: str) -> dict[str, FieldInfo]:
    fields = {}
    for line in prefix.splitlines():
        match = _FIELD.match(line.strip())
        if match:
            labels = json.loads("[" + match.group(4) + "]")
            fields[match.group(1)] = FieldInfo(match.group(2), match.group(3), labels)
    return fields


def parse_lines(request: str) -> list[str]:
    return [m.group(2) for line in request.splitlines() if (m := _LINE.match(line))]


def answer(
    prefix: str, request: str, asked: list[str], oracle: Oracle | None = None
) -> dict[str, str | None]:
    """The deterministic answer: each asked field's value from the lines sent, or null."""
    fields, lines = parse_fields(prefix), parse_lines(request)
    if oracle is not None:
        sent = [
            Line(int(m.group(1)), m.group(2), (0.0, 0.0, 0.0, 0.0))
            for line in request.splitlines()
            if (m := _LINE.match(line))
        ]
        return {
            name: _truth(name, fields.get(name), oracle, sent) if name in oracle.truth else None
            for name in asked
        }
    return {name: _value(fields.get(name), lines) for name in asked}


def _truth(name: str, info: FieldInfo | None, oracle: Oracle, lines: list[Line]) -> str | None:
    if info is None:
        return None
    kind = FieldType(info.type)
    return present(name, kind, oracle.truth[name], lines, date_order=oracle.date_order)


def present(
    name: str,
    kind: FieldType,
    truth: str,
    lines: list[Line],
    *,
    date_order: DateOrder = DateOrder.DAY_FIRST,
) -> str | None:
    """The text to answer for a field whose labelled value is `truth` when that value is
    present in `lines`, else None: a date or an amount as printed (a span of a line that
    parses to the label's value), a text as labelled when grounding finds it in the lines."""
    if kind not in AMOUNTS and kind != FieldType.DATE:
        score, _window = ground(truth, lines)
        return truth if score >= GROUNDED_SCORE else None
    for line in lines:
        for span in _spans(line.text, kind):
            parsed = parse_value(kind, span, date_order=date_order)
            if parsed.ok and compare_value(name, kind, truth, str(parsed.value)).correct:
                return span
    return None


def _spans(text: str, kind: FieldType) -> list[str]:
    """The printed dates or amounts of a line (its pattern's matches), then every run of up
    to `_SPAN_WORDS` words."""
    spans: list[str] = (_DATE if kind == FieldType.DATE else _AMOUNT).findall(text)
    words = text.split()
    for size in range(1, _SPAN_WORDS + 1):
        spans += [" ".join(words[i : i + size]) for i in range(len(words) - size + 1)]
    return [s for s in spans if any(c.isdigit() for c in s)]


def _value(info: FieldInfo | None, lines: list[str]) -> str | None:
    if info is None or not lines:
        return None
    labelled = [i for i, line in enumerate(lines) if _label_at(line, info.labels) is not None]
    if info.type == "date":
        for line in [lines[i] for i in labelled] + lines:
            if match := _DATE.search(line):
                return match.group(0)
        return None
    if labelled:
        i = labelled[0]
        rest = lines[i][_label_at(lines[i], info.labels) or 0 :].strip(" :#-")
        below = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if info.type in AMOUNTS:
            amounts = _AMOUNT.findall(rest) or _AMOUNT.findall(below)
            return amounts[-1] if amounts else None
        return rest or below or None
    if info.type not in AMOUNTS and "first printed line" in info.description.lower():
        return lines[0]
    return None


def _label_at(line: str, labels: list[str]) -> int | None:
    """The end of the first label found in `line` (case-insensitive), None without one."""
    for label in sorted(labels, key=len, reverse=True):
        # case and spacing as OCR prints them: "TOTAL", "Tot al"
        spaced = r"\s*".join(re.escape(c) for c in label if not c.isspace())
        match = re.search(spaced, line, flags=re.IGNORECASE)
        if match:
            return match.end()
    return None


class _Handler(BaseHTTPRequestHandler):
    state: ModelState

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path == "/v1/chat/completions":
            protocol = "openai"
        elif self.path == "/v1/messages":
            protocol = "anthropic"
        elif self.path.startswith("/model/") and self.path.endswith("/converse"):
            protocol = "bedrock"
            body["modelId"] = self.path.split("/")[2]
        else:
            self._send(404, {"error": "no such route"})
            return
        with self.state.lock:
            self.state.requests.append((protocol, body))
            fault = self.state.faults.popleft() if self.state.faults else ""
            down = self.state.down
        if down or fault in ("429", "500"):
            self._error(protocol, 503 if down else int(fault))
            return
        if fault == "timeout":
            time.sleep(self.state.slow_seconds)
        time.sleep(self.state.delay_seconds)
        self._send(200, getattr(self, f"_{protocol}")(body))

    def _error(self, protocol: str, status: int) -> None:
        kinds = {429: "ThrottlingException", 500: "InternalServerException"}
        kind = kinds.get(status, "ServiceUnavailableException")
        headers = {"x-amzn-ErrorType": kind} if protocol == "bedrock" else {}
        if protocol == "anthropic":
            body = {"type": "error", "error": {"type": "rate_limit_error", "message": kind}}
        else:
            body = {"error": {"message": kind, "type": kind}, "message": kind}
        self._send(status, body, headers)

    def _cached(self, model: str, prefix: str) -> bool:
        key = hashlib.sha256(f"{model}\x00{prefix}".encode()).hexdigest()
        with self.state.lock:
            seen = key in self.state.seen
            self.state.seen.add(key)
        return seen

    def _values(self, prefix: str, request: str, asked: list[str]) -> dict[str, str | None]:
        values = answer(prefix, request, asked, self.state.oracle)
        fixed = self.state.answers
        return {name: fixed[name] if name in fixed else values[name] for name in asked}

    def _openai(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        prefix = next(m["content"] for m in messages if m["role"] == "system")
        request = next(m["content"] for m in messages if m["role"] == "user")
        schema = body["response_format"]["json_schema"]["schema"]
        values = self._values(prefix, request, list(schema["properties"]))
        content = json.dumps(values)
        cached = tokens(prefix) if self._cached(body["model"], prefix) else 0
        prompt = tokens(prefix) + tokens(request)
        return {
            "id": f"chatcmpl-{len(self.state.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": tokens(content),
                "total_tokens": prompt + tokens(content),
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }

    def _anthropic(self, body: dict[str, Any]) -> dict[str, Any]:
        system = body["system"]
        blocks = system if isinstance(system, list) else [{"type": "text", "text": system}]
        prefix = "".join(b["text"] for b in blocks)
        marked = any("cache_control" in b for b in blocks)
        request = body["messages"][0]["content"]
        tool = body["tools"][0]
        values = self._values(prefix, request, list(tool["input_schema"]["properties"]))
        usage = {"input_tokens": tokens(request), "output_tokens": tokens(json.dumps(values))}
        usage["cache_read_input_tokens"] = usage["cache_creation_input_tokens"] = 0
        if not marked:
            usage["input_tokens"] += tokens(prefix)
        elif self._cached(body["model"], prefix):
            usage["cache_read_input_tokens"] = tokens(prefix)
        else:
            usage["cache_creation_input_tokens"] = tokens(prefix)
        return {
            "id": f"msg_{len(self.state.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": tool["name"], "input": values}
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": usage,
        }

    def _bedrock(self, body: dict[str, Any]) -> dict[str, Any]:
        prefix = "".join(b.get("text", "") for b in body["system"])
        marked = any("cachePoint" in b for b in body["system"])
        request = "".join(c.get("text", "") for c in body["messages"][0]["content"])
        spec = body["toolConfig"]["tools"][0]["toolSpec"]
        values = self._values(prefix, request, list(spec["inputSchema"]["json"]["properties"]))
        usage = {"inputTokens": tokens(request), "outputTokens": tokens(json.dumps(values))}
        usage["cacheReadInputTokens"] = usage["cacheWriteInputTokens"] = 0
        if not marked:
            usage["inputTokens"] += tokens(prefix)
        elif self._cached(body["modelId"], prefix):
            usage["cacheReadInputTokens"] = tokens(prefix)
        else:
            usage["cacheWriteInputTokens"] = tokens(prefix)
        usage["totalTokens"] = sum(usage.values())
        return {
            "output": {
                "message": {
                    "role": "assistant",
                    "content": [
                        {"toolUse": {"toolUseId": "t1", "name": spec["name"], "input": values}}
                    ],
                }
            },
            "stopReason": "tool_use",
            "usage": usage,
            "metrics": {"latencyMs": 1},
        }

    def _send(
        self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


@dataclass
class ModelServer:
    url: str
    state: ModelState


@contextmanager
def serving_model() -> Iterator[ModelServer]:
    """The server on a free port of 127.0.0.1 until the block ends."""
    state = ModelState()
    handler = type("ModelHandler", (_Handler,), {"state": state})
    with serving(handler) as server:
        host, port = server.server_address[:2]
        yield ModelServer(f"http://{host}:{port}", state)
