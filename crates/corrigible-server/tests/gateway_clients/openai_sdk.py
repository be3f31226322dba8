"""The OpenAI Python SDK against the gateway: tools whole and streamed, tool_choice required,
a json_schema response format. The scripted upstream's first reply to each is wrong; the
client must only ever see the corrected one."""

import json
import os

from openai import OpenAI

client = OpenAI(base_url=os.environ["GATEWAY_BASE_URL"], api_key="unused", max_retries=0)

tools = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}]

# Whole, with tools.
raw = client.chat.completions.with_raw_response.create(
    model="scripted",
    messages=[{"role": "user", "content": "Weather in Paris?"}],
    tools=tools,
)
completion = raw.parse()
assert raw.headers["x-corrigible-outcome"] == "corrected", raw.headers
call = completion.choices[0].message.tool_calls[0]
assert call.function.name == "get_weather"
assert json.loads(call.function.arguments) == {"city": "Paris"}
assert completion.choices[0].finish_reason == "tool_calls"
assert completion.usage.total_tokens == 30, completion.usage

# Streamed, with usage.
stream = client.chat.completions.create(
    model="scripted",
    messages=[{"role": "user", "content": "Weather in Oslo?"}],
    tools=tools,
    stream=True,
    stream_options={"include_usage": True},
)
names, arguments, usage, finish = [], "", None, None
for chunk in stream:
    if chunk.usage is not None:
        usage = chunk.usage
    for choice in chunk.choices:
        finish = choice.finish_reason or finish
        for delta in choice.delta.tool_calls or []:
            if delta.function.name:
                names.append(delta.function.name)
            arguments += delta.function.arguments or ""
assert names == ["get_weather"], names
assert json.loads(arguments) == {"city": "Oslo"}
assert finish == "tool_calls"
assert usage.total_tokens == 30, usage

# tool_choice required.
completion = client.chat.completions.create(
    model="scripted",
    messages=[{"role": "user", "content": "Weather in Rome?"}],
    tools=tools,
    tool_choice="required",
)
assert completion.choices[0].message.tool_calls[0].function.name == "get_weather"

# A json_schema response format, read by the SDK's own parser.
completion = client.chat.completions.create(
    model="scripted",
    messages=[{"role": "user", "content": "Rome as JSON"}],
    response_format={
        "type": "json_schema",
        "json_schema": {
            "name": "weather",
            "schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
                "required": ["city", "celsius"],
            },
        },
    },
)
assert json.loads(completion.choices[0].message.content) == {"city": "Rome", "celsius": 30}

print("all checks passed")
