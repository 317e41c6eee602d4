"""Schemathesis hooks for `cargo xtask fuzz --api` (xtask/src/api_fuzz.rs): two checks of its own
beside Schemathesis's, run on every response of every generated case.

- `no_key_in_response`: no secret (the gateway key the run authenticates with, its secret half,
  the upstream's API key) appears in any response body or header.
- `no_turn_stored_after_4xx`: a request answered 4xx stored nothing — the gateway's SQLite store
  holds as many sessions, messages and kept responses after it as before it (counted read-only
  in `before_call`, so the run must use one worker).

The run passes them in the environment: HERMES_FUZZ_SECRETS (the secrets, one a line) and
HERMES_FUZZ_STORE (the path of the gateway's state.db).

`before_call` also keeps the run's own keys (HERMES_FUZZ_KEY_IDS, `hk_<id>` one a line) from
being revoked: a generated `DELETE /admin/v1/keys/{id}` or `POST /ui/keys/{id}/revoke` that names
one of them (by a value taken from a listing, in the stateful phase) is sent for an id nobody
holds instead, so every other case keeps its keys.
"""

import os
import sqlite3

import schemathesis

SECRETS = [s for s in os.environ.get("HERMES_FUZZ_SECRETS", "").splitlines() if len(s) >= 8]
STORE = os.environ.get("HERMES_FUZZ_STORE", "")
# The run's own keys' ids, `hk_<id>` and `<id>`.
KEY_IDS = {
    form
    for i in os.environ.get("HERMES_FUZZ_KEY_IDS", "").splitlines()
    if i
    for form in (i, i.removeprefix("hk_"))
}
# The tables a turn writes to.
TABLES = ("sessions", "messages", "responses")

_before = {}


def stored():
    """How many rows each table a turn writes to holds, read-only."""
    db = sqlite3.connect(f"file:{STORE}?mode=ro", uri=True, timeout=30)
    try:
        return tuple(db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES)
    finally:
        db.close()


@schemathesis.hook
def before_call(context, case, kwargs):
    params = case.path_parameters or {}
    if "/keys/" in case.path and str(params.get("id", "")).strip() in KEY_IDS:
        params["id"] = "hk_0000000000000000"
    _before[case.id] = stored()


@schemathesis.check
def no_key_in_response(ctx, response, case):
    """No secret of the run appears in a response's body or headers."""
    body = response.content.decode("utf-8", "replace") if response.content else ""
    headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
    for n, secret in enumerate(SECRETS, 1):
        where = [w for w, text in (("body", body), ("headers", headers)) if secret in text]
        if where:
            # Named by its place in HERMES_FUZZ_SECRETS (the gateway key, its secret half, the
            # upstream key), never by any of its characters.
            raise AssertionError(
                f"secret #{n} of the run (HERMES_FUZZ_SECRETS) is in the response's {' and '.join(where)}"
            )


@schemathesis.check
def no_turn_stored_after_4xx(ctx, response, case):
    """A request answered 4xx stored no session, message or response."""
    if not 400 <= response.status_code < 500:
        return None
    before = _before.get(case.id)
    if before is None:
        return None
    after = stored()
    if after != before:
        counts = ", ".join(f"{t} {b} -> {a}" for t, b, a in zip(TABLES, before, after))
        raise AssertionError(f"answered {response.status_code}, yet the store changed: {counts}")
    return True
