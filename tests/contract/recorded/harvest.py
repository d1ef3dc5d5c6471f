"""Turn other projects' recordings of real provider traffic into cases of the recorded suite.

Not a test: a maintainer's tool, run by hand over a checkout of a project whose VCR cassettes
(YAML, ``interactions``) hold real answers. For every answer of a route scriptorium serves it
writes one case or a few (a recording with a tool call is also a case of the ``tool`` strategy)
into ``data/<source>.json``: the response (status, content type, body as the cassette keeps it),
its provenance, and the expectation **read from the recording by the providers' documented
formats** (the reading below is written from their API references, not from scriptorium's
adapters, and is never imported by them). Run::

    python -m tests.contract.recorded.harvest CHECKOUT REPO COMMIT LICENCE OUT.json

then read the cases written (``git diff``) before committing them: the expectation is the claim
the suite checks scriptorium against.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any
from urllib.parse import unquote

Case = dict[str, Any]

# --- list prices (USD per million tokens), from the providers' pricing pages --------------------
# input, output, cache read; Anthropic's cache writes are 1.25x input (5 minutes) and 2x (1 hour).
ANTHROPIC_PRICES = {
    "claude-opus-4-5": ("5", "25", "0.50"),
    "claude-opus-4-1": ("15", "75", "1.50"),
    "claude-opus-4": ("15", "75", "1.50"),
    "claude-sonnet-4-5": ("3", "15", "0.30"),
    "claude-sonnet-4-6": ("3", "15", "0.30"),
    "claude-sonnet-4": ("3", "15", "0.30"),
    "claude-3-7-sonnet": ("3", "15", "0.30"),
    "claude-haiku-4-5": ("1", "5", "0.10"),
    "claude-3-5-haiku": ("0.80", "4", "0.08"),
    "claude-3-haiku": ("0.25", "1.25", "0.03"),
}
OPENAI_PRICES = {
    "gpt-5": ("1.25", "10", "0.125"),
    "gpt-5-mini": ("0.25", "2", "0.025"),
    "gpt-5-nano": ("0.05", "0.40", "0.005"),
    "gpt-4.1": ("2", "8", "0.50"),
    "gpt-4.1-mini": ("0.40", "1.60", "0.10"),
    "gpt-4.1-nano": ("0.10", "0.40", "0.025"),
    "gpt-4o": ("2.50", "10", "1.25"),
    "gpt-4o-mini": ("0.15", "0.60", "0.075"),
    "o1": ("15", "60", "7.50"),
    "o3-mini": ("1.10", "4.40", "0.55"),
    "o3": ("2", "8", "0.50"),
    "o4-mini": ("1.10", "4.40", "0.275"),
}
GEMINI_PRICES = {
    "gemini-3-pro-preview": ("2", "12", "0.20"),
    "gemini-3-flash-preview": ("0.50", "3", "0.05"),
    "gemini-2.5-pro": ("1.25", "10", "0.125"),
    "gemini-2.5-flash-lite": ("0.10", "0.40", "0.01"),
    "gemini-2.5-flash": ("0.30", "2.50", "0.03"),
    "gemini-2.0-flash-lite": ("0.075", "0.30", "0.075"),
    "gemini-2.0-flash": ("0.10", "0.40", "0.025"),
}
_DATED = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest|preview-\d{2}-\d{4}|\d{3})$")


def _price(table: dict[str, tuple[str, str, str]], model: str | None) -> tuple[Decimal, ...] | None:
    """A model's prices: its own name, else without a date or version suffix. OpenAI's dated
    gpt-4o of May 2024 has a price of its own, so it is left unpriced here."""
    if not model or model == "gpt-4o-2024-05-13":
        return None
    name = model
    for _ in range(2):
        if name in table:
            return tuple(Decimal(p) for p in table[name])
        name = _DATED.sub("", name)
    return None


def _micro(total: Decimal) -> int:
    """USD-per-million times tokens is micro-USD; rounded half up."""
    return int(total.quantize(Decimal(1), rounding=ROUND_HALF_UP))


# --- reading recordings ---------------------------------------------------------------------------


def _load_yaml(path: Path) -> Any:
    import yaml  # a maintainer's tool: PyYAML comes with the dev tools

    return yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)


def _header(headers: Any, name: str) -> str | None:
    for key, value in (headers or {}).items():
        if key.lower() == name:
            return str(value[0] if isinstance(value, list) else value)
    return None


def _body_text(response: dict[str, Any]) -> str | None:
    """The body as recorded: the raw string, or a parsed JSON body written back as JSON."""
    body = response.get("body")
    if isinstance(body, dict) and isinstance(body.get("string"), str):
        return str(body["string"])
    if isinstance(body, str):
        return body
    if "parsed_body" in response:
        return json.dumps(response["parsed_body"], ensure_ascii=False)
    return None


#: OpenAI-compatible servers whose Chat Completions recordings are cases of the ``openai`` route
#: (a profile with their ``endpoint``); their models are not in OpenAI's price list.
COMPATIBLE = (
    "api.groq.com",
    "openrouter.ai",
    "api.mistral.ai",
    "api.deepseek.com",
    "api.cerebras.ai",
    "router.huggingface.co",
    "api.z.ai",
)


def _route(uri: str) -> tuple[str, str | None] | None:
    """(route, model named by the path) for a URI scriptorium serves; None otherwise."""
    host = uri.split("/")[2] if uri.count("/") >= 2 else ""
    path = unquote(re.sub(r"^https?://[^/]+", "", uri).split("?")[0])
    if host == "api.anthropic.com" and path == "/v1/messages":
        return "anthropic", None
    found = re.match(r"^/model/([^/]+)/(invoke|invoke-with-response-stream)$", path)
    if host.startswith("bedrock-runtime.") and found:
        return "bedrock", found.group(1)
    found = re.search(r"publishers/anthropic/models/([^/:]+):(raw|streamRaw)Predict$", path)
    if "aiplatform.googleapis.com" in host and found:
        return "vertex", found.group(1)
    found = re.search(r"publishers/google/models/([^/:]+):(generate|streamGenerate)Content$", path)
    if "aiplatform.googleapis.com" in host and found:
        return "gemini_vertex", found.group(1)
    found = re.search(r"^/v1(beta)?/models/([^/:]+):(generate|streamGenerate)Content$", path)
    if host == "generativelanguage.googleapis.com" and found:
        return "gemini", found.group(2)
    found = re.match(r"^/openai/deployments/([^/]+)/chat/completions$", path)
    if host.endswith(".openai.azure.com") and found:
        return "azure", found.group(1)
    if host == "api.openai.com" and path == "/v1/chat/completions":
        return "openai", None
    if host in COMPATIBLE and path.endswith("/chat/completions"):
        return "openai", None
    return None


def _sse(text: str) -> Iterator[tuple[str | None, str]]:
    """(event name, data) of each server-sent event."""
    for block in re.split(r"\r?\n\r?\n", text):
        name = None
        data: list[str] = []
        for line in re.split(r"\r?\n", block):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
        if data:
            yield name, "\n".join(data)


# --- the documented formats -----------------------------------------------------------------------

ANTHROPIC_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
    "tool_use": "tool_use",
}
OPENAI_FINISH = {
    "stop": "stop",
    "length": "length",
    "content_filter": "refusal",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
}
GEMINI_REFUSALS = {
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
    "MODEL_ARMOR",
    "JAILBREAK",
}


def _anthropic_message(body: str, stream: bool) -> dict[str, Any] | None:
    """The Messages API message a body spells out (a stream folded by its events)."""
    if not stream:
        whole = json.loads(body)
        return whole if isinstance(whole, dict) and "content" in whole else None
    message: dict[str, Any] = {}
    blocks: list[dict[str, Any]] = []
    usage: dict[str, Any] = {}
    ended = False
    for name, data in _sse(body):
        event = json.loads(data)
        kind = event.get("type", name)
        if kind == "message_start":
            message = dict(event["message"])
            usage.update(message.get("usage") or {})
        elif kind == "content_block_start":
            blocks.append(dict(event["content_block"]))
            if blocks[-1].get("type") == "tool_use":
                blocks[-1]["json"] = ""
        elif kind == "content_block_delta":
            delta = event["delta"]
            block = blocks[-1]
            if delta["type"] == "text_delta":
                block["text"] = block.get("text", "") + delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta["thinking"]
            elif delta["type"] == "input_json_delta":
                block["json"] = block.get("json", "") + delta["partial_json"]
        elif kind == "message_delta":
            message["stop_reason"] = event["delta"].get("stop_reason")
            usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
        elif kind == "message_stop":
            ended = True
        elif kind == "error":
            return None
    if not ended:
        return None
    for block in blocks:
        if block.get("type") == "tool_use":
            raw = block.pop("json", "")
            block["input"] = json.loads(raw) if raw.strip() else {}
    message["content"] = blocks
    message["usage"] = usage
    return message


def _anthropic_expect(message: dict[str, Any], model: str | None, tool: str | None) -> Case:
    usage = message.get("usage") or {}
    blocks = message["content"]
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    thoughts = [b.get("thinking") for b in blocks if b.get("type") == "thinking"]
    thoughts = [t for t in thoughts if t]
    stop = message.get("stop_reason")
    finish = ANTHROPIC_FINISH.get(stop, stop) if isinstance(stop, str) else None
    value: Any = None
    if tool is not None:
        called = [b for b in blocks if b.get("type") == "tool_use" and b.get("name") == tool]
        value = called[0]["input"]
        finish = "stop" if finish == "tool_use" else finish  # the forced call is the answer
    split = usage.get("cache_creation") or {}
    writes = usage.get("cache_creation_input_tokens") or 0
    one_hour = min(split.get("ephemeral_1h_input_tokens") or 0, writes)
    counts = {
        "input_tokens": usage.get("input_tokens") or 0,
        "output_tokens": usage.get("output_tokens") or 0,
        "cache_creation_input_tokens": writes,
        "cache_write_1h_input_tokens": one_hour,
        "cache_read_input_tokens": usage.get("cache_read_input_tokens") or 0,
    }
    price = _price(ANTHROPIC_PRICES, model) or _price(ANTHROPIC_PRICES, message.get("model"))
    cost = None
    if price is not None:
        inp, out, read = price
        cost = _micro(
            counts["input_tokens"] * inp
            + counts["output_tokens"] * out
            + (writes - one_hour) * inp * Decimal("1.25")
            + one_hour * inp * 2
            + counts["cache_read_input_tokens"] * read
        )
    valid = finish == "stop" if tool is None else finish == "stop" and isinstance(value, dict)
    return {
        "text": text if tool is None else None,
        "value": value if valid else None,
        "finish_reason": finish,
        "valid": valid,
        "usage": counts,
        "cost_micro": cost,
        "reasoning": "\n\n".join(thoughts) if thoughts else None,
        "model": message.get("model") or model,
    }


def _openai_completion(body: str, stream: bool) -> dict[str, Any] | None:
    if not stream:
        completion = json.loads(body)
        return completion if isinstance(completion, dict) and completion.get("choices") else None
    content: list[str] = []
    reasoning: list[str] = []
    refusal: list[str] = []
    calls: list[dict[str, Any]] = []
    finish = None
    usage = None
    model = None
    done = False
    for _, data in _sse(body):
        if data.strip() == "[DONE]":
            done = True
            continue
        chunk = json.loads(data)
        if "error" in chunk:
            return None
        model = model or chunk.get("model") or None
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            content.append(delta.get("content") or "")
            refusal.append(delta.get("refusal") or "")
            reasoning.append(delta.get("reasoning_content") or delta.get("reasoning") or "")
            for call in delta.get("tool_calls") or []:
                index = call.get("index", 0)
                while len(calls) <= index:
                    calls.append({"function": {"name": "", "arguments": ""}})
                function = call.get("function") or {}
                calls[index]["function"]["name"] += function.get("name") or ""
                calls[index]["function"]["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    if not done or finish is None:
        return None
    message: dict[str, Any] = {
        "content": "".join(content) or None,
        "refusal": "".join(refusal) or None,
        "reasoning_content": "".join(reasoning) or None,
    }
    if calls:
        message["tool_calls"] = calls
    return {
        "model": model,
        "choices": [{"message": message, "finish_reason": finish}],
        "usage": usage,
    }


def _openai_expect(completion: dict[str, Any], model: str | None, tool: str | None) -> Case | None:
    choice = completion["choices"][0]
    message = choice.get("message") or {}
    raw = choice.get("finish_reason")
    if not raw:
        return None  # no finish reason the API documents: not a case
    finish = OPENAI_FINISH.get(raw, raw)
    text = message.get("content") or ""
    value: Any = None
    calls = message.get("tool_calls") or []
    if tool is not None:
        value = json.loads(calls[0]["function"]["arguments"])
        finish = "stop" if finish == "tool_use" else finish
    if message.get("refusal"):
        finish = "refusal"
        text = text or message["refusal"]
    usage = completion.get("usage") or {}
    prompt = usage.get("prompt_tokens") or 0
    cached = min(prompt, (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    output = usage.get("completion_tokens") or 0
    reasoned = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    counts = {
        "input_tokens": prompt - cached,
        "output_tokens": output,
        "cache_read_input_tokens": cached,
        "reasoning_tokens": min(reasoned, output),
    }
    reported = completion.get("model") or None
    price = _price(OPENAI_PRICES, model)
    cost = None
    if price is not None:
        inp, out, read = price
        cost = _micro((prompt - cached) * inp + cached * read + output * out)
    thought = message.get("reasoning_content") or message.get("reasoning") or None
    valid = finish == "stop" if tool is None else finish == "stop" and isinstance(value, dict)
    return {
        "text": text if tool is None else None,
        "value": value if valid else None,
        "finish_reason": finish,
        "valid": valid,
        "usage": counts,
        "cost_micro": cost,
        "reasoning": thought,
        "model": reported or model,
    }


def _gemini_response(body: str, stream: bool) -> dict[str, Any] | None:
    if not stream:
        response = json.loads(body)
        return response if isinstance(response, dict) else None
    parts: list[dict[str, Any]] = []
    merged: dict[str, Any] = {}
    finish = None
    for _, data in _sse(body):
        chunk = json.loads(data)
        if "error" in chunk:
            return None
        if chunk.get("modelVersion") and "modelVersion" not in merged:
            merged["modelVersion"] = chunk["modelVersion"]
        for key in ("usageMetadata", "promptFeedback", "responseId"):
            if key in chunk:
                merged[key] = chunk[key]
        for candidate in chunk.get("candidates") or []:
            parts.extend((candidate.get("content") or {}).get("parts") or [])
            finish = candidate.get("finishReason") or finish
    if finish is None and "promptFeedback" not in merged:
        return None
    if finish is not None:
        merged["candidates"] = [{"content": {"parts": parts}, "finishReason": finish}]
    return merged


def _gemini_expect(response: dict[str, Any], model: str | None, tool: str | None) -> Case | None:
    usage = response.get("usageMetadata") or {}
    prompt = (usage.get("promptTokenCount") or 0) + (usage.get("toolUsePromptTokenCount") or 0)
    if prompt > 200_000:
        return None  # the long-context tier: not cased here
    cached = min(prompt, usage.get("cachedContentTokenCount") or 0)
    thoughts = usage.get("thoughtsTokenCount") or 0
    output = (usage.get("candidatesTokenCount") or 0) + thoughts
    counts = {
        "input_tokens": prompt - cached,
        "output_tokens": output,
        "cache_read_input_tokens": cached,
        "reasoning_tokens": thoughts,
    }
    candidates = response.get("candidates")
    value: Any = None
    reasoning = None
    if not candidates:
        blocked = (response.get("promptFeedback") or {}).get("blockReason")
        if not blocked:
            return None
        text, finish = "", "refusal"
    else:
        candidate = candidates[0]
        parts = (candidate.get("content") or {}).get("parts") or []
        text = "".join(p["text"] for p in parts if "text" in p and not p.get("thought"))
        thought = "".join(p["text"] for p in parts if "text" in p and p.get("thought"))
        reasoning = thought or None
        raw = candidate.get("finishReason") or "STOP"
        finish = (
            "stop"
            if raw == "STOP"
            else "length"
            if raw == "MAX_TOKENS"
            else "refusal"
            if raw in GEMINI_REFUSALS
            else raw
        )
        if tool is not None:
            called = [p["functionCall"] for p in parts if "functionCall" in p]
            value = called[0].get("args") or {}
    price = _price(GEMINI_PRICES, model)
    cost = None
    if price is not None:
        inp, out, read = price
        cost = _micro((prompt - cached) * inp + cached * read + output * out)
    valid = finish == "stop" if tool is None else finish == "stop" and isinstance(value, dict)
    return {
        "text": text if tool is None else None,
        "value": value if valid else None,
        "finish_reason": finish,
        "valid": valid,
        "usage": counts,
        "cost_micro": cost,
        "reasoning": reasoning,
        "model": response.get("modelVersion") or model,
    }


def _error_expect(route: str, status: int, body: str) -> Case | None:
    """The sentinel a documented error status is: by the status and the body's error code."""
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = {}
    error = parsed.get("error") if isinstance(parsed, dict) else None
    code = ""
    if isinstance(error, dict):
        code = str(error.get("code") or error.get("type") or error.get("status") or "")
    message = json.dumps(parsed).lower()
    by_status = {
        400: "invalid_request",
        401: "auth",
        403: "permission",
        404: "not_found",
        413: "invalid_request",
        422: "invalid_request",
        429: "rate_limited",
    }
    reason = by_status.get(status)
    if reason is None:
        return None
    if code == "content_filter":
        reason = "content_filter"
    elif code in ("insufficient_quota", "billing_error"):
        reason = "quota"
    elif code == "context_length_exceeded" or "prompt is too long" in message:
        reason = "context_window"
    elif status == 429 and "quota" in message:
        return None  # quota or rate limit: the body's words decide, not a documented code
    return {"error": {"reason": reason, "http_status": status}}


