"""`previous_response_id` with the official openai client: a tool turn made with `store` on,
then the next turn (streamed, `responses.stream`) sends only the tool's output and names the
first response, then a third names the second; an id the gateway never kept is refused with
OpenAI's 400. Every response is validated against the SDK's `Response` type. Reads
{base_url, key, model, effort} as JSON on stdin; prints what it saw as JSON on stdout."""

import json
import sys

import openai
from openai.types.responses import Response

import responses_common

cfg = json.load(sys.stdin)
client = responses_common.client(cfg)
ARGS = responses_common.args(cfg, store=True)


def seen(r):
    Response.model_validate(r.to_dict())
    return {
        "id": r.id,
        "previous_response_id": r.previous_response_id,
        "types": [o.type for o in r.output],
        "text": r.output_text,
        "session": (r.model_extra or {}).get("hermes_session"),
    }


first = client.responses.create(
    input=[{"role": "user", "content": "[tools=1] what time is it?"}], **ARGS
)
call = next(o for o in first.output if o.type == "function_call")
with client.responses.stream(
    input=[{"type": "function_call_output", "call_id": call.call_id, "output": "12:00"}],
    previous_response_id=first.id,
    **ARGS,
) as stream:
    for _ in stream:
        pass
    second = stream.get_final_response()
third = client.responses.create(
    input=[{"role": "user", "content": "Thanks. Say that once more."}],
    previous_response_id=second.id,
    **ARGS,
)
try:
    client.responses.create(input="hi", previous_response_id="resp_nobody_kept", **ARGS)
    unknown = None
except openai.BadRequestError as e:
    unknown = {"status": e.status_code, "body": e.body}
print(json.dumps({"turns": [seen(first), seen(second), seen(third)], "unknown": unknown}))
