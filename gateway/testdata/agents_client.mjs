// @openai/agents with its default model provider (the Responses API)
// through an OpenAI client pointed at loom's gateway: an agent with one
// function tool runs to its final output. Prints one JSON object.
//
//   LOOM_BASE_URL=http://127.0.0.1:PORT/v1 node agents_client.mjs
import { Agent, run, tool, setDefaultOpenAIClient, setTracingDisabled } from "@openai/agents";
import OpenAI from "openai";
import { z } from "zod";

setTracingDisabled(true);
setDefaultOpenAIClient(new OpenAI({ baseURL: process.env.LOOM_BASE_URL, apiKey: "client-side-key", maxRetries: 0, defaultHeaders: { "X-Loom-Session": "agents-run" } }));

const weather = tool({
  name: "weather",
  description: "Weather for a city",
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => `21 degrees in ${city}`,
});
const agent = new Agent({ name: "Forecaster", instructions: "AGENT-INSTRUCTIONS-71b", model: "gpt-4.1", tools: [weather] });
const result = await run(agent, "weather in Oslo?");
const streamed = await run(new Agent({ name: "Plain", instructions: "AGENT-INSTRUCTIONS-71b", model: "gpt-4.1" }), "stream please", { stream: true });
const deltas = [];
for await (const ev of streamed) {
  if (ev.type === "raw_model_stream_event" && ev.data.type === "output_text_delta") deltas.push(ev.data.delta);
}
await streamed.completed;
console.log(JSON.stringify({ final: result.finalOutput, items: result.newItems.map((i) => i.type), streamed: streamed.finalOutput, deltas }));