# --- cases ----------------------------------------------------------------------------------------


def _strategy_tool(route: str, answer: Any) -> str | None:
    """The name of the first tool the answer calls (the ``tool`` strategy's case), if any."""
    if route in ("anthropic", "bedrock", "vertex"):
        names = [b.get("name") for b in answer["content"] if b.get("type") == "tool_use"]
    elif route in ("openai", "azure"):
        calls = answer["choices"][0].get("message", {}).get("tool_calls") or []
        names = [c.get("function", {}).get("name") for c in calls]
    else:
        candidates = answer.get("candidates") or [{}]
        parts = (candidates[0].get("content") or {}).get("parts") or []
        names = [p["functionCall"].get("name") for p in parts if "functionCall" in p]
    name = names[0] if names else None
    if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", name):
        return None
    return name


_PROMPTED = "Always respond with a JSON object"


def _json_strategy(route: str, sent: dict[str, Any]) -> str | None:
    """``native`` or ``prompt`` when the recorded request asked for JSON that way, else None."""
    if route in ("anthropic", "bedrock", "vertex"):
        config = sent.get("output_config")
        if sent.get("output_format") or (isinstance(config, dict) and config.get("format")):
            return "native"
        system = json.dumps(sent.get("system") or "")
    elif route in ("openai", "azure"):
        form = sent.get("response_format")
        if isinstance(form, dict) and form.get("type") == "json_schema":
            return "native"
        system = json.dumps(sent.get("messages") or [])
    else:
        config = sent.get("generationConfig") or sent.get("generation_config") or {}
        if isinstance(config, dict) and config.get("responseMimeType") == "application/json":
            return "native"
        system = json.dumps(sent.get("systemInstruction") or "")
    return "prompt" if _PROMPTED in system else None


