// The official @anthropic-ai/sdk, pointed at loom's gateway: messages.create,
// messages.stream, a tool round trip, countTokens, models.list, and a
// malformed request. Prints one JSON object with what the client saw.
//
//   LOOM_BASE_URL=http://127.0.0.1:PORT node anthropic_client.mjs
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic({ apiKey: "client-side-key", baseURL: process.env.LOOM_BASE_URL, maxRetries: 0 });
const out = {};

// 1. Not streamed, with system blocks of the client's own.
const plain = await client.messages.create(
  {
    model: "claude-sonnet-4-5",
    max_tokens: 256,
    system: [{ type: "text", text: "CLIENT-SYSTEM-9d2", cache_control: { type: "ephemeral" } }],
    messages: [{ role: "user", content: "plain question" }],
  },
  { headers: { "X-Loom-Session": "ant-plain" } },
);
out.plain = plain.content.map((b) => b.text).join("");
out.plain_stop = plain.stop_reason;
out.plain_usage = plain.usage;

// 2. Streamed with the SDK's MessageStream.
const stream = client.messages.stream(
  { model: "claude-sonnet-4-5", max_tokens: 256, messages: [{ role: "user", content: "stream please" }] },
  { headers: { "X-Loom-Session": "ant-stream" } },
);
out.deltas = [];
stream.on("text", (t) => out.deltas.push(t));
const final = await stream.finalMessage();
out.stream_text = final.content.map((b) => b.text).join("");
out.stream_stop = final.stop_reason;

// 3. A tool round trip: tool_use, then tool_result, in one session.
const tools = [{ name: "weather", description: "Weather for a city", input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }];
const msgs = [{ role: "user", content: "weather in Oslo?" }];
const first = await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 256, tools, messages: msgs }, { headers: { "X-Loom-Session": "ant-tools" } });
const use = first.content.find((b) => b.type === "tool_use");
out.tool_call = { name: use.name, input: use.input, stop: first.stop_reason };
msgs.push({ role: "assistant", content: first.content });
msgs.push({ role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "21 degrees" }] });
const second = await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 256, tools, messages: msgs }, { headers: { "X-Loom-Session": "ant-tools" } });
out.tool_answer = second.content.map((b) => b.text).join("");

// 4. A streamed tool call: the input arrives as input_json_delta.
const tstream = client.messages.stream({ model: "claude-sonnet-4-5", max_tokens: 256, tools, messages: [{ role: "user", content: "weather in Oslo, streamed?" }] });
const tfinal = await tstream.finalMessage();
const tuse = tfinal.content.find((b) => b.type === "tool_use");
out.streamed_tool = { name: tuse.name, input: tuse.input, stop: tfinal.stop_reason };

// 5. countTokens, from loom's tokenizer.
const count = await client.messages.countTokens({ model: "claude-sonnet-4-5", messages: [{ role: "user", content: "how many tokens is this?" }] });
out.count = count.input_tokens;

// 6. models.list (Anthropic's shape: the SDK sends anthropic-version).
out.models = [];
for await (const m of client.models.list()) out.models.push(m.id);

// 7. Malformed: the error in Anthropic's shape.
try {
  await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "robot", content: "hi" }] });
} catch (e) {
  out.bad = { status: e.status, type: e.error?.error?.type, message: e.error?.error?.message };
}
console.log(JSON.stringify(out));
