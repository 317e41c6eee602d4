#!/usr/bin/env python3
"""Validate OpenAI Responses request bodies against the official `openai` Python client's own
request types, with extra keys forbidden at every depth (and, with `HERMES_VALIDATE_PARAMS`
set, chat-completions bodies against `openai`'s `CompletionCreateParams*` or Anthropic Messages
bodies against the official `anthropic` client's `MessageCreateParams*`: the same walk).

Usage:
    [HERMES_VALIDATE_PARAMS=responses|responses_compact|chat|anthropic] openai_validate.py < BODIES

BODIES holds one or more JSON bodies written one after another (pretty-printed as `hermes
preview` prints them, or one per line). A body with `"stream": true` is checked as
`openai.types.responses.response_create_params.ResponseCreateParamsStreaming`, any other as
`ResponseCreateParamsNonStreaming` (both TypedDicts, `total=False`, built on
`ResponseCreateParamsBase`).

How: pydantic cannot forbid extra keys of the SDK's TypedDicts (a `TypeAdapter` refuses a
`config` for a TypedDict, and the TypedDicts set none, so unknown keys are ignored), so this
script walks the annotations itself (`typing.get_type_hints(..., include_extras=True)`):
  * a TypedDict: every key must be one of its annotations (else `extra_forbidden`), every
    required key (`__required_keys__`, or marked `Required[...]`) must be present; the SDK's `PropertyInfo(alias=...)` names are honoured;
  * a Union / Optional: the value must match one member (the error of the member that got
    furthest is reported; for a union of TypedDicts with a `Literal` `type` discriminator, the
    member with the matching `type`);
  * `Literal[...]`: the value is one of them; `str`, `int`, `float` (an int is accepted),
    `bool` (strictly), `None`;
  * `Iterable[X]`, `List[X]`, `Sequence[X]`, `SequenceNotStr[X]`: a JSON array of X;
    `Dict[str, X]` / `Mapping`: an object of X; `object` / `Any`: anything.
Standard output: one line per body, in input order: `ok`, or `invalid <path>: <reason>` with a
dotted path (`input.1.summary.0.foo`). Exit status: 0 when every body is valid, 1 when one is
not (each also named on standard error), 2 for input that is not JSON bodies.
"""

from __future__ import annotations

import collections.abc
import json
import os
import sys
import types as pytypes
import typing
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import verdicts

# Which request types the bodies are checked against.
KIND = os.environ.get("HERMES_VALIDATE_PARAMS", "responses")

try:
    import typing_extensions
    from openai._utils._transform import PropertyInfo
    from openai.types.chat import completion_create_params as chat_params
    from openai.types.responses import response_compact_params as compact_params
    from openai.types.responses import response_create_params as params
except ImportError as exc:  # pragma: no cover - reported to the caller
    print(f"openai_validate: cannot import openai ({exc}); install .ci/sdk-requirements.txt", file=sys.stderr)
    sys.exit(3)

# anthropic 2.16.0's request TypedDicts carry no aliases (no `PropertyInfo` in its types).
if KIND == "anthropic":
    try:
        from anthropic.types import message_create_params as anthropic_params
    except ImportError as exc:  # pragma: no cover - reported to the caller
        print(f"openai_validate: cannot import anthropic ({exc}); install .ci/sdk-requirements.txt", file=sys.stderr)
        sys.exit(3)

# (streaming, non-streaming) request types per kind.
TYPES = {
    "responses": lambda: (params.ResponseCreateParamsStreaming, params.ResponseCreateParamsNonStreaming),
    # `POST /responses/compact` (never streamed): `ResponseCompactParams`.
    "responses_compact": lambda: (compact_params.ResponseCompactParams, compact_params.ResponseCompactParams),
    "chat": lambda: (chat_params.CompletionCreateParamsStreaming, chat_params.CompletionCreateParamsNonStreaming),
    "anthropic": lambda: (anthropic_params.MessageCreateParamsStreaming, anthropic_params.MessageCreateParamsNonStreaming),
}
if KIND not in TYPES:
    print(f"openai_validate: HERMES_VALIDATE_PARAMS must be one of {sorted(TYPES)}, not {KIND!r}", file=sys.stderr)
    sys.exit(2)


class Invalid(Exception):
    """A value is not valid: `path` (list) and the reason."""

    def __init__(self, path: list, reason: str) -> None:
        super().__init__(f"{dotted(path)}: {reason}")
        self.path = path


def dotted(path: list) -> str:
    return ".".join(str(p) for p in path) or "(body)"


_REQUIRED = {typing.Required, typing_extensions.Required} if hasattr(typing, "Required") else {typing_extensions.Required}
_NOT_REQUIRED = {typing.NotRequired, typing_extensions.NotRequired} if hasattr(typing, "NotRequired") else {typing_extensions.NotRequired}
_UNIONS = {typing.Union, getattr(pytypes, "UnionType", typing.Union)}
_SEQUENCES = {list, collections.abc.Iterable, collections.abc.Sequence, tuple}
_MAPPINGS = {dict, collections.abc.Mapping}


def is_typeddict(tp: Any) -> bool:
    return typing_extensions.is_typeddict(tp) or typing.is_typeddict(tp)


