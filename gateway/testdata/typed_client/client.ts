// A typed client generated from loom's OpenAPI document (openapi-typescript)
// and called through openapi-fetch: it must compile under tsc --strict, and
// every answer it gets must validate against the document (ajv). Prints one
// JSON object: what it checked.
//
//   LOOM_BASE_URL=http://127.0.0.1:PORT node client.js   (after tsc)
import createClient from "openapi-fetch";
import type { paths, components } from "./schema.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import { readFileSync } from "node:fs";

type Message = components["schemas"]["Message"];

const doc = JSON.parse(readFileSync(process.env.LOOM_OPENAPI!, "utf8"));
// strict: false lets the document's OpenAPI keywords (discriminator,
// example) through; the schemas are JSON Schema 2020-12.
const ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: true });
ajv.addSchema(doc, "loom");
const client = createClient<paths>({ baseUrl: process.env.LOOM_BASE_URL!, headers: { Authorization: "Bearer typed-token" } });
const checked: string[] = [];

function pointer(s: string): string {
  return s.replace(/~/g, "~0").replace(/\//g, "~1").replace(/\{/g, "%7B").replace(/\}/g, "%7D");
}

// check validates a body against the document's schema for the path,
// method, status and content type it came with.
function check(name: string, path: string, method: string, res: Response, body: unknown, ctype = "application/json"): void {
  const ref = `loom#/paths/${pointer(path)}/${method}/responses/${res.status}/content/${pointer(ctype)}/schema`;
  const validate = ajv.getSchema(ref);
  if (!validate) throw new Error(`${name}: no schema at ${ref}`);
  if (!validate(body)) throw new Error(`${name}: ${res.status} answer does not match ${ref}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 2000)}`);
  checked.push(`${name} ${res.status}`);
}

// The text of a message's content, whatever its form: this is what failed
// to compile when Message declared only role.
function textOf(m: Message): string {
  const c = m.content;
  if (c === undefined || c === null) return "";
  if (typeof c === "string") return c;
  return c.map((p) => (p.type === "text" ? p.text : `[image ${p.image_url.url.slice(0, 16)}]`)).join("\n");
}

const ws = { params: { path: { ws: "default" } } };

const render = await client.POST("/v1/workspaces/{ws}/render", { ...ws, body: { channel: "cli", user: "ann" } });
check("render", "/v1/workspaces/{ws}/render", "post", render.response, render.data);
const prompt: string = render.data!.prompt;

const built = await client.POST("/v1/workspaces/{ws}/messages", {
  ...ws,
  body: { message: "what now?", format: "openai", history: [{ role: "user", content: [{ type: "text", text: "earlier" }] }, { role: "assistant", content: "reply", tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] }, { role: "tool", tool_call_id: "c1", content: "done" }] },
});
check("messages", "/v1/workspaces/{ws}/messages", "post", built.response, built.data);
const list = built.data!.messages;
const texts = Array.isArray(list) ? list.map(textOf) : [];

const tokens = await client.POST("/v1/tokens", { body: { text: "hello world" } });
check("tokens", "/v1/tokens", "post", tokens.response, tokens.data);
const n: number = tokens.data!.tokens;

const skills = await client.GET("/v1/workspaces/{ws}/skills", ws);
check("skills", "/v1/workspaces/{ws}/skills", "get", skills.response, skills.data);

const bad = await client.POST("/v1/workspaces/{ws}/render", { params: { path: { ws: "nope" } }, body: {} });
check("render unknown workspace", "/v1/workspaces/{ws}/render", "post", bad.response, bad.error, "application/problem+json");

const resp = await client.POST("/v1/responses", { body: { model: "gpt-4.1", input: [{ role: "user", content: [{ type: "input_text", text: "hi" }] }], instructions: "be brief" } });
check("responses", "/v1/responses", "post", resp.response, resp.data);
// 200 is JSON, or an event stream when stream is true: narrowed here.
function json<T>(data: T | string | undefined, name: string): T {
  if (data === undefined || typeof data === "string") throw new Error(`${name}: not a JSON answer`);
  return data;
}
const first = json(resp.data, "responses").output[0];
const said: string = first.type === "message" ? first.content.map((p) => p.text).join("") : first.arguments;

const badResp = await client.POST("/v1/responses", { body: { model: "gpt-4.1", input: [{ role: "user", content: [{ type: "input_image" }] }] } });
check("responses bad input", "/v1/responses", "post", badResp.response, badResp.error);

const msg = await client.POST("/v1/messages", { body: { model: "claude-sonnet-4-5", max_tokens: 64, system: [{ type: "text", text: "be brief" }], messages: [{ role: "user", content: "hi" }] } });
check("anthropic messages", "/v1/messages", "post", msg.response, msg.data);
const block = json(msg.data, "messages").content[0];
const blockText: string = block.type === "text" ? block.text : block.name;

const count = await client.POST("/v1/messages/count_tokens", { body: { model: "claude-sonnet-4-5", messages: [{ role: "user", content: "hi" }] } });
check("count_tokens", "/v1/messages/count_tokens", "post", count.response, count.data);

const models = await client.GET("/v1/models", {});
check("models", "/v1/models", "get", models.response, models.data);
const anthropicModels = await client.GET("/v1/models", { params: { header: { "anthropic-version": "2023-06-01" } } });
check("models (anthropic)", "/v1/models", "get", anthropicModels.response, anthropicModels.data);

console.log(JSON.stringify({ checked, prompt_bytes: prompt.length, texts, tokens: n, said, block: blockText, count: count.data!.input_tokens }));
