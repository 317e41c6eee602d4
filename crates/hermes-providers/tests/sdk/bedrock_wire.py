"""What boto3_record.py and botocore_validate.py share: the `bedrock-runtime` service model as
botocore ships it, operation names, and wire JSON turned into the Python parameters botocore takes.

botocore's parameters are not the wire JSON: a `blob` member (an image's bytes, a reasoning
block's `redactedContent`) is raw bytes in Python and base64 text on the wire (botocore's JSON
serializer base64-encodes it, `botocore/serialize.py`, `_serialize_type_blob`). `from_wire` walks
the operation's input shape and decodes every blob member's base64 text (strictly: text that is
not base64 is an error naming its path); everything else passes through as parsed, key order
kept. Document members (`additionalModelRequestFields`, a tool's `inputSchema.json`, a
`toolUse.input`) are free JSON and are not walked.
"""

from __future__ import annotations

import base64
import binascii
import functools
from typing import Any

#: snake_case client method -> API operation name.
OPERATIONS = {
    "converse": "Converse",
    "converse_stream": "ConverseStream",
    "invoke_model": "InvokeModel",
    "invoke_model_with_response_stream": "InvokeModelWithResponseStream",
}


def operation_name(name: str) -> str:
    """The API operation name of `name` (a client method name or already an API name)."""
    if name in OPERATIONS:
        return OPERATIONS[name]
    if name in OPERATIONS.values():
        return name
    raise ValueError(f"unknown operation {name!r}; one of {sorted(OPERATIONS)}")


def method_name(name: str) -> str:
    """The boto3 client method of `name` (an API operation name or already a method name)."""
    if name in OPERATIONS:
        return name
    for method, api in OPERATIONS.items():
        if api == name:
            return method
    raise ValueError(f"unknown operation {name!r}; one of {sorted(OPERATIONS)}")


@functools.cache
def service_model():
    """botocore's own `bedrock-runtime` service model (the JSON shipped in botocore/data), loaded
    once per process (a batch of requests validates against one)."""
    import botocore.session

    return botocore.session.get_session().get_service_model("bedrock-runtime")


def input_shape(operation: str):
    """The input shape of `operation` in botocore's `bedrock-runtime` model."""
    return service_model().operation_model(operation_name(operation)).input_shape


class WireError(ValueError):
    """A wire value botocore's parameters cannot hold (a blob that is not base64)."""


def from_wire(shape, value: Any, path: str = "") -> Any:
    """`value` (wire JSON, parsed) as botocore parameters for `shape`: blob members decoded from
    base64. Keys the shape does not declare are kept as they are, for the validator to name."""
    kind = shape.type_name
    if kind == "blob":
        if not isinstance(value, str):
            return value
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise WireError(f"{path or 'input'}: a blob must be base64 text: {exc}") from None
    if kind == "structure" and isinstance(value, dict):
        members = shape.members
        out = type(value)()
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            out[key] = from_wire(members[key], item, where) if key in members else item
        return out
    if kind == "list" and isinstance(value, list):
        return [from_wire(shape.member, item, f"{path}[{i}]") for i, item in enumerate(value)]
    if kind == "map" and isinstance(value, dict):
        out = type(value)()
        for key, item in value.items():
            out[key] = from_wire(shape.value, item, f"{path}.{key}")
        return out
    return value


def params_from_wire(operation: str, params: dict) -> dict:
    """The botocore parameters of a request whose wire form is `params` (without `modelId`).

    InvokeModel's `body` is the HTTP payload itself (an opaque blob, sent as given): here it is a
    JSON string whose UTF-8 bytes are that payload. Every other operation's `params` are the JSON
    body, blob members in base64 (`from_wire`)."""
    api = operation_name(operation)
    if api.startswith("InvokeModel"):
        params = dict(params)
        body = params.get("body")
        if not isinstance(body, str):
            raise WireError("body: InvokeModel's body must be given as a string (the payload text)")
        params["body"] = body.encode("utf-8")
        return params
    return from_wire(input_shape(api), params)
