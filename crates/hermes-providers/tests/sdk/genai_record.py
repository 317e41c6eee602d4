#!/usr/bin/env python3
"""Send Gemini generateContent calls with the official `google-genai` client to a recorder the
caller runs; the replies are read (so a call that fails is noticed) and otherwise ignored.

Usage:
    genai_record.py < SPEC.json

SPEC (JSON on standard input):

    {"base_url": "http://127.0.0.1:PORT",          # the recorder (the caller starts it)
     "calls": [{
        "flavor": "ai_studio" | "vertex",
        "api_key": "...",                          # ai_studio: sent in x-goog-api-key
        "project": "...", "location": "...",       # vertex
        "token": "...",                            # vertex: an OAuth access token (Bearer)
        "api_version": "v1beta" | "v1",
        "model": "gemini-3-pro-preview",
        "stream": false,                           # generate_content / generate_content_stream
        "system": ["Be brief."],                   # system instruction texts (may be empty)
        "contents": [                              # the conversation, as an SDK user holds it
          {"role": "user" | "model",
           "parts": [{"text": "..."},
                     {"function_call": {"id": "c1", "name": "now", "args": {...}},
                      "thought_signature": "U0lHLTE/"},
                     {"function_response": {"id": "c1", "name": "now",
                                            "response": {"output": "12:00"}}},
                     {"text": "", "thought_signature": "..."}]}],
        "tools": [{"name": "now", "description": "...", "parameters_json_schema": {...}}],
        "thinking": {"include_thoughts": true, "thinking_level": "HIGH"} | null}]}

How the calls are made, the way an application using the SDK makes them:
  * the client: `genai.Client(api_key=..., vertexai=False, http_options=types.HttpOptions(
    base_url=<recorder>, api_version=...))`, or for Vertex `genai.Client(vertexai=True,
    project=..., location=..., credentials=google.oauth2.credentials.Credentials(token=...),
    http_options=...)` (a fixed access token: no credential lookup, no refresh);
  * the conversation is built from the SDK's own pydantic types: `types.Content(role=...,
    parts=[types.Part(...)])`, `types.FunctionCall(id=, name=, args=)`,
    `types.FunctionResponse(id=, name=, response=)`. A thought signature is `bytes` in the SDK
    (`types.Part.thought_signature`); the stored signature is the base64 text Gemini sent, so it
    is decoded here (either base64 alphabet) and the SDK encodes it again when it sends;
  * the config is `types.GenerateContentConfig(system_instruction=..., tools=[types.Tool(
    function_declarations=[types.FunctionDeclaration(name=, description=,
    parameters_json_schema=)])], max_output_tokens=, thinking_config=types.ThinkingConfig(
    **thinking))`, each only
    when given; one system text is passed as a string, several as a list of strings (the SDK
    makes either a `user` content of text parts, `_transformers.t_content`);
  * `client.models.generate_content(model=, contents=, config=)`, or
    `generate_content_stream(...)` whose chunks are read to the end.
The SDK validates its types when they are built (`_common.BaseModel`: `extra='forbid'`), so a
part this script cannot express as the SDK's types fails here, before anything is sent.

Standard output: one JSON line `{"google-genai": VERSION, "calls": N, "replies": [text, ...]}`.
Exit status: 0 when every call was sent and its reply read; 1 when the SDK refused or failed one
(named on standard error); 2 for bad input.
"""

from __future__ import annotations

import base64
import binascii
import json
import sys

try:
    import google.oauth2.credentials
    from google import genai
    from google.genai import types
except ImportError as exc:  # pragma: no cover - reported to the caller
    print(f"genai_record: cannot import google-genai ({exc}); install .ci/sdk-requirements.txt", file=sys.stderr)
    sys.exit(3)


class BadInput(Exception):
    """The spec is not what this script takes."""


