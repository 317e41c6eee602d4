#!/usr/bin/env python3
"""Validate Anthropic Messages request bodies against the official Python SDK's request types.

Usage:
    anthropic_validate.py [--variant direct|vertex|foundry] [--beta] [--each] [FILE ...]

Each FILE (or standard input when no FILE, or for "-") holds one or more JSON bodies, written one
after another (pretty-printed or one per line). Every body is validated with a pydantic
`TypeAdapter` over the SDK's own request type, chosen by the body's `stream`:
`anthropic.types.message_create_params.MessageCreateParamsStreaming` when `stream` is true, else
`MessageCreateParamsNonStreaming`. With `--beta`, the SDK's beta request types instead
(`anthropic.types.beta.message_create_params`, what `client.beta.messages.create(..., betas=[...])`
sends): the shapes behind a beta header — a `{"role": "system"}` message inside `messages`,
`thinking.block_binding`, `compaction` — are typed there only. `betas` is a header there, never a
body key.

Exit status: 0 when every body is valid; 1 when one is not, with one line per invalid body on
standard error naming the offending path (`messages.1.content.0.foo: ...`); 2 for a usage error or
input that is not JSON. With `--each`, one line per body is printed on standard output as well:
`ok` or `invalid <reason>`, in input order (so a caller can check many bodies in one run).

Why the SDK's types are not handed to pydantic as they are
-----------------------------------------------------------
1. TypedDicts accept unknown keys. A real Anthropic endpoint answers an unknown key with
   `400 ...: Extra inputs are not permitted`, so here EVERY object must have only the keys its
   TypedDict declares, at every level.
2. The SDK annotates lists as `Iterable[...]` (e.g. `MessageCreateParamsBase.messages`,
   `message_content_param.MessageContentParam`). pydantic validates an `Iterable` lazily: the
   items are not looked at until someone iterates, so an eager `validate_python` accepts any list.
3. `MessageContentParam` also admits `anthropic.types.content_block.ContentBlock`, the *response*
   models (pydantic `BaseModel`s with extra keys allowed), so that SDK users can pass a response
   block back as a Python object. A JSON body cannot hold a Python object; letting a dict match
   those models would accept a thinking block with any extra key.

So the SDK's annotations are walked (typing introspection only; nothing is copied from the SDK)
and mirrored into an equivalent type, which is then validated by pydantic:
  * every `TypedDict` becomes a TypedDict with the same name, the same keys and the same
    required/optional split, configured with `extra="forbid"` -- set explicitly on each one, not
    inherited. Where the SDK itself sets a pydantic config on a TypedDict (`set_pydantic_config` in
    `anthropic._models`, used by `anthropic.types.tool_param.InputSchemaTyped` with
    `extra="allow"`: a JSON schema is open by design) that config is kept;
  * `Iterable[X]` / `Sequence[X]` / `List[X]` become `List[X]` (eager);
  * `Dict[str, object]` stays free-form (a tool_use `input`, a JSON schema's `properties`): keys
    there are data, not schema;
  * members that a JSON body cannot carry are dropped from unions: response `BaseModel`s,
    `IO[bytes]` / `PathLike` / `bytes` (the SDK turns file inputs into base64 strings before
    sending, `anthropic._types.Base64FileInput`);
  * any annotation this walker does not know makes it fail loudly (so a new SDK construct can
    never be skipped silently).
Validation runs with `strict=True`: no coercion (`"16384"` is not an int, `1` is not a bool).

Two checks come from the SDK's client code rather than its types:
  * `user_profile_id` and `workspace_id` are declared on `MessageCreateParamsBase`, but
    `anthropic.resources.messages.messages.Messages.create` sends them as the
    `anthropic-user-profile-id` / `anthropic-workspace-id` headers, never in the body: a body
    carrying them is not one the SDK would send;
  * `--variant vertex`: `anthropic.lib.vertex._client._prepare_options` pops `model` from the body
    (it goes into the URL path) and sets `anthropic_version` in it. A Vertex body must therefore
    have no `model` and a string `anthropic_version`; it is validated after removing
    `anthropic_version` and adding a placeholder `model`. `--variant foundry` is validated like
    `direct`: `anthropic.lib.foundry.AnthropicFoundry` uses the same `Messages` resource.
"""

from __future__ import annotations

import argparse
import collections.abc
import json
import os
import sys
import types
import typing
from typing import Any, Dict, List, Union

import typing_extensions as te

try:
    import anthropic
    import pydantic
    from anthropic.types import message_create_params
    from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
except ImportError as exc:  # pragma: no cover - reported to the caller
    print(f"anthropic_validate: cannot import the SDK ({exc}); install .ci/sdk-requirements.txt", file=sys.stderr)
    sys.exit(3)

# Keys declared on MessageCreateParamsBase that Messages.create sends as headers, not body keys.
HEADER_ONLY_KEYS = ("user_profile_id", "workspace_id")
VERTEX_PLACEHOLDER_MODEL = "vertex-placeholder-model"


