#!/usr/bin/env python3
"""Record the exact Messages request the official Python SDK sends for a hermes history.

Usage:
    anthropic_record.py --history FILE --model M [--effort E | --no-thinking] [--stream] [--tools FILE]
                        [-q TEXT] [--variant direct|vertex|foundry] [--max-tokens N]

FILE is a `hermes.session.v1` file (or a bare JSON array of messages). The script turns it into
`messages.create(**params)` arguments the way an SDK user would, with its own straightforward
conversion written from hermes' docs/spec.md (§5 Anthropic replay, §3c effort mapping) -- it shares
no code with hermes -- then calls the real SDK client against a loopback HTTP recorder started
in this process (127.0.0.1, a free port), and prints on standard output, as JSON:

    {"method": "POST", "path": <request path>, "anthropic_version_header": <header or null>,
     "body": <the request body the SDK sent, parsed>, "body_text": <the same, as sent>}

Clients (all given a fake key; nothing leaves the machine):
  direct  -> `anthropic.Anthropic(api_key=..., base_url=<recorder>)`
  vertex  -> `anthropic.AnthropicVertex(region="us-east5", project_id="test-project",
             access_token=..., base_url=<recorder>)` (`anthropic.lib.vertex._client`)
  foundry -> `anthropic.AnthropicFoundry(api_key=..., base_url=<recorder>/anthropic/)`
             (`anthropic.lib.foundry`)

The conversion (kept simple on purpose; the test histories are built so that it has nothing to
decide that hermes decides, e.g. which earlier thinking blocks to leave out):
  * `system` messages -> the `system` parameter (a string; several are joined by a blank line);
  * `user` messages -> `{"role": "user", "content": <text>}`;
  * `assistant` messages -> a list of content blocks. With a stored `hermes_block_order`, each
    kind takes the next item of its kind: "thinking" / "redacted_thinking" the next
    Anthropic-shaped `reasoning_details` item (verbatim, every key as stored), "text" the message
    text, "tool_use" the next tool call as `{"type": "tool_use", "id", "name", "input": <the
    parsed arguments>}`. Without it: the thinking items, then the text, then the tool calls.
    A turn marked `hermes_not_replayed` is skipped (docs/spec.md §2);
  * consecutive `tool` messages -> one user message of `tool_result` blocks
    `{"type": "tool_result", "tool_use_id", "content": <text>}`;
  * `-q TEXT` appends a user message;
  * thinking (docs/spec.md §3c): a model the SDK lists in
    `anthropic._data.models_to_warn_with_thinking_enabled.MODELS_TO_WARN_WITH_THINKING_ENABLED`
    (the SDK warns there that `enabled` is deprecated in favour of `adaptive`) is an adaptive
    model: `--effort E` sends `thinking={"type": "adaptive", "display": "summarized"}` and
    `output_config={"effort": E'}` (minimal -> low; xhigh is refused here as ambiguous);
    `--no-thinking` sends no `thinking`. Any other model is a budget model: `--effort E` sends
    `thinking={"type": "enabled", "budget_tokens": B}` with B from 1024 / 4096 / 8192 / 16000 /
    24000 / 32000 (minimal ... max) and `max_tokens` = B + 8192; `--no-thinking` sends
    `{"type": "disabled"}`. No `temperature`: `Messages.create` in this SDK has no such
    parameter (API version 2026-10-21 removed it), so an SDK user cannot send one without
    `extra_body`;
  * `max_tokens`: `--max-tokens`, else B + 8192 with a budget, else the documented output ceiling
    of an adaptive model (128K: platform.claude.com/docs/en/models/<model>/overview, "Max output:
    128K tokens", for every model of the adaptive list), else 16384.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# The recorder is on loopback: never let a proxy from the environment get in the way.
for _var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
    os.environ.pop(_var, None)
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"

try:
    import anthropic
    from anthropic._data.models_to_warn_with_thinking_enabled import MODELS_TO_WARN_WITH_THINKING_ENABLED
except ImportError as exc:  # pragma: no cover - reported to the caller
    print(f"anthropic_record: cannot import the SDK ({exc}); install .ci/sdk-requirements.txt", file=sys.stderr)
    sys.exit(3)

BUDGETS = {"minimal": 1024, "low": 4096, "medium": 8192, "high": 16000, "xhigh": 24000, "max": 32000}
ADAPTIVE_EFFORTS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "max": "max"}
DEFAULT_MAX_TOKENS = 16384
ADAPTIVE_MAX_TOKENS = 128000
BUDGET_HEADROOM = 8192
FAKE_KEY = "sk-test"


class ConversionError(Exception):
    pass


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI-style parts: keep the text ones
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    raise ConversionError(f"unsupported content {content!r}")


def _assistant_blocks(msg: dict[str, Any]) -> list[dict[str, Any]]:
    thinking = [
        item
        for item in msg.get("reasoning_details") or []
        if isinstance(item, dict) and item.get("type") in ("thinking", "redacted_thinking")
    ]
    text = _text(msg.get("content"))
    calls = msg.get("tool_calls") or []
    order = msg.get("hermes_block_order")
    if order is None:
        order = [item["type"] for item in thinking] + (["text"] if text else []) + ["tool_use"] * len(calls)
    thinking_left, texts_left, calls_left = list(thinking), [text] if text else [], list(calls)
    blocks: list[dict[str, Any]] = []
    for kind in order:
        if kind in ("thinking", "redacted_thinking"):
            if not thinking_left or thinking_left[0].get("type") != kind:
                raise ConversionError(f"block order wants {kind}, the stored items do not match")
            blocks.append(thinking_left.pop(0))
        elif kind == "text":
            if not texts_left:
                raise ConversionError("block order wants text, the message has none left")
            blocks.append({"type": "text", "text": texts_left.pop(0)})
        elif kind == "tool_use":
            if not calls_left:
                raise ConversionError("block order wants tool_use, the message has no call left")
            call = calls_left.pop(0)
            function = call["function"]
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call["id"],
                    "name": function["name"],
                    "input": json.loads(function.get("arguments") or "{}"),
                }
            )
        else:
            raise ConversionError(f"unknown block kind {kind!r}")
    if thinking_left or texts_left or calls_left:
        raise ConversionError("hermes_block_order leaves stored items unused: ambiguous")
    return blocks


def convert(
    session: Any,
    *,
    model: str,
    effort: str | None,
    no_thinking: bool,
    stream: bool,
    question: str | None,
    max_tokens: int | None,
    tools: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    history = session["messages"] if isinstance(session, dict) else session
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    last_role = None
    for msg in history:
        role = msg.get("role")
        if msg.get("hermes_not_replayed"):
            continue
        if role == "system":
            system.append(_text(msg.get("content")))
        elif role == "user":
            messages.append({"role": "user", "content": _text(msg.get("content"))})
        elif role == "assistant":
            messages.append({"role": "assistant", "content": _assistant_blocks(msg)})
        elif role == "tool":
            result = {"type": "tool_result", "tool_use_id": msg["tool_call_id"], "content": _text(msg.get("content"))}
            if last_role == "tool":
                messages[-1]["content"].append(result)
            else:
                messages.append({"role": "user", "content": [result]})
        else:
            raise ConversionError(f"role {role!r} is not handled by this converter")
        last_role = role
    if question is not None:
        messages.append({"role": "user", "content": question})

    params: dict[str, Any] = {"model": model, "messages": messages}
    if system:
        params["system"] = "\n\n".join(system)
    adaptive = model in MODELS_TO_WARN_WITH_THINKING_ENABLED
    budget = None
    if effort is not None:
        if adaptive:
            if effort not in ADAPTIVE_EFFORTS:
                raise ConversionError(f"effort {effort} is ambiguous for an adaptive model here")
            params["thinking"] = {"type": "adaptive", "display": "summarized"}
            params["output_config"] = {"effort": ADAPTIVE_EFFORTS[effort]}
        else:
            budget = BUDGETS[effort]
            params["thinking"] = {"type": "enabled", "budget_tokens": budget}
    elif no_thinking and not adaptive:
        params["thinking"] = {"type": "disabled"}
    if max_tokens is not None:
        params["max_tokens"] = max_tokens
    elif budget is not None:
        params["max_tokens"] = budget + BUDGET_HEADROOM
    elif adaptive:
        params["max_tokens"] = ADAPTIVE_MAX_TOKENS
    else:
        params["max_tokens"] = DEFAULT_MAX_TOKENS
    if tools:
        params["tools"] = tools
    if stream:
        params["stream"] = True
    return params


# ---------------------------------------------------------------------------------------------
# The loopback recorder


def _canned_message(model: str) -> dict[str, Any]:
    return {
        "id": "msg_recorder",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _canned_stream(model: str) -> bytes:
    message = _canned_message(model)
    start = dict(message, content=[], stop_reason=None, usage={"input_tokens": 1, "output_tokens": 0})
    events = [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 1}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


class Recorder:
    def __init__(self, model: str) -> None:
        self.requests: list[dict[str, Any]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                recorder.requests.append(
                    {
                        "method": "POST",
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "raw": raw,
                    }
                )
                try:
                    streaming = json.loads(raw).get("stream") is True
                except ValueError:
                    streaming = False
                payload = _canned_stream(model) if streaming else json.dumps(_canned_message(model)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream" if streaming else "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("request-id", "req_recorder")
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "Recorder":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def make_client(variant: str, base_url: str) -> Any:
    common = {"max_retries": 0, "timeout": 30.0}
    if variant == "direct":
        return anthropic.Anthropic(api_key=FAKE_KEY, base_url=base_url, **common)
    if variant == "vertex":
        return anthropic.AnthropicVertex(
            region="us-east5", project_id="test-project", access_token="test-token", base_url=base_url, **common
        )
    if variant == "foundry":
        return anthropic.AnthropicFoundry(api_key=FAKE_KEY, base_url=f"{base_url}/anthropic/", **common)
    raise ValueError(variant)


def record(params: dict[str, Any], variant: str) -> dict[str, Any]:
    with Recorder(params["model"]) as recorder:
        client = make_client(variant, recorder.url)
        response = client.messages.create(**params)
        if params.get("stream"):
            for _event in response:  # drain the stream so the SDK sees a complete reply
                pass
        client.close()
    if len(recorder.requests) != 1:
        raise RuntimeError(f"expected one request, the recorder saw {len(recorder.requests)}")
    req = recorder.requests[0]
    return {
        "method": req["method"],
        "path": req["path"],
        "anthropic_version_header": req["headers"].get("anthropic-version"),
        "body": json.loads(req["raw"]),
        "body_text": req["raw"].decode("utf-8"),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", required=True)
    parser.add_argument("--model", required=True)
    thinking = parser.add_mutually_exclusive_group()
    thinking.add_argument("--effort", choices=tuple(BUDGETS))
    thinking.add_argument("--no-thinking", action="store_true")
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("-q", dest="question")
    parser.add_argument("--variant", choices=("direct", "vertex", "foundry"), default="direct")
    parser.add_argument("--max-tokens", type=int)
    parser.add_argument("--tools", help="a JSON file of tool definitions (ToolParam), sent as given")
    args = parser.parse_args(argv)
    tools = None
    if args.tools:
        with open(args.tools, encoding="utf-8") as fh:
            tools = json.load(fh)

    with open(args.history, encoding="utf-8") as fh:
        session = json.load(fh)
    try:
        params = convert(
            session,
            model=args.model,
            effort=args.effort,
            no_thinking=args.no_thinking,
            stream=args.stream,
            question=args.question,
            max_tokens=args.max_tokens,
            tools=tools,
        )
    except ConversionError as exc:
        print(f"anthropic_record: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(record(params, args.variant), indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
