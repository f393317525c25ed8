package fit

import "strings"

// windowRule gives a family of model names its context window. A closed
// rule matches its prefix when the name ends there or goes on with a "-"
// ("gpt-4o" matches "gpt-4o-2024-08-06" and "gpt-4o-mini", not "gpt-4o1");
// rules are tried in order, longest families first.
type windowRule struct {
	prefix string
	tokens int
}

// windows are the context windows of models loom knows, each from its
// provider's model documentation (read 2025; a provider may change them,
// and llm.context_window or gateway.models overrides any of them).
var windows = []windowRule{
	// OpenAI, https://platform.openai.com/docs/models/<model>
	{"gpt-4.1", 1_047_576}, // gpt-4.1, -mini, -nano
	{"gpt-4o", 128_000},    // gpt-4o, gpt-4o-mini
	{"chatgpt-4o", 128_000},
	{"gpt-4-turbo", 128_000},
	{"gpt-4-32k", 32_768},
	{"gpt-4", 8_192},
	{"gpt-3.5-turbo", 16_385},
	{"gpt-5", 400_000}, // gpt-5, -mini, -nano
	{"o1-mini", 128_000},
	{"o1", 200_000},
	{"o3", 200_000}, // o3, o3-mini
	{"o4-mini", 200_000},
	// Anthropic, https://docs.anthropic.com/en/docs/about-claude/models/overview
	// (the 1M-token Sonnet window is a beta that must be asked for, so the
	// standard one is used)
	{"claude-opus-4", 200_000},
	{"claude-sonnet-4", 200_000},
	{"claude-haiku-4", 200_000},
	{"claude-3", 200_000}, // claude-3-5-sonnet, claude-3-7-sonnet, claude-3-5-haiku, claude-3-opus…
	// Google, https://ai.google.dev/gemini-api/docs/models
	{"gemini-2.5", 1_048_576},
	{"gemini-2.0", 1_048_576},
	{"gemini-1.5-pro", 2_097_152},
	{"gemini-1.5-flash", 1_048_576},
}

// KnownWindow returns the context window of a model loom knows, in tokens,
// or 0. Names are matched without regard to case, after dropping a
// provider path ("openai/gpt-4o") and a fine-tune prefix ("ft:gpt-4o:…").
func KnownWindow(model string) int {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	m = strings.TrimPrefix(m, "ft:")
	for _, r := range windows {
		rest, ok := strings.CutPrefix(m, r.prefix)
		if ok && (rest == "" || rest[0] == '-' || rest[0] == ':' || rest[0] == '@') {
			return r.tokens
		}
	}
	return 0
}
