// The `openai` npm package against the gateway: a tool call whose first upstream reply is
// broken, whole and streamed with usage. The client must only see the corrected call.
const assert = require("node:assert/strict");
const OpenAI = require("openai");

const client = new OpenAI({ baseURL: process.env.GATEWAY_BASE_URL, apiKey: "unused", maxRetries: 0 });
const tools = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather in a city.",
    parameters: {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false,
    },
  },
}];

async function main() {
  const { data: completion, response } = await client.chat.completions
    .create({ model: "scripted", messages: [{ role: "user", content: "Weather in Paris?" }], tools })
    .withResponse();
  assert.equal(response.headers.get("x-corrigible-outcome"), "corrected");
  const call = completion.choices[0].message.tool_calls[0];
  assert.equal(call.function.name, "get_weather");
  assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });
  assert.equal(completion.usage.total_tokens, 30);

  const stream = await client.chat.completions.create({
    model: "scripted",
    messages: [{ role: "user", content: "Weather in Oslo?" }],
    tools,
    stream: true,
    stream_options: { include_usage: true },
  });
  let name = "";
  let args = "";
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      for (const delta of choice.delta.tool_calls ?? []) {
        name += delta.function?.name ?? "";
        args += delta.function?.arguments ?? "";
      }
    }
  }
  assert.equal(name, "get_weather");
  assert.deepEqual(JSON.parse(args), { city: "Oslo" });
  assert.equal(usage.total_tokens, 30);
  console.log("all checks passed");
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