def strip(tp: Any) -> tuple[Any, bool | None, str | None]:
    """`tp` without Annotated/Required/NotRequired: (type, required?, alias)."""
    required: bool | None = None
    alias: str | None = None
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated or origin is typing_extensions.Annotated:
            for meta in getattr(tp, "__metadata__", ()):
                if isinstance(meta, PropertyInfo) and meta.alias:
                    alias = meta.alias
            tp = typing.get_args(tp)[0]
        elif origin in _REQUIRED:
            required = True
            tp = typing.get_args(tp)[0]
        elif origin in _NOT_REQUIRED:
            required = False
            tp = typing.get_args(tp)[0]
        else:
            return tp, required, alias


_FIELDS: dict[Any, dict[str, tuple[Any, bool]]] = {}


def fields_of(td: Any) -> dict[str, tuple[Any, bool]]:
    """A TypedDict's wire keys: key -> (type, required)."""
    if td not in _FIELDS:
        hints = typing.get_type_hints(td, include_extras=True)
        # `__required_keys__` knows each key's own class's `total` (the Streaming/NonStreaming
        # classes are `total=True` subclasses of a `total=False` base).
        required_keys = getattr(td, "__required_keys__", frozenset())
        out = {}
        for name, hint in hints.items():
            tp, required, alias = strip(hint)
            out[alias or name] = (tp, name in required_keys if required is None else required)
        _FIELDS[td] = out
    return _FIELDS[td]


def type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp)


def discriminator(td: Any) -> tuple | None:
    """The `type` literals of a TypedDict, if its `type` is a Literal."""
    tp = fields_of(td).get("type")
    if tp and typing.get_origin(tp[0]) is typing.Literal:
        return typing.get_args(tp[0])
    return None


def check(tp: Any, value: Any, path: list) -> None:
    tp, _, _ = strip(tp)
    if tp is Any or tp is object:
        return
    if tp is type(None) or tp is None:
        if value is not None:
            raise Invalid(path, f"expected null, found {json.dumps(value)[:60]}")
        return
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in _UNIONS:
        members = list(args)
        # A union of TypedDicts told apart by `type`: check against the matching one(s).
        if isinstance(value, dict) and "type" in value:
            tagged = [m for m in members if is_typeddict(strip(m)[0]) and discriminator(strip(m)[0])]
            if tagged:
                matching = [m for m in tagged if value["type"] in discriminator(strip(m)[0])]
                if matching:
                    members = matching + [m for m in members if m not in tagged]
        best: Invalid | None = None
        for member in members:
            try:
                check(member, value, path)
                return
            except Invalid as exc:
                if best is None or len(exc.path) > len(best.path):
                    best = exc
        assert best is not None
        raise best
    if origin is typing.Literal or origin is typing_extensions.Literal:
        if not any(value == a and type(value) is type(a) for a in args):
            raise Invalid(path, f"{json.dumps(value)[:60]} is not one of {list(args)} [literal_error]")
        return
    if is_typeddict(tp):
        if not isinstance(value, dict):
            raise Invalid(path, f"expected an object ({type_name(tp)}), found {type(value).__name__}")
        fields = fields_of(tp)
        for key in value:
            if key not in fields:
                raise Invalid(path + [key], f"unknown key for {type_name(tp)} [extra_forbidden]")
        for key, (_, required) in fields.items():
            if required and key not in value:
                raise Invalid(path + [key], f"required by {type_name(tp)} [missing]")
        for key, item in value.items():
            check(fields[key][0], item, path + [key])
        return
    if origin in _SEQUENCES or type_name(origin) == "SequenceNotStr" or type_name(tp) == "SequenceNotStr":
        if not isinstance(value, list):
            raise Invalid(path, f"expected an array, found {type(value).__name__}")
        item_type = args[0] if args else Any
        for i, item in enumerate(value):
            check(item_type, item, path + [i])
        return
    if origin in _MAPPINGS:
        if not isinstance(value, dict):
            raise Invalid(path, f"expected an object, found {type(value).__name__}")
        item_type = args[1] if len(args) == 2 else Any
        for k, item in value.items():
            check(item_type, item, path + [k])
        return
    if tp is bool:
        if not isinstance(value, bool):
            raise Invalid(path, f"expected a bool, found {json.dumps(value)[:60]} [bool_type]")
        return
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Invalid(path, f"expected an int, found {json.dumps(value)[:60]} [int_type]")
        return
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Invalid(path, f"expected a number, found {json.dumps(value)[:60]} [float_type]")
        return
    if tp is str:
        if not isinstance(value, str):
            raise Invalid(path, f"expected a string, found {json.dumps(value)[:60]} [string_type]")
        return
    raise Invalid(path, f"no JSON value is checked against {tp!r} here [unsupported_type]")


def validate(body: Any) -> None:
    if not isinstance(body, dict):
        raise Invalid([], f"expected a JSON object, found {type(body).__name__}")
    streaming, non_streaming = TYPES[KIND]()
    if body.get("stream") is True:
        check(streaming, body, [])
    else:
        check(non_streaming, body, [])


if __name__ == "__main__":
    sys.exit(verdicts.main("openai_validate", validate, Invalid))
