// The AI SDK's default OpenAI provider, openai(id), which speaks the
// Responses API, pointed at loom's gateway: generateText, then streamText
// with a tool over several steps. Prints one JSON object with what it saw.
//
//   LOOM_BASE_URL=http://127.0.0.1:PORT/v1 node aisdk_client.mjs
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText, tool, stepCountIs, jsonSchema } from "ai";

const base = process.env.LOOM_BASE_URL;
const out = {};

const plain = createOpenAI({ baseURL: base, apiKey: "client-side-key", headers: { "X-Loom-Session": "aisdk-plain" } });
const gen = await generateText({ model: plain("gpt-4.1"), system: "AISDK-SYSTEM-3e7", prompt: "plain question", maxRetries: 0 });
out.plain = gen.text;
out.plain_usage = gen.usage;

const tools = createOpenAI({ baseURL: base, apiKey: "client-side-key", headers: { "X-Loom-Session": "aisdk-tools" } });
const weather = tool({
  description: "Weather for a city",
  inputSchema: jsonSchema({ type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false }),
  execute: async ({ city }) => `21 degrees in ${city}`,
});
const st = streamText({ model: tools("gpt-4.1"), prompt: "weather in Oslo?", tools: { weather }, stopWhen: stepCountIs(3), maxRetries: 0 });
out.deltas = [];
for await (const d of st.textStream) out.deltas.push(d);
out.stream_text = await st.text;
const steps = await st.steps;
out.steps = steps.map((s) => ({ calls: s.toolCalls.map((c) => ({ name: c.toolName, input: c.input })), results: s.toolResults.map((r) => r.output), text: s.text }));
console.log(JSON.stringify(out));
