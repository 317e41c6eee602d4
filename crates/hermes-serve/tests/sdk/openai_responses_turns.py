"""A Responses client of the gateway: a two-turn tool conversation with the official openai
client's `responses.create` (whole) or `responses.stream` (streamed), `store: false`, asking for
`reasoning.encrypted_content`. Between the turns it either drops every `reasoning` item (`keep`
false) or sends them back as it got them (`keep` true; `tamper` alters each one's summary first).
Every response object and every stream event is validated against the SDK's own pydantic types
(`Response`, `ResponseStreamEvent`). With `compact` it then compacts the conversation with
`responses.compact` and asks once more on the compacted input (the user messages and the
compaction item it returned). Reads {base_url, key, model, stream, keep, tamper, effort, compact}
as JSON on stdin; prints what it saw as JSON on stdout."""

import copy
import json
import sys

from openai.types.responses import (
    Response,
    ResponseCompactionItem,
    ResponseStreamEvent,
    ResponseUsage,
)
from pydantic import TypeAdapter

import responses_common

cfg = json.load(sys.stdin)
client = responses_common.client(cfg)
EVENTS = TypeAdapter(ResponseStreamEvent)
ARGS = responses_common.args(
    cfg,
    store=False,
    include=["reasoning.encrypted_content"],
    instructions="You are terse.",
)


def turn(items):
    seen = {"event_types": [], "added_before_delta": True}
    if not cfg["stream"]:
        r = client.responses.create(input=items, **ARGS)
    else:
        added = set()
        with client.responses.stream(input=items, **ARGS) as stream:
            for event in stream:
                EVENTS.validate_python(event.to_dict())
                seen["event_types"].append(event.type)
                if event.type == "response.output_item.added":
                    added.add(event.item.id)
                item_id = getattr(event, "item_id", None)
                if item_id is not None and item_id not in added:
                    seen["added_before_delta"] = False
            r = stream.get_final_response()
    Response.model_validate(r.to_dict())
    seen["output"] = [o.to_dict() for o in r.output]
    seen["text"] = r.output_text
    seen["session"] = (r.model_extra or {}).get("hermes_session")
    seen["reasoning_tokens"] = r.usage.output_tokens_details.reasoning_tokens
    seen["status"] = r.status
    return seen


history = [{"role": "user", "content": "[tools=1] what time is it?"}]
first = turn(history)
for item in first["output"]:
    if item["type"] == "reasoning":
        if not cfg["keep"]:
            continue
        item = copy.deepcopy(item)
        if cfg.get("tamper"):
            for part in item.get("summary") or []:
                part["text"] = part["text"] + " (edited)"
    history.append(item)
for item in first["output"]:
    if item["type"] == "function_call":
        history.append(
            {"type": "function_call_output", "call_id": item["call_id"], "output": "12:00"}
        )
try:
    second = turn(history)
except Exception:
    print(json.dumps(history), file=sys.stderr)
    raise
out = {"first": first, "second": second, "sent": history}
if cfg.get("compact"):
    history += [o for o in second["output"] if o["type"] != "reasoning"]
    c = client.responses.compact(
        model=cfg["model"], input=history, instructions="You are terse."
    )
    # The SDK types a compacted output's messages as assistant output messages, while the
    # API returns the user messages there (its own docstring says so): the compaction item
    # and the usage are checked against their types.
    ResponseUsage.model_validate(c.usage.to_dict())
    output = [o.to_dict() for o in c.output]
    ResponseCompactionItem.model_validate(output[-1])
    out["compacted"] = {"object": c.object, "output": output}
    out["third"] = turn(output + [{"role": "user", "content": "Thanks. Say that once more."}])
print(json.dumps(out))
