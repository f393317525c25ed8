// End-to-end check of loom's MCP server with the official TypeScript SDK.
//
//   node client.cjs stdio LOOM_BINARY WORKSPACE
//   node client.cjs http URL TOKEN WORKSPACE
//
// It lists prompts, resources and tools, gets a skill prompt, reads
// loom://prompt, remembers and recalls a memory, then edits a skill file and
// waits for the list-changed notification. Each step prints one line
// "ok <step>"; the first failure prints "FAIL <step>: <why>" and exits 1.
// NODE_PATH must name a node_modules folder holding @modelcontextprotocol/sdk.

const fs = require("node:fs");
const path = require("node:path");
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
} = require("@modelcontextprotocol/sdk/types.js");

function fail(step, why) {
  console.log(`FAIL ${step}: ${why}`);
  process.exit(1);
}

function check(step, cond, why) {
  if (!cond) fail(step, why);
  console.log(`ok ${step}`);
}

async function main() {
  const [mode, a, b, c] = process.argv.slice(2);
  let transport, workspace;
  if (mode === "stdio") {
    workspace = b;
    transport = new StdioClientTransport({ command: a, args: ["mcp", "-w", workspace, "--poll", "50ms"], stderr: "inherit" });
  } else if (mode === "http") {
    workspace = c;
    transport = new StreamableHTTPClientTransport(new URL(a), {
      requestInit: { headers: b ? { Authorization: `Bearer ${b}` } : {} },
    });
  } else {
    fail("args", "usage: client.cjs stdio BIN DIR | http URL TOKEN DIR");
  }

  const client = new Client({ name: "loom-e2e", version: "1.0.0" });
  let listChanged = 0;
  let notified;
  const changed = new Promise((resolve) => (notified = resolve));
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => {
    listChanged++;
    notified("prompts");
  });
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
    notified("resources");
  });
  await client.connect(transport);
  console.log(`ok connect ${JSON.stringify(client.getServerVersion())}`);

  const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  check("prompts/list", prompts.includes("system") && prompts.includes("greet"), `got ${prompts}`);
  const resources = (await client.listResources()).resources.map((r) => r.uri);
  check("resources/list", resources.includes("loom://prompt") && resources.includes("loom://skills/greet"), `got ${resources}`);
  const tools = (await client.listTools()).tools.map((t) => t.name).sort();
  check("tools/list", ["count_tokens", "forget", "recall", "remember", "render_prompt"].every((t) => tools.includes(t)), `got ${tools}`);

  const got = await client.getPrompt({ name: "greet", arguments: { message: "for Ada" } });
  const text = got.messages[0].content.text;
  check("prompts/get", text.includes("<skill_content name=\"greet\"") && text.includes("Say hello") && text.endsWith("/greet for Ada"), text);

  const rendered = await client.readResource({ uri: "loom://prompt" });
  check("resources/read loom://prompt", rendered.contents[0].text.includes("Be brief and exact."), rendered.contents[0].text.slice(0, 200));

  const rem = await client.callTool({ name: "remember", arguments: { content: "The user drinks green tea.", category: "personal_fact" } });
  check("tools/call remember", !rem.isError && rem.structuredContent.memory.id, JSON.stringify(rem));
  const rec = await client.callTool({ name: "recall", arguments: { text: "green tea" } });
  const ids = (rec.structuredContent.memories || []).map((m) => m.id);
  check("tools/call recall", !rec.isError && ids.includes(rem.structuredContent.memory.id), JSON.stringify(rec));

  const bad = await client.callTool({ name: "remember", arguments: { content: "" } });
  check("tools/call remember with bad arguments", bad.isError && /content/.test(bad.content[0].text), JSON.stringify(bad));

  const skill = path.join(workspace, "skills", "greet", "SKILL.md");
  fs.writeFileSync(skill, "---\nname: greet\ndescription: Greet the user warmly\n---\nSay a warm hello.\n");
  const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error("no list_changed within 5s")), 5000));
  try {
    await Promise.race([changed, timeout]);
  } catch (e) {
    fail("notifications/prompts/list_changed", e.message);
  }
  // The list notification may be the resources one; wait briefly for prompts.
  for (let i = 0; i < 50 && listChanged === 0; i++) await new Promise((r) => setTimeout(r, 20));
  check("notifications/prompts/list_changed", listChanged > 0, "only resources/list_changed arrived");
  const after = await client.getPrompt({ name: "greet" });
  check("prompts/get after the edit", after.messages[0].content.text.includes("Say a warm hello."), after.messages[0].content.text);

  await client.close();
  console.log("done");
}

main().catch((e) => fail("unexpected", e && e.stack ? e.stack : String(e)));
