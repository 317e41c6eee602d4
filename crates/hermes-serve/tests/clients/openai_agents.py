"""The OpenAI Agents SDK (`openai-agents`) holding a two-turn tool conversation through the
gateway: an Agent on `OpenAIChatCompletionsModel` (the chat-completions door) or, with
`responses` set, on the SDK's default `OpenAIResponsesModel` (the Responses door) over `AsyncOpenAI`,
tracing off, with the harmless tool `now`; each turn asks for two calls (`[tools=2]`), the second
turn continues from the first's `to_input_list()`. Reads {base_url, key, model, effort, responses} as JSON on
stdin; prints what it saw as JSON on stdout."""

import asyncio
import json
import sys
from importlib.metadata import version

from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI
from openai.types.shared import Reasoning

cfg = json.load(sys.stdin)
set_tracing_disabled(True)
calls = 0


@function_tool
def now() -> str:
    """The current time."""
    global calls
    calls += 1
    return f"It is 12:0{calls} UTC."


async def main():
    client = AsyncOpenAI(base_url=cfg["base_url"], api_key=cfg["key"], max_retries=0)
    settings = ModelSettings(reasoning=Reasoning(effort=cfg["effort"])) if cfg.get("effort") else ModelSettings()
    agent = Agent(
        name="clock",
        instructions="Answer briefly; use the tools you have.",
        model=(OpenAIResponsesModel if cfg.get("responses") else OpenAIChatCompletionsModel)(
            model=cfg["model"], openai_client=client
        ),
        model_settings=settings,
        tools=[now],
    )
    items = []
    turns = []
    for prompt in ["What time is it? [tools=2]", "And what time is it now? [tools=2]"]:
        items = items + [{"role": "user", "content": prompt}]
        result = await Runner.run(agent, items, max_turns=8)
        items = result.to_input_list()
        turns.append({"text": result.final_output})
    print(json.dumps({"version": version("openai-agents"), "turns": turns, "tool_runs": calls}))


asyncio.run(main())