def _json_case(expect: Case, strategy: str) -> Case | None:
    """The text case read as a JSON answer: its value when the text is one JSON object."""
    text = expect.get("text")
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    valid = expect["finish_reason"] == "stop"
    return {**expect, "text": text, "value": value if valid else None, "valid": valid}


def _platform_cases(
    case_id: str, base: Case, answer: Any, reader: Any, expect: Case
) -> Iterator[Case]:
    """The same recorded answer served on the cloud platforms that return the provider's own
    body (Claude on Bedrock and on Vertex AI return the Messages API's; Azure OpenAI returns a
    chat completion), marked ``served_on`` so a reader knows it was recorded on the provider's
    own API."""
    route, model = base["route"], base["model"]
    if route == "anthropic":
        for platform, named in (("bedrock", f"us.anthropic.{model}-v1:0"), ("vertex", model)):
            yield {
                "id": f"{case_id}-on-{platform}",
                **base,
                "route": platform,
                "model": named,
                "served_on": platform,
                "strategy": "text",
                "expect": expect,
            }
    elif route == "openai" and answer.get("model") and "compatible" not in base:
        priced = reader(answer, answer["model"], None)
        if priced is not None:
            yield {
                "id": f"{case_id}-on-azure",
                **base,
                "route": "azure",
                "served_on": "azure",
                "strategy": "text",
                "expect": priced,
            }


