#!/usr/bin/env python3
"""Validate Gemini generateContent request bodies, part by part, with the official `google-genai`
client's own pydantic types.

Usage:
    genai_validate.py < BODIES

BODIES holds one or more JSON bodies written one after another (pretty-printed as `hermes
preview` prints them, or one per line). Each body is checked as it goes on the wire:

  1. The top level is an object whose keys are exactly some of `contents`, `systemInstruction`,
     `tools`, `toolConfig`, `generationConfig`, `safetySettings`, `cachedContent`, `labels` (the
     request fields of `models.generateContent` that go in the body: google-genai's
     `models._GenerateContentParameters_to_mldev` / `_GenerateContentConfig_to_mldev` write
     these; the model is the URL path). `contents` is required, a non-empty array.
  2. Every value is validated with the SDK type of its field: each `contents[i]` first part by
     part with `types.Part`, then as a whole with `types.Content`; `systemInstruction` likewise;
     each `tools[i]` with `types.Tool` (its `functionDeclarations` are
     `types.FunctionDeclaration`s); `toolConfig` with `types.ToolConfig`; `generationConfig` with
     `types.GenerationConfig` (its `thinkingConfig` with `types.ThinkingConfig`); each
     `safetySettings[i]` with `types.SafetySetting`; `cachedContent` a string; `labels` a string
     map.
     How: `Model.model_validate_json(<the value's JSON text>, strict=True)`. The SDK's models
     all derive from `google.genai._common.BaseModel`, whose `model_config` sets
     `extra='forbid'` (an unknown key at any depth fails: `extra_forbidden`),
     `alias_generator=to_camel` with `populate_by_name=True` (the camelCase wire names are the
     aliases) and `val_json_bytes='base64'` (a `bytes` field such as `Part.thought_signature`
     must be base64 text: validating the JSON text, not a Python dict, makes pydantic decode
     it). `strict=True`: no coercion (`"1024"` is not an int, `"true"` not a bool).
  3. Two gaps of that validation are closed here:
       * `populate_by_name=True` also accepts the Python field names (`thought_signature` for
         `thoughtSignature`); a body must use the wire names, so every key of every object the
         SDK types describe must be a field's alias (walked over the models' `model_fields`);
       * the SDK's enums (`_common.CaseInSensitiveEnum`, e.g. `ThinkingLevel`) accept an unknown
         value with only a `UserWarning`; any warning raised while validating (deprecation
         notices aside) is an error.
  4. Two rules the types leave to the API reference (ai.google.dev/api/caching, `Content`,
     `Part`), written down in the SDK's own field descriptions too: a content's `role` is
     `user` or `model` (`types.Content.role`: "Must be either 'user' or 'model'"); a part holds
     exactly one data member (`Part`'s `data` union: `text`, `inlineData`, `fileData`,
     `functionCall`, `functionResponse`, `executableCode`, `codeExecutionResult`, `toolCall`,
     `toolResponse`).
Free-form values stay free: `functionCall.args`, `functionResponse.response` and
`parametersJsonSchema` are `dict[str, Any]` / `Any` in the SDK; keys there are data.

Standard output: one line per body, in input order: `ok`, or `invalid <path>: <reason>` where
path is dotted (`contents.1.parts.0.functionCall.foo`). Exit status: 0 when every body is valid,
1 when one is not (each also named on standard error), 2 for input that is not JSON bodies.
"""

from __future__ import annotations

import json
import os
import sys
import types as pytypes
import typing
import warnings
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import verdicts

try:
    import pydantic
    from google.genai import _common, types
except ImportError as exc:  # pragma: no cover - reported to the caller
    print(f"genai_validate: cannot import google-genai ({exc}); install .ci/sdk-requirements.txt", file=sys.stderr)
    sys.exit(3)

TOP_LEVEL = {
    "contents",
    "systemInstruction",
    "tools",
    "toolConfig",
    "generationConfig",
    "safetySettings",
    "cachedContent",
    "labels",
}
ROLES = ("user", "model")
PART_DATA = (
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
    "toolCall",
    "toolResponse",
)


class Invalid(Exception):
    """A body is not valid: the message is `<path>: <reason>`."""


def dotted(path: list) -> str:
    return ".".join(str(p) for p in path) or "(body)"


