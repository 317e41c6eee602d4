"""A client of the gateway that drops every reasoning field: a two-turn tool conversation with
the official openai client (its own request types). The second turn names its session with the
X-Hermes-Session header (extra_headers) when `header` is set; otherwise it sends nothing but the
history, and the gateway finds the conversation. Reads {base_url, key, model, stream, header, effort} as
JSON on stdin; prints what it saw as JSON on stdout."""

import json
import sys

from openai import OpenAI

cfg = json.load(sys.stdin)
client = OpenAI(api_key=cfg["key"], base_url=cfg["base_url"], max_retries=0)
stream = cfg["stream"]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "now",
            "description": "The time",
            "parameters": {"type": "object", "properties": {}},
        },
    }
]


def extra(obj, key):
    return (obj.model_extra or {}).get(key)


EFFORT = {"reasoning_effort": cfg["effort"]} if cfg.get("effort") else {}


def turn(messages, session):
    headers = {"X-Hermes-Session": session} if session else None
    if not stream:
        r = client.chat.completions.create(
            model=cfg["model"], messages=messages, tools=TOOLS, extra_headers=headers, **EFFORT
        )
        m = r.choices[0].message
        return {
            "content": m.content,
            "reasoning": extra(m, "reasoning_content"),
            "tool_calls": [
                {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                for c in (m.tool_calls or [])
            ],
            "finish": r.choices[0].finish_reason,
            "session": extra(r, "hermes_session"),
            "reasoning_tokens": r.usage.completion_tokens_details.reasoning_tokens,
        }
    out = {"content": "", "reasoning": "", "tool_calls": [], "finish": None, "session": None,
           "reasoning_tokens": None, "repeated_id_or_name": 0, "chunks_after_finish": 0}
    calls = {}
    for chunk in client.chat.completions.create(
        model=cfg["model"], messages=messages, tools=TOOLS, extra_headers=headers,
        stream=True, stream_options={"include_usage": True}, **EFFORT,
    ):
        if extra(chunk, "hermes_session"):
            out["session"] = extra(chunk, "hermes_session")
        if chunk.usage is not None:
            out["reasoning_tokens"] = chunk.usage.completion_tokens_details.reasoning_tokens
        for choice in chunk.choices:
            if out["finish"] is not None:
                out["chunks_after_finish"] += 1
            d = choice.delta
            out["reasoning"] += extra(d, "reasoning_content") or ""
            out["content"] += d.content or ""
            for c in d.tool_calls or []:
                call = calls.setdefault(c.index, {"id": None, "name": None, "arguments": ""})
                if c.id:
                    out["repeated_id_or_name"] += call["id"] is not None
                    call["id"] = c.id
                if c.function and c.function.name:
                    out["repeated_id_or_name"] += call["name"] is not None
                    call["name"] = c.function.name
                if c.function and c.function.arguments:
                    call["arguments"] += c.function.arguments
            if choice.finish_reason:
                out["finish"] = choice.finish_reason
    out["tool_calls"] = [calls[i] for i in sorted(calls)]
    return out


messages = [{"role": "user", "content": "[tools=1] what time is it?"}]
first = turn(messages, None)
# The client keeps only content and tool calls: every reasoning field is dropped.
messages.append({
    "role": "assistant",
    "content": first["content"] or None,
    "tool_calls": [
        {"id": c["id"], "type": "function",
         "function": {"name": c["name"], "arguments": c["arguments"]}}
        for c in first["tool_calls"]
    ],
})
for c in first["tool_calls"]:
    messages.append({"role": "tool", "tool_call_id": c["id"], "content": "12:00"})
second = turn(messages, first["session"] if cfg["header"] else None)
print(json.dumps({"first": first, "second": second}))