def _interest(case: Case) -> int:
    """How much a case shows beyond a plain answer (the selection keeps these first)."""
    expect = case["expect"]
    if "error" in expect:
        return 9
    usage = expect.get("usage") or {}
    score = 0
    finish = expect.get("finish_reason")
    score += 2 * (finish not in ("stop", None)) + 2 * (finish not in ("stop", "tool_use", None))
    cached = usage.get("cache_read_input_tokens") or usage.get("cache_creation_input_tokens")
    score += 4 * bool(cached) + 2 * bool(usage.get("cache_write_1h_input_tokens"))
    score += 3 * bool(expect.get("reasoning") or usage.get("reasoning_tokens"))
    score += int(case["stream"]) + int(case["strategy"] != "text")
    return score


#: The most cases kept per route, stream or not, and strategy (the most telling first).
CAPS = {"text": 30, "tool": 12, "native": 8, "prompt": 4}
PLATFORM_CAP = 8


def select(cases: list[Case]) -> list[Case]:
    """The cases kept: per route, stream and strategy the most telling ones up to a cap, every
    error case, a few served on the platforms; each recorded answer once per route."""
    kept: list[Case] = []
    counts: dict[str, int] = {}
    seen: set[tuple[str, str, str]] = set()
    for case in sorted(cases, key=lambda c: -_interest(c)):
        body = case["response"]["body"]
        if len(body) > 20_000:
            continue
        key = (case["route"], case["strategy"], body)
        if key in seen:
            continue
        group = f"{case['route']}-{case['stream']}-{case['strategy']}-{'served_on' in case}"
        cap = PLATFORM_CAP if "served_on" in case else CAPS[case["strategy"]]
        if "error" not in case["expect"] and counts.get(group, 0) >= cap:
            continue
        counts[group] = counts.get(group, 0) + 1
        seen.add(key)
        kept.append(case)
    return sorted(kept, key=lambda c: (c["route"], c["id"]))


