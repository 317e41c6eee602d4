"""LangChain (`langchain-openai`) holding a two-turn tool conversation through the gateway's
chat-completions door: `ChatOpenAI(...).bind_tools([now])`, the tool loop run by hand (invoke,
run each call, append a ToolMessage, invoke again); each turn asks for two calls (`[tools=2]`).
Reads {base_url, key, model, effort} as JSON on stdin; prints what it saw as JSON on stdout."""

import json
import sys
from importlib.metadata import version

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

cfg = json.load(sys.stdin)
calls = 0


@tool
def now() -> str:
    """The current time."""
    global calls
    calls += 1
    return f"It is 12:0{calls} UTC."


extra = {"reasoning_effort": cfg["effort"]} if cfg.get("effort") else {}
llm = ChatOpenAI(
    model=cfg["model"], base_url=cfg["base_url"], api_key=cfg["key"], max_retries=0, **extra
).bind_tools([now])
messages = []
turns = []
for prompt in ["What time is it? [tools=2]", "And what time is it now? [tools=2]"]:
    messages.append(HumanMessage(prompt))
    for _ in range(5):
        reply = llm.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            messages.append(ToolMessage(now.invoke(call["args"]), tool_call_id=call["id"]))
    turns.append({"text": reply.content, "calls": sum(len(getattr(m, "tool_calls", None) or []) for m in messages)})
print(json.dumps({"version": version("langchain-openai"), "turns": turns, "tool_runs": calls}))
