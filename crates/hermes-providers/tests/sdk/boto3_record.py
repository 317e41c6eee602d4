#!/usr/bin/env python3
"""Send Bedrock runtime calls with boto3, signed with fixed credentials at a fixed time, to a
recorder the caller runs; the replies are ignored.

Usage:
    boto3_record.py < SPEC.json

SPEC (JSON on standard input; `json.load` keeps every object's key order, Python dicts being
insertion-ordered, and so does botocore: `botocore/serialize.py`, `JSONSerializer.
_serialize_type_structure` copies a structure's members in the order given, and
`RestJSONSerializer._serialize_body_params` writes the result with a bare `json.dumps`):

    {"endpoint": "http://127.0.0.1:PORT",          # the recorder (the caller starts it)
     "region": "us-east-1",
     "access_key_id": "AKID...", "secret_access_key": "...",
     "session_token": "..." | null,
     "time": "20231114T221320Z",                   # the SigV4 timestamp every call is signed at
     "calls": [{"operation": "converse" | "converse_stream" | "invoke_model"
                             | "invoke_model_with_response_stream",
                "modelId": "anthropic.claude-3-haiku-20240307-v1:0",
                "params": {...}}, ...]}

`params` are the operation's other parameters. For `invoke_model*`, `body` is a JSON string whose
UTF-8 bytes are the request body (InvokeModel's body is an opaque blob: boto3 sends the bytes as
given) and `contentType` etc. go through as given. For `converse*`, `params` are the request as it
goes on the wire (what a Converse codec would POST, minus `modelId`, which is the path): blob
members are base64 text there and are decoded for botocore (`bedrock_wire.params_from_wire`), so
that botocore's own serializer produces the wire JSON again.

How the call is pinned down:
  * the client is `boto3.session.Session(aws_access_key_id=..., aws_secret_access_key=...,
    aws_session_token=..., region_name=...).client("bedrock-runtime", endpoint_url=<recorder>,
    config=Config(retries={"total_max_attempts": 1}))`: explicit credentials, no retries;
  * the clock: `botocore.auth.SigV4Auth.add_auth` dates the signature with
    `get_current_datetime()`, a name `botocore/auth.py` imports from `botocore.compat` into its
    own namespace; replacing `botocore.auth.get_current_datetime` fixes the signing time and
    nothing else (retry TTLs and the endpoint's clock-skew logic read `botocore.compat`'s);
  * botocore's client-side parameter validation stays on: parameters botocore's model does not
    accept fail the call before anything is sent, and this script exits 1 naming them.

Standard output: one JSON line `{"boto3": ..., "botocore": ..., "calls": N}`. Exit status: 0 when
every call was sent (whatever the recorder answered), 1 when botocore refused one, 2 for bad input.
"""

from __future__ import annotations

import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import boto3
    import botocore
    import botocore.auth
    import botocore.exceptions
    from botocore.config import Config
except ImportError as exc:  # pragma: no cover - reported to the caller
    print(f"boto3_record: cannot import boto3 ({exc}); install .ci/sdk-requirements.txt", file=sys.stderr)
    sys.exit(3)

import bedrock_wire


def fix_clock(stamp: str) -> None:
    fixed = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ")

    def get_current_datetime(remove_tzinfo: bool = True) -> datetime.datetime:
        return fixed if remove_tzinfo else fixed.replace(tzinfo=datetime.timezone.utc)

    botocore.auth.get_current_datetime = get_current_datetime


def main() -> int:
    try:
        spec = json.load(sys.stdin, object_pairs_hook=dict)  # key order as in the text
        fix_clock(spec["time"])
        calls = [
            (bedrock_wire.method_name(c["operation"]), c["modelId"], bedrock_wire.params_from_wire(c["operation"], c.get("params") or {}))
            for c in spec["calls"]
        ]
    except (ValueError, KeyError, TypeError) as exc:
        print(f"boto3_record: bad input: {exc!r}", file=sys.stderr)
        return 2
    session = boto3.session.Session(
        aws_access_key_id=spec["access_key_id"],
        aws_secret_access_key=spec["secret_access_key"],
        aws_session_token=spec.get("session_token"),
        region_name=spec["region"],
    )
    client = session.client(
        "bedrock-runtime",
        endpoint_url=spec["endpoint"],
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=10, read_timeout=30),
    )
    for i, (method, model_id, params) in enumerate(calls):
        try:
            reply = getattr(client, method)(modelId=model_id, **params)
        except botocore.exceptions.ParamValidationError as exc:
            print(f"boto3_record: call {i} ({method}, {model_id}): botocore refused the parameters: {exc}", file=sys.stderr)
            return 1
        except botocore.exceptions.ClientError:
            continue  # the recorder's answer does not matter
        # The reply is ignored; a streamed one is closed unread.
        stream = reply.get("body") if method == "invoke_model_with_response_stream" else reply.get("stream")
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    print(json.dumps({"boto3": boto3.__version__, "botocore": botocore.__version__, "calls": len(calls)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
