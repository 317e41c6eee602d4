"""pydantic-ai (`pydantic-ai-slim[openai]`) holding a two-turn tool conversation through the
gateway's chat-completions door: an Agent on `OpenAIChatModel` with
`OpenAIProvider(openai_client=AsyncOpenAI(...))` and the harmless tool `now`; each turn asks for
two calls (`[tools=2]`), the second continues with the first's `all_messages()`. Reads
{base_url, key, model} as JSON on stdin; prints what it saw as JSON on stdout."""

import asyncio
import json
import sys
from importlib.metadata import version

from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

cfg = json.load(sys.stdin)
calls = 0


async def main():
    client = AsyncOpenAI(base_url=cfg["base_url"], api_key=cfg["key"], max_retries=0)
    model = OpenAIChatModel(cfg["model"], provider=OpenAIProvider(openai_client=client))
    agent = Agent(model, instructions="Answer briefly; use the tools you have.")

    @agent.tool_plain
    def now() -> str:
        """The current time."""
        global calls
        calls += 1
        return f"It is 12:0{calls} UTC."

    history = None
    turns = []
    for prompt in ["What time is it? [tools=2]", "And what time is it now? [tools=2]"]:
        result = await agent.run(prompt, message_history=history)
        history = result.all_messages()
        turns.append({"text": result.output})
    print(json.dumps({"version": version("pydantic-ai-slim"), "turns": turns, "tool_runs": calls}))


asyncio.run(main())
