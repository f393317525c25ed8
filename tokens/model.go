package tokens

import (
	"fmt"
	"strings"
)

// Resolution says which encoding [ForModel] picked for a model, and whether
// it had to guess.
type Resolution struct {
	Model    string // the model name as given
	Encoding string // the encoding counted with, e.g. "o200k_base"
	Fallback bool   // the model was not recognised; Encoding is the default
}

// String describes the resolution for a report: "gpt-4o: o200k_base", or
// "claude-sonnet-4: unknown model, counted with o200k_base".
func (r Resolution) String() string {
	if r.Fallback {
		return fmt.Sprintf("%s: unknown model, counted with %s", r.Model, r.Encoding)
	}
	return fmt.Sprintf("%s: %s", r.Model, r.Encoding)
}

// modelRule maps a family of model names to an encoding. A closed rule
// matches its prefix when the name ends there or goes on with a separator
// ("gpt-4" matches "gpt-4-turbo" but not "gpt-4o"); an open rule matches
// anything that starts with its prefix.
type modelRule struct {
	prefix   string
	encoding string
	open     bool
}

// modelRules are tried in order; the first match wins, so the o200k
// families that start with "gpt-4" come before gpt-4 itself. The families
// follow tiktoken's model table.
var modelRules = []modelRule{
	{"gpt-4o", O200kBase, false},
	{"chatgpt-4o", O200kBase, false},
	{"gpt-4.1", O200kBase, false},
	{"gpt-4.5", O200kBase, false},
	{"gpt-5", O200kBase, false},
	{"gpt-5.", O200kBase, true}, // gpt-5.1, gpt-5.2-codex, …
	{"gpt-oss", O200kBase, false},
	{"o1", O200kBase, false},
	{"o3", O200kBase, false},
	{"o4", O200kBase, false},
	{"gpt-4", Cl100kBase, false},
	{"gpt-3.5", Cl100kBase, false},
	{"gpt-35", Cl100kBase, false}, // Azure's spelling
	{"text-embedding-ada-002", Cl100kBase, false},
	{"text-embedding-3", Cl100kBase, false},
}

// ForModel returns the counter for a model name and says how it got there.
// Names are matched without regard to case, after dropping a provider path
// ("openai/gpt-4o", "openrouter/openai/gpt-4o") and a fine-tune prefix
// ("ft:gpt-4o-mini:acme::id"). Dated and suffixed names match their family
// ("gpt-4o-2024-08-06", "o3-mini"). gpt-4o, gpt-4.1, gpt-4.5, gpt-5 and the
// o-series count with o200k_base; gpt-4 and gpt-3.5 with cl100k_base. Any
// other model, Claude included, counts with o200k_base and Fallback set, so
// that a report can say the count is an approximation.
func ForModel(model string) (Counter, Resolution) {
	enc, ok := encodingForModel(model)
	res := Resolution{Model: model, Encoding: enc, Fallback: !ok}
	c, _ := Get(enc)
	return c, res
}

func encodingForModel(model string) (string, bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	m = strings.TrimPrefix(m, "ft:")
	for _, r := range modelRules {
		if !strings.HasPrefix(m, r.prefix) {
			continue
		}
		rest := m[len(r.prefix):]
		if r.open || rest == "" || strings.IndexByte("-:@_ ", rest[0]) >= 0 {
			return r.encoding, true
		}
	}
	return Default, false
}