class _NotJson:
    """Marks an annotation a JSON body cannot carry (a Python object)."""


NOT_JSON = _NotJson()

_QUALIFIERS = {te.Required, te.NotRequired, getattr(te, "ReadOnly", te.Required)}
_SEQUENCES = {collections.abc.Iterable, collections.abc.Sequence, collections.abc.Collection, list}
_MAPPINGS = {dict, collections.abc.Mapping}
_SCALARS = {str, int, float, bool, type(None), object}


class StrictMirror:
    """Mirrors SDK request annotations into eager, extra-forbidding types (see module doc)."""

    def __init__(self) -> None:
        self._typed_dicts: dict[type, type] = {}
        # TypedDict name -> list of {key: allowed literal values} for its required Literal keys
        # (`type`, `role`): used only to pick the relevant union member when reporting an error.
        self.discriminators: dict[str, list[dict[str, tuple[Any, ...]]]] = {}

    def mirror(self, tp: Any) -> Any:
        origin = te.get_origin(tp)
        args = te.get_args(tp)
        if te.is_typeddict(tp):
            return self._typed_dict(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return NOT_JSON  # a response model: only a Python object can be one
        if origin is te.Annotated:
            for meta in tp.__metadata__:
                if getattr(meta, "alias", None):
                    raise TypeError(f"aliased field {tp!r}: the wire key differs; not supported")
            return self.mirror(args[0])
        if origin is Union or origin is getattr(types, "UnionType", Union):
            members: list[Any] = []
            for arg in args:
                m = self.mirror(arg)
                if m is NOT_JSON:
                    continue
                for flat in te.get_args(m) if te.get_origin(m) is Union else (m,):
                    if flat not in members:
                        members.append(flat)
            if not members:
                return NOT_JSON
            if len(members) == 1:
                return members[0]
            return Union[tuple(members)]
        if origin is te.Literal:
            return tp
        if origin in _SEQUENCES:
            item = self.mirror(args[0]) if args else object
            return NOT_JSON if item is NOT_JSON else List[item]  # type: ignore[valid-type]
        if origin in _MAPPINGS:
            value = self.mirror(args[1]) if args else object
            if value is NOT_JSON:
                return NOT_JSON
            return Dict[args[0] if args else str, value]  # type: ignore[valid-type]
        if tp in _SCALARS:
            return tp
        if tp is bytes or tp is os.PathLike or origin is os.PathLike or origin is typing.IO or tp is typing.IO:
            return NOT_JSON
        raise TypeError(f"anthropic_validate does not know the annotation {tp!r}")

    def _typed_dict(self, td: type) -> type:
        if td in self._typed_dicts:
            return self._typed_dicts[td]
        hints = te.get_type_hints(td, include_extras=True)
        fields: dict[str, Any] = {}
        literals: dict[str, tuple[Any, ...]] = {}
        for key, ann in hints.items():
            required = key in td.__required_keys__
            while te.get_origin(ann) in _QUALIFIERS:
                if te.get_origin(ann) is te.Required:
                    required = True
                elif te.get_origin(ann) is te.NotRequired:
                    required = False
                ann = te.get_args(ann)[0]
            mirrored = self.mirror(ann)
            if mirrored is NOT_JSON:
                continue  # only a Python object fits: a JSON body must not carry the key
            if required and te.get_origin(mirrored) is te.Literal:
                literals[key] = te.get_args(mirrored)
            fields[key] = te.Required[mirrored] if required else te.NotRequired[mirrored]
        mirror_cls = te.TypedDict(td.__name__, fields, total=False)  # type: ignore[operator]
        mirror_cls.__module__ = __name__
        config = dict(getattr(td, "__pydantic_config__", None) or {})
        config.setdefault("extra", "forbid")
        mirror_cls.__pydantic_config__ = ConfigDict(**config)  # type: ignore[attr-defined]
        self._typed_dicts[td] = mirror_cls
        self.discriminators.setdefault(td.__name__, []).append(literals)
        return mirror_cls


_MIRROR = StrictMirror()
_ADAPTERS = {
    (False, False): TypeAdapter(_MIRROR.mirror(message_create_params.MessageCreateParamsNonStreaming)),
    (False, True): TypeAdapter(_MIRROR.mirror(message_create_params.MessageCreateParamsStreaming)),
}


def _adapter(beta: bool, stream: bool) -> TypeAdapter:
    """The adapter of the (beta) request type for a (streamed) body; the beta ones are built on
    first use, so an SDK without them still validates plain bodies."""
    if (beta, stream) not in _ADAPTERS:
        from anthropic.types.beta import message_create_params as beta_params

        kind = "MessageCreateParamsStreaming" if stream else "MessageCreateParamsNonStreaming"
        _ADAPTERS[(beta, stream)] = TypeAdapter(_MIRROR.mirror(getattr(beta_params, kind)))
    return _ADAPTERS[(beta, stream)]


def _data_path(data: Any, loc: tuple[Any, ...]) -> tuple[list[Any], bool]:
    """The path inside `data` that a pydantic error location points at, without pydantic's union
    member tags; and whether every union member on the way fits the data (its required Literal
    keys such as `type` / `role` equal the data's), i.e. whether the error is relevant."""
    path: list[Any] = []
    node = data
    relevant = True
    for i, step in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            path.append(step)
            node = node[step]
        elif isinstance(node, dict) and isinstance(step, str) and step in node:
            path.append(step)
            node = node[step]
        elif last and isinstance(node, dict):
            path.append(step)  # a missing key, or an unknown one
        else:
            # A union member tag (`ThinkingBlockParam`, `str`, `list[...]`).
            tag = str(step)
            if tag in _MIRROR.discriminators and isinstance(node, dict):
                fits = any(
                    all(node.get(k) in allowed for k, allowed in lits.items())
                    for lits in _MIRROR.discriminators[tag]
                )
                relevant = relevant and fits
            elif isinstance(node, dict) and tag.startswith(("str", "list[", "dict[", "int", "bool")):
                relevant = False  # a scalar/list member tried on an object
            elif isinstance(node, list) and not tag.startswith("list["):
                relevant = False
            elif isinstance(node, str) and tag != "str":
                relevant = False
    return path, relevant


def _one_line(err: dict[str, Any], path: list[Any]) -> str:
    where = ".".join(str(p) for p in path) or "(body)"
    msg = err.get("msg", "invalid")
    if err.get("type") == "extra_forbidden":
        msg = "unknown key: Extra inputs are not permitted"
    return f"{where}: {msg} [{err.get('type')}]"


def _reason(exc: ValidationError, data: Any) -> str:
    errors = exc.errors(include_url=False)
    scored = []
    for order, err in enumerate(errors):
        path, relevant = _data_path(data, tuple(err.get("loc", ())))
        scored.append((relevant, len(path), -order, err, path))
    relevant_ones = [s for s in scored if s[0]]
    if relevant_ones:
        best = max(relevant_ones, key=lambda s: (s[1], s[2]))
        return _one_line(best[3], best[4])
    # No union member fits the data's `type` / `role`: say so at the deepest such key.
    tags = [s for s in scored if s[3].get("type") == "literal_error" and s[4] and s[4][-1] in ("type", "role")]
    if tags:
        best = max(tags, key=lambda s: (s[1], s[2]))
        where = ".".join(str(p) for p in best[4])
        return f"{where}: {best[3].get('input')!r} matches no member of the SDK's union [literal_error]"
    best = max(scored, key=lambda s: (s[1], s[2]))
    return _one_line(best[3], best[4]) + (f" (+{len(errors) - 1} more)" if len(errors) > 1 else "")


def check(body: Any, variant: str, beta: bool = False) -> str | None:
    """None when `body` is a body the SDK would send and accept for `variant`; else a reason."""
    if not isinstance(body, dict):
        return f"(body): expected a JSON object, found {type(body).__name__}"
    if variant == "vertex":
        if "model" in body:
            return "model: must be absent on Vertex (the SDK moves it into the URL path)"
        version = body.get("anthropic_version")
        if not isinstance(version, str) or not version:
            return "anthropic_version: a Vertex body must carry anthropic_version (a string)"
        body = {k: v for k, v in body.items() if k != "anthropic_version"}
        body["model"] = VERTEX_PLACEHOLDER_MODEL
    for key in HEADER_ONLY_KEYS + (("betas",) if beta else ()):
        if key in body:
            return f"{key}: the SDK sends this as a header, never in the body"
    adapter = _adapter(beta, body.get("stream") is True)
    try:
        adapter.validate_python(body, strict=True)
    except ValidationError as exc:
        return _reason(exc, body)
    return None


def read_bodies(text: str, source: str) -> list[Any]:
    decoder = json.JSONDecoder()
    bodies = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return bodies
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"anthropic_validate: {source}: not JSON: {exc}") from None
        bodies.append(value)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", choices=("direct", "vertex", "foundry"), default="direct")
    parser.add_argument("--each", action="store_true", help="print ok / invalid REASON per body")
    parser.add_argument("--beta", action="store_true", help="validate against the beta request types")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args(argv)

    bodies: list[tuple[str, Any]] = []
    try:
        for name in args.files or ["-"]:
            text = sys.stdin.read() if name == "-" else open(name, encoding="utf-8").read()
            source = "stdin" if name == "-" else name
            bodies.extend((source, b) for b in read_bodies(text, source))
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"anthropic_validate: {exc}", file=sys.stderr)
        return 2
    if not bodies:
        print("anthropic_validate: no JSON body given", file=sys.stderr)
        return 2

    failed = 0
    for index, (source, body) in enumerate(bodies):
        reason = check(body, args.variant, args.beta)
        if args.each:
            print("ok" if reason is None else f"invalid {reason}")
        if reason is not None:
            failed += 1
            print(f"invalid body #{index} ({source}, {args.variant}): {reason}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
