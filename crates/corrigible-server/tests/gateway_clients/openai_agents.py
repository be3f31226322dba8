"""An OpenAI Agents SDK agent with one function tool, through the gateway. The scripted
upstream first sends a call with broken arguments, then one with the wrong argument: the agent
must only see the valid call, run its tool once, and finish."""

import asyncio
import os

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

set_tracing_disabled(True)


@function_tool
def get_weather(city: str) -> str:
    """Current weather in a city."""
    print(f"tool ran with city={city}")
    return f"21 °C and sunny in {city}"


async def main() -> None:
    client = AsyncOpenAI(base_url=os.environ["GATEWAY_BASE_URL"], api_key="unused", max_retries=0)
    agent = Agent(
        name="weather",
        instructions="Answer with the weather tool.",
        tools=[get_weather],
        model=OpenAIChatCompletionsModel(model="scripted", openai_client=client),
    )
    result = await Runner.run(agent, "What is the weather in Paris?")
    print(f"final: {result.final_output}")


asyncio.run(main())