def _cases(path: Path, relative: str, provenance: dict[str, str]) -> Iterator[Case]:
    loaded = _load_yaml(path)
    interactions = loaded.get("interactions") if isinstance(loaded, dict) else None
    stem = re.sub(r"[^a-z0-9]+", "-", Path(relative).stem.lower()).strip("-")[:80]
    for index, interaction in enumerate(interactions or ()):
        request = interaction.get("request") or {}
        response = interaction.get("response") or {}
        routed = _route(str(request.get("uri", "")))
        status = (response.get("status") or {}).get("code")
        body = _body_text(response)
        if routed is None or not isinstance(status, int) or body is None or len(body) > 60_000:
            continue
        route, path_model = routed
        sent = request.get("parsed_body")
        if not isinstance(sent, dict) and isinstance(request.get("body"), str):
            try:
                sent = json.loads(request["body"])
            except ValueError:
                sent = None
        sent = sent if isinstance(sent, dict) else {}
        model = path_model or sent.get("model")
        if route == "azure":
            model = path_model
        if not isinstance(model, str) or not model:
            continue
        content_type = _header(response.get("headers"), "content-type") or "application/json"
        stream = "text/event-stream" in content_type
        if route == "bedrock" and stream:
            continue  # a binary event stream: kept as base64 by no cassette read here
        host = str(request.get("uri", "")).split("/")[2]
        base: Case = {
            "route": route,
            "model": model,
            "stream": stream,
            "response": {
                "status": status,
                "headers": {"content-type": content_type},
                "body": body,
            },
            "provenance": {**provenance, "path": relative, "interaction": index},
        }
        case_id = f"{stem}-{index}"
        if status >= 400:
            expect = _error_expect(route, status, body)
            if expect is not None:
                yield {"id": case_id, **base, "strategy": "text", "expect": expect}
            continue
        try:
            if route in ("anthropic", "bedrock", "vertex"):
                answer = _anthropic_message(body, stream)
                reader: Any = _anthropic_expect
            elif route in ("openai", "azure"):
                answer = _openai_completion(body, stream)
                reader = _openai_expect
            else:
                answer = _gemini_response(body, stream)
                reader = _gemini_expect
        except (ValueError, KeyError, TypeError, IndexError):
            continue
        if answer is None:
            continue
        priced: str | None = model
        if route == "bedrock":
            priced = re.sub(r"^(?:[a-z]{2,6}\.)?anthropic\.", "", model)
            priced = re.sub(r"-v\d+(?::\d+)?$", "", priced)
        elif route == "azure":
            priced = answer.get("model") or None
        try:
            expect = reader(answer, priced, None)
        except (ValueError, KeyError, TypeError, IndexError):
            continue
        if expect is not None and host in COMPATIBLE:
            base["compatible"] = host
            expect["cost_micro"] = None  # priced by no list scriptorium has
        if expect is not None:
            yield {"id": case_id, **base, "strategy": "text", "expect": expect}
            yield from _platform_cases(case_id, base, answer, reader, expect)
            asked = _json_strategy(route, sent)
            read = _json_case(expect, asked) if asked is not None else None
            if asked is not None and read is not None:
                yield {"id": f"{case_id}-{asked}", **base, "strategy": asked, "expect": read}
        tool = _strategy_tool(route, answer)
        if tool is not None and not stream:
            try:
                expect = reader(answer, priced, tool)
            except (ValueError, KeyError, TypeError, IndexError):
                continue
            if expect is not None:
                yield {
                    "id": f"{case_id}-tool",
                    **base,
                    "strategy": "tool",
                    "tool": tool,
                    "expect": expect,
                }


def main(argv: list[str]) -> None:
    checkout, repository, commit, licence, out = argv[:5]
    root = Path(checkout)
    provenance = {"repository": repository, "commit": commit, "licence": licence}
    cases: list[Case] = []
    for path in sorted(root.rglob("*.yaml")):
        relative = path.relative_to(root).as_posix()
        try:
            cases.extend(_cases(path, relative, provenance))
        except Exception as err:  # a cassette of another shape: said, skipped
            print(f"skipped {relative}: {type(err).__name__}", file=sys.stderr)
    kept = select(cases)
    per_route: dict[str, int] = {}
    for case in kept:
        per_route[case["route"]] = per_route.get(case["route"], 0) + 1
    Path(out).write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(per_route, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
