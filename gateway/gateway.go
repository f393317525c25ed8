// Package gateway is loom's OpenAI-compatible context gateway: an agent that
// already calls chat.completions gets loom's system prompt, memory, skills
// and runtime context by pointing its base URL at `loom serve`.
//
// [Mount] adds to a server.Server:
//
//	POST /v1/chat/completions                       the default workspace
//	POST /v1/workspaces/{ws}/chat/completions
//	GET  /v1/workspaces/{ws}/sessions/{id}/last-report
//
// For each request the gateway renders the workspace's prompt for the
// request's user and channel (as `loom render` does), puts it first as the
// system message (the client's own system or developer message is appended
// after it, replaces it, or is ignored, per loom.yaml gateway.client_system),
// cleans the history as messages.Build does, expands /name and $name skills
// in the last user message and puts the runtime block on it — never in the
// system prompt, so the prefix stays cacheable — and forwards the request to
// the upstream named by loom.yaml's llm: section. Every other field of the
// request passes through unchanged; the reply comes back unchanged, a stream
// chunk by chunk as it arrives.
//
// When llm.provider is anthropic, the request is translated to the
// Messages API instead (system blocks with cache_control after loom's
// prompt, tool_use/tool_result blocks, images, tools, tool_choice) and sent
// through llm's own Anthropic client; its reply and event stream are
// written back as chat completion objects and chunks (see anthropic.go for
// the fields that translate). loom.yaml is re-read when it changes: an
// edit to llm: applies to the next request.
//
// After the reply, the new messages (the user's text as typed, without the
// runtime block, and the whole reply) are appended to the session through
// the session library's store, memory extraction is submitted to the
// workspace's worker, and consolidation runs when due. A reply cut
// mid-stream is saved marked as cut, with no extraction.
//
// Secrets: the upstream key comes from the variable loom.yaml names, under
// the llm package's rule for where a key may go. The client's Authorization
// bearer key is forwarded only with gateway.forward_auth: true, only when
// loom has no key of its own, never when it is the server's own token, and
// only to an endpoint the operator lets keys go to (see llm.KeyMayGo). No
// key is logged or echoed: an upstream error body is relayed with every
// key and credential in it masked, and the upstream's cookies, auth and
// server headers are not relayed (relay.go). A reply is relayed and kept up
// to llm.max_reply_bytes on both wires.
package gateway