def _models_in(annotation: Any) -> list[tuple[str, Any]]:
    """How a value of `annotation` holds SDK models: ("model", M), ("list", M), ("dict", M)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, _common.BaseModel):
        return [("model", annotation)]
    if origin is typing.Union or origin is getattr(pytypes, "UnionType", typing.Union):
        found: list[tuple[str, Any]] = []
        for arg in args:
            found.extend(_models_in(arg))
        return found
    if origin in (list, typing.List) and args:
        return [("list", m) for kind, m in _models_in(args[0]) if kind == "model"]
    if origin in (dict, typing.Dict) and len(args) == 2:
        return [("dict", m) for kind, m in _models_in(args[1]) if kind == "model"]
    return []


def check_wire_names(model: type, data: Any, path: list) -> None:
    """Every key of `data` (an object `model` describes), at every depth, is a wire name."""
    if not isinstance(data, dict):
        return
    fields = model.model_fields
    by_alias = {(f.alias or name): f for name, f in fields.items()}
    for key, value in data.items():
        field = by_alias.get(key)
        if field is None:
            if key in fields:
                alias = fields[key].alias
                raise Invalid(
                    f"{dotted(path + [key])}: `{key}` is the SDK's Python name of the field, not "
                    f"its wire name `{alias}` [not_the_wire_name]"
                )
            raise Invalid(f"{dotted(path + [key])}: unknown key [extra_forbidden]")
        for kind, sub in _models_in(field.annotation):
            if kind == "model":
                check_wire_names(sub, value, path + [key])
            elif kind == "list" and isinstance(value, list):
                for i, item in enumerate(value):
                    check_wire_names(sub, item, path + [key, i])
            elif kind == "dict" and isinstance(value, dict):
                for k, item in value.items():
                    check_wire_names(sub, item, path + [key, k])
            break


def _pick(errors: list[dict]) -> dict:
    # An unknown key is the most telling error; else the deepest.
    extras = [e for e in errors if e.get("type") == "extra_forbidden"]
    if extras:
        return extras[0]
    return max(errors, key=lambda e: len(e.get("loc", ())))


def validate(model: type, data: Any, path: list) -> None:
    """`data` validates as the SDK's `model` (see the module doc, 2 and 3)."""
    if not isinstance(data, dict):
        raise Invalid(f"{dotted(path)}: expected an object for {model.__name__}, found {type(data).__name__}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.model_validate_json(json.dumps(data), strict=True)
        except pydantic.ValidationError as exc:
            err = _pick(exc.errors(include_url=False))
            msg = err.get("msg", "invalid")
            if err.get("type") == "extra_forbidden":
                msg = f"unknown key: {msg}"
            raise Invalid(f"{dotted(path + list(err.get('loc', ())))}: {msg} [{err.get('type')}] "
                          f"({model.__name__})") from None
    caught = [w for w in caught if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning))]
    if caught:
        raise Invalid(f"{dotted(path)}: {caught[0].message} [{model.__name__}: a warning is an error here]")
    check_wire_names(model, data, path)


def validate_content(content: Any, path: list, need_role: bool) -> None:
    if not isinstance(content, dict):
        raise Invalid(f"{dotted(path)}: expected an object (a Content), found {type(content).__name__}")
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        raise Invalid(f"{dotted(path + ['parts'])}: a content needs a non-empty array of parts")
    for j, item in enumerate(parts):
        validate(types.Part, item, path + ["parts", j])
        held = [k for k in PART_DATA if k in item]
        if len(held) != 1:
            raise Invalid(f"{dotted(path + ['parts', j])}: a part holds exactly one data member "
                          f"(API reference, Part.data), this one {held or 'none'} [part_data]")
    validate(types.Content, content, path)
    role = content.get("role")
    if need_role and role not in ROLES:
        raise Invalid(f"{dotted(path + ['role'])}: must be 'user' or 'model', not {role!r} [role]")
    if not need_role and role is not None and role not in ROLES:
        raise Invalid(f"{dotted(path + ['role'])}: must be 'user' or 'model', not {role!r} [role]")


def validate_list(model: type, value: Any, path: list) -> None:
    if not isinstance(value, list):
        raise Invalid(f"{dotted(path)}: expected an array of {model.__name__}, found {type(value).__name__}")
    for i, item in enumerate(value):
        validate(model, item, path + [i])


def check(body: Any) -> None:
    if not isinstance(body, dict):
        raise Invalid(f"(body): expected a JSON object, found {type(body).__name__}")
    for key in body:
        if key not in TOP_LEVEL:
            raise Invalid(f"{key}: not a generateContent body key (allowed: {', '.join(sorted(TOP_LEVEL))}) [top_level]")
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise Invalid("contents: required, a non-empty array of Content [top_level]")
    for i, content in enumerate(contents):
        validate_content(content, ["contents", i], need_role=True)
    if "systemInstruction" in body:
        validate_content(body["systemInstruction"], ["systemInstruction"], need_role=False)
    if "tools" in body:
        validate_list(types.Tool, body["tools"], ["tools"])
    if "toolConfig" in body:
        validate(types.ToolConfig, body["toolConfig"], ["toolConfig"])
    if "generationConfig" in body:
        config = body["generationConfig"]
        if isinstance(config, dict) and "thinkingConfig" in config:
            validate(types.ThinkingConfig, config["thinkingConfig"], ["generationConfig", "thinkingConfig"])
        validate(types.GenerationConfig, config, ["generationConfig"])
    if "safetySettings" in body:
        validate_list(types.SafetySetting, body["safetySettings"], ["safetySettings"])
    if "cachedContent" in body and not isinstance(body["cachedContent"], str):
        raise Invalid("cachedContent: must be a string (a cached content name) [string_type]")
    if "labels" in body:
        labels = body["labels"]
        if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
            raise Invalid("labels: must be an object of strings [dict_type]")


if __name__ == "__main__":
    sys.exit(verdicts.main("genai_validate", check, Invalid))
