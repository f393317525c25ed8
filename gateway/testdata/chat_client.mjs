// The official openai package, pointed at loom's gateway: a plain
// completion, a streamed one, and a tool-call round trip. Prints one JSON
// object with what the client saw.
//
//   LOOM_BASE_URL=http://127.0.0.1:PORT/v1 node chat_client.mjs
import OpenAI from "openai";

const client = new OpenAI({ apiKey: "client-side-key", baseURL: process.env.LOOM_BASE_URL });
const out = {};

// 1. Not streamed, with the headers loom adds.
const plain = await client.chat.completions
  .create(
    { model: "fake-model", messages: [{ role: "user", content: "plain question" }], temperature: 0.5 },
    { headers: { "X-Loom-Session": "node-plain", "X-Loom-Channel": "slack" } },
  )
  .withResponse();
out.plain = plain.data.choices[0].message.content;
out.prefix = plain.response.headers.get("x-loom-prefix-sha256");
out.prompt_tokens = plain.response.headers.get("x-loom-prompt-tokens");

// 2. Streamed: the deltas as they arrive.
const stream = await client.chat.completions.create(
  { model: "fake-model", stream: true, messages: [{ role: "user", content: "stream please" }] },
  { headers: { "X-Loom-Session": "node-stream" } },
);
out.deltas = [];
for await (const chunk of stream) {
  const d = chunk.choices[0]?.delta?.content;
  if (d) out.deltas.push(d);
}

// 3. A tool loop: the model asks for a tool, the client answers it.
const tools = [{ type: "function", function: { name: "weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
const messages = [{ role: "user", content: "weather in Oslo?" }];
const first = await client.chat.completions.create(
  { model: "fake-model", messages, tools },
  { headers: { "X-Loom-Session": "node-tools" } },
);
const call = first.choices[0].message.tool_calls[0];
out.tool_call = { name: call.function.name, arguments: JSON.parse(call.function.arguments) };
messages.push(first.choices[0].message);
messages.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify({ temp_c: 21 }) });
const second = await client.chat.completions.create(
  { model: "fake-model", messages, tools },
  { headers: { "X-Loom-Session": "node-tools" } },
);
out.tool_answer = second.choices[0].message.content;

// 4. A malformed request: OpenAI's error shape, naming the field.
try {
  await client.chat.completions.create({ model: "fake-model", messages: [{ role: "wizard", content: "x" }] });
  out.bad = "accepted";
} catch (err) {
  out.bad = { status: err.status, param: err.param ?? err.error?.param };
}
console.log(JSON.stringify(out));
