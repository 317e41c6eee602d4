#!/usr/bin/env python3
"""Send request bodies through the official `openai` Python client's `responses.create`, to a
loopback recorder, so the caller can compare what the SDK sends with what hermes sends.

Usage:
    openai_record.py < SPEC

SPEC is one JSON object: {"base_url": "http://127.0.0.1:PORT/v1", "api_key": "...",
"calls": [PARAMS, ...]}. Each PARAMS is the keyword arguments of one `responses.create` call,
given as JSON (key order kept: `json.load` keeps it, and the SDK writes its body in the order
of the arguments it was given). The client is
`OpenAI(api_key=..., base_url=..., max_retries=0)`; a key `responses.create` does not declare is
a TypeError (no `extra_body` is used: what the SDK sends is only what its signature takes).

The recorder answers a minimal Response object, or for `stream: true` an SSE stream with one
`response.completed` event; for a stream this script reads every event.

Standard output: one JSON line {"openai": VERSION, "calls": N, "results": [...]} where each
result is the reply's `id` (whole replies) or the list of event types (streams). Exit status: 0
when every call went through, 1 when the SDK raised, 2 for bad input.
"""

from __future__ import annotations

import json
import sys

try:
    import openai
    from openai import OpenAI
except ImportError as exc:  # pragma: no cover - reported to the caller
    print(f"openai_record: cannot import openai ({exc}); install .ci/sdk-requirements.txt", file=sys.stderr)
    sys.exit(3)


def main() -> int:
    try:
        spec = json.load(sys.stdin)
        client = OpenAI(api_key=spec["api_key"], base_url=spec["base_url"], max_retries=0)
        calls = spec["calls"]
        if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
            raise TypeError("calls must be an array of objects")
    except (ValueError, KeyError, TypeError) as exc:
        print(f"openai_record: bad input: {exc!r}", file=sys.stderr)
        return 2
    results = []
    for i, params in enumerate(calls):
        try:
            if params.get("stream") is True:
                events = [event.type for event in client.responses.create(**params)]
                results.append(events)
            else:
                results.append(client.responses.create(**params).id)
        except Exception as exc:  # noqa: BLE001 - any failure of the SDK is the caller's answer
            print(f"openai_record: call {i} (model {params.get('model')!r}, stream "
                  f"{params.get('stream')!r}) failed: {exc!r}", file=sys.stderr)
            return 1
    print(json.dumps({"openai": openai.__version__, "calls": len(results), "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
