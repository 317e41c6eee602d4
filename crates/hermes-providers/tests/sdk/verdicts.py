"""What the validator scripts of JSON bodies share (genai_validate.py, openai_validate.py):
reading the bodies from standard input, one JSON value after another, and printing one verdict
line per body, `ok` or `invalid REASON` (the reason also on standard error). The exit code is 0
when every body is valid, 1 when some is not, 2 when the input is not JSON bodies.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable


def read_bodies(text: str) -> list[Any]:
    decoder = json.JSONDecoder()
    bodies = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return bodies
        value, pos = decoder.raw_decode(text, pos)
        bodies.append(value)


def main(name: str, check: Callable[[Any], None], invalid: type[Exception]) -> int:
    """Runs `check` over every body: a body is invalid when it raises `invalid`."""
    try:
        bodies = read_bodies(sys.stdin.read())
    except json.JSONDecodeError as exc:
        print(f"{name}: the input is not JSON bodies: {exc}", file=sys.stderr)
        return 2
    if not bodies:
        print(f"{name}: no body given", file=sys.stderr)
        return 2
    bad = 0
    for i, body in enumerate(bodies):
        try:
            check(body)
            print("ok")
        except invalid as exc:
            bad += 1
            print(f"invalid {exc}")
            print(f"{name}: body {i}: {exc}", file=sys.stderr)
    return 1 if bad else 0
