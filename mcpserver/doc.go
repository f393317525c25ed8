// Package mcpserver serves a loom workspace over the Model Context Protocol,
// with the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// A workspace maps onto MCP as follows:
//
//   - Prompts: every usable skill is a prompt named after it, with one
//     optional argument, message. Getting it returns the skill expanded as
//     "/name message" expands in `loom messages` (same cap, same cut marker).
//     An unavailable skill is listed with what it needs, and getting it fails
//     naming that. The prompt "system" is the rendered system prompt.
//   - Resources: loom://prompt (the rendered prompt, Markdown),
//     loom://report (its report, JSON), loom://skills/{name} (each skill's
//     SKILL.md) and loom://files/{path} for the bootstrap files, RULES.md and
//     memory/MEMORY.md. Every file is read through the workspace's door.
//   - Tools: remember, recall, forget (the memory store, through package
//     memory), render_prompt and count_tokens.
//
// The server looks for workspace changes (see [Options.Poll]) and sends
// prompts/list_changed and resources/list_changed when the lists or a skill
// change, and resources/updated to the clients subscribed to a resource whose
// contents changed.
//
// [New] makes a [Server]; [Server.Run] serves one transport (stdio for
// `loom mcp`), and [Server.Handler] is the streamable HTTP endpoint that
// `loom serve` mounts for each workspace.
package mcpserver