def signature(text: object) -> bytes:
    """The bytes of a stored thought signature: base64 text, standard or URL-safe alphabet."""
    if not isinstance(text, str) or not text:
        raise BadInput(f"a thought signature must be non-empty base64 text, not {text!r}")
    standard = text.replace("-", "+").replace("_", "/")
    standard += "=" * (-len(standard) % 4)
    try:
        return base64.b64decode(standard, validate=True)
    except binascii.Error as exc:
        raise BadInput(f"thought signature {text!r} is not base64: {exc}") from None


PART_KEYS = {"text", "function_call", "function_response", "thought_signature"}


def part(spec: dict) -> types.Part:
    unknown = set(spec) - PART_KEYS
    if unknown:
        raise BadInput(f"unknown part keys {sorted(unknown)}")
    kwargs: dict = {}
    if "text" in spec:
        kwargs["text"] = spec["text"]
    if "function_call" in spec:
        kwargs["function_call"] = types.FunctionCall(**spec["function_call"])
    if "function_response" in spec:
        kwargs["function_response"] = types.FunctionResponse(**spec["function_response"])
    if "thought_signature" in spec:
        kwargs["thought_signature"] = signature(spec["thought_signature"])
    return types.Part(**kwargs)


def contents(specs: list) -> list[types.Content]:
    return [types.Content(role=c["role"], parts=[part(p) for p in c["parts"]]) for c in specs]


def config(call: dict) -> types.GenerateContentConfig | None:
    kwargs: dict = {}
    system = call.get("system") or []
    if len(system) == 1:
        kwargs["system_instruction"] = system[0]
    elif system:
        kwargs["system_instruction"] = list(system)
    if call.get("tools"):
        kwargs["tools"] = [
            types.Tool(function_declarations=[types.FunctionDeclaration(**d) for d in call["tools"]])
        ]
    if call.get("max_output_tokens") is not None:
        kwargs["max_output_tokens"] = call["max_output_tokens"]
    if call.get("thinking") is not None:
        kwargs["thinking_config"] = types.ThinkingConfig(**call["thinking"])
    return types.GenerateContentConfig(**kwargs) if kwargs else None


def client(base_url: str, call: dict) -> genai.Client:
    http_options = types.HttpOptions(base_url=base_url, api_version=call["api_version"])
    if call["flavor"] == "ai_studio":
        return genai.Client(api_key=call["api_key"], vertexai=False, http_options=http_options)
    if call["flavor"] == "vertex":
        credentials = google.oauth2.credentials.Credentials(token=call["token"])
        return genai.Client(
            vertexai=True,
            project=call["project"],
            location=call["location"],
            credentials=credentials,
            http_options=http_options,
        )
    raise BadInput(f"unknown flavor {call['flavor']!r}")


def main() -> int:
    try:
        spec = json.load(sys.stdin)
        base_url = spec["base_url"]
        prepared = []
        for call in spec["calls"]:
            prepared.append(
                (call, client(base_url, call), contents(call["contents"]), config(call))
            )
    except (ValueError, KeyError, TypeError, BadInput) as exc:
        print(f"genai_record: bad input: {exc!r}", file=sys.stderr)
        return 2
    replies = []
    for i, (call, sdk, conversation, cfg) in enumerate(prepared):
        try:
            if call.get("stream"):
                text = "".join(
                    chunk.text or ""
                    for chunk in sdk.models.generate_content_stream(
                        model=call["model"], contents=conversation, config=cfg
                    )
                )
            else:
                text = sdk.models.generate_content(
                    model=call["model"], contents=conversation, config=cfg
                ).text
        except Exception as exc:  # noqa: BLE001 - any failure of the SDK is the caller's answer
            print(f"genai_record: call {i} ({call['flavor']}, {call['model']}, stream "
                  f"{bool(call.get('stream'))}) failed: {exc!r}", file=sys.stderr)
            return 1
        replies.append(text)
    print(json.dumps({"google-genai": genai.__version__, "calls": len(replies), "replies": replies}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
