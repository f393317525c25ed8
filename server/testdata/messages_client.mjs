// Drives a running `loom serve` from Node: fetches one turn's message list
// in OpenAI form and sends it, unchanged, through the official openai
// package to an OpenAI-compatible endpoint. Prints one JSON line.
//
//   LOOM_URL=http://127.0.0.1:PORT UPSTREAM_URL=http://127.0.0.1:PORT/v1 node messages_client.mjs
import OpenAI from "openai";

const loom = process.env.LOOM_URL;
const headers = { "Content-Type": "application/json" };
if (process.env.LOOM_TOKEN) headers.Authorization = `Bearer ${process.env.LOOM_TOKEN}`;

const res = await fetch(`${loom}/v1/workspaces/default/messages`, {
  method: "POST",
  headers,
  body: JSON.stringify({ message: "What is my cat called?", channel: "cli", chat_id: "node-1", format: "openai" }),
});
if (res.status !== 200) {
  console.error(`loom answered ${res.status}: ${await res.text()}`);
  process.exit(1);
}
const built = await res.json();

const client = new OpenAI({ apiKey: "sk-test-upstream", baseURL: process.env.UPSTREAM_URL });
const completion = await client.chat.completions.create({ model: "gpt-4o-mini", messages: built.messages });
console.log(JSON.stringify({
  prefix_sha256: built.report.prefix.sha256,
  sent: built.messages.length,
  reply: completion.choices[0].message.content,
}));
