#!/usr/bin/env python3
"""Validate Bedrock runtime requests with botocore's own parameter validator and service model.

Usage:
    botocore_validate.py < REQUESTS.json

REQUESTS is a JSON array of `{"operation": ..., "modelId": ..., "params": {...}}`: `operation` a
client method (`converse`, `converse_stream`, `invoke_model`, `invoke_model_with_response_stream`)
or its API name (`Converse`, ...), `params` the request as it goes on the wire, without `modelId`
(it is the path). Blob members are base64 text on the wire and are decoded first
(`bedrock_wire.params_from_wire`; text that is not base64 is an error; InvokeModel's `body` is the
payload text itself); then
`botocore.validate.ParamValidator().validate({"modelId": ..., **params}, input_shape)` runs, with
`input_shape` from `botocore.session.get_session().get_service_model("bedrock-runtime")
.operation_model(<API name>).input_shape`. That is the check boto3 runs before sending
(`parameter_validation`): unknown keys at any depth ("Unknown parameter in
messages[0].content[0]: ..."), missing required members, wrong types, and a tagged union
(a content block, `reasoningContent`) with other than exactly one member set.

Standard output: one line per request, in order: `ok`, or `invalid <botocore's report, its lines
joined by " | ">`. Exit status: 0 when all are valid; 1 when one is not (each also named on
standard error); 2 for input that is not such a JSON array.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import botocore
    from botocore.validate import ParamValidator
except ImportError as exc:  # pragma: no cover - reported to the caller
    print(f"botocore_validate: cannot import botocore ({exc}); install .ci/sdk-requirements.txt", file=sys.stderr)
    sys.exit(3)

import bedrock_wire


def check(item: dict) -> str | None:
    """`None` when botocore accepts `item`, else botocore's report."""
    shape = bedrock_wire.input_shape(item["operation"])
    params = item.get("params") or {}
    if not isinstance(params, dict):
        return "params: must be an object"
    try:
        params = bedrock_wire.params_from_wire(item["operation"], params)
    except bedrock_wire.WireError as exc:
        return str(exc)
    report = ParamValidator().validate({"modelId": item["modelId"], **params}, shape)
    if report.has_errors():
        return " | ".join(line for line in report.generate_report().splitlines() if line.strip())
    return None


def main() -> int:
    try:
        items = json.load(sys.stdin)
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise ValueError("expected a JSON array of objects")
        for item in items:
            bedrock_wire.operation_name(item["operation"])
            item["modelId"]
    except (ValueError, KeyError) as exc:
        print(f"botocore_validate: bad input: {exc!r}", file=sys.stderr)
        return 2
    bad = 0
    for i, item in enumerate(items):
        problem = check(item)
        if problem is None:
            print("ok")
        else:
            bad += 1
            print(f"invalid {problem}")
            print(f"botocore_validate: request {i} ({item['operation']}, {item['modelId']}): {problem}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
