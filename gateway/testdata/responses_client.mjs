// The official openai package's Responses API, pointed at loom's gateway:
// a plain response, a streamed one, a function-tool round trip that sends
// only the new input with previous_response_id, a call with store: false,
// models.list, and an unknown workspace. Prints one JSON object with what
// the client saw.
//
//   LOOM_BASE_URL=http://127.0.0.1:PORT/v1 node responses_client.mjs
import OpenAI from "openai";

const client = new OpenAI({ apiKey: "client-side-key", baseURL: process.env.LOOM_BASE_URL, maxRetries: 0 });
const out = {};

// 1. Not streamed; the client's instructions go beside loom's prompt.
const plain = await client.responses
  .create(
    { model: "gpt-4.1", instructions: "CLIENT-INSTRUCTIONS-5c1", input: "plain question", temperature: 0.5 },
    { headers: { "X-Loom-Session": "resp-plain" } },
  )
  .withResponse();
out.plain = plain.data.output_text;
out.plain_status = plain.data.status;
out.plain_usage = plain.data.usage;
out.prefix = plain.response.headers.get("x-loom-prefix-sha256");

// 2. Streamed: every event's type, and the text deltas.
const stream = await client.responses.create(
  { model: "gpt-4.1", input: [{ role: "user", content: [{ type: "input_text", text: "stream please" }] }], stream: true },
  { headers: { "X-Loom-Session": "resp-stream" } },
);
out.events = [];
out.deltas = [];
for await (const ev of stream) {
  out.events.push(ev.type);
  if (ev.type === "response.output_text.delta") out.deltas.push(ev.delta);
  if (ev.type === "response.completed") out.stream_text = ev.response.output[0].content[0].text;
}

// 3. A function tool: the call, then only its output with
// previous_response_id; loom holds the conversation.
const tools = [{ type: "function", name: "weather", description: "Weather for a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }];
const first = await client.responses.create({ model: "gpt-4.1", input: "weather in Oslo?", tools });
const call = first.output.find((i) => i.type === "function_call");
out.tool_call = { name: call.name, arguments: JSON.parse(call.arguments) };
const second = await client.responses.create({
  model: "gpt-4.1",
  previous_response_id: first.id,
  input: [{ type: "function_call_output", call_id: call.call_id, output: "21 degrees" }],
  tools,
});
out.tool_answer = second.output_text;
out.chain_ids = [first.id, second.id];

// 4. Streamed tool call: the arguments arrive as function_call_arguments events.
const tstream = await client.responses.create({ model: "gpt-4.1", input: "weather in Oslo, streamed?", tools, stream: true, store: false });
out.tool_events = [];
for await (const ev of tstream) {
  if (ev.type.startsWith("response.function_call_arguments") || ev.type === "response.output_item.added") out.tool_events.push(ev.type);
  if (ev.type === "response.function_call_arguments.done") out.streamed_args = ev.arguments;
}

// 5. models.list
out.models = [];
for await (const m of client.models.list()) out.models.push(m.id);

// 6. An unknown workspace: the error in OpenAI's shape.
const other = new OpenAI({ apiKey: "k", baseURL: process.env.LOOM_BASE_URL + "/workspaces/nope", maxRetries: 0 });
try {
  await other.responses.create({ model: "gpt-4.1", input: "hi" });
} catch (e) {
  out.bad = { status: e.status, message: e.error?.message ?? e.message, type: e.error?.type };
}
console.log(JSON.stringify(out));
