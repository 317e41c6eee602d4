"""What the Responses SDK scripts share (openai_responses_chain.py, openai_responses_turns.py):
the official client of the gateway their input names, the one tool they offer, and the
arguments every request of theirs sends."""

from openai import OpenAI

TOOLS = [
    {
        "type": "function",
        "name": "now",
        "description": "The time",
        "parameters": {"type": "object", "properties": {}},
        "strict": False,
    }
]


def client(cfg):
    """The official client of the gateway at `cfg["base_url"]` with `cfg["key"]`, no retries."""
    return OpenAI(api_key=cfg["key"], base_url=cfg["base_url"], max_retries=0)


def args(cfg, **fixed):
    """`cfg["model"]`, [`TOOLS`], `fixed`, and with `cfg["effort"]` that reasoning effort
    (summaries on)."""
    out = dict(model=cfg["model"], tools=TOOLS, **fixed)
    if cfg.get("effort"):
        out["reasoning"] = {"effort": cfg["effort"], "summary": "auto"}
    return out
